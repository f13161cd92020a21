"""Multiple-testing corrections: Holm and Benjamini-Hochberg."""

from __future__ import annotations

from typing import Any

import numpy as np

from fairpair.stats._common import check_choice

__all__ = ["holm", "benjamini_hochberg", "adjust", "verdict_alphas"]

_METHODS = ("holm", "bh", "none")


def _prepare(pvalues: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p = np.asarray(pvalues, dtype=float)
    flat = p.ravel()
    finite = ~np.isnan(flat)
    if np.any((flat[finite] < 0) | (flat[finite] > 1)):
        raise ValueError("p-values must lie in [0, 1] (NaN is passed through)")
    return p, flat, finite


def _holm(p: np.ndarray) -> np.ndarray:
    m = p.size
    order = np.argsort(p)
    raw = p[order] * np.arange(m, 0, -1)
    adj = np.minimum(np.maximum.accumulate(raw), 1.0)
    out = np.empty(m)
    out[order] = adj
    return out


def _bh(p: np.ndarray) -> np.ndarray:
    m = p.size
    order = np.argsort(p)
    raw = p[order] * m / np.arange(1, m + 1)
    adj = np.minimum(np.minimum.accumulate(raw[::-1])[::-1], 1.0)
    out = np.empty(m)
    out[order] = adj
    return out


def adjust(pvalues: Any, method: str = "holm") -> np.ndarray:
    """Adjust p-values for multiple testing.

    Parameters
    ----------
    pvalues : array_like of float, any shape
        Raw p-values in [0, 1]. NaN entries (tests that could not be run) are
        passed through as NaN and do not count towards the number of tests.
    method : {"holm", "bh", "none"}, default "holm"
        ``"holm"``: Holm's (1979) step-down familywise-error control.
        ``"bh"``: Benjamini-Hochberg (1995) false-discovery-rate control
        (valid under independence or positive dependence).
        ``"none"``: a copy of the input.

    Returns
    -------
    ndarray of float, same shape as ``pvalues``
        Adjusted p-values, equal to
        ``statsmodels.stats.multitest.multipletests(p, method="holm" |
        "fdr_bh")[1]``. Reject at level ``alpha`` where ``adjusted <= alpha``.

    Raises
    ------
    ValueError
        For an unknown method or a p-value outside [0, 1].

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure.
    *Scandinavian Journal of Statistics*, 6, 65-70.
    Benjamini, Y., & Hochberg, Y. (1995). Controlling the false discovery
    rate. *JRSS B*, 57, 289-300.
    """
    check_choice("method", method, _METHODS)
    p, flat, finite = _prepare(pvalues)
    out = flat.copy()
    if method != "none" and finite.any():
        out[finite] = (_holm if method == "holm" else _bh)(flat[finite])
    return out.reshape(p.shape)


def holm(pvalues: Any) -> np.ndarray:
    """Holm-adjusted p-values; ``adjust(pvalues, "holm")``.

    References
    ----------
    Holm, S. (1979). *Scandinavian Journal of Statistics*, 6, 65-70.
    """
    return adjust(pvalues, "holm")


def benjamini_hochberg(pvalues: Any) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values); ``adjust(pvalues, "bh")``.

    References
    ----------
    Benjamini, Y., & Hochberg, Y. (1995). *JRSS B*, 57, 289-300.
    """
    return adjust(pvalues, "bh")


def verdict_alphas(pvalues: Any, alpha: float, method: str = "holm") -> np.ndarray:
    """Per test, the level ``alpha_i`` whose ``1 - alpha_i`` interval matches the adjusted verdict.

    For a test whose p-value is the two-sided p of a confidence interval
    (``p < a`` exactly when the ``1 - a`` interval excludes the null), the
    ``1 - alpha_i`` interval excludes the null exactly when the adjusted
    p-value of :func:`adjust` is below ``alpha`` (ties aside), so the
    interval shown beside a verdict never contradicts it.

    Parameters
    ----------
    pvalues : array_like of float, shape (m,)
        Raw p-values; NaN entries get NaN and do not count.
    alpha : float
        The verdicts' level, in (0, 1).
    method : {"holm", "bh", "none"}

    Returns
    -------
    ndarray of float, shape (m,)
        ``"holm"``: with the finite p-values sorted and ``j`` the first step
        Holm does not reject, ``alpha / (m - i + 1)`` for the rejected step
        ``i < j`` and ``alpha / (m - j + 1)`` for every test from ``j`` on
        (Holm 1979). ``"bh"``: ``R alpha / m`` with ``R`` the number of
        rejections (``alpha / m`` when none): the false-coverage-rate
        intervals of Benjamini & Yekutieli (2005). ``"none"``: ``alpha``.

    Raises
    ------
    ValueError
        An unknown method, a p-value outside [0, 1] or ``alpha`` outside (0, 1).

    References
    ----------
    Holm (1979); Benjamini, Y., & Yekutieli, D. (2005). False discovery
    rate-adjusted multiple confidence intervals for selected parameters.
    *JASA*, 100, 71-81.
    """
    check_choice("method", method, _METHODS)
    if not (0.0 < float(alpha) < 1.0):
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}")
    p, flat, finite = _prepare(pvalues)
    out = np.full(flat.shape, np.nan)
    m = int(finite.sum())
    if m == 0:
        return out.reshape(p.shape)
    if method == "none":
        out[finite] = alpha
        return out.reshape(p.shape)
    q = flat[finite]
    adj = _holm(q) if method == "holm" else _bh(q)
    if method == "bh":
        r = int((adj <= alpha).sum())
        out[finite] = max(r, 1) * alpha / m
        return out.reshape(p.shape)
    order = np.argsort(q, kind="stable")
    levels = np.empty(m)
    stop = None
    for step, idx in enumerate(order):  # step 0 compares with alpha / m
        if stop is None and adj[idx] > alpha:
            stop = step
        levels[idx] = alpha / (m - (step if stop is None else stop))
    out[finite] = levels
    return out.reshape(p.shape)
