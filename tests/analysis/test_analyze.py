"""analyze_run on mock runs: every number checked against statsmodels / scipy on the same pairs."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import cochrans_q, mcnemar
from statsmodels.stats.multitest import multipletests
from tests.stats.kurtosis_reference import kurtosis_df_reference

from fairpair.analysis import analyze_run, load_results, results_schema


def _pairs(run_dir, measure, ga, gb):
    """Pairs rebuilt from the store with plain SQL: (x, y, template) per matched set."""
    con = sqlite3.connect(run_dir / "store.sqlite")
    cases = {cid: json.loads(d) for cid, d in con.execute("SELECT case_id, data FROM cases")}
    vals = {cid: json.loads(v) for cid, v in con.execute(
        "SELECT case_id, value FROM measurements WHERE measure=? AND status='ok'", (measure,))}
    by_set = defaultdict(dict)
    for cid, c in cases.items():
        by_set[c["matched_set"]][c["groups"]["origen"]] = cid
    xs, ys, tpl = [], [], []
    for ms in sorted(by_set):
        a, b = by_set[ms][ga], by_set[ms][gb]
        if a in vals and b in vals:
            xs.append(float(vals[a]))
            ys.append(float(vals[b]))
            tpl.append(cases[a]["template"])
    return np.array(xs), np.array(ys), np.array(tpl)


def _template_differences(run_dir, measure, ga, gb):
    """D_t = mean over group A's names of the template x name cell mean - the same for B, by pandas from SQL."""
    import pandas as pd

    con = sqlite3.connect(run_dir / "store.sqlite")
    rows = []
    vals = {cid: json.loads(v) for cid, v in con.execute(
        "SELECT case_id, value FROM measurements WHERE measure=? AND status='ok'", (measure,))}
    for cid, d in con.execute("SELECT case_id, data FROM cases"):
        c = json.loads(d)
        if cid in vals and c["groups"]["origen"] in (ga, gb):
            rows.append((c["template"], c["groups"]["origen"], c["variants"]["origen"], float(vals[cid])))
    df = pd.DataFrame(rows, columns=["t", "g", "n", "v"])
    cell = df.groupby(["t", "g", "n"]).v.mean().reset_index()
    gm = cell.groupby(["t", "g"]).v.mean().unstack()
    return (gm[ga] - gm[gb]).to_numpy(), cell


@pytest.fixture(scope="module")
def biased(runs):
    return analyze_run(runs["biased"])


def test_results_file_and_schema(runs, biased):
    data = json.loads((runs["biased"] / "results.json").read_text())
    assert data["schema"] == "fairpair.results/2"
    assert load_results(runs["biased"]) == biased
    schema = results_schema()
    for key in ("comparisons", "omnibus", "two_party", "judge", "counts", "plan_sha256", "plan_changed"):
        assert key in schema["properties"]
    assert biased.counts["mock"].cases == 480 and biased.counts["mock"].answered == 480
    assert biased.counts["mock"].measured == 480 * 3
    assert biased.plan_changed is False and biased.plan_sha256 and biased.plan_sha256 == biased.plan_sha256_now


def test_binary_comparison_matches_statsmodels(runs, biased):
    rows = [c for c in biased.comparisons if c.measure == "refund"]
    assert {(c.group_a, c.group_b) for c in rows} == {("magreb", "espana"), ("rumania", "espana"),
                                                      ("china", "espana")}
    raw = []
    for c in sorted(rows, key=lambda c: c.group_a):
        x, y, tpl = _pairs(runs["biased"], "refund", c.group_a, c.group_b)
        a, b = int(((x == 1) & (y == 1)).sum()), int(((x == 1) & (y == 0)).sum())
        cc, d = int(((x == 0) & (y == 1)).sum()), int(((x == 0) & (y == 0)).sum())
        assert c.binary.table == [[a, b], [cc, d]] and (c.binary.b, c.binary.c) == (b, cc)
        assert c.n_pairs == x.size == 120 and c.n_clusters == 20 and (c.n_names_a, c.n_names_b) == (3, 3)
        # balanced design: the crossed estimate is the mean paired difference
        assert c.value_a == pytest.approx(x.mean()) and c.value_b == pytest.approx(y.mean())
        assert c.estimate == pytest.approx(x.mean() - y.mean())
        # names fixed: the verdict's t is the one-sample t on the template differences (scipy)
        dt, _ = _template_differences(runs["biased"], "refund", c.group_a, c.group_b)
        # (yes/no: with the df of the template differences' kurtosis, a bounded measure's)
        ref = stats.ttest_1samp(dt, 0.0)
        df = kurtosis_df_reference(dt)
        assert c.names == "fixed" and "these names" in c.estimand
        assert c.test.startswith("crossed t") and c.df == pytest.approx(df)
        assert c.statistic == pytest.approx(ref.statistic, rel=1e-9)
        assert c.pvalue == pytest.approx(2 * stats.t.sf(abs(ref.statistic), df), rel=1e-9)
        q = stats.t.ppf(0.975, df) * stats.sem(dt)
        assert c.ci == pytest.approx([max(dt.mean() - q, -1), min(dt.mean() + q, 1)], rel=1e-9)
        # secondary McNemar statistics (statsmodels)
        ex = mcnemar([[a, b], [cc, d]], exact=True)
        chi = mcnemar([[a, b], [cc, d]], exact=False, correction=True)
        plain = mcnemar([[a, b], [cc, d]], exact=False, correction=False)
        assert c.binary.exact_pvalue == pytest.approx(ex.pvalue, rel=1e-9)
        if b != cc:
            assert c.binary.chi2_statistic == pytest.approx(chi.statistic, rel=1e-9)
            assert c.binary.chi2_pvalue == pytest.approx(chi.pvalue, rel=1e-9)
        assert c.binary.mcnemar_pvalue == pytest.approx(ex.pvalue if b + cc < 25 else plain.pvalue, rel=1e-9)
        assert c.binary.odds_ratio == pytest.approx(b / cc)
        raw.append((c, c.pvalue))
    adj = multipletests([p for _, p in raw], method="holm")[1]
    for (c, _), pa in zip(raw, adj, strict=True):
        assert c.pvalue_adjusted == pytest.approx(pa, rel=1e-9) and c.family_size == 3


def test_continuous_comparison_matches_scipy(runs, biased):
    c = next(c for c in biased.comparisons if c.measure == "words" and c.group_a == "magreb")
    x, y, tpl = _pairs(runs["biased"], "words", "magreb", "espana")
    d = x - y
    dt, _ = _template_differences(runs["biased"], "words", "magreb", "espana")
    ref = stats.ttest_1samp(dt, 0.0)
    assert c.test.startswith("crossed t")
    assert c.pvalue == pytest.approx(ref.pvalue, rel=1e-9) and c.statistic == pytest.approx(ref.statistic)
    assert c.ci == pytest.approx(list(ref.confidence_interval(0.95)), rel=1e-9)
    # secondary: Wilcoxon (Pratt), Hodges-Lehmann, rank-biserial, paired t (scipy)
    w = stats.wilcoxon(x, y, zero_method="pratt")
    assert c.continuous.wilcoxon_pvalue == pytest.approx(w.pvalue, rel=1e-9)
    assert c.continuous.wilcoxon_statistic == pytest.approx(w.statistic)
    walsh = (d[:, None] + d[None, :]) / 2
    assert c.continuous.hodges_lehmann == pytest.approx(np.median(walsh[np.triu_indices(d.size)]))
    ranks = stats.rankdata(np.abs(d))
    rp, rm = ranks[d > 0].sum(), ranks[d < 0].sum()
    assert c.continuous.rank_biserial == pytest.approx((rp - rm) / (rp + rm))
    t = stats.ttest_rel(x, y)
    assert c.continuous.paired_t.pvalue == pytest.approx(t.pvalue, rel=1e-9)
    assert c.continuous.paired_t.ci == pytest.approx(list(t.confidence_interval(0.95)), rel=1e-9)
    assert c.estimate == pytest.approx(d.mean()) and c.estimate < -5  # words_factor 0.8 planted
    assert not c.primary and c.pvalue_adjusted == c.pvalue and c.correction.startswith("none")


def test_omnibus_matches_statsmodels_and_scipy(runs, biased):
    import pandas as pd
    from statsmodels.stats.anova import AnovaRM

    con = sqlite3.connect(runs["biased"] / "store.sqlite")
    cases = {cid: json.loads(d) for cid, d in con.execute("SELECT case_id, data FROM cases")}
    for measure in ("refund", "words"):
        vals = {cid: float(json.loads(v)) for cid, v in con.execute(
            "SELECT case_id, value FROM measurements WHERE measure=? AND status='ok'", (measure,))}
        by_set = defaultdict(dict)
        for cid, c in cases.items():
            by_set[c["matched_set"]][c["groups"]["origen"]] = vals[cid]
        om = next(o for o in biased.omnibus if o.measure == measure)
        table = np.array([[by_set[ms][g] for g in om.groups] for ms in sorted(by_set)])
        # secondary: Cochran's Q / Friedman on the matched sets
        if measure == "refund":
            ref = cochrans_q(table)
            assert om.secondary_test == "Cochran's Q"
        else:
            ref = stats.friedmanchisquare(*table.T)
            assert om.secondary_test == "Friedman"
        assert om.secondary_statistic == pytest.approx(ref.statistic, rel=1e-9)
        assert om.secondary_pvalue == pytest.approx(ref.pvalue, rel=1e-6)
        assert om.n_sets == 120
        # the verdict's test, names fixed: repeated-measures ANOVA of template x group means (statsmodels)
        df = pd.DataFrame([(c["template"], c["groups"]["origen"], vals[cid]) for cid, c in cases.items()],
                          columns=["t", "g", "v"]).groupby(["t", "g"]).v.mean().reset_index()
        rm = AnovaRM(df, "v", "t", within=["g"]).fit().anova_table
        assert om.names == "fixed" and om.test.startswith("F")
        assert om.statistic == pytest.approx(rm["F Value"].iloc[0], rel=1e-9)
        assert om.pvalue == pytest.approx(rm["Pr > F"].iloc[0], rel=1e-6)
        assert (om.df, om.df_denominator) == (rm["Num DF"].iloc[0], rm["Den DF"].iloc[0])


def test_verdicts_follow_the_rule(biased):
    magreb = next(c for c in biased.comparisons if c.measure == "refund" and c.group_a == "magreb")
    assert magreb.verdict == "fail" and magreb.ci[1] < -0.1 and magreb.pvalue_adjusted < 0.05
    for c in biased.comparisons:
        if c.verdict == "pass":
            assert -c.margin < c.equivalence_ci[0] and c.equivalence_ci[1] < c.margin
        if c.margin is None:
            assert c.verdict != "pass"


def test_per_variant_and_evidence(runs, biased):
    import pandas as pd
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    c = next(c for c in biased.comparisons if c.measure == "refund" and c.group_a == "magreb")
    assert {v.variant for v in c.per_variant} == {"Fátima / Lucía", "Aicha / María", "Khadija / Carmen"}
    assert sum(v.n for v in c.per_variant) == c.n_pairs
    assert sum(v.b for v in c.per_variant) == c.binary.b
    # names within groups against the template x name interaction, on cell means (statsmodels OLS ANOVA)
    _, cell = _template_differences(runs["biased"], "refund", "magreb", "espana")
    # within each group: two-way ANOVA template + name; pool the name and residual sums of squares
    tabs = [anova_lm(smf.ols("v ~ C(t) + C(n)", data=pd.DataFrame(cell[cell.g == g])).fit()) for g in ("magreb",
                                                                                                       "espana")]
    ss_n, df_n = sum(t.loc["C(n)", "sum_sq"] for t in tabs), sum(t.loc["C(n)", "df"] for t in tabs)
    ss_r, df_r = sum(t.loc["Residual", "sum_sq"] for t in tabs), sum(t.loc["Residual", "df"] for t in tabs)
    assert c.heterogeneity.df == df_n == 4 and c.heterogeneity.df_denominator == pytest.approx(df_r)
    assert c.heterogeneity.statistic == pytest.approx((ss_n / df_n) / (ss_r / df_r), rel=1e-9)
    assert c.heterogeneity.pvalue == pytest.approx(stats.f.sf((ss_n / df_n) / (ss_r / df_r), df_n, df_r), rel=1e-6)
    assert c.evidence and all(e.value_a != e.value_b for e in c.evidence)


def test_names_random_with_three_names_is_insufficient_design(tmp_path):
    from analysis_runs import battery_dict, make_run

    run = make_run(tmp_path, "rnd", battery_dict(bias={"magreb": {"refund": 0.3}}, templates=10, names=None))
    res = analyze_run(run)
    for c in res.comparisons:
        assert c.names == "random" and c.verdict == "insufficient design" and c.pvalue_adjusted is None
        assert "3 name(s) in group" in c.design_reason and "names: fixed" in c.design_reason
        assert "other names of these groups" in c.estimand
