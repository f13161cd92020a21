"""gate prints each failing comparison and each regression in one line with its numbers (issue 14, point 5)."""

from __future__ import annotations

import re

from fairpair.analysis import analyze_run
from run_helpers import run_cli


def test_failing_comparison_line_has_its_numbers(runs, capsys):
    code, out, _ = run_cli(["gate", runs["biased"]], capsys)
    assert code == 1
    res = analyze_run(runs["biased"])
    (c,) = [c for c in res.comparisons if c.primary and c.verdict == "fail"]
    lines = out.splitlines()
    first = lines[0]  # failing lines come first
    assert first.startswith("FAIL ") and f"{c.target} {c.measure} {c.group_a} vs {c.group_b}:" in first
    assert f"{100 * c.estimate:+.1f} points" in first
    assert f"CI {100 * c.ci[0]:+.1f} to {100 * c.ci[1]:+.1f}" in first
    assert f"margin {100 * c.margin:.1f} points" in first and f"{c.n_pairs} pairs" in first
    assert re.search(r"p(=\d|<0\.001)", first) and "p=<" not in first and "holm-adjusted" in first
    assert lines[-1].startswith("gate: failed (1 of the lines above)")


def test_baseline_regression_is_printed(runs, capsys):
    code, out, _ = run_cli(["gate", runs["biased"], "--baseline", runs["fair"]], capsys)
    assert code == 1
    worse = [x for x in out.splitlines() if x.startswith("WORSE")]
    assert worse, out
    assert "refund magreb vs espana: gap" in worse[0] and "than in the baseline, change" in worse[0]
    assert "matched sets" in worse[0]


def test_on_inconclusive_says_inconclusive(runs, capsys):
    res = analyze_run(runs["biased"])
    inconclusive = [c for c in res.comparisons if c.primary and c.verdict == "inconclusive"]
    code, out, _ = run_cli(["gate", runs["biased"], "--on-inconclusive"], capsys)
    assert code == 1
    marked = [x for x in out.splitlines() if x.startswith("FAIL (inconclusive, --on-inconclusive)")]
    assert len(marked) == len(inconclusive)
    plain = [x for x in out.splitlines() if x.startswith("FAIL ") and "inconclusive" not in x.split(":")[0]]
    assert len(plain) == 1  # the real fail stays a plain FAIL


def test_inconclusive_wording_with_and_without_the_flag(runs):
    from fairpair.analysis._gate import GateOutcome, gate_lines

    res = analyze_run(runs["biased"])
    comps = [c.model_copy(update={"verdict": "inconclusive"}) if c.primary and c.verdict == "pass" else c
             for c in res.comparisons]
    res2 = res.model_copy(update={"comparisons": comps})
    flagged = gate_lines(GateOutcome(1, res2, [], True))
    assert sum(x.startswith("FAIL (inconclusive, --on-inconclusive)") for x in flagged) == 2
    plain = gate_lines(GateOutcome(1, res2, [], False))
    assert sum(x.startswith("inconclusive ") for x in plain) == 2
    assert sum(x.startswith("FAIL") for x in plain) == 1
