"""The difference in within-cell spread (:func:`fairpair.stats.spread_difference`) against hand-computed values."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from scipy import special, stats

from fairpair.stats import cell_sds, spread_difference, spread_from_cells
from fairpair.stats._spread import c4


def test_c4_is_the_textbook_constant():
    # c4(n) = sqrt(2/(n-1)) Gamma(n/2) / Gamma((n-1)/2); ASTM E2587's table: c4(2) = 0.7979, c4(5) = 0.9400
    assert c4(2) == pytest.approx(math.sqrt(2 / math.pi))
    assert c4(5) == pytest.approx(math.sqrt(2 / 4) * special.gamma(2.5) / special.gamma(2.0))
    assert round(float(c4(5)), 4) == 0.9400 and round(float(c4(10)), 4) == 0.9727
    assert np.isnan(c4(1))
    # E[s] / sigma = E[chi_{n-1}] / sqrt(n - 1) (scipy's chi distribution)
    for n in (2, 3, 5, 10, 30):
        assert c4(n) == pytest.approx(stats.chi(n - 1).mean() / math.sqrt(n - 1))


def test_cell_sds_are_numpy_sample_sds_over_c4_and_cells_of_one_answer_have_none():
    v = np.array([1.0, 3.0, 2.0, 2.0, 6.0, np.nan, 5.0])
    t = np.array([0, 0, 0, 1, 1, 1, 0])
    n = np.array([0, 0, 1, 0, 0, 0, 1])
    sd, cnt = cell_sds(v, t, n, 2, 2)
    assert cnt.tolist() == [[2, 2], [2, 0]]
    assert sd[0, 0] == pytest.approx(np.std([1, 3], ddof=1) / c4(2))
    assert sd[0, 1] == pytest.approx(np.std([2, 5], ddof=1) / c4(2))
    assert sd[1, 0] == pytest.approx(np.std([2, 6], ddof=1) / c4(2))
    assert np.isnan(sd[1, 1])


def _two_answer_cells(gaps: list[list[int]], group: str, start: int = 0):
    """Answers (x, x + gap) in each template x name cell: the cell's unbiased SD is gap * sqrt(pi) / 2."""
    rows = []
    for t, row in enumerate(gaps):
        for k, gap in enumerate(row):
            for v in (10.0 * t, 10.0 * t + gap):
                rows.append((v, f"t{t}", f"{group}{start + k}", group))
    return rows


def test_names_fixed_by_hand():
    # cell gaps: A [[1, 2], [2, 2], [1, 3]], B [[1, 1], [1, 2], [1, 1]]: sd = gap * sqrt(pi) / 2
    ga, gb = [[1, 2], [2, 2], [1, 3]], [[1, 1], [1, 2], [1, 1]]
    rows = _two_answer_cells(ga, "A") + _two_answer_cells(gb, "B")
    v, t, n, g = (np.array(c) for c in zip(*rows, strict=True))
    r = spread_difference(v, t, n, g, names="fixed")
    half_root_pi = math.sqrt(math.pi) / 2
    sa, sb = F(11, 6), F(7, 6)  # the groups' mean gaps
    assert r.sd_a == pytest.approx(float(sa) * half_root_pi) and r.sd_b == pytest.approx(float(sb) * half_root_pi)
    assert r.estimate == pytest.approx(math.log(11 / 7)) and r.ratio == pytest.approx(11 / 7)
    # the test: the paired t of the template means of A's cell SDs minus B's (scipy), df = T - 1
    x_t = [float(F(sum(a), 2)) * half_root_pi for a in ga]
    y_t = [float(F(sum(b), 2)) * half_root_pi for b in gb]
    ref = stats.ttest_rel(x_t, y_t)
    assert r.statistic == pytest.approx(ref.statistic) and r.pvalue == pytest.approx(ref.pvalue)
    assert r.df == pytest.approx(2.0)
    # se: the delta method on the log ratio (scale only): per template, A's scaled SDs minus B's
    d_t = [float(F(sum(a), 2) / sa - F(sum(b), 2) / sb) for a, b in zip(ga, gb, strict=True)]
    assert r.se == pytest.approx(float(np.std(d_t, ddof=1) / math.sqrt(3)))
    # the interval: Fieller's, the ratios rho at which scipy's paired t of x_t - rho y_t has p = 0.05
    lo, hi = r.confidence_interval(0.95)
    for lim in (lo, hi):
        assert stats.ttest_1samp(np.array(x_t) - math.exp(lim) * np.array(y_t), 0.0).pvalue == pytest.approx(0.05)
    assert lo < math.log(11 / 7) < hi
    assert tuple(r.ratio_interval(0.95)) == pytest.approx((math.exp(lo), math.exp(hi)))
    assert r.n_templates == 3 and r.n_cells == 12


def test_names_random_is_the_crossed_variance_of_the_scaled_sds():
    # the crossed estimator's formula on the scaled SDs, written out: S_T^2 / T + sum_g max(0, S_N^2 - MS_res / T) / n_g
    rng = np.random.default_rng(4)
    a = rng.gamma(4.0, 0.25, (6, 5)) * np.exp(rng.normal(0, 0.4, (1, 5)))  # names differ in spread
    b = rng.gamma(4.0, 0.25, (6, 5))
    r = spread_from_cells(a, b, names="random", pool=None)
    sa, sb = a.mean(), b.mean()
    assert r.estimate == pytest.approx(math.log(sa / sb))
    x, y = a / sa, b / sb
    t = x.shape[0]
    d_t = x.mean(axis=1) - y.mean(axis=1)
    var = d_t.var(ddof=1) / t
    for c in (x, y):
        n = c.shape[1]
        res = c - c.mean(axis=1, keepdims=True) - c.mean(axis=0, keepdims=True) + c.mean()
        ms_res = (res ** 2).sum() / ((t - 1) * (n - 1))
        var += max(0.0, c.mean(axis=0).var(ddof=1) - ms_res / t) / n
    assert r.se == pytest.approx(math.sqrt(var))
    assert r.names == "random" and r.df > 0


def test_cells_with_fewer_answers_do_not_look_less_spread():
    # group A: 5 answers per cell, group B: 2 (missing answers); same normal spread. s / c4(r) is unbiased,
    # the raw sample SD would put the ratio near 0.94 / 0.80 (log 0.16)
    rng = np.random.default_rng(7)
    rows = []
    for t in range(40):
        for k in range(6):
            for grp, reps in (("A", 5), ("B", 2)):
                for v in rng.normal(0, 1, reps):
                    rows.append((v, t, f"{grp}{k}", grp))
    v, t, n, g = (np.array(c) for c in zip(*rows, strict=True))
    r = spread_difference(v, t, n, g, names="fixed")
    assert abs(r.estimate) < 0.06 and r.pvalue > 0.05


def test_a_planted_spread_difference_is_found_and_undefined_cases_say_why():
    rng = np.random.default_rng(1)
    t, k, reps = 12, 5, 4
    tt = np.repeat(np.arange(t), 2 * k * reps)
    nn = np.tile(np.repeat(np.arange(2 * k), reps), t)
    gg = np.where(nn < k, "A", "B")
    v = rng.normal(0, np.where(gg == "A", 2.0, 1.0))
    r = spread_difference(v, tt, nn, gg)
    assert r.ratio == pytest.approx(2.0, rel=0.15) and r.pvalue < 1e-3
    # one answer per cell: nothing to estimate from
    one = spread_difference(v[::reps], tt[::reps], nn[::reps], gg[::reps])
    assert np.isnan(one.estimate) and "at least 2 answers" in one.note
    # every answer of a group repeats its cell: no log ratio
    flat = np.where(gg == "B", tt.astype(float), v)
    zero = spread_difference(flat, tt, nn, gg)
    assert np.isnan(zero.estimate) and zero.sd_b == 0 and "group B" in zero.note
    with pytest.raises(ValueError, match="exactly two"):
        spread_difference(v, tt, nn, np.where(nn < 3, "A", np.where(nn < 6, "B", "C")))


def _fieller_closed_form(x: np.ndarray, y: np.ndarray, level: float) -> tuple[float, float]:
    """Fieller (1954) for the ratio of two paired means: the roots of
    (ybar^2 - q^2 s_yy / T) rho^2 - 2 (xbar ybar - q^2 s_xy / T) rho + (xbar^2 - q^2 s_xx / T) = 0."""
    t = x.size
    q2 = stats.t.ppf(0.5 + level / 2, t - 1) ** 2 / t
    c = np.cov(x, y, ddof=1)
    qa, qb, qc = y.mean() ** 2 - q2 * c[1, 1], x.mean() * y.mean() - q2 * c[0, 1], x.mean() ** 2 - q2 * c[0, 0]
    disc = math.sqrt(qb ** 2 - qa * qc)
    return (qb - disc) / qa, (qb + disc) / qa


def test_names_fixed_interval_is_fiellers_closed_form():
    rng = np.random.default_rng(3)
    a = rng.gamma(3.0, 0.4, (15, 4)) * np.exp(rng.normal(0, 0.3, (15, 1)))
    b = rng.gamma(3.0, 0.3, (15, 4)) * np.exp(rng.normal(0, 0.3, (15, 1)))
    r = spread_from_cells(a, b, names="fixed")
    for level in (0.95, 0.90):
        ref = _fieller_closed_form(a.mean(axis=1), b.mean(axis=1), level)
        assert tuple(r.ratio_interval(level)) == pytest.approx(ref, rel=1e-5)
    assert tuple(r.equivalence_interval(0.05)) == pytest.approx(tuple(r.confidence_interval(0.90)))
    # the p-value against the margin: scipy's paired t at the nearer bound, two-sided
    lo95, _hi95 = r.ratio_interval(0.95)
    bound = 1.05
    assert r.ratio > bound
    ref_p = stats.ttest_1samp(a.mean(axis=1) - bound * b.mean(axis=1), 0.0).pvalue
    assert r.pvalue_beyond(bound) == pytest.approx(ref_p)
    assert (r.pvalue_beyond(bound) < 0.05) == (lo95 > bound)
    assert r.pvalue_beyond(r.ratio * 1.01) == 1.0 and r.pvalue_beyond(None) == r.pvalue


def test_an_unbounded_fieller_interval_when_group_b_has_almost_no_spread():
    # group B's cells are SD 0 but for one template: its mean SD is not clearly above 0, so no upper limit
    a = np.full((10, 3), 1.0) + np.linspace(0, 0.5, 10)[:, None]
    b = np.zeros((10, 3))
    b[0] = 3.0
    r = spread_from_cells(a, b, names="fixed")
    lo, hi = r.confidence_interval(0.95)
    assert np.isfinite(lo) and hi == math.inf
    x, y = a.mean(axis=1), b.mean(axis=1)
    assert stats.ttest_1samp(x - math.exp(lo) * y, 0.0).pvalue == pytest.approx(0.05)
