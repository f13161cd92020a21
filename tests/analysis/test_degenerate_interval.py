"""Tiny or degenerate data never establish equivalence: they get `insufficient design` (with the reason)."""

import numpy as np
import pytest
from scipy import stats
from tests.stats.kurtosis_reference import kurtosis_df_reference

from fairpair.analysis._paired import PairData, analyze_pairs, finish


def _verdict(x, y, clusters, names="fixed", name_codes=None):
    n = len(x)
    codes = np.zeros(n, dtype=int) if name_codes is None else np.asarray(name_codes)
    pd = PairData(x=np.asarray(x, float), y=np.asarray(y, float), clusters=np.asarray(clusters),
                  variants=codes, name_a=codes, name_b=codes)
    pa = analyze_pairs(pd, scale="binary", alpha=0.05, confidence_level=0.95, exact_threshold=25,
                       n_resamples=0, seed=0, names=names)
    res = finish(pa, pvalue_adjusted=pa.pvalue, correction="holm", family_size=1, margin=0.03, alpha=0.05,
                 id="c", target="t", measure="m", attribute="a", design="d", group_a="g1", group_b="g2",
                 primary=True)
    return pa, res


def test_nine_identical_pairs_are_insufficient_design_not_pass():
    pa, res = _verdict([1] * 9, [1] * 9, [0, 0, 0, 1, 1, 1, 2, 2, 2])
    assert res.verdict == "insufficient design"
    assert "3 template(s)" in res.design_reason and "9 complete matched pairs" in res.design_reason
    assert pa.ci_alpha is None and res.pvalue is None


def test_no_variance_between_templates_is_insufficient_design():
    # 10 templates, every pair concordant but the measure not constant: zero standard error
    x = np.tile([1.0, 0.0], 10)
    pa, res = _verdict(x, x.copy(), np.repeat(np.arange(10), 2))
    assert res.verdict == "insufficient design" and "no variance" in res.design_reason


def test_many_pairs_get_the_template_t_interval():
    rng = np.random.default_rng(1)
    x = (rng.random(600) < 0.7).astype(float)
    y = np.where(rng.random(600) < 0.8, x, 1 - x)
    cl = np.repeat(np.arange(20), 30)
    pa, res = _verdict(x, y, cl)
    dt = np.array([x[cl == t].mean() - y[cl == t].mean() for t in range(20)])
    # yes/no: the one-sample t on the template differences with the df of their kurtosis (bounded measures)
    df = kurtosis_df_reference(dt)
    ref = stats.ttest_1samp(dt, 0.0)
    q = stats.t.ppf(0.975, df) * stats.sem(dt)
    assert res.verdict in ("pass", "inconclusive", "fail") and res.design_reason is None
    assert np.isclose(res.df, df) and np.allclose(res.ci, [dt.mean() - q, dt.mean() + q])
    assert np.isclose(res.pvalue, 2 * stats.t.sf(abs(ref.statistic), df))


def test_every_pair_disagreeing_the_same_way_gets_an_interval_not_a_point():
    """48 pairs in 8 templates, every one of them A "no", B "yes": the crossed t has no variance; the
    interval inverts an exact test over templates: P(all 8 templates at -1) <= ((1 - delta) / 2)^8, so
    delta < 1 - 2 * 0.025^(1/8) = -0.2612 (it was the zero-width -1..-1)."""
    import math

    from fairpair.analysis._paired import sign_flip_interval

    pa, res = _verdict([0] * 48, [1] * 48, np.repeat(np.arange(8), 6))
    upper = 1 - 2 * 0.025 ** (1 / 8)
    assert upper == pytest.approx(-0.26116, abs=1e-5)
    assert res.estimate == -1 and res.ci == [-1.0, pytest.approx(upper)]
    assert res.pvalue == 2 ** -7 and res.verdict == "fail"  # the exact sign-flip test over 8 templates
    # 5 templates: p = 2^-4 = 0.0625, no fail; the interval reaches past zero
    pa, res = _verdict([0] * 30, [1] * 30, np.repeat(np.arange(5), 6))
    assert res.ci == [-1.0, pytest.approx(1 - 2 * 0.025 ** (1 / 5))] and res.ci[1] > 0
    assert res.verdict == "inconclusive"
    # at the other bound, mirrored; strictly inside the bounds, the sign-flip test's own inversion
    assert sign_flip_interval(1.0, 8, 0.05, (-1.0, 1.0)) == (pytest.approx(-upper), 1.0)
    assert sign_flip_interval(3.0, 8, 0.05, None) == (3.0, 3.0)
    assert sign_flip_interval(3.0, 5, 0.05, None) == (-math.inf, math.inf)
