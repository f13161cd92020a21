"""Wilcoxon signed-rank (with Hodges-Lehmann) and paired t against scipy."""

import numpy as np
import pytest
from scipy import stats

from fairpair.stats import PairedTResult, WilcoxonResult, paired_t, wilcoxon
from fairpair.stats._walsh import signed_rank_cdf, walsh_order_statistics


def _data(seed):
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(8, 400))
    x = rng.normal(0, 1, n)
    shift = rng.normal(0, 0.3)
    y = x - shift + rng.standard_t(3, n) * rng.uniform(0.2, 2)
    if seed % 3 == 0:  # LLM-like scores: heavy ties and exact zeros
        x, y = np.round(x * 2), np.round(y * 2)
    return x, y


SEEDS = list(range(24))


def _brute_hl(d):
    iu = np.triu_indices(d.size)
    return np.median((d[iu[0]] + d[iu[1]]) / 2)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("zero_method", ["pratt", "wilcox", "zsplit"])
def test_wilcoxon_matches_scipy(seed, zero_method):
    x, y = _data(seed)
    d = x - y
    if zero_method == "wilcox" and np.all(d == 0):
        pytest.skip("degenerate")
    res = wilcoxon(x, y, zero_method=zero_method)
    ref = stats.wilcoxon(d, zero_method=zero_method)
    assert isinstance(res, WilcoxonResult)
    assert res.statistic == pytest.approx(ref.statistic, abs=1e-10)
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-10, rel=1e-10)
    assert res.n == d.size and res.n_zero == np.sum(d == 0)
    # r_plus is scipy's one-sided statistic
    greater = stats.wilcoxon(d, zero_method=zero_method, alternative="greater")
    assert res.r_plus == pytest.approx(greater.statistic, abs=1e-10)
    assert min(res.r_plus, res.r_minus) == pytest.approx(ref.statistic, abs=1e-10)
    assert res.rank_biserial == pytest.approx((res.r_plus - res.r_minus) / (res.r_plus + res.r_minus), abs=1e-12)
    assert res.median_difference == np.median(d)
    assert res.hodges_lehmann == pytest.approx(_brute_hl(d), abs=1e-12)


@pytest.mark.parametrize("alternative", ["less", "greater"])
def test_wilcoxon_one_sided(alternative):
    x, y = _data(5)
    res = wilcoxon(x, y, alternative=alternative)
    ref = stats.wilcoxon(x - y, zero_method="pratt", alternative=alternative)
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-12)
    assert res.statistic == pytest.approx(ref.statistic, abs=1e-12)


def test_rank_biserial_kerby_example():
    # all differences positive -> r = 1; mirrored -> r = -1
    x = np.array([3.0, 5, 7, 9])
    assert wilcoxon(x, x - np.array([1, 2, 3, 4])).rank_biserial == 1.0
    assert wilcoxon(x - np.array([1, 2, 3, 4]), x).rank_biserial == -1.0
    # hand-computed: d = [1, -2, 3, 4]; ranks 1,2,3,4 -> (8 - 2) / 10
    r = wilcoxon([1.0, 0, 3, 4], [0.0, 2, 0, 0])
    assert (r.r_plus, r.r_minus) == (8.0, 2.0)
    assert r.rank_biserial == pytest.approx(0.6)


def test_all_differences_zero():
    x = np.array([1.0, 2, 3, 4, 5])
    res = wilcoxon(x, x.copy())
    assert res.pvalue == 1.0 and res.statistic == 0.0
    assert res.note == "all differences are zero"
    assert res.n_zero == 5 and res.hodges_lehmann == 0.0 and res.rank_biserial == 0.0
    t = paired_t(x, x.copy())
    assert t.pvalue == 1.0 and t.note == "all differences are zero"


def test_group_all_missing():
    res = wilcoxon([np.nan, np.nan], [1.0, 2.0])
    assert res.n == 0 and res.n_missing == 2 and np.isnan(res.pvalue) and res.note == "no complete pairs"
    t = paired_t([np.nan, np.nan], [1.0, 2.0])
    assert np.isnan(t.pvalue) and t.n_missing == 2


def test_missing_dropped():
    res = wilcoxon([1.0, 2, None, 4, 5, 6, 7], [0.0, 1, 2, np.nan, 3, 2, 1])
    assert res.n == 5 and res.n_missing == 2
    ref = stats.wilcoxon(np.array([1.0, 2, 5, 6, 7]) - np.array([0.0, 1, 3, 2, 1]), zero_method="pratt")
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-12)


@pytest.mark.parametrize("n", [1, 2, 7, 50, 999, 1501, 2400])
def test_walsh_order_statistics_match_brute_force(n):
    rng = np.random.default_rng(n)
    d = np.round(rng.standard_t(2, n), 2)  # ties included
    iu = np.triu_indices(n)
    w = np.sort((d[iu[0]] + d[iu[1]]) / 2)
    ranks = np.unique(np.clip([1, 2, w.size // 4, w.size // 2, w.size // 2 + 1, w.size - 1, w.size], 1, w.size))
    np.testing.assert_allclose(walsh_order_statistics(d, ranks), w[ranks - 1], rtol=0, atol=1e-12)


def test_signed_rank_cdf_matches_scipy_exact():
    # P(T+ <= t) equals scipy's exact one-sided p-value for an untied sample with that T+.
    n = 12
    cdf = signed_rank_cdf(n)
    ranks = np.arange(1, n + 1, dtype=float)
    for signs in [np.array([1] * 3 + [-1] * 9), np.array([1, -1] * 6), np.array([-1] * 11 + [1])]:
        d = ranks * signs
        t_plus = int(ranks[signs > 0].sum())
        ref = stats.wilcoxon(d, alternative="less", method="exact").pvalue
        assert cdf[t_plus] == pytest.approx(ref, abs=1e-14)
    assert cdf[-1] == pytest.approx(1.0)


def test_hodges_lehmann_ci_exact_small_sample():
    # n = 10, no ties: critical k = 9 at 95% (P(T+ <= 8) = 0.0244 <= 0.025 < P(T+ <= 9)).
    d = np.array([-1.3, 0.4, 1.1, 2.5, 3.3, 4.0, 4.7, 5.2, 6.9, 8.8])
    cdf = signed_rank_cdf(10)
    assert cdf[8] <= 0.025 < cdf[9]
    res = wilcoxon(d, np.zeros(10))
    ci = res.confidence_interval(0.95)
    iu = np.triu_indices(10)
    w = np.sort((d[iu[0]] + d[iu[1]]) / 2)
    assert (ci.low, ci.high) == (w[8], w[55 - 9])
    assert ci.low <= res.hodges_lehmann <= ci.high


def test_hodges_lehmann_ci_large_sample_normal_approximation():
    rng = np.random.default_rng(7)
    d = rng.normal(0.2, 1, 3000)
    res = wilcoxon(d, np.zeros_like(d))
    ci = res.confidence_interval(0.95)
    n, total = 3000, 3000 * 3001 // 2
    k = int(np.round(total / 2 - stats.norm.ppf(0.975) * np.sqrt(n * (n + 1) * (2 * n + 1) / 24)))
    np.testing.assert_allclose([ci.low, ci.high], walsh_order_statistics(d, np.array([k, total + 1 - k])))
    # close to the t interval for normal data
    t_ci = paired_t(d, np.zeros_like(d)).confidence_interval()
    assert abs(ci.low - t_ci.low) < 0.02 and abs(ci.high - t_ci.high) < 0.02


def test_hodges_lehmann_ci_not_attainable():
    ci = wilcoxon([1.0, 2.0, 3.0], [0.0, 0.0, 0.0]).confidence_interval(0.95)
    assert ci.method == "walsh (level not attainable)"
    assert (ci.low, ci.high) == (1.0, 3.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_paired_t_matches_scipy(seed):
    x, y = _data(seed)
    res = paired_t(x, y)
    ref = stats.ttest_rel(x, y)
    assert isinstance(res, PairedTResult)
    assert res.statistic == pytest.approx(ref.statistic, abs=1e-10, rel=1e-10)
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-10, rel=1e-10)
    assert res.df == ref.df
    for level in (0.9, 0.95, 0.99):
        ci, rci = res.confidence_interval(level), ref.confidence_interval(level)
        assert ci.low == pytest.approx(rci.low, abs=1e-10)
        assert ci.high == pytest.approx(rci.high, abs=1e-10)


@pytest.mark.parametrize("alternative", ["less", "greater"])
def test_paired_t_one_sided_ci(alternative):
    x, y = _data(4)
    res, ref = paired_t(x, y, alternative=alternative), stats.ttest_rel(x, y, alternative=alternative)
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-12)
    assert tuple(res.confidence_interval(0.9)) == pytest.approx(tuple(ref.confidence_interval(0.9)), abs=1e-10)


def test_paired_t_constant_nonzero_difference():
    res = paired_t([2.0, 3, 4], [1.0, 2, 3])
    assert res.statistic == np.inf and res.pvalue == 0.0
    assert res.note == "differences have zero variance"


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: wilcoxon([1.0], [1.0], zero_method="drop"), "'pratt', 'wilcox', 'zsplit'"),
        (lambda: wilcoxon([1.0], [1.0], alternative="bigger"), "'two-sided', 'less', 'greater'"),
        (lambda: wilcoxon([1.0, 2.0], [1.0]), "same length"),
        (lambda: paired_t([1.0, 2.0], [1.0, 3.0], alternative="x"), "alternative must be one of"),
        (lambda: wilcoxon(["a"], ["b"]), "numbers"),
    ],
)
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("seed", range(12))
def test_rank_biserial_kerby_matches_scipy_rank_sums(seed):
    # Kerby (2014) / pingouin: drop the zeros, rank the rest; scipy's one-sided wilcoxon
    # statistic (zero_method="wilcox") is r_plus over those ranks, and r_plus + r_minus = m(m+1)/2.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 60))
    x = rng.integers(1, 6, n).astype(float)  # 1-5 judge scores: many zero differences and ties
    y = np.where(rng.random(n) < 0.5, x, rng.integers(1, 6, n)).astype(float)
    d = x - y
    m = int(np.count_nonzero(d))
    res = wilcoxon(x, y)  # default Pratt ranks
    if m == 0:
        assert res.rank_biserial_kerby == 0.0
        return
    t_plus = stats.wilcoxon(d, zero_method="wilcox", alternative="greater").statistic
    ref = 2.0 * t_plus / (m * (m + 1) / 2.0) - 1.0
    assert res.rank_biserial_kerby == pytest.approx(ref, abs=1e-12)
    assert wilcoxon(x, y, zero_method="wilcox").rank_biserial == pytest.approx(ref, abs=1e-12)


def test_rank_biserial_pratt_convention_differs_from_kerby_with_zeros():
    # 6 zeros, then +1, +1, +1, -2: Kerby ranks 2, 2, 2, 4 -> (6 - 4) / 10 = 0.2; Pratt ranks
    # 8, 8, 8, 10 (zeros take 1..6) -> (24 - 10) / 34 = 0.41176.
    x = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1, 0], dtype=float)
    y = np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 2], dtype=float)
    res = wilcoxon(x, y)
    assert res.rank_biserial_kerby == pytest.approx(0.2, abs=1e-12)
    assert res.rank_biserial == pytest.approx(14 / 34, abs=1e-12)
