"""McNemar's test against statsmodels, scipy and the published worked example."""

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from fairpair.stats import ConfidenceInterval, McNemarResult, mcnemar, mcnemar_table


def _random_pairs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 3000))
    pa = rng.uniform(0.05, 0.95)
    flip = rng.uniform(0.0, 0.3)
    x = rng.random(n) < pa
    y = np.where(rng.random(n) < flip, ~x, x)
    y = np.where(rng.random(n) < rng.uniform(0, 0.1), rng.random(n) < 0.5, y)
    return x, y


SEEDS = list(range(24))


def test_published_example_statsmodels_docs():
    # Table [[402, 41], [18, 139]]: chi2 = 8.2034 (corrected), p = 0.00418; exact p = 0.00379.
    res = mcnemar_table([[402, 41], [18, 139]], correction=True)
    assert isinstance(res, McNemarResult)
    assert res.method == "chi-square with continuity correction"
    assert res.statistic == pytest.approx(8.2034, abs=5e-5)
    assert res.pvalue == pytest.approx(0.00418, abs=5e-6)
    assert (res.b, res.c, res.n) == (41, 18, 600)
    assert res.rate_a == pytest.approx(443 / 600) and round(100 * res.rate_a, 1) == 73.8
    assert res.rate_b == pytest.approx(0.70)
    assert res.risk_difference == pytest.approx(23 / 600)
    assert res.odds_ratio == pytest.approx(41 / 18)
    exact = mcnemar_table([[402, 41], [18, 139]], exact=True)
    assert exact.pvalue == pytest.approx(0.00379, abs=5e-6)
    assert exact.statistic == 18
    np.testing.assert_array_equal(res.table, [[402, 41], [18, 139]])


@pytest.mark.parametrize("seed", SEEDS)
def test_matches_statsmodels(seed):
    x, y = _random_pairs(seed)
    res_c = mcnemar(x, y, exact=False, correction=True)
    table = res_c.table
    b, c = table[0, 1], table[1, 0]
    assert table.sum() == x.size
    assert b == np.sum(x & ~y) and c == np.sum(~x & y)
    assert res_c.rate_a == pytest.approx(x.mean(), abs=1e-12)
    assert res_c.rate_b == pytest.approx(y.mean(), abs=1e-12)
    for exact, corr in [(False, True), (False, False), (True, False)]:
        ours = mcnemar(x, y, exact=exact, correction=corr)
        ref = sm_mcnemar(table, exact=exact, correction=corr)
        if not exact and corr and b == c:
            assert ours.statistic == 0.0 and ours.pvalue == 1.0
            continue
        assert ours.statistic == pytest.approx(ref.statistic, abs=1e-10, rel=1e-10)
        assert ours.pvalue == pytest.approx(ref.pvalue, abs=1e-10, rel=1e-10)


@pytest.mark.parametrize("seed", SEEDS[:8])
def test_auto_exact_threshold(seed):
    x, y = _random_pairs(seed)
    res = mcnemar(x, y, exact_threshold=10**9)
    assert res.exact and res.method == "exact binomial"
    res = mcnemar(x, y, exact_threshold=0)
    assert not res.exact and not res.correction


def test_exact_chosen_for_few_discordant_pairs():
    res = mcnemar_table([[50, 7], [2, 41]])  # b + c = 9 < 25
    assert res.exact
    assert res.pvalue == pytest.approx(stats.binomtest(2, 9, 0.5).pvalue, abs=1e-12)
    res = mcnemar_table([[50, 17], [12, 41]])  # b + c = 29 >= 25
    assert not res.exact


def test_no_discordant_pairs():
    res = mcnemar([1, 0, 1, 1], [1, 0, 1, 1])
    assert res.pvalue == 1.0 and res.statistic == 0.0
    assert res.note == "no discordant pairs"
    assert np.isnan(res.odds_ratio)
    assert res.risk_difference == 0.0
    ci = res.confidence_interval()
    assert ci.low < 0 < ci.high  # Newcombe stays informative with b = c = 0


def test_missing_pairs_dropped_and_counted():
    x = [1, 0, None, 1, np.nan, 1, 0]
    y = [0, 0, 1, np.nan, 1, 1, 1]
    res = mcnemar(x, y)
    assert res.n == 4 and res.n_missing == 3
    np.testing.assert_array_equal(res.table, [[1, 1], [1, 1]])


def test_group_all_missing():
    res = mcnemar([None, None, None], [1, 0, 1])
    assert res.n == 0 and res.n_missing == 3
    assert np.isnan(res.pvalue) and np.isnan(res.statistic)
    assert res.note == "no complete pairs"
    assert np.isnan(res.confidence_interval().low)


def test_pandas_nullable_input():
    pd = pytest.importorskip("pandas")
    x = pd.array([True, False, pd.NA, True], dtype="boolean")
    y = pd.Series([False, False, True, True])
    res = mcnemar(x, y)
    assert res.n == 3 and res.n_missing == 1 and res.b == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_newcombe_against_wilson_from_statsmodels(seed):
    x, y = _random_pairs(seed)
    res = mcnemar(x, y)
    (a, b), (c, d) = res.table
    n = res.n
    for level in (0.9, 0.95):
        l1, u1 = proportion_confint(a + b, n, alpha=1 - level, method="wilson")
        l2, u2 = proportion_confint(a + c, n, alpha=1 - level, method="wilson")
        p1, p2 = (a + b) / n, (a + c) / n
        den = (a + b) * (c + d) * (a + c) * (b + d)
        cross = float(a) * d - float(b) * c  # Newcombe's continuity-corrected phi (method 10)
        cross = cross - n / 2 if cross > n / 2 else (0.0 if cross >= 0 else cross)
        phi = cross / np.sqrt(float(den)) if den else 0.0
        low = p1 - p2 - np.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
        high = p1 - p2 + np.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
        ci = res.confidence_interval(level)
        assert isinstance(ci, ConfidenceInterval) and ci.method == "newcombe"
        assert ci.low == pytest.approx(low, abs=1e-10)
        assert ci.high == pytest.approx(high, abs=1e-10)
        assert ci.low <= res.risk_difference <= ci.high


def test_newcombe_reduces_to_independent_newcombe_when_phi_zero():
    # a*d == b*c gives phi = 0: the paired interval is Newcombe's independent hybrid score interval.
    res = mcnemar_table([[20, 10], [40, 20]])
    ref = confint_proportions_2indep(30, 90, 60, 90, method="newcomb", compare="diff", alpha=0.05)
    ci = res.confidence_interval()
    assert ci.low == pytest.approx(ref[0], abs=1e-10)
    assert ci.high == pytest.approx(ref[1], abs=1e-10)


def test_wald_interval():
    res = mcnemar_table([[402, 41], [18, 139]])
    ci = res.confidence_interval(0.95, method="wald")
    se = np.sqrt(41 + 18 - 23**2 / 600) / 600
    assert ci.low == pytest.approx(23 / 600 - stats.norm.ppf(0.975) * se, abs=1e-12)
    assert ci.high == pytest.approx(23 / 600 + stats.norm.ppf(0.975) * se, abs=1e-12)


@pytest.mark.parametrize("b,c", [(41, 18), (5, 0), (0, 3), (12, 12), (1, 30)])
def test_odds_ratio_exact_ci_matches_clopper_pearson(b, c):
    res = mcnemar_table([[10, b], [c, 10]])
    ci = res.odds_ratio_ci(0.95)
    pl, ph = stats.binomtest(b, b + c).proportion_ci(0.95, method="exact")
    assert ci.low == pytest.approx(pl / (1 - pl), abs=1e-10)
    if c == 0:
        assert ci.high == np.inf
    else:
        assert ci.high == pytest.approx(ph / (1 - ph), rel=1e-10)


def test_odds_ratio_wald_ci():
    ci = mcnemar_table([[402, 41], [18, 139]]).odds_ratio_ci(method="wald")
    half = stats.norm.ppf(0.975) * np.sqrt(1 / 41 + 1 / 18)
    assert ci.low == pytest.approx(41 / 18 * np.exp(-half), rel=1e-12)
    assert ci.high == pytest.approx(41 / 18 * np.exp(half), rel=1e-12)


def test_result_is_frozen():
    res = mcnemar_table([[1, 2], [3, 4]])
    with pytest.raises(AttributeError):
        res.pvalue = 0.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: mcnemar([1, 0], [1]), "same length"),
        (lambda: mcnemar([1, 2], [1, 0]), "binary"),
        (lambda: mcnemar([1, 0], [1, 0], exact="yes"), "exact must be one of"),
        (lambda: mcnemar([1, 0], [1, 0], exact_threshold=-1), "exact_threshold"),
        (lambda: mcnemar_table([[1, 2, 3], [4, 5, 6]]), "shape"),
        (lambda: mcnemar_table([[1, -2], [3, 4]]), "non-negative"),
        (lambda: mcnemar_table([[1, 2], [3, 4]]).confidence_interval(method="tango"), "'newcombe', 'wald'"),
        (lambda: mcnemar_table([[1, 2], [3, 4]]).confidence_interval(1.5), r"\(0, 1\)"),
    ],
)
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_default_is_uncorrected_as_in_the_pipeline():
    # statsmodels' uncorrected chi-square on the same table: 23**2 / 59 = 8.9661, p = 0.00275.
    res = mcnemar_table([[402, 41], [18, 139]])
    ref = sm_mcnemar([[402, 41], [18, 139]], exact=False, correction=False)
    assert res.method == "chi-square" and not res.correction
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-12) == pytest.approx(8.9661, abs=5e-5)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-12)
    few = mcnemar_table([[50, 7], [2, 41]])  # b + c = 9 < 25: exact binomial, as analyze uses
    assert few.pvalue == pytest.approx(stats.binomtest(2, 9, 0.5).pvalue, rel=1e-12)


def test_newcombe_method_10_on_bentur_table():
    # Fagerland, Lydersen & Laake (2014), Stat Med 33:2850, Bentur et al. (2009) data:
    # Newcombe's square-and-add interval (-0.5069, -0.0256) for the difference -6/21.
    ci = mcnemar_table([[1, 1], [7, 12]]).confidence_interval(0.95)
    assert ci.low == pytest.approx(-0.5069, abs=5e-5)
    assert ci.high == pytest.approx(-0.0256, abs=5e-5)


def _exact_coverage(n, probs, level):
    """Exact coverage by enumerating every 2x2 table of ``n`` pairs (multinomial weights)."""
    delta = probs[1] - probs[2]
    total = 0.0
    for a in range(n + 1):
        for b in range(n + 1 - a):
            for c in range(n + 1 - a - b):
                d = n - a - b - c
                lo, hi = mcnemar_table([[a, b], [c, d]]).confidence_interval(level)
                if lo <= delta <= hi:
                    total += stats.multinomial.pmf([a, b, c, d], n, probs)
    return total


@pytest.mark.parametrize("probs", [(0.3, 0.2, 0.1, 0.4), (0.1, 0.2, 0.2, 0.5), (0.6, 0.05, 0.15, 0.2)])
def test_newcombe_exact_coverage_by_enumeration(probs):
    # Method 10 keeps close to its nominal level at n = 20 (Newcombe 1998; Fagerland et al. 2014);
    # the review found 85.5-87% at a nominal 90% with the uncorrected phi.
    cov90 = _exact_coverage(20, probs, 0.90)
    cov95 = _exact_coverage(20, probs, 0.95)
    assert 0.895 <= cov90 <= 0.96
    assert 0.945 <= cov95 <= 0.975
