"""The pass rule's interval: the hull of the crossed t interval and Hall's (1992) skewness-corrected t.

References computed here with scipy (``ttest_1samp``, ``skew``, ``brentq`` on Hall's transformation),
never with fairpair.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from fairpair.analysis._paired import PairData, analyze_pairs, finish

IDENT = dict(id="c", target="t", measure="m", attribute="a", design="d", group_a="A", group_b="B", primary=True)


def _pairs(d_t, names=2, reps=2, seed=0):
    """Continuous answers: template t adds d_t[t] to group A; names and repetitions add nothing."""
    rng = np.random.default_rng(seed)
    t = d_t.size
    tt, kk, _ = np.meshgrid(np.arange(t), np.arange(names), np.arange(reps), indexing="ij")
    base = rng.normal(0, 1, t)[tt]
    x = (base + d_t[tt]).reshape(-1)
    y = base.reshape(-1).astype(float)
    k = kk.reshape(-1).astype(np.intp)
    return PairData(x, y, tt.reshape(-1).astype(np.intp), k, ("v",) * names, name_a=k, name_b=k)


def _reference(d, alpha):
    n = d.size
    se = d.std(ddof=1) / np.sqrt(n)
    lam = stats.skew(d, bias=False) / np.sqrt(n)
    g = lambda x: x + lam * (x * x / 3 + 1 / 6) + lam ** 2 * x ** 3 / 27  # noqa: E731
    q = stats.t.ppf(1 - alpha, n - 1)
    hall = (d.mean() - se * optimize.brentq(lambda x: g(x) - q, -100, 100, xtol=1e-14),
            d.mean() - se * optimize.brentq(lambda x: g(x) + q, -100, 100, xtol=1e-14))
    t_ci = stats.ttest_1samp(d, 0.0).confidence_interval(1 - 2 * alpha)
    return (min(t_ci.low, hall[0]), max(t_ci.high, hall[1])), (t_ci.low, t_ci.high)


def _analyse(pd, margin):
    pa = analyze_pairs(pd, scale="continuous", alpha=0.05, confidence_level=0.95, exact_threshold=25,
                       n_resamples=0, seed=0, heterogeneity=False, names="fixed", secondary=False)
    return pa, finish(pa, pvalue_adjusted=pa.pvalue, correction="none", family_size=1, margin=margin, alpha=0.05,
                      pvalue_margin_adjusted=pa.pvalue_beyond(margin), **IDENT)


def test_equivalence_interval_is_the_hull_and_a_skewed_pass_becomes_inconclusive():
    rng = np.random.default_rng(4)
    d = 0.05 * rng.exponential(1.0, 20)  # right-skewed template differences
    d = d - d.mean() + 0.02
    hull, t_ci = _reference(d, 0.05)
    assert hull[1] > t_ci[1]  # right skew: the t's lower tail is heavy, the upper limit moves out
    pd = _pairs(d)
    margin = (t_ci[1] + hull[1]) / 2  # the symmetric interval would pass, the hull does not
    pa, res = _analyse(pd, margin)
    assert tuple(pa.ci_equivalence) == pytest.approx(hull, rel=1e-9)
    assert tuple(res.equivalence_ci) == pytest.approx(hull, rel=1e-9)
    assert res.verdict == "inconclusive"
    _, wide = _analyse(pd, hull[1] * 1.01)
    # no template stands out at the guard's level (the generalized ESD's p-value is above it)
    assert not wide.scenarios.heterogeneous
    assert wide.verdict == "pass" and wide.equivalence_ci[1] < hull[1] * 1.01


def test_fail_interval_and_pvalue_keep_the_symmetric_t():
    rng = np.random.default_rng(5)
    d = 0.05 * rng.exponential(1.0, 20)
    pa, res = _analyse(_pairs(d), None)
    ref = stats.ttest_1samp(d, 0.0)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
    ci = ref.confidence_interval(0.95)
    assert tuple(res.ci) == pytest.approx((ci.low, ci.high), rel=1e-9)
