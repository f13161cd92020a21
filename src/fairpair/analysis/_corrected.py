"""Judge-measured comparisons corrected by human labels (prediction-powered inference).

When humans have labelled some answers of a judge measure (``fairpair label``, or the files of
``fairpair calibrate export`` / ``score``), the comparison's inference runs on each answer's
prediction-powered value (:func:`fairpair.stats.ppi_values`: the judge's score, and on a labelled
answer the human-minus-judge residual weighted by ``1/pi``) through the same crossed inference
and verdict rule as every comparison (:func:`fairpair.analysis._paired.analyze_pairs`), so the
corrected interval counts the labelled sample's uncertainty, the templates and the names. The
judge's own figures stay in the record (``label_correction``): the raw estimate and interval, the
judge's error by group and, for yes/no judges, the Rogan-Gladen correction by group.

Below :data:`MIN_LABELS` labels in the comparison (or :data:`MIN_LABELS_PER_GROUP` in either
group) the verdict is ``insufficient labels`` (:class:`fairpair.records.Reason`): the smallest
sample ``benchmarks/sim_labels.py`` accepted.

Shared by :func:`fairpair.analysis.analyze_run` and ``benchmarks/sim_labels.py``, so what is
simulated is what is reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from fairpair.analysis._paired import BINARY_SCALES, PairAnalysis, PairData, analyze_pairs
from fairpair.records import HumanLabel, Reason, interval, num

if TYPE_CHECKING:
    from fairpair.store import Store

__all__ = ["load_labels", "MIN_LABELS", "MIN_LABELS_PER_GROUP", "HumanLabels", "corrected_pairs", "analyze_corrected",
           "label_arrays",
           "labels_reason", "RULE_LABELS"]

#: The fewest labels in a comparison for which the corrected verdicts held alpha and coverage in
#: ``benchmarks/sim_labels.py`` (50, 100 and 200 labels simulated; table in ``docs/corrected-gaps.md``).
MIN_LABELS = 50
#: ... and in each of its two groups (a stratified sample of 50 puts about 25 in each).
MIN_LABELS_PER_GROUP = 20

RULE_LABELS = (f"{Reason.INSUFFICIENT_LABELS.value}: the judge's difference is corrected by human labels only "
               f"with at least {MIN_LABELS} labelled answers ({MIN_LABELS_PER_GROUP} per group), the fewest the "
               "simulation accepted; never pass, never fail")


@dataclass(frozen=True)
class HumanLabels:
    """Human labels of one measure, by case: the raters' mean and the inclusion probability.

    Attributes
    ----------
    value : dict of str to float
        Case id -> mean of the raters' labels (several raters of one answer count as their mean).
    inclusion : dict of str to float
        Case id -> probability that the answer was drawn for labelling (missing: unknown; the
        labelled share of its (group, template) stratum is used, as ``calibrate export`` samples).
    raters : dict of str to int
        Case id -> number of raters.
    """

    value: dict
    inclusion: dict
    raters: dict

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, float | None, float | None]]) -> HumanLabels:
        """From ``(case_id, rater, value, inclusion)`` rows (``inclusion`` None when unknown); a rater
        who labelled one answer twice counts once, with the last value."""
        by: dict[str, dict[str, float]] = {}
        pi: dict[str, float] = {}
        for case_id, rater, value, inc in rows:
            if value is None:
                continue
            by.setdefault(str(case_id), {})[str(rater)] = float(value)
            if inc is not None:
                pi[str(case_id)] = float(inc)
        return cls({c: float(np.mean(list(v.values()))) for c, v in by.items()}, pi,
                   {c: len(v) for c, v in by.items()})

    def __len__(self) -> int:
        return len(self.value)


def load_labels(store: Store) -> tuple[dict[tuple[str, str], HumanLabels], list[str]]:
    """Every stored human label, as ``(target, measure) -> HumanLabels``, and notes.

    Labels of the page (``fairpair label``) and of imported ``calibrate`` files alike
    (:meth:`fairpair.store.Store.labels`). Inclusion probabilities: when one stored sample holds every
    labelled answer of a measure, its design's (:meth:`fairpair.records.LabelSample.labelled_probabilities`,
    which weights an uncertainty-driven draw); otherwise (several samples, or labels of a file
    exported before samples were recorded) the labelled share of each answer's (group, template)
    stratum, which is exact when every sample was drawn at random within those strata (a union of
    such samples is again one) and is noted otherwise.
    """
    labels = store.labels()
    notes: list[str] = []
    rows: dict[tuple[str, str], list[HumanLabel]] = {}
    for lab in labels:
        rows.setdefault((lab.target, lab.measure), []).append(lab)
    out: dict[tuple[str, str], HumanLabels] = {}
    for (target, measure), labs in rows.items():
        keys = {(lab.target, lab.case_id) for lab in labs}
        samples = [s for s in store.label_samples(measure) if any(s.get(*k) for k in keys)]
        pi: dict[str, float] = {}
        if len(samples) == 1 and all(samples[0].get(*k) for k in keys):
            pi = {c: p for (_t, c), p in samples[0].labelled_probabilities(keys).items()}
        elif any(s.design == "uncertainty" for s in samples):
            notes.append(f"{measure} ({target}): labels from several samples, one drawn by the judge's uncertainty; "
                         "their inclusion probabilities are taken as the labelled share of each (group, template) "
                         "stratum, which that draw does not make exact")
        out[(target, measure)] = HumanLabels.from_rows((lab.case_id, lab.rater, lab.value, pi.get(lab.case_id))
                                                       for lab in labs)
    return out, notes


def label_arrays(pd: PairData, labels: HumanLabels) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``hx, hy, pix, piy``: the human label and inclusion probability of each pair's A and B answer (NaN:
    none)."""
    out = []
    for table in (labels.value, labels.inclusion):
        for cases in (pd.case_a, pd.case_b):
            out.append(np.array([table.get(str(c), np.nan) for c in cases], dtype=float))
    return out[0], out[1], out[2], out[3]


def corrected_pairs(pd: PairData, hx: np.ndarray, hy: np.ndarray, pix: np.ndarray | None = None,
                    piy: np.ndarray | None = None, *, lam: float | None = None) -> tuple[PairData, dict[str, Any]]:
    """The comparison's pairs with each answer's prediction-powered value in place of the judge's score.

    ``hx`` / ``hy``: the human label (raters' mean) of group A's / group B's answer of each pair, NaN
    unlabelled; ``pix`` / ``piy``: their inclusion probabilities (NaN or ``None``: the labelled share of
    the answer's (group, template) stratum, :func:`fairpair.stats.stratum_inclusion`). ``lam``: default
    PPI++ tuning, cross-fitted over two halves of the templates (:func:`fairpair.stats.ppi_crossfit`).
    Returns the new pairs and the correction's figures (``lam``, labels per group, the
    judge's mean error per group).
    """
    from fairpair.stats import judge_error_by_group, ppi_crossfit, ppi_values

    n = pd.x.size
    f = np.concatenate([pd.x, pd.y])
    h = np.concatenate([hx, hy])
    h = np.where(np.isnan(f), np.nan, h)
    is_a = np.repeat([True, False], n)
    lab = ~np.isnan(h)
    pi = None if pix is None or piy is None else np.concatenate([pix, piy])
    tc = np.unique(np.concatenate([np.asarray(pd.clusters), np.asarray(pd.clusters)]),
                   return_inverse=True)[1].reshape(-1)
    if pi is None or np.isnan(pi[lab]).any():
        pi = _stratum_shares(lab, np.where(is_a, 0, 1) + 2 * tc, f)
    lams = ppi_crossfit(f, h, is_a, tc % 2, inclusion=pi) if lam is None else lam
    y = ppi_values(f, h, lam=lams, inclusion=pi)
    lam = float(np.mean(lams))
    err, cnt = judge_error_by_group(f, h, is_a, pi)
    info = {"lam": float(lam), "n_labels": int(lab.sum()), "n_labels_a": cnt["A"], "n_labels_b": cnt["B"],
            "judge_error_a": err["A"], "judge_error_b": err["B"]}
    return replace(pd, x=y[:n], y=y[n:]), info


def _stratum_shares(lab: np.ndarray, strata: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Stratum shares over the answers with a judge score; NaN for the others (they are missing anyway)."""
    from fairpair.stats import stratum_inclusion

    ok = ~np.isnan(f)
    out = np.full(f.size, np.nan)
    out[ok] = stratum_inclusion(lab[ok], strata[ok])
    return out


def labels_reason(n_labels: int, n_a: int, n_b: int) -> str | None:
    """Why the comparison's labels are too few for a corrected verdict (``None``: enough)."""
    if n_labels >= MIN_LABELS and min(n_a, n_b) >= MIN_LABELS_PER_GROUP:
        return None
    return (f"{Reason.INSUFFICIENT_LABELS.value}: {n_labels} labelled answers ({n_a} of group A, {n_b} of group B); "
            f"the corrected verdict needs at least {MIN_LABELS} ({MIN_LABELS_PER_GROUP} per group)")


def analyze_corrected(pd: PairData, raw: PairAnalysis, hx: np.ndarray, hy: np.ndarray, pix: np.ndarray | None = None,
                      piy: np.ndarray | None = None, *, scale: str, scoring: str | None = None,
                      **kw: Any) -> PairAnalysis:
    """The comparison's analysis on the prediction-powered values, with the judge's figures kept.

    ``raw`` is :func:`analyze_pairs` of the judge's scores ``pd``; ``hx`` ... ``piy`` as in
    :func:`corrected_pairs` (:func:`label_arrays`); ``kw`` are ``analyze_pairs``' other arguments. The
    result's ``fields["label_correction"]`` holds the raw estimate and interval, ``lambda``, the
    labels and the judge's error by group (and Rogan-Gladen for a yes/no judge that answers a hard 0/1;
    ``scoring`` the judge's, when it is ``yes_no`` or the values are not 0/1, ``rogan_gladen_note`` is
    :data:`RG_PROBABILITIES`, saying why there is none);
    ``fields["labels_reason"]`` is set when the labels are too few (:func:`labels_reason`).
    """
    from fairpair.records import LabelCorrection

    cpd, info = corrected_pairs(pd, hx, hy, pix, piy)
    binary = scale in BINARY_SCALES
    kw = {**kw, "secondary": False}
    # the name components come from the judge's scores of every answer: on the prediction-powered values
    # the labelled answers' residuals make them noisy and, truncated at 0, too large (the corrected interval
    # covered 97-98% at 50 labels with its own, with a Satterthwaite df near 4); this assumes the judge spreads
    # names at least as much as the humans do (a judge harsher on one name adds to its spread); they enter the
    # df with the judge's own mean squares (with one (component, n - 1) term the df was 19-21, the t statistics'
    # spread showed 14-18, and the corrected verdicts failed 5.0-6.6% at a true difference of 0)
    pa = analyze_pairs(cpd, scale="continuous", names_from=raw.crossed, **kw)
    # the within-cell spread stays the judge's scores' (None for yes/no): the prediction-powered values of
    # the labelled answers carry their residuals, which are no answer's spread
    pa.within_spread = raw.within_spread
    f = pa.fields
    if binary:  # the estimate is still a risk difference; its values are no longer 0/1
        f["value_kind"], f["estimate_name"] = "rate", raw.fields.get("estimate_name")
        f["scale"] = scale
    rg = _rogan_gladen(pd, hx, hy, kw) if binary else None
    if rg is None and (binary or scoring == "yes_no"):
        rg = {"rogan_gladen_note": RG_PROBABILITIES}
    f["label_correction"] = LabelCorrection(
        raw_estimate=raw.fields.get("estimate"), raw_ci=raw.fields.get("ci"), raw_pvalue=raw.pvalue,
        raw_value_a=raw.fields.get("value_a"), raw_value_b=raw.fields.get("value_b"),
        lam=num(info["lam"]), n_labels=info["n_labels"], n_labels_a=info["n_labels_a"],
        n_labels_b=info["n_labels_b"], judge_error_a=num(info["judge_error_a"]),
        judge_error_b=num(info["judge_error_b"]), min_labels=MIN_LABELS,
        method=("prediction-powered inference (Angelopoulos et al. 2023; PPI++ power tuning, arXiv:2311.01453) "
                "on the crossed design: the judge's score of every answer corrected by the human-minus-judge "
                "residual of the labelled ones (weights 1/inclusion probability)"),
        **(rg or {}))
    for key in ("binary", "continuous", "evidence", "per_variant", "heterogeneity"):  # the judge's, kept as raw
        if key in raw.fields:
            f[key] = raw.fields[key]
    reason = labels_reason(info["n_labels"], info["n_labels_a"], info["n_labels_b"])
    f["labels_reason"] = reason
    if reason:
        f["note"] = f"{f['note']}; {reason}" if f.get("note") else reason
    return pa


#: Why a yes/no measure's ``LabelCorrection`` has no Rogan-Gladen figures.
RG_PROBABILITIES = ("not computed: the judge gives a probability of yes (scoring: yes_no), not a hard yes/no; "
                    "Rogan-Gladen corrects the errors of a 0/1 classification. The corrected figures are "
                    "prediction-powered, which uses the probabilities as they are")


def _rogan_gladen(pd: PairData, hx: np.ndarray, hy: np.ndarray, kw: dict[str, Any]) -> dict[str, Any] | None:
    """The yes/no judge's Rogan-Gladen corrected risk difference and each group's sensitivity / specificity."""
    from fairpair.stats import rogan_gladen_difference

    n = pd.x.size
    f = np.concatenate([pd.x, pd.y])
    if not np.all(np.isin(f[~np.isnan(f)], (0.0, 1.0))):
        return None
    # names coded as pair_cells does (template x name cells; each group its own names)
    na = np.asarray(pd.name_a if pd.name_a.size else pd.variants)
    nb = np.asarray(pd.name_b if pd.name_b.size else pd.variants)
    names = np.concatenate([np.char.add("A", na.astype(str)), np.char.add("B", nb.astype(str))])
    tc = np.concatenate([np.asarray(pd.clusters), np.asarray(pd.clusters)])
    grp = np.repeat(["A", "B"], n)
    ok = ~np.isnan(f)
    r = rogan_gladen_difference(f[ok], np.concatenate([hx, hy])[ok], tc[ok], names[ok], grp[ok], groups=("A", "B"),
                                names=kw.get("names", "random"))
    level = kw.get("confidence_level", 0.95)
    a, b = r.by_group["A"], r.by_group["B"]
    return {"rogan_gladen_estimate": num(r.estimate),
            "rogan_gladen_ci": interval(r.confidence_interval(level)) if np.isfinite(r.se) else None,
            "sensitivity_a": num(a.sensitivity), "specificity_a": num(a.specificity),
            "sensitivity_b": num(b.sensitivity), "specificity_b": num(b.specificity),
            "rogan_gladen_note": r.note}
