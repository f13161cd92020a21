"""The gate judges the ranking design's verdicts (issue 17) like every other comparison's."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
import yaml

from fairpair.analysis import analyze_run
from fairpair.battery import load_battery
from fairpair.cli import main
from fairpair.measures import measure_run
from fairpair.run import RunSettings, execute_run
from fairpair.testing._ranking import ranking_battery


def _ranking_run(tmp, name, selection):
    b = ranking_battery(k=4, templates=8, names=6, repetitions=2, seed=1, selection=selection, position=[])
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


def _gate(capsys, *args):
    capsys.readouterr()
    try:
        main(["gate", *map(str, args)])
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().out


def test_a_ranking_fail_fails_the_gate_with_its_line(ranked, capsys, tmp_path):
    _, run = ranked["biased"]
    data, pairs, ratios = _verdicts(run)
    assert data["comparisons"] == []  # a ranking battery alone: before, "nothing to gate" (exit 2)
    fails = sorted(k for k, v in pairs.items() if v == "fail")
    assert fails == [("ranked_above", "g1", "g2"), ("ranked_above", "g2", "g3")]  # the planted g2 (weight 0.3)
    junit = tmp_path / "fairness.xml"
    code, out = _gate(capsys, run, "--junit", junit)
    assert code == 1
    lines = out.splitlines()
    failing = [x for x in lines if x.startswith("FAIL")]
    assert len(failing) == len(fails) and lines[:len(fails)] == failing  # failing lines first
    for (m, a, b), line in zip(fails, failing):
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
    code, out = _gate(capsys, run, "--on-inconclusive")
    assert code == 1
    assert sum(x.startswith("FAIL (inconclusive, --on-inconclusive)") for x in out.splitlines()) == n_inc > 0


def test_no_ranking_fail_passes_the_gate(ranked, capsys):
    _, run = ranked["flat"]
    _, pairs, ratios = _verdicts(run)
    assert "fail" not in pairs.values() and "fail" not in ratios.values()
    code, out = _gate(capsys, run)
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
