"""Stuart-Maxwell and Bowker on paired k-outcome labels, checked against statsmodels' SquareTable."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import SquareTable

from fairpair.stats import bowker, category_tests, mcnemar, stuart_maxwell


def _labels(table, cats=None):
    """Expand a k x k count table into two label arrays (row label, column label per pair)."""
    t = np.asarray(table)
    cats = cats or [f"c{i}" for i in range(t.shape[0])]
    x, y = [], []
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            x += [cats[i]] * int(t[i, j])
            y += [cats[j]] * int(t[i, j])
    return x, y, cats


def test_reference_table_bowker():
    x, y, cats = _labels([[10, 5, 1], [3, 12, 2], [4, 6, 20]])
    r = bowker(x, y)
    assert r.statistic == pytest.approx(4.3, abs=1e-12)
    assert r.df == 3
    assert r.pvalue == pytest.approx(0.230839, abs=1e-6)
    assert r.n == 63 and r.categories == ("c0", "c1", "c2")
    np.testing.assert_array_equal(r.table, [[10, 5, 1], [3, 12, 2], [4, 6, 20]])


TABLES = [
    [[10, 5, 1], [3, 12, 2], [4, 6, 20]],
    [[20, 3], [9, 15]],
    [[5, 0, 2], [1, 7, 0], [0, 3, 9]],
    [[12, 4, 2, 1], [1, 9, 3, 0], [0, 2, 14, 5], [2, 1, 1, 11]],
    [[1, 8, 3], [2, 1, 9], [7, 1, 2]],
    [[30, 1, 0], [2, 25, 1], [0, 3, 22]],
    [[0, 4, 1], [2, 0, 3], [5, 1, 0]],
    [[8, 2, 0, 0, 1], [1, 6, 2, 0, 0], [0, 1, 9, 3, 0], [0, 0, 2, 7, 1], [3, 0, 0, 1, 5]],
    [[3, 6], [1, 4]],
    [[40, 10, 5], [2, 30, 8], [1, 3, 25]],
    [[6, 2, 9], [0, 4, 1], [0, 0, 3]],  # one triangle empty
    [[2, 0, 0], [5, 0, 0], [3, 0, 0]],  # two categories never chosen by A... but by B? column zero
]


@pytest.mark.parametrize("table", TABLES)
def test_matches_statsmodels(table):
    x, y, _ = _labels(table)
    st = SquareTable(np.asarray(table), shift_zeros=False)
    b = bowker(x, y)
    # a category with an empty row and column drops out (see below); these tables have none
    assert b.statistic == pytest.approx(st.symmetry().statistic, abs=1e-10)
    assert b.pvalue == pytest.approx(st.symmetry().pvalue, abs=1e-10)
    assert b.df == st.symmetry().df
    s = stuart_maxwell(x, y)
    h = st.homogeneity()
    assert s.statistic == pytest.approx(h.statistic, abs=1e-10)
    assert s.pvalue == pytest.approx(h.pvalue, abs=1e-10)
    assert s.df == h.df


@pytest.mark.parametrize("table, empty", [
    ([[10, 0, 5, 1], [0, 0, 0, 0], [3, 0, 12, 2], [4, 0, 6, 20]], 1),
    ([[7, 2, 0], [4, 9, 0], [0, 0, 0]], 2),
    ([[0, 0, 0], [0, 5, 3], [0, 8, 4]], 0),
])
def test_declared_empty_categories_are_dropped_and_match_statsmodels_on_the_rest(table, empty):
    cats = ["a", "b", "c", "d"][: len(table)]
    x, y, _ = _labels(table, cats)
    reduced = np.delete(np.delete(np.asarray(table), empty, 0), empty, 1)
    st = SquareTable(reduced, shift_zeros=False)
    for fn, ref in ((bowker, st.symmetry()), (stuart_maxwell, st.homogeneity())):
        r = fn(x, y, categories=cats)
        assert r.dropped_categories == (cats[empty],)
        assert r.statistic == pytest.approx(ref.statistic, abs=1e-10)
        assert r.pvalue == pytest.approx(ref.pvalue, abs=1e-10)
        assert r.df == ref.df


def test_two_categories_equal_mcnemar_without_correction():
    x, y, _ = _labels([[20, 3], [9, 15]])
    m = mcnemar([v == "c0" for v in x], [v == "c0" for v in y], exact=False, correction=False)
    assert stuart_maxwell(x, y).statistic == pytest.approx(m.statistic, abs=1e-12)
    assert bowker(x, y).statistic == pytest.approx(m.statistic, abs=1e-12)


def test_missing_labels_drop_pairs_and_degenerate_input():
    r = stuart_maxwell(["approve", None, "deny", np.nan], ["approve", "deny", "deny", "refer"])
    assert (r.n, r.n_missing, r.statistic, r.pvalue) == (2, 2, 0.0, 1.0)
    assert "no discordant" in r.note
    e = bowker([None], ["a"])
    assert e.n == 0 and np.isnan(e.pvalue)
    with pytest.raises(ValueError, match="same length"):
        bowker(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="not among the categories"):
        bowker(["a"], ["z"], categories=["a", "b"])


def test_category_follow_ups_are_mcnemar_on_indicators():
    x, y, cats = _labels([[10, 5, 1], [3, 12, 2], [4, 6, 20]], ["approve", "deny", "refer"])
    tests = {t.category: t for t in category_tests(x, y)}
    # approve: A rate 16/63, B rate 17/63; discordant b = 5+1 = 6 (A approve, B not), c = 3+4 = 7
    ap = tests["approve"].mcnemar
    assert (ap.b, ap.c) == (6, 7)
    assert tests["approve"].risk_difference == pytest.approx((16 - 17) / 63)
    ref = tests["refer"].mcnemar
    assert (ref.b, ref.c) == (10, 3)
    assert ref.pvalue == pytest.approx(mcnemar([1] * 10 + [0] * 3, [0] * 10 + [1] * 3).pvalue)
    lo, hi = ref.confidence_interval()
    assert lo < ref.risk_difference < hi
