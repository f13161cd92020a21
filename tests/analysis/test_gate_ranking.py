"""The gate (and its baseline comparison) judges the ranking design's verdicts (issue 17) like every other
comparison's."""

from __future__ import annotations

import itertools
import json
import sqlite3
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml
from scipy import stats

from fairpair.analysis import analyze_run, compare_runs, gate_exit_code
from fairpair.battery import load_battery
from fairpair.cli import main
from fairpair.measures import measure_run
from fairpair.run import RunSettings, execute_run
from fairpair.testing._ranking import ranking_battery
from run_helpers import run_cli


def _ranking_run(tmp, name, selection, posting="Puesto"):
    """A measured and analysed ranking run; ``posting`` rewords the postings' first word (new case ids)."""
    b = ranking_battery(k=4, templates=8, names=6, repetitions=2, seed=1, selection=selection, position=[])
    for t in b["templates"]:
        t["turns"] = [x.replace("Puesto", posting) for x in t["turns"]]
    p = tmp / f"{name}.yaml"
    p.write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False), encoding="utf-8")
    run = tmp / name
    execute_run(load_battery(p), run, RunSettings(concurrency=16))
    measure_run(run)
    analyze_run(run)
    return p, run


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranked")
    return {"biased": _ranking_run(tmp, "biased", {"g1": 1.0, "g2": 0.3, "g3": 1.0, "g4": 0.6}),
            "flat": _ranking_run(tmp, "flat", {})}


def _verdicts(run):
    """The ranking verdicts as results.json stores them, read without fairpair."""
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    (r,) = data["rankings"]
    pairs = {(p["measure"], p["group_a"], p["group_b"]): p["verdict"] for p in r["pairs"]}
    ratios = {q["group"]: q["verdict"] for q in r["ratios"] if q["verdict"] is not None}
    return data, pairs, ratios


def test_a_ranking_fail_fails_the_gate_with_its_line(ranked, capsys, tmp_path):
    _, run = ranked["biased"]
    data, pairs, ratios = _verdicts(run)
    assert data["comparisons"] == []  # a ranking battery alone: before, "nothing to gate" (exit 2)
    fails = sorted(k for k, v in pairs.items() if v == "fail")
    assert fails == [("ranked_above", "g1", "g2"), ("ranked_above", "g2", "g3")]  # the planted g2 (weight 0.3)
    junit = tmp_path / "fairness.xml"
    code, out, _ = run_cli(["gate", run, "--junit", junit], capsys)
    assert code == 1
    lines = out.splitlines()
    failing = [x for x in lines if x.startswith("FAIL")]
    assert len(failing) == len(fails) and lines[:len(fails)] == failing  # failing lines first
    for (m, a, b), line in zip(fails, failing, strict=True):
        assert f"mock ranking seleccion orden {m} {a} vs {b}:" in line and "matched sets" in line
    assert lines[-1] == f"gate: failed ({len(fails)} of the lines above)"
    # every pair and every four-fifths row is shown, with its own verdict
    assert sum(" ranking seleccion orden " in x for x in lines) == len(pairs) + len(ratios) == 12 + 4
    for g, v in ratios.items():
        (line,) = [x for x in lines if f"orden four-fifths {g}:" in x]
        assert line.split()[0] == v
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == str(len(pairs) + len(ratios))
    assert suite.get("failures") == str(len(fails))
    names = [tc.get("name") for tc in suite.iter("testcase") if tc.find("failure") is not None]
    assert names == [f"orden:{m}:{a}-vs-{b}[mock:seleccion:{a}-vs-{b}]" for m, a, b in fails]


def test_on_inconclusive_fails_the_inconclusive_ranking_verdicts(ranked, capsys):
    _, run = ranked["biased"]
    _, pairs, ratios = _verdicts(run)
    n_inc = sum(v == "inconclusive" for v in [*pairs.values(), *ratios.values()])
    code, out, _ = run_cli(["gate", run, "--on-inconclusive"], capsys)
    assert code == 1
    assert sum(x.startswith("FAIL (inconclusive, --on-inconclusive)") for x in out.splitlines()) == n_inc > 0


def test_no_ranking_fail_passes_the_gate(ranked, capsys):
    _, run = ranked["flat"]
    _, pairs, ratios = _verdicts(run)
    assert "fail" not in pairs.values() and "fail" not in ratios.values()
    code, out, _ = run_cli(["gate", run], capsys)
    assert code == 0 and out.splitlines()[-1] == "gate: passed"
    assert sum(" ranking seleccion orden " in x for x in out.splitlines()) == len(pairs) + len(ratios)


def test_run_gate_on_a_ranking_battery(ranked, capsys, tmp_path):
    battery, _ = ranked["biased"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:  # before: "--gate needs ... comparisons" (exit 2)
        main(["run", str(battery), "--out", str(tmp_path / "again"), "--gate", "--no-preflight"])
    assert exc.value.code == 1


def test_a_ranking_fail_fails_beside_passing_comparisons(ranked, runs, monkeypatch):
    # the comparisons of another run pass or are inconclusive; its gate is 0 until a ranking verdict fails
    from fairpair.analysis import _gate as gate

    base = analyze_run(runs["fair"])
    assert gate.gate_outcome(runs["fair"]).code == 0
    ranking = json.loads((ranked["biased"][1] / "results.json").read_text(encoding="utf-8"))["rankings"]
    both = base.model_copy(update={"rankings": ranking})
    monkeypatch.setattr(gate, "current_results", lambda run_dir: both)
    out = gate.gate_outcome(runs["fair"])
    assert out.code == 1
    text = gate.gate_lines(out)
    assert [x.split(":")[0] for x in text if x.startswith("FAIL")] == [
        "FAIL         mock ranking seleccion orden ranked_above g1 vs g2",
        "FAIL         mock ranking seleccion orden ranked_above g2 vs g3"]
    assert sum(c.primary for c in base.comparisons) + 16 == len(text)


def _set_differences(run):
    """Per case id, each pair's per-set difference on the top pick and on "ranked above", read without fairpair."""
    con = sqlite3.connect(run / "store.sqlite")
    out = {}
    for cid, detail in con.execute("SELECT case_id, detail FROM measurements WHERE measure='orden' AND status='ok'"):
        d = json.loads(detail)
        top, ranks = d["top"], d["ranks"]
        for a, b in itertools.combinations(["g1", "g2", "g3", "g4"], 2):
            out.setdefault(("top_pick", a, b), {})[cid] = float(top == a) - float(top == b)
            out.setdefault(("ranked_above", a, b), {})[cid] = float(ranks[a] < ranks[b]) - float(ranks[b] < ranks[a])
    con.close()
    return out


def test_compare_judges_the_ranking_pairs_set_by_set(ranked):
    # before: compare_runs (and so `gate --baseline`) returned no row for a ranking design
    _, flat = ranked["flat"]
    _, biased = ranked["biased"]
    cmp = compare_runs(flat, biased)
    assert cmp.paired_by == "case_id"
    rows = {(r.measure, r.group_a, r.group_b): r for r in cmp.rows}
    assert len(cmp.rows) == len(rows) == 12  # 6 pairs of 4 groups x (top pick, ranked above)
    assert {(r.ranking, r.design, r.attribute, r.primary, r.scale) for r in cmp.rows} == {
        ("orden", "seleccion", "origen", True, "binary")}
    # bootstrap_resamples: 0 in the plan (the ranking analysis uses none): the change's interval still exists
    assert {r.n_resamples for r in cmp.rows} == {2000} and all(None not in r.ci for r in cmp.rows)
    assert any("bootstrap_resamples: 0" in n for n in cmp.notes)
    before, after = _set_differences(flat), _set_differences(biased)
    for key, r in rows.items():
        ids = sorted(before[key])
        assert sorted(after[key]) == ids and r.n_sets == len(ids) == 96 and r.n_dropped == 0
        ga = np.array([before[key][c] for c in ids])
        gb = np.array([after[key][c] for c in ids])
        assert r.id == f"{key[0]}:{key[1]}-vs-{key[2]}"
        assert r.gap_before == pytest.approx(ga.mean()) and r.gap_after == pytest.approx(gb.mean())
        assert r.change == pytest.approx(gb.mean() - ga.mean())
        assert r.pvalue == pytest.approx(stats.wilcoxon(gb, ga, zero_method="pratt").pvalue, rel=1e-9)
        assert r.ci[0] <= r.change <= r.ci[1]
    # the planted g2 (weight 0.3): ranked below g1 and g3 far more often after than before
    for key in [("ranked_above", "g1", "g2"), ("ranked_above", "g2", "g3"), ("top_pick", "g1", "g2")]:
        assert rows[key].direction == "worse" and rows[key].pvalue < 0.001
    assert rows[("top_pick", "g1", "g3")].direction == "no clear change"  # equal weights in both runs
    back = {(r.measure, r.group_a, r.group_b): r.direction for r in compare_runs(biased, flat).rows}
    assert back[("ranked_above", "g1", "g2")] == back[("ranked_above", "g2", "g3")] == "better"


def _matched_sets(run):
    """Case id -> (design, matched set, slot -> group as JSON), read without fairpair."""
    con = sqlite3.connect(run / "store.sqlite")
    out = {cid: (c["design"], c["matched_set"], json.dumps(c["groups"], sort_keys=True))
           for cid, c in ((cid, json.loads(d)) for cid, d in con.execute("SELECT case_id, data FROM cases"))}
    con.close()
    return out


def test_compare_pairs_the_ranking_sets_by_matched_set_when_the_case_ids_changed(ranked, tmp_path):
    # the postings reworded after the flat run: every case id changes, the matched sets and their slots stay
    _, flat = ranked["flat"]
    _, reworded = _ranking_run(tmp_path, "reworded", {"g1": 1.0, "g2": 0.3, "g3": 1.0, "g4": 0.6}, "Vacante")
    sets_a, sets_b = _matched_sets(flat), _matched_sets(reworded)
    assert not set(sets_a) & set(sets_b) and sorted(sets_a.values()) == sorted(sets_b.values())
    cmp = compare_runs(flat, reworded)
    assert cmp.paired_by == "matched_set"
    assert any(n.startswith("fewer than half of the case ids match") for n in cmp.notes)
    rows = {(r.measure, r.group_a, r.group_b): r for r in cmp.rows}
    assert len(cmp.rows) == len(rows) == 12
    before, after = _set_differences(flat), _set_differences(reworded)
    for key, r in rows.items():
        by_a = {sets_a[c]: v for c, v in before[key].items()}
        by_b = {sets_b[c]: v for c, v in after[key].items()}
        ms = sorted(by_a)
        assert sorted(by_b) == ms and r.n_sets == len(ms) == 96 and r.n_dropped == 0
        ga, gb = np.array([by_a[m] for m in ms]), np.array([by_b[m] for m in ms])
        assert r.gap_before == pytest.approx(ga.mean()) and r.gap_after == pytest.approx(gb.mean())
        assert r.change == pytest.approx(gb.mean() - ga.mean())
        assert r.pvalue == pytest.approx(stats.wilcoxon(gb, ga, zero_method="pratt").pvalue, rel=1e-9)
    # the planted g2 (weight 0.3) is found worse across the reworded postings too, and fails the baseline gate
    assert rows[("ranked_above", "g1", "g2")].direction == "worse"
    assert gate_exit_code(reworded, baseline=flat) == 1


def test_gate_baseline_fails_on_a_worse_ranking_pair(ranked, capsys, tmp_path):
    _, flat = ranked["flat"]
    _, biased = ranked["biased"]
    worse = sorted((r.measure, r.group_a, r.group_b) for r in compare_runs(flat, biased).worse)
    assert ("ranked_above", "g1", "g2") in worse
    junit = tmp_path / "baseline.xml"
    code, out, _ = run_cli(["gate", biased, "--baseline", flat, "--junit", junit], capsys)
    assert code == 1
    lines = [x for x in out.splitlines() if x.startswith("WORSE")]
    assert len(lines) == len(worse)
    (line,) = [x for x in lines if " ranked_above g1 vs g2: gap " in x]
    assert line.startswith("WORSE        mock ranking seleccion orden ranked_above g1 vs g2: gap -14.6 points -> "
                           "+52.1 points than in the baseline, change +66.7 points")
    failed = [tc.get("name") for tc in ET.parse(junit).getroot().iter("testcase")
              if tc.find("failure") is not None and tc.find("failure").get("type") == "regression"]
    assert sorted(failed) == sorted(f"orden:{m}:{a}-vs-{b}[mock:{a}-vs-{b}] vs baseline" for m, a, b in worse)
    # the flat run against the biased one as baseline: better, not worse; the gate passes
    code, out, _ = run_cli(["gate", flat, "--baseline", biased], capsys)
    assert code == 0 and not [x for x in out.splitlines() if x.startswith("WORSE")]


def test_cli_compare_prints_the_ranking_pairs(ranked, capsys):
    _, flat = ranked["flat"]
    _, biased = ranked["biased"]
    capsys.readouterr()
    main(["compare", str(flat), str(biased)])
    lines = [x for x in capsys.readouterr().out.splitlines() if " ranking seleccion orden " in x]
    assert len(lines) == 12
    (line,) = [x for x in lines if "ranked_above:g1-vs-g2" in x]
    assert line.startswith("worse            mock ranking seleccion orden ranked_above:g1-vs-g2 g1 vs g2: gap "
                           "-14.6 -> +52.1 points, change +66.7 points")
