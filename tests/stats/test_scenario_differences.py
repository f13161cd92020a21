"""Per-scenario differences and the templates-fixed average, checked against statsmodels OLS and scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

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
    with np.testing.suppress_warnings() as sup:  # rank-deficient coding; the estimable contrasts are unique
        sup.filter(Warning, "The design matrix is rank-deficient")
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
