"""Equivalence (TOST) and the three-way verdict pass / fail / inconclusive.

Decision rule, for a difference ``delta`` between groups and an
equivalence margin ``m > 0`` fixed before the audit:

* **pass** -- the ``1 - 2*alpha`` CI lies strictly inside ``(-m, m)``.
  This is Schuirmann's two one-sided tests (TOST) at level ``alpha``:
  equivalence is *established*.
* **fail** -- the ``1 - alpha`` CI lies entirely outside ``[-m, m]``
  (``low > m`` or ``high < -m``). A difference larger than the margin is
  *established*: a level-``alpha`` test of ``H0: |delta| <= m``, valid
  whichever direction the data point to (each tail has ``alpha/2``).
* **inconclusive** -- anything else (the data cannot tell).

The two CIs nest (the ``1 - alpha`` CI contains the ``1 - 2*alpha`` CI), so
pass and fail are mutually exclusive. ``significant`` is the ordinary
two-sided test of ``delta = 0`` at ``alpha``: the ``1 - alpha`` CI excludes 0.
A difference can be significant and still pass (real but smaller than the
margin).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from fairpair.stats._common import ConfidenceInterval, check_level, paired_arrays, t_interval

__all__ = ["Verdict", "TostResult", "verdict", "equivalence_verdict", "tost_paired", "significant"]

VERDICTS = ("pass", "fail", "inconclusive")


@dataclass(frozen=True)
class Verdict:
    """A three-way equivalence decision (see module notes for the rule).

    Attributes
    ----------
    decision : {"pass", "fail", "inconclusive"}
    bounds : tuple of float
        Equivalence bounds ``(low, high)``, ``(-m, m)`` for a margin ``m``,
        in the units of the difference.
    equivalence_ci : ConfidenceInterval
        The ``1 - 2*alpha`` interval used for "pass".
    difference_ci : ConfidenceInterval
        The ``1 - alpha`` interval used for "fail" and ``significant``.
    significant : bool
        ``difference_ci`` excludes 0.
    note : str or None
        Set when an interval is undefined (the decision is then inconclusive).
    """

    decision: str
    bounds: tuple[float, float]
    equivalence_ci: ConfidenceInterval
    difference_ci: ConfidenceInterval
    significant: bool
    note: str | None = None


def _as_ci(ci: Any, name: str) -> ConfidenceInterval:
    if isinstance(ci, ConfidenceInterval):
        return ci
    try:
        low, high = (float(v) for v in ci)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a ConfidenceInterval or a (low, high) pair; got {ci!r}") from None
    return ConfidenceInterval(low, high, np.nan, "given")


def _check_bounds(margin: Any) -> tuple[float, float]:
    if isinstance(margin, (tuple, list)):
        if len(margin) != 2:
            raise ValueError(f"margin must be a positive number or a (low, high) pair; got {margin!r}")
        try:
            low, high = float(margin[0]), float(margin[1])
        except (TypeError, ValueError):
            raise ValueError(f"bounds must be numbers; got {margin!r}") from None
        if not (np.isfinite(low) and np.isfinite(high) and low < high):
            raise ValueError(f"bounds must be finite with low < high; got {margin!r}")
        return low, high
    try:
        m = float(margin)
    except (TypeError, ValueError):
        raise ValueError(f"margin must be a positive number or a (low, high) pair; got {margin!r}") from None
    if not (np.isfinite(m) and m > 0):
        raise ValueError(f"margin must be a positive, finite number; got {margin!r}")
    return -m, m


def verdict(equivalence_ci: Any, difference_ci: Any, margin: float | tuple[float, float]) -> Verdict:
    """Three-way decision from two nested intervals and a margin.

    Parameters
    ----------
    equivalence_ci : ConfidenceInterval or (low, high)
        The ``1 - 2*alpha`` CI of the difference (e.g. 90% for alpha = 0.05).
    difference_ci : ConfidenceInterval or (low, high)
        The ``1 - alpha`` CI (e.g. 95%).
    margin : float or (low, high)
        Equivalence margin ``m > 0`` (bounds ``(-m, m)``), or explicit
        bounds ``low < high``.

    Returns
    -------
    Verdict
        "pass" when ``low < eq.low and eq.high < high``; "fail" when
        ``diff.low > high or diff.high < low``; else "inconclusive".

    Raises
    ------
    ValueError
        If ``margin`` is not positive and finite, or an interval is malformed
        (``low > high``).

    References
    ----------
    Schuirmann, D. J. (1987). A comparison of the two one-sided tests
    procedure and the power approach for assessing the equivalence of
    average bioavailability. *J. Pharmacokinetics and Biopharmaceutics*,
    15, 657-680.
    """
    low, high = _check_bounds(margin)
    eq = _as_ci(equivalence_ci, "equivalence_ci")
    diff = _as_ci(difference_ci, "difference_ci")
    for name, ci in (("equivalence_ci", eq), ("difference_ci", diff)):
        if ci.low > ci.high:
            raise ValueError(f"{name} has low > high: ({ci.low}, {ci.high})")
    if any(np.isnan(v) for v in (eq.low, eq.high, diff.low, diff.high)):
        return Verdict("inconclusive", (low, high), eq, diff, False, "confidence interval undefined")
    significant = bool(diff.low > 0 or diff.high < 0)
    if low < eq.low and eq.high < high:
        decision = "pass"
    elif diff.low > high or diff.high < low:
        decision = "fail"
    else:
        decision = "inconclusive"
    return Verdict(decision, (low, high), eq, diff, significant)


def equivalence_verdict(result: Any, margin: float | tuple[float, float], *, alpha: float = 0.05,
                        **ci_options: Any) -> Verdict:
    """Verdict for any result with a ``confidence_interval(level)`` method.

    Calls ``result.confidence_interval(1 - 2*alpha)`` and
    ``result.confidence_interval(1 - alpha)``: the risk difference of a
    :class:`McNemarResult`, the Hodges-Lehmann shift of a
    :class:`WilcoxonResult`, the mean difference of a :class:`PairedTResult`
    or a :class:`BootstrapResult`'s statistic.

    Parameters
    ----------
    result : object
        A result object from this package.
    margin : float or (low, high)
        Equivalence margin ``m > 0`` in the units of the estimate, or bounds.
    alpha : float, default 0.05
        In (0, 0.5).
    **ci_options
        Passed to ``confidence_interval`` (e.g. ``method="wald"``).

    Returns
    -------
    Verdict

    Raises
    ------
    ValueError
        If ``alpha`` is outside (0, 0.5) or ``result`` has no
        ``confidence_interval`` method.
    """
    a = check_level(alpha, "alpha")
    if a >= 0.5:
        raise ValueError(f"alpha must be in (0, 0.5); got {alpha!r}")
    get = getattr(result, "confidence_interval", None)
    if not callable(get):
        raise ValueError(f"{type(result).__name__} has no confidence_interval() method")
    return verdict(get(1.0 - 2.0 * a, **ci_options), get(1.0 - a, **ci_options), margin)


def significant(pvalue: float, alpha: float = 0.05) -> bool:
    """Plain significance flag: ``pvalue < alpha`` (``False`` for NaN).

    The same rule as the verdict (:mod:`fairpair.analysis._verdict`): a
    p-value exactly equal to ``alpha`` is not significant.
    """
    a = check_level(alpha, "alpha")
    return bool(pvalue < a)


@dataclass(frozen=True)
class TostResult:
    """Result of :func:`tost_paired`.

    Attributes
    ----------
    statistic : float
        The t statistic of the one-sided test with the larger p-value.
    pvalue : float
        ``max(pvalue_lower, pvalue_upper)``; equivalence at ``alpha`` when
        ``pvalue <= alpha``.
    method : str
    statistic_lower, pvalue_lower : float
        Test of ``H0: delta <= low`` against ``delta > low``.
    statistic_upper, pvalue_upper : float
        Test of ``H0: delta >= high`` against ``delta < high``.
    df : float
    bounds : tuple of float
        ``(low, high)`` equivalence bounds.
    n, n_missing : int
    mean_difference, standard_error : float
    alpha : float
    verdict : Verdict
        The three-way decision (:func:`verdict`) from the ``1 - 2*alpha`` and
        ``1 - alpha`` t intervals; "pass" here is exactly TOST at ``alpha``.
    note : str or None
    """

    statistic: float
    pvalue: float
    method: str
    statistic_lower: float
    pvalue_lower: float
    statistic_upper: float
    pvalue_upper: float
    df: float
    bounds: tuple[float, float]
    n: int
    n_missing: int
    mean_difference: float
    standard_error: float
    alpha: float
    verdict: Verdict
    note: str | None = None

    def confidence_interval(self, confidence_level: float | None = None) -> ConfidenceInterval:
        """t interval for the mean difference; default level ``1 - 2*alpha``."""
        level = 1.0 - 2.0 * self.alpha if confidence_level is None else check_level(confidence_level)
        if not np.isfinite(self.standard_error) or self.n < 2:
            return ConfidenceInterval(np.nan, np.nan, level, "t")
        low, high = t_interval(self.mean_difference, self.standard_error, self.df, level)
        return ConfidenceInterval(low, high, level, "t")


def tost_paired(x: Any, y: Any, margin: float | tuple[float, float], *, alpha: float = 0.05) -> TostResult:
    """Paired two one-sided t-tests (TOST) for equivalence of means.

    Parameters
    ----------
    x, y : array_like of float, shape (n_pairs,)
        Paired values; NaN drops the pair.
    margin : float or (low, high)
        Symmetric margin ``m`` (bounds ``(-m, m)``) or explicit bounds
        ``low < high`` for ``delta = mean(x - y)``.
    alpha : float, default 0.05
        In (0, 0.5).

    Returns
    -------
    TostResult
        Same p-values as ``statsmodels.stats.weightstats.ttost_paired``.

    Raises
    ------
    ValueError
        For bad bounds, ``alpha`` or unequal lengths.

    References
    ----------
    Schuirmann (1987); see :func:`verdict`.
    """
    a = check_level(alpha, "alpha")
    if a >= 0.5:
        raise ValueError(f"alpha must be in (0, 0.5); got {alpha!r}")
    low, high = _check_bounds(margin)
    xa, ya, n_missing = paired_arrays(x, y)
    d = xa - ya
    n = d.size
    method = "paired TOST (two one-sided t-tests)"
    if n < 2 or d.std(ddof=1) == 0:
        note = "fewer than two complete pairs" if n < 2 else "differences have zero variance"
        nan_ci = ConfidenceInterval(np.nan, np.nan, 1 - 2 * a, "t")
        v = Verdict("inconclusive", (low, high), nan_ci, nan_ci, False, note)
        mean = float(d.mean()) if n else np.nan
        return TostResult(np.nan, np.nan, method, np.nan, np.nan, np.nan, np.nan, float(max(n - 1, 0)), (low, high),
                          n, n_missing, mean, np.nan, a, v, note)
    mean = float(d.mean())
    se = float(d.std(ddof=1) / np.sqrt(n))
    df = float(n - 1)
    t_low = (mean - low) / se
    t_high = (mean - high) / se
    p_low = float(stats.t.sf(t_low, df))
    p_high = float(stats.t.cdf(t_high, df))
    stat, p = (t_low, p_low) if p_low >= p_high else (t_high, p_high)
    eq_q = stats.t.ppf(1.0 - a, df)
    diff_q = stats.t.ppf(1.0 - a / 2.0, df)
    eq_ci = ConfidenceInterval(mean - eq_q * se, mean + eq_q * se, 1.0 - 2.0 * a, "t")
    diff_ci = ConfidenceInterval(mean - diff_q * se, mean + diff_q * se, 1.0 - a, "t")
    v = verdict(eq_ci, diff_ci, (low, high))
    return TostResult(float(stat), p, method, float(t_low), p_low, float(t_high), p_high, df, (low, high),
                      n, n_missing, mean, se, a, v)
