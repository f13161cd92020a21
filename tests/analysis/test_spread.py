"""The within-cell spread of a comparison (issue 32, "Spread"): in results.json, the report and the terminal,
secondary (never the comparison's verdict or the gate)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from analysis_runs import battery_dict, score_run
from fairpair.analysis import analyze_run
from fairpair.stats import spread_difference
from fairpair.store import Store

COMPARISONS = [
    {"id": "score", "measure": "score", "attribute": "origen", "groups": ["magreb", "espana"], "margin": 2.0},
    {"id": "score-ro", "measure": "score", "attribute": "origen", "groups": ["rumania", "espana"], "margin": 2.0},
    {"id": "refund", "measure": "refund", "attribute": "origen", "groups": ["magreb", "espana"], "margin": 0.2},
]


def _run(tmp_path, *, wide: float = 3.0, comparisons: list | None = None):
    """10 templates x 3 names x 3 repetitions; ``score`` ~ N(0, 1), N(0, wide) for magreb (same mean)."""
    b = battery_dict(templates=10, repetitions=3, comparisons=comparisons or COMPARISONS)

    def value(c, rng):
        return rng.normal(0, wide if c.groups.get("origen") == "magreb" else 1.0)

    run_dir = score_run(tmp_path, b, value, seed=3)
    rng = np.random.default_rng(4)
    with Store.open(run_dir) as s:
        for r in s.responses():
            s.add_measurement(target=r.target, case_id=r.case_id, measure="refund", status="ok",
                              value=float(rng.random() < 0.5))
    return run_dir


def test_spread_is_a_secondary_statistic_with_its_own_verdict(tmp_path):
    run_dir = _run(tmp_path)
    analyze_run(run_dir)
    res = json.loads((run_dir / "results.json").read_text())
    by = {c["id"]: c for c in res["comparisons"]}
    sp = by["score"]["spread"]
    assert sp["ratio"] == pytest.approx(3.0, rel=0.2) and sp["estimate"] == pytest.approx(np.log(sp["ratio"]))
    assert sp["ci"][0] < sp["estimate"] < sp["ci"][1]
    assert sp["ratio_ci"] == pytest.approx([np.exp(sp["ci"][0]), np.exp(sp["ci"][1])])
    assert sp["verdict"] == "fail" and "never the comparison's verdict" in sp["verdict_rule"]
    assert sp["n_templates"] == 10 and sp["n_cells"] == 60
    # the spread never decides the comparison: the means do not differ, so no fail
    assert by["score"]["verdict"] != "fail"
    assert by["score-ro"]["spread"]["verdict"] == "inconclusive"
    # Holm over the target's two spread tests (the refund measure is yes/no: no spread)
    assert by["refund"]["spread"] is None
    raw = [by[k]["spread"]["pvalue"] for k in ("score", "score-ro")]
    adj = multipletests(raw, method="holm")[1]
    assert [by[k]["spread"]["pvalue_adjusted"] for k in ("score", "score-ro")] == pytest.approx(adj)
    assert by["score"]["spread"]["family_size"] == 2 and by["score"]["spread"]["correction"].startswith("holm")


def test_spread_matches_the_statistic_on_the_answers(tmp_path):
    run_dir = _run(tmp_path, wide=1.0)
    res = analyze_run(run_dir, write=False)
    c = next(x for x in res.comparisons if x.id == "score")
    with Store.open(run_dir) as s:
        cases = {k.id: k for k in s.iter_cases()}
        vals = {m.case_id: m.value for m in s.measurements("score")}
    v, t, n, g = [], [], [], []
    for cid, val in vals.items():
        k = cases[cid]
        grp = k.groups.get("origen")
        if grp in ("magreb", "espana"):
            v.append(val)
            t.append(k.template)
            n.append(str(k.variants))
            g.append(grp)
    direct = spread_difference(np.array(v), np.array(t), np.array(n), np.array(g), groups=("magreb", "espana"),
                               names="fixed")
    assert c.spread.estimate == pytest.approx(direct.estimate) and c.spread.se == pytest.approx(direct.se)
    assert c.spread.sd_a == pytest.approx(direct.sd_a)


def test_report_and_terminal_show_the_spread(tmp_path):
    from rich.console import Console

    from fairpair.report import print_verdicts, write_report

    run_dir = _run(tmp_path)
    analyze_run(run_dir)
    write_report(run_dir, out=tmp_path / "rep", language="en")
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    html = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert "## Spread of the answers (secondary)" in md and "SD A / SD B" in md
    line = next(x for x in md.splitlines() if x.startswith("| score: magreb") and "SD" not in x)
    assert line.endswith("**FAIL** (cannot pass: the plan gives no max\\_sd\\_ratio for this comparison) |")
    assert 'id="spread"' in html and "Ratio A / B" in html
    summary = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    spreads = {v["id"]: v["spread"] for v in summary["verdicts"]}
    assert spreads["score"]["verdict"] == "fail" and spreads["refund"] is None
    buf = io.StringIO()
    print_verdicts(Console(file=buf, width=200), run_dir=run_dir, language="en")
    out = buf.getvalue()
    line = next(x for x in out.splitlines() if x.startswith("spread (secondary) score: magreb − espana: SD"))
    assert line.endswith(": FAIL; cannot pass: the plan gives no max_sd_ratio for this comparison")
    assert "(95% CI" in line
    assert "rumania − espana: SD" not in out  # without --verbose only the spread tests that fail


@pytest.mark.parametrize("wide, verdict", [(1.0, "pass"), (3.0, "fail")])
def test_a_max_sd_ratio_in_the_plan_lets_the_spread_pass_or_fail_beyond_it(tmp_path, wide, verdict):
    comps = [{**c, "max_sd_ratio": 1.5} if c["measure"] == "score" else c for c in COMPARISONS]
    run_dir = _run(tmp_path, wide=wide, comparisons=comps)
    res = analyze_run(run_dir, write=False)
    by = {c.id: c.spread for c in res.comparisons}
    sp = by["score"]
    assert sp.max_sd_ratio == 1.5 and sp.verdict == verdict and "max_sd_ratio R" in sp.verdict_rule
    lo, hi = sp.equivalence_ratio_ci
    if verdict == "pass":  # the 90% interval of the ratio inside [1/1.5, 1.5]
        assert 1 / 1.5 < lo and hi < 1.5 and sp.pvalue_margin == 1.0
    else:  # the 95% interval beyond 1.5, and the p-value against [1/1.5, 1.5] below alpha after Holm
        assert sp.ratio_ci[0] > 1.5 and sp.pvalue_margin_adjusted < 0.05
    # Holm over the two spread tests, against the margin as against equal SDs (statsmodels)
    raw = [by[k].pvalue_margin for k in ("score", "score-ro")]
    assert [by[k].pvalue_margin_adjusted for k in ("score", "score-ro")] == pytest.approx(
        multipletests(raw, method="holm")[1])
    # the terminal prints a spread that passes or fails, with the plan's ratio
    from rich.console import Console

    from fairpair.report import print_verdicts

    analyze_run(run_dir)
    buf = io.StringIO()
    print_verdicts(Console(file=buf, width=250), run_dir=run_dir, language="en")
    line = next(x for x in buf.getvalue().splitlines() if x.startswith("spread (secondary) score: magreb − espana"))
    assert line.endswith(f": {verdict.upper()}; largest tolerated ratio 1.50 (or 1/1.50)")
