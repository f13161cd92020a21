"""Huge numbers are guarded (issue 14, point 6): plan is arithmetic in the repetitions, run and expand ask
for --yes above a size, and the YAML bounds stop a bomb before it is built."""

from __future__ import annotations

import time

import pytest

from fairpair.battery import load_battery
from fairpair.battery._bounds import check_bounds
from fairpair.cases import expand, plan
from fairpair.cli import main
from fairpair.errors import BatteryError
from fairpair.testing import write_battery


def _code(args) -> int:
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


@pytest.mark.parametrize("reps", [1, 3, 7])
def test_plan_counts_equal_the_expansion(tmp_path, reps):
    lb = load_battery(write_battery(tmp_path, {"kind": "mock"}, repetitions=reps, templates=3))
    cases = list(expand(lb))
    p = plan(lb)
    assert p.conversations == len(cases) == 3 * 8 * reps
    assert p.designs["counterfactual-origen"]["matched_sets"] == len({c.matched_set for c in cases})
    assert p.requests == sum(len(c.turns) for c in cases)


def test_plan_answers_at_once_for_a_billion_repetitions(tmp_path, capsys):
    b = write_battery(tmp_path, {"kind": "mock"}, repetitions=10**9, templates=2)
    t0 = time.process_time()
    p = plan(load_battery(b))
    assert time.process_time() - t0 < 2.0
    assert p.conversations == 16 * 10**9
    assert p.designs["counterfactual-origen"]["matched_sets"] == 2 * 4 * 10**9


def test_run_and_expand_ask_for_yes_above_the_threshold(tmp_path, capsys):
    b = write_battery(tmp_path, {"kind": "mock"}, repetitions=10**9, templates=2)
    assert _code(["run", b, "--out", tmp_path / "run", "-q"]) == 2
    err = capsys.readouterr().err
    assert "this battery sends 16,000,000,000 conversations per target" in " ".join(err.split())
    assert "pass --yes" in err
    assert not (tmp_path / "run").exists()  # nothing written
    assert _code(["expand", b, "-o", tmp_path / "cases.jsonl"]) == 2
    assert not (tmp_path / "cases.jsonl").exists()


def test_a_small_battery_does_not_ask(tmp_path):
    b = write_battery(tmp_path, {"kind": "mock"}, templates=1)
    assert _code(["expand", b, "-o", tmp_path / "cases.jsonl"]) == 0


def test_alias_bomb_is_stopped_before_it_expands():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    t0 = time.process_time()
    with pytest.raises(BatteryError) as ei:
        check_bounds("\n".join(lines), "bomb.yaml")
    assert time.process_time() - t0 < 1.0
    assert ei.value.line == 6  # 10^6 values are passed at the 6th line (a5 expands to 10^6)
    check_bounds("\n".join(lines[:5]), "ok.yaml")  # 10^5 values: accepted


def test_depth_bound():
    check_bounds("a: " + "[" * 63 + "]" * 63, "x.yaml")  # the top mapping is the first level
    with pytest.raises(BatteryError, match="deeper than 64 levels"):
        check_bounds("a: " + "[" * 64 + "]" * 64, "x.yaml")
