"""The whole ``run`` call outside the engine loop (issue 15): one expansion on a fresh run (its cases kept
and sent), the preflight case sent while the other cases are stored, the answer statuses counted during
the last requests. Behaviour, requests and stored data are those of the sequential path (a resumed run's)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from fairpair.battery import load_battery
from fairpair.cases import expand
from fairpair.errors import FairpairError
from fairpair.run import RunSettings, execute_run
from fairpair.run._preflight import PreflightError
from fairpair.store import Store
from fairpair.testing import openai_target, small_battery
from run_helpers import refused_port, rows

BATTERY = small_battery(name="whole_call", seed=5, repetitions=3)
N_CASES = 2 * 3 * 2 * 2  # templates x repetitions x positions x groups

CALLS: list[tuple[str, float, float]] = []  # (first user turn, start, end) of each call to the python target
_LOCK = threading.Lock()


def slow_answer(messages, context):
    """A python target that takes 50 ms and records when each call ran."""
    t0 = time.monotonic()
    time.sleep(0.05)
    with _LOCK:
        CALLS.append((messages[-1]["content"], t0, time.monotonic()))
    return "Le ofrecemos el reembolso completo de su pedido."


def _battery(tmp_path: Path, target: dict | None = None) -> Path:
    data = dict(BATTERY, target=target or BATTERY["target"])
    p = tmp_path / "b.yaml"
    p.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return p


@pytest.mark.parametrize("kept", [10_000, 5])  # the expanded cases kept and sent; more than 5: expanded again
def test_a_fresh_run_stores_and_sends_what_a_resumed_run_does(tmp_path, monkeypatch, kept):
    from fairpair.run import _runner

    monkeypatch.setattr(_runner, "CASES_KEPT", kept)
    b = _battery(tmp_path)
    execute_run(load_battery(b), tmp_path / "fresh", RunSettings(concurrency=3))
    with Store.open(tmp_path / "resumed") as store:  # the cases already stored: the sequential path
        store.add_cases(expand(load_battery(b)))
    execute_run(load_battery(b), tmp_path / "resumed", RunSettings(concurrency=3))
    q_cases = "SELECT case_id, seq, data FROM cases ORDER BY seq"
    assert rows(tmp_path / "fresh", q_cases) == rows(tmp_path / "resumed", q_cases)
    assert len(rows(tmp_path / "fresh", q_cases)) == N_CASES
    q_ans = "SELECT case_id, status, text, attempts FROM responses ORDER BY case_id"
    assert rows(tmp_path / "fresh", q_ans) == rows(tmp_path / "resumed", q_ans)
    # the preflight's answer is the first row, and it answers the first case
    first_case = rows(tmp_path / "fresh", "SELECT case_id FROM cases ORDER BY seq LIMIT 1")
    assert rows(tmp_path / "fresh", "SELECT case_id FROM responses ORDER BY id LIMIT 1") == first_case
    kinds = [k for (k,) in rows(tmp_path / "fresh", "SELECT kind FROM events ORDER BY id")]
    assert kinds == ["plan_registered", "run_started", "run_finished"]
    m = json.loads((tmp_path / "fresh" / "manifest.json").read_text(encoding="utf-8"))
    assert m["expansion"]["total_cases"] == N_CASES
    assert m["answer_statuses"]["mock"]["n"] == N_CASES
    assert m["last_session"]["mock"]["answered"] == N_CASES - 1 and m["last_session"]["mock"]["skipped"] == 1


def test_the_preflight_is_sent_while_the_cases_are_stored_and_alone(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    CALLS.clear()
    b = _battery(tmp_path, {"kind": "python", "callable": "test_whole_call:slow_answer"})
    threads_while_storing: list[list[str]] = []
    real = Store.add_cases

    def add_cases(self, cases, batch=2000):
        threads_while_storing.append([t.name for t in threading.enumerate()])
        return real(self, cases, batch)

    monkeypatch.setattr(Store, "add_cases", add_cases)
    execute_run(load_battery(b), tmp_path / "run", RunSettings(concurrency=4))
    assert any(name.startswith("fairpair-preflight-") for name in threads_while_storing[0])
    assert len(CALLS) == N_CASES
    first = min(CALLS, key=lambda c: c[1])
    assert all(c[1] >= first[2] for c in CALLS if c is not first)  # nothing else sent before its answer
    assert first[0] == next(iter(expand(load_battery(b)))).turns[-1]  # the first case went first


def test_a_failed_preflight_on_a_fresh_run_stores_the_cases_and_the_failure_and_sends_nothing_else(tmp_path):
    b = _battery(tmp_path, openai_target(f"http://127.0.0.1:{refused_port()}/v1"))
    with pytest.raises(PreflightError):
        execute_run(load_battery(b), tmp_path / "run", RunSettings(concurrency=4, max_attempts=1))
    assert rows(tmp_path / "run", "SELECT COUNT(*) FROM cases") == [(N_CASES,)]
    assert rows(tmp_path / "run", "SELECT status, COUNT(*) FROM responses GROUP BY status") == [("failed", 1)]
    kinds = [k for (k,) in rows(tmp_path / "run", "SELECT kind FROM events ORDER BY id")]
    assert kinds == ["plan_registered", "run_started", "preflight_failed"]


def test_a_target_that_cannot_start_on_a_fresh_run_leaves_the_cases_stored(tmp_path):
    b = _battery(tmp_path, {"kind": "python", "callable": "test_whole_call:slow_answer", "path": "nowhere"})
    with pytest.raises(FairpairError, match="not a directory"):
        execute_run(load_battery(b), tmp_path / "run", RunSettings(concurrency=4))
    assert rows(tmp_path / "run", "SELECT COUNT(*) FROM cases") == [(N_CASES,)]
    assert rows(tmp_path / "run", "SELECT COUNT(*) FROM responses") == [(0,)]


def test_answer_statuses_counted_in_slices_are_the_whole_store_s(tmp_path):
    from fairpair.measures.status import StatusTally, status_summary

    with Store.open(tmp_path / "run") as store:
        add = store.add_response
        add(target="b", case_id="c1", status="failed", error="ConnectError: refused")
        add(target="b", case_id="c1", status="ok", text="Le ofrecemos el reembolso completo de su pedido.")
        add(target="a", case_id="c1", status="ok", text="")  # empty
        add(target="b", case_id="c2", status="failed", error="TargetError (HTTP 500): boom")
        add(target="b", case_id="c2", status="failed", error="TargetError (HTTP 500): again")
        add(target="a", case_id="c2", status="ok", text="Lo siento, pero no puedo ayudarte con eso.")
        add(target="a", case_id="c3", status="ok", text="Hola. " * 3 + "Adiós.")
        add(target="a", case_id="c4", status="ok", text="Le cambiamos la cita al martes a las diez.",
            finish_reason="length")
        # counted by hand: a = c1 empty, c2 refused, c3 loop, c4 truncated; b = c1 ok (its failure replaced), c2 failed
        expected = {"a": ({"empty": 1, "refused": 1, "loop": 1, "truncated": 1}, 4,
                          (("c1", "empty", ""), ("c2", "refused", "Lo siento, pero no puedo ayudarte con eso."),
                           ("c3", "loop", "Hola. Hola. Hola. Adiós."))),
                    "b": ({"failed": 1, "ok": 1}, 2, (("c2", "failed", "TargetError (HTTP 500): boom"),))}
        whole = status_summary(store, "es")
        assert list(whole) == ["a", "b"]
        for name, (counts, n, examples) in expected.items():  # the first three degenerate ones as examples
            assert (whole[name].counts, whole[name].n, whole[name].examples) == (counts, n, examples)
        tally = StatusTally("es")
        assert [tally.read(store, limit=3) for _ in range(4)] == [3, 3, 2, 0]
        assert tally.summary() == whole


def test_a_fresh_run_sends_the_bytes_a_resumed_run_sends(tmp_path):
    from fairpair.testing import serve_openai

    sent = {}
    for kind in ("fresh", "resumed"):
        with serve_openai() as server:
            b = _battery(tmp_path, openai_target(server.base_url))
            if kind == "resumed":
                with Store.open(tmp_path / kind) as store:
                    store.add_cases(expand(load_battery(b)))
            execute_run(load_battery(b), tmp_path / kind, RunSettings(concurrency=3))
            sent[kind] = sorted(r.body for r in server.received)
    assert len(sent["fresh"]) == N_CASES and sent["fresh"] == sent["resumed"]  # key order included
