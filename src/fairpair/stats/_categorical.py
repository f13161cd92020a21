"""Paired tests for decisions with k outcomes: Stuart-Maxwell and Bowker on a k x k table.

A chatbot that approves, denies or refers gives each counterfactual pair a
cell of a k x k table (row: group A's outcome, column: group B's). Two
questions are asked of that table:

* **marginal homogeneity** (Stuart 1955; Maxwell 1970): are the outcome
  distributions of the two groups the same? This is the question of an
  audit ("does group A get *refer* more often?"); for k = 2 it is McNemar's
  test without continuity correction.
* **symmetry** (Bowker 1948): is ``p_ij == p_ji`` for every pair of
  outcomes? Symmetry implies marginal homogeneity, not the converse.

The per-category follow-ups are McNemar tests on the indicator "outcome is
c" (:func:`category_tests`), each with its paired risk difference and
Newcombe interval.

References
----------
Stuart, A. (1955). A test for homogeneity of the marginal distributions in a
two-way classification. *Biometrika*, 42, 412-416.
Maxwell, A. E. (1970). Comparing the classification of subjects by two
independent judges. *British Journal of Psychiatry*, 116, 651-655.
Bowker, A. H. (1948). A test for symmetry in contingency tables. *JASA*, 43,
572-574.
Agresti, A. (2013). *Categorical Data Analysis*, 3rd ed., sec. 11.3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from fairpair.stats._common import _is_missing

__all__ = ["SquareTableResult", "CategoryTest", "square_table", "stuart_maxwell", "bowker", "category_tests"]


@dataclass(frozen=True)
class SquareTableResult:
    """Result of :func:`stuart_maxwell` or :func:`bowker`.

    Attributes
    ----------
    statistic : float
        The chi-square statistic; NaN without complete pairs.
    pvalue : float
        Upper tail of chi-square with ``df`` degrees of freedom; 1.0 when
        there are no discordant pairs, NaN without complete pairs.
    df : int
        Degrees of freedom: ``k - 1`` (Stuart-Maxwell; the rank of the
        covariance matrix if it is singular), ``k (k - 1) / 2`` (Bowker), over
        the ``k`` categories that occur.
    method : str
        ``"Stuart-Maxwell"`` or ``"Bowker"``.
    table : ndarray of int, shape (k, k)
        Rows: group A's outcome, columns: group B's, in ``categories`` order.
    categories : tuple
        The outcome labels that occur in at least one complete pair (declared
        categories that never occur are dropped: they carry no information
        and would make the covariance matrix singular).
    n : int
        Complete pairs.
    n_missing : int
        Pairs dropped because either label was missing (None or NaN).
    dropped_categories : tuple
        Declared categories that never occurred.
    note : str or None
        Set for degenerate input.
    """

    statistic: float
    pvalue: float
    df: int
    method: str
    table: np.ndarray = field(repr=False)
    categories: tuple
    n: int
    n_missing: int
    dropped_categories: tuple = ()
    note: str | None = None

    @property
    def rates_a(self) -> dict[Any, float]:
        """Share of each outcome in group A (row margins / n)."""
        n = max(self.n, 1)
        return {c: float(v) / n for c, v in zip(self.categories, self.table.sum(axis=1), strict=True)}

    @property
    def rates_b(self) -> dict[Any, float]:
        """Share of each outcome in group B (column margins / n)."""
        n = max(self.n, 1)
        return {c: float(v) / n for c, v in zip(self.categories, self.table.sum(axis=0), strict=True)}


def square_table(x: Any, y: Any, *, categories: Any = None) -> tuple[np.ndarray, tuple, int, tuple]:
    """The k x k table of paired labels.

    Parameters
    ----------
    x, y : array-like of labels, shape (n,)
        Group A's and group B's outcome in each pair (str, int, bool...);
        None or NaN is missing and drops the pair.
    categories : sequence, optional
        The declared outcomes, in the order wanted. Default: the sorted set of
        labels seen. A label outside ``categories`` raises.

    Returns
    -------
    (table, categories, n_missing, dropped)
        ``table[i, j]``: pairs with A = ``categories[i]``, B = ``categories[j]``,
        over the categories that occur; ``dropped``: declared ones that never
        occur.

    Raises
    ------
    ValueError
        Lengths differ, arrays are not one-dimensional, or a label is not
        among ``categories``.
    """
    xa, ya = (list(np.asarray(getattr(v, "to_numpy", lambda v=v: v)(), dtype=object).ravel())
              if np.ndim(v) <= 1 else None for v in (x, y))
    if xa is None or ya is None:
        raise ValueError("x and y must be one-dimensional arrays of labels")
    if len(xa) != len(ya):
        raise ValueError(f"x and y must have the same length (one entry per pair); got {len(xa)} and {len(ya)}")
    keep = [not (_is_missing(a) or _is_missing(b)) for a, b in zip(xa, ya, strict=True)]
    px = [a for a, k in zip(xa, keep, strict=True) if k]
    py = [b for b, k in zip(ya, keep, strict=True) if k]
    seen = set(px) | set(py)
    if categories is None:
        try:
            cats = tuple(sorted(seen))
        except TypeError:
            cats = tuple(dict.fromkeys([*px, *py]))
    else:
        cats = tuple(dict.fromkeys(categories))
        unknown = [v for v in seen if v not in set(cats)]
        if unknown:
            raise ValueError(f"label(s) {sorted(map(str, unknown))} are not among the categories {list(cats)}")
    used = tuple(c for c in cats if c in seen)
    dropped = tuple(c for c in cats if c not in seen)
    pos = {c: i for i, c in enumerate(used)}
    table = np.zeros((len(used), len(used)), dtype=np.int64)
    for a, b in zip(px, py, strict=True):
        table[pos[a], pos[b]] += 1
    table.setflags(write=False)
    return table, used, len(xa) - len(px), dropped


def _degenerate(method: str, table, cats, n_missing, dropped, df: int) -> SquareTableResult | None:
    n = int(table.sum())
    if n == 0:
        return SquareTableResult(np.nan, np.nan, df, method, table, cats, 0, n_missing, dropped,
                                 "no complete pairs")
    if n == int(np.trace(table)):
        return SquareTableResult(0.0, 1.0, df, method, table, cats, n, n_missing, dropped,
                                 "no discordant pairs: both groups got the same outcome in every pair")
    return None


def stuart_maxwell(x: Any, y: Any, *, categories: Any = None) -> SquareTableResult:
    """Stuart-Maxwell test of marginal homogeneity for paired k-outcome labels.

    With ``d = col - row`` the differences of the first ``k - 1`` margins and
    ``V`` their covariance under the null (``V_ii = row_i + col_i - 2 n_ii``,
    ``V_ij = -(n_ij + n_ji)``), the statistic is ``d' V^-1 d``, chi-square
    with ``k - 1`` df (Agresti 2013, sec. 11.3.1); it equals statsmodels'
    ``SquareTable(table, shift_zeros=False).homogeneity()``. A singular ``V``
    (possible with sparse tables) is inverted with the Moore-Penrose
    pseudo-inverse and ``df`` is its rank.

    Parameters
    ----------
    x, y : array-like of labels, shape (n,)
        Outcomes of group A and group B in each pair.
    categories : sequence, optional
        Declared outcomes (see :func:`square_table`).

    Returns
    -------
    SquareTableResult

    Raises
    ------
    ValueError
        As :func:`square_table`.
    """
    table, cats, n_missing, dropped = square_table(x, y, categories=categories)
    k = len(cats)
    deg = _degenerate("Stuart-Maxwell", table, cats, n_missing, dropped, max(k - 1, 0))
    if deg is not None:
        return deg
    t = table.astype(float)
    row, col = t.sum(axis=1)[:-1], t.sum(axis=0)[:-1]
    p = t[:-1, :-1]
    d = col - row
    v = -(p + p.T)
    np.fill_diagonal(v, row + col - 2 * np.diag(p))
    df = k - 1
    note = None
    try:
        if np.linalg.matrix_rank(v) < df:
            raise np.linalg.LinAlgError
        stat = float(d @ np.linalg.solve(v, d))
    except np.linalg.LinAlgError:
        df = int(np.linalg.matrix_rank(v))
        stat = float(d @ np.linalg.pinv(v) @ d)
        note = f"singular covariance matrix: pseudo-inverse used, df = {df}"
    stat = max(stat, 0.0)
    pvalue = float(stats.chi2.sf(stat, df)) if df > 0 else 1.0
    return SquareTableResult(stat, pvalue, df, "Stuart-Maxwell", table, cats, int(t.sum()), n_missing, dropped, note)


def bowker(x: Any, y: Any, *, categories: Any = None) -> SquareTableResult:
    """Bowker's test of symmetry for paired k-outcome labels.

    Statistic ``sum_{i<j} (n_ij - n_ji)^2 / (n_ij + n_ji)`` (pairs of cells
    that are both empty add 0), chi-square with ``k (k - 1) / 2`` df (Bowker
    1948; R's ``mcnemar.test`` and statsmodels' ``SquareTable.symmetry()`` use
    the same df). For k = 2 it is McNemar's test without continuity
    correction.

    Parameters, Returns, Raises
        As :func:`stuart_maxwell`.
    """
    table, cats, n_missing, dropped = square_table(x, y, categories=categories)
    k = len(cats)
    df = k * (k - 1) // 2
    deg = _degenerate("Bowker", table, cats, n_missing, dropped, df)
    if deg is not None:
        return deg
    iu = np.triu_indices(k, 1)
    up, lo = table[iu].astype(float), table.T[iu].astype(float)
    s = up + lo
    stat = float(np.sum(np.divide((up - lo) ** 2, s, out=np.zeros_like(s), where=s > 0)))
    return SquareTableResult(stat, float(stats.chi2.sf(stat, df)), df, "Bowker", table, cats, int(table.sum()),
                             n_missing, dropped)


@dataclass(frozen=True)
class CategoryTest:
    """One category's follow-up: McNemar on the indicator "outcome is ``category``".

    ``mcnemar`` is a :class:`~fairpair.stats.McNemarResult`; its
    ``risk_difference`` is ``rate_a - rate_b`` of that outcome and its
    ``confidence_interval()`` the Newcombe interval.
    """

    category: Any
    mcnemar: Any

    @property
    def risk_difference(self) -> float:
        return self.mcnemar.risk_difference


def category_tests(x: Any, y: Any, *, categories: Any = None, exact_threshold: int = 25) -> list[CategoryTest]:
    """Per-category McNemar tests (the follow-ups of a significant Stuart-Maxwell test).

    Each category ``c`` is analysed as the binary outcome "got ``c``" in both
    members of the pair, so its risk difference and interval are those of
    :func:`~fairpair.stats.mcnemar` (exact below ``exact_threshold``
    discordant pairs). Adjust the k p-values for multiplicity
    (:func:`~fairpair.stats.holm`).
    """
    from fairpair.stats._mcnemar import mcnemar

    table, cats, _n_missing, dropped = square_table(x, y, categories=categories)
    xa = [None if _is_missing(v) else v for v in np.asarray(x, dtype=object).ravel()]
    ya = [None if _is_missing(v) else v for v in np.asarray(y, dtype=object).ravel()]
    out = []
    for c in (*cats, *dropped):
        ix = [np.nan if a is None or b is None else float(a == c) for a, b in zip(xa, ya, strict=True)]
        iy = [np.nan if a is None or b is None else float(b == c) for a, b in zip(xa, ya, strict=True)]
        out.append(CategoryTest(c, mcnemar(ix, iy, exact_threshold=exact_threshold)))
    return out
