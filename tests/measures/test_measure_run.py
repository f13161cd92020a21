"""measure_run end to end on a mock run: every measure kind, resume after a kill, self-judging, CLI."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from fairpair.battery import load_battery
from fairpair.cli import main
from fairpair.errors import FairpairError
from fairpair.measures import embed as embed_mod
from fairpair.measures import measure_run, measure_scales
from fairpair.run import RunSettings, Store, execute_run
from fairpair.targets._base import Completion
from fairpair.targets.mock import MockTarget


class Killed(BaseException):
    """Stands for the process being killed mid-stage."""


class ScriptedJudge:
    max_concurrency = None

    def __init__(self, kill_after: int | None = None):
        self.kill_after = kill_after
        self.calls = 0
        self.name = "judge"

    async def generate(self, request):
        self.calls += 1
        if self.kill_after is not None and self.calls > self.kill_after:
            raise Killed()
        user = request.messages[-1]["content"]
        if "Respuesta A:" in user:
            return Completion(text=json.dumps({"winner": "A" if self.calls % 3 else "tie"}))
        return Completion(text=json.dumps({"courtesy": 4, "condescension": 1, "distrust": 2, "reason": "ok"}))

    def identity(self):
        return {"kind": "scripted", "model": "judge-1"}

    async def aclose(self):
        return None


class HashEmbedder:
    name = "hash"

    def embed(self, texts):
        out = []
        for t in texts:
            seed = int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)
            out.append(np.random.default_rng(seed).normal(size=8))
        return np.array(out, dtype=np.float32)

    def identity(self):
        return {"name": "hash", "dim": 8}


MEASURES = {
    "refund": {"kind": "keywords", "any_of": ["reembolso completo"]},
    "words": {"kind": "word_count"},
    "options": {"kind": "n_options"},
    "refund_tool": {"kind": "tool_call", "name": "issue_refund"},
    "tone": {"kind": "judge"},
    "hhh": {"kind": "pairwise", "against": "baseline"},
    "drift": {"kind": "semantic_distance", "against": "reference", "reference": "espana"},
}


def battery(tmp_path: Path, measures=MEASURES, designs=None, **extra) -> Path:
    b = {
        "schema_version": 1, "name": "mrun", "language": "es", "seed": 5, "repetitions": 2,
        "attributes": {"origen": {"signal": "name", "slot": "nombre", "neutral": "un cliente", "groups": {
            "espana": {"variants": ["Lucía", "Carmen"]},
            "magreb": {"variants": ["Fátima", "Aicha"], "references": ["árabe"]}}}},
        "templates": [{"id": "roto", "turns": ["Hola, soy {nombre}. Mi pedido llegó roto."]},
                      {"id": "cita", "turns": ["Soy {nombre}. ¿Me cambiáis la cita?"]}],
        "designs": designs or [{"kind": "counterfactual", "attribute": "origen"}, {"kind": "baseline"}],
        "tools": [{"type": "function", "function": {"name": "issue_refund", "parameters": {"type": "object"}}}],
        "target": {"kind": "mock", "bias": {"magreb": {"refund": 0.2}}},
        # the scripted judges give constant scores: the self-test (tests/measures/test_selftest.py) is off
        "measures": measures, "judge_self_test": "off", **extra,
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    p = tmp_path / "b.yaml"
    p.write_text(json.dumps(b, ensure_ascii=False), encoding="utf-8")
    return p


def make_run(tmp_path, **kw) -> Path:
    lb = load_battery(battery(tmp_path, **kw))
    run_dir = tmp_path / "run"
    execute_run(lb, run_dir, RunSettings(concurrency=4))
    return run_dir


@pytest.fixture(autouse=True)
def fake_embedder(monkeypatch):
    monkeypatch.setattr(embed_mod, "get_embedder", lambda name=None, language="es": HashEmbedder())


def rows(run_dir):
    with Store.open(run_dir, create=False) as s:
        return s.conn.execute("SELECT target, case_id, measure, status FROM measurements").fetchall()


def test_measure_run_all_kinds_then_resume_after_kill(tmp_path):
    run_dir = make_run(tmp_path)
    # 2 templates x 2 reps x (4 counterfactual + 1 baseline) = 20 answers
    with pytest.raises(Killed):
        measure_run(run_dir, judge=ScriptedJudge(kill_after=7), settings=RunSettings(concurrency=2))
    done_before = [r for r in rows(run_dir) if r[3] in ("ok", "missing")]
    assert 0 < len(done_before)
    res = measure_run(run_dir, judge=ScriptedJudge(), settings=RunSettings(concurrency=3))
    # measures run in name order: drift finished, hhh was killed midway, the rest had not started
    assert res.counts["drift"].skipped == 8 and res.counts["drift"].ok == 0
    assert 1 <= res.counts["hhh"].skipped < 16 and res.counts["hhh"].ok == 16 - res.counts["hhh"].skipped
    assert res.counts["tone"].ok == 20 and res.counts["refund"].ok == 20
    all_rows = rows(run_dir)
    done = {}
    for t, c, m, st in all_rows:
        if st in ("ok", "missing"):
            done[(t, c, m)] = done.get((t, c, m), 0) + 1
    assert set(done.values()) == {1}  # exactly one per (target, case, measure)
    per_measure = {}
    for (_, _, m) in done:
        per_measure[m] = per_measure.get(m, 0) + 1
    assert per_measure == {"refund": 20, "words": 20, "options": 20, "refund_tool": 20, "tone.courtesy": 20,
                           "tone.condescension": 20, "tone.distrust": 20, "hhh": 16, "drift": 8}
    with Store.open(run_dir, create=False) as s:
        tone = {m.case_id: m.value for m in s.measurements("tone.courtesy")}
        assert set(tone.values()) == {4}
        hhh = list(s.measurements("hhh"))
        assert {m.value for m in hhh} <= {0.0, 0.25, 0.5, 0.75, 1.0}
        assert all(set(m.detail["orders"]) == {"AB", "BA"} for m in hhh)
        # refund keyword and tool call agree on the mock's answers
        kw = {m.case_id: m.value for m in s.measurements("refund")}
        tool = {m.case_id: m.value for m in s.measurements("refund_tool")}
        assert kw == tool
        assert s.get_meta("embedder.drift") == {"name": "hash", "dim": 8}
        assert [e["identity"] for e in s.events("judge")][-1] == {"kind": "scripted", "model": "judge-1"}
    # a third run has nothing to do
    again = measure_run(run_dir, judge=ScriptedJudge(kill_after=0))
    assert all(c.ok == 0 and c.failed == 0 for c in again.counts.values())
    assert rows(run_dir) == all_rows


def test_measure_scales():
    lb_measures = dict(MEASURES, decision={"kind": "llm_extract", "instructions": "x", "schema": {
        "type": "object", "properties": {"refund": {"type": "boolean"}, "n": {"type": "integer"}}}})
    from fairpair.battery._schema import Battery

    b = Battery.model_validate({"schema_version": 1, "name": "x", "templates": [{"id": "t", "turns": ["hi"]}],
                                "designs": [{"kind": "baseline"}], "measures": lb_measures})
    assert measure_scales(b) == {
        "refund": "binary", "words": "count", "options": "count", "refund_tool": "binary",
        "tone.courtesy": "ordinal", "tone.condescension": "ordinal", "tone.distrust": "ordinal",
        "hhh": "ordinal", "drift": "continuous", "decision.refund": "binary", "decision.n": "count"}


def test_self_judging_refused_unless_allowed(tmp_path):
    run_dir = make_run(tmp_path, measures={"tone": {"kind": "judge", "max_attempts": 2}})
    same = MockTarget({"bias": {"magreb": {"refund": 0.2}}}, name="judge")
    with pytest.raises(FairpairError, match="same system as target 'mock'"):
        measure_run(run_dir, judge=same)
    assert rows(run_dir) == []

    run2 = make_run(tmp_path / "allowed", measures={"tone": {"kind": "judge", "max_attempts": 2}},
                    allow_self_judging=True)
    res = measure_run(run2, judge=MockTarget({"bias": {"magreb": {"refund": 0.2}}}, name="judge"))
    assert res.warnings and "self-judging" in res.warnings[0]
    # the mock answers prose, never JSON: every item missing, each after 2 invalid outputs
    assert res.counts["tone"].missing == 20 and res.counts["tone"].invalid == 40
    with Store.open(run2, create=False) as s:
        assert s.events("self_judging")[0]["target"] == "mock"
        m = next(s.measurements("tone.courtesy", status="missing"))
        assert m.detail["raw"].startswith("Hola")


def test_pairwise_without_baseline_is_a_clear_error(tmp_path):
    run_dir = make_run(tmp_path, measures={"hhh": {"kind": "pairwise"}},
                       designs=[{"kind": "counterfactual", "attribute": "origen"}])
    with pytest.raises(FairpairError, match="no baseline cases") as ei:
        measure_run(run_dir, judge=ScriptedJudge())
    assert "kind: baseline" in ei.value.hint


def test_cli_measure(tmp_path, capsys):
    run_dir = make_run(tmp_path, measures={"words": {"kind": "word_count"}, "refund": {"kind": "keywords",
                                                                                      "any_of": ["reembolso"]}})
    main(["measure", str(run_dir)])
    out = capsys.readouterr().out
    assert "words" in out and "20" in out
    with pytest.raises(SystemExit) as ei:
        main(["measure", str(run_dir), "--measure", "nope"])
    assert ei.value.code == 2
    assert "unknown measure(s) ['nope']" in capsys.readouterr().err


def test_streaming_in_small_chunks_finds_every_counterpart_and_holds_few_items(tmp_path, monkeypatch):
    """Chunks of 3 answers: each pairwise row names the counterpart the design defines (computed here
    from the stored cases), prepare sees at most a chunk, and few items are alive at once."""
    import weakref

    from fairpair.measures import _runner

    run_dir = make_run(tmp_path, measures={
        "words": {"kind": "word_count"},
        "drift": {"kind": "semantic_distance", "against": "reference", "reference": "espana"},
        "drift_base": {"kind": "semantic_distance", "against": "baseline"}})
    monkeypatch.setattr(_runner, "CHUNK", 3)
    alive, peak, prepared = [0], [0], []

    class CountedItem(_runner.MeasureItem):
        def __post_init__(self):
            alive[0] += 1
            peak[0] = max(peak[0], alive[0])
            weakref.finalize(self, lambda: alive.__setitem__(0, alive[0] - 1))

    monkeypatch.setattr(_runner, "MeasureItem", CountedItem)
    orig_prepare = embed_mod.SemanticDistanceMeasure.prepare

    async def prepare(self, items, ctx):
        prepared.append(len(items))
        await orig_prepare(self, items, ctx)

    monkeypatch.setattr(embed_mod.SemanticDistanceMeasure, "prepare", prepare)
    res = measure_run(run_dir, settings=RunSettings(concurrency=1))
    assert res.counts["words"].ok == 20 and res.counts["drift"].ok == 8 and res.counts["drift_base"].ok == 16
    assert prepared and max(prepared) <= 3 and sum(prepared) == 8 + 16
    # at most two chunks being built and handed over, the queue (2 x concurrency) and one in a worker
    assert peak[0] <= 2 * 3 + 2 + 1 < 20
    with Store.open(run_dir, create=False) as s:
        cases = list(s.iter_cases())
        want_ref = {c.id: next(o.id for o in cases if o.matched_set == c.matched_set
                               and o.groups == {"origen": "espana"})
                    for c in cases if c.groups.get("origen") == "magreb"}
        want_base = {c.id: next(o.id for o in cases if o.baseline and o.block == c.block)
                     for c in cases if not c.baseline}
        got_ref = {m.case_id: m.detail["counterpart"] for m in s.measurements("drift")}
        got_base = {m.case_id: m.detail["counterpart"] for m in s.measurements("drift_base")}
        assert got_ref == want_ref and len(want_ref) == 8
        assert got_base == want_base and len(want_base) == 16
        assert len(s.events("embedder")) == 2  # once per measure, not once per chunk
