"""Judge calibration: how well an automatic judge agrees with human raters.

An audit that scores answers with an LLM judge is only as good as the judge.
Before a judge's labels are trusted, a sample of answers is also labelled by
humans and the two are compared here: chance-corrected agreement of the judge
with each human (Cohen's kappa), agreement among humans with and without the
judge (Fleiss' kappa, Krippendorff's alpha), the confusion matrix, and - the
part specific to fairness audits - whether the judge's disagreement with the
humans differs by group. A judge that errs more for one group biases the audit
by itself, whatever the chatbot does.

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
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

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

_WEIGHTS = (None, "linear", "quadratic")
_LEVELS = ("nominal", "ordinal", "interval")


# -- helpers --------------------------------------------------------------------


def landis_koch(value: float) -> str:
    """Landis & Koch (1977) label for a kappa-type coefficient.

    ``< 0`` poor, ``0-0.20`` slight, ``0.21-0.40`` fair, ``0.41-0.60``
    moderate, ``0.61-0.80`` substantial, ``0.81-1`` almost perfect; ``nan``
    gives ``"undefined"``. The bands are conventions, not tests.
    """
    if value is None or math.isnan(value):
        return "undefined"
    if value < 0:
        return "poor"
    for upper, name in ((0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial")):
        if value <= upper:
            return name
    return "almost perfect"


def _is_missing(x: Any) -> bool:
    if x is None:
        return True
    try:
        return bool(isinstance(x, float) and math.isnan(x)) or x is pd.NA or x is pd.NaT
    except TypeError:
        return False


def _as_1d(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(list(x) if not isinstance(x, (np.ndarray, pd.Series, list, tuple)) else x, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return np.array([None if _is_missing(v) else _plain(v) for v in arr], dtype=object)


def _plain(v: Any) -> Any:
    """numpy scalars -> Python scalars, so labels compare and print cleanly."""
    return v.item() if isinstance(v, np.generic) else v


def _resolve_labels(observed: Sequence[Any], labels: Sequence[Any] | None) -> tuple:
    present = {v for v in observed if v is not None}
    if labels is None:
        try:
            return tuple(sorted(present))
        except TypeError:
            raise ValueError(
                "labels of mixed types cannot be ordered; pass labels= explicitly"
            ) from None
    labels = tuple(_plain(v) for v in labels)
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels has duplicates: {labels}")
    unknown = present - set(labels)
    if unknown:
        raise ValueError(f"ratings {sorted(map(repr, unknown))} are not in labels {list(labels)}")
    return labels


def _paired(a: Any, b: Any, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray, int]:
    a, b = _as_1d(a, names[0]), _as_1d(b, names[1])
    if len(a) != len(b):
        raise ValueError(f"{names[0]} and {names[1]} differ in length: {len(a)} != {len(b)}")
    keep = np.array([x is not None and y is not None for x, y in zip(a, b)], dtype=bool)
    return a[keep], b[keep], int((~keep).sum())


def _dropped_note(dropped: int) -> str | None:
    return f"{dropped} pair(s) with a missing label dropped" if dropped else None


def _join(*notes: str | None) -> str | None:
    kept = [n for n in notes if n]
    return "; ".join(kept) if kept else None


# -- Cohen's kappa ------------------------------------------------------------------


@dataclass(frozen=True)
class CohenKappaResult:
    """Cohen's kappa between two raters (Cohen 1960; weighted: Cohen 1968).

    Attributes
    ----------
    statistic:
        Kappa in ``[-1, 1]``; ``nan`` when undefined (see ``note``).
    observed_agreement, expected_agreement:
        ``p_o`` and ``p_e`` with ``kappa = (p_o - p_e) / (1 - p_e)``; for
        weighted kappa, 1 minus the weighted disagreement with weights scaled
        to ``[0, 1]``.
    n:
        Number of pairs used (pairs with a missing label are dropped).
    labels:
        Category order used (it matters for weighted kappa).
    weights:
        ``None``, ``"linear"`` or ``"quadratic"``.
    note:
        Why the statistic is undefined, or how many pairs were dropped.
    """

    statistic: float
    observed_agreement: float
    expected_agreement: float
    n: int
    labels: tuple
    weights: str | None
    note: str | None = None

    @property
    def interpretation(self) -> str:
        """Landis & Koch (1977) band of :attr:`statistic`."""
        return landis_koch(self.statistic)


def cohen_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    weights: Literal["linear", "quadratic"] | None = None,
    labels: Sequence[Hashable] | None = None,
) -> CohenKappaResult:
    """Cohen's kappa between two label sequences (e.g. the judge and one human).

    Parameters
    ----------
    a, b:
        Labels of the same items by two raters, shape ``(n,)``; ``None``/NaN
        are missing and the pair is dropped.
    weights:
        ``None`` (nominal, Cohen 1960), ``"linear"`` (``|i - j|``) or
        ``"quadratic"`` (``(i - j)**2``) disagreement weights on the label
        positions (Cohen 1968).
    labels:
        Category order; default: sorted labels present in ``a`` or ``b``.

    Returns
    -------
    CohenKappaResult
        Equal to :func:`sklearn.metrics.cohen_kappa_score` with the same
        ``weights`` and ``labels``. When the expected disagreement is zero
        (both raters used one and the same single category) kappa is
        undefined: ``statistic`` is ``nan`` and ``note`` says so.

    Raises
    ------
    ValueError
        If ``weights`` is not one of ``None, "linear", "quadratic"``; lengths
        differ; no complete pair is left; a label is not in ``labels``.
    """
    if weights not in _WEIGHTS:
        raise ValueError(f"weights must be one of {_WEIGHTS}, got {weights!r}")
    x, y, dropped = _paired(a, b, ("a", "b"))
    if len(x) == 0:
        raise ValueError("no pair with both labels present")
    labs = _resolve_labels(list(x) + list(y), labels)
    table = _confusion(x, y, labs).astype(float)
    k = len(labs)
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(float)
    elif weights == "linear":
        w = np.abs(i - j).astype(float)
    else:
        w = ((i - j) ** 2).astype(float)
    if w.max() > 0:
        w /= w.max()
    n = table.sum()
    observed = table / n
    expected = np.outer(table.sum(1), table.sum(0)) / n**2
    d_o, d_e = float((w * observed).sum()), float((w * expected).sum())
    note = _dropped_note(dropped)
    if d_e == 0:
        kappa = math.nan
        note = _join(
            f"kappa is undefined: no disagreement is expected by chance (both raters used only "
            f"{sorted(set(x) | set(y), key=repr)}); observed agreement is {1 - d_o:.3f}",
            note,
        )
    else:
        kappa = 1.0 - d_o / d_e
    return CohenKappaResult(
        statistic=kappa,
        observed_agreement=1.0 - d_o,
        expected_agreement=1.0 - d_e,
        n=int(n),
        labels=labs,
        weights=weights,
        note=note,
    )


# -- confusion matrix -----------------------------------------------------------------


def _confusion(rows: np.ndarray, cols: np.ndarray, labels: tuple) -> np.ndarray:
    index = {lab: i for i, lab in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)), dtype=np.int64)
    np.add.at(table, ([index[v] for v in rows], [index[v] for v in cols]), 1)
    return table


@dataclass(frozen=True)
class ConfusionMatrixResult:
    """Counts of (human label, judge label) pairs.

    Attributes
    ----------
    matrix:
        ``(k, k)`` int array; ``matrix[i, j]`` counts items the human labelled
        ``labels[i]`` and the judge ``labels[j]`` (rows: human, the
        reference; columns: judge). Equal to
        ``sklearn.metrics.confusion_matrix(human, judge, labels=labels)``.
    labels:
        Row and column order.
    n:
        Pairs counted.
    note:
        How many pairs were dropped for a missing label.
    """

    matrix: np.ndarray = field(repr=False)
    labels: tuple
    n: int
    note: str | None = None

    @property
    def agreement(self) -> float:
        """Share of items on the diagonal (raw percent agreement)."""
        return float(np.trace(self.matrix) / self.n) if self.n else math.nan

    def to_frame(self) -> pd.DataFrame:
        """The matrix as a labelled DataFrame (index ``human``, columns ``judge``)."""
        return pd.DataFrame(
            self.matrix,
            index=pd.Index(self.labels, name="human"),
            columns=pd.Index(self.labels, name="judge"),
        )


def confusion_matrix(
    judge: Sequence[Hashable],
    human: Sequence[Hashable],
    labels: Sequence[Hashable] | None = None,
) -> ConfusionMatrixResult:
    """Confusion matrix of the judge's labels against the human reference.

    Parameters
    ----------
    judge, human:
        Labels of the same items, shape ``(n,)``; pairs with a missing label
        are dropped.
    labels:
        Row/column order; default: sorted labels present.

    Raises
    ------
    ValueError
        If lengths differ or a label is not in ``labels``.
    """
    j, h, dropped = _paired(judge, human, ("judge", "human"))
    labs = _resolve_labels(list(j) + list(h), labels)
    return ConfusionMatrixResult(_confusion(h, j, labs), labs, int(len(j)), _dropped_note(dropped))


# -- Fleiss' kappa ----------------------------------------------------------------------


@dataclass(frozen=True)
class FleissKappaResult:
    """Fleiss' kappa among a fixed number of raters per item (Fleiss 1971).

    Attributes
    ----------
    statistic:
        Kappa; ``nan`` when undefined (every rating in one category).
    observed_agreement:
        Mean per-item agreement ``P-bar``.
    expected_agreement:
        Chance agreement ``P-bar_e = sum_j p_j**2``.
    n_items, n_raters:
        Shape of the ratings used.
    labels:
        Categories counted.
    note:
        Why undefined, or how many incomplete items were dropped.
    """

    statistic: float
    observed_agreement: float
    expected_agreement: float
    n_items: int
    n_raters: int
    labels: tuple
    note: str | None = None

    @property
    def interpretation(self) -> str:
        """Landis & Koch (1977) band of :attr:`statistic`."""
        return landis_koch(self.statistic)


def _as_2d(ratings: Any, name: str) -> np.ndarray:
    arr = np.asarray(ratings.to_numpy() if isinstance(ratings, pd.DataFrame) else ratings, dtype=object)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be two-dimensional, got shape {arr.shape}")
    out = np.empty(arr.shape, dtype=object)
    for idx, v in np.ndenumerate(arr):
        out[idx] = None if _is_missing(v) else _plain(v)
    return out


def fleiss_kappa(
    ratings: Any, *, labels: Sequence[Hashable] | None = None
) -> FleissKappaResult:
    """Fleiss' kappa for an ``items x raters`` array of category labels.

    Parameters
    ----------
    ratings:
        Array or DataFrame, shape ``(n_items, n_raters)``, ``n_raters >= 2``;
        each cell is the category one rater gave one item. Raters need not be
        the same people across items, but every item needs the same number of
        ratings: rows with a missing rating are dropped (see ``note``); use
        :func:`krippendorff_alpha` to use them.
    labels:
        Categories; default: sorted categories present.

    Returns
    -------
    FleissKappaResult
        Equal to ``statsmodels.stats.inter_rater.fleiss_kappa`` applied to
        ``aggregate_raters(ratings)[0]``.

    Raises
    ------
    ValueError
        If ``ratings`` is not 2-D, has fewer than 2 raters or no complete row,
        or holds a label not in ``labels``.
    """
    r = _as_2d(ratings, "ratings")
    if r.shape[1] < 2:
        raise ValueError(f"Fleiss' kappa needs at least 2 raters, got {r.shape[1]}")
    complete = np.array([all(v is not None for v in row) for row in r], dtype=bool)
    dropped = int((~complete).sum())
    r = r[complete]
    if len(r) == 0:
        raise ValueError("no item has a rating from every rater")
    labs = _resolve_labels(list(r.ravel()), labels)
    index = {lab: i for i, lab in enumerate(labs)}
    counts = np.zeros((len(r), len(labs)))
    for i, row in enumerate(r):
        for v in row:
            counts[i, index[v]] += 1
    n_items, m = r.shape
    p = counts.sum(0) / (n_items * m)
    p_e = float((p**2).sum())
    p_i = ((counts**2).sum(1) - m) / (m * (m - 1))
    p_bar = float(p_i.mean())
    note = _join(f"{dropped} item(s) with a missing rating dropped" if dropped else None)
    if math.isclose(p_e, 1.0):
        kappa = math.nan
        note = _join(
            f"Fleiss' kappa is undefined: every rating is {labs[int(p.argmax())]!r}, "
            "so chance agreement is 1",
            note,
        )
    else:
        kappa = (p_bar - p_e) / (1 - p_e)
    return FleissKappaResult(kappa, p_bar, p_e, n_items, m, labs, note)


# -- Krippendorff's alpha -----------------------------------------------------------------


@dataclass(frozen=True)
class KrippendorffAlphaResult:
    """Krippendorff's alpha (Krippendorff 2004, 2011).

    Attributes
    ----------
    statistic:
        ``alpha = 1 - D_o / D_e`` (1 perfect, 0 chance, negative worse than
        chance); ``nan`` when undefined (fewer than two pairable values, or a
        single value used throughout).
    level:
        ``"nominal"``, ``"ordinal"`` or ``"interval"`` (the difference metric).
    observed_disagreement, expected_disagreement:
        ``D_o`` and ``D_e`` from the coincidence matrix.
    n_units:
        Items with at least two ratings (pairable units).
    n_values:
        Pairable values ``n`` (ratings in pairable units).
    labels:
        The value domain, in order.
    note:
        Why undefined, if it is.
    """

    statistic: float
    level: str
    observed_disagreement: float
    expected_disagreement: float
    n_units: int
    n_values: int
    labels: tuple
    note: str | None = None

    @property
    def interpretation(self) -> str:
        """Krippendorff's (2004) guidance: >= 0.800 reliable, >= 0.667 tentative."""
        a = self.statistic
        if math.isnan(a):
            return "undefined"
        return "reliable" if a >= 0.8 else "tentative" if a >= 0.667 else "unreliable"


def krippendorff_alpha(
    ratings: Any,
    level: Literal["nominal", "ordinal", "interval"] = "nominal",
    *,
    labels: Sequence[Hashable] | None = None,
) -> KrippendorffAlphaResult:
    """Krippendorff's alpha for a ``raters x items`` array with missing values.

    Parameters
    ----------
    ratings:
        Array or DataFrame, shape ``(n_raters, n_items)`` (note: the
        transpose of :func:`fleiss_kappa`'s layout, as in the ``krippendorff``
        package); ``NaN``/``None`` marks a missing rating.
    level:
        Level of measurement: ``"nominal"`` (any two different values
        disagree fully), ``"ordinal"`` (distance by the number of values
        ranked between them, Krippendorff 2011 eq. for the ordinal metric) or
        ``"interval"`` (squared numeric difference; values must be numbers).
    labels:
        The value domain in order (matters for ``"ordinal"``); default: the
        sorted values present.

    Returns
    -------
    KrippendorffAlphaResult
        Equal to ``krippendorff.alpha(reliability_data=ratings,
        level_of_measurement=level)``; where that package raises because only
        one value occurs, the statistic here is ``nan`` with a note.

    Raises
    ------
    ValueError
        For an unknown ``level``, a non-2-D array, non-numeric values with
        ``level="interval"`` or values not in ``labels``.
    """
    if level not in _LEVELS:
        raise ValueError(f"level must be one of {_LEVELS}, got {level!r}")
    r = _as_2d(ratings, "ratings")
    labs = _resolve_labels(list(r.ravel()), labels)
    index = {lab: i for i, lab in enumerate(labs)}
    k = len(labs)
    # units x values counts; keep pairable units (>= 2 values)
    counts = np.zeros((r.shape[1], k))
    for (_, u), v in np.ndenumerate(r):
        if v is not None:
            counts[u, index[v]] += 1
    m_u = counts.sum(1)
    counts = counts[m_u >= 2]
    m_u = m_u[m_u >= 2]
    # coincidence matrix o_ck = sum_u (n_uc n_uk - [c == k] n_uc) / (m_u - 1)
    o = np.einsum("uc,uk->ck", counts / (m_u - 1)[:, None], counts) - np.diag(
        (counts / (m_u - 1)[:, None]).sum(0)
    )
    n_c = o.sum(1)
    n = float(n_c.sum())
    if level == "nominal":
        delta2 = 1.0 - np.eye(k)
    elif level == "ordinal":
        cum = np.concatenate([[0.0], np.cumsum(n_c)])
        lo, hi = np.minimum.outer(np.arange(k), np.arange(k)), np.maximum.outer(np.arange(k), np.arange(k))
        delta2 = (cum[hi + 1] - cum[lo] - (n_c[lo] + n_c[hi]) / 2) ** 2
    else:
        try:
            vals = np.array(labs, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"level='interval' needs numeric values, got {list(labs)}") from None
        delta2 = np.subtract.outer(vals, vals) ** 2
    if n > 1:
        d_o = float((o * delta2).sum() / n)
        d_e = float((np.outer(n_c, n_c) * delta2).sum() / (n * (n - 1)))
    else:
        d_o = d_e = math.nan
    note = None
    if n <= 1 or not d_e > 0:
        alpha = math.nan
        used = [labs[i] for i in np.flatnonzero(n_c)]
        note = (
            "alpha is undefined: fewer than two pairable values"
            if n <= 1
            else f"alpha is undefined: every pairable value is {used[0]!r}, so no disagreement is expected"
        )
    else:
        alpha = 1.0 - d_o / d_e
    return KrippendorffAlphaResult(alpha, level, d_o, d_e, int(len(counts)), int(round(n)), labs, note)


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
    judge: Sequence[Hashable],
    human: Sequence[Hashable],
    groups: Sequence[Hashable],
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
    keep = np.array([x is not None and y is not None and z is not None for x, y, z in zip(j, h, g)], bool)
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
    disagree = np.array([a != b for a, b in zip(j, h)], dtype=int)
    abs_err = np.array([abs(pos[a] - pos[b]) for a, b in zip(j, h)], dtype=float)
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
        column).
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
    weights = "quadratic" if ordinal else None
    level = "ordinal" if ordinal else "nominal"
    notes: list[str] = []

    kappas = {c: cohen_kappa(judge, human[:, i], weights=weights, labels=labs) for i, c in enumerate(rater_cols)}
    human_pairs = [
        cohen_kappa(human[:, i], human[:, k], weights=weights, labels=labs).statistic
        for i in range(len(rater_cols))
        for k in range(i + 1, len(rater_cols))
        if any(a is not None and b is not None for a, b in zip(human[:, i], human[:, k]))
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
        disagreement = disagreement_by_group(
            judge, consensus, _as_1d(df[group_col], group_col), ordinal=ordinal, labels=labs
        )
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
