"""Heterogeneity of the paired effect across variants within a group.

A group (say, "Arabic names") is usually represented by several variants
(individual names). If the paired effect differs between variants, the
group-level number hides it. The per-variant effects and one test of
"all variants have the same effect" are returned.

Choice of test
--------------
* Binary outcomes: Pearson's chi-square test of homogeneity on the
  ``k x 2`` table of discordant pairs ``(b_v, c_v)``. Among discordant
  pairs, the share favouring group A estimates ``OR_v / (1 + OR_v)`` with
  ``OR_v = b_v / c_v`` the matched-pairs odds ratio, so the test asks
  whether the conditional odds ratio is the same for every variant. It
  conditions on the discordant pairs (concordant pairs carry no
  information on the direction), and, unlike an inverse-variance
  Cochran's Q on risk differences, it stays defined when a variant has
  ``b = 0`` or ``c = 0``. Variants with no discordant pair are left out of
  the test (they have no direction), and named in the note.
* Continuous outcomes: the Kruskal-Wallis test on the paired differences
  ``x - y`` by variant (rank-based, matching the Wilcoxon analysis; ties
  corrected as in ``scipy.stats.kruskal``).

Both ignore clustering of pairs within templates: with strong template
effects shared across variants they are anti-conservative.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from fairpair.stats._common import ConfidenceInterval, as_labels, check_choice, check_level, paired_arrays, t_interval
from fairpair.stats._mcnemar import paired_risk_difference_ci

__all__ = ["VariantEffect", "HeterogeneityResult", "variant_heterogeneity"]

_KINDS = ("binary", "continuous")


@dataclass(frozen=True)
class VariantEffect:
    """One variant's paired effect.

    Attributes
    ----------
    variant : object
        The label.
    n : int
        Complete pairs.
    effect : float
        Risk difference ``rate_A - rate_B`` (binary) or mean of ``x - y``
        (continuous).
    ci : ConfidenceInterval
        Newcombe (binary) or t (continuous) interval.
    b, c : int or None
        Discordant pairs (binary only).
    """

    variant: Any
    n: int
    effect: float
    ci: ConfidenceInterval
    b: int | None = None
    c: int | None = None


@dataclass(frozen=True)
class HeterogeneityResult:
    """Result of :func:`variant_heterogeneity`.

    Attributes
    ----------
    statistic : float
        Chi-square (binary) or Kruskal-Wallis H (continuous); 0 when there
        is nothing to compare.
    pvalue : float
        1.0 when there is nothing to compare (see ``note``).
    df : int
        Variants in the test minus 1.
    method : str
    kind : {"binary", "continuous"}
    variants : tuple of VariantEffect
        Every variant with at least one complete pair, in label order.
    n : int
        Complete pairs.
    n_missing : int
    note : str or None
    """

    statistic: float
    pvalue: float
    df: int
    method: str
    kind: str
    variants: tuple = field(repr=False)
    n: int
    n_missing: int
    note: str | None = None

    @property
    def effects(self) -> np.ndarray:
        """Per-variant effects, in the order of :attr:`variants`."""
        return np.array([v.effect for v in self.variants])


def variant_heterogeneity(
    x: Any,
    y: Any,
    variant: Any,
    *,
    kind: str = "binary",
    confidence_level: float = 0.95,
) -> HeterogeneityResult:
    """Per-variant paired effects and a test that they are all equal.

    Parameters
    ----------
    x, y : array_like, shape (n_pairs,)
        Paired outcomes (group A, group B); NaN drops the pair. 0/1 for
        ``kind="binary"``.
    variant : array_like, shape (n_pairs,)
        The variant (e.g. the name used for group A) of each pair.
    kind : {"binary", "continuous"}, default "binary"
    confidence_level : float, default 0.95
        For the per-variant intervals.

    Returns
    -------
    HeterogeneityResult

    Raises
    ------
    ValueError
        For a bad ``kind``, mismatched lengths or non-binary outcomes with
        ``kind="binary"``.

    References
    ----------
    Breslow, N. E., & Day, N. E. (1980). *Statistical Methods in Cancer
    Research, Vol. 1*, sec. 5.2 (matched-pairs odds ratio). IARC.
    Kruskal, W. H., & Wallis, W. A. (1952). Use of ranks in one-criterion
    variance analysis. *JASA*, 47, 583-621.
    """
    check_choice("kind", kind, _KINDS)
    level = check_level(confidence_level)
    xa, ya, keep = paired_arrays(x, y, binary=kind == "binary", return_mask=True)
    n_missing = int((~keep).sum())
    labels, codes = as_labels(variant, "variant", keep.size)
    codes = codes[keep]
    effects = []
    for v in np.unique(codes):
        sel = codes == v
        xs, ys = xa[sel], ya[sel]
        n = int(sel.sum())
        if kind == "binary":
            xb, yb = xs.astype(bool), ys.astype(bool)
            a, b, c = int((xb & yb).sum()), int((xb & ~yb).sum()), int((~xb & yb).sum())
            lo, hi = paired_risk_difference_ci(a, b, c, n - a - b - c, level, "newcombe")
            effects.append(VariantEffect(labels[v], n, (b - c) / n, ConfidenceInterval(lo, hi, level, "newcombe"),
                                         b, c))
        else:
            d = xs - ys
            mean = float(d.mean())
            se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
            ci = ConfidenceInterval(*t_interval(mean, se, n - 1, level), level, "t")
            effects.append(VariantEffect(labels[v], n, mean, ci))
    n_total = int(codes.size)
    if kind == "binary":
        method = "chi-square test of homogeneity of discordant pairs (matched-pairs odds ratios)"
        used = [e for e in effects if (e.b or 0) + (e.c or 0) > 0]  # b and c are set for binary effects
        skipped = [e.variant for e in effects if (e.b or 0) + (e.c or 0) == 0]
        notes = [f"variants without discordant pairs left out: {skipped}"] if skipped else []
        table = np.array([[e.b, e.c] for e in used], dtype=float).reshape(-1, 2)
        if len(used) < 2:
            notes.append("fewer than two variants with discordant pairs: nothing to compare")
            return HeterogeneityResult(0.0, 1.0, 0, method, kind, tuple(effects), n_total, n_missing, "; ".join(notes))
        if table[:, 0].sum() == 0 or table[:, 1].sum() == 0:
            notes.append("all discordant pairs favour the same group: directions are homogeneous")
            return HeterogeneityResult(0.0, 1.0, len(used) - 1, method, kind, tuple(effects), n_total, n_missing,
                                       "; ".join(notes))
        res = stats.chi2_contingency(table, correction=False)
        if np.any(res.expected_freq < 5):
            notes.append("some expected counts are below 5: the chi-square approximation is rough")
        return HeterogeneityResult(float(res.statistic), float(res.pvalue), int(res.dof), method, kind, tuple(effects),
                                   n_total, n_missing, "; ".join(notes) or None)
    method = "Kruskal-Wallis test of paired differences by variant"
    d_all = xa - ya
    groups = [d_all[codes == v] for v in np.unique(codes)]
    if len(groups) < 2:
        return HeterogeneityResult(0.0, 1.0, 0, method, kind, tuple(effects), n_total, n_missing,
                                   "fewer than two variants: nothing to compare")
    if np.all(d_all == d_all[0]):
        return HeterogeneityResult(0.0, 1.0, len(groups) - 1, method, kind, tuple(effects), n_total, n_missing,
                                   "all paired differences are equal")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.kruskal(*groups)
    return HeterogeneityResult(float(res.statistic), float(res.pvalue), len(groups) - 1, method, kind, tuple(effects),
                               n_total, n_missing)
