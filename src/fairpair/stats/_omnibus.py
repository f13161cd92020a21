"""Omnibus tests over k >= 2 matched groups: Cochran's Q and Friedman."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

__all__ = ["CochranQResult", "FriedmanResult", "cochran_q", "friedman"]


def _as_table(table: Any, min_groups: int) -> tuple[np.ndarray, int]:
    to_numpy = getattr(table, "to_numpy", None)
    if to_numpy is not None:
        try:
            arr = np.asarray(to_numpy(dtype=float, na_value=np.nan), dtype=float)
        except TypeError:
            arr = np.asarray(to_numpy(), dtype=float)
    else:
        arr = np.asarray(table, dtype=float)
    if arr.ndim != 2:
        raise ValueError(f"table must be 2-D (n_cases x k_groups); got shape {arr.shape}")
    if arr.shape[1] < min_groups:
        raise ValueError(f"table must have at least {min_groups} group columns; got {arr.shape[1]}")
    keep = ~np.isnan(arr).any(axis=1)
    return arr[keep], int((~keep).sum())


@dataclass(frozen=True)
class CochranQResult:
    """Result of :func:`cochran_q`.

    Attributes
    ----------
    statistic : float
        Cochran's Q; 0 when no case varies across groups.
    pvalue : float
        Upper tail of chi-square with ``df`` degrees of freedom; 1.0 when
        no case varies; NaN when no case is complete.
    df : int
        ``k - 1``.
    method : str
    n : int
        Complete cases used.
    n_missing : int
        Cases dropped because a group's outcome was missing.
    k : int
        Number of groups.
    rates : ndarray, shape (k,)
        Proportion of 1s per group over the complete cases.
    note : str or None
    """

    statistic: float
    pvalue: float
    df: int
    method: str
    n: int
    n_missing: int
    k: int
    rates: np.ndarray = field(repr=False)
    note: str | None = None


def cochran_q(table: Any) -> CochranQResult:
    """Cochran's Q test that k matched binary outcomes share one rate.

    Parameters
    ----------
    table : array_like, shape (n_cases, k_groups)
        0/1 (or bool) outcome of each case under each group's persona, k >= 2.
        A row with any NaN is dropped and counted in ``n_missing``.

    Returns
    -------
    CochranQResult
        ``Q = (k - 1) (k sum_j C_j^2 - T^2) / (k T - sum_i R_i^2)`` with column
        totals ``C_j``, row totals ``R_i``, grand total ``T``; p-value from
        chi-square(k - 1). Equals ``statsmodels.stats.contingency_tables.
        cochrans_q``. With k = 2 it is McNemar's uncorrected chi-square.

    Raises
    ------
    ValueError
        If ``table`` is not 2-D with >= 2 columns or holds values other than
        0, 1 and NaN.

    References
    ----------
    Cochran, W. G. (1950). The comparison of percentages in matched samples.
    *Biometrika*, 37, 256-266.
    """
    arr, n_missing = _as_table(table, 2)
    if np.any((arr != 0) & (arr != 1)):
        raise ValueError("table must hold 0/1 outcomes (or NaN for missing)")
    n, k = arr.shape
    method = "Cochran's Q"
    if n == 0:
        return CochranQResult(np.nan, np.nan, k - 1, method, 0, n_missing, k, np.full(k, np.nan), "no complete cases")
    col = arr.sum(axis=0)
    row = arr.sum(axis=1)
    total = col.sum()
    denom = k * total - np.sum(row**2)
    rates = col / n
    if denom == 0:
        return CochranQResult(0.0, 1.0, k - 1, method, n, n_missing, k, rates, "no case varies across groups")
    q = (k - 1) * (k * np.sum(col**2) - total**2) / denom
    return CochranQResult(float(q), float(stats.chi2.sf(q, k - 1)), k - 1, method, n, n_missing, k, rates)


@dataclass(frozen=True)
class FriedmanResult:
    """Result of :func:`friedman`.

    Attributes
    ----------
    statistic : float
        Friedman's chi-square (tie-corrected, as ``scipy.stats.
        friedmanchisquare``); 0 when every case is constant across groups.
    pvalue : float
        chi-square(k - 1) upper tail; 1.0 when every case is constant.
    df : int
    method : str
    n, n_missing, k : int
    mean_ranks : ndarray, shape (k,)
        Mean within-case rank of each group (1 = lowest).
    kendalls_w : float
        Kendall's coefficient of concordance ``statistic / (n (k - 1))`` in
        [0, 1], an effect size.
    note : str or None
    """

    statistic: float
    pvalue: float
    df: int
    method: str
    n: int
    n_missing: int
    k: int
    mean_ranks: np.ndarray = field(repr=False)
    kendalls_w: float
    note: str | None = None


def friedman(table: Any) -> FriedmanResult:
    """Friedman's rank test that k matched continuous outcomes share one location.

    Parameters
    ----------
    table : array_like of float, shape (n_cases, k_groups)
        k >= 3 (for two groups use :func:`wilcoxon`). Rows with any NaN are
        dropped and counted.

    Returns
    -------
    FriedmanResult
        Statistic and p-value from ``scipy.stats.friedmanchisquare``.

    Raises
    ------
    ValueError
        If ``table`` is not 2-D with at least 3 columns.

    References
    ----------
    Friedman, M. (1937). The use of ranks to avoid the assumption of
    normality implicit in the analysis of variance. *JASA*, 32, 675-701.
    """
    arr, n_missing = _as_table(table, 3)
    n, k = arr.shape
    method = "Friedman chi-square"
    if n == 0:
        return FriedmanResult(np.nan, np.nan, k - 1, method, 0, n_missing, k, np.full(k, np.nan), np.nan,
                              "no complete cases")
    ranks = stats.rankdata(arr, axis=1)
    mean_ranks = ranks.mean(axis=0)
    if np.all(arr == arr[:, :1]):
        return FriedmanResult(0.0, 1.0, k - 1, method, n, n_missing, k, mean_ranks, 0.0,
                              "every case is constant across groups")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.friedmanchisquare(*arr.T)
    stat = float(res.statistic)
    return FriedmanResult(stat, float(res.pvalue), k - 1, method, n, n_missing, k, mean_ranks, stat / (n * (k - 1)))
