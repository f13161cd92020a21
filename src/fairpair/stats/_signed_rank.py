"""Paired continuous outcomes: Wilcoxon signed-rank test and the paired t-test."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special, stats

from fairpair.stats._common import ConfidenceInterval, check_choice, check_level, paired_arrays, t_interval
from fairpair.stats._walsh import signed_rank_cdf, walsh_order_statistics

__all__ = ["WilcoxonResult", "PairedTResult", "wilcoxon", "paired_t"]

_ZERO_METHODS = ("pratt", "wilcox", "zsplit")
_ALTERNATIVES = ("two-sided", "less", "greater")
_SCIPY_METHODS = ("auto", "exact", "asymptotic")
_EXACT_CI_MAX_N = 50


@dataclass(frozen=True)
class WilcoxonResult:
    """Result of :func:`wilcoxon`.

    Attributes
    ----------
    statistic : float
        As ``scipy.stats.wilcoxon`` reports it: ``min(r_plus, r_minus)`` for
        a two-sided test, ``r_plus`` for a one-sided one.
    pvalue : float
        1.0 when every difference is zero; NaN when no pair is complete.
    method : str
        Test description, including ``zero_method`` and scipy's ``method``.
    zero_method, alternative : str
        The options used.
    n : int
        Complete pairs (zero differences included).
    n_zero : int
        Pairs with ``x == y``.
    n_missing : int
        Pairs dropped because a value was missing.
    r_plus, r_minus : float
        Sums of ranks of ``|x - y|`` over positive and negative differences,
        ranked as ``zero_method`` prescribes (``"zsplit"`` gives half of each
        zero's rank to both sums).
    median_difference : float
        Median of ``x - y``.
    hodges_lehmann : float
        Hodges-Lehmann estimate of the location shift: median of the Walsh
        averages ``(d_i + d_j) / 2``, ``i <= j``, of all ``n`` differences.
    rank_biserial : float
        Matched-pairs rank-biserial correlation ``(r_plus - r_minus) /
        (r_plus + r_minus)`` in [-1, 1] from the ranks of ``zero_method``;
        0 when all differences are zero. Positive means ``x`` tends to
        exceed ``y``. With the default ``"pratt"`` the zeros take the
        smallest ranks and then count in neither sum, so the non-zero
        differences carry ranks shifted up by the number of zeros; this
        *Pratt-ranked* value differs from the standard one below when
        there are zeros (by up to ~0.27 with many ties at zero).
    rank_biserial_kerby : float
        The standard matched-pairs rank-biserial correlation, Kerby's (2014)
        simple difference formula as pingouin and most software compute it:
        zero differences dropped, the remaining ``m`` absolute differences
        ranked (midranks for ties), ``(r_plus - r_minus) / (m (m + 1) / 2)``.
        Equal to ``rank_biserial`` for ``zero_method="wilcox"`` or without
        zeros; 0 when all differences are zero. Report this one when
        comparing with published effect sizes.
    note : str or None
        Set for degenerate input.
    """

    statistic: float
    pvalue: float
    method: str
    zero_method: str
    alternative: str
    n: int
    n_zero: int
    n_missing: int
    r_plus: float
    r_minus: float
    median_difference: float
    hodges_lehmann: float
    rank_biserial: float
    note: str | None = None
    rank_biserial_kerby: float = np.nan
    differences: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Distribution-free CI for the Hodges-Lehmann shift (Walsh-average order statistics).

        The interval is ``[W_(k), W_(N + 1 - k)]`` over the ``N = n(n+1)/2``
        sorted Walsh averages, where ``k - 1`` is the largest ``t`` with
        ``P(T+ <= t) <= alpha / 2`` under the null. ``T+``'s distribution is
        exact (no ties) for ``n <= 50`` and normal otherwise, ``k =
        round(N/2 - z sqrt(n(n+1)(2n+1)/24))`` (Hollander, Wolfe & Chicken
        2014, sec. 3.3). With ties or zero differences the level is
        approximate. If even ``[min, max]`` falls short of the level (tiny
        ``n``), that widest interval is returned and labelled
        ``"walsh (level not attainable)"``.

        Parameters
        ----------
        confidence_level : float, default 0.95
            In (0, 1).

        Returns
        -------
        ConfidenceInterval
            NaN limits when there are no complete pairs.

        References
        ----------
        Hodges, J. L., & Lehmann, E. L. (1963). Estimates of location based
        on rank tests. *Annals of Mathematical Statistics*, 34, 598-611.
        """
        level = check_level(confidence_level)
        d = self.differences
        n = d.size
        if n == 0:
            return ConfidenceInterval(np.nan, np.nan, level, "walsh")
        total = n * (n + 1) // 2
        alpha = 1.0 - level
        if n <= _EXACT_CI_MAX_N:
            cdf = signed_rank_cdf(n)
            ok = np.nonzero(cdf <= alpha / 2.0 + 1e-12)[0]
            k = int(ok[-1]) + 1 if ok.size else 0
        else:
            z = special.ndtri(1.0 - alpha / 2.0)
            k = int(np.round(total / 2.0 - z * np.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)))
        method = "walsh"
        if k < 1:
            k, method = 1, "walsh (level not attainable)"
        k = min(k, (total + 1) // 2)
        low, high = walsh_order_statistics(d, np.array([k, total + 1 - k]))
        return ConfidenceInterval(float(low), float(high), level, method)


def _signed_rank_sums(d: np.ndarray, zero_method: str) -> tuple[float, float]:
    if zero_method == "wilcox":
        d = d[d != 0]
    if d.size == 0:
        return 0.0, 0.0
    ranks = stats.rankdata(np.abs(d))
    r_plus = float(ranks[d > 0].sum())
    r_minus = float(ranks[d < 0].sum())
    if zero_method == "zsplit":
        half_zero = float(ranks[d == 0].sum()) / 2.0
        r_plus += half_zero
        r_minus += half_zero
    return r_plus, r_minus


def hodges_lehmann(d: np.ndarray) -> float:
    """Median of the Walsh averages of ``d`` (NaN for empty input)."""
    n = d.size
    if n == 0:
        return np.nan
    total = n * (n + 1) // 2
    if total % 2:
        return float(walsh_order_statistics(d, np.array([(total + 1) // 2]))[0])
    lo, hi = walsh_order_statistics(d, np.array([total // 2, total // 2 + 1]))
    return float((lo + hi) / 2.0)


def wilcoxon(
    x: Any,
    y: Any,
    *,
    zero_method: str = "pratt",
    alternative: str = "two-sided",
    method: str = "auto",
    correction: bool = False,
) -> WilcoxonResult:
    """Wilcoxon signed-rank test on paired differences ``x - y``.

    Parameters
    ----------
    x, y : array_like of float, shape (n_pairs,)
        Paired measurements for group A and group B. NaN/None marks a missing
        value; the pair is dropped and counted.
    zero_method : {"pratt", "wilcox", "zsplit"}, default "pratt"
        Treatment of zero differences. ``"pratt"`` (Pratt 1959) ranks them
        with the others and then drops their ranks, which keeps the test
        consistent when many paired answers are identical, as with LLM
        outputs; ``"wilcox"`` discards them before ranking; ``"zsplit"``
        splits their ranks between the signs.
    alternative : {"two-sided", "less", "greater"}, default "two-sided"
        ``"greater"``: ``x`` tends to exceed ``y``.
    method : {"auto", "exact", "asymptotic"}, default "auto"
        Passed to ``scipy.stats.wilcoxon``.
    correction : bool, default False
        Continuity correction of the normal approximation (scipy's option).

    Returns
    -------
    WilcoxonResult
        ``confidence_interval()`` gives the Hodges-Lehmann CI. All differences
        zero: statistic 0, p-value 1, note ``"all differences are zero"``.

    Raises
    ------
    ValueError
        For unequal lengths or an option not in the allowed list.

    References
    ----------
    Wilcoxon, F. (1945). Individual comparisons by ranking methods.
    *Biometrics Bulletin*, 1, 80-83.
    Pratt, J. W. (1959). Remarks on zeros and ties in the Wilcoxon signed
    rank procedures. *JASA*, 54, 655-667.
    Hodges, J. L., & Lehmann, E. L. (1963). Estimates of location based on
    rank tests. *Annals of Mathematical Statistics*, 34, 598-611.
    Kerby, D. S. (2014). The simple difference formula: an approach to
    teaching nonparametric correlation. *Comprehensive Psychology*, 3, 11.IT.3.1.
    """
    check_choice("zero_method", zero_method, _ZERO_METHODS)
    check_choice("alternative", alternative, _ALTERNATIVES)
    check_choice("method", method, _SCIPY_METHODS)
    if correction not in (True, False):
        raise ValueError(f"correction must be True or False; got {correction!r}")
    xa, ya, n_missing = paired_arrays(x, y)
    d = xa - ya
    d.setflags(write=False)
    n = d.size
    n_zero = int(np.count_nonzero(d == 0))
    label = f"Wilcoxon signed-rank test (zero_method={zero_method!r}, method={method!r})"
    if n == 0:
        return WilcoxonResult(
            np.nan, np.nan, label, zero_method, alternative, 0, 0, n_missing,
            0.0, 0.0, np.nan, np.nan, np.nan, "no complete pairs", np.nan, d,
        )
    r_plus, r_minus = _signed_rank_sums(d, zero_method)
    total = r_plus + r_minus
    rbc = 0.0 if total == 0 else (r_plus - r_minus) / total
    k_plus, k_minus = _signed_rank_sums(d, "wilcox")
    kerby = 0.0 if k_plus + k_minus == 0 else (k_plus - k_minus) / (k_plus + k_minus)
    hl = hodges_lehmann(d)
    med = float(np.median(d))
    if n_zero == n:
        return WilcoxonResult(
            0.0, 1.0, label, zero_method, alternative, n, n_zero, n_missing,
            r_plus, r_minus, med, hl, rbc, "all differences are zero", kerby, d,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        res = stats.wilcoxon(d, zero_method=zero_method, alternative=alternative, method=method, correction=correction)
    note = None
    if zero_method == "wilcox" and n - n_zero < 1:
        note = "no non-zero differences"
    return WilcoxonResult(
        float(res.statistic), float(res.pvalue), label, zero_method, alternative, n, n_zero, n_missing,
        r_plus, r_minus, med, hl, rbc, note, kerby, d,
    )


@dataclass(frozen=True)
class PairedTResult:
    """Result of :func:`paired_t`.

    Attributes
    ----------
    statistic : float
        t statistic (``ttest_rel``); 0 when all differences are zero,
        +/-inf when they are equal and non-zero.
    pvalue : float
    method : str
    alternative : str
    df : float
        ``n - 1``.
    n, n_missing : int
    mean_difference : float
        Mean of ``x - y``.
    sd_difference : float
        Standard deviation of ``x - y`` (ddof=1).
    standard_error : float
        ``sd_difference / sqrt(n)``.
    note : str or None
    """

    statistic: float
    pvalue: float
    method: str
    alternative: str
    df: float
    n: int
    n_missing: int
    mean_difference: float
    sd_difference: float
    standard_error: float
    note: str | None = None

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """t-based CI for the mean difference; one-sided for one-sided alternatives.

        Matches ``scipy.stats.ttest_rel(...).confidence_interval()``.
        """
        level = check_level(confidence_level)
        if self.n < 2:
            return ConfidenceInterval(np.nan, np.nan, level, "t")
        low, high = t_interval(self.mean_difference, self.standard_error, self.df, level, self.alternative)
        return ConfidenceInterval(low, high, level, "t")


def paired_t(x: Any, y: Any, *, alternative: str = "two-sided") -> PairedTResult:
    """Paired t-test on ``x - y`` (a secondary view next to :func:`wilcoxon`).

    Parameters
    ----------
    x, y : array_like of float, shape (n_pairs,)
        NaN/None drops the pair (counted in ``n_missing``).
    alternative : {"two-sided", "less", "greater"}, default "two-sided"

    Returns
    -------
    PairedTResult
        From ``scipy.stats.ttest_rel``; ``confidence_interval()`` for the mean
        difference. Fewer than two pairs: NaN with a note.

    Raises
    ------
    ValueError
        For unequal lengths or an unknown ``alternative``.

    References
    ----------
    Student (1908). The probable error of a mean. *Biometrika*, 6, 1-25.
    """
    check_choice("alternative", alternative, _ALTERNATIVES)
    xa, ya, n_missing = paired_arrays(x, y)
    d = xa - ya
    n = d.size
    method = "paired t-test"
    if n < 2:
        mean = float(d.mean()) if n else np.nan
        return PairedTResult(
            np.nan, np.nan, method, alternative, np.nan, n, n_missing, mean, np.nan, np.nan,
            "fewer than two complete pairs",
        )
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    se = sd / np.sqrt(n)
    if sd == 0.0:
        if mean == 0.0:
            return PairedTResult(
                0.0, 1.0, method, alternative, float(n - 1), n, n_missing, 0.0, 0.0, 0.0,
                "all differences are zero",
            )
        stat = float(np.copysign(np.inf, mean))
        if alternative == "two-sided":
            p = 0.0
        else:
            p = 0.0 if (alternative == "greater") == (mean > 0) else 1.0
        return PairedTResult(
            stat, p, method, alternative, float(n - 1), n, n_missing, mean, 0.0, 0.0,
            "differences have zero variance",
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.ttest_rel(xa, ya, alternative=alternative)
    return PairedTResult(
        float(res.statistic), float(res.pvalue), method, alternative, float(res.df), n, n_missing,
        mean, sd, float(se), None,
    )
