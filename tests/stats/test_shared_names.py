"""The shared-name variance of the ranking design (stats._sharednames) against statsmodels and exact enumeration."""

import numpy as np
import pytest
import statsmodels.api as sm

from fairpair.stats._sharednames import multiway_cluster_variance, name_clusters, shared_name_variance


def _draw(seed, n=120, d=3, pool=6, templates=4):
    rng = np.random.default_rng(seed)
    names = rng.integers(0, pool, size=(n, d))
    tmpl = rng.integers(0, templates, size=n)
    v = rng.normal(size=n) + names @ rng.normal(size=d) * 0.1
    return v, tmpl, names


def _share_any(names):
    """n x n: the two sets share at least one group's name (the exact enumeration of every pair)."""
    return (names[:, None, :] == names[None, :, :]).any(axis=2)


@pytest.mark.parametrize("groups", [1, 2])
def test_multiway_matches_statsmodels_cluster_covariance(groups):
    v, tmpl, names = _draw(3)
    g = names[:, 0] if groups == 1 else names[:, :2]
    fit = sm.OLS(v, np.ones((v.size, 1))).fit(cov_type="cluster", cov_kwds={"groups": g, "use_correction": False})
    scores = (v - v.mean()) / v.size
    assert multiway_cluster_variance(scores, g) == pytest.approx(float(fit.cov_params()[0, 0]), rel=1e-10)


def test_multiway_three_dimensions_by_enumeration():
    v, _t, names = _draw(5, d=4, pool=5)
    s = (v - v.mean()) / v.size
    assert multiway_cluster_variance(s, names) == pytest.approx(float(s @ _share_any(names) @ s), rel=1e-10)


def _weights(v, tmpl):
    nt = np.bincount(tmpl).astype(float)
    big_t = int((nt > 0).sum())
    mean_t = np.bincount(tmpl, weights=v) / np.maximum(nt, 1)
    return (v - mean_t[tmpl]) / (big_t * nt[tmpl]), nt, big_t, mean_t


def test_templates_random_term_by_enumeration():
    v, tmpl, names = _draw(7, n=150, d=3, pool=4)
    a, *_ = _weights(v, tmpl)
    nameset = np.unique(names, axis=0, return_inverse=True)[1].ravel()
    pick = _share_any(names) & (tmpl[:, None] != tmpl[None, :]) & (nameset[:, None] != nameset[None, :])
    res = shared_name_variance(v, name_clusters(tmpl, names), templates="random")
    assert res.variance == pytest.approx(float(a @ pick @ a), rel=1e-10)
    assert res.n_pairs == int(pick.sum())


def test_templates_fixed_term_by_enumeration():
    v, tmpl, names = _draw(11, n=150, d=3, pool=5)
    a, nt, big_t, mean_t = _weights(v, tmpl)
    w = 1.0 / (big_t * nt[tmpl])
    share = _share_any(names)  # diagonal included
    same = tmpl[:, None] == tmpl[None, :]
    q_t = np.array([a[tmpl == t] @ share[np.ix_(tmpl == t, tmpl == t)] @ a[tmpl == t] for t in range(nt.size)])
    h_t = np.array([w[tmpl == t] @ share[np.ix_(tmpl == t, tmpl == t)] @ w[tmpl == t] / w[tmpl == t].sum() ** 2
                    for t in range(nt.size)])
    q_x = float(a @ (share & ~same) @ a)
    s2 = np.array([v[tmpl == t].var(ddof=1) for t in range(nt.size)])
    strat = float((s2 / nt / big_t ** 2).sum())
    res = shared_name_variance(v, name_clusters(tmpl, names), templates="fixed")
    assert res.variance == pytest.approx(float((q_t / (1 - h_t)).sum()) + q_x - strat, rel=1e-10)


def test_templates_fixed_without_shared_names_is_the_stratified_variance():
    """Every name once: Q / (1 - H) is sum_t s_t^2 / (n_t T^2) exactly, so nothing is added."""
    rng = np.random.default_rng(8)
    tmpl = np.repeat(np.arange(3), [20, 30, 50])
    names = np.arange(300).reshape(100, 3)
    res = shared_name_variance(rng.normal(size=100), name_clusters(tmpl, names), templates="fixed")
    assert res.variance == pytest.approx(0.0, abs=1e-15)


def test_names_repeating_together_add_nothing():
    """The ranking design's name positions: every group's p-th name together, so the name set is the unit."""
    rng = np.random.default_rng(2)
    pos = rng.integers(0, 5, size=200)
    names = np.column_stack([pos, pos, pos, pos])
    tmpl = rng.integers(0, 10, size=200)
    nc = name_clusters(tmpl, names)
    assert nc.beyond_sets == ()  # every term cancels against the name-set partition
    assert shared_name_variance(rng.normal(size=200), nc).variance == 0.0


def test_missing_values_and_absent_groups():
    v, tmpl, names = _draw(13, n=100, d=3, pool=4)
    v[::7] = np.nan
    names[::5, 2] = -1  # the prompt lacks group 3's candidate
    ok = ~np.isnan(v)
    a, *_ = _weights(v[ok], tmpl[ok])
    n2 = names[ok]
    share = (n2[:, None, :] == n2[None, :, :]) & (n2[:, None, :] >= 0)
    nameset = np.unique(names, axis=0, return_inverse=True)[1].ravel()[ok]
    pick = share.any(axis=2) & (tmpl[ok][:, None] != tmpl[ok][None, :]) & (nameset[:, None] != nameset[None, :])
    res = shared_name_variance(v, name_clusters(tmpl, names), templates="random")
    assert res.variance == pytest.approx(float(a @ pick @ a), rel=1e-10)
    with pytest.raises(ValueError, match="one value per set"):
        shared_name_variance(v[:-1], name_clusters(tmpl, names))


def test_multiway_mean_variance_against_statsmodels_and_enumeration():
    """The residual sum is statsmodels' uncorrected two-way cluster covariance (template x one group's names) of the
    WLS mean with weights 1 / (T n_t), and by exact enumeration with three name columns; the divisor is
    1 / (1 - H), H the sum of w_i w_j over the pairs sharing the template or a name."""
    from fairpair.stats._sharednames import multiway_mean_variance

    rng = np.random.default_rng(21)
    n = 160
    tmpl = rng.integers(0, 6, size=n)
    names = rng.integers(0, 9, size=(n, 1))
    v = rng.normal(size=n) + rng.normal(size=9)[names[:, 0]] + rng.normal(size=6)[tmpl]
    nt = np.bincount(tmpl).astype(float)
    w = 1.0 / (nt.size * nt[tmpl])
    fit = sm.WLS(v, np.ones((n, 1)), weights=w).fit(
        cov_type="cluster", cov_kwds={"groups": np.column_stack([tmpl, names[:, 0]]), "use_correction": False})
    res = multiway_mean_variance(v, name_clusters(tmpl, names))
    assert float(fit.params[0]) == pytest.approx(float((w * v).sum()))
    share = (tmpl[:, None] == tmpl[None, :]) | _share_any(names)
    assert res.correction == pytest.approx(1.0 / (1.0 - float(w @ share @ w)), rel=1e-10)
    assert res.variance / res.correction == pytest.approx(float(fit.cov_params()[0, 0]), rel=1e-10)
    assert res.df == 5.0  # min(6 templates, 9 names) - 1
    # three name dimensions: the residual sum by exact enumeration
    names3 = rng.integers(0, 5, size=(n, 3))
    res3 = multiway_mean_variance(v, name_clusters(tmpl, names3))
    share3 = (tmpl[:, None] == tmpl[None, :]) | _share_any(names3)
    a = w * (v - (w * v).sum())
    assert res3.variance == pytest.approx(float(a @ share3 @ a) / (1.0 - float(w @ share3 @ w)), rel=1e-10)


def test_multiway_one_way_balanced_is_cr1():
    """One dimension of G equal clusters: the divisor is CGM's G / (G - 1)."""
    from fairpair.stats._sharednames import multiway_mean_variance

    tmpl = np.repeat(np.arange(8), 5)
    names = np.arange(40).reshape(-1, 1)  # every name once: only the templates cluster
    res = multiway_mean_variance(np.random.default_rng(1).normal(size=40), name_clusters(tmpl, names))
    assert res.correction == pytest.approx(8 / 7)


# --- the matrix forms, for the tests over all groups and slots (stratified_k_test, multiway_k_test) ---


@pytest.mark.parametrize("groups", [1, 2])
def test_multiway_covariance_matches_statsmodels_cluster_covariance(groups):
    """The (q, q) meat: statsmodels' uncorrected one-way / two-way (CGM) cluster covariance of an OLS fit is
    bread @ meat @ bread with the scores x_i e_i."""
    from fairpair.stats._sharednames import multiway_cluster_covariance

    rng = np.random.default_rng(31)
    n = 150
    x = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    g = rng.integers(0, 7, size=(n, 2))
    y = x @ [1.0, 0.5, -0.3] + rng.normal(size=n) + rng.normal(size=7)[g[:, 0]]
    gg = g[:, 0] if groups == 1 else g
    fit = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": gg, "use_correction": False})
    bread = np.linalg.inv(x.T @ x)
    meat = multiway_cluster_covariance(x * fit.resid[:, None], gg)
    np.testing.assert_allclose(bread @ meat @ bread, fit.cov_params(), rtol=1e-9, atol=1e-15)
    with pytest.raises(ValueError, match="2-D"):
        multiway_cluster_covariance(np.ones(n), gg)


def _stacked_two_way(d, tmpl, name, w):
    """statsmodels' uncorrected two-way (template, name) cluster covariance of the q weighted means of the columns
    of d: a WLS of the stacked columns on their indicators, every set's rows in its clusters."""
    n, q = d.shape
    y = d.T.ravel()
    x = np.kron(np.eye(q), np.ones((n, 1)))
    groups = np.column_stack([np.tile(tmpl, q), np.tile(name, q)])
    fit = sm.WLS(y, x, weights=np.tile(w, q)).fit(cov_type="cluster",
                                                   cov_kwds={"groups": groups, "use_correction": False})
    return fit.params, fit.cov_params()


def test_multiway_mean_covariance_against_statsmodels_two_way():
    """Template x one group's names: the residual sum is statsmodels' two-way cluster covariance (CGM eq. 2.13) of
    the stacked weighted means, off-diagonal covariances included; with three name columns, exact enumeration of
    the outer products a_i a_j' over the pairs sharing the template or a name."""
    from fairpair.stats._sharednames import multiway_mean_covariance

    rng = np.random.default_rng(41)
    n, q = 180, 3
    tmpl = rng.integers(0, 6, size=n)
    names = rng.integers(0, 9, size=(n, 1))
    d = rng.normal(size=(n, q)) + rng.normal(size=(9, q))[names[:, 0]] + rng.normal(size=(6, q))[tmpl]
    nt = np.bincount(tmpl).astype(float)
    w = 1.0 / (nt.size * nt[tmpl])
    params, cov = _stacked_two_way(d, tmpl, names[:, 0], w)
    res = multiway_mean_covariance(d, name_clusters(tmpl, names))
    share = (tmpl[:, None] == tmpl[None, :]) | _share_any(names)
    assert res.correction == pytest.approx(1.0 / (1.0 - float(w @ share @ w)), rel=1e-10)
    np.testing.assert_allclose(params, (w[:, None] * d).sum(axis=0), rtol=1e-10)
    np.testing.assert_allclose(res.covariance / res.correction, cov, rtol=1e-9, atol=1e-15)
    names3 = rng.integers(0, 5, size=(n, 3))
    res3 = multiway_mean_covariance(d, name_clusters(tmpl, names3))
    share3 = (tmpl[:, None] == tmpl[None, :]) | _share_any(names3)
    a = w[:, None] * (d - (w[:, None] * d).sum(axis=0))
    np.testing.assert_allclose(res3.covariance, a.T @ share3 @ a / (1.0 - float(w @ share3 @ w)), rtol=1e-9)
    assert res3.df == 4.0  # min(6 templates, 5 names) - 1


def _fixed_by_enumeration(d, tmpl, names):
    """The templates-fixed shared-name covariance from its formula, every pair enumerated:
    sum_t Q_t / (1 - H_t) + Q_x - sum_t S_t / (n_t T^2) with outer products."""
    nt = np.bincount(tmpl).astype(float)
    big_t = nt.size
    mean_t = np.array([d[tmpl == t].mean(axis=0) for t in range(big_t)])
    w = 1.0 / (big_t * nt[tmpl])
    a = w[:, None] * (d - mean_t[tmpl])
    share = _share_any(names)
    same = tmpl[:, None] == tmpl[None, :]
    total = a.T @ (share & ~same) @ a
    for t in range(big_t):
        m = tmpl == t
        h = w[m] @ share[np.ix_(m, m)] @ w[m] / w[m].sum() ** 2
        total += a[m].T @ share[np.ix_(m, m)] @ a[m] / (1.0 - h)
        total -= np.cov(d[m], rowvar=False) / (nt[t] * big_t ** 2)
    return total


def test_shared_name_covariance_fixed_by_enumeration_and_its_quadratic_forms():
    from fairpair.stats._sharednames import shared_name_covariance

    rng = np.random.default_rng(43)
    n, q = 150, 3
    tmpl = rng.integers(0, 3, size=n)
    names = rng.integers(0, 6, size=(n, 4))
    d = rng.normal(size=(n, q)) + rng.normal(size=(6, q))[names[:, 0]]
    nc = name_clusters(tmpl, names)
    res = shared_name_covariance(d, nc, templates="fixed")
    np.testing.assert_allclose(res.covariance, _fixed_by_enumeration(d, tmpl, names), rtol=1e-9, atol=1e-15)
    c = np.array([0.3, -1.0, 2.0])  # any contrast: the scalar term of the pairwise verdicts
    assert float(c @ res.covariance @ c) == pytest.approx(
        _fixed_by_enumeration((d @ c)[:, None], tmpl, names)[0, 0], rel=1e-9)
    assert res.df == 5.0  # six names a group
    with pytest.raises(ValueError, match="2-D"):
        shared_name_covariance(d[:, 0], nc)


def test_psd_part_clips_negative_eigenvalues():
    from fairpair.stats._sharednames import psd_part

    m = np.array([[2.0, 0.0], [0.0, -1.0]])
    np.testing.assert_allclose(psd_part(m), [[2.0, 0.0], [0.0, 0.0]], atol=1e-15)
    good = np.array([[2.0, 0.5], [0.5, 1.0]])
    np.testing.assert_allclose(psd_part(good), good, rtol=1e-12)
