"""One two-group comparison on matched pairs: the tests, the interval, the breakdown.

Shared by :func:`fairpair.analysis.analyze_run` and the calibration
simulation (``benchmarks/sim_calibration.py``), so what is simulated is
exactly what is reported. The verdict needs the multiplicity-adjusted
p-value of the whole family, so it is set later (:func:`finish`).

Methods
-------
Binary (yes/no) measures: McNemar's test -- the exact binomial test below
``exact_threshold`` discordant pairs, the asymptotic chi-square test
otherwise. The asymptotic test is used *without* continuity correction, as
Fagerland, Lydersen & Laake (2013) recommend: with the correction (and the
exact test) the rejection rate under no bias stays well below alpha (3.5%
instead of 5% at the seed's design in ``benchmarks/sim_calibration.py``),
without it the test is at nominal level. The exact p-value and the
chi-square with Edwards's continuity correction are reported too (in
``binary``). Also: rates per group, risk difference, matched-pairs odds ratio
``b / c``. Continuous, count and ordinal measures: Wilcoxon signed-rank test
(``zero_method="pratt"``), Hodges-Lehmann shift with its CI, matched
rank-biserial correlation, paired t-test as secondary.

Interval: the estimate ``group_a - group_b`` (risk or mean difference) gets
a cluster-bootstrap interval resampling templates (Field & Welsh 2007):
``estimate +/- t_{G-1} * SE_boot * sqrt(G / (G - 1))`` with ``G`` templates.
The bootstrap standard error is biased down by ``(G - 1) / G`` and the
percentile interval undercovers with few clusters (92-93% for a nominal 95%
at 20 templates); ``t`` quantiles with ``G - 1`` degrees of freedom and the
``G / (G - 1)`` factor are the usual small-number-of-clusters corrections
(Cameron, Gelbach & Miller 2008; Cameron & Miller 2015) and bring the
coverage to nominal in the calibration simulation.

References
----------
Fagerland, M. W., Lydersen, S., & Laake, P. (2013). The McNemar test for
binary matched-pairs data: mid-p and asymptotic are better than exact
conditional. *BMC Medical Research Methodology*, 13, 91.
Cameron, A. C., Gelbach, J. B., & Miller, D. L. (2008). Bootstrap-based
improvements for inference with clustered errors. *Review of Economics and
Statistics*, 90, 414-427.
Cameron, A. C., & Miller, D. L. (2015). A practitioner's guide to
cluster-robust inference. *Journal of Human Resources*, 50, 317-372.
Field, C. A., & Welsh, A. H. (2007). Bootstrapping clustered data. *JRSS B*,
69, 369-390.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from fairpair.analysis._results import (
    BinaryDetail, ComparisonResult, ContinuousDetail, Evidence, Heterogeneity, PairedTDetail, VariantRow,
    interval, num,
)
from fairpair.analysis._verdict import decide
from fairpair.stats._bootstrap import cluster_bootstrap_mean_difference, cluster_bootstrap_risk_difference
from fairpair.stats._heterogeneity import variant_heterogeneity
from fairpair.stats._mcnemar import mcnemar
from fairpair.stats._signed_rank import paired_t, wilcoxon

__all__ = ["PairData", "PairAnalysis", "analyze_pairs", "finish", "BINARY_SCALES", "CI_METHOD", "t_interval"]

CI_METHOD = "cluster bootstrap (templates): estimate +/- t(G-1) x bootstrap SE x sqrt(G/(G-1))"


def t_interval(theta: float, boot: np.ndarray, n_clusters: int, level: float) -> tuple[float, float]:
    """``theta +/- t_{G-1}(level) * sd(boot) * sqrt(G/(G-1))``; NaN limits with fewer than two clusters."""
    finite = boot[np.isfinite(boot)]
    if n_clusters < 2 or finite.size < 2 or not np.isfinite(theta):
        return (np.nan, np.nan)
    se = float(finite.std(ddof=1)) * np.sqrt(n_clusters / (n_clusters - 1))
    q = float(stats.t.ppf(0.5 + level / 2.0, n_clusters - 1))
    return (theta - q * se, theta + q * se)

BINARY_SCALES = ("binary",)
#: Fewer templates than this: pair-level analytic intervals instead of the cluster bootstrap.
MIN_CLUSTERS = 8
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
        Template of each pair (the bootstrap's resampling unit).
    variants : ndarray of int, shape (n,)
        Code of the pair's ``"variant_a / variant_b"`` label in ``variant_labels``.
    variant_labels : tuple of str
        The labels.
    sets, case_a, case_b : ndarray of str, shape (n,)
        Matched-set and case ids, for the evidence list.
    """

    x: np.ndarray
    y: np.ndarray
    clusters: np.ndarray
    variants: np.ndarray
    variant_labels: tuple = ()
    sets: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=object))
    case_a: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=object))
    case_b: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=object))


@dataclass
class PairAnalysis:
    """Everything about a comparison except the adjusted p-value and verdict."""

    fields: dict[str, Any]
    ci_alpha: tuple[float, float] | None
    ci_equivalence: tuple[float, float] | None
    pvalue: float | None


def _evidence(pd: PairData, keep: np.ndarray, order: np.ndarray) -> list[Evidence]:
    if pd.sets.size == 0:
        return []
    idx = np.nonzero(keep)[0][order]
    return [Evidence(matched_set=str(pd.sets[i]), case_a=str(pd.case_a[i]), case_b=str(pd.case_b[i]),
                     value_a=num(pd.x[i]), value_b=num(pd.y[i])) for i in idx]


def analyze_pairs(pd: PairData, *, scale: str, alpha: float, confidence_level: float, exact_threshold: int,
                  n_resamples: int, seed: int, heterogeneity: bool = True) -> PairAnalysis:
    """Tests, estimate and intervals for one comparison (verdict pending; see :func:`finish`).

    Never raises for degenerate data: no complete pairs, no discordant
    pairs, all differences zero or a constant measure give undefined
    quantities as ``None`` and a ``note``.
    """
    binary = scale in BINARY_SCALES
    keep = ~(np.isnan(pd.x) | np.isnan(pd.y))
    n = int(keep.sum())
    notes: list[str] = []
    f: dict[str, Any] = {"n_pairs": n, "n_dropped": int(keep.size - n), "scale": scale,
                         "value_kind": "rate" if binary else "mean",
                         "estimate_name": ("risk difference" if binary else "mean difference") + " (A - B)",
                         "confidence_level": confidence_level, "n_resamples": n_resamples, "seed": seed,
                         "ci_method": CI_METHOD, "alpha": alpha}
    if f["n_dropped"]:
        notes.append(f"{f['n_dropped']} pairs dropped for a missing answer or measurement")
    x, y, cl = pd.x[keep], pd.y[keep], pd.clusters[keep]
    f["n_clusters"] = int(np.unique(cl).size) if n else 0
    if binary and n and not np.all(np.isin(x, (0.0, 1.0)) & np.isin(y, (0.0, 1.0))):
        notes.append("measure declared binary but holds values other than yes/no: analysed as continuous")
        binary = False
        f["value_kind"] = "mean"
        f["estimate_name"] = "mean difference (A - B)"
    ci_a = ci_eq = None
    pvalue = None
    if n == 0:
        notes.append("no complete pairs")
        f.update(value_a=None, value_b=None, estimate=None, ci=None, equivalence_ci=None,
                 test="McNemar" if binary else "Wilcoxon signed-rank", statistic=None)
        f["note"] = "; ".join(notes)
        return PairAnalysis(f, None, None, None)
    f["value_a"], f["value_b"] = float(x.mean()), float(y.mean())
    boot_fn = cluster_bootstrap_risk_difference if binary else cluster_bootstrap_mean_difference
    boot = boot_fn(x, y, cl, n_resamples=max(n_resamples, 1), confidence_level=confidence_level, seed=seed)
    f["estimate"] = num(boot.statistic)
    dist, g = boot.bootstrap_distribution, boot.n_clusters
    if g >= MIN_CLUSTERS:
        def ci_at(level: float) -> tuple[float, float]:
            lo, hi = t_interval(boot.statistic, dist, g, level)
            return (max(lo, -1.0), min(hi, 1.0)) if binary else (lo, hi)  # a risk difference lies in [-1, 1]
    else:
        # Too few templates for a cluster bootstrap (t with G-1 degrees of freedom explodes, and
        # resampling 3 clusters says little): the pair-level analytic interval, as the test uses.
        notes.append(f"only {g} templates: pair-level interval (Newcombe for yes/no, paired t otherwise); "
                     f"it ignores clustering, so use {MIN_CLUSTERS} or more templates for a real audit")
        ref = mcnemar(x, y, exact=True) if binary else paired_t(x, y)

        def ci_at(level: float) -> tuple[float, float]:
            return tuple(ref.confidence_interval(level))  # type: ignore[return-value]
    f["ci"] = interval(ci_at(confidence_level))
    ci_a = ci_at(1.0 - alpha)
    ci_eq = ci_at(1.0 - 2.0 * alpha)
    f["equivalence_ci"] = interval(ci_eq)
    if np.unique(np.concatenate([x, y])).size == 1:
        # e.g. a judge that gave every answer the same score: no information, never a "pass"
        notes.append("the measure is constant (every answer of both groups has the same value): "
                     "no information about a difference")
        ci_a = ci_eq = None
    if boot.note:
        notes.append(boot.note)
    if binary:
        exact = mcnemar(x, y, exact=True)
        chi = mcnemar(x, y, exact=False, correction=True)
        use = exact if exact.b + exact.c < exact_threshold else mcnemar(x, y, exact=False, correction=False)
        f["test"] = f"McNemar ({use.method})"
        f["statistic"] = num(use.statistic)
        pvalue = num(use.pvalue)
        if use.note:
            notes.append(use.note)
        f["binary"] = BinaryDetail(
            table=[[int(v) for v in row] for row in exact.table], b=exact.b, c=exact.c,
            exact_threshold=exact_threshold, exact_pvalue=num(exact.pvalue), chi2_statistic=num(chi.statistic),
            chi2_pvalue=num(chi.pvalue), odds_ratio=num(exact.odds_ratio),
            odds_ratio_ci=interval(exact.odds_ratio_ci(confidence_level)),
            newcombe_ci=interval(exact.confidence_interval(confidence_level)))
        # Floor for small samples (fewer discordant pairs than exact_threshold, where the exact
        # test is used too): never narrower than Newcombe's analytic paired interval. A cluster
        # bootstrap of data with no discordant pairs (or few clusters) collapses to zero width and
        # would otherwise "establish" equivalence from nine identical pairs. Above the threshold
        # the bootstrap interval stands alone (its coverage is checked in benchmarks/sim_calibration.py).
        widened = False
        small = exact.b + exact.c < exact_threshold and g >= MIN_CLUSTERS
        for lvl, key in (((confidence_level, "ci"), (1.0 - alpha, "a"), (1.0 - 2.0 * alpha, "eq"))
                         if small else ()):
            nlo, nhi = exact.confidence_interval(lvl)
            cur = {"ci": tuple(f["ci"]) if f["ci"] else None, "a": ci_a, "eq": ci_eq}[key]
            if key != "ci" and cur is None:
                continue
            if cur is None or None in cur or not (np.isfinite(nlo) and np.isfinite(nhi)):
                continue
            new = (min(cur[0], nlo), max(cur[1], nhi))
            widened |= new != tuple(cur)
            if key == "ci":
                f["ci"] = interval(new)
            elif key == "a":
                ci_a = new
            else:
                ci_eq = new
                f["equivalence_ci"] = interval(new)
        if widened:
            notes.append("interval widened to Newcombe's paired interval (the bootstrap one was narrower)")
        disc = np.nonzero(x != y)[0]
        order = np.concatenate([disc[x[disc] > y[disc]][:N_EVIDENCE], disc[x[disc] < y[disc]][:N_EVIDENCE]])
        f["evidence"] = _evidence(pd, keep, order.astype(int))
    else:
        w = wilcoxon(x, y, zero_method="pratt")
        t = paired_t(x, y)
        f["test"] = "Wilcoxon signed-rank (zero_method='pratt')"
        f["statistic"] = num(w.statistic)
        pvalue = num(w.pvalue)
        if w.note:
            notes.append(w.note)
        f["continuous"] = ContinuousDetail(
            zero_method="pratt", n_zero=w.n_zero, median_difference=num(w.median_difference),
            hodges_lehmann=num(w.hodges_lehmann), hodges_lehmann_ci=interval(w.confidence_interval(confidence_level)),
            rank_biserial=num(w.rank_biserial),
            paired_t=PairedTDetail(statistic=num(t.statistic), pvalue=num(t.pvalue), df=num(t.df),
                                   mean_difference=num(t.mean_difference),
                                   ci=interval(t.confidence_interval(confidence_level))))
        d = x - y
        nz = np.nonzero(d != 0)[0]
        order = nz[np.argsort(-np.abs(d[nz]), kind="stable")][: 2 * N_EVIDENCE]
        f["evidence"] = _evidence(pd, keep, order)
    if heterogeneity and pd.variants.size:
        try:
            h = variant_heterogeneity(x, y, pd.variants[keep], kind="binary" if binary else "continuous",
                                      confidence_level=confidence_level)
            lab = pd.variant_labels
            f["per_variant"] = [VariantRow(variant=str(lab[int(v.variant)]) if lab else str(v.variant), n=v.n, effect=num(v.effect), ci=interval(v.ci),
                                           b=v.b, c=v.c) for v in h.variants]
            f["heterogeneity"] = Heterogeneity(statistic=num(h.statistic), pvalue=num(h.pvalue), df=h.df,
                                               method=h.method, note=h.note)
        except ValueError as exc:  # e.g. a single variant label set the stats package refuses
            notes.append(f"per-variant breakdown unavailable: {exc}")
    f["note"] = "; ".join(dict.fromkeys(notes)) or None
    return PairAnalysis(f, ci_a, ci_eq, pvalue)


def finish(pa: PairAnalysis, *, pvalue_adjusted: float | None, correction: str, family_size: int,
           margin: float | None, alpha: float, **ident: Any) -> ComparisonResult:
    """Attach the adjusted p-value and the verdict; build the record.

    ``ident`` holds id, target, measure, attribute, design, group_a,
    group_b and primary.
    """
    verdict, rule = decide(pa.ci_alpha, pa.ci_equivalence, pvalue_adjusted, margin, alpha)
    return ComparisonResult(**ident, **pa.fields, pvalue=pa.pvalue, pvalue_adjusted=num(pvalue_adjusted),
                            correction=correction, family_size=family_size, margin=margin, verdict=verdict,
                            verdict_rule=rule)
