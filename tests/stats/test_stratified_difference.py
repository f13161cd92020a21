"""The templates-fixed estimand of a paired per-set difference (one posting, or these postings):
checked against scipy's one-sample t and statsmodels' OLS with HC2 standard errors, and through the
ranking analysis, where one posting now gives verdicts instead of `insufficient design`."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from fairpair.analysis import analyze_ranking
from fairpair.analysis._simranking import RankingScenario, simulate_ranking_frame
from fairpair.stats import stratified_difference


def test_one_template_is_the_one_sample_t_test():
    rng = np.random.default_rng(7)
    x, y = rng.integers(0, 2, 300).astype(float), rng.integers(0, 2, 300).astype(float)
    x[:5] = np.nan
    r = stratified_difference(x, y, np.zeros(300))
    keep = ~np.isnan(x)
    ref = stats.ttest_1samp(x[keep] - y[keep], 0.0)
    assert r.estimate == pytest.approx(np.mean(x[keep] - y[keep]))
    assert r.statistic == pytest.approx(ref.statistic)
    assert r.pvalue == pytest.approx(ref.pvalue)
    assert r.df == pytest.approx(ref.df)
    lo, hi = ref.confidence_interval(0.95)
    ci = r.confidence_interval(0.95)
    assert (ci.low, ci.high) == (pytest.approx(lo), pytest.approx(hi))
    assert r.n_templates == 1 and r.n_values == 295


def test_several_templates_match_ols_dummies_with_hc2():
    """The average of the per-template means, and its standard error: with template dummies only, HC2's
    variance of each coefficient is s_t^2 / n_t, so the contrast mean(beta) has this estimator's se."""
    rng = np.random.default_rng(11)
    t = np.repeat(np.arange(4), [30, 50, 80, 40])
    d = rng.normal(np.array([0.1, -0.2, 0.0, 0.3])[t], np.array([0.5, 1.0, 0.7, 1.5])[t])
    r = stratified_difference(d, np.zeros_like(d), t)
    X = np.eye(4)[t]
    res = sm.OLS(d, X).fit(cov_type="HC2")
    tt = res.t_test(np.full((1, 4), 0.25))
    assert r.estimate == pytest.approx(float(tt.effect[0]))
    assert r.se == pytest.approx(float(tt.sd[0, 0]))
    # Welch-Satterthwaite df by hand from the group variances
    w = np.array([d[t == k].var(ddof=1) / (t == k).sum() / 16 for k in range(4)])
    n = np.bincount(t)
    assert r.df == pytest.approx(w.sum() ** 2 / np.sum(w**2 / (n - 1)))


def test_one_posting_gives_ranking_verdicts_with_templates_fixed():
    sc = RankingScenario(k=4, templates=1, names=1, reps=400, group_worth=(1.0, 0.0, 0.0, 0.0),
                         sd_name=0.0, sd_template_group=0.0, sd_template_name=0.0)
    frame = simulate_ranking_frame(sc, np.random.default_rng(5))
    frame["variant"] = frame["case_id"]  # every request its own name set, as in a published hiring audit
    random_ = analyze_ranking(frame)
    fixed = analyze_ranking(frame, templates="fixed")
    assert {c.verdict for c in random_.pairs} == {"insufficient design"}
    verdicts = {c.id: c.verdict for c in fixed.pairs}
    assert "insufficient design" not in verdicts.values()
    assert verdicts["top_pick:g1-vs-g2"] == "fail"  # the planted preference for g1
    c = next(c for c in fixed.pairs if c.id == "top_pick:g1-vs-g2")
    assert c.templates == "fixed" and "templates fixed" in c.test
