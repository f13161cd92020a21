"""The store writes and reads the records of ``fairpair.records``: what goes in comes back equal."""

from __future__ import annotations

from fairpair.records import Measurement, Response
from fairpair.store import Store


def test_an_answer_record_round_trips(tmp_path):
    answer = Response(target="bot", case_id="c1", status="ok", text="hola \ud800 y adi\u00f3s", turns=["primera"],
                      tool_calls=[{"name": "refund", "arguments": {"amount": 3}, "id": "t1", "result": None}],
                      prompt_tokens=12, completion_tokens=5, latency_s=0.25, finish_reason="stop", model="m-1",
                      system_fingerprint="fp", error=None, attempts=2, created_at="2026-01-02T03:04:05.000+00:00")
    with Store.open(tmp_path) as store:
        assert store.add_answer(answer)
        assert not store.add_answer(answer)  # one ok answer per (target, case)
        assert store.answer("bot", "c1") == answer  # the lone surrogate included
        assert store.add_response(target="bot", case_id="c2", status="failed", error="timeout")
        failed = next(store.responses("bot", status="failed"))
        assert (failed.case_id, failed.text, failed.turns, failed.tool_calls, failed.attempts) == ("c2", None, [], [],
                                                                                                   1)


def test_a_measurement_stores_its_scale(tmp_path):
    with Store.open(tmp_path) as store:
        store.declare_scales({"refund": "binary"})
        store.add_measurement(target="bot", case_id="c1", measure="refund", status="ok", value=True)
        store.add_measurement(target="bot", case_id="c1", measure="words", status="ok", value=12, scale="count")
        store.add_measurement(target="bot", case_id="c1", measure="other", status="ok", value=1.5)
        assert list(store.measurements()) == [
            Measurement("bot", "c1", "refund", "ok", True, None, None, "binary"),
            Measurement("bot", "c1", "words", "ok", 12, None, None, "count"),
            Measurement("bot", "c1", "other", "ok", 1.5, None, None, None)]
        assert store.measure_scales() == {"refund": "binary", "words": "count"}
