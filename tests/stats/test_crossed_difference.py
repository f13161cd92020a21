"""crossed_difference / crossed_omnibus / names_heterogeneity against scipy, statsmodels and hand ANOVA."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import AnovaRM, anova_lm

from fairpair.stats import crossed_difference, crossed_from_cells, crossed_omnibus, names_heterogeneity, significant


def _audit(seed=0, t=12, n=4, r=3, name_sd=0.6, tmpl_sd=1.0, tg_sd=0.3, cell_sd=0.5, delta=0.4):
    """Long-format answers of a balanced crossed design (names 0..n-1 in group a, n..2n-1 in group b)."""
    rng = np.random.default_rng(seed)
    rows = []
    a_t = rng.normal(0, tmpl_sd, t)
    g_tg = rng.normal(0, tg_sd, (t, 2))
    b_n = rng.normal(0, name_sd, 2 * n)
    c = rng.normal(0, cell_sd, (t, 2 * n))
    for ti in range(t):
        for k in range(2 * n):
            g = 0 if k < n else 1
            for _ in range(r):
                rows.append((ti, k, "a" if g == 0 else "b",
                             delta * (g == 0) + a_t[ti] + g_tg[ti, g] + b_n[k] + c[ti, k] + rng.normal(0, 1)))
    return pd.DataFrame(rows, columns=["t", "n", "g", "v"])


def _hand(df, n_a, n_b):
    """Hand ANOVA on cell means: S_T^2, S_N,g^2, MS_res,g per group (textbook two-way without replication)."""
    cell = df.groupby(["t", "n", "g"]).v.mean().reset_index()
    out = {}
    for g in ("a", "b"):
        m = cell[cell.g == g].pivot(index="t", columns="n", values="v").to_numpy()
        t, k = m.shape
        rows, cols, grand = m.mean(1), m.mean(0), m.mean()
        ss_res = ((m - rows[:, None] - cols[None, :] + grand) ** 2).sum()
        out[g] = dict(rows=rows, s2n=cols.var(ddof=1), ms=ss_res / ((t - 1) * (k - 1)), k=k)
    d_t = out["a"]["rows"] - out["b"]["rows"]
    return d_t, out


def test_names_fixed_is_the_one_sample_t_on_template_differences():
    df = _audit()
    r = crossed_difference(df.v, df.t, df.n, df.g, groups=("a", "b"), names="fixed")
    d_t, _ = _hand(df, 4, 4)
    ref = stats.ttest_1samp(d_t, 0.0)
    assert r.estimate == pytest.approx(d_t.mean()) and r.df == pytest.approx(11)
    assert r.statistic == pytest.approx(ref.statistic) and r.pvalue == pytest.approx(ref.pvalue)
    lo, hi = ref.confidence_interval(0.9)
    assert tuple(r.confidence_interval(0.9)) == pytest.approx((lo, hi))
    assert r.variance_components["names_a"] == 0 and r.names == "fixed"


def test_names_random_variance_and_satterthwaite_df_by_hand():
    df = _audit(seed=3, name_sd=1.0)
    r = crossed_difference(df.v, df.t, df.n, df.g, groups=("a", "b"), names="random", pool=None)
    d_t, g = _hand(df, 4, 4)
    t = d_t.size
    s2t = d_t.var(ddof=1)
    terms = [(1 / t, s2t, t - 1)]
    var = s2t / t
    for k in ("a", "b"):
        comp = (g[k]["s2n"] - g[k]["ms"] / t) / g[k]["k"]
        assert comp > 0  # the scenario has real name effects
        var += comp
        terms += [(1 / g[k]["k"], g[k]["s2n"], g[k]["k"] - 1), (-1 / (g[k]["k"] * t), g[k]["ms"],
                                                                (t - 1) * (g[k]["k"] - 1))]
    df_s = var ** 2 / sum((c * m) ** 2 / d for c, m, d in terms)
    assert r.se ** 2 == pytest.approx(var) and r.df == pytest.approx(df_s)
    assert r.pvalue == pytest.approx(2 * stats.t.sf(abs(d_t.mean() / np.sqrt(var)), df_s))
    lo, hi = r.confidence_interval(0.95)
    q = stats.t.ppf(0.975, df_s) * np.sqrt(var)
    assert (lo, hi) == pytest.approx((d_t.mean() - q, d_t.mean() + q))
    # the same t gives the p-value and the interval: p < 0.05 exactly when the 95% CI excludes 0
    assert (r.pvalue < 0.05) == (lo > 0 or hi < 0)


def test_variance_components_match_mixedlm_reml_in_a_balanced_design():
    # one group's cell means: m[t, n] = a_t + b_n + e; REML of the crossed model with a single group
    rng = np.random.default_rng(5)
    t, k = 15, 8
    m = rng.normal(0, 1.0, t)[:, None] + rng.normal(0, 0.8, k)[None, :] + rng.normal(0, 0.5, (t, k))
    data = pd.DataFrame([(i, j, m[i, j]) for i in range(t) for j in range(k)], columns=["t", "n", "v"])
    data["one"] = 1
    fit = smf.mixedlm("v ~ 1", data, groups="one", vc_formula={"t": "0 + C(t)", "n": "0 + C(n)"}).fit(reml=True)
    vc = dict(zip(fit.model.exog_vc.names, fit.vcomp, strict=True))
    # ANOVA (method of moments): sigma2_N = (S_N^2 - MS_res / T) , sigma2_res = MS_res; equal to REML when positive
    rows, cols, grand = m.mean(1), m.mean(0), m.mean()
    ms_res = ((m - rows[:, None] - cols[None, :] + grand) ** 2).sum() / ((t - 1) * (k - 1))
    s2n = cols.var(ddof=1)
    assert fit.scale == pytest.approx(ms_res, rel=1e-4)
    assert vc["n"] == pytest.approx(s2n - ms_res / t, rel=1e-3)
    # crossed_difference reports the same pieces (group a = this matrix, group b = zeros)
    vals, tt, nn, gg = [], [], [], []
    for i in range(t):
        for j in range(k):
            vals += [m[i, j], 0.0]
            tt += [i, i]
            nn += [j, 100 + j]
            gg += ["a", "b"]
    r = crossed_difference(vals, tt, nn, gg, groups=("a", "b"), pool=None)
    assert r.mean_squares["ms_interaction_a"] == pytest.approx(ms_res)
    assert r.variance_components["names_a"] == pytest.approx(vc["n"] / k, rel=1e-3)


def test_method_of_moments_is_unbiased_by_simulation():
    # E[se^2] = Var(D) under the model (names random, no truncation needed: large name variance)
    est, var = [], []
    for s in range(400):
        df = _audit(seed=100 + s, t=8, n=3, r=2, name_sd=1.0)
        r = crossed_difference(df.v, df.t, df.n, df.g, groups=("a", "b"), pool=None)
        est.append(r.estimate)
        var.append(r.se ** 2)
    # exact Var(D) of the generator: template x group 2 * 0.3^2 / 8, names 2 * 1 / 3, cells 2 * (0.25 + 1/2) / (3 * 8)
    exact = 2 * 0.09 / 8 + 2 * 1.0 / 3 + 2 * 0.75 / 24
    assert np.mean(var) == pytest.approx(exact, rel=0.06)
    assert np.var(est, ddof=1) == pytest.approx(exact, rel=0.25)


def test_unbalanced_missing_answers_and_cells():
    df = _audit(seed=7)
    rng = np.random.default_rng(0)
    df.loc[rng.random(len(df)) < 0.2, "v"] = np.nan
    # a whole cell missing: name 0 in template 0
    df.loc[(df.t == 0) & (df.n == 0), "v"] = np.nan
    r = crossed_difference(df.v, df.t, df.n, df.g, groups=("a", "b"), names="fixed")
    assert r.n_templates == 12 and r.n_names_a == 4 and np.isfinite(r.pvalue)
    assert r.n_values == int(df.v.notna().sum())


def test_degenerate_inputs_give_nan_with_a_note_and_bad_inputs_raise():
    r = crossed_difference([1.0, 1.0, 1.0, 1.0], [0, 0, 1, 1], [0, 1, 0, 1], ["a", "b", "a", "b"])
    assert np.isnan(r.pvalue) and "one name" in r.note
    with pytest.raises(ValueError, match="two labels"):
        crossed_difference([1.0, 2.0, 3.0], [0, 0, 0], [0, 1, 2], ["a", "b", "c"])
    with pytest.raises(ValueError, match="one group"):
        crossed_difference([1.0, 2.0], [0, 0], [0, 0], ["a", "b"])
    with pytest.raises(ValueError, match="names must be one of"):
        crossed_difference([1.0, 2.0], [0, 0], [0, 1], ["a", "b"], names="both")


def test_omnibus_names_fixed_equals_repeated_measures_anova():
    rng = np.random.default_rng(2)
    t = 10
    cells = [rng.normal(mu, 1, (t, 3)) + rng.normal(0, 1, (t, 1)) for mu in (0.0, 0.3, 0.6)]
    res = crossed_omnibus(cells, names="fixed")
    tg = pd.DataFrame([(i, g, cells[g][i].mean()) for g in range(3) for i in range(t)], columns=["t", "g", "v"])
    ref = AnovaRM(tg, "v", "t", within=["g"]).fit().anova_table
    assert res.statistic == pytest.approx(ref["F Value"].iloc[0]) and res.pvalue == pytest.approx(ref["Pr > F"].iloc[0])
    assert (res.df_num, res.df_den) == (2, 18)


def test_quasi_f_by_hand_in_a_balanced_design():
    rng = np.random.default_rng(4)
    t, n, k = 8, 4, 3
    cells = [rng.normal(0, 1, (t, n)) + rng.normal(0, 0.5, (1, n)) for _ in range(k)]
    res = crossed_omnibus(cells, names="random")
    y = np.stack(cells, axis=1)  # t x k x n
    gm = y.mean(axis=(0, 2))
    grand = y.mean()
    ms_g = n * t * ((gm - grand) ** 2).sum() / (k - 1)
    tg = y.mean(axis=2)
    ms_gt = n * ((tg - tg.mean(1, keepdims=True) - gm[None, :] + grand) ** 2).sum() / ((k - 1) * (t - 1))
    nm = y.mean(axis=0)  # k x n
    ms_n = t * ((nm - gm[:, None]) ** 2).sum() / (k * (n - 1))
    resid = y - tg[:, :, None] - nm[None, :, :] + gm[None, :, None]
    ms_tn = (resid ** 2).sum() / (k * (t - 1) * (n - 1))
    f = (ms_g + ms_tn) / (ms_gt + ms_n)
    d1 = (ms_g + ms_tn) ** 2 / (ms_g ** 2 / (k - 1) + ms_tn ** 2 / (k * (t - 1) * (n - 1)))
    d2 = (ms_gt + ms_n) ** 2 / (ms_gt ** 2 / ((k - 1) * (t - 1)) + ms_n ** 2 / (k * (n - 1)))
    assert res.statistic == pytest.approx(f) and (res.df_num, res.df_den) == pytest.approx((d1, d2))
    assert res.pvalue == pytest.approx(stats.f.sf(f, d1, d2))


def test_names_heterogeneity_equals_pooled_two_way_anova():
    rng = np.random.default_rng(9)
    cells = [rng.normal(0, 1, (10, 4)) + rng.normal(0, 0.7, (1, 4)) for _ in range(2)]
    res = names_heterogeneity(cells)
    ss_n = df_n = ss_r = df_r = 0.0
    for c in cells:
        d = pd.DataFrame([(i, j, c[i, j]) for i in range(10) for j in range(4)], columns=["t", "n", "v"])
        tab = anova_lm(smf.ols("v ~ C(t) + C(n)", d).fit())
        ss_n += tab.loc["C(n)", "sum_sq"]
        df_n += tab.loc["C(n)", "df"]
        ss_r += tab.loc["Residual", "sum_sq"]
        df_r += tab.loc["Residual", "df"]
    f = (ss_n / df_n) / (ss_r / df_r)
    assert res.statistic == pytest.approx(f) and res.pvalue == pytest.approx(stats.f.sf(f, df_n, df_r))


def test_significant_uses_the_verdicts_strict_rule():
    assert not significant(0.05) and significant(0.0499999) and not significant(float("nan"))


def test_missing_cells_are_the_least_squares_additive_fit_of_statsmodels_ols():
    # Yates's fill = the additive template + name OLS fit of the observed cells; h = the mean centred
    # variance of the OLS name effects in units of sigma^2 (statsmodels' normalized_cov_params)
    import statsmodels.api as sm

    from fairpair.stats._crossed import _additive_fill

    rng = np.random.default_rng(5)
    t, n = 12, 5
    obs = rng.random((t, n)) > 0.25
    obs[:, 0] = obs[0, :] = True
    x = rng.normal(size=(t, n)) + np.arange(n)
    x[~obs] = np.nan
    filled, n_obs, h = _additive_fill(x)
    assert n_obs == int(obs.sum())

    def design(tt, nn):
        return np.column_stack([np.ones(tt.size)] + [(tt == i).astype(float) for i in range(1, t)]
                               + [(nn == j).astype(float) for j in range(1, n)])

    tt, nn = np.nonzero(obs)
    res = sm.OLS(x[obs], design(tt, nn)).fit()
    ta, na = np.meshgrid(np.arange(t), np.arange(n), indexing="ij")
    pred = (design(ta.ravel(), na.ravel()) @ res.params).reshape(t, n)
    np.testing.assert_allclose(filled[~obs], pred[~obs], atol=1e-10)
    np.testing.assert_array_equal(filled[obs], x[obs])
    cov = np.zeros((n, n))
    cov[1:, 1:] = res.normalized_cov_params[t:, t:]
    centre = np.eye(n) - 1.0 / n
    assert h == pytest.approx(np.trace(centre @ cov @ centre) / (n - 1), rel=1e-10)
    # complete table: h = 1 / T
    assert _additive_fill(np.ones((t, n)))[2] == pytest.approx(1.0 / t)


def test_name_component_with_empty_cells_subtracts_h_times_the_interaction():
    df = _audit(seed=11, t=10, n=4, r=1, name_sd=1.0)
    drop = np.random.default_rng(2).random(len(df)) < 0.2
    df.loc[drop & (df.t > 0), "v"] = np.nan  # template 0 keeps every cell
    r = crossed_difference(df.v, df.t, df.n, df.g, groups=("a", "b"), pool=None)
    from fairpair.stats._crossed import _additive_fill

    for g, key in (("a", "names_a"), ("b", "names_b")):
        m = df[df.g == g].pivot_table(index="t", columns="n", values="v", aggfunc="mean", dropna=False).to_numpy()
        filled, n_obs, h = _additive_fill(m)
        cols = filled.mean(0)
        res = filled - filled.mean(1)[:, None] - cols[None, :] + filled.mean()
        ms = (res ** 2).sum() / (n_obs - 10 - 4 + 1)
        assert h > 1 / 10  # empty cells make the name means noisier than 1/T
        assert r.variance_components[key] == pytest.approx(max(0.0, cols.var(ddof=1) - h * ms) / 4)


def test_names_confounded_with_templates_give_nan_with_a_note_not_an_error():
    # every template shows one name of each group: no name contrast is estimable within templates
    t = np.repeat(np.arange(6), 2)
    name = np.array([f"a{i % 3}" if k == 0 else f"b{i % 3}" for i in range(6) for k in range(2)])
    group = np.tile(["a", "b"], 6)
    v = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    r = crossed_difference(v, t, name, group, groups=("a", "b"), names="random")
    assert np.isnan(r.se) and np.isnan(r.pvalue) and "cannot be told apart" in r.note
    rf = crossed_difference(v, t, name, group, groups=("a", "b"), names="fixed")
    assert np.isfinite(rf.se) and rf.estimate == pytest.approx(np.mean(v[0::2] - v[1::2]))
    assert np.isnan(names_heterogeneity([np.array([[1.0, np.nan], [np.nan, 0.0], [1.0, np.nan]])]).pvalue)


def _hall_reference(d, level):
    """Hall's (1992) transformation inverted by root finding, with scipy's unbiased skewness (G1)."""
    from scipy import optimize

    t = d.size
    se = d.std(ddof=1) / np.sqrt(t)
    lam = stats.skew(d, bias=False) / np.sqrt(t)
    g = lambda x: x + lam * (x * x / 3 + 1 / 6) + lam ** 2 * x ** 3 / 27  # noqa: E731
    q = stats.t.ppf(0.5 + level / 2, t - 1)
    t_hi = optimize.brentq(lambda x: g(x) - q, -100, 100, xtol=1e-14)
    t_lo = optimize.brentq(lambda x: g(x) + q, -100, 100, xtol=1e-14)
    return d.mean() - se * t_hi, d.mean() - se * t_lo, lam


@pytest.mark.parametrize("seed, skewed", [(0, "right"), (1, "left"), (2, "right")])
def test_skew_corrected_interval_is_halls_transformation_inverted(seed, skewed):
    rng = np.random.default_rng(seed)
    e = rng.exponential(1.0, (15, 3))
    a = e if skewed == "right" else -e
    b = rng.normal(0, 0.2, (15, 3))
    r = crossed_from_cells(a, b, names="fixed")
    d = a.mean(axis=1) - b.mean(axis=1)
    lo, hi, lam = _hall_reference(d, 0.90)
    assert r.skewness == pytest.approx(lam, rel=1e-12)
    assert tuple(r.skew_corrected_interval(0.90)) == pytest.approx((lo, hi), rel=1e-10)
    # right-skewed differences: the t is left-skewed and the upper limit moves out (Hall 1992)
    t_ci = r.confidence_interval(0.90)
    assert (hi > t_ci.high) == (lam > 0)
    eq = r.equivalence_interval(0.90)
    assert eq.low == pytest.approx(min(lo, t_ci.low)) and eq.high == pytest.approx(max(hi, t_ci.high))
    assert eq.low <= t_ci.low and eq.high >= t_ci.high


def test_skewness_of_names_random_uses_the_full_standard_error():
    df = _audit(seed=5, name_sd=1.0)
    r = crossed_difference(df.v, df.t, df.n, df.g, groups=("a", "b"), names="random", pool=None)
    assert r.skewness == pytest.approx(stats.kstat(r.template_differences, 3) / 12 ** 2 / r.se ** 3, rel=1e-12)
    fixed = crossed_difference(df.v, df.t, df.n, df.g, groups=("a", "b"), names="fixed")
    assert abs(r.skewness) < abs(fixed.skewness)  # a larger se (the names' share) dilutes the template skew


def test_no_skewness_leaves_the_t_interval_and_two_templates_have_none():
    a = np.array([[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]])  # template means 0.5, 1.5, 2.5
    b = np.zeros((3, 2)) + np.array([[0.5], [0.0], [-0.5]])
    sym = crossed_from_cells(a, b, names="fixed")  # D_t = 0, 1.5, 3: symmetric, k3 = 0
    assert sym.skewness == pytest.approx(0.0, abs=1e-12)
    assert tuple(sym.equivalence_interval(0.9)) == pytest.approx(tuple(sym.confidence_interval(0.9)))
    two = crossed_from_cells(a[:2], b[:2] + np.array([[0.3], [0.0]]), names="fixed")  # k3 needs 3 templates
    assert np.isnan(two.skewness) and tuple(two.equivalence_interval(0.9)) == tuple(two.confidence_interval(0.9))


def test_names_from_keeps_the_source_mean_squares_in_satterthwaite_df():
    # the name components of another inference (names_from) enter the df through that inference's own
    # mean squares: S_N^2 / n with n - 1 df minus MS_res / (T n) with (T - 1)(n - 1) df (balanced), each
    # taken here from statsmodels' two-way ANOVA of the source's cells (Satterthwaite 1946 by hand)
    rng = np.random.default_rng(8)
    t, k = 12, 5
    src = [rng.normal(0, 1, t)[:, None] + rng.normal(0, 1.5, k)[None, :] + rng.normal(0, 0.5, (t, k))
           for _ in range(2)]
    own = [s + rng.normal(0, 0.8, (t, k)) for s in src]
    r_src = crossed_from_cells(src[0], src[1], pool=None)
    r = crossed_from_cells(own[0], own[1], names_from=r_src)
    terms = [(1 / t, np.var(own[0].mean(1) - own[1].mean(1), ddof=1), t - 1)]
    for m in src:
        data = pd.DataFrame([(i, j, m[i, j]) for i in range(t) for j in range(k)], columns=["t", "n", "v"])
        aov = anova_lm(smf.ols("v ~ C(t) + C(n)", data).fit())
        ms_n, ms_res = aov.loc["C(n)", "mean_sq"], aov.loc["Residual", "mean_sq"]
        assert aov.loc["Residual", "df"] == (t - 1) * (k - 1)
        # the ANOVA's name mean square is T S_N^2
        terms += [(1 / (t * k), ms_n, k - 1), (-1 / (t * k), ms_res, (t - 1) * (k - 1))]
    total = sum(c * m for c, m, _ in terms)
    df = total ** 2 / sum((c * m) ** 2 / d for c, m, d in terms)
    assert r.se ** 2 == pytest.approx(total)
    assert r.df == pytest.approx(df)
    # a single (component, n - 1) term per group (before) overstated it
    comp = r_src.variance_components
    single = total ** 2 / ((terms[0][0] * terms[0][1]) ** 2 / (t - 1)
                           + (comp["names_a"] ** 2 + comp["names_b"] ** 2) / (k - 1))
    assert r.df < single
    assert r.pvalue == pytest.approx(2 * stats.t.sf(abs(r.estimate) / r.se, df))
