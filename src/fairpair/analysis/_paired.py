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
simulation that chose it is in :mod:`fairpair.stats._crossed`). It uses every answer that exists, not only complete pairs. Yes/no
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

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from fairpair.records import (
    BinaryDetail, ComparisonResult, ContinuousDetail, Evidence, Heterogeneity, PairedTDetail, VariantRow,
    interval, num,
)
from fairpair.analysis._design import NOT_MEASURED
from fairpair.analysis._verdict import RULE_NOT_MEASURED, decide
from fairpair.records import Reason
from fairpair.stats import variant_heterogeneity
from fairpair.stats import mcnemar
from fairpair.stats import paired_t, wilcoxon

__all__ = ["PairData", "PairAnalysis", "analyze_pairs", "finish", "pair_cells", "BINARY_SCALES", "CI_METHOD", "t_interval"]

CI_METHOD = ("crossed random effects on template x name cell means (method of moments): "
             "estimate +/- t(Satterthwaite df) x SE; the (1-2alpha) equivalence interval is its hull with "
             "Hall's (1992) skewness-corrected t")


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


@dataclass
class PairAnalysis:
    """Everything about a comparison except the adjusted p-value and verdict."""

    fields: dict[str, Any]
    ci_alpha: tuple[float, float] | None
    ci_equivalence: tuple[float, float] | None
    pvalue: float | None

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
    return np.unique(arr.astype(str) if arr.dtype == object else arr, return_inverse=True)[1].reshape(-1).astype(np.intp)


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


def analyze_pairs(pd: PairData, *, scale: str, alpha: float, confidence_level: float, exact_threshold: int,
                  n_resamples: int, seed: int, heterogeneity: bool = True, names: str = "random",
                  secondary: bool = True, labels: tuple[str, str] = ("A", "B")) -> PairAnalysis:
    """The cluster-aware inference, intervals and secondary statistics of one comparison (verdict pending).

    ``names`` is the estimand (``"random"`` or ``"fixed"``); ``secondary``
    False skips McNemar / Wilcoxon and the evidence list (the simulation
    does: the verdict does not use them); ``labels`` name the two groups
    in the design reason. Never raises for degenerate data: undefined
    quantities are ``None`` with a ``note``, and designs that cannot support
    a verdict carry ``design_reason`` (see :mod:`fairpair.analysis._design`).
    """
    from fairpair.analysis._design import design_reason, estimand_words
    from fairpair.stats import crossed_from_cells, names_heterogeneity

    binary = scale in BINARY_SCALES
    keep = ~(np.isnan(pd.x) | np.isnan(pd.y))
    n = int(keep.sum())
    notes: list[str] = []
    f: dict[str, Any] = {"n_pairs": n, "n_dropped": int(keep.size - n), "scale": scale,
                         "value_kind": "rate" if binary else "mean",
                         "estimate_name": ("risk difference" if binary else "mean difference") + " (A - B)",
                         "confidence_level": confidence_level, "n_resamples": n_resamples, "seed": seed,
                         "ci_method": CI_METHOD, "alpha": alpha, "names": names,
                         "estimand": estimand_words(names)}
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
    cr = crossed_from_cells(cells_a, cells_b, names=names, n_values=int(answers.size))
    f["n_clusters"] = cr.n_templates
    f["n_names_a"], f["n_names_b"] = cr.n_names_a, cr.n_names_b
    f["df"] = num(cr.df)
    f["se"] = num(cr.se)
    f["variance_components"] = {k: num(v) for k, v in cr.variance_components.items()}
    f["test"] = f"crossed t (templates random, names {names}; Satterthwaite df)"
    f["statistic"] = num(cr.statistic)
    bounds = (-1.0, 1.0) if binary else None
    reason = design_reason(cr, names=names, n_pairs=n, constant=answers.size > 0 and np.unique(answers).size == 1,
                           group_a=labels[0], group_b=labels[1])
    f["design_reason"] = reason
    ci_a = ci_eq = None
    pvalue = None
    if answers.size == 0:
        notes.append("no answers")
        f.update(value_a=None, value_b=None, estimate=None, ci=None, equivalence_ci=None)
        f["note"] = "; ".join(notes)
        return PairAnalysis(f, None, None, None)
    f["value_a"], f["value_b"] = num(cr.mean_a), num(cr.mean_b)
    f["estimate"] = num(cr.estimate)
    f["ci"] = interval(cr.confidence_interval(confidence_level, bounds=bounds))
    if reason is None and cr.se == 0:
        # Every template (and name) shows exactly the same non-zero difference (e.g. 100% vs 0%): no
        # variance to estimate, but the exact sign-flip test over templates (the exchangeable unit) gives
        # p = 2^(1 - T). The zero-width interval may support a fail, never a pass.
        pvalue = min(1.0, 2.0 ** (1 - cr.n_templates))
        ci_a = (cr.estimate, cr.estimate)
        f["test"] = "exact sign-flip test over templates (no variance)"
        f["ci"] = interval(ci_a)
        notes.append(f"every template shows the same difference: no variance to estimate; p-value from the exact "
                     f"sign-flip test over {cr.n_templates} templates; never a pass")
    elif reason is None:
        ci_a = tuple(cr.confidence_interval(1.0 - alpha, bounds=bounds))
        ci_eq = tuple(cr.equivalence_interval(1.0 - 2.0 * alpha, bounds=bounds))
        pvalue = num(cr.pvalue)
    f["equivalence_ci"] = interval(cr.equivalence_interval(1.0 - 2.0 * alpha, bounds=bounds))
    if cr.note:
        notes.append(cr.note)
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
    return PairAnalysis(f, ci_a, ci_eq, pvalue)


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


def finish(pa: PairAnalysis, *, pvalue_adjusted: float | None, correction: str, family_size: int,
           margin: float | None, alpha: float, pvalue_margin_adjusted: float | None = None,
           **ident: Any) -> ComparisonResult:
    """Attach the adjusted p-value and the verdict; build the record.

    ``ident`` holds id, target, measure, attribute, design, group_a,
    group_b and primary.
    """
    if pvalue_margin_adjusted is None and not margin:
        pvalue_margin_adjusted = pvalue_adjusted
    why = pa.fields.get("design_reason")
    verdict, rule = decide(pa.ci_alpha, pa.ci_equivalence, pvalue_adjusted, margin, alpha,
                           design_reason=why, pvalue_margin_adjusted=pvalue_margin_adjusted)
    reason = Reason.INSUFFICIENT_DESIGN.value if why else None
    if why == NOT_MEASURED:  # nothing to judge: listed with its reason, never "insufficient design"
        verdict, rule, reason = "no verdict", RULE_NOT_MEASURED, Reason.NOT_MEASURED.value
    return ComparisonResult(**ident, **pa.fields, pvalue=pa.pvalue, pvalue_adjusted=num(pvalue_adjusted),
                            pvalue_margin=num(pa.pvalue_beyond(margin)),
                            pvalue_margin_adjusted=num(pvalue_margin_adjusted),
                            correction=correction, family_size=family_size, margin=margin, verdict=verdict,
                            reason=reason, verdict_rule=rule)
