"""Statistics of the ranking design: k candidates (one per group) in one prompt, one answer per matched set.

A hiring or lending audit puts k equally qualified candidates in one prompt,
one per group, each with a name (variant) of its group, in an order rotated
over the matched sets (a Latin square), and asks the model to rank them or
pick one. One answer covers the whole matched set. The arrays here hold one
entry per (matched set, group): the template (scenario), the name, the
group, the slot (1-based position in the prompt), ``rank`` (1 = first) and
``top`` (1 for the candidate ranked first).

The answers are not independent: matched sets are nested in templates and
the names are crossed with the templates. Every interval and cluster-aware
test here therefore works on template x name cell means with the crossed
random-effects machinery of :mod:`fairpair.stats._crossed` (Clark 1973;
Judd, Westfall & Kenny 2012), templates always random and names random
(generalise to other names of the groups) or fixed (these names):

* :func:`crossed_mean` -- one group's mean (a selection rate for 0/1 ``top``,
  a mean rank) with the crossed standard error;
* :func:`selection_ratio` -- the ratio of two groups' selection rates with a
  delta-method interval on the log scale whose standard error comes from
  :func:`~fairpair.stats.crossed_difference` on rate-scaled values;
* :func:`ratio_to_best` -- each group's selection rate over the highest
  rate (the "four-fifths rule", EEOC Uniform Guidelines on Employee
  Selection Procedures, 29 CFR 1607.4(D)) with intervals that stay valid
  although the most selected group is picked from the data (multiple
  comparisons with the best, Hsu 1984, in its Bonferroni form);
* :func:`position_effect` -- the top-pick rate and mean rank of each slot,
  with intervals (templates random) and the F test of equal slots on
  template x slot means, plus Cochran's Q and Friedman over the sets
  (which treat the sets as independent, reported as secondary).

The simulation that checked these rules (level, coverage, power, with
template and name random effects and nested repetitions drawn from a
Plackett-Luce model) is ``benchmarks/sim_ranking.py``; its figures are in
``benchmarks/README.md``.

References
----------
Clark, H. H. (1973). The language-as-fixed-effect fallacy. *JVLVB*, 12, 335-359.
Hsu, J. C. (1984). Constrained simultaneous confidence intervals for
multiple comparisons with the best. *Annals of Statistics*, 12, 1136-1144.
Judd, C. M., Westfall, J., & Kenny, D. A. (2012). *JPSP*, 103, 54-69.
Plackett, R. L. (1975). The analysis of permutations. *Applied Statistics*,
24, 193-202; Luce, R. D. (1959). *Individual Choice Behavior*. Wiley.
U.S. EEOC et al. (1978). Uniform Guidelines on Employee Selection
Procedures, 29 CFR 1607.4(D) (the four-fifths rule).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from fairpair.stats._common import ConfidenceInterval, as_labels, check_choice, check_level
from fairpair.stats._crossed import (
    NAMES, POOL, CrossedFResult, _group_stats, _pretest, _satterthwaite, cell_matrix, crossed_difference,
    crossed_omnibus,
)
from fairpair.stats._omnibus import CochranQResult, FriedmanResult, cochran_q, friedman

__all__ = ["CrossedMeanResult", "crossed_mean", "SelectionRatioResult", "selection_ratio", "RatioToBest",
           "ratio_to_best", "SlotEffect", "PositionEffectResult", "position_effect", "FOUR_FIFTHS",
           "matched_table"]

#: The four-fifths threshold of the EEOC Uniform Guidelines, 29 CFR 1607.4(D).
FOUR_FIFTHS = 0.8


@dataclass(frozen=True)
class CrossedMeanResult:
    """Result of :func:`crossed_mean`.

    Attributes
    ----------
    estimate : float
        Mean over templates of the name-averaged template x name cell means
        (a selection rate in [0, 1] for 0/1 values).
    se : float
        Crossed standard error (see :func:`crossed_mean`).
    df : float
        Satterthwaite degrees of freedom (``T - 1`` with names fixed).
    names : {"random", "fixed"}
    n_templates, n_names, n_values : int
        Templates and names with values; values used (non-NaN).
    variance_components : dict of str to float
        ``templates`` and ``names`` contributions to ``se**2``.
    method : str
    note : str or None
    """

    estimate: float
    se: float
    df: float
    names: str
    n_templates: int
    n_names: int
    n_values: int
    variance_components: dict = field(repr=False, default_factory=dict)
    method: str = ""
    note: str | None = None

    def confidence_interval(self, confidence_level: float = 0.95, *, bounds: tuple[float, float] | None = None
                            ) -> ConfidenceInterval:
        """``estimate +/- t_df((1 + level) / 2) * se``, clipped to ``bounds``; NaN limits when undefined."""
        level = check_level(confidence_level)
        if not (np.isfinite(self.se) and np.isfinite(self.df) and self.df > 0):
            return ConfidenceInterval(np.nan, np.nan, level, self.method)
        q = float(special.stdtrit(self.df, 0.5 + level / 2.0)) * self.se
        lo, hi = self.estimate - q, self.estimate + q
        if bounds is not None:
            lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
        return ConfidenceInterval(float(lo), float(hi), level, self.method)


def crossed_mean(values: Any, template: Any, name: Any = None, *, names: str = "random",
                 pool: float | None = POOL) -> CrossedMeanResult:
    """One group's mean with templates (and names) as random factors.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        One value per answer (0/1 for a top pick: the result is a selection
        rate); NaN is left out.
    template : array_like, shape (n,)
        Template of each value; random factor.
    name : array_like, shape (n,), optional
        Name (variant) of each value; ``None``: one name (only templates
        count, as for a slot of the prompt).
    names : {"random", "fixed"}, default "random"
    pool : float or None, default 0.25
        The "sometimes pool" level of :mod:`fairpair.stats._crossed`: the
        name component is dropped when the F test of names against the
        template x name interaction has ``p > pool``.

    Returns
    -------
    CrossedMeanResult
        With ``m[t, n]`` the cell means, the estimate is ``mean_t mean_n
        m[t, n]`` and, under ``m[t, n] = mu + a_t + b_n + c_tn``, the
        method-of-moments variance is ``S_T^2 / T + max(0, S_N^2 - MS_TN /
        T) / n`` (names random) or ``S_T^2 / T`` (names fixed), with
        ``S_T^2`` the variance of the template means, ``S_N^2`` that of the
        name means and ``MS_TN`` the interaction mean square; Satterthwaite
        df. The one-group case of :func:`~fairpair.stats.crossed_difference`
        (empty cells filled the same way). Never raises on degenerate data:
        undefined quantities are NaN with a ``note``.

    Raises
    ------
    ValueError
        Mismatched lengths or a bad ``names``.

    References
    ----------
    Clark (1973); Satterthwaite (1946); Bancroft (1944) for pooling.
    """
    check_choice("names", names, NAMES)
    v = np.asarray(values, dtype=float).ravel()
    nm = np.zeros(v.size, dtype=np.intp) if name is None else name
    means, _cnt, _tl, _nl = cell_matrix(v, template, nm)
    return mean_from_cells(means, names=names, n_values=int((~np.isnan(v)).sum()), pool=pool)


def mean_from_cells(cells: np.ndarray, *, names: str = "random", n_values: int | None = None,
                    pool: float | None = POOL) -> CrossedMeanResult:
    """:func:`crossed_mean` from a (T, n) matrix of cell means, NaN for empty cells."""
    method = f"crossed random effects (templates, names {names}), method of moments, Satterthwaite df"
    x = np.asarray(cells, dtype=float)
    if x.size:
        x = x[~np.isnan(x).all(axis=1)]
        x = x[:, ~np.isnan(x).all(axis=0)]
    t, n = (x.shape if x.ndim == 2 and x.size else (0, 0))
    nan = float("nan")
    if n_values is None:
        n_values = int((~np.isnan(x)).sum())
    if t == 0:
        return CrossedMeanResult(nan, nan, nan, names, 0, 0, n_values, {}, method, "no values")
    rows, g = _group_stats(x)
    est = float(rows.mean())
    notes: list[str] = []
    s2t = float(rows.var(ddof=1)) if t > 1 else nan
    comp = {"templates": s2t / t if t > 1 else nan, "names": 0.0}
    terms = [(1.0 / t, s2t, t - 1.0)] if t > 1 else []
    if t < 2:
        notes.append("one template: the template variance cannot be estimated")
    if names == "random":
        if n < 2:
            comp["names"] = nan
            notes.append("one name: the name variance cannot be estimated")
        else:
            pre = _pretest([g], t) if (pool is not None and t > 1) else nan
            if np.isfinite(pre) and pre > pool:
                notes.append(f"no evidence of name effects (preliminary F test p = {pre:.2g} > {pool:g}): "
                             "the name component is pooled into the template term")
            else:
                ms_res = g.ms_res if np.isfinite(g.ms_res) else 0.0
                val = (g.s2_names - ms_res / t) / g.n
                if val > 0:
                    comp["names"] = float(val)
                    terms.append((1.0 / g.n, g.s2_names, g.n - 1.0))
                    if g.df_res > 0 and np.isfinite(g.ms_res):
                        terms.append((-1.0 / (g.n * t), g.ms_res, float(g.df_res)))
    var = sum(comp.values())
    se = float(np.sqrt(var)) if np.isfinite(var) and var >= 0 else nan
    df = _satterthwaite(terms) if np.isfinite(var) else nan
    if np.isfinite(var) and var == 0:
        notes.append("no variance between templates or names: the standard error is 0")
        df = float(t - 1)
    return CrossedMeanResult(est, se, float(df), names, t, n, n_values, comp, method, "; ".join(notes) or None)


@dataclass(frozen=True)
class SelectionRatioResult:
    """Result of :func:`selection_ratio`: ``rate_a / rate_b`` with a log-scale interval.

    Attributes
    ----------
    ratio : float
        ``rate_a / rate_b`` (the crossed means of each group's 0/1 values).
    rate_a, rate_b : float
    log_se : float
        Delta-method standard error of ``log(ratio)``.
    df : float
        Satterthwaite degrees of freedom of that standard error.
    names : {"random", "fixed"}
    method : str
    note : str or None
    """

    ratio: float
    rate_a: float
    rate_b: float
    log_se: float
    df: float
    names: str
    method: str = ""
    note: str | None = None

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """``exp(log(ratio) +/- t_df * log_se)``; NaN limits when undefined."""
        level = check_level(confidence_level)
        if not (self.ratio > 0 and np.isfinite(self.log_se) and np.isfinite(self.df) and self.df > 0):
            return ConfidenceInterval(np.nan, np.nan, level, self.method)
        q = float(special.stdtrit(self.df, 0.5 + level / 2.0)) * self.log_se
        lr = float(np.log(self.ratio))
        return ConfidenceInterval(float(np.exp(lr - q)), float(np.exp(lr + q)), level, self.method)

    def pvalue_below(self, threshold: float = FOUR_FIFTHS) -> float:
        """One-sided p-value of ``H0: ratio >= threshold`` (small: the ratio is below it); NaN when undefined."""
        if not (self.ratio > 0 and np.isfinite(self.log_se) and self.log_se > 0 and np.isfinite(self.df)):
            return float("nan")
        z = (np.log(self.ratio) - np.log(threshold)) / self.log_se
        return float(special.stdtr(self.df, z))


def selection_ratio(values: Any, template: Any, name: Any, group: Any, *, groups: tuple[Any, Any],
                    names: str = "random") -> SelectionRatioResult:
    """Ratio of two groups' selection rates, ``rate_a / rate_b``, with a cluster-aware log interval.

    Parameters
    ----------
    values : array_like of {0, 1, NaN}, shape (n,)
        Top pick of each (matched set, group) entry.
    template, name, group : array_like, shape (n,)
        As in :func:`~fairpair.stats.crossed_difference`; only the two
        groups in ``groups`` are used.
    groups : (a, b)
        Numerator and denominator group.
    names : {"random", "fixed"}

    Returns
    -------
    SelectionRatioResult
        Delta method: ``log r_a - log r_b`` is linearised as ``(r^_a -
        r_a) / r_a - (r^_b - r_b) / r_b``, the difference of the two groups'
        means of the values divided by their own rate, whose crossed
        standard error (templates and names random, Satterthwaite df) is
        that of :func:`~fairpair.stats.crossed_difference` on the scaled
        values. So the interval counts the template and name clusters and
        the negative dependence of the candidates of one set. NaN (with a
        note) when a rate is 0.

    Raises
    ------
    ValueError
        Mismatched lengths, a group not present, or a name in two groups.

    References
    ----------
    Katz, D., Baptista, J., Azen, S. P., & Pike, M. C. (1978). Obtaining
    confidence intervals for the risk ratio in cohort studies.
    *Biometrics*, 34, 469-474 (the log-ratio delta method); Clark (1973)
    for the crossed variance.
    """
    check_choice("names", names, NAMES)
    v = np.asarray(values, dtype=float).ravel()
    gl, gc = as_labels(group, "group", v.size)
    labels = list(gl)
    for g in groups:
        if g not in labels:
            raise ValueError(f"group {g!r} not present; groups: {labels}")
    ia, ib = labels.index(groups[0]), labels.index(groups[1])
    keep = (gc == ia) | (gc == ib)
    tmpl = np.asarray(template.to_numpy() if hasattr(template, "to_numpy") else template)[keep]
    nm = np.asarray(name.to_numpy() if hasattr(name, "to_numpy") else name)[keep]
    g2 = gc[keep]
    vv = v[keep]
    method = "log ratio, delta method with the crossed standard error (templates, names " + names + ")"
    ra = crossed_mean(vv[g2 == ia], tmpl[g2 == ia], nm[g2 == ia], names=names).estimate
    rb = crossed_mean(vv[g2 == ib], tmpl[g2 == ib], nm[g2 == ib], names=names).estimate
    nan = float("nan")
    if not (np.isfinite(ra) and np.isfinite(rb)):
        return SelectionRatioResult(nan, ra, rb, nan, nan, names, method, "a group has no values")
    if rb == 0:
        return SelectionRatioResult(nan, ra, rb, nan, nan, names, method, f"group {groups[1]!r} was never selected")
    if ra == 0:
        return SelectionRatioResult(0.0, ra, rb, nan, nan, names, method,
                                    f"group {groups[0]!r} was never selected: no log interval")
    scaled = np.where(g2 == ia, vv / ra, vv / rb)
    cr = crossed_difference(scaled, tmpl, nm, np.where(g2 == ia, 0, 1), groups=(0, 1), names=names)
    return SelectionRatioResult(float(ra / rb), float(ra), float(rb), float(cr.se), float(cr.df), names, method,
                                cr.note)


@dataclass(frozen=True)
class RatioToBest:
    """One group's selection rate over the highest one (:func:`ratio_to_best`).

    Attributes
    ----------
    group : label
    rate : float
    ratio : float
        ``rate / max rate`` (1 for the most selected group).
    reference : label
        The group in the denominator (the most selected, or the one given).
    ci : ConfidenceInterval
        ``1 - alpha`` interval of ``rate / max over groups of the true rate``
        (or of ``rate / rate_reference`` with a fixed reference).
    lower_one_sided : float
        Lower limit at one-sided level ``1 - alpha`` (the ``1 - 2 alpha``
        interval's lower end), for the "at least four fifths" decision.
    pvalue_below : float
        p-value of ``H0: ratio >= threshold`` (Bonferroni over the
        candidate references when the best is chosen from the data), in the
        two-sided convention (twice the one-sided p): below ``alpha``
        exactly when ``ci.high < threshold``.
    pairwise : tuple of SelectionRatioResult
        The ratios to each other group used.
    note : str or None
    """

    group: Any
    rate: float
    ratio: float
    reference: Any
    ci: ConfidenceInterval
    lower_one_sided: float
    pvalue_below: float
    pairwise: tuple = field(repr=False, default=())
    note: str | None = None


def ratio_to_best(values: Any, template: Any, name: Any, group: Any, *, reference: Any = None,
                  names: str = "random", confidence_level: float = 0.95,
                  threshold: float = FOUR_FIFTHS) -> tuple[RatioToBest, ...]:
    """Each group's selection rate over the most selected group's, with intervals (the four-fifths rule).

    Parameters
    ----------
    values, template, name, group : array_like, shape (n,)
        As in :func:`selection_ratio` (0/1 top picks), any number of groups.
    reference : label, optional
        A group fixed before the audit as the denominator. Default: the
        group with the highest estimated rate.
    names : {"random", "fixed"}
    confidence_level : float, default 0.95
        ``1 - alpha``.
    threshold : float, default 0.8
        The four-fifths line (29 CFR 1607.4(D)).

    Returns
    -------
    tuple of RatioToBest
        One per group, in the groups' sorted order. With a fixed
        reference, the intervals are those of :func:`selection_ratio`.
        With the best chosen from the data, the target is ``theta_g = r_g /
        max_h r_h = min(1, min_{h != g} r_g / r_h)`` and its interval is
        ``[min(1, min_h L_gh), min(1, min_h U_gh)]`` with ``L_gh`` the lower
        limit of the ``1 - alpha`` interval of ``r_g / r_h`` and ``U_gh``
        the upper limit at ``1 - alpha / (k - 1)`` (Bonferroni over the
        ``k - 1`` candidates for the best): if every interval of group g
        covers its ratio, the interval covers ``theta_g`` (multiple
        comparisons with the best, Hsu 1984), so choosing the best from the
        same data does not make the interval too short.

    Raises
    ------
    ValueError
        For fewer than two groups, an unknown ``reference`` or bad levels.

    References
    ----------
    Hsu (1984); Katz et al. (1978); 29 CFR 1607.4(D).
    """
    level = check_level(confidence_level)
    alpha = 1.0 - level
    v = np.asarray(values, dtype=float).ravel()
    gl, gc = as_labels(group, "group", v.size)
    labels = list(gl)
    k = len(labels)
    if k < 2:
        raise ValueError(f"ratio_to_best needs at least two groups; got {labels}")
    if reference is not None and reference not in labels:
        raise ValueError(f"reference {reference!r} is not a group; groups: {labels}")
    tmpl = np.asarray(template.to_numpy() if hasattr(template, "to_numpy") else template)
    nm = np.asarray(name.to_numpy() if hasattr(name, "to_numpy") else name)
    rates = {g: crossed_mean(v[gc == i], tmpl[gc == i], nm[gc == i], names=names).estimate
             for i, g in enumerate(labels)}
    finite = {g: r for g, r in rates.items() if np.isfinite(r)}
    best = reference if reference is not None else (max(finite, key=lambda g: finite[g]) if finite else labels[0])
    pair: dict[tuple[Any, Any], SelectionRatioResult] = {}

    def _pair(a, b):
        if (a, b) not in pair:
            pair[(a, b)] = selection_ratio(v, tmpl, nm, gc, groups=(labels.index(a), labels.index(b)), names=names)
        return pair[(a, b)]

    out = []
    for g in labels:
        rate = rates[g]
        rb = rates[best]
        ratio = float(rate / rb) if (np.isfinite(rate) and np.isfinite(rb) and rb > 0) else float("nan")
        if reference is not None:
            if g == best:
                out.append(RatioToBest(g, rate, 1.0, best, ConfidenceInterval(1.0, 1.0, level, "reference"), 1.0,
                                       float("nan"), (), "the reference group"))
                continue
            r = _pair(g, best)
            ci = r.confidence_interval(level)
            lo1 = r.confidence_interval(1.0 - 2.0 * alpha).low
            pb = r.pvalue_below(threshold)
            out.append(RatioToBest(g, rate, ratio, best, ci, lo1, float(min(1.0, 2.0 * pb)) if np.isfinite(pb)
                                   else float("nan"), (r,), r.note if np.isnan(ci.low) else None))
            continue
        others = [h for h in labels if h != g]
        rs = [_pair(g, h) for h in others]
        lows = [r.confidence_interval(level).low for r in rs]
        highs = [r.confidence_interval(1.0 - alpha / (k - 1)).high for r in rs]
        low1 = [r.confidence_interval(1.0 - 2.0 * alpha).low for r in rs]
        pbs = [r.pvalue_below(threshold) for r in rs]
        notes = [r.note for r in rs if r.note]
        method = (f"ratio to the best (Hsu 1984, Bonferroni over {k - 1} candidates): min over the other groups "
                  f"of the log-ratio intervals")
        if any(np.isnan(x) for x in lows + highs):
            ci = ConfidenceInterval(np.nan, np.nan, level, method)
            lo1 = float("nan")
        else:
            ci = ConfidenceInterval(float(min(1.0, min(lows))), float(min(1.0, min(highs))), level, method)
            lo1 = float(min(1.0, min(low1)))
        pb = float(min(1.0, 2.0 * (k - 1) * min(pbs))) if all(np.isfinite(pbs)) else float("nan")
        out.append(RatioToBest(g, rate, 1.0 if g == best and np.isfinite(ratio) else ratio, best, ci, lo1, pb,
                               tuple(rs), ("; ".join(dict.fromkeys(notes)) or None) if np.isnan(ci.low) else None))
    return tuple(out)


def matched_table(values: Any, sets: Any, columns: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sets x columns table of ``values`` (NaN where a set lacks a column): ``(table, set_labels, column_labels)``.

    Raises ValueError when a set has two entries in one column.
    """
    v = np.asarray(values, dtype=float).ravel()
    sl, sc = as_labels(sets, "set", v.size)
    cl, cc = as_labels(columns, "column", v.size)
    flat = sc * len(cl) + cc
    if np.unique(flat).size != flat.size:
        raise ValueError("a matched set has two entries for the same group or slot")
    table = np.full((len(sl), len(cl)), np.nan)
    table[sc, cc] = v
    return table, sl, cl


@dataclass(frozen=True)
class SlotEffect:
    """Top-pick rate and mean rank of one slot (1-based position in the prompt), with intervals."""

    slot: int
    n: int
    top_rate: CrossedMeanResult
    mean_rank: CrossedMeanResult


@dataclass(frozen=True)
class PositionEffectResult:
    """Result of :func:`position_effect`.

    Attributes
    ----------
    slots : tuple of SlotEffect
    top_test, rank_test : CrossedFResult
        F test that every slot has the same top-pick rate (mean rank), on
        template x slot means: ``F = MS_slot / MS_slot x template``, df
        ``(k - 1, (k - 1)(T - 1))`` (templates random).
    cochran : CochranQResult
        Cochran's Q of the top pick across slots, sets as independent (secondary).
    friedman : FriedmanResult or None
        Friedman's test of the ranks across slots, sets as independent
        (secondary); None for k = 2.
    """

    slots: tuple
    top_test: CrossedFResult
    rank_test: CrossedFResult
    cochran: CochranQResult
    friedman: FriedmanResult | None


def position_effect(top: Any, rank: Any, template: Any, slot: Any, sets: Any) -> PositionEffectResult:
    """Position effect of a ranking design: top-pick rate and mean rank by slot, with intervals and tests.

    Parameters
    ----------
    top : array_like of {0, 1, NaN}, shape (n,)
        Top pick of each (matched set, candidate) entry.
    rank : array_like of float, shape (n,)
        Rank (1 = first), NaN where the ranking is incomplete.
    template, slot, sets : array_like, shape (n,)
        Template, slot (1-based position) and matched set of each entry.

    Returns
    -------
    PositionEffectResult
        Each slot's rate and mean rank come from :func:`crossed_mean` with
        the slot as a single "name" (templates random: the names are
        counterbalanced over slots by the Latin square, so they are not a
        factor of a slot's mean). The F tests use the same template x slot
        means (:func:`~fairpair.stats.crossed_omnibus` with names fixed).

    Raises
    ------
    ValueError
        Mismatched lengths, or two entries of one set in one slot.
    """
    t = np.asarray(top, dtype=float).ravel()
    r = np.asarray(rank, dtype=float).ravel()
    tmpl = np.asarray(template.to_numpy() if hasattr(template, "to_numpy") else template)
    sl = np.asarray(slot.to_numpy() if hasattr(slot, "to_numpy") else slot)
    labels, codes = as_labels(sl, "slot", t.size)
    slots = []
    top_cells, rank_cells = [], []
    for i, s in enumerate(labels):
        m = codes == i
        tr = crossed_mean(t[m], tmpl[m], None, names="fixed")
        mr = crossed_mean(r[m], tmpl[m], None, names="fixed")
        slots.append(SlotEffect(int(s), int(m.sum()), tr, mr))
        top_cells.append(cell_matrix(np.where(m, t, np.nan), tmpl, np.zeros(t.size, dtype=np.intp))[0])
        rank_cells.append(cell_matrix(np.where(m, r, np.nan), tmpl, np.zeros(t.size, dtype=np.intp))[0])
    top_test = crossed_omnibus(top_cells, names="fixed") if len(labels) >= 2 else CrossedFResult(
        np.nan, np.nan, 0.0, 0.0, "", "one slot")
    rank_test = crossed_omnibus(rank_cells, names="fixed") if len(labels) >= 2 else top_test
    table, _s, _c = matched_table(t, sets, sl)
    cq = cochran_q(table)
    fr = None
    if len(labels) >= 3:
        rtable, _s, _c = matched_table(r, sets, sl)
        fr = friedman(rtable)
    return PositionEffectResult(tuple(slots), top_test, rank_test, cq, fr)
