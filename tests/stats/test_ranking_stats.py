"""Ranking-design statistics (fairpair.stats._ranking) against scipy, statsmodels and hand formulas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import AnovaRM, anova_lm
from statsmodels.stats.contingency_tables import cochrans_q

from fairpair.stats import (
    FOUR_FIFTHS,
    crossed_mean,
    position_effect,
    ratio_to_best,
    selection_ratio,
)
from fairpair.stats._ranking import crossed_k_test, matched_table, paired_difference


def _sets(seed=0, t=10, p=5, r=2, k=3, worth=(0.8, 0.0, -0.3), sd_t=0.4, sd_p=0.5):
    """Matched sets of a ranking design (Plackett-Luce by Gumbel-max): top and rank tables by group and by slot."""
    rng = np.random.default_rng(seed)
    ti, ri, pi = (a.ravel() for a in np.meshgrid(np.arange(t), np.arange(r), np.arange(p), indexing="ij"))
    m = ti.size
    u = rng.normal(0, sd_t, (t, k))
    b = rng.normal(0, sd_p, (p, k))
    logw = np.asarray(worth)[None, :] + u[ti] + b[pi] + rng.gumbel(size=(m, k))
    rank = np.argsort(np.argsort(-logw, axis=1), axis=1) + 1.0
    top = (rank == 1).astype(float)
    order = (ti + ri + pi) % k
    slot = (np.arange(k)[None, :] + order[:, None]) % k
    slot_top = np.zeros_like(top)
    slot_rank = np.zeros_like(rank)
    np.put_along_axis(slot_top, slot, top, axis=1)
    np.put_along_axis(slot_rank, slot, rank, axis=1)
    return dict(template=ti, name=pi, top=top, rank=rank, slot_top=slot_top, slot_rank=slot_rank)


def _template_means(v, template):
    return pd.Series(v).groupby(np.asarray(template)).mean().to_numpy()


def test_crossed_mean_names_fixed_is_the_one_sample_t_on_template_means():
    d = _sets()
    v = d["top"][:, 0]
    r = crossed_mean(v, d["template"], d["name"], names="fixed")
    tm = _template_means(v, d["template"])  # balanced: the mean of name cells = the template mean
    ref = stats.ttest_1samp(tm, 0.0)
    assert r.estimate == pytest.approx(tm.mean())
    assert r.se == pytest.approx(stats.sem(tm)) and r.df == pytest.approx(tm.size - 1)
    assert tuple(r.confidence_interval(0.9)) == pytest.approx(tuple(ref.confidence_interval(0.9)))


def test_crossed_mean_names_random_by_hand_anova():
    d = _sets(seed=5, sd_p=1.2)
    v = d["rank"][:, 1]
    r = crossed_mean(v, d["template"], d["name"], names="random", pool=None)
    cell = pd.DataFrame({"t": d["template"], "n": d["name"], "v": v}).groupby(["t", "n"]).v.mean().unstack()
    m = cell.to_numpy()
    t, n = m.shape
    rows, cols, grand = m.mean(1), m.mean(0), m.mean()
    s2t, s2n = rows.var(ddof=1), cols.var(ddof=1)
    ms = ((m - rows[:, None] - cols[None, :] + grand) ** 2).sum() / ((t - 1) * (n - 1))
    comp = (s2n - ms / t) / n
    assert comp > 0
    var = s2t / t + comp
    terms = [(1 / t, s2t, t - 1), (1 / n, s2n, n - 1), (-1 / (n * t), ms, (t - 1) * (n - 1))]
    df = var ** 2 / sum((c * x) ** 2 / f for c, x, f in terms)
    assert r.estimate == pytest.approx(grand) and r.se ** 2 == pytest.approx(var) and r.df == pytest.approx(df)
    lo, hi = r.confidence_interval(0.95)
    q = stats.t.ppf(0.975, df) * np.sqrt(var)
    assert (lo, hi) == pytest.approx((grand - q, grand + q))


def test_crossed_mean_pools_names_when_the_f_pretest_is_not_significant():
    for seed in range(4):
        d = _sets(seed=seed, sd_p=0.0)
        v = d["top"][:, 0]
        r = crossed_mean(v, d["template"], d["name"], names="random")
        m = pd.DataFrame({"t": d["template"], "n": d["name"], "v": v}).groupby(["t", "n"]).v.mean().unstack().to_numpy()
        t, n = m.shape
        rows, cols = m.mean(1), m.mean(0)
        ms = ((m - rows[:, None] - cols[None, :] + m.mean()) ** 2).sum() / ((t - 1) * (n - 1))
        p = stats.f.sf(t * cols.var(ddof=1) / ms, n - 1, (t - 1) * (n - 1))
        if p > 0.25:
            assert r.variance_components["names"] == 0 and "pooled" in r.note
        else:
            assert r.variance_components["names"] == pytest.approx(max(0.0, (cols.var(ddof=1) - ms / t) / n))


def test_crossed_mean_flags_one_name_and_no_values():
    d = _sets(seed=1)
    one = crossed_mean(d["top"][:, 0], d["template"], None, names="random")
    assert np.isnan(one.se) and "one name" in one.note
    assert np.isnan(crossed_mean([np.nan, np.nan], [0, 1]).estimate)


def test_paired_difference_is_the_crossed_mean_of_per_set_differences():
    d = _sets(seed=2)
    x, y = d["top"][:, 0], d["top"][:, 1]
    r = paired_difference(x, y, d["template"], d["name"], names="fixed")
    tm = _template_means(x - y, d["template"])
    ref = stats.ttest_1samp(tm, 0.0)
    assert r.estimate == pytest.approx(tm.mean()) and r.estimate / r.se == pytest.approx(ref.statistic)
    with pytest.raises(ValueError, match="one value per set"):
        paired_difference([1.0], [1.0, 0.0], [0, 1])


def test_selection_ratio_delta_method_by_hand():
    d = _sets(seed=3, t=12)
    top = d["top"]
    r = selection_ratio(top, d["template"], d["name"], columns=(1, 0), names="fixed")
    ra, rb = top[:, 1].mean(), top[:, 0].mean()
    lin = _template_means(top[:, 1] / ra - top[:, 0] / rb, d["template"])
    se = stats.sem(lin)
    assert r.ratio == pytest.approx(ra / rb) and r.log_se == pytest.approx(se) and r.df == pytest.approx(11)
    q = stats.t.ppf(0.975, 11)
    assert tuple(r.confidence_interval(0.95)) == pytest.approx((ra / rb * np.exp(-q * se), ra / rb * np.exp(q * se)))
    z = (np.log(ra / rb) - np.log(0.8)) / se
    assert r.pvalue_below(0.8) == pytest.approx(stats.t.cdf(z, 11))


def test_selection_ratio_undefined_when_a_rate_is_zero():
    top = np.array([[1.0, 0.0]] * 6)
    r = selection_ratio(top, [0, 0, 1, 1, 2, 2], None, columns=(1, 0), names="fixed")
    assert r.ratio == 0.0 and np.isnan(r.confidence_interval().low) and "never selected" in r.note
    r = selection_ratio(top, [0, 0, 1, 1, 2, 2], None, columns=(0, 1), names="fixed")
    assert np.isnan(r.ratio)
    with pytest.raises(ValueError, match="distinct"):
        selection_ratio(top, [0] * 6, None, columns=(0, 0))


def _log_ci(top, template, a, b, level):
    ra, rb = top[:, a].mean(), top[:, b].mean()
    lin = _template_means(top[:, a] / ra - top[:, b] / rb, template)
    q = stats.t.ppf(0.5 + level / 2, lin.size - 1) * stats.sem(lin)
    return ra / rb * np.exp(-q), ra / rb * np.exp(q)


def test_ratio_to_best_is_hsu_bonferroni_over_the_candidates():
    d = _sets(seed=4, t=12, worth=(0.0, 0.6, 0.2))
    top, tm = d["top"], d["template"]
    res = ratio_to_best(top, tm, d["name"], labels=["a", "b", "c"], names="fixed", confidence_level=0.95)
    assert [r.reference for r in res] == ["b"] * 3  # the most selected group, from the data
    for j, r in enumerate(res):
        others = [h for h in range(3) if h != j]
        lows = [_log_ci(top, tm, j, h, 0.95)[0] for h in others]
        highs = [_log_ci(top, tm, j, h, 1 - 0.05 / 2)[1] for h in others]
        assert r.ci.low == pytest.approx(min(1.0, min(lows))) and r.ci.high == pytest.approx(min(1.0, min(highs)))
        assert r.ratio == pytest.approx(top[:, j].mean() / top[:, 1].mean())
    # a fixed reference: the plain log-ratio interval
    fixed = ratio_to_best(top, tm, d["name"], labels=["a", "b", "c"], reference="c", names="fixed")
    assert fixed[2].ratio == 1.0 and fixed[2].note == "the reference group"
    assert tuple(fixed[0].ci) == pytest.approx(_log_ci(top, tm, 0, 2, 0.95))
    with pytest.raises(ValueError, match="not a group"):
        ratio_to_best(top, tm, labels=["a", "b", "c"], reference="z")
    assert FOUR_FIFTHS == 0.8


def test_ratio_below_four_fifths_p_value_matches_interval():
    d = _sets(seed=6, t=20, r=4, worth=(1.2, 0.0, 0.0), sd_t=0.1, sd_p=0.1)
    res = ratio_to_best(d["top"], d["template"], d["name"], names="fixed")
    for r in res[1:]:
        assert (r.pvalue_below < 0.05) == (r.ci.high < 0.8)
    assert res[1].ci.high < 0.8  # a strong planted bias is established below the four-fifths line


def test_crossed_k_test_names_fixed_equals_repeated_measures_anova():
    d = _sets(seed=7)
    res = crossed_k_test(d["rank"], d["template"], d["name"], names="fixed")
    tg = pd.DataFrame([(t, g, v) for g in range(3) for t, v in enumerate(_template_means(d["rank"][:, g],
                                                                                         d["template"]))],
                      columns=["t", "g", "v"])
    ref = AnovaRM(tg, "v", "t", within=["g"]).fit().anova_table
    assert res.statistic == pytest.approx(ref["F Value"].iloc[0]) and res.pvalue == pytest.approx(ref["Pr > F"].iloc[0])
    assert (res.df_num, res.df_den) == (2, 18)


def test_crossed_k_test_quasi_f_from_statsmodels_mean_squares():
    d = _sets(seed=8, r=1)
    res = crossed_k_test(d["top"], d["template"], d["name"], names="random")
    sets = enumerate(zip(d["template"], d["name"], strict=True))
    long = pd.DataFrame([(t, p, c, d["top"][i, c]) for i, (t, p) in sets for c in range(3)],
                        columns=["t", "p", "c", "v"])
    fit = smf.ols("v ~ C(c) + C(t) + C(p) + C(c):C(t) + C(c):C(p) + C(t):C(p)", data=long).fit()
    tab = anova_lm(fit, typ=1)
    ms = tab["sum_sq"] / tab["df"]
    dfs = tab["df"]
    num = ms["C(c)"] + ms["Residual"]
    den = ms["C(c):C(t)"] + ms["C(c):C(p)"]
    d1 = num ** 2 / (ms["C(c)"] ** 2 / dfs["C(c)"] + ms["Residual"] ** 2 / dfs["Residual"])
    d2 = den ** 2 / (ms["C(c):C(t)"] ** 2 / dfs["C(c):C(t)"] + ms["C(c):C(p)"] ** 2 / dfs["C(c):C(p)"])
    assert res.statistic == pytest.approx(num / den)
    assert (res.df_num, res.df_den) == pytest.approx((d1, d2))
    assert res.pvalue == pytest.approx(stats.f.sf(num / den, d1, d2))


def test_position_effect_against_scipy_and_statsmodels():
    d = _sets(seed=9)
    pe = position_effect(d["slot_top"], d["slot_rank"], d["template"], d["name"], names="fixed")
    for j, s in enumerate(pe.slots):
        assert s.slot == j + 1 and s.top_rate.estimate == pytest.approx(d["slot_top"][:, j].mean())
        assert s.mean_rank.estimate == pytest.approx(d["slot_rank"][:, j].mean())
    ref = cochrans_q(d["slot_top"])
    assert pe.cochran.statistic == pytest.approx(ref.statistic) and pe.cochran.pvalue == pytest.approx(ref.pvalue)
    fr = stats.friedmanchisquare(*d["slot_rank"].T)
    assert pe.friedman.statistic == pytest.approx(fr.statistic) and pe.friedman.pvalue == pytest.approx(fr.pvalue)
    with pytest.raises(ValueError, match="same shape"):
        position_effect(d["slot_top"], d["slot_rank"][:, :2], d["template"])


def test_matched_table_refuses_two_entries_per_cell():
    table, sets, cols = matched_table([1, 0, 0, 1], ["s1", "s1", "s2", "s2"], ["a", "b", "a", "b"])
    assert table.tolist() == [[1, 0], [0, 1]] and list(cols) == ["a", "b"]
    with pytest.raises(ValueError, match="two entries"):
        matched_table([1, 0], ["s1", "s1"], ["a", "a"])


def test_the_low_rank_fill_equals_the_eigendecomposition():
    """Many name sets over few templates (one per request): the Woodbury solve gives the pseudo-inverse's
    name effects and trace, connected or not (issue 29: crossed_mean was cubic in requests)."""
    from fairpair.stats._crossed import _names_low_rank

    rng = np.random.default_rng(7)
    for t, n, shape in ((3, 60, "random"), (4, 80, "nested"), (2, 40, "random")):
        x = rng.normal(size=(t, n))
        if shape == "nested":  # every name in one template only: the graph splits into one part per template
            keep = np.zeros((t, n), bool)
            keep[rng.integers(0, t, n), np.arange(n)] = True
        else:
            keep = rng.random((t, n)) < 0.4
            keep[0, :] = True
        inc = keep.astype(float)
        r, k = inc.sum(1), inc.sum(0)
        xz = np.where(keep, x, 0.0)
        w = inc / r[:, None]
        q = xz.sum(0) - w.T @ xz.sum(1)
        c_mat = np.diag(k) - inc.T @ w
        pinv = np.linalg.pinv(c_mat)  # SVD-based Moore-Penrose inverse
        c, trace, ident = _names_low_rank(inc, r, k, q)
        np.testing.assert_allclose(c, pinv @ q, atol=1e-9)
        assert trace == pytest.approx(np.trace(pinv), rel=1e-9) and ident


def test_stratified_k_test_one_template_is_hotellings_t2_from_statsmodels():
    """Templates fixed, one posting: the test of equal columns is Hotelling's one-sample T^2 of the contrasts."""
    from statsmodels.stats.multivariate import test_mvmean

    from fairpair.stats import stratified_k_test

    d = _sets(seed=11, t=1, p=40, r=5, k=4, worth=(0.4, 0.0, 0.0, -0.2))
    for table in (d["top"], d["rank"]):
        res = stratified_k_test(table, d["template"])
        ref = test_mvmean(table[:, :-1] - table[:, -1:], np.zeros(3))
        assert res.statistic == pytest.approx(ref.statistic) and res.pvalue == pytest.approx(ref.pvalue)
        assert (res.df_num, res.df_den) == (3, 200 - 3)


def test_stratified_k_test_several_templates_is_t2_with_the_within_template_covariance():
    """Equal sets per template: W = T^2(statsmodels, on the data centred within templates) * (N - T) / (N - 1),
    F = (nu - q + 1) W / (nu q) with nu = N - T; a fair design holds its level at the F's tail."""
    from statsmodels.stats.multivariate import test_mvmean

    from fairpair.stats import set_k_test, stratified_k_test

    d = _sets(seed=12, t=4, p=25, r=4, k=3, sd_t=0.6)
    top, tm = d["top"], d["template"]
    n, nt = top.shape[0], 4
    means = np.stack([top[tm == t].mean(axis=0) for t in range(nt)])
    z = top - means[tm] + means.mean(axis=0)
    ref = test_mvmean(z[:, :-1] - z[:, -1:], np.zeros(2))
    w = ref.t2 * (n - nt) / (n - 1)
    nu, q = n - nt, 2
    res = stratified_k_test(top, tm)
    assert res.statistic == pytest.approx((nu - q + 1) * w / (nu * q))
    assert res.pvalue == pytest.approx(stats.f.sf(res.statistic, q, nu - q + 1))
    assert set_k_test(top, tm, d["name"], templates="fixed") == res
    assert set_k_test(top, tm, d["name"], names="fixed") == crossed_k_test(top, tm, d["name"], names="fixed")
    none = stratified_k_test(np.tile([1.0, 0.0, 0.0], (8, 1)), np.zeros(8))
    assert np.isnan(none.pvalue) and none.note == "no variance between the sets"


def test_position_effect_with_templates_fixed_uses_the_stratified_mean():
    from fairpair.stats import set_mean, stratified_k_test

    d = _sets(seed=13, t=4, p=20, r=5, k=3)
    pe = position_effect(d["slot_top"], d["slot_rank"], d["template"], d["name"], templates="fixed")
    for j, s in enumerate(pe.slots):
        ref = set_mean(d["slot_top"][:, j], d["template"], templates="fixed")
        assert (s.top_rate.estimate, s.top_rate.se) == pytest.approx((ref.estimate, ref.se))
        assert s.top_rate.estimate == pytest.approx(_template_means(d["slot_top"][:, j], d["template"]).mean())
    assert pe.top_test == stratified_k_test(d["slot_top"], d["template"])


def test_ratio_interval_at_another_level_is_the_same_construction():
    d = _sets(seed=4, t=12, worth=(0.0, 0.6, 0.2))
    at95 = ratio_to_best(d["top"], d["template"], d["name"], names="fixed", confidence_level=0.95)
    at99 = ratio_to_best(d["top"], d["template"], d["name"], names="fixed", confidence_level=0.99)
    for a, b in zip(at95, at99, strict=True):
        assert tuple(a.confidence_interval(0.99)) == pytest.approx(tuple(b.ci))
    fixed = ratio_to_best(d["top"], d["template"], d["name"], names="fixed", reference=2)
    assert tuple(fixed[0].confidence_interval(0.9)) == pytest.approx(_log_ci(d["top"], d["template"], 0, 2, 0.9))


def _drawn_names(seed, n=240, k=3, pool=6, templates=2, sd=0.7):
    """Sets whose groups' names are drawn per set from short lists (a name recurs in sets with other names)."""
    rng = np.random.default_rng(seed)
    names = rng.integers(0, pool, size=(n, k))
    tmpl = rng.integers(0, templates, size=n)
    logw = rng.normal(0, sd, (pool, k))[names, np.arange(k)] + rng.gumbel(size=(n, k))
    top = (logw == logw.max(axis=1, keepdims=True)).astype(float)
    return top, tmpl, names


def test_stratified_k_test_with_shared_names_by_its_formula():
    """Templates fixed, names drawn per set: V = psd(V_strat + V_shared), V_shared by enumerating every pair
    (sum_t Q_t / (1 - H_t) + Q_x - V_strat, outer products), nu = min(sum_t (n_t - 1), names a group - 1)
    (CGM); names fixed or names never shared: the plain stratified F."""
    from fairpair.stats import set_k_test, stratified_k_test
    from fairpair.stats._sharednames import name_clusters

    top, tmpl, names = _drawn_names(5)
    d = top[:, :-1] - top[:, -1:]
    n, big_t, q = d.shape[0], 2, 2
    nt = np.bincount(tmpl).astype(float)
    w = 1.0 / (big_t * nt[tmpl])
    mean_t = np.stack([d[tmpl == t].mean(axis=0) for t in range(big_t)])
    mu = mean_t.mean(axis=0)
    a = w[:, None] * (d - mean_t[tmpl])
    share = (names[:, None, :] == names[None, :, :]).any(axis=2)
    same = tmpl[:, None] == tmpl[None, :]
    v0 = sum(np.cov(d[tmpl == t], rowvar=False) / (nt[t] * big_t ** 2) for t in range(big_t))
    vx = a.T @ (share & ~same) @ a - v0
    for t in range(big_t):
        m = tmpl == t
        h = w[m] @ share[np.ix_(m, m)] @ w[m] / w[m].sum() ** 2
        vx += a[m].T @ share[np.ix_(m, m)] @ a[m] / (1.0 - h)
    lam, u = np.linalg.eigh(v0 + vx)
    v = u @ np.diag(np.maximum(lam, 0)) @ u.T
    nu = min(n - big_t, 6 - 1)  # CGM: the fewest names of a group minus one
    wald = float(mu @ np.linalg.inv(v) @ mu)
    nc = name_clusters(tmpl, names)
    res = stratified_k_test(top, tmpl, nc)
    assert res.statistic == pytest.approx((nu - q + 1) * wald / (nu * q), rel=1e-8)
    assert (res.df_num, res.df_den) == pytest.approx((q, nu - q + 1), rel=1e-8)
    assert res.pvalue == pytest.approx(stats.f.sf(res.statistic, q, nu - q + 1), rel=1e-8)
    assert nu < n - big_t  # the shared names cost degrees of freedom
    assert "Cameron, Gelbach & Miller" in res.method
    assert set_k_test(top, tmpl, nc, templates="fixed") == res
    plain = stratified_k_test(top, tmpl)
    assert stratified_k_test(top, tmpl, nc, names="fixed") == plain
    unique = name_clusters(tmpl, np.arange(n * 3).reshape(n, 3))  # every name once: nothing shared
    assert stratified_k_test(top, tmpl, unique) == plain


def test_multiway_k_test_against_statsmodels_two_way_covariance():
    """Templates random, names drawn per set (not crossed): Hotelling's F of the mean of the template means with
    statsmodels' uncorrected two-way (template, name) cluster covariance of the stacked contrasts over 1 - H,
    nu = min(T, names) - 1; set_k_test routes there (the slots of position_effect take the template means)."""
    import statsmodels.api as sm

    from fairpair.stats import set_k_test
    from fairpair.stats._ranking import multiway_k_test
    from fairpair.stats._sharednames import name_clusters

    top, tmpl, names = _drawn_names(7, n=400, k=3, pool=9, templates=12)
    one = names[:, :1]  # one group's names clustered: the CGM two-way case statsmodels computes
    d = top[:, :-1] - top[:, -1:]
    n, q = d.shape
    nt = np.bincount(tmpl).astype(float)
    w = 1.0 / (nt.size * nt[tmpl])
    x = np.kron(np.eye(q), np.ones((n, 1)))
    groups = np.column_stack([np.tile(tmpl, q), np.tile(one[:, 0], q)])
    fit = sm.WLS(d.T.ravel(), x, weights=np.tile(w, q)).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False})
    share = (tmpl[:, None] == tmpl[None, :]) | (one == one.T)
    cov = fit.cov_params() / (1.0 - float(w @ share @ w))
    lam, u = np.linalg.eigh(cov)
    cov = u @ np.diag(np.maximum(lam, 0)) @ u.T
    nu = min(12, 9) - 1
    wald = float(fit.params @ np.linalg.pinv(cov) @ fit.params)
    res = multiway_k_test(top, name_clusters(tmpl, one))
    assert res.statistic == pytest.approx((nu - q + 1) * wald / (nu * q), rel=1e-8)
    assert (res.df_num, res.df_den) == (q, nu - q + 1)
    nc = name_clusters(tmpl, names)  # all three groups' names: almost every name set new, not crossed
    assert not nc.crossed
    res = multiway_k_test(top, nc)
    assert set_k_test(top, tmpl, nc) == res and (res.df_num, res.df_den) == (2, 7)
    fixed = set_k_test(top, tmpl, nc, names="fixed")  # names fixed: the template means only
    assert fixed == crossed_k_test(top, tmpl, None, names="fixed")
    # slots: a name's effect on a slot's value cancels over the slots it sits in; the template means are the units
    pe = position_effect(top, np.where(top == 1, 1.0, 2.0), tmpl, nc)
    assert pe.top_test == fixed
    means = pd.Series(top[:, 0]).groupby(tmpl).mean()
    assert pe.slots[0].top_rate.estimate == pytest.approx(means.mean())
    assert pe.slots[0].top_rate.se == pytest.approx(means.std(ddof=1) / np.sqrt(12)) and pe.slots[0].top_rate.df == 11
