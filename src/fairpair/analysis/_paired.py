"""One two-group comparison: the cluster-aware inference, the verdict inputs, the breakdown.

Shared by :func:`fairpair.analysis.analyze_run` and the audit simulation
(``benchmarks/sim_audits.py``), so what is simulated is exactly what is
reported. The verdict needs the multiplicity-adjusted p-value of the whole
family, so it is set later (:func:`finish`).

The inference (one for each comparison)
---------------------------------------
A matched set is (template, repetition, position); the pair is group A's
k-th name vs group B's k-th name in the same template and repetition. The
pairs are not independent: names are crossed with templates (the same names
in every template) and repetitions are nested in template x name cells.
The estimate, the p-value and every interval come from one t statistic,
:func:`fairpair.stats.crossed_difference` (method of moments on the crossed
random-effects model on template x name cell means, Satterthwaite df;
Clark 1973; Judd, Westfall & Kenny 2012). Templates are always a random
factor; names are random (the default: the claim is about the group) or
fixed (``analysis.generalize.names: fixed``: "these names"). So a ``fail``
(adjusted p < alpha) never sits beside a ``1 - alpha`` interval containing
0. The ``1 - 2 alpha`` interval of the ``pass`` rule is never narrower: the
hull of that t interval and Hall's (1992) skewness-corrected t interval
(:meth:`fairpair.stats.CrossedDifferenceResult.equivalence_interval`; the
simulation that chose it is in :mod:`fairpair.stats._crossed`); for bounded measures (yes/no, 1-5
scores) the df allow for kurtosis and the pass interval is also hulled with the variance at the
hypothesis (:data:`CI_METHOD_BOUNDED`). It uses every answer that exists, not only complete pairs. Yes/no
measures go through the same route on cell proportions (the estimate is a
risk difference); their level and coverage were checked by simulation
(``benchmarks/sim_audits.py``, table in ``benchmarks/HISTORY.md``).

Designs too small to support the declared estimand (see
:mod:`fairpair.analysis._design`) get the verdict ``insufficient design``
with the reason, never ``pass`` or ``fail``.

Reported as secondary statistics, not used by the verdict: McNemar's test
with the discordant pairs and Newcombe's interval (binary), Wilcoxon
signed-rank with Hodges-Lehmann and the paired t-test (continuous); they
treat the pairs as independent.

References
----------
Clark, H. H. (1973). The language-as-fixed-effect fallacy. *JVLVB*, 12,
335-359.
Judd, C. M., Westfall, J., & Kenny, D. A. (2012). Treating stimuli as a
random factor in social psychology. *JPSP*, 103, 54-69.
Satterthwaite, F. E. (1946). *Biometrics Bulletin*, 2, 110-114.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from scipy import special

from fairpair.analysis._design import NOT_MEASURED
from fairpair.analysis._verdict import RULE_BY_TEMPLATE, RULE_NOT_MEASURED, decide
from fairpair.records import (
    BinaryDetail,
    ComparisonResult,
    ContinuousDetail,
    Evidence,
    Heterogeneity,
    PairedTDetail,
    Reason,
    ScenarioBlock,
    ScenarioRow,
    SpreadBlock,
    VariantRow,
    interval,
    num,
)
from fairpair.stats import mcnemar, paired_t, variant_heterogeneity, wilcoxon

__all__ = ["PairData", "PairAnalysis", "analyze_pairs", "finish", "pair_cells", "BINARY_SCALES", "CI_METHOD",
           "CI_METHOD_BOUNDED", "BoundedInputs", "t_interval", "HETEROGENEITY_CUTOFF", "HETEROGENEITY_PERMUTATIONS",
           "scenario_pvalues", "crossed_verdict_inputs", "sign_flip_interval", "pair_spread", "spread_block",
           "RULE_SPREAD", "RULE_SPREAD_MARGIN"]

#: The guard of the templates-random average: when the generalized ESD (Rosner 1983) singles out at
#: least one template at this level (:func:`fairpair.stats.scenario_heterogeneity`), the average cannot
#: ``pass`` (``inconclusive``, reason ``heterogeneous average``). Chosen by ``benchmarks/sim_audits.py``:
#: the ESD is anti-conservative on yes/no and count template differences (at 0.02 it fired in 6-7% of fair
#: audits of 20 templates x 10 names, and took 5-6 points of ``pass`` at 0 there, above the 5 allowed); at
#: 0.005 it fires in 1.7-2.1% of them and still names a sampled biased scenario in 31-43% of the sparse-bias
#: audits of 20-40 templates (table in ``benchmarks/README.md``).
HETEROGENEITY_CUTOFF = 0.005
#: Yes/no and ordinal measures (rare events, 1-5 scores at a ceiling): the ESD's t levels assume normal
#: template differences and fired on the binomial noise of ``D_t`` in 47-74% of fair audits (the guard took
#: 17-31 points of ``pass`` at 0); there its levels are permutation p-values (of the ESD on ``D_t`` studentized
#: by the names within each template) over this many permutations of the names between the groups within each
#: template, drawn only when a first 199 give a p-value below 10x the cutoff (``benchmarks/HISTORY.md``,
#: 2026-12-04 21:32 and 22:50 sections).
HETEROGENEITY_PERMUTATIONS = 999

CI_METHOD_FIXED = ("templates fixed (these scenarios): the average over these templates +/- t x SE "
                   "(names random: Welch on the names' means; names fixed: the template x name interaction as "
                   "error); the (1-2alpha) equivalence interval is the same t at that level")
CI_METHOD = ("crossed random effects on template x name cell means (method of moments): "
             "estimate +/- t(Satterthwaite df) x SE; the (1-2alpha) equivalence interval is its hull with "
             "Hall's (1992) skewness-corrected t")
#: Bounded measures (yes/no, 1-5 scores), templates random: near a bound the crossed SE moves with the estimate
#: (``benchmarks/HISTORY.md``, issue 30), so the df allow for the kurtosis of the template differences and the
#: name means (:func:`fairpair.stats.crossed_from_cells`, ``kurtosis``) and the pass rule's interval is the hull
#: of the t with the logit-scale interval (:func:`fairpair.stats.logit_interval`; where a group's mean sits at a
#: bound, with Hall's t and the variance at the hypothesis instead: :func:`fairpair.stats.null_variance_interval`)
CI_METHOD_BOUNDED = ("crossed random effects on template x name cell means (method of moments): "
                     "estimate +/- t x SE, Satterthwaite df corrected for the kurtosis of the template differences "
                     "and name means; the (1-2alpha) equivalence interval is its hull with the logit-scale interval "
                     "(the delta method with the crossed variance, read back at group B's mean)")


def t_interval(theta: float, boot: np.ndarray, n_clusters: int, level: float) -> tuple[float, float]:
    """``theta +/- t_{G-1}(level) * sd(boot) * sqrt(G/(G-1))``; NaN limits with fewer than two clusters."""
    finite = boot[np.isfinite(boot)]
    if n_clusters < 2 or finite.size < 2 or not np.isfinite(theta):
        return (np.nan, np.nan)
    from fairpair.stats import t_interval as _t

    se = float(finite.std(ddof=1)) * np.sqrt(n_clusters / (n_clusters - 1))
    return _t(theta, se, n_clusters - 1, level)

BINARY_SCALES = ("binary",)
N_EVIDENCE = 3


@dataclass(frozen=True)
class PairData:
    """Matched pairs of one comparison.

    Attributes
    ----------
    x, y : ndarray of float, shape (n,)
        Value of group A's and group B's case; NaN when missing (not
        answered, measurement missing or failed): the pair is dropped.
    clusters : ndarray, shape (n,)
        Template of each pair (a random factor of the inference).
    variants : ndarray of int, shape (n,)
        Code of the pair's ``"variant_a / variant_b"`` label in ``variant_labels``.
    variant_labels : tuple of str
        The labels.
    sets, case_a, case_b : ndarray of str, shape (n,)
        Matched-set and case ids, for the evidence list.
    name_a, name_b : ndarray of int, shape (n,)
        Code of group A's and group B's name (variant) of each pair; the
        cells of the crossed inference are template x name. Empty: the
        variant pair code stands for both.
    """

    x: np.ndarray
    y: np.ndarray
    clusters: np.ndarray
    variants: np.ndarray
    variant_labels: tuple = ()
    sets: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=object))
    case_a: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=object))
    case_b: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=object))
    name_a: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    name_b: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    template_labels: tuple = ()


class BoundedInputs(NamedTuple):
    """A bounded measure's pass-rule inputs (:func:`crossed_verdict_inputs`): its range ``(lo, hi)``, each group's
    answers, the template x name cell means of group A and group B (shapes (T, n_a), (T, n_b), NaN = empty) and
    the names' estimand ("random" or "fixed")."""

    scale_range: tuple[float, float]
    n_a: float
    n_b: float
    cells_a: np.ndarray
    cells_b: np.ndarray
    names: str


@dataclass
class PairAnalysis:
    """Everything about a comparison except the adjusted p-value and verdict.

    ``scenario`` / ``spread``: :func:`fairpair.stats.scenario_differences` and
    :func:`fairpair.stats.scenario_heterogeneity` of its cells (``None`` without answers);
    ``template_labels``: the label of each cell row; ``by_template``: the scenario-level verdicts
    are primary (``by: template``).
    """

    fields: dict[str, Any]
    ci_alpha: tuple[float, float] | None
    ci_equivalence: tuple[float, float] | None
    pvalue: float | None
    scenario: Any = None
    spread: Any = None
    template_labels: tuple = ()
    by_template: bool = False
    #: :func:`fairpair.stats.spread_difference` of the comparison (count, continuous and 1-5 measures with
    #: repetitions; ``None`` otherwise): the within-cell spread, a secondary statistic
    within_spread: Any = None
    #: the plan's largest tolerated ratio of within-cell SDs (``max_sd_ratio``; None: no spread margin)
    spread_margin: float | None = None
    #: the crossed inference behind the figures (:class:`fairpair.stats.CrossedDifferenceResult`; None without
    #: answers or with templates fixed)
    crossed: Any = None

    def pvalue_beyond(self, margin: float | None) -> float | None:
        """Two-sided p-value of the crossed t against ``|difference| <= margin``: ``min(1, 2 P(T > (|D| - m) / SE))``.

        Equal to :attr:`pvalue` for no margin. Below ``alpha`` exactly when
        the ``1 - alpha`` interval lies beyond the margin; adjusted over the
        family, it makes "fail beyond the margin" a family-wise claim too.
        ``None`` when the inference has no verdict.
        """
        if self.pvalue is None:
            return None
        m = float(margin or 0.0)
        if m == 0:
            return self.pvalue
        est, se, df = self.fields.get("estimate"), self.fields.get("se"), self.fields.get("df")
        if est is not None and se == 0:  # the sign-flip case: beyond the margin or not at all
            return self.pvalue if abs(est) > m else 1.0
        if est is None or not se or df is None:
            return None
        z = (abs(est) - m) / se
        return float(min(1.0, 2.0 * special.stdtr(df, -z))) if z > 0 else 1.0


def sign_flip_interval(estimate: float, n_templates: int, alpha: float,
                       bounds: tuple[float, float] | None) -> tuple[float, float]:
    """The ``1 - alpha`` interval of a difference whose ``T = n_templates`` template differences all
    equal ``estimate``, inverting an exact test over templates (the exchangeable unit).

    * ``estimate`` at a bound of the measure (``bounds``, e.g. ``-1``: every pair of every template
      disagrees the same way): a template difference ``d`` lies in ``[lo, hi]`` with mean ``delta``, so
      ``P(d = lo) <= (hi - delta) / (hi - lo)`` and all ``T`` templates sit at ``lo`` with probability at
      most ``((hi - delta) / (hi - lo))^T``. Rejecting below ``alpha / 2`` gives
      ``[lo, hi - (hi - lo) (alpha / 2)^(1/T)]`` (mirrored at ``hi``): valid whatever the dependence
      within a template. Inverting the sign-flip test alone gives a point there (every
      ``delta != estimate`` gets ``p = 2^(1 - T)``), which covered 0% of audits whose true difference
      was 1 point inside the bound (``benchmarks/sim_signflip.py``).
    * otherwise, the sign-flip test's own inversion: ``(estimate, estimate)`` when ``2^(1 - T) <= alpha``,
      else the whole range (``bounds``, or ``(-inf, inf)`` for an unbounded measure).
    """
    est = float(estimate)
    if bounds is not None:
        lo, hi = (float(b) for b in bounds)
        far = (hi - lo) * (alpha / 2.0) ** (1.0 / n_templates)
        if est <= lo:
            return (lo, hi - far)
        if est >= hi:
            return (lo + far, hi)
    if 2.0 ** (1 - n_templates) <= alpha:
        return (est, est)
    return (bounds[0], bounds[1]) if bounds is not None else (-math.inf, math.inf)


def no_events_interval(n_templates: int, alpha: float) -> tuple[float, float]:
    """The ``1 - alpha`` interval of a risk difference when no answer of either group has the event
    (every template's rate is 0 in both groups, e.g. an answer status that never occurs), inverting
    the same exact test over templates as :func:`sign_flip_interval` at a bound: a template's rate
    ``r`` lies in ``[0, 1]`` with mean ``p``, so ``P(r = 0) <= 1 - p`` and all ``T`` templates show no
    event with probability at most ``(1 - p)^T``; a difference ``d > 0`` needs ``p_a >= d``, rejected
    when ``(1 - d)^T < alpha / 2`` (mirrored for ``d < 0``). Returns ``(-u, u)`` with
    ``u = 1 - (alpha / 2)^(1/T)`` (T = 16, alpha 0.05: 20.6 points): valid whatever the dependence
    within a template, and wide, since one template is one observation."""
    u = 1.0 - (alpha / 2.0) ** (1.0 / max(n_templates, 1))
    return (-u, u)


def _evidence(pd: PairData, keep: np.ndarray, order: np.ndarray) -> list[Evidence]:
    if pd.sets.size == 0:
        return []
    idx = np.nonzero(keep)[0][order]
    return [Evidence(matched_set=str(pd.sets[i]), case_a=str(pd.case_a[i]), case_b=str(pd.case_b[i]),
                     value_a=num(pd.x[i]), value_b=num(pd.y[i])) for i in idx]


def _codes(arr: np.ndarray) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.dtype.kind in "iu" and (arr.size == 0 or arr.min() >= 0):
        return arr.astype(np.intp)
    codes = np.unique(arr.astype(str) if arr.dtype == object else arr, return_inverse=True)[1]
    return codes.reshape(-1).astype(np.intp)


def pair_cells(pd: PairData) -> tuple[np.ndarray, np.ndarray]:
    """Template x name cell means of group A's and group B's answers: arrays (T, n_a), (T, n_b), NaN = empty.

    Every answer that exists counts (a pair with one side missing keeps the
    other side). Without name codes (``name_a`` empty), each variant pair
    code stands for one name of each group.
    """
    tc = _codes(pd.clusters)
    na = _codes(pd.name_a) if pd.name_a.size else _codes(pd.variants)
    nb = _codes(pd.name_b) if pd.name_b.size else _codes(pd.variants)
    t = int(tc.max()) + 1 if tc.size else 0
    out = []
    for vals, nc in ((pd.x, na), (pd.y, nb)):
        ok = ~np.isnan(vals)
        k = int(nc.max()) + 1 if nc.size else 0
        flat = tc[ok] * k + nc[ok]
        cnt = np.bincount(flat, minlength=t * k).reshape(t, k)
        tot = np.bincount(flat, weights=vals[ok], minlength=t * k).reshape(t, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan))
    return out[0], out[1]


def pair_spread(pd: PairData, *, names: str, templates: str) -> Any:
    """:func:`fairpair.stats.spread_from_cells` of a comparison's answers: the within-cell SDs of group A's and
    group B's template x name cells (as :func:`pair_cells`); ``None`` when no cell has two answers."""
    from fairpair.stats import cell_sds, spread_from_cells

    tc = _codes(pd.clusters)
    t = int(tc.max()) + 1 if tc.size else 0
    sds = []
    for vals, nc in ((pd.x, _codes(pd.name_a) if pd.name_a.size else _codes(pd.variants)),
                     (pd.y, _codes(pd.name_b) if pd.name_b.size else _codes(pd.variants))):
        sds.append(cell_sds(vals, tc, nc, t, int(nc.max()) + 1 if nc.size else 0)[0])
    if not any(np.isfinite(x).any() for x in sds):
        return None
    return spread_from_cells(sds[0], sds[1], names=names, templates=templates)


#: The spread statistic's verdict rules (secondary: they never change the comparison's verdict or the gate).
RULE_SPREAD = ("spread (secondary), no max_sd_ratio in the plan: fail if the adjusted p-value of equal within-cell "
               "SDs is below alpha, else inconclusive; never pass (without a largest tolerated SD ratio nothing "
               "can be shown equal), never the comparison's verdict")
RULE_SPREAD_MARGIN = ("spread (secondary), max_sd_ratio R: pass if the (1-2 alpha) interval of the SD ratio lies "
                      "inside [1/R, R]; fail if the (1-alpha) interval lies entirely outside it with the adjusted "
                      "p-values against equal SDs and against [1/R, R] below alpha; else inconclusive; never the "
                      "comparison's verdict")
#: An unbounded Fieller limit, as a finite log ratio the verdict rule can compare (a ratio of e^1000)
_FAR = 1000.0


def _finite_limits(ci: Any) -> tuple[float, float]:
    return tuple(float(np.clip(v, -_FAR, _FAR)) if not np.isnan(v) else float("nan") for v in ci)  # type: ignore[return-value]


def spread_block(pa: PairAnalysis, *, pvalue_adjusted: float | None, correction: str, family_size: int,
                 alpha: float, confidence_level: float, labels: tuple[str, str] = ("A", "B"),
                 pvalue_margin_adjusted: float | None = None) -> SpreadBlock | None:
    """The :class:`~fairpair.records.SpreadBlock` of a comparison (``None`` without a spread statistic).

    With ``pa.spread_margin`` (the plan's ``max_sd_ratio`` R) the verdict can ``pass``: the rule of
    :func:`fairpair.analysis._verdict.decide` on the log scale with the margin ``log R``, Fieller's
    ``1 - 2 alpha`` interval for ``pass`` and ``pvalue_margin_adjusted`` (default: unadjusted) for ``fail``.
    """
    from fairpair.analysis._design import design_reason_counts

    sp = pa.within_spread
    if sp is None:
        return None
    reason = design_reason_counts(n_templates=sp.n_templates, n_names_a=sp.n_names_a, n_names_b=sp.n_names_b,
                                  names=sp.names, templates=sp.templates,
                                  group_a=labels[0], group_b=labels[1])
    ci = sp.confidence_interval(confidence_level)
    rci = sp.ratio_interval(confidence_level)
    ratio_max = pa.spread_margin
    eq = p_m = None
    if ratio_max:
        eq = sp.equivalence_interval(alpha)
        p_m = num(sp.pvalue_beyond(ratio_max))
        if pvalue_margin_adjusted is None:
            pvalue_margin_adjusted = p_m
        verdict, _rule = decide(_finite_limits(ci), _finite_limits(eq), pvalue_adjusted, float(np.log(ratio_max)),
                                alpha, design_reason=reason, pvalue_margin_adjusted=pvalue_margin_adjusted)
    else:
        verdict, _rule = decide(tuple(ci), None, pvalue_adjusted, None, alpha, design_reason=reason)
    return SpreadBlock(estimate=num(sp.estimate), ratio=num(sp.ratio), ci=interval(ci), ratio_ci=interval(rci),
                       sd_a=num(sp.sd_a), sd_b=num(sp.sd_b), se=num(sp.se), df=num(sp.df),
                       statistic=num(sp.statistic), pvalue=num(sp.pvalue), pvalue_adjusted=num(pvalue_adjusted),
                       correction=correction, family_size=family_size, n_templates=sp.n_templates,
                       n_cells=sp.n_cells, max_sd_ratio=ratio_max,
                       equivalence_ratio_ci=None if eq is None else interval(np.exp(np.asarray(tuple(eq)))),
                       pvalue_margin=p_m,
                       pvalue_margin_adjusted=num(pvalue_margin_adjusted) if ratio_max else None,
                       verdict=verdict, verdict_rule=RULE_SPREAD_MARGIN if ratio_max else RULE_SPREAD,
                       design_reason=reason, method=sp.method, note=sp.note)


def analyze_pairs(pd: PairData, *, scale: str, alpha: float, confidence_level: float, exact_threshold: int,
                  n_resamples: int, seed: int, heterogeneity: bool = True, names: str = "random",
                  secondary: bool = True, labels: tuple[str, str] = ("A", "B"), templates: str = "random",
                  by_template: bool = False, names_from: Any = None, events: bool = False) -> PairAnalysis:
    """The cluster-aware inference, intervals and secondary statistics of one comparison (verdict pending).

    ``names`` and ``templates`` are the estimand (each ``"random"`` or ``"fixed"``; templates fixed:
    the average over these scenarios, :func:`fairpair.stats.scenario_differences`); ``by_template``:
    the scenario-level verdicts are primary; ``names_from``: a crossed inference of the same design whose
    name components are used (:func:`fairpair.stats.crossed_from_cells`; the corrected judge
    comparisons of :mod:`fairpair.analysis._corrected`); ``secondary``
    False skips McNemar / Wilcoxon and the evidence list (the simulation
    does: the verdict does not use them); ``labels`` name the two groups
    in the design reason. Never raises for degenerate data: undefined
    quantities are ``None`` with a ``note``, and designs that cannot support
    a verdict carry ``design_reason`` (see :mod:`fairpair.analysis._design`).
    ``events``: the yes/no measure counts events that may well never occur (an answer status):
    no event in either group is a finding (the interval of :func:`no_events_interval`, p = 1), not
    a constant measure to check.
    """
    from fairpair.analysis._design import design_reason, estimand_words
    from fairpair.stats import (
        crossed_from_cells,
        names_heterogeneity,
        scenario_differences_from_cells,
        scenario_heterogeneity,
    )

    binary = scale in BINARY_SCALES
    keep = ~(np.isnan(pd.x) | np.isnan(pd.y))
    n = int(keep.sum())
    notes: list[str] = []
    f: dict[str, Any] = {"n_pairs": n, "n_dropped": int(keep.size - n), "scale": scale,
                         "value_kind": "rate" if binary else "mean",
                         "estimate_name": ("risk difference" if binary else "mean difference") + " (A - B)",
                         "confidence_level": confidence_level, "n_resamples": n_resamples, "seed": seed,
                         "ci_method": CI_METHOD if templates == "random" else CI_METHOD_FIXED, "alpha": alpha,
                         "names": names, "templates": templates, "estimand": estimand_words(names, templates)}
    if f["n_dropped"]:
        notes.append(f"{f['n_dropped']} pairs have a missing answer or measurement (the other side still counts)")
    x, y = pd.x[keep], pd.y[keep]
    answers = np.concatenate([pd.x[~np.isnan(pd.x)], pd.y[~np.isnan(pd.y)]])
    if binary and answers.size and not np.all(np.isin(answers, (0.0, 1.0))):
        notes.append("measure declared binary but holds values other than yes/no: analysed as continuous")
        binary = False
        f["value_kind"] = "mean"
        f["estimate_name"] = "mean difference (A - B)"
    cells_a, cells_b = pair_cells(pd)
    # bounded measures (yes/no, 1-5 scores): the kurtosis-corrected df and, for the pass rule, the variance at
    # the hypothesis (:data:`CI_METHOD_BOUNDED`); score-type per-template tests and intervals (the t's variance
    # follows the mean there)
    bounded = (binary or scale == "ordinal") and answers.size > 0 and templates == "random"
    lo_hi = (0.0, 1.0) if binary else (float(answers.min()), float(answers.max())) \
        if scale == "ordinal" and answers.size and answers.min() < answers.max() else None
    sd = scenario_differences_from_cells(cells_a, cells_b, names=names, n_values=int(answers.size), bounds=lo_hi)
    spread = scenario_heterogeneity(cells_a, cells_b, outlier_alpha=HETEROGENEITY_CUTOFF, seed=seed,
                                    n_permutations=HETEROGENEITY_PERMUTATIONS if binary or scale == "ordinal"
                                    else 0)
    if templates == "fixed":
        cr = sd.as_crossed()
    else:
        cr = crossed_from_cells(cells_a, cells_b, names=names, n_values=int(answers.size),
                                names_from=names_from, kurtosis=bounded)
    extra: dict[str, Any] = dict(scenario=sd, spread=spread, template_labels=tuple(pd.template_labels),
                                 by_template=by_template, crossed=cr if templates != "fixed" else None,
                                 within_spread=None if binary else pair_spread(pd, names=names, templates=templates))
    _missing_bounds(f, pd, answers, binary, alpha)
    f["n_clusters"] = cr.n_templates
    f["n_names_a"], f["n_names_b"] = cr.n_names_a, cr.n_names_b
    f["df"] = num(cr.df)
    f["se"] = num(cr.se)
    f["variance_components"] = {k: num(v) for k, v in cr.variance_components.items()}
    f["test"] = (f"crossed t (templates random, names {names}; Satterthwaite df)" if templates == "random" else
                 f"templates-fixed t (these scenarios, names {names})")
    f["statistic"] = num(cr.statistic)
    bounds = (-1.0, 1.0) if binary else None
    no_events = events and binary and answers.size > 0 and not answers.any()
    reason = design_reason(cr, names=names, n_pairs=n, constant=answers.size > 0 and np.unique(answers).size == 1,
                           group_a=labels[0], group_b=labels[1], templates=templates, no_events=no_events)
    f["design_reason"] = reason
    if answers.size == 0:
        notes.append("no answers")
        f.update(value_a=None, value_b=None, estimate=None, ci=None, equivalence_ci=None)
        f["note"] = "; ".join(notes)
        return PairAnalysis(f, None, None, None)  # no answers: no scenario either
    f["value_a"], f["value_b"] = num(cr.mean_a), num(cr.mean_b)
    scale_range = None
    if bounded:
        scale_range = (0.0, 1.0) if binary else (float(answers.min()), float(answers.max()))
        f["ci_method"] = CI_METHOD_BOUNDED
        f["test"] = f"crossed t (templates random, names {names}; Satterthwaite df, kurtosis-corrected)"
    ci_a, ci_eq, pvalue = crossed_verdict_inputs(
        f, cr, reason=reason, alpha=alpha, confidence_level=confidence_level, bounds=bounds, notes=notes,
        no_events=no_events,
        bounded=None if scale_range is None or scale_range[0] >= scale_range[1] else
        BoundedInputs(scale_range, float((~np.isnan(pd.x)).sum()), float((~np.isnan(pd.y)).sum()), cells_a,
                      cells_b, names))
    if secondary and n:
        _secondary(f, pd, keep, x, y, binary, exact_threshold, confidence_level, notes)
    if heterogeneity and pd.variants.size and n:
        try:
            h = variant_heterogeneity(x, y, pd.variants[keep], kind="binary" if binary else "continuous",
                                      confidence_level=confidence_level)
            lab = pd.variant_labels
            f["per_variant"] = [VariantRow(variant=str(lab[int(v.variant)]) if lab else str(v.variant), n=v.n,
                                           effect=num(v.effect), ci=interval(v.ci), b=v.b, c=v.c)
                                for v in h.variants if v.n >= MIN_VARIANT_PAIRS]
            few = sum(v.n < MIN_VARIANT_PAIRS for v in h.variants)
            if few:  # names that merely met a few times (a name set drawn per request): no effect of their own
                notes.append(f"{few} name pair(s) compared in fewer than {MIN_VARIANT_PAIRS} pairs: no per-name "
                             "effect")
            nh = names_heterogeneity([cells_a, cells_b])
            f["heterogeneity"] = Heterogeneity(statistic=num(nh.statistic), pvalue=num(nh.pvalue),
                                               df=int(round(nh.df_num)), df_denominator=num(nh.df_den),
                                               method=nh.method, note=nh.note)
        except ValueError as exc:  # e.g. a single variant label set the stats package refuses
            notes.append(f"per-variant breakdown unavailable: {exc}")
    f["note"] = "; ".join(dict.fromkeys(notes)) or None
    return PairAnalysis(f, ci_a, ci_eq, pvalue, **extra)


def crossed_verdict_inputs(f: dict[str, Any], cr: Any, *, reason: str | None, alpha: float,
                           confidence_level: float, bounds: tuple[float, float] | None, notes: list[str],
                           no_events: bool = False,
                           bounded: BoundedInputs | None = None
                           ) -> tuple[tuple[float, float] | None, tuple[float, float] | None, float | None]:
    """The verdict inputs of one difference from its t statistic, for the paired comparisons and the
    ranking's pairs alike: ``(ci_alpha, ci_equivalence, pvalue)`` for :class:`PairAnalysis` (all None
    when ``reason``, the design's, is set), and ``f``'s ``estimate``, ``ci`` (``confidence_level``) and
    ``equivalence_ci`` (``1 - 2 alpha``, the pass rule's) filled; ``cr``'s note goes to ``notes``.

    ``cr`` is a :class:`~fairpair.stats.CrossedDifferenceResult` or a
    :class:`~fairpair.stats.CrossedMeanResult` of a per-set difference (``estimate``, ``se``, ``df``,
    ``pvalue``, ``n_templates``, ``note``, ``confidence_interval`` and ``equivalence_interval``);
    ``bounds`` clip the intervals (``(-1, 1)`` for a risk difference, None for an unbounded measure).

    ``bounded`` (bounded measures: :class:`BoundedInputs`): the ``1 - 2 alpha`` interval of the pass rule is the
    t's hulled with :func:`fairpair.stats.logit_interval` (the logit scale, where the standard error no longer
    follows the estimate toward the bound), so a pass needs both inside the margin (:data:`CI_METHOD_BOUNDED`).

    ``no_events`` (a yes/no measure with no event in either group, e.g. no failed answer at all):
    nothing to estimate a variance from; the exact test over templates bounds how large a difference
    can hide behind ``T`` templates without an event (:func:`no_events_interval`), ``p = 1``.

    When every template (and name) shows exactly the same non-zero difference (``se == 0``, e.g. 100%
    vs 0%) there is no variance to estimate, but the exact sign-flip test over templates (the
    exchangeable unit) gives ``p = 2^(1 - T)``, ``f["test"]`` says so and the interval inverts an exact
    test over templates (:func:`sign_flip_interval`; its coverage: the policy rows of
    ``benchmarks/sim_audits.py``): it may support a fail, never a pass.
    """
    f["estimate"] = num(cr.estimate)
    f["ci"] = interval(cr.confidence_interval(confidence_level, bounds=bounds))
    ci_a: tuple[float, float] | None = None
    ci_eq: tuple[float, float] | None = None
    pvalue: float | None = None
    if reason is None and no_events:
        pvalue = 1.0
        ci_a = no_events_interval(cr.n_templates, alpha)
        ci_eq = no_events_interval(cr.n_templates, 2.0 * alpha)
        f["test"] = "exact test over templates (no event in either group)"
        f["ci"] = interval(no_events_interval(cr.n_templates, 1.0 - confidence_level))
        f["equivalence_ci"] = interval(ci_eq)
        notes.append(f"no event in either group: the interval bounds the difference that {cr.n_templates} "
                     "templates without an event can hide (exact test over templates)")
    elif reason is None and cr.se == 0:
        pvalue = min(1.0, 2.0 ** (1 - cr.n_templates))
        ci_a = sign_flip_interval(cr.estimate, cr.n_templates, alpha, bounds)
        f["test"] = "exact sign-flip test over templates (no variance)"
        f["ci"] = interval(sign_flip_interval(cr.estimate, cr.n_templates, 1.0 - confidence_level, bounds))
        # shown as the interval a pass would need (never used: no pass here), not the crossed t's zero width
        f["equivalence_ci"] = interval(sign_flip_interval(cr.estimate, cr.n_templates, 2.0 * alpha, bounds))
        notes.append(f"every template shows the same difference: no variance to estimate; p-value from the exact "
                     f"sign-flip test over {cr.n_templates} templates; never a pass")
    elif reason is None:
        ci_a = tuple(cr.confidence_interval(1.0 - alpha, bounds=bounds))
        pass_ci = _pass_interval(cr, 1.0 - 2.0 * alpha, bounds, bounded)
        ci_eq = tuple(pass_ci)
        f["equivalence_ci"] = interval(pass_ci)  # computed once: the pass rule's interval is the one shown
        pvalue = num(cr.pvalue)
    if "equivalence_ci" not in f:
        f["equivalence_ci"] = interval(_pass_interval(cr, 1.0 - 2.0 * alpha, bounds, bounded))
    if cr.note:
        notes.append(cr.note)
    return ci_a, ci_eq, pvalue


def _pass_interval(cr: Any, level: float, bounds: tuple[float, float] | None,
                   bounded: BoundedInputs | None) -> Any:
    """``cr.equivalence_interval(level)`` (the t hulled with Hall's); for a bounded measure the t hulled with the
    logit-scale interval (:func:`fairpair.stats.logit_interval`) instead, and where that one is undefined (a
    group's mean at a bound) Hall's hull hulled with the variance at the hypothesis
    (:func:`fairpair.stats.null_variance_interval`; skipped where that one is undefined too).

    Why the logit scale replaces Hall's t and the variance at the hypothesis there: on 1-5 scores with ~95% fives
    and names random those two still passed 7.1-7.4% of audits at the margin; the hull of the t and the logit
    interval passes 4.1-5.6% on every bounded row and more often at 0 (``benchmarks/HISTORY.md``, 2026-12-05)."""
    from fairpair.stats import ConfidenceInterval, logit_interval, null_variance_interval

    if bounded is None:
        return cr.equivalence_interval(level, bounds=bounds)
    t = cr.confidence_interval(level, bounds=bounds)
    if not np.isfinite(t.low):  # Hall's hull is the t itself then
        return t
    lg = logit_interval(bounded.cells_a, bounded.cells_b, names=bounded.names, bounds=bounded.scale_range,
                        confidence_level=level)
    if np.isfinite(lg.low):
        return ConfidenceInterval(min(t.low, lg.low), max(t.high, lg.high), level,
                                  f"{t.method}; hull with the logit-scale interval")
    eq = cr.equivalence_interval(level, bounds=bounds)  # Hall's hull, needed only here
    nv = null_variance_interval(cr.estimate, cr.se, cr.df, cr.mean_b, bounded.n_a, bounded.n_b,
                                bounded.scale_range, level)
    if not np.isfinite(nv.low):
        return eq
    return ConfidenceInterval(min(eq.low, nv.low), max(eq.high, nv.high), level,
                              f"{eq.method}; hull with the variance at the hypothesis")


def _missing_bounds(f: dict[str, Any], pd: PairData, answers: np.ndarray, binary: bool, alpha: float) -> None:
    """Worst-case bounds for missing answers (Manski 1990): each side's missing answers set to either end of
    the measure's scale (0 and 1 for yes/no, else the smallest and largest answer of the comparison), and
    whether missingness differs by group (McNemar's exact test on the matched sets' missing / present
    pattern, p < alpha: ``missing_informative``). With informative missingness a ``pass`` needs the bounds
    widened by the estimate's sampling error inside the margin and a ``fail`` needs them beyond it
    (:func:`finish`; Horowitz & Manski 2000)."""
    miss_a, miss_b = np.isnan(pd.x), np.isnan(pd.y)
    if not (miss_a.any() or miss_b.any()) or answers.size == 0:
        return
    lo, hi = (0.0, 1.0) if binary else (float(answers.min()), float(answers.max()))
    f["missing_shares"] = [num(miss_a.mean()), num(miss_b.mean())]
    ends = []
    for fill_a, fill_b in ((lo, hi), (hi, lo)):
        filled = PairData(np.where(miss_a, fill_a, pd.x), np.where(miss_b, fill_b, pd.y), pd.clusters, pd.variants,
                          name_a=pd.name_a, name_b=pd.name_b)
        ca, cb = pair_cells(filled)
        ends.append(float(np.nanmean(np.nanmean(ca, axis=1) - np.nanmean(cb, axis=1))))
    f["missing_bounds"] = [num(ends[0]), num(ends[1])]
    table = mcnemar(miss_a.astype(float), miss_b.astype(float), exact=True)
    f["missing_informative"] = bool(np.isfinite(table.pvalue) and table.pvalue < alpha)


#: A name pair's own effect (``per_variant``) is reported only when it was compared in at least this many pairs.
MIN_VARIANT_PAIRS = 10


def _secondary(f, pd, keep, x, y, binary, exact_threshold, confidence_level, notes) -> None:
    """McNemar / Wilcoxon on the complete pairs (reported, not used by the verdict) and the evidence list."""
    if binary:
        exact = mcnemar(x, y, exact=True)
        chi = mcnemar(x, y, exact=False, correction=True)
        use = exact if exact.b + exact.c < exact_threshold else mcnemar(x, y, exact=False, correction=False)
        if use.note:
            notes.append(f"McNemar (secondary): {use.note}")
        f["binary"] = BinaryDetail(
            table=[[int(v) for v in row] for row in exact.table], b=exact.b, c=exact.c,
            exact_threshold=exact_threshold, exact_pvalue=num(exact.pvalue), chi2_statistic=num(chi.statistic),
            chi2_pvalue=num(chi.pvalue), odds_ratio=num(exact.odds_ratio),
            odds_ratio_ci=interval(exact.odds_ratio_ci(confidence_level)),
            newcombe_ci=interval(exact.confidence_interval(confidence_level)),
            mcnemar_method=use.method, mcnemar_pvalue=num(use.pvalue))
        disc = np.nonzero(x != y)[0]
        order = np.concatenate([disc[x[disc] > y[disc]][:N_EVIDENCE], disc[x[disc] < y[disc]][:N_EVIDENCE]])
        f["evidence"] = _evidence(pd, keep, order.astype(int))
    else:
        w = wilcoxon(x, y, zero_method="pratt")
        t = paired_t(x, y)
        if w.note:
            notes.append(f"Wilcoxon (secondary): {w.note}")
        f["continuous"] = ContinuousDetail(
            zero_method="pratt", n_zero=w.n_zero, median_difference=num(w.median_difference),
            hodges_lehmann=num(w.hodges_lehmann), hodges_lehmann_ci=interval(w.confidence_interval(confidence_level)),
            rank_biserial=num(w.rank_biserial),
            paired_t=PairedTDetail(statistic=num(t.statistic), pvalue=num(t.pvalue), df=num(t.df),
                                   mean_difference=num(t.mean_difference),
                                   ci=interval(t.confidence_interval(confidence_level))),
            wilcoxon_statistic=num(w.statistic), wilcoxon_pvalue=num(w.pvalue))
        d = x - y
        nz = np.nonzero(d != 0)[0]
        order = nz[np.argsort(-np.abs(d[nz]), kind="stable")][: 2 * N_EVIDENCE]
        f["evidence"] = _evidence(pd, keep, order)


def scenario_pvalues(pa: PairAnalysis, margin: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Raw per-scenario p-values of a comparison against 0 and against ``|D_t| <= margin`` (empty without answers)."""
    sd = pa.scenario
    if sd is None or sd.n_templates == 0:
        return np.zeros(0), np.zeros(0)
    return np.asarray(sd.pvalues, dtype=float), np.asarray(sd.pvalues_beyond(margin), dtype=float)


def _pts(x: float | None, binary: bool) -> str:
    if x is None:
        return "—"
    return f"{100 * x:+.1f} points" if binary else f"{x:+.3g}"


def _scenario_block(pa: PairAnalysis, *, margin: float | None, alpha: float,
                    adjusted: tuple[np.ndarray, np.ndarray] | None) -> ScenarioBlock | None:
    """Every scenario's difference and verdict, the spread between them, and the one-sentence finding."""
    from fairpair.analysis._design import design_reason_counts
    from fairpair.stats import adjust

    sd, spread = pa.scenario, pa.spread
    if sd is None or sd.n_templates == 0:
        return None
    binary = pa.fields.get("value_kind") == "rate"
    bounds = (-1.0, 1.0) if binary else None
    p0, pm = scenario_pvalues(pa, margin)
    if adjusted is None:
        a0, am = adjust(p0, "holm"), adjust(pm, "holm")
        correction = "holm (this comparison's scenarios; secondary)"
    else:
        a0, am = adjusted
        correction = "holm (the plan's primary tests, by template)"
    ci = sd.confidence_intervals(1.0 - alpha)
    eq = sd.confidence_intervals(1.0 - 2.0 * alpha)
    if bounds is not None:
        ci, eq = np.clip(ci, *bounds), np.clip(eq, *bounds)
    lab = pa.template_labels
    names = [str(lab[int(r)]) if int(r) < len(lab) else str(int(r)) for r in sd.templates]
    reason = design_reason_counts(n_templates=sd.n_templates, n_names_a=sd.n_names_a, n_names_b=sd.n_names_b,
                                  names=sd.names, templates="fixed")
    if not np.isfinite(sd.df):
        reason = reason or "no error to estimate a scenario's uncertainty from"
    outl = set(int(r) for r in spread.outliers) if spread is not None else set()
    rows = []
    for i, row in enumerate(sd.templates):
        v, _rule = decide(tuple(ci[i]), tuple(eq[i]), num(a0[i]), margin, alpha, design_reason=reason,
                          pvalue_margin_adjusted=num(am[i]))
        rows.append(ScenarioRow(template=names[i], estimate=num(sd.estimates[i]), se=num(sd.se[i]),
                                ci=interval(ci[i]), equivalence_ci=interval(eq[i]), pvalue=num(p0[i]),
                                pvalue_adjusted=num(a0[i]), pvalue_margin_adjusted=num(am[i]),
                                n_names_a=int(sd.k_a[i]), n_names_b=int(sd.k_b[i]), verdict=v,
                                outlier=int(row) in outl))
    fails = [r for r in rows if r.verdict == "fail"]
    if fails:
        summary = "fails in " + ", ".join(f"`{r.template}` ({_pts(r.estimate, binary)})" for r in fails)
        summary += ", not shown elsewhere" if len(fails) < len(rows) else " (every scenario)"
    elif reason:
        summary = f"no scenario-level verdict: {reason}"
    else:
        summary = "no scenario fails on its own"
    avg_ci = sd.confidence_interval(1.0 - alpha, bounds=bounds)
    heterogeneous = bool(spread is not None and spread.outliers.size and pa.fields.get("templates") != "fixed")
    return ScenarioBlock(
        names=sd.names, df=num(sd.df), correction=correction, family_size=int(np.isfinite(p0).sum()),
        by_template=pa.by_template, rows=rows, average=num(sd.estimate), average_ci=interval(avg_ci),
        share=num(spread.share) if spread else None,
        share_ci=interval((spread.share_low, spread.share_high)) if spread else None,
        heterogeneity_pvalue=num(spread.pvalue) if spread else None,
        outlier_pvalue=num(spread.outlier_pvalue) if spread else None,
        outliers=[names[list(sd.templates).index(r)] for r in (spread.outliers if spread else [])
                  if r in list(sd.templates)],
        without_outliers=num(spread.estimate_without) if spread else None, heterogeneous=heterogeneous,
        summary=summary, note="; ".join(x for x in (sd.note, spread.note if spread else None) if x) or None)


def finish(pa: PairAnalysis, *, pvalue_adjusted: float | None, correction: str, family_size: int,
           margin: float | None, alpha: float, pvalue_margin_adjusted: float | None = None,
           scenario_adjusted: tuple[np.ndarray, np.ndarray] | None = None,
           spread_adjusted: tuple[float | None, str, int] | tuple[float | None, str, int, float | None] | None = None,
           **ident: Any) -> ComparisonResult:
    """Attach the adjusted p-value and the verdict; build the record.

    ``ident`` holds id, target, measure, attribute, design, group_a,
    group_b and primary. ``spread_adjusted``: the spread statistic's p-value adjusted over its family,
    the correction's label, the family's size and (optionally) its p-value against ``max_sd_ratio``
    adjusted over the same family (default: unadjusted, a family of one); the spread
    block never changes the verdict. ``scenario_adjusted``: the per-scenario p-values
    against 0 and against the margin adjusted over the plan's primary tests
    (``by: template``); without it the scenarios are their own Holm family.
    The templates-random average cannot ``pass`` when its scenarios are
    heterogeneous (:data:`HETEROGENEITY_CUTOFF`): ``inconclusive`` with the
    reason ``heterogeneous average``; a ``fail`` carried by outlying
    scenarios says so in its note.
    """
    if pvalue_margin_adjusted is None and not margin:
        pvalue_margin_adjusted = pvalue_adjusted
    why = pa.fields.get("design_reason")
    verdict, rule = decide(pa.ci_alpha, pa.ci_equivalence, pvalue_adjusted, margin, alpha,
                           design_reason=why, pvalue_margin_adjusted=pvalue_margin_adjusted)
    if why == NOT_MEASURED:  # nothing to judge: listed with its reason (not measured), never "insufficient design"
        verdict, rule = "no verdict", RULE_NOT_MEASURED
    elif pa.fields.get("labels_reason") and verdict != "insufficient design":
        # too few human labels to correct the judge (fairpair.analysis._corrected): never pass, never fail
        verdict, rule = "insufficient labels", pa.fields["labels_reason"] + "; never pass, never fail"
    block = _scenario_block(pa, margin=margin, alpha=alpha, adjusted=scenario_adjusted)
    fields = dict(pa.fields)
    if block is not None:
        fields["scenarios"] = block
        extra = None
        if pa.by_template:
            verdict, rule = _by_template(block), RULE_BY_TEMPLATE
            ev = block.evidence(verdict, binary=pa.fields.get("value_kind") == "rate",
                                level=float(pa.fields.get("confidence_level") or 1.0 - alpha))
            extra = f"by template: {block.summary}" + (
                f"; {verdict} decided by {ev}; the claim is about these scenarios, not the average over them"
                if ev else "")
        elif block.heterogeneous and verdict == "pass":
            verdict = "inconclusive"
            rule += (f"; {Reason.HETEROGENEOUS_AVERAGE.value}: the generalized ESD singles out {len(block.outliers)} "
                     f"scenario(s) "
                     f"(p = {block.outlier_pvalue:.2g}), so the average over scenarios cannot pass")
            extra = (f"{Reason.HETEROGENEOUS_AVERAGE.value}: the difference is uneven over scenarios "
                     f"({', '.join(block.outliers)} "
                     "stand out); the average cannot pass; see the scenarios")
        elif block.heterogeneous and verdict == "fail":
            binary = pa.fields.get("value_kind") == "rate"
            w = block.without_outliers
            extra = (f"carried by {len(block.outliers)} scenario(s) ({', '.join(block.outliers)})"
                     + (f": without them the average is {_pts(w, binary)}" if w is not None else ""))
        if extra:
            fields["note"] = f"{fields['note']}; {extra}" if fields.get("note") else extra
    bounds = fields.get("missing_bounds")
    est = fields.get("estimate")
    if fields.get("missing_informative") and bounds and None not in bounds and est is not None:
        why = (f"missing answers differ by group ({100 * fields['missing_shares'][0]:.0f}% vs "
               f"{100 * fields['missing_shares'][1]:.0f}%): with them at either end of the scale the difference "
               f"could be {bounds[0]:+.3g} to {bounds[1]:+.3g}")
        fields["note"] = f"{fields['note']}; {why}" if fields.get("note") else why
        m = float(margin or 0.0)
        # the bounds widened by the sampling error of the estimate (the union of the intervals around each end,
        # Horowitz & Manski 2000): fail needs it beyond the margin, pass inside it
        ci, eq = pa.ci_alpha, pa.ci_equivalence
        if verdict == "fail" and ci is not None:
            lo, hi = bounds[0] - (est - ci[0]), bounds[1] + (ci[1] - est)
            if not (lo > m or hi < -m):
                verdict = "inconclusive"
                rule += ("; informative missingness: the worst-case bounds (with their sampling error) do not lie "
                         "beyond the margin, so the comparison cannot fail on the answers that exist alone")
        elif verdict == "pass" and eq is not None:
            lo, hi = bounds[0] - (est - eq[0]), bounds[1] + (eq[1] - est)
            if not (-m < lo and hi < m):
                verdict = "inconclusive"
                rule += ("; informative missingness: the worst-case bounds (with their sampling error) cross the "
                         "margin, so the comparison cannot pass")
    if pa.within_spread is not None:
        p_sp, corr_sp, n_sp, *p_sp_m = spread_adjusted or (num(pa.within_spread.pvalue), "none", 1)
        fields["spread"] = spread_block(pa, pvalue_adjusted=p_sp, correction=corr_sp, family_size=n_sp, alpha=alpha,
                                        pvalue_margin_adjusted=p_sp_m[0] if p_sp_m else None,
                                        confidence_level=float(fields.get("confidence_level") or 1.0 - alpha),
                                        labels=(str(ident.get("group_a", "A")), str(ident.get("group_b", "B"))))
    return ComparisonResult(**ident, **fields, pvalue=pa.pvalue, pvalue_adjusted=num(pvalue_adjusted),
                            pvalue_margin=num(pa.pvalue_beyond(margin)),
                            pvalue_margin_adjusted=num(pvalue_margin_adjusted),
                            correction=correction, family_size=family_size, margin=margin, verdict=verdict,
                            verdict_rule=rule)


def _by_template(block: ScenarioBlock) -> str:
    """The comparison's verdict from its scenarios': one fails -> fail; all pass -> pass."""
    vs = [r.verdict for r in block.rows]
    if "fail" in vs:
        return "fail"
    if vs and all(v == "insufficient design" for v in vs):
        return "insufficient design"
    if vs and all(v == "pass" for v in vs):
        return "pass"
    return "inconclusive"
