"""McNemar's test for paired binary outcomes, with the paired risk difference."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special, stats

from fairpair.stats._common import ConfidenceInterval, check_choice, check_level, paired_arrays, wilson_interval

__all__ = ["McNemarResult", "mcnemar", "mcnemar_table"]

_RD_METHODS = ("newcombe", "wald")
_OR_METHODS = ("exact", "wald")


@dataclass(frozen=True)
class McNemarResult:
    """Result of :func:`mcnemar` / :func:`mcnemar_table`.

    Attributes
    ----------
    statistic : float
        Chi-square statistic (1 df) for the asymptotic test; for the exact
        test, ``min(b, c)`` (the binomial count, as statsmodels reports it).
        NaN when there are no complete pairs.
    pvalue : float
        Two-sided p-value. 1.0 when there are no discordant pairs.
    method : str
        ``"exact binomial"``, ``"chi-square with continuity correction"`` or
        ``"chi-square"``.
    table : ndarray of int, shape (2, 2)
        ``[[yes-yes, yes-no], [no-yes, no-no]]``: rows are group A's outcome
        (1 then 0), columns group B's.
    b, c : int
        Discordant pairs: ``b`` = A yes / B no, ``c`` = A no / B yes.
    n : int
        Complete pairs used.
    n_missing : int
        Pairs dropped because either outcome was missing.
    rate_a, rate_b : float
        Proportion of "yes" in group A and B over the ``n`` pairs.
    risk_difference : float
        ``rate_a - rate_b = (b - c) / n``.
    odds_ratio : float
        Matched-pairs (conditional) odds ratio ``b / c``; ``inf`` if ``c == 0``,
        NaN if ``b == c == 0``.
    exact : bool
        Whether the exact binomial test was used.
    correction : bool
        Whether the continuity correction was applied (asymptotic test only).
    note : str or None
        Set for degenerate input (no complete pairs, no discordant pairs).
    """

    statistic: float
    pvalue: float
    method: str
    table: np.ndarray = field(repr=False)
    b: int
    c: int
    n: int
    n_missing: int
    rate_a: float
    rate_b: float
    risk_difference: float
    odds_ratio: float
    exact: bool
    correction: bool
    note: str | None = None

    def confidence_interval(self, confidence_level: float = 0.95, *, method: str = "newcombe") -> ConfidenceInterval:
        """Confidence interval for the paired risk difference ``rate_a - rate_b``.

        Parameters
        ----------
        confidence_level : float, default 0.95
            In (0, 1).
        method : {"newcombe", "wald"}, default "newcombe"
            ``"newcombe"``: Newcombe's (1998) square-and-add hybrid score
            interval for paired proportions ("method 10"): Wilson limits for
            each marginal rate combined with the continuity-corrected
            correlation ``phi`` of the two outcomes (``ad - bc`` reduced by
            ``n/2`` when it exceeds ``n/2``, 0 when between 0 and ``n/2`` or
            when a margin is empty), as recommended by Fagerland, Lydersen &
            Laake (2014). On Bentur's table ``[[1, 1], [7, 12]]`` it gives
            (-0.5069, -0.0256), as Fagerland et al. report. Stays in [-1, 1].
            ``"wald"``: ``d +/- z * sqrt(b + c - (b - c)**2 / n) / n``
            (Agresti 2013, sec. 11.1); zero width when ``b == c == 0``.

        Returns
        -------
        ConfidenceInterval

        Raises
        ------
        ValueError
            For a level outside (0, 1) or an unknown method.

        References
        ----------
        Newcombe, R. G. (1998). Improved confidence intervals for the
        difference between binomial proportions based on paired data.
        *Statistics in Medicine*, 17, 2635-2650.
        Fagerland, M. W., Lydersen, S., & Laake, P. (2014). Recommended tests
        and confidence intervals for paired binomial proportions.
        *Statistics in Medicine*, 33, 2850-2875.
        """
        level = check_level(confidence_level)
        check_choice("method", method, _RD_METHODS)
        a, b = (int(v) for v in self.table[0])
        c, d = (int(v) for v in self.table[1])
        low, high = paired_risk_difference_ci(a, b, c, d, level, method)
        return ConfidenceInterval(low, high, level, method)

    def odds_ratio_ci(self, confidence_level: float = 0.95, *, method: str = "exact") -> ConfidenceInterval:
        """Confidence interval for the matched-pairs odds ratio ``b / c``.

        Parameters
        ----------
        confidence_level : float, default 0.95
        method : {"exact", "wald"}, default "exact"
            ``"exact"``: conditional on ``b + c``, ``b ~ Binomial(b + c, pi)``
            with ``OR = pi / (1 - pi)``; the Clopper-Pearson limits for ``pi``
            are transformed (Breslow & Day 1980, sec. 5.2). Defined with zero
            cells. ``"wald"``: ``exp(log(b/c) +/- z sqrt(1/b + 1/c))``; NaN
            when ``b`` or ``c`` is zero.

        Returns
        -------
        ConfidenceInterval
            NaN limits when ``b + c == 0``.
        """
        level = check_level(confidence_level)
        check_choice("method", method, _OR_METHODS)
        b, c = self.b, self.c
        alpha = 1.0 - level
        if b + c == 0:
            return ConfidenceInterval(np.nan, np.nan, level, method)
        if method == "wald":
            if b == 0 or c == 0:
                return ConfidenceInterval(np.nan, np.nan, level, method)
            z = special.ndtri(1.0 - alpha / 2.0)
            half = z * np.sqrt(1.0 / b + 1.0 / c)
            centre = np.log(b / c)
            return ConfidenceInterval(float(np.exp(centre - half)), float(np.exp(centre + half)), level, method)
        p_low = 0.0 if b == 0 else float(stats.beta.ppf(alpha / 2.0, b, c + 1))
        p_high = 1.0 if c == 0 else float(stats.beta.ppf(1.0 - alpha / 2.0, b + 1, c))
        low = p_low / (1.0 - p_low)
        high = np.inf if p_high >= 1.0 else p_high / (1.0 - p_high)
        return ConfidenceInterval(float(low), float(high), level, method)


def paired_risk_difference_ci(a: int, b: int, c: int, d: int, level: float, method: str) -> tuple[float, float]:
    """CI for ``(b - c) / n`` from the paired 2x2 table (see ``McNemarResult.confidence_interval``)."""
    n = a + b + c + d
    if n == 0:
        return np.nan, np.nan
    z = float(special.ndtri(1.0 - (1.0 - level) / 2.0))
    diff = (b - c) / n
    if method == "wald":
        se = np.sqrt(max(b + c - (b - c) ** 2 / n, 0.0)) / n
        return float(max(diff - z * se, -1.0)), float(min(diff + z * se, 1.0))
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n, level)
    l2, u2 = wilson_interval(a + c, n, level)
    margins = float(a + b) * float(c + d) * float(a + c) * float(b + d)
    # Newcombe's (1998) method 10 uses a continuity-corrected correlation: with
    # A = ad - bc, phi = (A - n/2) / sqrt(margins) if A > n/2, 0 if 0 <= A <= n/2,
    # A / sqrt(margins) if A < 0 (Newcombe 1998; Fagerland, Lydersen & Laake 2014).
    cross = float(a) * d - float(b) * c
    if margins == 0 or 0.0 <= cross <= n / 2.0:
        phi = 0.0
    elif cross > n / 2.0:
        phi = (cross - n / 2.0) / np.sqrt(margins)
    else:
        phi = cross / np.sqrt(margins)
    dl = np.sqrt(max((p1 - l1) ** 2 - 2.0 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    du = np.sqrt(max((u1 - p1) ** 2 - 2.0 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return float(max(diff - dl, -1.0)), float(min(diff + du, 1.0))


def _check_options(exact: Any, exact_threshold: Any, correction: Any) -> None:
    if exact not in (None, True, False):
        raise ValueError(f"exact must be one of None, True, False; got {exact!r}")
    if isinstance(exact_threshold, bool) or not isinstance(exact_threshold, (int, np.integer)) or exact_threshold < 0:
        raise ValueError(f"exact_threshold must be a non-negative integer; got {exact_threshold!r}")
    if correction not in (True, False):
        raise ValueError(f"correction must be True or False; got {correction!r}")


def _from_counts(
    a: int, b: int, c: int, d: int, n_missing: int, exact: bool | None, exact_threshold: int, correction: bool
) -> McNemarResult:
    n = a + b + c + d
    table = np.array([[a, b], [c, d]], dtype=np.int64)
    table.setflags(write=False)
    use_exact = (b + c < exact_threshold) if exact is None else bool(exact)
    if use_exact:
        method = "exact binomial"
    else:
        method = "chi-square with continuity correction" if correction else "chi-square"
    note = None
    if n == 0:
        return McNemarResult(
            np.nan, np.nan, method, table, b, c, 0, n_missing, np.nan, np.nan, np.nan, np.nan,
            use_exact, correction and not use_exact, "no complete pairs",
        )
    rate_a, rate_b = (a + b) / n, (a + c) / n
    rd = (b - c) / n
    odds = np.nan if b + c == 0 else (np.inf if c == 0 else b / c)
    if b + c == 0:
        statistic = 0.0
        pvalue = 1.0
        note = "no discordant pairs"
    elif use_exact:
        statistic = float(min(b, c))
        pvalue = float(min(1.0, 2.0 * stats.binom.cdf(min(b, c), b + c, 0.5)))
    else:
        diff = float(abs(b - c))
        if correction:
            # Edwards's correction, never pushed below zero (statsmodels and R
            # return (|b-c|-1)^2/(b+c) > 0 when b == c; that case gives 0 here).
            diff = max(diff - 1.0, 0.0)
        statistic = float(diff**2 / (b + c))
        pvalue = float(stats.chi2.sf(statistic, 1))
    return McNemarResult(
        statistic, pvalue, method, table, b, c, n, n_missing, rate_a, rate_b, rd, float(odds),
        use_exact, correction and not use_exact, note,
    )


def mcnemar(
    x: Any,
    y: Any,
    *,
    exact: bool | None = None,
    exact_threshold: int = 25,
    correction: bool = False,
) -> McNemarResult:
    """McNemar's test that two paired binary outcomes have the same rate.

    Each position ``i`` is one matched pair: the same case asked with
    group A's persona (``x[i]``) and with group B's (``y[i]``).

    Parameters
    ----------
    x, y : array_like of bool or {0, 1}, shape (n_pairs,)
        Outcomes for group A and group B. ``None``/``NaN``/``pd.NA`` marks a
        missing outcome; the pair is dropped and counted in ``n_missing``.
    exact : bool or None, default None
        ``True``: exact two-sided binomial test on the discordant pairs;
        ``False``: chi-square test; ``None``: exact when
        ``b + c < exact_threshold``.
    exact_threshold : int, default 25
        Number of discordant pairs below which ``exact=None`` chooses the
        exact test.
    correction : bool, default False
        Edwards's (1948) continuity correction for the chi-square test:
        ``max(|b - c| - 1, 0)**2 / (b + c)``. Off by default, as in the
        audit pipeline (``results.json`` records the uncorrected p-value as
        ``pvalue`` and the corrected one as ``binary.chi2_pvalue``), so the
        defaults reproduce the pipeline's p-values: the exact test below
        ``exact_threshold`` discordant pairs, the plain chi-square above.
        The correction only matters where the exact test is not used, and
        there it is conservative: the uncorrected asymptotic test keeps its
        size well (Fagerland, Lydersen & Laake 2013).

    Returns
    -------
    McNemarResult
        ``pvalue == 1`` with ``note="no discordant pairs"`` when ``b + c == 0``;
        NaN statistic and p-value with ``note="no complete pairs"`` when no
        pair is complete.

    Raises
    ------
    ValueError
        If ``x`` and ``y`` differ in length, hold a value other than 0/1 or
        missing, or an option is invalid.

    Notes
    -----
    The chi-square statistic is ``(|b - c| - k)**2 / (b + c)`` with ``k = 1``
    when corrected, else 0; the exact p-value is
    ``min(1, 2 * P(Bin(b + c, 1/2) <= min(b, c)))``. Both agree with
    ``statsmodels.stats.contingency_tables.mcnemar`` except when ``b == c``
    with the correction, where this function returns the statistic 0
    (the correction is never allowed to move ``|b - c|`` past zero).

    References
    ----------
    McNemar, Q. (1947). Note on the sampling error of the difference between
    correlated proportions or percentages. *Psychometrika*, 12, 153-157.
    Edwards, A. L. (1948). Note on the "correction for continuity" in testing
    the significance of the difference between correlated proportions.
    *Psychometrika*, 13, 185-187.
    Fagerland, M. W., Lydersen, S., & Laake, P. (2013). The McNemar test for
    binary matched-pairs data: mid-p and asymptotic are better than exact
    conditional. *BMC Medical Research Methodology*, 13, 91.

    Examples
    --------
    >>> from fairpair.stats import mcnemar_table
    >>> res = mcnemar_table([[402, 41], [18, 139]])
    >>> round(res.statistic, 4), round(res.pvalue, 5)
    (8.9661, 0.00275)
    >>> res = mcnemar_table([[402, 41], [18, 139]], correction=True)
    >>> round(res.statistic, 4), round(res.pvalue, 5)
    (8.2034, 0.00418)
    """
    _check_options(exact, exact_threshold, correction)
    xa, ya, n_missing = paired_arrays(x, y, binary=True)
    xb, yb = xa.astype(bool), ya.astype(bool)
    a = int(np.count_nonzero(xb & yb))
    b = int(np.count_nonzero(xb & ~yb))
    c = int(np.count_nonzero(~xb & yb))
    d = int(xb.size - a - b - c)
    return _from_counts(a, b, c, d, n_missing, exact, exact_threshold, correction)


def mcnemar_table(
    table: Any,
    *,
    exact: bool | None = None,
    exact_threshold: int = 25,
    correction: bool = False,
) -> McNemarResult:
    """McNemar's test from a 2x2 table of paired counts.

    Parameters
    ----------
    table : array_like of int, shape (2, 2)
        ``[[yes-yes, yes-no], [no-yes, no-no]]`` with rows for group A's
        outcome and columns for group B's; non-negative integers.
    exact, exact_threshold, correction
        As in :func:`mcnemar`.

    Returns
    -------
    McNemarResult
        With ``n_missing == 0``.

    Raises
    ------
    ValueError
        If the table is not 2x2 of non-negative integers.

    References
    ----------
    McNemar (1947); Edwards (1948); see :func:`mcnemar`.
    """
    _check_options(exact, exact_threshold, correction)
    arr = np.asarray(table)
    if arr.shape != (2, 2):
        raise ValueError(f"table must have shape (2, 2); got {arr.shape}")
    if arr.dtype.kind not in "iuf" or not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr != np.round(arr)):
        raise ValueError("table must hold non-negative integer counts")
    a, b, c, d = (int(v) for v in arr.ravel())
    return _from_counts(a, b, c, d, 0, exact, exact_threshold, correction)
