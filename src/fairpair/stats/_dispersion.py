"""Dispersion across persona pairings (Tan & Lee 2025) and sign-flip permutation tests.

Tan & Lee (2025) measure how much a model's answers vary with who is
speaking to whom: for each demographic *axis* (race, religion, ...), the
mean metric of every SUB x RES cell (subject persona x respondent persona)
is computed, the standard deviation across the cells is taken, and the
standard deviations are averaged over axes. They compare the dispersion
with and without a power disparity in the scene; here the scenes are the
matched units for the bootstrap and for the permutation test.

Long input, one row per scored answer, as a pandas DataFrame or any
mapping of column name -> 1-D array (pandas is not required):

========== =====================================================
scene      scenario id (the unit resampled / swapped)
axis       demographic axis
sub        subject persona (group) on that axis
res        respondent persona (group) on that axis
value      the metric (e.g. cosine distance, win rate), float
condition  optional; e.g. "power" / "no_power"
========== =====================================================
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairpair.stats._bootstrap import BootstrapResult, _check_common, _counts, resample_blocks, sums_bootstrap
from fairpair.stats._common import as_float_1d, as_labels, check_choice, check_positive_int, paired_arrays

__all__ = [
    "CorrectedDispersionResult",
    "corrected_dispersion",
    "CellMeansResult",
    "DispersionResult",
    "LeastChangeResult",
    "PermutationTestResult",
    "cell_means",
    "cell_means_bootstrap",
    "dispersion",
    "dispersion_bootstrap",
    "dispersion_permutation_test",
    "least_change_identity",
    "paired_permutation_test",
    "unpaired_dispersion_permutation_test",
]

_ALTERNATIVES = ("two-sided", "less", "greater")
_EXACT_BLOCK = 1 << 16


def _check_ddof(ddof: Any) -> int:
    if ddof not in (0, 1) or isinstance(ddof, bool):
        raise ValueError(f"ddof must be one of 0, 1; got {ddof!r}")
    return int(ddof)


@dataclass(frozen=True)
class DispersionResult:
    """Result of :func:`dispersion`.

    Attributes
    ----------
    statistic : float
        Mean over axes of the per-axis standard deviation of cell means.
    per_axis : dict
        Axis -> standard deviation across its SUB x RES cells (NaN if the
        axis has ``<= ddof`` cells).
    n_cells : dict
        Axis -> number of cells with data.
    ddof : int
        0 (population SD) or 1 (sample SD).
    method : str
    note : str or None
        Lists axes left out of the average.
    """

    statistic: float
    per_axis: dict = field(repr=False)
    n_cells: dict = field(repr=False)
    ddof: int
    method: str = "Tan & Lee (2025) dispersion"
    note: str | None = None


def dispersion(cell_means_by_axis: Mapping[Any, Any], *, ddof: int) -> DispersionResult:
    """Dispersion of cell means (Tan & Lee 2025): per-axis SD, averaged over axes.

    Parameters
    ----------
    cell_means_by_axis : mapping of axis -> array_like, shape (n_cells,)
        For each axis, the mean metric of each SUB x RES cell (NaN cells are
        ignored). :func:`cell_means` builds it from long data.
    ddof : {0, 1}
        Required, because the paper's choice changes the values: ``1`` gives
        the sample SD (pandas' default), ``0`` the population SD (numpy's).
        No default on purpose.

    Returns
    -------
    DispersionResult
        Axes with ``<= ddof`` cells get NaN and are left out of the average
        (named in ``note``); NaN overall if no axis remains.

    Raises
    ------
    ValueError
        If ``ddof`` is not 0 or 1 or the mapping is empty.

    References
    ----------
    Tan, B. C. Z., & Lee, R. K.-W. (2025). Unmasking implicit bias:
    evaluating persona-prompted LLM responses in power-disparate social
    scenarios. *Proc. NAACL 2025*, 1075-1108. doi:10.18653/v1/2025.naacl-long.50
    """
    ddof = _check_ddof(ddof)
    if not isinstance(cell_means_by_axis, Mapping) or not cell_means_by_axis:
        raise ValueError("cell_means_by_axis must be a non-empty mapping of axis -> cell means")
    per_axis: dict = {}
    n_cells: dict = {}
    for axis, values in cell_means_by_axis.items():
        v = as_float_1d(values, f"cell means of axis {axis!r}")
        v = v[~np.isnan(v)]
        n_cells[axis] = int(v.size)
        per_axis[axis] = float(v.std(ddof=ddof)) if v.size > ddof else np.nan
    good = [s for s in per_axis.values() if not np.isnan(s)]
    left_out = [a for a, s in per_axis.items() if np.isnan(s)]
    note = f"axes with <= {ddof} cells left out: {left_out}" if left_out else None
    stat = float(np.mean(good)) if good else np.nan
    return DispersionResult(stat, per_axis, n_cells, ddof, note=note)


# ------------------------------------------------------------- long layout


def _column(data: Any, name: str) -> np.ndarray:
    try:
        col = data[name]
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"data must have a column {name!r} "
                         "(columns: scene, axis, sub, res, value[, condition])") from None
    to_numpy = getattr(col, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy is not None else col)


@dataclass
class _Layout:
    axes: np.ndarray  # unique axis labels
    cell_axis: np.ndarray  # (n_cells,) axis code of each cell
    cell_sub: np.ndarray  # (n_cells,) sub label of each cell
    cell_res: np.ndarray  # (n_cells,) res label of each cell
    scenes: np.ndarray  # unique scene labels
    scene_code: np.ndarray  # per row
    cell_code: np.ndarray  # per row
    value: np.ndarray  # per row
    condition: np.ndarray | None  # per row


def _layout(data: Any, need_condition: bool = False) -> _Layout:
    value = as_float_1d(_column(data, "value"), "value")
    n = value.size
    scene_u, scene_code = as_labels(_column(data, "scene"), "scene", n)
    axis_u, axis_code = as_labels(_column(data, "axis"), "axis", n)
    sub_u, sub_code = as_labels(_column(data, "sub"), "sub", n)
    res_u, res_code = as_labels(_column(data, "res"), "res", n)
    cond = _column(data, "condition") if need_condition else None
    keep = ~np.isnan(value)
    key = (axis_code.astype(np.int64) * sub_u.size + sub_code) * res_u.size + res_code
    uk, cell_code = np.unique(key, return_inverse=True)
    cell_axis = uk // (sub_u.size * res_u.size)
    return _Layout(
        axis_u, cell_axis, sub_u[(uk // res_u.size) % sub_u.size], res_u[uk % res_u.size], scene_u, scene_code[keep],
        cell_code.reshape(-1)[keep], value[keep],
        None if cond is None else cond[keep],
    )


def _scene_cell_sums(lay: _Layout, rows: np.ndarray) -> np.ndarray:
    """(n_scenes, 2 * n_cells): per-scene cell sums then counts, for the rows selected."""
    n_s, n_c = lay.scenes.size, lay.cell_axis.size
    flat = lay.scene_code[rows] * n_c + lay.cell_code[rows]
    sums = np.bincount(flat, weights=lay.value[rows], minlength=n_s * n_c).reshape(n_s, n_c)
    counts = np.bincount(flat, minlength=n_s * n_c).reshape(n_s, n_c).astype(float)
    return np.hstack([sums, counts])


def _dispersion_fn(lay: _Layout, ddof: int):
    n_c = lay.cell_axis.size
    groups = [np.nonzero(lay.cell_axis == a)[0] for a in range(lay.axes.size)]

    def fn(totals: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            means = totals[:, :n_c] / totals[:, n_c:]
        sds = np.full((totals.shape[0], len(groups)), np.nan)
        for j, cols in enumerate(groups):
            m = means[:, cols]
            ok = ~np.isnan(m)
            k = ok.sum(axis=1)
            mu = np.where(ok, m, 0.0).sum(axis=1) / np.maximum(k, 1)
            ss = np.where(ok, (m - mu[:, None]) ** 2, 0.0).sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                sds[:, j] = np.where(k > ddof, np.sqrt(ss / (k - ddof)), np.nan)
        ok = ~np.isnan(sds)
        cnt = ok.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(cnt > 0, np.where(ok, sds, 0.0).sum(axis=1) / cnt, np.nan)

    return fn


def _corrected_features(lay: _Layout, rows: np.ndarray) -> np.ndarray:
    """Per-scene additive features of the noise-corrected dispersion, shape (n_scenes, n_cells + 3 * n_axes).

    For each axis, only scenes with every cell of the axis present count
    (a complete scene x cell table): the scene-cell means ``y_sc`` (the
    mean of the scene's repetitions / judge orders in the cell), then per
    axis ``sum_c y_sc**2``, ``(mean_c y_sc)**2`` and 1.
    """
    n_s, n_c, n_a = lay.scenes.size, lay.cell_axis.size, lay.axes.size
    sc = _scene_cell_sums(lay, rows)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = sc[:, :n_c] / sc[:, n_c:]
    out = np.zeros((n_s, n_c + 3 * n_a))
    for a in range(n_a):
        cols = np.nonzero(lay.cell_axis == a)[0]
        ya = y[:, cols]
        complete = ~np.isnan(ya).any(axis=1)
        yc = np.where(complete[:, None], ya, 0.0)
        out[:, cols] = yc
        out[:, n_c + 3 * a] = (yc**2).sum(axis=1)
        out[:, n_c + 3 * a + 1] = np.where(complete, yc.mean(axis=1), 0.0) ** 2
        out[:, n_c + 3 * a + 2] = complete
    return out


def _corrected_parts(lay: _Layout, totals: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per resample and axis: the between-cell variance, the noise term ``MS_int / S`` and ``S``."""
    n_c, n_a = lay.cell_axis.size, lay.axes.size
    b = totals.shape[0]
    between = np.full((b, n_a), np.nan)
    noise = np.full((b, n_a), np.nan)
    scenes = np.zeros((b, n_a))
    for a in range(n_a):
        cols = np.nonzero(lay.cell_axis == a)[0]
        k = cols.size
        sq, scene_sq, n_sc = (totals[:, n_c + 3 * a + j] for j in range(3))
        scenes[:, a] = n_sc
        if k < 2:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            m = totals[:, cols] / n_sc[:, None]
            grand = m.mean(axis=1)
            var_b = ((m - grand[:, None]) ** 2).sum(axis=1) / (k - 1)
            ss_int = sq - k * scene_sq - n_sc * (m**2).sum(axis=1) + n_sc * k * grand**2
            ms_int = np.maximum(ss_int, 0.0) / ((n_sc - 1) * (k - 1))
            ok = n_sc >= 2
            between[:, a] = np.where(n_sc >= 1, var_b, np.nan)
            noise[:, a] = np.where(ok, ms_int / n_sc, np.nan)
    return between, noise, scenes


def _corrected_fn(lay: _Layout):
    def fn(totals: np.ndarray) -> np.ndarray:
        between, noise, _ = _corrected_parts(lay, totals)
        sd = np.sqrt(np.maximum(between - noise, 0.0))
        ok = ~np.isnan(sd)
        cnt = ok.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(cnt > 0, np.where(ok, sd, 0.0).sum(axis=1) / cnt, np.nan)

    return fn


@dataclass(frozen=True)
class CorrectedDispersionResult:
    """Result of :func:`corrected_dispersion`.

    Attributes
    ----------
    statistic : float
        Mean over axes of the noise-corrected SD across SUB x RES cells.
    per_axis : dict
        Axis -> ``sqrt(max(0, var_between - MS_int / S))``.
    raw_per_axis : dict
        Axis -> the uncorrected SD (``ddof=1``) of the same cell means.
    noise_per_axis : dict
        Axis -> ``MS_int / S``, the variance that answer noise adds to the
        between-cell variance.
    n_scenes : dict
        Axis -> complete scenes used (every cell of the axis present).
    method : str
    note : str or None
    """

    statistic: float
    per_axis: dict
    raw_per_axis: dict
    noise_per_axis: dict
    n_scenes: dict
    method: str = "noise-corrected dispersion (two-way moment estimator, scenes x cells)"
    note: str | None = None


def corrected_dispersion(data: Any, *, condition: Any = None) -> CorrectedDispersionResult:
    """Tan & Lee's (2025) dispersion with the answer noise removed.

    The SD of cell means grows with answer noise alone: with ``S`` scenes,
    each cell mean carries ``sigma2_int / S`` of scene x cell (and
    repetition / judge-order) noise, so the between-cell variance estimates
    ``sigma2_cells + sigma2_int / S``, not the variance of the true cell
    effects. In the complete scene x cell table of each axis the two-way
    interaction mean square ``MS_int`` estimates ``sigma2_int`` unbiasedly
    (the scene main effects cancel), so

        corrected SD = sqrt(max(0, var_between(m_c) - MS_int / S))

    (the method-of-moments estimator of the cell-effect SD; Searle, Casella
    & McCulloch 1992, ch. 4). Repetitions or both judge orders of a scene
    and cell are averaged first; their noise is part of ``MS_int``. The
    variance part is unbiased; the square root and the truncation at 0
    leave a small positive bias when the cells do not differ
    (``benchmarks/sim_dispersion.py`` shows it).

    Parameters
    ----------
    data : DataFrame or mapping of column -> array
        Long data, see the module notes.
    condition : optional
        Keep only rows with this ``condition``.

    Returns
    -------
    CorrectedDispersionResult
        Only scenes with every cell of an axis count for that axis (named
        in ``note`` when some are left out); an axis with fewer than 2
        complete scenes or 2 cells is NaN and left out of the average.

    Raises
    ------
    ValueError
        For missing columns or an unknown condition.

    References
    ----------
    Tan & Lee (2025), see :func:`dispersion`. Searle, S. R., Casella, G., &
    McCulloch, C. E. (1992). *Variance Components*. Wiley.
    """
    lay = _layout(data, need_condition=condition is not None)
    rows = _rows_for(lay, condition)
    feats = _corrected_features(lay, rows)
    totals = feats.sum(axis=0)[None, :]
    between, noise, scenes = _corrected_parts(lay, totals)
    stat = float(_corrected_fn(lay)(totals)[0])
    present = _scene_cell_sums(lay, rows)[:, lay.cell_axis.size:].sum(axis=1) > 0
    per, raw, nz, ns = {}, {}, {}, {}
    for a, ax in enumerate(lay.axes):
        b_, n_ = between[0, a], noise[0, a]
        per[ax] = float(np.sqrt(max(b_ - n_, 0.0))) if np.isfinite(b_) and np.isfinite(n_) else np.nan
        raw[ax] = float(np.sqrt(b_)) if np.isfinite(b_) else np.nan
        nz[ax] = float(n_) if np.isfinite(n_) else np.nan
        ns[ax] = int(scenes[0, a])
    short = [ax for ax in lay.axes if ns[ax] < int(present.sum())]
    note = (f"scenes missing a cell left out on axes {[str(x) for x in short]}" if short else None)
    return CorrectedDispersionResult(stat, per, raw, nz, ns, note=note)


def _rows_for(lay: _Layout, condition: Any) -> np.ndarray:
    if condition is None:
        return np.arange(lay.value.size)
    if lay.condition is None:
        raise ValueError(f"condition {condition!r} asked for, but the data have no condition column")
    rows = np.nonzero(lay.condition == condition)[0]
    if rows.size == 0:
        found = sorted({str(c) for c in np.unique(lay.condition.astype(str))})
        raise ValueError(f"condition {condition!r} not found; conditions present: {found}")
    return rows


def cell_means(data: Any, *, condition: Any = None) -> dict:
    """Mean ``value`` of each SUB x RES cell, by axis, from long data.

    Parameters
    ----------
    data : DataFrame or mapping of column -> array
        Columns ``scene, axis, sub, res, value`` (and ``condition`` if
        ``condition`` is given). NaN values are ignored.
    condition : optional
        Keep only rows with this ``condition``.

    Returns
    -------
    dict
        Axis -> ndarray of cell means (cells ordered by sub, then res).
    """
    lay = _layout(data, need_condition=condition is not None)
    rows = _rows_for(lay, condition)
    totals = _scene_cell_sums(lay, rows).sum(axis=0)
    n_c = lay.cell_axis.size
    with np.errstate(divide="ignore", invalid="ignore"):
        means = totals[:n_c] / totals[n_c:]
    return {lay.axes[a]: means[lay.cell_axis == a] for a in range(lay.axes.size)}


def dispersion_bootstrap(
    data: Any,
    *,
    ddof: int,
    condition: Any = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    method: str = "percentile",
    corrected: bool = False,
) -> BootstrapResult:
    """Scene-level bootstrap CI for the Tan & Lee (2025) dispersion.

    Scenes are resampled with replacement (a scene's rows stay together);
    each resample's cell means come from precomputed per-scene cell sums,
    so the cost is a matrix product per block of resamples.

    Parameters
    ----------
    data : DataFrame or mapping of column -> array
        Long data, see the module notes.
    ddof : {0, 1}
        Required; see :func:`dispersion`.
    condition : optional
        Restrict to rows with this ``condition``.
    n_resamples, confidence_level, seed, method
        As in :func:`cluster_bootstrap`.
    corrected : bool, default False
        Bootstrap the noise-corrected dispersion
        (:func:`corrected_dispersion`; ``ddof`` is then not used) instead of
        the raw one. The raw one's interval is centred on a value inflated
        by answer noise and rarely covers the noise-free dispersion (9% at
        10 scenes in the review's simulation).

    Returns
    -------
    BootstrapResult
        ``statistic`` equals ``dispersion(cell_means(data, condition=...),
        ddof=ddof).statistic`` (or ``corrected_dispersion(...).statistic``);
        ``n_clusters`` is the number of scenes.

    References
    ----------
    Tan & Lee (2025); Field & Welsh (2007).
    """
    ddof = _check_ddof(ddof)
    n_resamples, level, rng, seed_used = _check_common(n_resamples, confidence_level, method, seed)
    lay = _layout(data, need_condition=condition is not None)
    rows = _rows_for(lay, condition)
    sums = _scene_cell_sums(lay, rows)
    present = sums[:, lay.cell_axis.size:].sum(axis=1) > 0
    if corrected:
        sums, fn = _corrected_features(lay, rows), _corrected_fn(lay)
    else:
        fn = _dispersion_fn(lay, ddof)
    return sums_bootstrap(
        sums[present], fn, n_resamples=n_resamples, level=level, method=method, rng=rng,
        seed=seed_used, n_observations=int(rows.size),
    )


@dataclass(frozen=True)
class CellMeansResult:
    """Result of :func:`cell_means_bootstrap`: every SUB x RES cell with data, its mean and a scene-bootstrap CI.

    Attributes
    ----------
    axis, sub, res : ndarray, shape (n_cells,)
        The cell's labels, ordered by axis, then sub, then res.
    n : ndarray of int, shape (n_cells,)
        Rows (answers with a value) in the cell.
    mean : ndarray of float, shape (n_cells,)
    ci_low, ci_high : ndarray of float, shape (n_cells,)
        Percentile interval of the cell mean over scene resamples (NaN with
        one scene or no defined resample).
    n_scenes : int
        Scenes resampled (those with rows in the condition).
    n_resamples : int
    confidence_level : float
    seed : int or None
    """

    axis: np.ndarray
    sub: np.ndarray
    res: np.ndarray
    n: np.ndarray
    mean: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_scenes: int
    n_resamples: int
    confidence_level: float
    seed: int | None


def cell_means_bootstrap(
    data: Any,
    *,
    condition: Any = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> CellMeansResult:
    """Mean of every SUB x RES cell with a percentile CI from resampling whole scenes.

    The means are :func:`cell_means`'; each resample draws the condition's
    scenes with replacement (the draws of :func:`dispersion_bootstrap` with
    the same seed) and recomputes every cell mean from per-scene sums, so
    all cells share the resamples.

    Parameters
    ----------
    data : DataFrame or mapping of column -> array
        Long data, see the module notes.
    condition : optional
        Restrict to rows with this ``condition``.
    n_resamples : int, >= 1, default 2000
    confidence_level : float in (0, 1), default 0.95
    seed : int, Generator or None, default 0

    Returns
    -------
    CellMeansResult
        Only cells with at least one row in the condition.

    Raises
    ------
    ValueError
        A missing column, an unknown condition, bad ``n_resamples``,
        ``confidence_level`` or ``seed``.

    References
    ----------
    Tan & Lee (2025); Field, C. A. & Welsh, A. H. (2007). Bootstrapping
    clustered data. *JRSS B* 69(3), 369-390.
    """
    n_resamples, level, rng, seed_used = _check_common(n_resamples, confidence_level, "percentile", seed)
    lay = _layout(data, need_condition=condition is not None)
    rows = _rows_for(lay, condition)
    sums = _scene_cell_sums(lay, rows)
    n_c = lay.cell_axis.size
    sums = sums[sums[:, n_c:].sum(axis=1) > 0]
    n_s = sums.shape[0]
    totals = sums.sum(axis=0)
    cells = np.nonzero(totals[n_c:] > 0)[0]
    s, c = sums[:, cells], sums[:, n_c + cells]
    w = _resample_weights(rng, n_s, n_resamples)
    with np.errstate(divide="ignore", invalid="ignore"):
        means = totals[cells] / totals[n_c + cells]
        boot = (w @ s) / (w @ c)
    low, high = np.full(cells.size, np.nan), np.full(cells.size, np.nan)
    if n_s > 1:
        alpha = 1.0 - level
        for j in range(cells.size):
            col = boot[:, j][np.isfinite(boot[:, j])]
            if col.size:
                low[j], high[j] = np.quantile(col, [alpha / 2, 1 - alpha / 2])
    return CellMeansResult(
        lay.axes[lay.cell_axis[cells]], lay.cell_sub[cells], lay.cell_res[cells], totals[n_c + cells].astype(np.int64),
        means, low, high, int(n_s), n_resamples, level, seed_used,
    )


# --------------------------------------------------------- permutation tests


@dataclass(frozen=True)
class PermutationTestResult:
    """Result of a paired (sign-flip / within-unit swap) permutation test.

    Attributes
    ----------
    statistic : float
        Observed statistic (mean of ``a - b``, or dispersion(a) -
        dispersion(b)).
    pvalue : float
        scipy's convention: one-sided ``P(null <= obs)`` / ``P(null >= obs)``
        (Monte Carlo: ``(k + 1) / (n_resamples + 1)``); two-sided is twice
        the smaller, capped at 1.
    method : str
    alternative : str
    n : int
        Matched units (pairs or scenes).
    n_resamples : int
        Null statistics computed (``2**n`` when exact).
    exact : bool
        All ``2**n`` sign patterns enumerated.
    seed : int or None
    note : str or None
    null_distribution : ndarray
    """

    statistic: float
    pvalue: float
    method: str
    alternative: str
    n: int
    n_resamples: int
    exact: bool
    seed: int | None
    note: str | None = None
    null_distribution: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)


def _flip_blocks(n: int, n_resamples: int, rng: np.random.Generator) -> tuple[bool, Iterator[np.ndarray]]:
    exact = n < 63 and 2**n <= n_resamples

    def gen() -> Iterator[np.ndarray]:
        if exact:
            total = 2**n
            for start in range(0, total, _EXACT_BLOCK):
                ints = np.arange(start, min(start + _EXACT_BLOCK, total), dtype=np.int64)
                yield ((ints[:, None] >> np.arange(n)) & 1).astype(float)
        else:
            block = max(1, min(n_resamples, (1 << 21) // max(n, 1)))
            done = 0
            while done < n_resamples:
                b = min(block, n_resamples - done)
                yield rng.integers(0, 2, size=(b, n)).astype(float)
                done += b

    return exact, gen()


def _pvalue(null: np.ndarray, observed: float, alternative: str, exact: bool) -> float:
    """scipy's p-value from the finite null statistics; NaN when the statistic or the whole null is undefined."""
    null = null[np.isfinite(null)]
    if null.size == 0 or not np.isfinite(observed):
        return float("nan")
    gamma = abs(np.finfo(float).eps * 100 * observed)
    less = np.count_nonzero(null <= observed + gamma)
    greater = np.count_nonzero(null >= observed - gamma)
    if exact:
        p_less, p_greater = less / null.size, greater / null.size
    else:
        p_less, p_greater = (less + 1) / (null.size + 1), (greater + 1) / (null.size + 1)
    if alternative == "less":
        return float(p_less)
    if alternative == "greater":
        return float(p_greater)
    return float(min(1.0, 2.0 * min(p_less, p_greater)))


def _check_perm(n_resamples: Any, seed: Any, alternative: Any) -> tuple[int, np.random.Generator, int | None]:
    check_choice("alternative", alternative, _ALTERNATIVES)
    n_resamples, _, rng, seed_used = _check_common(n_resamples, 0.95, "percentile", seed)
    return n_resamples, rng, seed_used


def _two_conditions(data: Any, conditions: Any) -> tuple[_Layout, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Layout, per-scene cell sums of each condition, and which scenes have rows under each."""
    if not isinstance(conditions, (tuple, list)) or len(conditions) != 2:
        raise ValueError(f"conditions must be a pair (c1, c2); got {conditions!r}")
    lay = _layout(data, need_condition=True)
    n_c = lay.cell_axis.size
    s1 = _scene_cell_sums(lay, _rows_for(lay, conditions[0]))
    s2 = _scene_cell_sums(lay, _rows_for(lay, conditions[1]))
    return lay, s1, s2, s1[:, n_c:].sum(axis=1) > 0, s2[:, n_c:].sum(axis=1) > 0


def paired_permutation_test(
    a: Any,
    b: Any,
    *,
    n_resamples: int = 9999,
    seed: int | np.random.Generator | None = 0,
    alternative: str = "two-sided",
) -> PermutationTestResult:
    """Sign-flip permutation test of ``mean(a - b) = 0`` for matched values.

    Under the null, the labels within each matched unit (e.g. the same
    scene with and without a power disparity) are exchangeable, so each
    difference's sign is flipped at random.

    Parameters
    ----------
    a, b : array_like of float, shape (n,)
        Matched values (e.g. per-scene dispersion under two conditions);
        NaN drops the unit.
    n_resamples : int, default 9999
        Random sign patterns; if ``2**n <= n_resamples`` all ``2**n`` are
        enumerated and the test is exact.
    seed : int, Generator or None, default 0
    alternative : {"two-sided", "less", "greater"}, default "two-sided"
        ``"greater"``: ``a`` tends to exceed ``b``.

    Returns
    -------
    PermutationTestResult
        In the exact case the p-value equals ``scipy.stats.permutation_test``
        with ``permutation_type="samples"`` on the same statistic.

    References
    ----------
    Fisher, R. A. (1935). *The Design of Experiments*, sec. 21. Oliver & Boyd.
    Good, P. (2005). *Permutation, Parametric, and Bootstrap Tests of
    Hypotheses*, 3rd ed. Springer.
    """
    n_resamples, rng, seed_used = _check_perm(n_resamples, seed, alternative)
    xa, ya, n_missing = paired_arrays(a, b)
    d = xa - ya
    n = d.size
    method = "paired sign-flip permutation test (mean difference)"
    note = f"{n_missing} units dropped for missing values" if n_missing else None
    if n == 0:
        return PermutationTestResult(np.nan, np.nan, method, alternative, 0, 0, False, seed_used, "no complete pairs")
    observed = float(d.mean())
    exact, blocks = _flip_blocks(n, n_resamples, rng)
    null = np.concatenate([((1.0 - 2.0 * s) @ d) / n for s in blocks])
    null.setflags(write=False)
    return PermutationTestResult(observed, _pvalue(null, observed, alternative, exact), method, alternative, n,
                                 int(null.size), exact, seed_used, note, null)


def dispersion_permutation_test(
    data: Any,
    *,
    ddof: int,
    conditions: tuple[Any, Any],
    n_resamples: int = 9999,
    seed: int | np.random.Generator | None = 0,
    alternative: str = "two-sided",
    corrected: bool = False,
) -> PermutationTestResult:
    """Permutation test of dispersion(condition 1) - dispersion(condition 2) over matched scenes.

    Within each scene the two conditions' rows are swapped with probability
    1/2 and the whole-study dispersion of each condition is recomputed;
    vectorised over resamples through per-scene cell sums.

    Parameters
    ----------
    data : DataFrame or mapping of column -> array
        Long data with a ``condition`` column (see the module notes).
    ddof : {0, 1}
        Required; see :func:`dispersion`.
    conditions : (c1, c2)
        The two condition labels, e.g. ``("power", "no_power")``.
    n_resamples, seed, alternative
        As in :func:`paired_permutation_test`; exact when
        ``2**n_scenes <= n_resamples``.
    corrected : bool, default False
        Test the noise-corrected dispersion (:func:`corrected_dispersion`)
        instead of the raw one. The raw statistic differs between conditions
        whose answers are only noisier (the review's simulation: 37%
        rejections when only the noise level differed); the corrected one
        removes each condition's own noise before the comparison.

    Returns
    -------
    PermutationTestResult
        ``statistic = D(c1) - D(c2)``. Scenes observed under only one
        condition are dropped (counted in ``note``).

    References
    ----------
    Tan & Lee (2025); Good (2005).
    """
    ddof = _check_ddof(ddof)
    n_resamples, rng, seed_used = _check_perm(n_resamples, seed, alternative)
    lay, s1, s2, in1, in2 = _two_conditions(data, conditions)
    matched = in1 & in2
    n_dropped = int((in1 | in2).sum() - matched.sum())
    s1, s2 = s1[matched], s2[matched]
    n = int(matched.sum())
    method = "scene-swap permutation test of the difference in dispersion"
    note = f"{n_dropped} scenes seen under only one condition were dropped" if n_dropped else None
    if n == 0:
        return PermutationTestResult(np.nan, np.nan, method, alternative, 0, 0, False, seed_used, "no matched scenes")
    if corrected:
        cond = lay.condition
        f1 = _corrected_features(lay, np.nonzero(cond == conditions[0])[0])[matched]
        f2 = _corrected_features(lay, np.nonzero(cond == conditions[1])[0])[matched]
        s1, s2, fn = f1, f2, _corrected_fn(lay)
        method = "scene-swap permutation test of the difference in noise-corrected dispersion"
    else:
        fn = _dispersion_fn(lay, ddof)
    t1, t2, delta = s1.sum(axis=0), s2.sum(axis=0), s2 - s1
    observed = float(fn(t1[None, :])[0] - fn(t2[None, :])[0])
    exact, blocks = _flip_blocks(n, n_resamples, rng)
    parts = []
    for s in blocks:
        shift = s @ delta
        parts.append(fn(t1 + shift) - fn(t2 - shift))
    null = np.concatenate(parts)
    null.setflags(write=False)
    return PermutationTestResult(observed, _pvalue(null, observed, alternative, exact), method,
                                 alternative, n, int(null.size), exact, seed_used, note, null)


_UNPAIRED_BLOCK = 4096


def unpaired_dispersion_permutation_test(
    data: Any,
    *,
    ddof: int,
    conditions: tuple[Any, Any],
    n_resamples: int = 9999,
    seed: int | np.random.Generator | None = 0,
    alternative: str = "two-sided",
) -> PermutationTestResult:
    """Permutation test of D(c1) - D(c2) when the conditions have DIFFERENT scenes (unpaired).

    Under the null that the condition label is exchangeable between scenes,
    whole scenes are shuffled between the two conditions (keeping each
    condition's number of scenes) and the Tan & Lee dispersion of each
    condition is recomputed from per-scene cell sums, vectorised over blocks
    of resamples. Always Monte Carlo (``exact=False``).

    Use it when no scene is observed under both conditions (Tan & Lee's
    release: 50 scenes with a power disparity, 50 others without). With
    matched scenes use :func:`dispersion_permutation_test`, which keeps the
    pairing. A caller that wants to treat each (scene, condition) as its own
    unit, e.g. for partly matched scenes, passes a scene label that includes
    the condition.

    Parameters
    ----------
    data : DataFrame or mapping of column -> array
        Long data with a ``condition`` column (see the module notes); each
        scene must belong to one condition. Rows of other conditions are
        ignored.
    ddof : {0, 1}
        Required; see :func:`dispersion`.
    conditions : (c1, c2)
        The two condition labels.
    n_resamples : int, >= 1, default 9999
        Random reassignments of the scenes.
    seed : int, Generator or None, default 0
    alternative : {"two-sided", "less", "greater"}, default "two-sided"
        p-values as in :func:`paired_permutation_test` (scipy's convention:
        ``(k + 1) / (n_resamples + 1)`` per tail, two-sided twice the
        smaller); NaN when the statistic or every null statistic is undefined.

    Returns
    -------
    PermutationTestResult
        ``statistic = D(c1) - D(c2)``, ``n`` = scenes of the two conditions,
        ``n_resamples`` = null statistics drawn (non-finite ones do not count
        in the p-value).

    Raises
    ------
    ValueError
        A scene observed under both conditions, a condition not present,
        ``conditions`` not a pair, ``ddof`` not 0/1.

    References
    ----------
    Tan & Lee (2025); Good, P. (2005). *Permutation, Parametric, and
    Bootstrap Tests of Hypotheses*, 3rd ed., ch. 3 (two-sample comparisons).
    Springer.
    """
    ddof = _check_ddof(ddof)
    n_resamples, rng, seed_used = _check_perm(n_resamples, seed, alternative)
    lay, sa, sb, in_a, in_b = _two_conditions(data, conditions)
    if (in_a & in_b).any():
        raise ValueError(f"{int((in_a & in_b).sum())} scenes appear under both conditions: the scenes are matched, "
                         "use dispersion_permutation_test")
    keep = in_a | in_b
    sums = (sa + sb)[keep]
    label = in_a[keep]
    fn = _dispersion_fn(lay, ddof)
    total = sums.sum(axis=0)
    parts = []
    with np.errstate(divide="ignore", invalid="ignore"):
        ta = sums[label].sum(axis=0)
        observed = float(fn(ta[None])[0] - fn((total - ta)[None])[0])
        done = 0
        while done < n_resamples:
            b = min(_UNPAIRED_BLOCK, n_resamples - done)
            masks = rng.permuted(np.broadcast_to(label, (b, label.size)), axis=1).astype(float)
            t = masks @ sums
            parts.append(fn(t) - fn(total - t))
            done += b
    null = np.concatenate(parts)
    null.setflags(write=False)
    return PermutationTestResult(
        observed, _pvalue(null, observed, alternative, False),
        "unpaired permutation test of the difference in dispersion (whole scenes shuffled between conditions; "
        "scenes not matched)", alternative, int(label.size), int(null.size), False, seed_used,
        "scenes are not matched between conditions: a difference may come from the scenes themselves", null)


# ------------------------------------------------------- least-change identity


@dataclass(frozen=True)
class LeastChangeResult:
    """Result of :func:`least_change_identity`: the identity whose prompt has the lowest mean on an axis and side.

    Worded "the prompt that changes the answer least" when the value is a
    distance from the baseline answer; it is not evidence that the model
    adopts that identity by default.

    Attributes
    ----------
    axis, side, condition
        What was selected (``condition`` None: all rows of the axis).
    identity
        Label with the lowest mean (ties: the first in sorted label order).
    mean : float
    runner_up, runner_up_mean
        The second lowest; None with a single identity.
    stability : float in [0, 1] or None
        Share of scene-bootstrap resamples in which ``identity`` stays the
        lowest; None without resamples or with one scene.
    test : PermutationTestResult or None
        Paired sign-flip test of the per-scene means of ``identity`` vs
        ``runner_up`` over the scenes where both occur
        (:func:`paired_permutation_test`); None when not asked for or no
        scene has both.
    n_scenes : int
        Scenes with rows of the axis (the bootstrap's clusters).
    n_resamples : int
    seed : int
    means : dict
        Identity -> mean, in sorted label order.
    """

    axis: Any
    side: str
    condition: Any
    identity: Any
    mean: float
    runner_up: Any
    runner_up_mean: float | None
    stability: float | None
    test: PermutationTestResult | None
    n_scenes: int
    n_resamples: int
    seed: int
    means: dict = field(repr=False, compare=False)


def _resample_weights(rng: np.random.Generator, n_scenes: int, n_resamples: int) -> np.ndarray:
    """Multiplicity of each scene in each resample, shape (n_resamples, n_scenes): :func:`cluster_bootstrap`'s draws."""
    return np.vstack([_counts(idx, n_scenes) for idx in resample_blocks(rng, n_scenes, n_resamples)])


def least_change_identity(
    data: Any,
    *,
    axis: Any,
    side: str,
    condition: Any = None,
    n_resamples: int = 2000,
    seed: int | None = 0,
    n_permutations: int = 9999,
) -> LeastChangeResult:
    """The identity on one side (SUB or RES) of an axis whose rows have the lowest mean ``value``.

    Each identity's mean pools all its rows on the axis (every cell, every
    scene); the stability is the share of scene-bootstrap resamples (scenes
    drawn with replacement, as :func:`cluster_bootstrap`) in which the same
    identity keeps the lowest mean; the runner-up is compared with a paired
    sign-flip permutation test over per-scene means. Used for Tan & Lee's
    (2025) "default persona" question, reworded as "the prompt that changes
    the answer least" (the seed's critique: a low distance from the baseline
    answer does not show the model assumes that identity).

    Parameters
    ----------
    data : DataFrame or mapping of column -> array
        Columns ``scene, axis, value``, the ``side`` column and, if
        ``condition`` is given, ``condition``. NaN values are ignored.
    axis
        The axis to look at.
    side : {"sub", "res"}
    condition : optional
        Keep only rows with this condition (None: pool all conditions).
    n_resamples : int, >= 0, default 2000
        Scene-bootstrap resamples for ``stability`` (0: none).
    seed : int or None, default 0
        Both the bootstrap and the permutation test start a fresh
        ``numpy.random.default_rng(seed)``, so the result of one axis does
        not depend on which other axes were analysed. None draws a seed
        (recorded in the result).
    n_permutations : int, >= 0, default 9999
        Random sign patterns of the test against the runner-up (0: no test;
        exact when ``2**n_scenes <= n_permutations``).

    Returns
    -------
    LeastChangeResult

    Raises
    ------
    ValueError
        No rows with a value for this axis (and condition); a bad ``side``,
        ``n_resamples``, ``n_permutations`` or ``seed``.

    References
    ----------
    Tan & Lee (2025), sec. 5 (default persona); Davison, A. C. & Hinkley,
    D. V. (1997). *Bootstrap Methods and their Application*, sec. 3.8
    (cluster resampling). Cambridge University Press.
    """
    check_choice("side", side, ("sub", "res"))
    n_resamples = check_positive_int("n_resamples", n_resamples, minimum=0)
    n_permutations = check_positive_int("n_permutations", n_permutations, minimum=0)
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    elif isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or None; got {seed!r}")
    seed = int(seed)
    value = as_float_1d(_column(data, "value"), "value")
    sel = (_column(data, "axis") == axis) & ~np.isnan(value)
    if condition is not None:
        sel &= _column(data, "condition") == condition
    n = int(sel.sum())
    if n == 0:
        where = f"axis {axis!r}" + ("" if condition is None else f" and condition {condition!r}")
        raise ValueError(f"no rows with a value for {where}")
    ids_u, ident = as_labels(_column(data, side)[sel], side, n)
    sc_u, scene = as_labels(_column(data, "scene")[sel], "scene", n)
    n_s, n_k = sc_u.size, ids_u.size
    flat = scene * n_k + ident
    sums = np.bincount(flat, weights=value[sel], minlength=n_s * n_k).reshape(n_s, n_k)
    counts = np.bincount(flat, minlength=n_s * n_k).reshape(n_s, n_k).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        means = sums.sum(0) / counts.sum(0)
        per_scene = sums / counts
    order = np.argsort(np.where(np.isnan(means), np.inf, means), kind="stable")
    best = int(order[0])
    runner = int(order[1]) if n_k > 1 else None
    stability = None
    if n_resamples > 0 and n_s > 1:
        w = _resample_weights(np.random.default_rng(seed), n_s, n_resamples)
        with np.errstate(divide="ignore", invalid="ignore"):
            boot = (w @ sums) / (w @ counts)
        stability = float(np.mean(np.argmin(np.where(np.isnan(boot), np.inf, boot), axis=1) == best))
    test = None
    if runner is not None and n_permutations > 0:
        a, b = per_scene[:, best], per_scene[:, runner]
        both = ~(np.isnan(a) | np.isnan(b))
        if both.any():
            test = paired_permutation_test(a[both], b[both], n_resamples=n_permutations, seed=seed)
    return LeastChangeResult(
        axis, side, condition, ids_u[best], float(means[best]), None if runner is None else ids_u[runner],
        None if runner is None else float(means[runner]), stability, test, int(n_s), n_resamples, seed,
        {k: float(m) for k, m in zip(ids_u, means, strict=True)},
    )
