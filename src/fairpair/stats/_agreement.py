"""Inter-rater agreement: Cohen's kappa (plain and weighted), Fleiss' kappa, Krippendorff's alpha.

How well two or more raters (humans, an LLM judge) agree beyond chance, and
the confusion matrix of two raters. Used by the judge calibration
(:mod:`fairpair.measures`' ``score_labels``, ``fairpair calibrate``) and
usable on any labels.

Every function is pure, takes arrays (pandas objects are accepted, never
imported) and returns a frozen result object, never a bare tuple. Undefined
statistics (e.g. kappa when every rating is the same category) are ``nan``
with a ``note`` saying why; they do not raise. Missing labels are ``None`` or
``NaN`` (or pandas' ``NA``/``NaT``). Pairwise measures drop pairs with a
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

from fairpair.stats._common import _is_missing  # None, NaN, pandas NA/NaT

__all__ = [
    "CohenKappaResult",
    "FleissKappaResult",
    "KrippendorffAlphaResult",
    "ConfusionMatrixResult",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "confusion_matrix",
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


def _as_1d(x: Any, name: str) -> np.ndarray:
    if not isinstance(x, (np.ndarray, list, tuple)):
        x = x.to_numpy(dtype=object) if hasattr(x, "to_numpy") else list(x)  # a pandas Series, any iterable
    arr = np.asarray(x, dtype=object)
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
    keep = np.array([x is not None and y is not None for x, y in zip(a, b, strict=True)], dtype=bool)
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
    a: Sequence[Hashable] | np.ndarray,
    b: Sequence[Hashable] | np.ndarray,
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

    def to_frame(self) -> Any:
        """The matrix as a labelled ``pandas.DataFrame`` (index ``human``, columns ``judge``)."""
        import pandas as pd

        return pd.DataFrame(
            self.matrix,
            index=pd.Index(self.labels, name="human"),
            columns=pd.Index(self.labels, name="judge"),
        )


def confusion_matrix(
    judge: Sequence[Hashable] | np.ndarray,
    human: Sequence[Hashable] | np.ndarray,
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
    arr = np.asarray(ratings.to_numpy() if hasattr(ratings, "to_numpy") else ratings, dtype=object)
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
