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
    # delta method: per template, the mean of A's scaled SDs minus B's; se = their SD / sqrt(T), df = T - 1
    d_t = [float(F(sum(a), 2) / sa - F(sum(b), 2) / sb) for a, b in zip(ga, gb, strict=True)]
    se = float(np.std(d_t, ddof=1) / math.sqrt(3))
    assert r.se == pytest.approx(se) and r.df == pytest.approx(2.0)
    assert r.pvalue == pytest.approx(2 * stats.t.sf(math.log(11 / 7) / se, 2))
    lo, hi = r.confidence_interval(0.95)
    q = stats.t.ppf(0.975, 2) * se
    assert (lo, hi) == pytest.approx((math.log(11 / 7) - q, math.log(11 / 7) + q))
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
