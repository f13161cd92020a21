"""Cochran's Q and Friedman against statsmodels/scipy; Holm and BH against multipletests."""

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import cochrans_q
from statsmodels.stats.multitest import multipletests

from fairpair.stats import adjust, benjamini_hochberg, cochran_q, friedman, holm, mcnemar


def _binary_table(seed):
    rng = np.random.default_rng(2000 + seed)
    n, k = int(rng.integers(10, 500)), int(rng.integers(2, 7))
    base = rng.random(n)[:, None]
    shift = rng.normal(0, 0.1, k)[None, :]
    return (rng.random((n, k)) < np.clip(base + shift, 0, 1)).astype(float)


@pytest.mark.parametrize("seed", range(24))
def test_cochran_q_matches_statsmodels(seed):
    table = _binary_table(seed)
    res = cochran_q(table)
    ref = cochrans_q(table)
    assert res.statistic == pytest.approx(ref.statistic, abs=1e-10, rel=1e-10)
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-10, rel=1e-10)
    assert res.df == ref.df == table.shape[1] - 1
    np.testing.assert_allclose(res.rates, table.mean(axis=0), atol=1e-14)


def test_cochran_q_two_groups_is_uncorrected_mcnemar():
    table = _binary_table(3)[:, :2]
    q = cochran_q(table)
    m = mcnemar(table[:, 0], table[:, 1], exact=False, correction=False)
    assert q.statistic == pytest.approx(m.statistic, abs=1e-10)
    assert q.pvalue == pytest.approx(m.pvalue, abs=1e-10)


def test_cochran_q_missing_rows_and_degenerate():
    table = np.array([[1, 1, 1], [0, 0, 0], [1, np.nan, 0], [1, 1, 1]])
    res = cochran_q(table)
    assert res.n == 3 and res.n_missing == 1
    assert res.statistic == 0.0 and res.pvalue == 1.0 and res.note == "no case varies across groups"
    empty = cochran_q(np.full((3, 3), np.nan))
    assert empty.n == 0 and np.isnan(empty.pvalue) and empty.note == "no complete cases"


def test_cochran_q_rejects_non_binary():
    with pytest.raises(ValueError, match="0/1"):
        cochran_q([[0, 2], [1, 1]])
    with pytest.raises(ValueError, match="at least 2"):
        cochran_q([[0], [1]])


@pytest.mark.parametrize("seed", range(24))
def test_friedman_matches_scipy(seed):
    rng = np.random.default_rng(3000 + seed)
    n, k = int(rng.integers(5, 300)), int(rng.integers(3, 7))
    table = rng.normal(0, 1, (n, k)) + rng.normal(0, 0.3, k) + rng.normal(0, 2, (n, 1))
    if seed % 2:
        table = np.round(table)  # ties
    res = friedman(table)
    ref = stats.friedmanchisquare(*table.T)
    assert res.statistic == pytest.approx(ref.statistic, abs=1e-10, rel=1e-10)
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-10, rel=1e-10)
    assert res.kendalls_w == pytest.approx(ref.statistic / (n * (k - 1)), abs=1e-12)
    np.testing.assert_allclose(res.mean_ranks, stats.rankdata(table, axis=1).mean(axis=0))


def test_friedman_constant_and_missing():
    table = np.array([[2.0, 2, 2], [5, 5, 5], [1, np.nan, 3]])
    res = friedman(table)
    assert res.n == 2 and res.n_missing == 1
    assert res.statistic == 0.0 and res.pvalue == 1.0 and res.note == "every case is constant across groups"
    with pytest.raises(ValueError, match="at least 3"):
        friedman(np.ones((4, 2)))


def _pvalues(seed):
    rng = np.random.default_rng(4000 + seed)
    m = int(rng.integers(1, 60))
    p = np.concatenate([rng.uniform(0, 1, m), rng.uniform(0, 0.01, int(rng.integers(0, 10)))])
    if seed % 4 == 0:
        p = np.round(p, 2)  # ties
    return rng.permutation(p)


@pytest.mark.parametrize("seed", range(24))
def test_holm_and_bh_match_multipletests(seed):
    p = _pvalues(seed)
    np.testing.assert_allclose(holm(p), multipletests(p, method="holm")[1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(benjamini_hochberg(p), multipletests(p, method="fdr_bh")[1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(adjust(p, "holm"), holm(p))
    np.testing.assert_array_equal(adjust(p, "none"), p)


def test_nan_passed_through_and_not_counted():
    p = np.array([0.01, np.nan, 0.04, 0.03, np.nan])
    out = holm(p)
    assert np.isnan(out[1]) and np.isnan(out[4])
    np.testing.assert_allclose(out[[0, 2, 3]], multipletests([0.01, 0.04, 0.03], method="holm")[1])
    out = benjamini_hochberg(p)
    np.testing.assert_allclose(out[[0, 2, 3]], multipletests([0.01, 0.04, 0.03], method="fdr_bh")[1])
    assert np.isnan(adjust([np.nan, np.nan])).all()


def test_shape_kept_and_errors():
    p = np.array([[0.01, 0.2], [0.03, 0.5]])
    assert holm(p).shape == (2, 2)
    np.testing.assert_allclose(holm(p).ravel(), multipletests(p.ravel(), method="holm")[1])
    with pytest.raises(ValueError, match="'holm', 'bh', 'none'"):
        adjust([0.1], method="bonferroni")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.1, 1.2])


@pytest.mark.parametrize("method, sm", [("holm", "holm"), ("bh", "fdr_bh"), ("none", None)])
def test_verdict_alphas_match_the_adjusted_decisions_of_statsmodels(method, sm):
    """The 1 - alpha_i interval excludes the null (p < alpha_i) exactly when statsmodels' adjusted p < alpha."""
    from statsmodels.stats.multitest import multipletests

    from fairpair.stats import verdict_alphas

    rng = np.random.default_rng(3)
    for _ in range(300):
        m = int(rng.integers(1, 9))
        p = np.where(rng.random(m) < 0.5, rng.uniform(0, 0.05, m), rng.uniform(0, 1, m))
        a = verdict_alphas(p, 0.05, method)
        reject = multipletests(p, 0.05, method=sm)[0] if sm else p < 0.05
        assert np.array_equal(p < a, reject), (p, a)
    assert np.isnan(verdict_alphas([np.nan, 0.01], 0.05)[0]) and verdict_alphas([np.nan, 0.01], 0.05)[1] == 0.05
    assert verdict_alphas([0.001, 0.2, 0.3], 0.05, "holm") == pytest.approx([0.05 / 3, 0.05 / 2, 0.05 / 2])
