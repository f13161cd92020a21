"""Judge calibration: how well an automatic judge agrees with human raters.

An audit that scores answers with an LLM judge is only as good as the judge.
Before a judge's labels are trusted, a sample of answers is also labelled by
humans and the two are compared here: chance-corrected agreement of the judge
with each human (Cohen's kappa), agreement among humans with and without the
judge (Fleiss' kappa, Krippendorff's alpha), the confusion matrix, and - the
part specific to fairness audits - whether the judge's disagreement with the
humans differs by group. A judge that errs more for one group biases the audit
by itself, whatever the chatbot does.

The agreement statistics themselves (Cohen, Fleiss, Krippendorff, the
confusion matrix, Landis-Koch) live in :mod:`fairpair.stats` and are
re-exported here; this module adds the calibration on top of them.

Every function is pure, takes arrays (or a DataFrame for
:func:`score_labels`) and returns a frozen result object, never a bare tuple.
Undefined statistics (e.g. kappa when every rating is the same category) are
``nan`` with a ``note`` saying why; they do not raise.

Missing labels are ``None`` or ``NaN``. Pairwise measures drop pairs with a
missing member; Fleiss' kappa needs complete rows; Krippendorff's alpha uses
every pairable value.

References
----------
Cohen, J. (1960). A coefficient of agreement for nominal scales. *Educational
and Psychological Measurement*, 20(1), 37-46.
Cohen, J. (1968). Weighted kappa: nominal scale agreement with provision for
scaled disagreement or partial credit. *Psychological Bulletin*, 70(4), 213-220.
Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters.
*Psychological Bulletin*, 76(5), 378-382.
Krippendorff, K. (2004). *Content Analysis: An Introduction to Its
Methodology* (2nd ed.), ch. 11. Sage.
Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability.
Annenberg School for Communication, University of Pennsylvania.
Landis, J. R., & Koch, G. G. (1977). The measurement of observer agreement for
categorical data. *Biometrics*, 33(1), 159-174.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

# The agreement statistics live in fairpair.stats; re-exported here for compatibility.
from fairpair.stats._agreement import (
    CohenKappaResult,
    ConfusionMatrixResult,
    FleissKappaResult,
    KrippendorffAlphaResult,
    _as_1d,
    _as_2d,
    _resolve_labels,
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    krippendorff_alpha,
    landis_koch,
)

__all__ = [
    "CohenKappaResult",
    "FleissKappaResult",
    "KrippendorffAlphaResult",
    "ConfusionMatrixResult",
    "GroupTest",
    "DisagreementByGroupResult",
    "CalibrationReport",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "confusion_matrix",
    "disagreement_by_group",
    "score_labels",
    "landis_koch",
]




# -- disagreement by group ---------------------------------------------------------------


@dataclass(frozen=True)
class GroupTest:
    """One hypothesis test across groups.

    Attributes
    ----------
    name:
        ``"fisher_exact"`` (two groups; statistic is the odds ratio of
        disagreeing, first group vs second), ``"chi2"`` (Pearson chi-square
        on the groups x {agree, disagree} table, no continuity correction) or
        ``"kruskal"`` (Kruskal-Wallis H on absolute errors).
    statistic, pvalue:
        The test's statistic and two-sided p-value.
    dof:
        Degrees of freedom (chi-square and Kruskal-Wallis), else ``None``.
    note:
        Caveats (small expected counts, nothing to test).
    """

    name: str
    statistic: float
    pvalue: float
    dof: int | None = None
    note: str | None = None


@dataclass(frozen=True)
class DisagreementByGroupResult:
    """Does the judge disagree with humans more for some groups?

    Attributes
    ----------
    table:
        One row per group (index ``group``): ``n``, ``disagreements``,
        ``disagreement_rate``, and ``mean_abs_error`` (ordinal only: mean
        ``|judge - human|`` in label positions, else NaN).
    rate_test:
        Test of equal disagreement rates across groups (:class:`GroupTest`).
    error_test:
        Kruskal-Wallis test of equal absolute errors across groups (ordinal
        labels only, else ``None``).
    max_rate_difference:
        Largest minus smallest group disagreement rate (a risk difference).
    labels:
        Label order used for the errors.
    note:
        How many items were dropped for a missing label or group.
    """

    table: pd.DataFrame = field(repr=False)
    rate_test: GroupTest
    error_test: GroupTest | None
    max_rate_difference: float
    labels: tuple
    note: str | None = None


def disagreement_by_group(
    judge: Sequence[Hashable] | np.ndarray,
    human: Sequence[Hashable] | np.ndarray,
    groups: Sequence[Hashable] | np.ndarray,
    *,
    ordinal: bool = False,
    labels: Sequence[Hashable] | None = None,
) -> DisagreementByGroupResult:
    """Test whether the judge's disagreement with the human labels differs by group.

    A judge that errs more for one group (say, answers to Maghrebi names)
    biases the audit even if the chatbot treats every group alike, so the
    judge's errors must be independent of group.

    Parameters
    ----------
    judge, human:
        Labels of the same items, shape ``(n,)``; ``human`` is the reference
        (e.g. the humans' consensus).
    groups:
        Group of each item, shape ``(n,)``; at least two distinct groups.
    ordinal:
        If True, labels are ordered (``labels`` order, default sorted) and the
        absolute error ``|pos(judge) - pos(human)|`` is compared across groups
        with a Kruskal-Wallis test; for a scale ``1..5`` pass
        ``labels=[1, 2, 3, 4, 5]`` so unused levels still count.
    labels:
        Label order; default: sorted labels present.

    Returns
    -------
    DisagreementByGroupResult
        The rate test is Fisher's exact test for two groups and Pearson's
        chi-square (``scipy.stats.chi2_contingency``, no correction) for more.
        When nothing varies (no disagreement, or identical errors, in every
        group) the test has nothing to test: statistic ``0``/``nan``,
        p-value ``1`` and a note, as an exact conditional test would give.

    Raises
    ------
    ValueError
        If lengths differ, fewer than two groups remain, or a label is not in
        ``labels``.
    """
    j, h, g = _as_1d(judge, "judge"), _as_1d(human, "human"), _as_1d(groups, "groups")
    if not len(j) == len(h) == len(g):
        raise ValueError(f"judge, human and groups differ in length: {len(j)}, {len(h)}, {len(g)}")
    keep = np.array([x is not None and y is not None and z is not None for x, y, z in zip(j, h, g, strict=True)], bool)
    dropped = int((~keep).sum())
    j, h, g = j[keep], h[keep], g[keep]
    labs = _resolve_labels(list(j) + list(h), labels)
    try:
        group_order = sorted(set(g))
    except TypeError:
        group_order = list(dict.fromkeys(g))
    if len(group_order) < 2:
        raise ValueError(f"need at least two groups, got {group_order}")
    pos = {lab: i for i, lab in enumerate(labs)}
    disagree = np.array([a != b for a, b in zip(j, h, strict=True)], dtype=int)
    abs_err = np.array([abs(pos[a] - pos[b]) for a, b in zip(j, h, strict=True)], dtype=float)
    rows = []
    for grp in group_order:
        sel = g == grp
        rows.append(
            {
                "group": grp,
                "n": int(sel.sum()),
                "disagreements": int(disagree[sel].sum()),
                "disagreement_rate": float(disagree[sel].mean()),
                "mean_abs_error": float(abs_err[sel].mean()) if ordinal else math.nan,
            }
        )
    table = pd.DataFrame(rows).set_index("group")

    counts = np.column_stack([table["n"] - table["disagreements"], table["disagreements"]])
    if (counts.sum(0) == 0).any():
        which = "no" if counts[:, 1].sum() == 0 else "only"
        rate_test = GroupTest(
            "fisher_exact" if len(group_order) == 2 else "chi2",
            0.0 if len(group_order) > 2 else math.nan,
            1.0,
            len(group_order) - 1 if len(group_order) > 2 else None,
            f"{which} disagreements in every group: the rates are identical",
        )
    elif len(group_order) == 2:
        res = stats.fisher_exact(counts[:, ::-1])  # rows groups, cols (disagree, agree)
        rate_test = GroupTest("fisher_exact", float(res.statistic), float(res.pvalue))
    else:
        res = stats.chi2_contingency(counts, correction=False)
        small = (res.expected_freq < 5).any()
        rate_test = GroupTest(
            "chi2",
            float(res.statistic),
            float(res.pvalue),
            int(res.dof),
            "some expected counts are below 5; the chi-square p-value is approximate" if small else None,
        )

    error_test = None
    if ordinal:
        samples = [abs_err[g == grp] for grp in group_order]
        if len(np.unique(abs_err)) < 2:
            error_test = GroupTest("kruskal", math.nan, 1.0, len(group_order) - 1,
                                   "all absolute errors are equal: nothing to compare")
        else:
            kw = stats.kruskal(*samples)
            error_test = GroupTest("kruskal", float(kw.statistic), float(kw.pvalue), len(group_order) - 1)

    rates = table["disagreement_rate"]
    return DisagreementByGroupResult(
        table=table,
        rate_test=rate_test,
        error_test=error_test,
        max_rate_difference=float(rates.max() - rates.min()),
        labels=labs,
        note=f"{dropped} item(s) with a missing label or group dropped" if dropped else None,
    )


# -- the whole calibration report -----------------------------------------------------------


@dataclass(frozen=True)
class CalibrationReport:
    """Judge-versus-humans calibration, as ``fairpair calibrate score`` reports it.

    Attributes
    ----------
    n_items:
        Rows of the labels table.
    labels:
        Category order.
    ordinal:
        Whether labels were treated as ordered (quadratic-weighted kappa,
        ordinal alpha, absolute errors by group).
    kappa_by_rater:
        Cohen's kappa of the judge against each human rater, by column name.
    mean_kappa:
        Mean of those kappas (``nan`` if all are undefined).
    mean_human_kappa:
        Mean pairwise kappa among humans: the yardstick the judge's kappas
        are compared with (``None`` with one rater).
    fleiss_humans, fleiss_with_judge:
        Fleiss' kappa among the humans (``None`` with one rater), and with the
        judge as one more rater. Always nominal.
    krippendorff_humans, krippendorff_with_judge:
        Krippendorff's alpha, same two rater sets (``None`` with one rater).
    confusion:
        Judge against the human consensus (majority label; items with a tie
        or no human label are left out).
    disagreement:
        Judge-vs-consensus disagreement by group (``None`` without a group
        column, or when the items with a human consensus cover fewer than two
        groups: a note says so).
    n_consensus:
        Items with a human consensus.
    notes:
        Anything undefined or dropped, collected from the parts.
    """

    n_items: int
    labels: tuple
    ordinal: bool
    kappa_by_rater: dict[str, CohenKappaResult]
    mean_kappa: float
    mean_human_kappa: float | None
    fleiss_humans: FleissKappaResult | None
    fleiss_with_judge: FleissKappaResult
    krippendorff_humans: KrippendorffAlphaResult | None
    krippendorff_with_judge: KrippendorffAlphaResult
    confusion: ConfusionMatrixResult
    disagreement: DisagreementByGroupResult | None
    n_consensus: int
    notes: tuple[str, ...] = ()

    def summary(self) -> pd.DataFrame:
        """One row per agreement coefficient: ``measure``, ``value``, ``interpretation``."""
        rows = [(f"kappa judge vs {r}", k.statistic, k.interpretation) for r, k in self.kappa_by_rater.items()]
        rows.append(("mean kappa judge vs humans", self.mean_kappa, landis_koch(self.mean_kappa)))
        if self.mean_human_kappa is not None:
            rows.append(("mean kappa among humans", self.mean_human_kappa, landis_koch(self.mean_human_kappa)))
        for name, res in (
            ("Fleiss kappa humans", self.fleiss_humans),
            ("Fleiss kappa humans + judge", self.fleiss_with_judge),
            ("Krippendorff alpha humans", self.krippendorff_humans),
            ("Krippendorff alpha humans + judge", self.krippendorff_with_judge),
        ):
            if res is not None:
                rows.append((name, res.statistic, res.interpretation))
        return pd.DataFrame(rows, columns=["measure", "value", "interpretation"])


def _consensus(rows: np.ndarray) -> np.ndarray:
    """Majority label per row; ``None`` for ties or rows without labels."""
    out = np.empty(len(rows), dtype=object)
    for i, row in enumerate(rows):
        vals = [v for v in row if v is not None]
        if not vals:
            out[i] = None
            continue
        uniq, cnt = np.unique(np.array(vals, dtype=object).astype(str), return_counts=True)
        top = np.flatnonzero(cnt == cnt.max())
        if len(top) > 1:
            out[i] = None
        else:
            out[i] = next(v for v in vals if str(v) == uniq[top[0]])
    return out


def _nanmean(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return float(np.mean(finite)) if finite else math.nan


def score_labels(
    df: pd.DataFrame,
    judge_col: str,
    rater_cols: Sequence[str],
    group_col: str | None = None,
    ordinal: bool = False,
    *,
    labels: Sequence[Hashable] | None = None,
) -> CalibrationReport:
    """Assemble the judge calibration report from one labels table.

    Parameters
    ----------
    df:
        One row per judged item, with the judge's label, each human's label
        (missing allowed) and optionally the item's group.
    judge_col:
        Column with the judge's labels.
    rater_cols:
        One or more columns with human labels.
    group_col:
        Column with each item's group, for :func:`disagreement_by_group`.
    ordinal:
        Treat labels as ordered: quadratic-weighted Cohen's kappa (Cohen
        1968), ordinal Krippendorff's alpha, absolute errors by group.
        Fleiss' kappa stays nominal.
    labels:
        Category order (needed for ordinal labels that do not sort
        naturally, e.g. ``["bajo", "medio", "alto"]``).

    Returns
    -------
    CalibrationReport

    Raises
    ------
    ValueError
        If a column is missing, ``rater_cols`` is empty or contains
        ``judge_col``, or a label is not in ``labels``.
    """
    rater_cols = [rater_cols] if isinstance(rater_cols, str) else list(rater_cols)
    if not rater_cols:
        raise ValueError("rater_cols must name at least one human rater column")
    if judge_col in rater_cols:
        raise ValueError(f"judge column {judge_col!r} is also listed as a rater")
    needed = [judge_col, *rater_cols] + ([group_col] if group_col is not None else [])
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(f"columns {missing} not in the table; it has {list(df.columns)}")

    human = _as_2d(df[rater_cols], "human ratings")
    judge = _as_1d(df[judge_col], judge_col)
    labs = _resolve_labels(list(human.ravel()) + list(judge), labels)
    weights: Literal["quadratic"] | None = "quadratic" if ordinal else None
    level: Literal["ordinal", "nominal"] = "ordinal" if ordinal else "nominal"
    notes: list[str] = []

    kappas = {c: cohen_kappa(judge, human[:, i], weights=weights, labels=labs) for i, c in enumerate(rater_cols)}
    human_pairs = [
        cohen_kappa(human[:, i], human[:, k], weights=weights, labels=labs).statistic
        for i in range(len(rater_cols))
        for k in range(i + 1, len(rater_cols))
        if any(a is not None and b is not None for a, b in zip(human[:, i], human[:, k], strict=True))
    ]
    with_judge = np.column_stack([human, judge])
    fleiss_h = fleiss_kappa(human, labels=labs) if len(rater_cols) > 1 else None
    fleiss_j = fleiss_kappa(with_judge, labels=labs)
    kripp_h = krippendorff_alpha(human.T, level, labels=labs) if len(rater_cols) > 1 else None
    kripp_j = krippendorff_alpha(with_judge.T, level, labels=labs)

    consensus = _consensus(human)
    n_consensus = int(sum(v is not None for v in consensus))
    if n_consensus < len(df):
        notes.append(f"{len(df) - n_consensus} item(s) without a human consensus (tie or unlabelled)")
    confusion = confusion_matrix(judge, consensus, labs)
    disagreement = None
    if group_col is not None:
        groups = _as_1d(df[group_col], group_col)
        covered = {g for j, c, g in zip(judge, consensus, groups, strict=True)
                   if j is not None and c is not None and g is not None}
        if len(covered) >= 2:
            disagreement = disagreement_by_group(judge, consensus, groups, ordinal=ordinal, labels=labs)
        else:  # e.g. two raters who never agree: the coefficients above still stand
            notes.append(f"disagreement by group: not computed, the items with a human consensus cover "
                         f"{len(covered)} group(s) ({', '.join(map(str, sorted(covered, key=str))) or 'none'})")
    for name, res in [*(("kappa judge vs " + c, k) for c, k in kappas.items()),
                      ("Fleiss humans", fleiss_h), ("Fleiss with judge", fleiss_j),
                      ("alpha humans", kripp_h), ("alpha with judge", kripp_j),
                      ("disagreement by group", disagreement)]:
        if res is not None and res.note:
            notes.append(f"{name}: {res.note}")

    return CalibrationReport(
        n_items=len(df),
        labels=labs,
        ordinal=ordinal,
        kappa_by_rater=kappas,
        mean_kappa=_nanmean([k.statistic for k in kappas.values()]),
        mean_human_kappa=_nanmean(human_pairs) if len(rater_cols) > 1 else None,
        fleiss_humans=fleiss_h,
        fleiss_with_judge=fleiss_j,
        krippendorff_humans=kripp_h,
        krippendorff_with_judge=kripp_j,
        confusion=confusion,
        disagreement=disagreement,
        n_consensus=n_consensus,
        notes=tuple(notes),
    )
