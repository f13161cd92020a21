"""Where a difference lives: `generalize: {templates: fixed}`, the per-scenario breakdown in results.json,
the scenario-level Holm family, `by: template` and the heterogeneity guard of the average."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from analysis_runs import battery_dict, score_run
from fairpair.analysis import analyze_run
from fairpair.analysis._paired import PairData, analyze_pairs, finish

IDENT = dict(id="c", target="t", measure="m", attribute="a", design="d", group_a="A", group_b="B", primary=True)


def _score_run(tmp_path, *, templates: int, generalize: dict, comparisons: list | None = None, biased=("t01",),
               shift: float = -3.0, names=None):
    """A mock run measured by a continuous ``score``: noise, plus ``shift`` for group magreb in ``biased`` templates."""
    b = battery_dict(templates=templates, repetitions=2, names=None, comparisons=comparisons or [
        {"id": "score", "measure": "score", "attribute": "origen", "groups": ["magreb", "espana"], "margin": 0.5,
         "generalize": generalize}])

    def value(c, rng):
        return rng.normal(0, 0.3) + (shift if c.groups.get("origen") == "magreb" and c.template in biased else 0)

    return score_run(tmp_path, b, value)


def test_templates_fixed_gives_a_verdict_for_one_handful_of_scenarios_and_says_where(tmp_path):
    run_dir = _score_run(tmp_path, templates=3, generalize={"names": "fixed", "templates": "fixed"})
    analyze_run(run_dir)
    res = json.loads((run_dir / "results.json").read_text())
    c = next(x for x in res["comparisons"] if x["id"] == "score")
    assert c["templates"] == "fixed" and c["names"] == "fixed"
    assert "these scenarios" in c["estimand"]
    assert c["verdict"] == "fail"  # 3 templates: templates random would be `insufficient design`
    sc = c["scenarios"]
    assert [r["template"] for r in sc["rows"]] == ["t00", "t01", "t02"]
    by = {r["template"]: r for r in sc["rows"]}
    assert by["t01"]["verdict"] == "fail" and by["t00"]["verdict"] != "fail" and by["t02"]["verdict"] != "fail"
    assert sc["summary"].startswith("fails in `t01` (-2.99)") and sc["summary"].endswith("not shown elsewhere")
    assert c["estimate"] == pytest.approx(np.mean([r["estimate"] for r in sc["rows"]]))
    assert sc["correction"].startswith("holm") and sc["family_size"] == 3


def test_by_template_makes_the_scenario_verdicts_primary(tmp_path):
    comps = [{"id": "score", "measure": "score", "attribute": "origen", "groups": ["magreb", "espana"],
              "margin": 0.5, "by": "template", "generalize": {"names": "fixed", "templates": "fixed"}}]
    run_dir = _score_run(tmp_path, templates=4, generalize={}, comparisons=comps, shift=-1.0)
    res = analyze_run(run_dir, write=False)
    c = next(x for x in res.comparisons if x.id == "score")
    assert c.scenarios.by_template and "by template" in c.verdict_rule
    assert c.verdict == "fail" and [r.template for r in c.scenarios.rows if r.verdict == "fail"] == ["t01"]
    # the scenarios' p-values are adjusted with the plan's other primary tests: here the 4 scenarios alone
    raw = np.array([r.pvalue for r in c.scenarios.rows])
    from statsmodels.stats.multitest import multipletests

    assert [r.pvalue_adjusted for r in c.scenarios.rows] == pytest.approx(multipletests(raw, method="holm")[1])
    assert c.pvalue_adjusted == pytest.approx(min(r.pvalue_adjusted for r in c.scenarios.rows))


def _pairs(d_t, names=5, reps=2, noise=0.1, seed=0):
    """Continuous answers: template t adds d_t[t] to group A; independent noise per answer."""
    rng = np.random.default_rng(seed)
    t = d_t.size
    tt, kk, _ = np.meshgrid(np.arange(t), np.arange(names), np.arange(reps), indexing="ij")
    x = (d_t[tt] + rng.normal(0, noise, tt.shape)).reshape(-1)
    y = rng.normal(0, noise, tt.shape).reshape(-1)
    k = kk.reshape(-1).astype(np.intp)
    return PairData(x, y, tt.reshape(-1).astype(np.intp), k, ("v",) * names, name_a=k, name_b=k,
                    template_labels=tuple(f"s{i}" for i in range(t)))


def _verdict(pd, margin, names="random", templates="random"):
    pa = analyze_pairs(pd, scale="continuous", alpha=0.05, confidence_level=0.95, exact_threshold=25,
                       n_resamples=0, seed=0, heterogeneity=False, names=names, secondary=False, templates=templates)
    return finish(pa, pvalue_adjusted=pa.pvalue, correction="none", family_size=1, margin=margin, alpha=0.05,
                  pvalue_margin_adjusted=pa.pvalue_beyond(margin), **IDENT)


def test_the_guard_holds_back_a_pass_that_averages_one_biased_scenario_away():
    d = np.zeros(40)
    d[7] = 2.0  # one scenario in 40 carries the whole difference: the average is 0.05
    res = _verdict(_pairs(d), margin=0.4)
    # the average alone would pass: its 90% interval (the hull with Hall's skewness-corrected t) lies inside
    assert -0.4 < res.equivalence_ci[0] and res.equivalence_ci[1] < 0.4
    assert res.verdict == "inconclusive" and "heterogeneous average" in res.verdict_rule
    sc = res.scenarios
    assert sc.heterogeneous and sc.outliers[0] == "s7" and sc.outlier_pvalue < 1e-6
    assert "heterogeneous average" in res.note
    assert sc.summary.startswith("fails in `s7` (+2")
    # templates fixed: the claim is about these 40 scenarios; no guard (the scenarios answer it)
    fixed = _verdict(_pairs(d), margin=0.4, templates="fixed")
    assert not fixed.scenarios.heterogeneous and fixed.verdict == "pass"


def test_a_fail_carried_by_a_few_scenarios_says_so():
    d = np.full(20, 0.5)
    d[[3, 11]] = 4.5
    res = _verdict(_pairs(d), margin=0.1)
    assert res.verdict == "fail"
    assert "carried by 2 scenario(s) (s3, s11)" in res.note or "carried by 2 scenario(s) (s11, s3)" in res.note
    assert res.scenarios.without_outliers == pytest.approx(np.delete(
        np.array([r.estimate for r in res.scenarios.rows]), [3, 11]).mean())


def test_templates_fixed_names_random_is_welch_on_the_names_means():
    rng = np.random.default_rng(3)
    x = rng.normal(0.2, 1, (1, 6, 3))  # one posting, 6 names per group, 3 repetitions
    y = rng.normal(0, 1, (1, 6, 3))
    tt, kk, _ = np.meshgrid(np.arange(1), np.arange(6), np.arange(3), indexing="ij")
    k = kk.reshape(-1).astype(np.intp)
    pd = PairData(x.reshape(-1), y.reshape(-1), tt.reshape(-1).astype(np.intp), k, ("v",) * 6, name_a=k, name_b=k)
    res = _verdict(pd, margin=0.5, templates="fixed")
    w = stats.ttest_ind(x.mean(axis=2).ravel(), y.mean(axis=2).ravel(), equal_var=False)
    assert res.pvalue == pytest.approx(w.pvalue, rel=1e-10)
    ci = w.confidence_interval(0.95)
    assert res.ci == pytest.approx([ci.low, ci.high], rel=1e-10)
    assert res.design_reason is None and res.verdict in ("pass", "inconclusive", "fail")


def test_the_report_shows_where_it_is(tmp_path):
    from fairpair.report import write_report

    run_dir = _score_run(tmp_path, templates=3, generalize={"names": "fixed", "templates": "fixed"})
    analyze_run(run_dir)
    write_report(run_dir)
    html = (run_dir / "report" / "report.html").read_text(encoding="utf-8")
    md = (run_dir / "report" / "report.md").read_text(encoding="utf-8")
    assert '<section id="scenarios">' in html and 'id="scenarios-0"' in html
    assert "¿Dónde está?" in html  # the battery is Spanish
    assert "falla en `t01` (−3,0), no se ve en el resto" in md  # a code span
    assert "falla en <code>t01</code> (−3,0), no se ve en el resto" in html
    assert "escenarios que se apartan: sin prueba (menos de 5 escenarios)" in md


def test_informative_missingness_gives_worst_case_bounds_and_no_pass():
    rng = np.random.default_rng(11)
    t, k, r = 20, 5, 4
    tt, kk, _ = np.meshgrid(np.arange(t), np.arange(k), np.arange(r), indexing="ij")
    x = (rng.random(tt.shape) < 0.7).astype(float).reshape(-1)
    y = (rng.random(tt.shape) < 0.7).astype(float).reshape(-1)
    y[(y == 1) & (rng.random(y.size) < 0.4)] = np.nan  # group B's "yes" answers go missing
    kf = kk.reshape(-1).astype(np.intp)
    pd = PairData(x, y, tt.reshape(-1).astype(np.intp), kf, ("v",) * k, name_a=kf, name_b=kf)
    res = _verdict(pd, margin=0.3)
    assert res.missing_informative and res.missing_shares[0] == 0.0
    # bounds by hand: B's missing answers all "no" (upper) or all "yes" (lower); A complete
    a = x.reshape(t, k, r).mean(axis=(1, 2))
    yy = y.reshape(t, k, r)
    lo = (a - np.where(np.isnan(yy), 1.0, yy).mean(axis=(1, 2))).mean()
    hi = (a - np.where(np.isnan(yy), 0.0, yy).mean(axis=(1, 2))).mean()
    assert res.missing_bounds == pytest.approx([lo, hi])
    assert "missing answers differ by group (0% vs" in res.note
    assert res.verdict != "pass" and (res.verdict != "fail" or lo > 0.3)


def test_yes_no_scenarios_get_score_intervals_inside_the_scale_and_name_a_clear_one():
    """1% events: a scenario without events has an interval with width inside [-1, 1] and p = 1; a scenario
    where group A gets 60% events fails; fair scenarios do not (the score test of fairpair.stats)."""
    from fairpair.stats import scenario_differences_from_cells

    rng = np.random.default_rng(2)
    t, names, reps = 20, 10, 5
    tt, kk, _ = np.meshgrid(np.arange(t), np.arange(names), np.arange(reps), indexing="ij")
    x = (rng.random(tt.shape) < np.where(tt == 4, 0.6, 0.01)).astype(float)
    y = (rng.random(tt.shape) < 0.01).astype(float)
    x[tt == 0], y[tt == 0] = 0.0, 0.0
    k = kk.reshape(-1).astype(np.intp)
    pd = PairData(x.reshape(-1), y.reshape(-1), tt.reshape(-1).astype(np.intp), k, ("v",) * names, name_a=k,
                  name_b=k, template_labels=tuple(f"s{i}" for i in range(t)))
    pa = analyze_pairs(pd, scale="binary", alpha=0.05, confidence_level=0.95, exact_threshold=25, n_resamples=0,
                       seed=0, heterogeneity=False, names="random", secondary=False)
    res = finish(pa, pvalue_adjusted=pa.pvalue, correction="none", family_size=1, margin=0.01, alpha=0.05,
                 pvalue_margin_adjusted=pa.pvalue_beyond(0.01), **IDENT)
    rows = {r.template: r for r in res.scenarios.rows}
    assert rows["s0"].pvalue == 1.0 and rows["s0"].ci[0] < 0 < rows["s0"].ci[1]
    assert all(-1 <= r.ci[0] <= r.estimate <= r.ci[1] <= 1 for r in rows.values())
    assert [r.template for r in rows.values() if r.verdict == "fail"] == ["s4"]
    # the same as the score test on the template x name cell means, names as units
    ref = scenario_differences_from_cells(x.mean(-1), y.mean(-1), names="random", bounds=(0, 1))
    np.testing.assert_allclose([r.ci for r in rows.values()], ref.confidence_intervals(0.95), rtol=1e-12)


def test_a_by_template_verdict_line_names_the_deciding_scenario_not_the_averages_interval(tmp_path):
    """Gate, terminal, report sentence and results.json's note of a `by: template` fail name the failing scenario
    with its own estimate, interval and Holm-adjusted p, never the average's interval as the evidence."""
    import io

    from rich.console import Console

    from fairpair.analysis._gate import gate_lines, gate_outcome
    from fairpair.records import ScenarioRow
    from fairpair.report._terminal import print_verdicts

    comps = [{"id": "score", "measure": "score", "attribute": "origen", "groups": ["magreb", "espana"],
              "margin": 0.5, "by": "template", "generalize": {"names": "fixed", "templates": "fixed"}}]
    run_dir = _score_run(tmp_path, templates=4, generalize={}, comparisons=comps, shift=-1.0)
    analyze_run(run_dir)
    c = next(x for x in analyze_run(run_dir, write=False).comparisons if x.id == "score")
    assert c.verdict == "fail"
    row: ScenarioRow = next(r for r in c.scenarios.rows if r.template == "t01")
    assert row.verdict == "fail" and c.scenarios.deciding("fail") == [row]
    ci = f"95% CI {row.ci[0]:+.3g} to {row.ci[1]:+.3g}"
    avg_ci = f"CI {c.ci[0]:+.3g} to {c.ci[1]:+.3g}"
    assert ci != f"95% {avg_ci}"
    (line,) = [x for x in gate_lines(gate_outcome(run_dir)) if " score magreb vs espana" in x]
    assert line.startswith("FAIL") and f"decided by scenario `t01`: {row.estimate:+.3g} ({ci})" in line
    assert f"holm-adjusted {row.pvalue_adjusted:.3g}" in line or "holm-adjusted <0.001" in line
    assert "the claim is about these scenarios" in line and avg_ci not in line
    assert f"decided by scenario `t01`: {row.estimate:+.3g} ({ci})" in (c.note or "")
    con = Console(file=io.StringIO(), width=300)
    print_verdicts(con, run_dir, sentences=True, language="en")
    out = con.file.getvalue()
    (fail_line,) = [x for x in out.splitlines() if x.startswith("FAIL score")]
    lo, hi = (f"{v:.1f}".replace("-", "\u2212") for v in row.ci)
    assert "In scenario t01:" in fail_line and f"95% CI {lo} to {hi}" in fail_line  # no literal backticks
    assert "the claim is about these scenarios" in fail_line
    assert f"{c.ci[0]:.1f}".replace("-", "\u2212") + " to" not in fail_line
    assert " t01 " in out and "`" not in out  # the table's A - B cell is the deciding scenario's
    assert "Fails: score: magreb − espana (by template, in t01)." in out  # the headline names the scenario
    es = io.StringIO()
    print_verdicts(Console(file=es, width=300), run_dir, sentences=True, language="es")
    assert "En el escenario t01:" in es.getvalue()
