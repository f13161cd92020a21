"""Gate, JUnit, compare, plan change, degenerate data and the CLI, on mock runs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml
from scipy import stats

from analysis_runs import battery_dict, make_run
from fairpair.analysis import analyze_run, compare_runs, gate_exit_code
from fairpair.battery import load_battery
from fairpair.errors import FairpairError
from fairpair.run import RunSettings, execute_run
from fairpair.store import Store


def test_gate_fails_on_planted_bias_and_passes_without(runs, tmp_path):
    assert gate_exit_code(runs["biased"]) == 1
    junit = tmp_path / "g.xml"
    assert gate_exit_code(runs["biased"], junit=junit) == 1
    suite = ET.parse(junit).getroot()
    # 6 plan comparisons and the answer statuses failed, empty and refused of the 3 pairs of groups
    assert suite.get("failures") == "1" and int(suite.get("tests")) == 6 + 3 * 3
    failed = [tc.get("name") for tc in suite if tc.find("failure") is not None]
    assert failed == ["refund[mock:counterfactual-origen:magreb-vs-espana]"]
    res = analyze_run(runs["fair"])
    prim = [c for c in res.comparisons if c.primary]
    assert [c.verdict for c in prim] == ["pass"] * 3
    assert gate_exit_code(runs["fair"]) == 0
    assert gate_exit_code(runs["fair"], on_inconclusive=True) == 0  # the secondary ones don't count


def _main():
    try:
        from fairpair.cli import main
    except ImportError as exc:  # another stage's module half-written in a shared working tree
        if "fairpair.analysis" in str(exc):
            raise
        pytest.skip(f"fairpair.cli cannot be imported: {exc}")
    return main


def test_cli_analyze_gate_compare(runs, tmp_path, capsys):
    main = _main()
    with pytest.raises(SystemExit) as e:
        main(["gate", str(runs["biased"]), "--junit", str(tmp_path / "j.xml")])
    assert e.value.code == 1
    main(["gate", str(runs["fair"])])
    main(["analyze", str(runs["fair"]), "--json"])
    out = capsys.readouterr().out
    assert '"schema": "fairpair.results/2"' in out
    with pytest.raises(SystemExit) as e:
        main(["analyze", str(tmp_path / "nope")])
    assert e.value.code == 2


def test_compare_detects_a_planted_change(tmp_path, capsys):
    before = make_run(tmp_path, "before", battery_dict(bias={"magreb": {"refund": 0.3}}, resamples=300))
    after = make_run(tmp_path, "after", battery_dict(resamples=300))
    cmp = compare_runs(before, after)
    assert cmp.paired_by == "case_id"
    rows = {(r.measure, r.group_a): r for r in cmp.rows}
    m = rows[("refund", "magreb")]
    assert m.direction == "better" and m.gap_before < -0.2 and abs(m.gap_after) < 0.1
    assert rows[("refund", "china")].direction == "no clear change"
    # the same numbers independently: per matched set gap after - gap before
    import sqlite3

    def gaps(run):
        con = sqlite3.connect(run / "store.sqlite")
        cases = {cid: json.loads(d) for cid, d in con.execute("SELECT case_id, data FROM cases")}
        vals = {cid: float(json.loads(v)) for cid, v in con.execute(
            "SELECT case_id, value FROM measurements WHERE measure='refund' AND status='ok'")}
        sets = {}
        for cid, c in cases.items():
            sets.setdefault(c["matched_set"], {})[c["groups"]["origen"]] = vals[cid]
        return np.array([sets[k]["magreb"] - sets[k]["espana"] for k in sorted(sets)])

    ga, gb = gaps(before), gaps(after)
    assert m.gap_before == pytest.approx(ga.mean()) and m.change == pytest.approx(gb.mean() - ga.mean())
    assert m.pvalue == pytest.approx(stats.wilcoxon(gb, ga, zero_method="pratt").pvalue, rel=1e-9)
    back = compare_runs(after, before)
    assert {(r.measure, r.group_a): r.direction for r in back.rows}[("refund", "magreb")] == "worse"
    assert gate_exit_code(before, baseline=after) == 1
    _main()(["compare", str(before), str(after), "--json"])
    assert json.loads(capsys.readouterr().out)["schema"] == "fairpair.compare/1"


def test_plan_edit_is_refused_not_flagged_as_changed(tmp_path):
    """An edited plan offered after the answers were in is refused (the registered plan is executed), so
    ``plan_changed`` stays false and the refusal is counted; ``plan_changed`` is true only when the executed
    plan differs from the registered one (here: a registered hash that no longer matches the stored battery)."""
    from fairpair.store import Store

    b = battery_dict(templates=4, repetitions=1, resamples=50)
    run = make_run(tmp_path, "p", b)
    b["analysis"]["alpha"] = 0.10  # changed after the answers were in
    bpath = tmp_path / "p2.yaml"
    bpath.write_text(yaml.safe_dump(b, allow_unicode=True), encoding="utf-8")
    execute_run(load_battery(bpath), run, RunSettings())
    res = analyze_run(run)
    assert res.plan_changed is False and res.plan_sha256 == res.plan_sha256_now and res.plan_edits_refused == 1
    assert res.alpha == 0.05  # the registered plan is executed
    assert any("refused" in n and "registered plan was executed" in n for n in res.notes)
    with Store.open(run) as store:  # a store written before the kind was renamed: its event counts as refused
        store.event("plan_changed", {"registered": res.plan_sha256, "now": "0" * 64})
        store.conn.execute("UPDATE meta SET value=? WHERE key='plan_sha256'", ('"' + "f" * 64 + '"',))
        store.conn.commit()
    res = analyze_run(run)
    assert res.plan_edits_refused == 2 and res.plan_changed is True
    assert res.plan_sha256 == "f" * 64 and res.plan_sha256_now != res.plan_sha256
    assert any("differs from the one registered" in n for n in res.notes)


def test_degenerate_data_never_crash(tmp_path):
    comps = [
        {"id": "refund", "measure": "refund", "attribute": "origen", "reference": "espana", "margin": 0.1},
        {"id": "const", "measure": "always", "attribute": "origen", "reference": "espana", "margin": 1},
        {"id": "same", "measure": "same", "attribute": "origen", "reference": "espana"},
        {"id": "absent", "measure": "nothing", "attribute": "origen", "groups": ["espana", "magreb"],
         "primary": False},  # a primary one never measured makes the gate refuse (tests/analysis/test_plan_contract.py)
    ]
    b = battery_dict(templates=5, repetitions=1, resamples=50, correlation=1.0, comparisons=comps)
    b["measures"] |= {"always": {"kind": "word_count"}, "same": {"kind": "keywords", "any_of": ["hola"]},
                      "nothing": {"kind": "keywords", "any_of": ["nada"]}}
    # every magreb measurement of 'refund' is missing
    with_magreb = set()

    def skip(case_id, measure):
        return measure == "refund" and case_id in with_magreb

    bpath = tmp_path / "d.yaml"
    bpath.write_text(yaml.safe_dump(b, allow_unicode=True), encoding="utf-8")
    run = tmp_path / "d"
    execute_run(load_battery(bpath), run, RunSettings())
    with Store.open(run) as s:
        for c in s.iter_cases():
            if c.groups["origen"] == "magreb":
                with_magreb.add(c.id)
        for r in s.responses():
            v = "reembolso completo" in r.text
            if r.case_id in with_magreb:
                s.add_measurement(target=r.target, case_id=r.case_id, measure="refund", status="missing")
            else:
                s.add_measurement(target=r.target, case_id=r.case_id, measure="refund", status="ok", value=v)
            s.add_measurement(target=r.target, case_id=r.case_id, measure="always", status="ok", value=3.0)
            s.add_measurement(target=r.target, case_id=r.case_id, measure="same", status="ok", value=True)
    res = analyze_run(run)
    by = {(c.id, c.group_a): c for c in res.comparisons}
    mag = by[("refund", "magreb")]
    assert mag.n_pairs == 0 and mag.n_dropped == 15 and mag.verdict == "insufficient design"
    assert "no template has measured answers from both groups" in mag.design_reason and mag.pvalue is None
    const = by[("const", "china")]
    assert const.estimate == 0 and const.pvalue is None and "all differences are zero" in const.note
    # every answer has the same value (e.g. a judge that scores everything 3): no information, never a pass
    assert const.verdict == "insufficient design" and "the measure is constant" in const.design_reason
    same = by[("same", "china")]
    assert same.binary.b == same.binary.c == 0 and "no discordant pairs" in same.note
    assert same.verdict == "insufficient design"  # never pass, never fail
    absent = by[("absent", "espana")]
    assert absent.n_pairs == 0 and any("nothing" in n for n in res.notes)
    assert absent.verdict == "no verdict" and absent.reasons[0] == "not measured"
    # no primary comparison has a verdict: the gate refuses to answer unless told to fail on it
    with pytest.raises(FairpairError, match="cannot support a verdict"):
        gate_exit_code(run)
    assert gate_exit_code(run, on_insufficient=True) == 1


def test_compare_pairs_by_matched_set_when_the_conversations_changed(tmp_path):
    before = make_run(tmp_path, "before", battery_dict(templates=8, resamples=100))
    reworded = battery_dict(templates=8, resamples=100)
    for t in reworded["templates"]:  # same templates, matched sets and groups; other words, so other case ids
        t["turns"] = [t["turns"][0].replace("llegó roto", "no llegó")]
    after = make_run(tmp_path, "after", reworded)
    by_set = compare_runs(before, after)
    assert by_set.paired_by == "matched_set"
    assert "cases paired by design, matched set and groups" in " ".join(by_set.notes)
    same = compare_runs(before, before)
    assert same.paired_by == "case_id"
    n_sets = {(r.measure, r.group_a): r.n_sets for r in same.rows}
    assert {(r.measure, r.group_a): r.n_sets for r in by_set.rows} == n_sets and min(n_sets.values()) == 8 * 2 * 3
