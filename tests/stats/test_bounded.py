"""The bounded measures' pass-rule pieces against independent references: Wilson's interval (statsmodels), a brute
force inversion of the score-type test, the variance of a sample variance by exact enumeration and scipy's kurtosis."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint
from tests.stats.kurtosis_reference import kurtosis_df_reference

from fairpair.stats import crossed_from_cells, null_variance_interval
from fairpair.stats._crossed import _kurtosis_df


@pytest.mark.parametrize("x,n,pb", [(7, 50, 0.3), (1, 120, 0.01), (118, 120, 0.97), (0, 40, 0.2)])
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (1.0, 5.0)])
def test_is_wilsons_interval_shifted_when_group_b_is_known_and_there_is_no_design_effect(x, n, pb, bounds):
    # phi = 1 (se the binomial one), df infinite (the normal), group B's mean known (n_b huge): the set of
    # delta with (p_a - pb - delta)^2 <= z^2 (pb + delta)(1 - pb - delta) / n is Wilson's interval for p_a, minus pb
    lo, hi = bounds
    span = hi - lo
    pa, nb = x / n, 1e15
    se = np.sqrt(pa * (1 - pa) / n + pb * (1 - pb) / nb)
    for level in (0.90, 0.95):
        w = proportion_confint(x, n, alpha=1 - level, method="wilson")
        ci = null_variance_interval(span * (pa - pb), span * se, np.inf, lo + span * pb, n, nb, bounds, level)
        assert (ci.low, ci.high) == pytest.approx((span * (w[0] - pb), span * (w[1] - pb)), abs=1e-9)


def test_limits_are_where_the_score_type_test_rejects_by_brute_force():
    # a crossed-looking input: design effect 2.3, Student t with 11.4 df, unequal groups; a grid of delta
    est, se, df, mb, na, nb = -0.031, 0.011, 11.4, 0.962, 900.0, 1100.0
    ci = null_variance_interval(est, se, df, mb, na, nb, (0.0, 1.0), 0.90)
    pa = mb + est
    phi = se ** 2 / (pa * (1 - pa) / na + mb * (1 - mb) / nb)
    q = stats.t.ppf(0.95, df)
    grid = np.linspace(-mb, 1 - mb, 2_000_001)
    v0 = phi * ((mb + grid) * (1 - mb - grid) / na + mb * (1 - mb) / nb)
    keep = grid[(est - grid) ** 2 <= q * q * v0]
    assert (ci.low, ci.high) == pytest.approx((keep.min(), keep.max()), abs=2e-6)
    # the variance at the hypothesis, not at the estimate: wider than the t interval toward the larger variance
    assert ci.low < est - q * se and ci.high < est + q * se


def test_undefined_and_bad_inputs():
    assert np.isnan(null_variance_interval(0.0, 0.1, 10, 1.0, 50, 50, (0, 1)).low)  # both at the same bound
    assert np.isnan(null_variance_interval(0.1, np.nan, 10, 0.3, 50, 50, (0, 1)).low)
    with pytest.raises(ValueError, match="bounds"):
        null_variance_interval(0.1, 0.1, 10, 0.3, 50, 50, (1, 1))
    with pytest.raises(ValueError, match="positive"):
        null_variance_interval(0.1, 0.1, 10, 0.3, 0, 50, (0, 1))


@pytest.mark.parametrize("p", [0.5, 0.2, 0.05])
def test_kurtosis_df_matches_the_exact_variance_of_a_sample_variance(p):
    # Var(S^2) = sigma^4 (2 / (n - 1) + kappa / n) (kappa the excess kurtosis), checked by enumerating every
    # Bernoulli(p) sample of size 7; its effective df 2 E[S^2]^2 / Var(S^2) is the formula's (n - 1) / (1 + kappa
    # (n - 1) / (2 n)), which _kurtosis_df evaluates at the sample's own G2 (scipy's bias-corrected kurtosis)
    n = 7
    s2, w = [], []
    for xs in itertools.product((0.0, 1.0), repeat=n):
        k = sum(xs)
        s2.append(np.var(xs, ddof=1))
        w.append(p ** k * (1 - p) ** (n - k))
    s2, w = np.array(s2), np.array(w)
    mean = (w * s2).sum()
    var = (w * (s2 - mean) ** 2).sum()
    kappa = (1 - 6 * p * (1 - p)) / (p * (1 - p))
    assert mean == pytest.approx(p * (1 - p))
    assert 2 * mean ** 2 / var == pytest.approx((n - 1) / (1 + kappa * (n - 1) / (2 * n)))
    x = np.array([0, 0, 1, 0, 0, 0, 3.0, 0, 1, 0, 0, 0] * 2)
    g2 = stats.kurtosis(x, fisher=True, bias=False)
    assert stats.kurtosistest(x, alternative="greater").pvalue <= 0.25
    assert g2 > 0 and _kurtosis_df(x) == pytest.approx(23 / (1 + g2 * 23 / 48))
    assert _kurtosis_df(np.array([-1.0, 1.0] * 12)) == pytest.approx(23.0)  # negative kurtosis: never above n - 1
    assert _kurtosis_df(x[:12]) == 11.0  # below 20 values (the test's validity limit): no correction


def test_kurtosis_is_corrected_only_where_a_test_sees_it():
    light = np.random.default_rng(1).normal(size=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert stats.kurtosistest(light, alternative="greater").pvalue > 0.25
    assert _kurtosis_df(light) == 19.0 and _kurtosis_df(np.arange(4.0)) == 3.0


def test_kurtosis_df_in_the_crossed_satterthwaite_df():
    # 1% events with two templates carrying a cluster of them: heavy-tailed template differences
    rng = np.random.default_rng(4)
    t, n = 30, 20
    a = (rng.random((t, n)) < 0.02).astype(float)
    b = (rng.random((t, n)) < 0.01).astype(float)
    a[:2] = rng.random((2, n)) < 0.3
    fixed = crossed_from_cells(a, b, names="fixed", kurtosis=True)
    d_t = a.mean(1) - b.mean(1)
    assert fixed.df == pytest.approx(kurtosis_df_reference(d_t)) and fixed.df < t - 1
    assert crossed_from_cells(a, b, names="fixed").df == t - 1
    # names random, not pooled: one of group A's names with events in half the templates; each name term's df from
    # its group's name means
    a[:, 0] = np.minimum(1.0, a[:, 0] + (rng.random(t) < 0.5))
    r = crossed_from_cells(a, b, names="random", kurtosis=True, pool=None)
    plain = crossed_from_cells(a, b, names="random", pool=None)
    assert r.se == plain.se and r.estimate == plain.estimate
    d_t = a.mean(1) - b.mean(1)
    terms = [(1 / t, d_t.var(ddof=1), kurtosis_df_reference(d_t))]
    for key, m in (("a", a), ("b", b)):
        if r.variance_components[f"names_{key}"] > 0:
            cols = m.mean(0)
            ms = r.mean_squares
            terms += [(1 / n, cols.var(ddof=1), kurtosis_df_reference(cols)),
                      (-ms[f"h_names_{key}"] / n, ms[f"ms_interaction_{key}"], ms[f"df_interaction_{key}"])]
    assert r.variance_components["names_a"] > 0 and kurtosis_df_reference(a.mean(0)) < n - 1
    var = sum(c * m for c, m, _ in terms)
    assert r.df == pytest.approx(var ** 2 / sum((c * m) ** 2 / d for c, m, d in terms))
    assert r.df < plain.df


@pytest.mark.parametrize("bounds,level", [((0.0, 1.0), 0.90), ((1.0, 5.0), 0.90), ((1.0, 5.0), 0.95)])
def test_logit_interval_is_the_delta_method_t_interval_read_back_at_group_bs_mean(bounds, level):
    # names fixed, one name per group: the crossed variance is the paired t's over templates (T - 1 df), so the
    # logit interval is scipy's one-sample t interval of the linearised template differences
    # z_t = a_t / (p_A (1 - p_A)) - b_t / (p_B (1 - p_B)) around logit(p_A) - logit(p_B), carried back at p_B
    from scipy.special import expit, logit

    from fairpair.stats import logit_interval

    rng = np.random.default_rng(3)
    lo, hi = bounds
    span = hi - lo
    a01 = np.clip(rng.beta(18, 2, 15), 0.01, 0.999)  # group A's template means on [0, 1], near the top
    b01 = np.clip(rng.beta(30, 2, 15), 0.01, 0.999)
    ci = logit_interval((lo + span * a01)[:, None], (lo + span * b01)[:, None], names="fixed", bounds=bounds,
                        confidence_level=level)
    pa, pb = a01.mean(), b01.mean()
    z = a01 / (pa * (1 - pa)) - b01 / (pb * (1 - pb))
    ref = stats.ttest_1samp(z, 0.0).confidence_interval(level)
    q = (ref.high - ref.low) / 2
    assert ci.low == pytest.approx(span * (expit(logit(pa) - q) - pb), rel=1e-10)
    assert ci.high == pytest.approx(span * (expit(logit(pa) + q) - pb), rel=1e-10)
    # asymmetric toward the open side: group A below group B near the top, the lower limit reaches further
    est = span * (pa - pb)
    assert est - ci.low > ci.high - est > 0


def test_logit_interval_is_undefined_at_a_bound_and_checks_its_bounds():
    from fairpair.stats import logit_interval

    ones = np.full((10, 2), 5.0)
    some = ones.copy()
    some[::3, 0] = 4.0
    assert np.isnan(logit_interval(ones, some, names="random", bounds=(1.0, 5.0)).low)  # only fives in group A
    assert np.isfinite(logit_interval(some, some[::-1], names="random", bounds=(1.0, 5.0)).low)
    with pytest.raises(ValueError):
        logit_interval(some, some, names="random", bounds=(5.0, 1.0))
    with pytest.raises(ValueError):
        logit_interval(some, some, names="sometimes", bounds=(1.0, 5.0))
