"""Per-scenario differences and the templates-fixed average, checked against statsmodels OLS and scipy."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.tools.sm_exceptions import SingularMatrixWarning

from fairpair.stats import scenario_differences, scenario_differences_from_cells, scenario_heterogeneity


def _cells(seed: int, t: int = 6, na: int = 4, nb: int = 5, shift: float = 0.3):
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 1, (t, 1)) + rng.normal(0, 0.4, (1, na)) + rng.normal(shift, 0.5, (t, na))
    b = rng.normal(0, 1, (t, 1)) * 0 + rng.normal(0, 0.4, (1, nb)) + rng.normal(0, 0.5, (t, nb))
    return a, b


def _long(a: np.ndarray, b: np.ndarray) -> pd.DataFrame:
    rows = []
    for g, x in (("A", a), ("B", b)):
        for t in range(x.shape[0]):
            for n in range(x.shape[1]):
                if not np.isnan(x[t, n]):
                    rows.append(dict(y=x[t, n], t=f"t{t}", g=g, n=f"{g}{n}"))
    return pd.DataFrame(rows)


def _contrast(fit, names_cols, weights):
    """t test of the linear combination ``sum w * coef`` by name (statsmodels' own t_test)."""
    c = np.zeros(len(fit.params))
    for name, w in zip(names_cols, weights, strict=True):
        c[list(fit.params.index).index(name)] += w
    return fit.t_test(c)


def test_names_random_per_scenario_equals_ols_of_template_by_group():
    a, b = _cells(1)
    r = scenario_differences_from_cells(a, b, names="random")
    df = _long(a, b)
    fit = smf.ols("y ~ 0 + C(t):C(g)", df).fit()
    assert r.df == pytest.approx(fit.df_resid)
    for t in range(a.shape[0]):
        tt = _contrast(fit, [f"C(t)[t{t}]:C(g)[A]", f"C(t)[t{t}]:C(g)[B]"], [1, -1])
        assert r.estimates[t] == pytest.approx(float(tt.effect[0]), abs=1e-12)
        assert r.se[t] == pytest.approx(float(tt.sd[0, 0]), rel=1e-10)
        assert r.pvalues[t] == pytest.approx(float(tt.pvalue), rel=1e-8)


def test_names_fixed_per_scenario_and_average_equal_ols_with_name_effects():
    a, b = _cells(2)
    r = scenario_differences_from_cells(a, b, names="fixed")
    df = _long(a, b)
    with warnings.catch_warnings():  # rank-deficient coding; the estimable contrasts are unique
        warnings.filterwarnings("ignore", "The design matrix is rank-deficient", SingularMatrixWarning)
        fit = smf.ols("y ~ C(t):C(g) + C(n)", df).fit()
    assert r.df == pytest.approx(fit.df_resid)
    x = np.asarray(fit.model.exog)
    t_all = a.shape[0]
    avg = np.zeros(x.shape[1])
    for t in range(t_all):
        # the per-template A - B contrast: mean design row of A's cells minus B's, in template t
        in_t = df.t == f"t{t}"
        c = x[(in_t & (df.g == "A")).to_numpy()].mean(0) - x[(in_t & (df.g == "B")).to_numpy()].mean(0)
        tt = fit.t_test(c)
        assert r.estimates[t] == pytest.approx(float(tt.effect[0]), abs=1e-10)
        assert r.se[t] == pytest.approx(float(tt.sd[0, 0]), rel=1e-8)
        avg += c / t_all
    tt = fit.t_test(avg)
    assert r.estimate == pytest.approx(float(tt.effect[0]), abs=1e-10)
    assert r.average_se == pytest.approx(float(tt.sd[0, 0]), rel=1e-8)
    assert r.pvalue == pytest.approx(float(tt.pvalue), rel=1e-8)
    assert r.average_df == pytest.approx(fit.df_resid)


def test_names_random_average_is_welch_on_the_names_means():
    a, b = _cells(3, t=1, na=5, nb=6)  # one posting
    r = scenario_differences_from_cells(a, b, names="random")
    w = stats.ttest_ind(a.mean(axis=0), b.mean(axis=0), equal_var=False)
    assert r.statistic == pytest.approx(w.statistic, rel=1e-12)
    assert r.pvalue == pytest.approx(w.pvalue, rel=1e-10)
    assert r.average_df == pytest.approx(w.df, rel=1e-10)
    lo, hi = r.confidence_interval(0.95)
    ci = w.confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((ci.low, ci.high), rel=1e-10)
    a, b = _cells(4, t=7)
    r = scenario_differences_from_cells(a, b, names="random")
    w = stats.ttest_ind(a.mean(axis=0), b.mean(axis=0), equal_var=False)
    assert r.pvalue == pytest.approx(w.pvalue, rel=1e-10)


def test_long_form_equals_cells_and_drops_templates_missing_a_group():
    a, b = _cells(5)
    b[2] = np.nan  # template 2 has no answer from group B
    df = _long(a, b)
    r = scenario_differences(df.y, df.t, df.n, df.g, groups=("A", "B"), names="random")
    rc = scenario_differences_from_cells(a, b, names="random")
    assert list(r.templates) == [0, 1, 3, 4, 5] == list(rc.templates)
    np.testing.assert_allclose(r.estimates, rc.estimates)
    assert r.estimate == pytest.approx(rc.estimate)
    with pytest.raises(ValueError, match="both"):
        scenario_differences([1, 2, 3], ["t", "t", "t"], ["x", "x", "y"], ["A", "B", "B"])


def test_pvalues_beyond_margin_and_intervals_agree():
    a, b = _cells(6, shift=1.0)
    r = scenario_differences_from_cells(a, b, names="fixed")
    ci = r.confidence_intervals(0.95)
    pm = r.pvalues_beyond(0.2)
    # p against the margin is below 0.05 exactly when the 95% interval lies beyond it
    beyond = (ci[:, 0] > 0.2) | (ci[:, 1] < -0.2)
    assert np.array_equal(pm < 0.05, beyond)
    assert np.all(pm >= r.pvalues - 1e-15)


def test_heterogeneity_share_and_esd_find_the_one_biased_template():
    rng = np.random.default_rng(7)
    t, n = 20, 5
    a = rng.normal(0, 0.3, (t, n))
    b = rng.normal(0, 0.3, (t, n))
    a[3] += 2.0  # one scenario treats group A differently
    h = scenario_heterogeneity(a, b)
    assert h.outliers[0] == 3  # the most extreme first (with this seed the ESD also picks template 19, p 0.002)
    assert h.outlier_pvalue < 1e-6
    assert h.pvalue < 1e-6 and 0.5 < h.share < 1
    assert h.share_low < h.share < h.share_high
    assert h.estimate_without == pytest.approx(np.delete(a.mean(1) - b.mean(1), h.outliers).mean())
    # F: the template differences' variance over the interaction's share of it, as an ANOVA by hand
    d = a.mean(1) - b.mean(1)
    res = [x - x.mean(1, keepdims=True) - x.mean(0, keepdims=True) + x.mean() for x in (a, b)]
    ms = sum((r_ ** 2).sum() for r_ in res) / (2 * (t - 1) * (n - 1))
    assert h.statistic == pytest.approx(d.var(ddof=1) / (ms * 2 / n))
    homog = scenario_heterogeneity(rng.normal(0, 0.3, (t, n)), rng.normal(0, 0.3, (t, n)))
    assert homog.outliers.size == 0


def test_esd_matches_rosners_worked_example():
    # Rosner (1983) / NIST e-Handbook 1.3.5.17.3: 54 values, up to 10 outliers, alpha 0.05: 3 outliers
    x = np.array([-0.25, 0.68, 0.94, 1.15, 1.20, 1.26, 1.26, 1.34, 1.38, 1.43, 1.49, 1.49, 1.55, 1.56, 1.58,
                  1.65, 1.69, 1.70, 1.76, 1.77, 1.81, 1.91, 1.94, 1.96, 1.99, 2.06, 2.09, 2.10, 2.14, 2.15,
                  2.23, 2.24, 2.26, 2.35, 2.37, 2.40, 2.47, 2.54, 2.62, 2.64, 2.90, 2.92, 2.92, 2.93, 3.21,
                  3.26, 3.30, 3.59, 3.68, 4.30, 4.64, 5.34, 5.42, 6.01])
    from fairpair.stats._scenarios import _esd

    order, levels = _esd(x, 10)
    assert [x[i] for i in order[:3]] == [6.01, 5.42, 5.34]
    assert int(np.nonzero(levels < 0.05)[0].max()) + 1 == 3


def _esd_r_reference(x: np.ndarray, k: int) -> list[float]:
    """Rosner's R_i by hand: scipy's z-score (ddof 1) of the remaining values, the largest removed each step."""
    vals, out = list(x), []
    for _ in range(k):
        z = np.abs(stats.zscore(vals, ddof=1))
        out.append(float(z.max()))
        vals.pop(int(np.argmax(z)))
    return out


def test_vectorised_esd_statistics_equal_scipy_zscores():
    from fairpair.stats._scenarios import _esd_statistics

    x = np.random.default_rng(5).normal(size=(3, 12))
    got = _esd_statistics(x, 3)
    for i in range(3):
        assert got[i] == pytest.approx(_esd_r_reference(x[i], 3), rel=1e-12)


def test_permutation_levels_equal_exact_enumeration():
    import itertools

    from fairpair.stats._scenarios import _esd_statistics, _permutation_levels, _studentized

    rng = np.random.default_rng(9)
    a = (rng.random((5, 2)) < 0.3).astype(float)  # yes/no cells: ties and discreteness
    a[0] = 1.0
    b = (rng.random((5, 2)) < 0.3).astype(float)
    c = np.concatenate([a, b], axis=1)
    obs = _esd_statistics(_studentized(a, b), 2)
    splits = [s for s in itertools.combinations(range(4), 2)]  # the 6 ways to split 4 names into 2 + 2
    rs = []
    for combo in itertools.product(splits, repeat=5):  # 6^5 = 7776 equally likely arrangements
        pa = np.array([c[t, list(s)] for t, s in enumerate(combo)])
        pb = np.array([np.delete(c[t], list(s)) for t, s in enumerate(combo)])
        rs.append(_esd_statistics(_studentized(pa, pb), 2))
    rs = np.array(rs)
    exact = (rs >= obs - 1e-9).mean(axis=0)
    levels, overall = _permutation_levels(a, b, 2, 20000, seed=1)
    assert levels == pytest.approx(exact, abs=0.01)
    assert overall >= levels.min() - 1e-12


def test_permutation_guard_does_not_fire_on_rare_events_and_finds_a_biased_template():
    rng = np.random.default_rng(3)
    fired = 0
    for _ in range(40):
        a = (rng.random((20, 10, 5)) < 0.01).mean(-1)
        b = (rng.random((20, 10, 5)) < 0.01).mean(-1)
        h = scenario_heterogeneity(a, b, outlier_alpha=0.005, n_permutations=999, seed=0)
        fired += h.outliers.size > 0
    assert fired <= 2  # the t levels fire in most of these (47-74% in sim_audits' rare rows)
    a = (rng.random((20, 10, 5)) < 0.01).mean(-1)
    a[3] = (rng.random((10, 5)) < 0.4).mean(-1)
    h = scenario_heterogeneity(a, b, outlier_alpha=0.005, n_permutations=999, seed=0)
    assert list(h.outliers) == [3]


# bounded measures: the per-template score test and interval (issue 30)

_TABLES = [(7, 40, 12, 60), (3, 50, 1, 50), (2, 50, 1, 50), (50, 50, 49, 50), (1, 10, 0, 12), (0, 50, 0, 50),
           (3, 50, 0, 50), (20, 25, 5, 30)]


def _restricted_by_search(x1, n1, x0, n0, d):
    """The binomial likelihood maximised under ``p1 - p0 = d`` by a bounded scalar search (scipy)."""
    from scipy import optimize

    def nll(p0):
        p1 = p0 + d
        with np.errstate(divide="ignore", invalid="ignore"):
            ll = (stats.binom.logpmf(x1, n1, p1) if 0 < p1 < 1 else (0.0 if x1 == n1 * p1 else -np.inf)) + \
                 (stats.binom.logpmf(x0, n0, p0) if 0 < p0 < 1 else (0.0 if x0 == n0 * p0 else -np.inf))
        return -ll
    lo, hi = max(0.0, -d), min(1.0, 1.0 - d)
    grid = np.linspace(lo, hi, 2001)
    start = grid[int(np.argmin([nll(g) for g in grid]))]
    step = (hi - lo) / 2000
    r = optimize.minimize_scalar(nll, bounds=(max(lo, start - step), min(hi, start + step)), method="bounded",
                                 options={"xatol": 1e-12})
    return r.x + d, r.x


@pytest.mark.parametrize("x1,n1,x0,n0", _TABLES)
@pytest.mark.parametrize("d", [0.0, 0.05, -0.1, 0.2])
def test_score_statistic_uses_the_restricted_maximum_likelihood(x1, n1, x0, n0, d):
    """The restricted estimates maximise the binomial likelihood (scipy search); at d = 0 the statistic is
    statsmodels' score test (its restricted estimate for d != 0 is not the maximum in 0.15)."""
    from statsmodels.stats.proportion import score_test_proportions_2indep

    from fairpair.stats import score_restricted, score_se

    p1, p0 = score_restricted(x1 / n1, n1, x0 / n0, n0, d)
    r1, r0 = _restricted_by_search(x1, n1, x0, n0, d)
    assert float(p1) == pytest.approx(r1, abs=1e-6) and float(p0) == pytest.approx(r0, abs=1e-6)
    se = float(score_se(x1 / n1, n1, x0 / n0, n0, d))
    assert se == pytest.approx(np.sqrt(r1 * (1 - r1) / n1 + r0 * (1 - r0) / n0), rel=1e-5, abs=1e-6)
    if d == 0 and 0 < x1 + x0 < n1 + n0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = score_test_proportions_2indep(x1, n1, x0, n0, value=0, correction=False)
        assert (x1 / n1 - x0 / n0) / se == pytest.approx(float(ref.statistic), rel=1e-12)


@pytest.mark.parametrize("x1,n1,x0,n0,mn,mee", [
    (56, 70, 48, 80, (0.0528, 0.3382), (0.0533, 0.3377)), (9, 10, 3, 10, (0.1700, 0.8406), (0.1821, 0.8370)),
    (6, 7, 2, 7, (0.0342, 0.8534), (0.0544, 0.8478)), (5, 56, 0, 29, (-0.0326, 0.1933), (-0.0313, 0.1926)),
    (0, 10, 0, 20, (-0.1658, 0.2844), (-0.1611, 0.2775)), (10, 10, 0, 20, (0.7156, 1.0), (0.7225, 1.0))])
def test_score_interval_equals_newcombes_table(x1, n1, x0, n0, mn, mee):
    """Newcombe (1998), *Statistics in Medicine* 17, 873-890, Table II: Miettinen-Nurminen (method 6, the
    variance times N / (N - 1): ``dispersion``) and Mee (method 5, without it)."""
    from fairpair.stats import score_interval

    q = stats.norm.ppf(0.975)
    d, n = x1 / n1 - x0 / n0, n1 + n0
    np.testing.assert_allclose(score_interval(d, x1 / n1, n1, x0 / n0, n0, n / (n - 1), q), mn, atol=6e-5)
    np.testing.assert_allclose(score_interval(d, x1 / n1, n1, x0 / n0, n0, 1.0, q), mee, atol=6e-5)


@pytest.mark.parametrize("x1,n1,x0,n0", _TABLES)
def test_score_interval_inverts_the_score_test(x1, n1, x0, n0):
    """Each end is where the score statistic (the likelihood maximised by search) reaches 1.96; the differences
    just inside are kept, just outside rejected."""
    from fairpair.stats import score_interval

    d = x1 / n1 - x0 / n0
    q = stats.norm.ppf(0.975)
    got = score_interval(d, x1 / n1, n1, x0 / n0, n0, 1.0, q)

    def z(g):
        p1, p0 = _restricted_by_search(x1, n1, x0, n0, g)
        return abs(d - g) / np.sqrt(p1 * (1 - p1) / n1 + p0 * (1 - p0) / n0)

    for end, inward in ((got[0], 1e-3), (got[1], -1e-3)):
        assert z(end) == pytest.approx(q, rel=1e-4)
        assert z(end + inward) < q < z(end - inward)


def test_bounded_scenarios_use_the_score_test_with_the_pooled_dispersion():
    """Yes/no cells: per template, the score test of the group means with the names as the units and the
    variance function's dispersion pooled over templates; a template with no event in either group is p = 1
    with an interval that still has width."""
    from fairpair.stats import score_interval, score_se

    rng = np.random.default_rng(4)
    a = (rng.random((12, 6, 5)) < 0.05).mean(-1)
    b = (rng.random((12, 7, 5)) < 0.05).mean(-1)
    a[0], b[0] = 0.0, 0.0
    a[1] = (rng.random((6, 5)) < 0.5).mean(-1)
    r = scenario_differences_from_cells(a, b, names="random", bounds=(0, 1))
    t = scenario_differences_from_cells(a, b, names="random")
    ma, mb = a.mean(1), b.mean(1)
    va = ma * (1 - ma) + a.var(1, ddof=1) / 6
    vb = mb * (1 - mb) + b.var(1, ddof=1) / 7
    phi = t.variance["ms_within"] / ((5 * va.sum() + 6 * vb.sum()) / (12 * 11))
    assert r.dispersion == pytest.approx(phi, rel=1e-12)
    se0 = score_se(ma, 6, mb, 7, 0.0, phi)
    np.testing.assert_allclose(r.se, se0, rtol=1e-12)
    np.testing.assert_allclose(r.pvalues[1:], 2 * stats.t.sf(np.abs(ma - mb)[1:] / se0[1:], t.df), rtol=1e-9)
    assert r.pvalues[0] == 1.0
    ci = r.confidence_intervals(0.95)
    np.testing.assert_allclose(ci, score_interval(ma - mb, ma, 6, mb, 7, phi, stats.t.ppf(0.975, t.df)))
    assert ci[0, 0] < 0 < ci[0, 1] and np.all(ci >= -1) and np.all(ci <= 1)
    # against a margin: the score test where the difference is the margin, on the side of the estimate
    pm = r.pvalues_beyond(0.1)
    z = (np.abs(ma - mb) - 0.1) / score_se(ma, 6, mb, 7, np.sign(ma - mb + 1e-300) * 0.1, phi)
    np.testing.assert_allclose(pm, np.where(z > 0, np.minimum(1, 2 * stats.t.sf(z, t.df)), 1.0), rtol=1e-9)
    # a 1-5 score is the same test on (x - 1) / 4
    s = scenario_differences_from_cells(1 + 4 * a, 1 + 4 * b, names="random", bounds=(1, 5))
    np.testing.assert_allclose(s.pvalues, r.pvalues, rtol=1e-9)
    np.testing.assert_allclose(s.confidence_intervals(0.9), 4 * r.confidence_intervals(0.9), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="low < high"):
        scenario_differences_from_cells(a, b, bounds=(1, 1))
