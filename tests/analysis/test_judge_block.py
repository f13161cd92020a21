"""The judge block reads what the measures stage records (events, failed rows with leak details)."""

from __future__ import annotations

from analysis_runs import battery_dict, make_run
from fairpair.analysis import analyze_run
from fairpair.store import Store


def test_judge_block_and_counts(tmp_path):
    run = make_run(tmp_path, "j", battery_dict(templates=3, repetitions=1, resamples=50))
    with Store.open(run) as s:
        r = next(s.responses())
        s.event("judge", {"identity": {"kind": "mock", "model": "mock-1"}})
        s.event("self_judging", {"target": "mock", "judge": {"kind": "mock", "model": "mock-1"}})
        s.event("measure_finished", {"tone": {"ok": 35, "invalid": 4, "leaks": 1}, "refund": {"ok": 36}})
        s.add_measurement(target=r.target, case_id=r.case_id, measure="tone", status="failed",
                          error="leak: Fátima (the judge was not called)", detail={"leaks": ["Fátima"]})
        s.add_measurement(target=r.target, case_id=r.case_id, measure="tone", status="failed", error="again",
                          detail={"leaks": ["Fátima"]})
    res = analyze_run(run)
    j = res.judge
    assert j.judge == {"kind": "mock", "model": "mock-1"}
    assert j.self_judging is True and any("self-judging" in w for w in j.warnings)
    assert j.invalid_outputs == {"tone": 4} and j.leaks == {"tone": 1}
    c = res.counts["mock"]
    assert c.cases == 36 and c.answered == 36 and c.missing == 1 and c.leaks == 2
    assert c.measured == 36 * 3
