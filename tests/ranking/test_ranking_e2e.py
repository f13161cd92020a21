"""A ranking battery end to end against the mock with a planted selection and position bias."""

from __future__ import annotations

import json

import pytest
import yaml

from fairpair.analysis import analyze_run
from fairpair.battery import load_battery
from fairpair.measures import measure_run
from fairpair.run import RunSettings, execute_run
from fairpair.testing._ranking import ranking_battery, recovery, true_rates

SELECTION = {"g1": 1.0, "g2": 0.45, "g3": 1.0, "g4": 0.6}
POSITION = [1.8, 1.0, 1.0, 1.0]


def _audit(tmp_path, seed, **kw):
    b = ranking_battery(k=4, templates=8, names=6, repetitions=8, seed=seed, selection=SELECTION,
                        position=POSITION, confidence_level=1 - 0.05 / 8, unparsed=0.03, **kw)
    p = tmp_path / f"rk{seed}.yaml"
    p.write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False), encoding="utf-8")
    run = tmp_path / f"run{seed}"
    execute_run(load_battery(p), run, RunSettings(concurrency=16))
    measure_run(run)
    res = analyze_run(run)
    return b, res, run


def test_truth_of_the_planted_biases():
    b = ranking_battery(k=4, selection=SELECTION, position=POSITION)
    by_group, by_slot = true_rates(b)
    assert sum(by_group.values()) == pytest.approx(1.0) and sum(by_slot) == pytest.approx(1.0)
    # by hand for the first row of the square (g1 g2 g4 g3 in slots 1-4): weights 1.8, .45, .6, 1
    assert by_slot[0] > 0.25 > by_slot[1]
    assert by_group["g2"] < by_group["g4"] < by_group["g1"] == pytest.approx(by_group["g3"])


@pytest.mark.parametrize("seed", [1, 2])
def test_selection_and_position_bias_are_recovered(tmp_path, seed):
    b, res, run = _audit(tmp_path, seed)
    assert len(res.rankings) == 1
    r = res.rankings[0]
    assert r["measure"] == "orden" and r["design"] == "seleccion" and r["k"] == 4
    assert r["n_sets"] == 8 * 8 * 6
    assert r["n_unparsed"] > 0 and r["n_parsed"] + r["n_unparsed"] == r["n_sets"]
    rec = recovery(r, b)
    assert rec.selection_detected and rec.position_detected
    assert rec.selection_covered and rec.position_covered
    # results.json carries the section
    on_disk = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert on_disk["rankings"][0]["n_sets"] == r["n_sets"]


def test_without_bias_nothing_is_detected(tmp_path):
    b = ranking_battery(k=3, templates=6, names=4, repetitions=6, seed=3, selection={}, position=[],
                        style="numbered")
    p = tmp_path / "flat.yaml"
    p.write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False), encoding="utf-8")
    run = tmp_path / "flat"
    execute_run(load_battery(p), run, RunSettings(concurrency=16))
    measure_run(run)
    r = analyze_run(run).rankings[0]
    assert r["n_unparsed"] == 0
    for s in r["selection"]:
        assert s["rate_ci"][0] <= 1 / 3 <= s["rate_ci"][1]


@pytest.mark.slow  # the whole command with its report (about 1 min idle, several under load)
def test_the_example_battery_runs_end_to_end(tmp_path, capsys):
    from pathlib import Path

    from fairpair.cli import main

    example = Path(__file__).resolve().parents[2] / "examples" / "ranking" / "battery.yaml"
    main(["validate", str(example)])
    out = capsys.readouterr().out
    assert "design seleccion: ranking of 4 candidates" in out and "insufficient design" not in out
    main(["run", str(example), "--out", str(tmp_path / "run"), "-y"])
    r = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))["rankings"][0]
    assert r["n_sets"] == 192 and r["n_unparsed"] > 0
    rates = {s["group"]: s["rate"] for s in r["selection"]}
    assert max(rates["magreb"], rates["subsahariana"]) < min(rates["espana"], rates["latam"])
    slots = [s["top_rate"] for s in r["position"]["slots"]]
    assert slots[0] == max(slots)
