"""Statistics of the ranking design: k candidates (one per group) in one prompt, one answer per matched set.

A hiring or lending audit puts k equally qualified candidates in one prompt,
one per group, each with a name (variant) of its group, in an order rotated
over the matched sets (a Latin square), and asks the model to rank them or
pick one. One answer covers the whole matched set, so the functions here
take a matched table: one row per set, one column per group (or per slot),
holding the top pick (0/1) or the rank (1 = first), with the set's template
and name set (the names of all its candidates) beside it.

The answers are not independent: matched sets are nested in templates and
the names are crossed with the templates. Every interval and cluster-aware
test here therefore works on template x name-set cell means with the
crossed random-effects machinery of :mod:`fairpair.stats._crossed` (Clark
1973; Judd, Westfall & Kenny 2012), templates always random and names
random (generalise to other names of the groups) or fixed (these names).
The random factor for names is the *name set*: one answer depends on every
candidate's name, and the ``ranking`` design pairs name position ``p`` of
every group in one prompt, so the k names of a set repeat together over the
templates. Treating each candidate's name as an independent factor (as
:func:`~fairpair.stats.crossed_difference` does for separate conversations)
understates the variance of a difference between two candidates of the
same prompts (the ranked-above preference covered 90% instead of 95% in the
simulation). When a group's name recurs in sets with other names (each
request draws its names from a short list, as published audits do), the
name-set unit misses that sharing: the functions below then take a
:class:`~fairpair.stats._sharednames.NameClusters` as ``name`` and add the
covariance of sets that share a name (:func:`with_shared_names`), or, when
the name sets are not crossed with the templates at all, use the multiway
cluster-robust variance over templates and names
(:func:`fairpair.stats._sharednames.multiway_mean_variance`; Cameron,
Gelbach & Miller 2011).

* :func:`crossed_mean` -- the mean of a per-set value (a selection rate for
  0/1 top picks, a mean rank) with the crossed standard error;
* :func:`paired_difference` -- the mean of the per-set difference between
  two candidates (top-pick risk difference, ranked-above preference);
* :func:`selection_ratio` -- the ratio of two groups' selection rates with a
  delta-method interval on the log scale (crossed standard error of the
  linearised per-set values);
* :func:`ratio_to_best` -- each group's selection rate over the highest
  rate (the "four-fifths rule", EEOC Uniform Guidelines on Employee
  Selection Procedures, 29 CFR 1607.4(D)) with intervals that stay valid
  although the most selected group is picked from the data (multiple
  comparisons with the best, Hsu 1984, in its Bonferroni form);
* :func:`crossed_k_test` -- equal means over the k columns: F (names fixed)
  or Clark's quasi-F with templates and name sets crossed;
* :func:`stratified_k_test` / :func:`set_k_test` -- the same with templates
  fixed (these postings): a stratified Hotelling F, with the covariance of
  sets sharing a name in matrix form (:func:`~fairpair.stats._sharednames.
  shared_name_covariance`); :func:`multiway_k_test` with templates random and
  names drawn per request (the multiway covariance of the template means);
* :func:`position_effect` -- the top-pick rate and mean rank of each slot,
  with intervals and :func:`crossed_k_test`, plus Cochran's Q and Friedman
  over the sets (which treat the sets as independent, reported as
  secondary); no shared-name term (a name's effect on a slot cancels over
  the slots it rotates through).

The simulation that checked these rules (level, coverage, power, with
template and name random effects and nested repetitions drawn from a
Plackett-Luce model) is ``benchmarks/sim_ranking.py``; its figures are in
``benchmarks/HISTORY.md``.

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
from fairpair.stats._crossed import NAMES, POOL, CrossedFResult, _group_stats, _pretest, _satterthwaite, cell_matrix
from fairpair.stats._omnibus import CochranQResult, FriedmanResult, cochran_q, friedman
from fairpair.stats._scenarios import stratified_difference
from fairpair.stats._sharednames import (
    NameClusters,
    multiway_mean_covariance,
    multiway_mean_variance,
    psd_part,
    shared_name_covariance,
    shared_name_variance,
)

__all__ = ["CrossedMeanResult", "crossed_mean", "set_mean", "TEMPLATES", "paired_difference",
           "SelectionRatioResult", "selection_ratio", "RatioToBest", "ratio_to_best", "crossed_k_test",
           "stratified_k_test", "set_k_test", "multiway_k_test", "SlotEffect", "PositionEffectResult",
           "position_effect", "FOUR_FIFTHS", "matched_table"]

#: The estimands of the templates: a random factor (scenarios like these) or fixed (these scenarios).
TEMPLATES = ("random", "fixed")

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

    def equivalence_interval(self, confidence_level: float = 0.90, *,
                             bounds: tuple[float, float] | None = None) -> ConfidenceInterval:
        """The interval of the ``pass`` rule: :meth:`confidence_interval` at ``confidence_level`` (no
        skewness correction, unlike :meth:`fairpair.stats.CrossedDifferenceResult.equivalence_interval`)."""
        return self.confidence_interval(confidence_level, bounds=bounds)

    @property
    def pvalue(self) -> float:
        """Two-sided p-value of ``estimate = 0``, Student t with ``df``: for the mean of a per-set difference,
        the test of no difference. NaN when ``se`` is 0 or undefined."""
        if not (np.isfinite(self.se) and self.se > 0 and np.isfinite(self.df)):
            return float("nan")
        return float(2.0 * special.stdtr(self.df, -abs(self.estimate / self.se)))


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
            if pool is not None and np.isfinite(pre) and pre > pool:
                notes.append(f"no evidence of name effects (preliminary F test p = {pre:.2g} > {pool:g}): "
                             "the name component is pooled into the template term")
            else:
                ms_res = g.ms_res if np.isfinite(g.ms_res) else 0.0
                # h = 1/T for a complete table; larger with empty cells (see fairpair.stats._crossed._additive_fill)
                val = (g.s2_names - ms_res * g.h) / g.n if np.isfinite(g.h) else nan
                if not np.isfinite(val):
                    comp["names"] = nan
                    notes.append("the names cannot be told apart from the templates: the name variance cannot be "
                                 "estimated")
                elif val > 0:
                    comp["names"] = float(val)
                    terms.append((1.0 / g.n, g.s2_names, g.n - 1.0))
                    if g.df_res > 0 and np.isfinite(g.ms_res):
                        terms.append((-g.h / g.n, g.ms_res, float(g.df_res)))
    var = sum(comp.values())
    se = float(np.sqrt(var)) if np.isfinite(var) and var >= 0 else nan
    df = _satterthwaite(terms) if np.isfinite(var) else nan
    if np.isfinite(var) and var == 0:
        notes.append("no variance between templates or names: the standard error is 0")
        df = float(t - 1)
    return CrossedMeanResult(est, se, float(df), names, t, n, n_values, comp, method, "; ".join(notes) or None)


def set_mean(values: Any, template: Any, name: Any = None, *, names: str = "random",
             templates: str = "random") -> CrossedMeanResult:
    """A per-set value's mean (a selection rate for 0/1 top picks) under either templates estimand.

    ``templates="random"``: :func:`crossed_mean` (templates, and names when
    ``names="random"``, random factors). ``templates="fixed"``: the claim is
    about *these* templates (one job posting, a handful): the mean over the
    templates with a value of each template's mean, name sets random, its
    variance ``sum_t s_t^2 / (n_t T^2)`` with Welch-Satterthwaite df
    (:func:`fairpair.stats.stratified_difference` of ``values`` against 0;
    ``names`` is then not used). Shapes as :func:`crossed_mean`; NaN is left
    out. Raises ``ValueError`` for a bad ``names`` or ``templates``.
    """
    check_choice("templates", templates, TEMPLATES)
    nc = name if isinstance(name, NameClusters) else None
    if templates == "random":
        res = _templates_random(values, template, name, names=names, pool=POOL)
    else:
        v = np.asarray(values, dtype=float).ravel()
        r = stratified_difference(v, np.zeros_like(v), _per_set(template, "template"))
        res = CrossedMeanResult(float(r.estimate), float(r.se), float(r.df), "random", r.n_templates, r.n_values,
                                r.n_values, dict(r.variance_components), r.method.replace("per-set difference",
                                                                                         "per-set value"), r.note)
    return with_shared_names(res, values, nc, names=names, templates=templates)


def _templates_random(values: Any, template: Any, name: Any, *, names: str, pool: float | None) -> CrossedMeanResult:
    """Templates random: :func:`crossed_mean` over template x name-set cells when the name sets are crossed with
    the templates; with a :class:`~fairpair.stats._sharednames.NameClusters` whose name sets are not (names drawn
    per request), the mean of the template means with ``S_T^2 / T`` (``T - 1`` df), the names entering through
    :func:`with_shared_names`."""
    from dataclasses import replace

    if not isinstance(name, NameClusters):
        return crossed_mean(values, template, name, names=names, pool=pool)
    if name.crossed:
        return crossed_mean(values, template, name.nameset, names=names, pool=pool)
    res = crossed_mean(values, template, None, names="fixed")
    res = replace(res, names=names, n_names=int(np.unique(name.nameset).size),
                  method="templates random, mean of the template means (name sets not crossed with the templates)")
    if names != "random" or not np.isfinite(res.estimate):
        return res
    mv = multiway_mean_variance(values, name)
    if not np.isfinite(mv.variance):
        return res
    var = max(mv.variance, 0.0)
    return replace(res, se=float(np.sqrt(var)), df=mv.df, variance_components={"templates and names": var},
                   method="templates random, mean of the template means; templates and each group's names as "
                   "random factors, multiway cluster-robust (Cameron, Gelbach & Miller 2011)")


def with_shared_names(res: Any, values: Any, clusters: NameClusters | None, *, names: str = "random",
                      templates: str = "random") -> Any:
    """``res`` (a :class:`CrossedMeanResult` or :class:`~fairpair.stats.CrossedDifferenceResult` of the mean of
    ``values``) with the covariance of sets that share a name added (names random only).

    The crossed (templates random) and stratified (templates fixed) estimators take the name *set* as the
    random unit; when a group's name recurs in sets with other names, :func:`fairpair.stats._sharednames.
    shared_name_variance` (multiway cluster-robust, Cameron, Gelbach & Miller 2011) adds ``max(0, V_shared)``
    to ``se**2`` (component ``shared names``), and the df become Satterthwaite's over the two terms (the
    shared term with the fewest names of a group minus one). ``clusters`` None, names fixed, or no sharing
    beyond the name sets: ``res`` unchanged. Level and coverage: ``benchmarks/sim_ranking_fixed.py`` and
    ``benchmarks/sim_ranking.py``'s shared-name rows.
    """
    from dataclasses import replace

    if clusters is None or names != "random" or not np.isfinite(res.se):
        return res
    if templates == "random" and not clusters.crossed:  # already in: multiway_mean_variance
        return res
    extra = shared_name_variance(values, clusters, templates=templates)
    v0 = float(res.se) ** 2
    if not (np.isfinite(extra.variance) and extra.variance > 1e-12 * v0):
        return res
    var = v0 + extra.variance
    se = float(np.sqrt(var))
    df0 = float(res.df)
    den = (v0 ** 2 / df0 if (np.isfinite(df0) and df0 > 0 and v0 > 0) else 0.0) + extra.variance ** 2 / extra.df
    df = float(var ** 2 / den) if np.isfinite(df0) else df0
    comp = {**res.variance_components, "shared names": float(extra.variance)}
    change: dict[str, Any] = dict(se=se, df=df, variance_components=comp)
    if hasattr(res, "statistic"):  # CrossedDifferenceResult
        stat = res.estimate / se if se > 0 else float("nan")
        change.update(statistic=float(stat), pvalue=float(2.0 * special.stdtr(df, -abs(stat)))
                      if np.isfinite(stat) and np.isfinite(df) else float("nan"))
        if hasattr(res, "skewness") and np.isfinite(res.skewness) and se > 0:
            change["skewness"] = float(res.skewness * (float(res.se) / se) ** 3)
    return replace(res, **change)


def _per_set(x: Any, name: str) -> Any:
    if isinstance(x, NameClusters):
        return x
    to_numpy = getattr(x, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy is not None else x)


def _table(table: Any) -> np.ndarray:
    arr = np.asarray(table.to_numpy(dtype=float) if hasattr(table, "to_numpy") else table, dtype=float)
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise ValueError(f"table must be 2-D (n_sets x k candidates) with k >= 2; got shape {arr.shape}")
    return arr


def paired_difference(x: Any, y: Any, template: Any, name: Any = None, *, names: str = "random",
                      pool: float | None = POOL) -> CrossedMeanResult:
    """Mean of the per-set difference ``x - y`` of two candidates of the same matched sets, crossed SE.

    Parameters
    ----------
    x, y : array_like of float, shape (n_sets,)
        The two candidates' values in each set (e.g. top picks, or
        ``1[A above B]`` and ``1[B above A]``); NaN drops the set.
    template, name : array_like, shape (n_sets,)
        Template and name set of each matched set (the names of all its
        candidates: one answer depends on all of them, so the name set,
        not one candidate's name, is the unit that repeats over templates).
        ``name`` may be a :class:`~fairpair.stats._sharednames.NameClusters`
        (each group's name per set): names random then count a name shared
        by sets with other names (:func:`with_shared_names`).
    names : {"random", "fixed"}

    Returns
    -------
    CrossedMeanResult
        :func:`crossed_mean` of ``x - y``: templates and name sets crossed
        random factors. Treating the two candidates' names as independent
        random factors (:func:`~fairpair.stats.crossed_difference`) would
        miss that both sit in the same prompts and understate the variance.
    """
    xa = np.asarray(x, dtype=float).ravel()
    ya = np.asarray(y, dtype=float).ravel()
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have one value per set; got {xa.size} and {ya.size}")
    res = _templates_random(xa - ya, template, name, names=names, pool=pool)
    return with_shared_names(res, xa - ya, name if isinstance(name, NameClusters) else None, names=names)


@dataclass(frozen=True)
class SelectionRatioResult:
    """Result of :func:`selection_ratio`: ``rate_a / rate_b`` with a log-scale interval.

    Attributes
    ----------
    ratio : float
        ``rate_a / rate_b`` (the crossed means of the two columns' 0/1 top picks).
    rate_a, rate_b : float
    log_se : float
        Delta-method standard error of ``log(ratio)``.
    df : float
        Satterthwaite degrees of freedom of that standard error.
    names : {"random", "fixed"}
    method : str
    note : str or None
    templates : {"random", "fixed"}
        The templates estimand (see :func:`selection_ratio`).
    """

    ratio: float
    rate_a: float
    rate_b: float
    log_se: float
    df: float
    names: str
    method: str = ""
    note: str | None = None
    templates: str = "random"

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """``exp(log(ratio) +/- t_df * log_se)``; NaN limits when undefined."""
        level = check_level(confidence_level)
        if not (self.ratio > 0 and np.isfinite(self.log_se) and np.isfinite(self.df) and self.df > 0):
            return ConfidenceInterval(np.nan, np.nan, level, self.method)
        q = float(special.stdtrit(self.df, 0.5 + level / 2.0)) * self.log_se
        lr = float(np.log(self.ratio))
        with np.errstate(over="ignore"):  # a level near 1 with few df: an infinite upper limit
            return ConfidenceInterval(float(np.exp(lr - q)), float(np.exp(lr + q)), level, self.method)

    def pvalue_below(self, threshold: float = FOUR_FIFTHS) -> float:
        """One-sided p-value of ``H0: ratio >= threshold`` (small: the ratio is below it); NaN when undefined."""
        if not (self.ratio > 0 and np.isfinite(self.log_se) and np.isfinite(self.df)):
            return float("nan")
        if self.log_se == 0:
            return 0.0 if self.ratio < threshold else 1.0
        z = (np.log(self.ratio) - np.log(threshold)) / self.log_se
        return float(special.stdtr(self.df, z))


def selection_ratio(table: Any, template: Any, name: Any = None, *, columns: tuple[int, int] = (0, 1),
                    names: str = "random", templates: str = "random") -> SelectionRatioResult:
    """Ratio of two candidates' selection rates over matched sets, with a cluster-aware log interval.

    Parameters
    ----------
    table : array_like of {0, 1, NaN}, shape (n_sets, k)
        Top pick of each group's candidate in each matched set (one 1 per
        parsed row); a row with NaN is left out.
    template, name : array_like, shape (n_sets,)
        Template and name set of each matched set (see :func:`paired_difference`).
        ``name`` may be a :class:`~fairpair.stats._sharednames.NameClusters`
        (each group's name per set): names random then count a name shared
        by sets with other names (:func:`with_shared_names`).
    columns : (a, b), default (0, 1)
        Numerator and denominator columns.
    names : {"random", "fixed"}
    templates : {"random", "fixed"}, default "random"
        ``"fixed"``: the ratio of *these* templates' (postings') selection
        rates, each rate the mean over the templates of its per-template
        rate (:func:`set_mean`), name sets random; ``names`` is not used.

    Returns
    -------
    SelectionRatioResult
        Delta method: ``log r^_a - log r^_b`` is linearised as the mean over
        sets of ``top_a / r^_a - top_b / r^_b``, whose standard error counts
        the clusters and the negative dependence of the candidates of one
        set: crossed (:func:`crossed_mean`: templates and name sets random,
        Satterthwaite df) or, templates fixed, stratified over the templates
        (:func:`set_mean`: ``sum_t s_t^2 / (n_t T^2)``, Welch-Satterthwaite
        df). With templates fixed and equal sets per template the ratio is
        the Mantel-Haenszel risk ratio of the 2 x 2 x T table of (group,
        picked) by template (:class:`statsmodels.stats.contingency_tables.StratifiedTable`
        ``riskratio_pooled``); its variance is not Greenland-Robins' (which
        takes the two groups as independent samples) but the matched-pairs
        one: with one template, ``n / (n - 1)`` times Nam & Blackwelder's
        (2002) ``(b + c) / ((a + b)(a + c))`` of the paired 2 x 2 table. NaN
        (with a note) when a rate is 0.

    Raises
    ------
    ValueError
        A malformed table or a column out of range.

    References
    ----------
    Katz, D., Baptista, J., Azen, S. P., & Pike, M. C. (1978). Obtaining
    confidence intervals for the risk ratio in cohort studies.
    *Biometrics*, 34, 469-474 (the log-ratio delta method); Clark (1973).
    Mantel, N., & Haenszel, W. (1959). *JNCI*, 22, 719-748; Greenland, S., &
    Robins, J. M. (1985). *Biometrics*, 41, 55-68. Nam, J., & Blackwelder,
    W. C. (2002). Analysis of the ratio of marginal probabilities in a
    matched-pair setting. *Statistics in Medicine*, 21, 689-699. Cochran, W.
    G. (1977). *Sampling Techniques*, 3rd ed., ch. 5 (the stratified mean).
    """
    check_choice("names", names, NAMES)
    check_choice("templates", templates, TEMPLATES)
    arr = _table(table)
    a, b = columns
    if not (0 <= a < arr.shape[1] and 0 <= b < arr.shape[1]) or a == b:
        raise ValueError(f"columns must be two distinct indices in 0..{arr.shape[1] - 1}; got {columns!r}")
    tmpl = _per_set(template, "template")
    nm = np.zeros(arr.shape[0], dtype=np.intp) if name is None else _per_set(name, "name")
    method = ("log ratio, delta method with the crossed standard error (templates, names " + names + ")"
              if templates == "random" else
              "log ratio, delta method with the stratified standard error (templates fixed, name sets random)")

    def mean(v: np.ndarray) -> CrossedMeanResult:
        return set_mean(v, tmpl, nm, names=names, templates=templates)

    ra = mean(arr[:, a]).estimate
    rb = mean(arr[:, b]).estimate
    nan = float("nan")
    out = dict(names=names, method=method, templates=templates)
    if not (np.isfinite(ra) and np.isfinite(rb)):
        return SelectionRatioResult(nan, ra, rb, nan, nan, note="no parsed sets", **out)
    if rb == 0:
        return SelectionRatioResult(nan, ra, rb, nan, nan, note="the denominator was never selected", **out)
    if ra == 0:
        return SelectionRatioResult(0.0, ra, rb, nan, nan, note="never selected: no log interval", **out)
    cm = mean(arr[:, a] / ra - arr[:, b] / rb)
    return SelectionRatioResult(float(ra / rb), float(ra), float(rb), float(cm.se), float(cm.df), note=cm.note,
                                **out)


@dataclass(frozen=True)
class RatioToBest:
    """One column's selection rate over the highest one (:func:`ratio_to_best`).

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
    best_from_data : bool
        True when the reference is the most selected group chosen from the data.
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
    best_from_data: bool = True

    def confidence_interval(self, confidence_level: float) -> ConfidenceInterval:
        """``ci`` at another level (e.g. the level that matches a Holm-adjusted verdict,
        :func:`fairpair.stats.verdict_alphas`), from the same pairwise ratios: with a fixed reference the
        ratio's own interval, with the best chosen from the data the construction of :func:`ratio_to_best`
        (upper limits at ``1 - (1 - confidence_level) / (k - 1)``). Its upper end is below a threshold
        exactly when ``pvalue_below`` is below ``1 - confidence_level``. NaN limits when undefined."""
        level = check_level(confidence_level)
        nan = float("nan")
        if not self.pairwise:
            return ConfidenceInterval(self.ci.low, self.ci.high, level, self.ci.method)
        if not self.best_from_data:
            return self.pairwise[0].confidence_interval(level)
        k1 = len(self.pairwise)
        lows = [r.confidence_interval(level).low for r in self.pairwise]
        highs = [r.confidence_interval(1.0 - (1.0 - level) / k1).high for r in self.pairwise]
        if any(np.isnan(x) for x in lows + highs):
            return ConfidenceInterval(nan, nan, level, self.ci.method)
        return ConfidenceInterval(float(min(1.0, min(lows))), float(min(1.0, min(highs))), level, self.ci.method)


_HSU_METHOD = ("ratio to the best (Hsu 1984; Bonferroni over {k1} candidates): the minimum over the other groups of "
               "the log-ratio intervals")


def ratio_to_best(table: Any, template: Any, name: Any = None, *, labels: Any = None, reference: Any = None,
                  names: str = "random", confidence_level: float = 0.95,
                  threshold: float = FOUR_FIFTHS, templates: str = "random") -> tuple[RatioToBest, ...]:
    """Each group's selection rate over the most selected group's, with intervals (the four-fifths rule).

    Parameters
    ----------
    table : array_like of {0, 1, NaN}, shape (n_sets, k)
        Top pick of each group's candidate per matched set, k >= 2.
    template, name : array_like, shape (n_sets,)
        As in :func:`selection_ratio`.
    labels : sequence, optional
        The k column labels (default ``0..k-1``).
    reference : label, optional
        A group fixed before the audit as the denominator. Default: the
        group with the highest estimated rate.
    names : {"random", "fixed"}
    confidence_level : float, default 0.95
        ``1 - alpha``.
    threshold : float, default 0.8
        The four-fifths line (29 CFR 1607.4(D)).
    templates : {"random", "fixed"}, default "random"
        ``"fixed"``: the rates and ratios of these templates (postings), as
        in :func:`selection_ratio`.

    Returns
    -------
    tuple of RatioToBest
        One per column. With a fixed reference the intervals are those of
        :func:`selection_ratio`. With the best chosen from the data the
        target is ``theta_g = r_g / max_h r_h = min(1, min_{h != g} r_g /
        r_h)`` and its interval is ``[min(1, min_h L_gh), min(1, min_h
        U_gh)]``, ``L_gh`` the lower limit of the ``1 - alpha`` interval of
        ``r_g / r_h`` and ``U_gh`` the upper limit at ``1 - alpha / (k -
        1)`` (Bonferroni over the ``k - 1`` candidates for the best): when
        the intervals of group g cover their ratios, this one covers
        ``theta_g`` (multiple comparisons with the best, Hsu 1984), so
        choosing the best from the same data does not shorten it.

    Raises
    ------
    ValueError
        A malformed table, wrong ``labels``, an unknown ``reference`` or a
        bad level.

    References
    ----------
    Hsu (1984); Katz et al. (1978); 29 CFR 1607.4(D).
    """
    level = check_level(confidence_level)
    alpha = 1.0 - level
    arr = _table(table)
    k = arr.shape[1]
    labs = list(range(k)) if labels is None else list(labels)
    if len(labs) != k:
        raise ValueError(f"labels must name the {k} columns; got {len(labs)}")
    if reference is not None and reference not in labs:
        raise ValueError(f"reference {reference!r} is not a group; groups: {labs}")
    tmpl = _per_set(template, "template")
    nm = np.zeros(arr.shape[0], dtype=np.intp) if name is None else _per_set(name, "name")
    rates = [set_mean(arr[:, j], tmpl, nm, names=names, templates=templates).estimate for j in range(k)]
    finite = [j for j in range(k) if np.isfinite(rates[j])]
    best = labs.index(reference) if reference is not None else (max(finite, key=lambda j: rates[j]) if finite else 0)
    cache: dict[tuple[int, int], SelectionRatioResult] = {}

    def pair(a: int, b: int) -> SelectionRatioResult:
        if (a, b) not in cache:
            cache[(a, b)] = selection_ratio(arr, tmpl, nm, columns=(a, b), names=names, templates=templates)
        return cache[(a, b)]

    nan = float("nan")
    out = []
    for g in range(k):
        rate, rb = rates[g], rates[best]
        ratio = float(rate / rb) if (np.isfinite(rate) and np.isfinite(rb) and rb > 0) else nan
        if reference is not None:
            if g == best:
                out.append(RatioToBest(labs[g], rate, 1.0, labs[best],
                                       ConfidenceInterval(1.0, 1.0, level, "reference"), 1.0, nan, (),
                                       "the reference group", best_from_data=False))
                continue
            r = pair(g, best)
            ci = r.confidence_interval(level)
            pb = r.pvalue_below(threshold)
            out.append(RatioToBest(labs[g], rate, ratio, labs[best], ci, r.confidence_interval(1.0 - 2.0 * alpha).low,
                                   float(min(1.0, 2.0 * pb)) if np.isfinite(pb) else nan, (r,),
                                   r.note if np.isnan(ci.low) else None, best_from_data=False))
            continue
        rs = [pair(g, h) for h in range(k) if h != g]
        lows = [r.confidence_interval(level).low for r in rs]
        highs = [r.confidence_interval(1.0 - alpha / (k - 1)).high for r in rs]
        low1 = [r.confidence_interval(1.0 - 2.0 * alpha).low for r in rs]
        pbs = [r.pvalue_below(threshold) for r in rs]
        method = _HSU_METHOD.format(k1=k - 1)
        if any(np.isnan(x) for x in lows + highs):
            ci = ConfidenceInterval(nan, nan, level, method)
            lo1 = nan
        else:
            ci = ConfidenceInterval(float(min(1.0, min(lows))), float(min(1.0, min(highs))), level, method)
            lo1 = float(min(1.0, min(low1)))
        pb = float(min(1.0, 2.0 * (k - 1) * min(pbs))) if all(np.isfinite(pbs)) else nan
        notes = "; ".join(dict.fromkeys(r.note for r in rs if r.note)) or None
        out.append(RatioToBest(labs[g], rate, ratio, labs[best], ci, lo1, pb, tuple(rs),
                               notes if np.isnan(ci.low) else None))
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


def crossed_k_test(table: Any, template: Any, name: Any = None, *, names: str = "random") -> CrossedFResult:
    """Test that the k columns (groups, or slots) of matched sets share one mean, templates and name sets random.

    Parameters
    ----------
    table : array_like of float, shape (n_sets, k)
        A value per set and column (top pick, rank); rows with NaN dropped.
    template, name : array_like, shape (n_sets,)
        Template and name set of each row.
    names : {"random", "fixed"}

    Returns
    -------
    CrossedFResult
        On the template x name-set x column cell means (empty cells
        filled from the additive template + name fit of the column), the
        three-way ANOVA with columns fixed and templates (T) and name sets
        (P) crossed random factors. Names fixed (or one name set): ``F =
        MS_C / MS_CxT``, df ``(k - 1, (k - 1)(T - 1))``. Names random:
        Clark's (1973) quasi-F ``(MS_C + MS_CxTxP) / (MS_CxT + MS_CxP)``
        with Satterthwaite df for numerator and denominator.

    References
    ----------
    Clark (1973); Winer, Brown & Michels (1991), ch. 5 (quasi-F ratios).
    """
    from fairpair.stats._crossed import _additive_fill, _f

    check_choice("names", names, NAMES)
    arr = _table(table)
    keep = ~np.isnan(arr).any(axis=1)
    arr = arr[keep]
    tmpl = _per_set(template, "template")[keep]
    nm = (np.zeros(arr.shape[0], dtype=np.intp) if name is None else _per_set(name, "name")[keep])
    k = arr.shape[1]
    method = ("quasi-F (Clark 1973), templates and name sets random" if names == "random"
              else "F (column vs column x template), templates random")
    if arr.shape[0] == 0:
        return CrossedFResult(np.nan, np.nan, k - 1.0, np.nan, method, "no complete sets")
    cells = []
    for j in range(k):
        m, _c, _t, _n = cell_matrix(arr[:, j], tmpl, nm)
        cells.append(_additive_fill(m)[0])
    y = np.stack(cells, axis=2)  # T x P x k
    t, p, _ = y.shape
    if t < 2:
        return CrossedFResult(np.nan, np.nan, k - 1.0, np.nan, method, "too few templates")
    gm = y.mean()
    yc = y.mean(axis=(0, 1))
    yt = y.mean(axis=1)  # T x k
    ms_c = t * p * float(((yc - gm) ** 2).sum()) / (k - 1)
    it = yt - yt.mean(axis=1, keepdims=True) - yc[None, :] + gm
    df_ct = (k - 1) * (t - 1)
    ms_ct = p * float((it ** 2).sum()) / df_ct
    if names == "fixed" or p < 2:
        note = "one name set: names are not a factor" if (names == "random" and p < 2) else None
        return _f(ms_c, ms_ct, k - 1.0, float(df_ct), method, note)
    yp = y.mean(axis=0)  # P x k
    ip = yp - yp.mean(axis=1, keepdims=True) - yc[None, :] + gm
    df_cp = (k - 1) * (p - 1)
    ms_cp = t * float((ip ** 2).sum()) / df_cp
    ytp = y.mean(axis=2)  # T x P
    r = (y - yt[:, None, :] - yp[None, :, :] - ytp[:, :, None] + yc[None, None, :] + y.mean(axis=(1, 2))[:, None, None]
         + y.mean(axis=(0, 2))[None, :, None] - gm)
    df_r = (k - 1) * (t - 1) * (p - 1)
    ms_r = float((r ** 2).sum()) / df_r
    num_terms = [(1.0, ms_c, k - 1.0), (1.0, ms_r, float(df_r))]
    den_terms = [(1.0, ms_ct, float(df_ct)), (1.0, ms_cp, float(df_cp))]
    return _f(ms_c + ms_r, ms_ct + ms_cp, _satterthwaite(num_terms), _satterthwaite(den_terms), method)


def stratified_k_test(table: Any, template: Any, name: Any = None, *, names: str = "random") -> CrossedFResult:
    """Test that the k columns of matched sets share one mean over *these* templates (templates fixed).

    The all-column companion of :func:`fairpair.stats.stratified_difference`:
    the claim is about these templates (postings), and the matched sets within
    a template are exchangeable draws (name sets random).

    Parameters
    ----------
    table : array_like of float, shape (n_sets, k)
        A value per set and column (top pick, rank); rows with NaN dropped.
    template : array_like, shape (n_sets,)
        Template of each row.
    name : NameClusters, optional
        Each group's name per set (:func:`fairpair.stats._sharednames.name_clusters`, over all ``n_sets``
        rows). With ``names="random"`` the covariance of sets that share a group's name is added to ``V``
        (:func:`fairpair.stats._sharednames.shared_name_covariance`, the matrix form of the term the
        pairwise verdicts add), the sum clipped to its positive semi-definite part (Cameron, Gelbach &
        Miller 2011), and ``nu`` becomes ``min(nu, G - 1)``, ``G`` the fewest names of a group (CGM's
        rule, as :func:`~fairpair.stats._sharednames.multiway_mean_variance`; Krishnamoorthy & Yu's
        (2004) df for a sum of covariance matrices, with ``G - 1`` for the shared term, rejected 9.7% and
        10.3% of null audits: the term is noisier than a Wishart on ``G - 1`` df). Unchanged when
        nothing is shared. Anything else (an array of name sets, None): not used.
    names : {"random", "fixed"}, default "random"

    Returns
    -------
    CrossedFResult
        With ``ybar_t`` and ``S_t`` the column means and covariance of the
        ``n_t`` sets of template t, the estimate ``mu = mean_t ybar_t`` has
        covariance ``V = sum_t S_t / (n_t T^2)``. For the ``q = k - 1``
        contrasts ``C`` (each column minus the last), ``W = (C mu)' (C V
        C')^+ (C mu)`` and, with ``nu = sum_t (n_t - 1)``, ``F = (nu - q +
        1) W / (nu q)`` on ``(q, nu - q + 1)`` df (``q`` the rank of ``C V
        C'``). One template: Hotelling's one-sample T^2 of the contrasts
        (``statsmodels.stats.multivariate.test_mvmean``); several templates
        with equal ``n_t`` and covariances: Hotelling's T^2 with the pooled
        within-template covariance (Anderson 2003, ch. 5), exact under
        normality and otherwise asymptotically chi-square(q) / q. Never
        raises on degenerate data: NaN with a ``note``. Level with names
        drawn per request from short lists: ``benchmarks/sim_ranking_fixed.py
        --tests``.

    Raises
    ------
    ValueError
        A table that is not 2-D with k >= 2, a ``template`` of another length, or a bad ``names``.

    References
    ----------
    Hotelling, H. (1931). *Annals of Mathematical Statistics*, 2, 360-378.
    Anderson, T. W. (2003). *An Introduction to Multivariate Statistical Analysis*, 3rd ed., Wiley.
    Krishnamoorthy, K., & Yu, J. (2004). Modified Nel and Van der Merwe test for the multivariate
    Behrens-Fisher problem. *Statistics & Probability Letters*, 66, 161-169 (tried). Cameron, A. C., Gelbach,
    J. B., & Miller, D. L. (2011). *JBES*, 29, 238-249.
    """
    check_choice("names", names, NAMES)
    arr = _table(table)
    tmpl = _per_set(template, "template").ravel()
    if tmpl.size != arr.shape[0]:
        raise ValueError(f"template must have one value per set; got {tmpl.size} for {arr.shape[0]} sets")
    d_all = arr[:, :-1] - arr[:, -1:]
    keep = ~np.isnan(arr).any(axis=1)
    arr, tmpl = arr[keep], tmpl[keep]
    k = arr.shape[1]
    method = "stratified Hotelling F over these templates (templates fixed, name sets random)"
    nan = float("nan")
    if arr.shape[0] == 0:
        return CrossedFResult(nan, nan, k - 1.0, nan, method, "no complete sets")
    d = arr[:, :-1] - arr[:, -1:]  # the k - 1 contrasts with the last column
    labels, inv = np.unique(tmpl, return_inverse=True)
    t = labels.size
    mu = np.zeros(k - 1)
    v = np.zeros((k - 1, k - 1))
    nu = 0
    for j in range(t):
        dj = d[inv == j]
        n_t = dj.shape[0]
        mu += dj.mean(axis=0) / t
        if n_t > 1:
            v += np.cov(dj, rowvar=False, ddof=1).reshape(k - 1, k - 1) / (n_t * t**2)
            nu += n_t - 1
    nu_f = float(nu)
    if isinstance(name, NameClusters) and names == "random":
        extra = shared_name_covariance(d_all, name, templates="fixed")
        if np.isfinite(extra.covariance).all() and np.abs(extra.covariance).max() > 1e-12 * max(np.abs(v).max(), 0):
            nu_f = min(nu_f, extra.df)  # CGM: the fewest clusters of a dimension minus one
            v = psd_part(v + extra.covariance)
            method += "; names shared across sets random (multiway cluster-robust, Cameron, Gelbach & Miller 2011)"
    return _hotelling(mu, v, nu_f, k, method)


def _hotelling(mu: np.ndarray, v: np.ndarray, nu: float, k: int, method: str) -> CrossedFResult:
    """Hotelling's F of ``mu = 0`` with covariance ``v`` on ``nu`` df: ``(nu - q + 1) W / (nu q)`` on ``(q,
    nu - q + 1)`` df, ``W = mu' v^+ mu``, ``q`` the rank of ``v``; NaN with a note when undefined."""
    nan = float("nan")
    q = int(np.linalg.matrix_rank(v)) if (np.isfinite(v).all() and v.any()) else 0
    if q == 0 or not np.isfinite(nu) or nu - q + 1 <= 0:
        why = "no variance between the sets" if q == 0 else "too few sets, templates or names for the contrasts"
        return CrossedFResult(nan, nan, float(max(q, 1)), nan, method, why)
    w = float(mu @ np.linalg.pinv(v) @ mu)
    note = None if q == k - 1 else f"the contrasts span {q} of {k - 1} dimensions: F on {q} df"
    f = (nu - q + 1) * w / (nu * q)
    d1, d2 = float(q), float(nu - q + 1)
    return CrossedFResult(float(f), float(special.fdtrc(d1, d2, f)), d1, d2, method, note)


def multiway_k_test(table: Any, name: NameClusters) -> CrossedFResult:
    """Equal means over the k columns, templates and every group's names random, name sets not crossed with the
    templates (names drawn per request): the all-column form of the multiway variance of :func:`set_mean`.

    Parameters
    ----------
    table : array_like of float, shape (n_sets, k)
        A value per set and column; rows with NaN dropped.
    name : NameClusters
        Template and each group's name per set, over all ``n_sets`` rows.

    Returns
    -------
    CrossedFResult
        With ``d_i`` the k - 1 contrasts of set i (each column minus the last) and ``w_i = 1 / (T n_t)``, the
        mean of the template means ``mu = sum_i w_i d_i`` and its covariance ``V``
        (:func:`fairpair.stats._sharednames.multiway_mean_covariance`: the multiway cluster-robust sum over the
        template and the name dimensions of ``a_i a_j'``, ``a_i = w_i (d_i - mu)``, divided by ``1 - H``;
        Cameron, Gelbach & Miller 2011), clipped to its positive semi-definite part; ``W = mu' V^+ mu`` and
        Hotelling's ``F = (nu - q + 1) W / (nu q)`` on ``(q, nu - q + 1)`` df with ``nu = min(T, G) - 1``
        (``G`` the fewest names of a group). NaN with a note when ``nu < q``.

    Raises
    ------
    ValueError
        A table that is not 2-D with k >= 2 or of another length than ``name``.
    """
    arr = _table(table)
    k = arr.shape[1]
    method = ("Hotelling F, templates and each group's names random, multiway cluster-robust (Cameron, Gelbach & "
              "Miller 2011)")
    if len(name) != arr.shape[0]:
        raise ValueError(f"name must cover every set; got {len(name)} for {arr.shape[0]} sets")
    d = arr[:, :-1] - arr[:, -1:]
    keep = ~np.isnan(d).any(axis=1)
    if keep.sum() < 2:
        return CrossedFResult(float("nan"), float("nan"), k - 1.0, float("nan"), method, "no complete sets")
    mv = multiway_mean_covariance(d, name)
    tm = name.template[keep]
    nt = np.bincount(tm).astype(float)
    w = 1.0 / ((nt > 0).sum() * nt[tm])
    mu = (w[:, None] * d[keep]).sum(axis=0)
    if not np.isfinite(mv.covariance).all():
        return CrossedFResult(float("nan"), float("nan"), k - 1.0, float("nan"), method, "too few templates")
    return _hotelling(mu, psd_part(mv.covariance), mv.df, k, method)


def set_k_test(table: Any, template: Any, name: Any = None, *, names: str = "random",
               templates: str = "random") -> CrossedFResult:
    """Equal means over the k columns under either templates estimand, as :func:`set_mean` for one column.

    ``name`` is the name set of each row (array, shape (n_sets,)) or a
    :class:`~fairpair.stats._sharednames.NameClusters` (each group's name per set). Templates fixed:
    :func:`stratified_k_test`, with a ``NameClusters`` and names random the covariance of sets sharing a
    name added. Templates random: :func:`crossed_k_test` over the name sets when they are crossed with the
    templates (``NameClusters.crossed``, or an array); names drawn per request (not crossed) and names
    random: :func:`multiway_k_test`; names fixed: :func:`crossed_k_test` on the template means. Raises
    ``ValueError`` for a bad ``names`` or ``templates``.
    """
    check_choice("templates", templates, TEMPLATES)
    check_choice("names", names, NAMES)
    if templates == "fixed":
        return stratified_k_test(table, template, name, names=names)
    if isinstance(name, NameClusters):
        if name.crossed:
            return crossed_k_test(table, template, name.nameset, names=names)
        if names == "random":
            return multiway_k_test(table, name)
        return crossed_k_test(table, template, None, names="fixed")
    return crossed_k_test(table, template, name, names=names)


@dataclass(frozen=True)
class SlotEffect:
    """Top-pick rate and mean rank of one slot (1-based position in the prompt), with crossed intervals."""

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
        :func:`crossed_k_test` of equal top-pick rates (mean ranks) over the slots.
    cochran : CochranQResult
        Cochran's Q of the top pick across slots, sets as independent (secondary).
    friedman : FriedmanResult or None
        Friedman's test of the ranks across slots, sets as independent
        (secondary); None for k = 2 or without complete rankings.
    """

    slots: tuple
    top_test: CrossedFResult
    rank_test: CrossedFResult
    cochran: CochranQResult
    friedman: FriedmanResult | None


def position_effect(top: Any, rank: Any, template: Any, name: Any = None, *,
                    names: str = "random", templates: str = "random") -> PositionEffectResult:
    """Position effect of a ranking design: top-pick rate and mean rank by slot, with intervals and tests.

    Parameters
    ----------
    top : array_like of {0, 1, NaN}, shape (n_sets, k)
        Top pick of the candidate in each slot (column j = slot j + 1).
    rank : array_like of float, shape (n_sets, k)
        Rank (1 = first) of the candidate in each slot; NaN rows where the
        ranking is incomplete.
    template, name : array_like, shape (n_sets,)
        Template and name set of each matched set; ``name`` may be a
        :class:`~fairpair.stats._sharednames.NameClusters` (each group's name
        per set), of which only the name sets are used (below).
    names : {"random", "fixed"}
    templates : {"random", "fixed"}, default "random"
        ``"fixed"``: about these templates, as :func:`set_mean`.

    Returns
    -------
    PositionEffectResult
        Each slot's rate and mean rank from :func:`set_mean` (templates
        random: :func:`crossed_mean`); the tests from :func:`set_k_test`;
        Cochran's Q and Friedman over the sets as secondary tests.

        Unlike the groups' statistics, the slots' add no covariance for a
        name shared by sets with other names: the groups rotate over the
        slots (a Latin square) whatever names they carry, so a recurring
        name sits in slot j in some of its sets (raising slot j's top-pick
        rate) and in the other slots in the rest (lowering it); with its slot
        independent of the name the covariance of two such sets is 0 in
        expectation, and estimating it only adds noise (the slot F rejected
        13% of 30 null audits with the term, 3% without;
        ``benchmarks/HISTORY.md``, 2026-12-05 rankshared). So the name sets
        are the units when they are crossed with the templates and, names
        drawn per request (templates random), the template means are
        (:func:`crossed_mean` with names fixed; :func:`crossed_k_test` on
        the template means).

    Raises
    ------
    ValueError
        Tables of different shapes or fewer than two slots.
    """
    t = _table(top)
    r = _table(rank)
    if t.shape != r.shape:
        raise ValueError(f"top and rank must have the same shape; got {t.shape} and {r.shape}")
    tmpl = _per_set(template, "template")
    nm = np.zeros(t.shape[0], dtype=np.intp) if name is None else _per_set(name, "name")
    if isinstance(nm, NameClusters):  # a slot's value does not share its names' effects: see above
        nm, names = (nm.nameset, names) if nm.crossed else (np.zeros(t.shape[0], dtype=np.intp), "fixed")
    slots = []
    for j in range(t.shape[1]):
        slots.append(SlotEffect(j + 1, int((~np.isnan(t[:, j])).sum()),
                                set_mean(t[:, j], tmpl, nm, names=names, templates=templates),
                                set_mean(r[:, j], tmpl, nm, names=names, templates=templates)))
    top_test = set_k_test(t, tmpl, nm, names=names, templates=templates)
    rank_test = set_k_test(r, tmpl, nm, names=names, templates=templates)
    fr = friedman(r) if t.shape[1] >= 3 and (~np.isnan(r).any(axis=1)).any() else None
    return PositionEffectResult(tuple(slots), top_test, rank_test, cochran_q(t), fr)
