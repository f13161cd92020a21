"""Cluster (block) bootstrap: resample whole clusters (templates) with replacement.

Answers that share a template (its repetitions, its name variants) are not
independent, so the unit of resampling is the cluster, not the answer.

Two engines share one random scheme, so they give the same bootstrap
distribution for the same seed:

* the generic engine gathers each resample's rows and calls the user's
  ``statistic`` (one Python call per resample);
* the sums engine handles statistics that are functions of cluster totals
  (means, rates, differences of them, dispersions of cell means): a
  resample is a vector of cluster multiplicities ``w`` and its totals are
  ``w @ cluster_sums``, computed for a block of resamples at once.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from fairpair.stats._common import (
    ConfidenceInterval,
    as_labels,
    check_choice,
    check_level,
    check_positive_int,
    paired_arrays,
)

__all__ = [
    "MIN_CLUSTERS_FOR_INTERVAL",
    "FewClustersWarning",
    "BootstrapResult",
    "cluster_bootstrap",
    "cluster_bootstrap_mean_difference",
    "cluster_bootstrap_risk_difference",
]

BOOTSTRAP_METHODS = ("percentile", "basic", "bca")

#: Below this many clusters the bootstrap intervals of the public functions cover too
#: rarely: a nominal 95% percentile interval of a paired mean difference covered 83% at
#: 5 clusters, 89% at 8-10, 91% at 15 and 93-94% from 20 up (benchmarks/sim_bootstrap_clusters.py,
#: 6 pairs per cluster, cluster effect SD = pair SD; its table is in benchmarks/HISTORY.md). The
#: bootstrap SE is biased down by (G - 1) / G and the percentile limits use normal, not t(G - 1),
#: quantiles (Davison & Hinkley 1997, sec. 3.8; Cameron, Gelbach & Miller 2008).
MIN_CLUSTERS_FOR_INTERVAL = 20


class FewClustersWarning(UserWarning):
    """A cluster-bootstrap interval from fewer than :data:`MIN_CLUSTERS_FOR_INTERVAL` clusters."""


def _warn_few_clusters(res: BootstrapResult) -> BootstrapResult:
    g = res.n_clusters
    if 0 < g < MIN_CLUSTERS_FOR_INTERVAL:
        warnings.warn(
            f"cluster bootstrap from {g} clusters: its {res.method} interval covers less than its level "
            f"(a nominal 95% percentile interval covered 83% at 5 clusters, 89% at 10, 91% at 15; "
            f"use at least {MIN_CLUSTERS_FOR_INTERVAL} clusters or a t-based interval)",
            FewClustersWarning, stacklevel=3)
    return res
_BLOCK_CELLS = 1 << 21  # resamples x clusters drawn per block (~16 MiB of int64)


@dataclass(frozen=True)
class BootstrapResult:
    """Result of a cluster bootstrap.

    Attributes
    ----------
    statistic : float
        The statistic on the original data.
    ci : ConfidenceInterval
        Interval at the requested ``confidence_level`` and ``method``.
    standard_error : float
        Standard deviation (ddof=1) of the bootstrap distribution.
    n_resamples : int
    seed : int or None
        The seed given (``None`` if a Generator or no seed was passed).
    method : str
        ``"percentile"``, ``"basic"`` or ``"bca"``.
    confidence_level : float
    n_clusters : int
        Clusters resampled (after dropping missing observations).
    n_observations : int
        Observations (e.g. complete pairs) used.
    n_missing : int
        Observations dropped because a value was missing.
    note : str or None
        Set for degenerate input (one cluster, no data, undefined resamples).
    bootstrap_distribution : ndarray, shape (n_resamples,)
        The statistic on each resample (NaN where undefined).
    """

    statistic: float
    ci: ConfidenceInterval
    standard_error: float
    n_resamples: int
    seed: int | None
    method: str
    confidence_level: float
    n_clusters: int
    n_observations: int
    n_missing: int = 0
    note: str | None = None
    bootstrap_distribution: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)
    acceleration: float = field(default=np.nan, repr=False, compare=False)

    def confidence_interval(self, confidence_level: float | None = None) -> ConfidenceInterval:
        """The interval at another level from the same resamples (same ``method``).

        Parameters
        ----------
        confidence_level : float or None
            In (0, 1); ``None`` returns :attr:`ci`.
        """
        if confidence_level is None:
            return self.ci
        level = check_level(confidence_level)
        low, high, _ = _interval(self.statistic, self.bootstrap_distribution, level, self.method, self.acceleration)
        return ConfidenceInterval(low, high, level, self.method)


# ----------------------------------------------------------------- machinery


def _check_common(n_resamples: Any, confidence_level: Any, method: Any,
                  seed: Any) -> tuple[int, float, np.random.Generator, int | None]:
    n_resamples = check_positive_int("n_resamples", n_resamples, minimum=1)
    level = check_level(confidence_level)
    check_choice("method", method, BOOTSTRAP_METHODS)
    if isinstance(seed, np.random.Generator):
        return n_resamples, level, seed, None
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"seed must be a non-negative integer, None or a numpy Generator; got {seed!r}")
    return n_resamples, level, np.random.default_rng(seed), (None if seed is None else int(seed))


def resample_blocks(rng: np.random.Generator, n_clusters: int, n_resamples: int) -> Iterator[np.ndarray]:
    """Yield blocks of cluster indices, shape (block, n_clusters), drawn with replacement."""
    block = max(1, min(n_resamples, _BLOCK_CELLS // max(n_clusters, 1)))
    done = 0
    while done < n_resamples:
        b = min(block, n_resamples - done)
        yield rng.integers(0, n_clusters, size=(b, n_clusters))
        done += b


def _counts(idx: np.ndarray, n_clusters: int) -> np.ndarray:
    b = idx.shape[0]
    offsets = (np.arange(b) * n_clusters)[:, None]
    return np.bincount((idx + offsets).ravel(), minlength=b * n_clusters).reshape(b, n_clusters).astype(float)


def _percentile_of_score(boot: np.ndarray, score: float) -> float:
    return float(((boot < score).sum() + (boot <= score).sum()) / (2.0 * boot.size))


def _interval(theta: float, boot: np.ndarray, level: float, method: str,
              accel: float) -> tuple[float, float, str | None]:
    finite = boot[np.isfinite(boot)]
    if finite.size == 0 or not np.isfinite(theta):
        return np.nan, np.nan, "no finite bootstrap replicate"
    alpha = 1.0 - level
    probs = np.array([alpha / 2.0, 1.0 - alpha / 2.0])
    note = None
    if method == "bca":
        z0 = special.ndtri(_percentile_of_score(finite, theta))
        if not np.isfinite(z0) or not np.isfinite(accel):
            return np.nan, np.nan, "BCa undefined: statistic outside the bootstrap distribution or no jackknife spread"
        zq = special.ndtri(probs)
        probs = special.ndtr(z0 + (z0 + zq) / (1.0 - accel * (z0 + zq)))
    q = np.quantile(finite, probs)
    if method == "basic":
        return float(2.0 * theta - q[1]), float(2.0 * theta - q[0]), note
    return float(q[0]), float(q[1]), note


def _acceleration(jack: np.ndarray) -> float:
    jack = jack[np.isfinite(jack)]
    if jack.size < 2:
        return np.nan
    dev = jack.mean() - jack
    denom = 6.0 * np.sum(dev**2) ** 1.5
    return float(np.sum(dev**3) / denom) if denom > 0 else np.nan


def finish(
    theta: float,
    boot: np.ndarray,
    jack: np.ndarray | None,
    *,
    level: float,
    method: str,
    n_resamples: int,
    seed: int | None,
    n_clusters: int,
    n_observations: int,
    n_missing: int,
    note: str | None = None,
) -> BootstrapResult:
    """Assemble a :class:`BootstrapResult` from the replicates (shared by every engine)."""
    accel = _acceleration(jack) if (method == "bca" and jack is not None) else np.nan
    low, high, ci_note = _interval(theta, boot, level, method, accel)
    finite = boot[np.isfinite(boot)]
    se = float(finite.std(ddof=1)) if finite.size > 1 else np.nan
    notes = [s for s in (note, ci_note) if s]
    n_undefined = boot.size - finite.size
    if n_undefined and finite.size:
        notes.append(f"{n_undefined} resamples gave an undefined statistic and were left out")
    if n_clusters == 1:
        notes.append("only one cluster: the bootstrap cannot reflect between-cluster variation")
    boot.setflags(write=False)
    return BootstrapResult(
        float(theta), ConfidenceInterval(low, high, level, method), se, n_resamples, seed, method, level,
        n_clusters, n_observations, n_missing, "; ".join(notes) or None, boot, accel,
    )


def sums_bootstrap(
    cluster_sums: np.ndarray,
    fn: Callable[[np.ndarray], np.ndarray],
    *,
    n_resamples: int,
    level: float,
    method: str,
    rng: np.random.Generator,
    seed: int | None,
    n_observations: int,
    n_missing: int = 0,
    note: str | None = None,
) -> BootstrapResult:
    """Bootstrap a statistic of cluster totals.

    Parameters
    ----------
    cluster_sums : ndarray, shape (n_clusters, m)
        Per-cluster totals of the ``m`` quantities the statistic needs.
    fn : callable
        Maps totals of shape (r, m) to statistics of shape (r,); vectorised.
    """
    n_clusters = cluster_sums.shape[0]
    total = cluster_sums.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = float(fn(total[None, :])[0])
        parts = []
        for idx in resample_blocks(rng, n_clusters, n_resamples):
            parts.append(np.asarray(fn(_counts(idx, n_clusters) @ cluster_sums), dtype=float))
        boot = np.concatenate(parts)
        jack = np.asarray(fn(total[None, :] - cluster_sums), dtype=float) if method == "bca" else None
    return finish(
        theta, boot, jack, level=level, method=method, n_resamples=n_resamples, seed=seed,
        n_clusters=n_clusters, n_observations=n_observations, n_missing=n_missing, note=note,
    )


def _ratio(totals: np.ndarray) -> np.ndarray:
    return totals[:, 0] / totals[:, 1]


def _nan_result(level: float, method: str, n_resamples: int, seed: int | None, n_missing: int,
                note: str) -> BootstrapResult:
    boot = np.full(0, np.nan)
    return BootstrapResult(
        np.nan, ConfidenceInterval(np.nan, np.nan, level, method), np.nan, n_resamples, seed, method, level,
        0, 0, n_missing, note, boot,
    )


# ------------------------------------------------------------------- public


def cluster_bootstrap(
    data: Any,
    statistic: Callable[..., float],
    clusters: Any,
    *,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    method: str = "percentile",
) -> BootstrapResult:
    """Cluster bootstrap of any statistic: clusters are resampled with replacement.

    Parameters
    ----------
    data : array_like, shape (n, ...), or tuple of such arrays
        Observations along the first axis. A tuple is indexed row-wise in
        step and passed to ``statistic`` as separate arguments.
    statistic : callable
        ``statistic(data_rows)`` (or ``statistic(*arrays)`` for a tuple)
        returning a float. Called once per resample; for means, rates and
        their paired differences prefer the vectorised
        :func:`cluster_bootstrap_mean_difference` /
        :func:`cluster_bootstrap_risk_difference`.
    clusters : array_like, shape (n,)
        Cluster label of each observation (e.g. the template id); no missing.
    n_resamples : int, default 2000
    confidence_level : float, default 0.95
    seed : int, numpy Generator or None, default 0
        Same integer seed -> same resamples -> same interval.
    method : {"percentile", "basic", "bca"}, default "percentile"
        ``"bca"`` uses a leave-one-cluster-out jackknife for the acceleration.

    Returns
    -------
    BootstrapResult

    Raises
    ------
    ValueError
        For mismatched lengths or options outside the allowed values.

    Warns
    -----
    FewClustersWarning
        With fewer than :data:`MIN_CLUSTERS_FOR_INTERVAL` (20) clusters, where
        the interval undercovers (83% for a nominal 95% at 5 clusters).

    Notes
    -----
    Each resample draws ``G`` cluster indices uniformly with replacement from
    the ``G`` observed clusters and keeps every observation of each drawn
    cluster (the "cluster" or "case" bootstrap, resampling at the top level
    only, which is the recommended scheme for nested data).

    References
    ----------
    Efron, B., & Tibshirani, R. J. (1993). *An Introduction to the
    Bootstrap*. Chapman & Hall (ch. 13-14 for percentile and BCa).
    Davison, A. C., & Hinkley, D. V. (1997). *Bootstrap Methods and their
    Application*, sec. 3.8. Cambridge University Press.
    Field, C. A., & Welsh, A. H. (2007). Bootstrapping clustered data.
    *JRSS B*, 69, 369-390.
    """
    n_resamples, level, rng, seed_used = _check_common(n_resamples, confidence_level, method, seed)
    arrays = tuple(np.asarray(a) for a in data) if isinstance(data, tuple) else (np.asarray(data),)
    if any(a.ndim == 0 for a in arrays):
        raise ValueError("data must be array-like with observations along the first axis")
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays):
        raise ValueError("all arrays in data must have the same number of observations")
    if not callable(statistic):
        raise ValueError("statistic must be callable")
    if n == 0:
        return _nan_result(level, method, n_resamples, seed_used, 0, "no observations")
    _, codes = as_labels(clusters, "clusters", n)
    n_clusters = int(codes.max()) + 1
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=n_clusters)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))

    def call(rows: np.ndarray) -> float:
        return float(statistic(*(a[rows] for a in arrays)))

    theta = call(np.arange(n))
    boot = np.empty(n_resamples)
    pos = 0
    for idx in resample_blocks(rng, n_clusters, n_resamples):
        for g in idx:
            lengths = sizes[g]
            offsets = np.repeat(starts[g] - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
            boot[pos] = call(order[offsets + np.arange(offsets.size)])
            pos += 1
    jack = None
    if method == "bca":
        jack = (np.array([call(np.nonzero(codes != g)[0]) for g in range(n_clusters)]) if n_clusters > 1
                else np.array([]))
    return _warn_few_clusters(finish(
        theta, boot, jack, level=level, method=method, n_resamples=n_resamples, seed=seed_used,
        n_clusters=n_clusters, n_observations=n, n_missing=0,
    ))


def _paired_difference_bootstrap(
    x: Any, y: Any, clusters: Any, *, binary: bool, n_resamples: Any, confidence_level: Any, seed: Any, method: Any
) -> BootstrapResult:
    n_resamples, level, rng, seed_used = _check_common(n_resamples, confidence_level, method, seed)
    xs, ys, keep = paired_arrays(x, y, binary=binary, return_mask=True)
    n_missing = int((~keep).sum())
    _, codes_all = as_labels(clusters, "clusters", keep.size)
    codes = codes_all[keep]
    if codes.size == 0:
        return _nan_result(level, method, n_resamples, seed_used, n_missing, "no complete pairs")
    _, codes = np.unique(codes, return_inverse=True)
    n_clusters = int(codes.max()) + 1
    d = xs - ys
    sums = np.column_stack([np.bincount(codes, weights=d, minlength=n_clusters),
                            np.bincount(codes, minlength=n_clusters)])
    return sums_bootstrap(
        sums.astype(float), _ratio, n_resamples=n_resamples, level=level, method=method, rng=rng, seed=seed_used,
        n_observations=int(d.size), n_missing=n_missing,
    )


def cluster_bootstrap_mean_difference(
    x: Any,
    y: Any,
    clusters: Any,
    *,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    method: str = "percentile",
) -> BootstrapResult:
    """Cluster-bootstrap CI for the paired mean difference ``mean(x - y)``.

    Vectorised: per-cluster sums of ``x - y`` and pair counts are
    precomputed, and each resample's estimate is ``(w @ sums) / (w @ counts)``
    for the cluster multiplicities ``w``.

    Parameters
    ----------
    x, y : array_like of float, shape (n_pairs,)
        Paired measurements (group A, group B); NaN drops the pair.
    clusters : array_like, shape (n_pairs,)
        Cluster (template) label of each pair.
    n_resamples, confidence_level, seed, method
        As in :func:`cluster_bootstrap`, which gives the same distribution
        for the same seed with ``statistic=np.mean`` on ``x - y``.

    Returns
    -------
    BootstrapResult

    Warns
    -----
    FewClustersWarning
        With fewer than 20 clusters (see :func:`cluster_bootstrap`).

    References
    ----------
    Field & Welsh (2007); Efron & Tibshirani (1993). See :func:`cluster_bootstrap`.
    """
    return _warn_few_clusters(_paired_difference_bootstrap(
        x, y, clusters, binary=False, n_resamples=n_resamples, confidence_level=confidence_level, seed=seed,
        method=method,
    ))


def cluster_bootstrap_risk_difference(
    x: Any,
    y: Any,
    clusters: Any,
    *,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    method: str = "percentile",
) -> BootstrapResult:
    """Cluster-bootstrap CI for the paired risk difference ``rate_A - rate_B``.

    Same engine as :func:`cluster_bootstrap_mean_difference`, with ``x`` and
    ``y`` required to be binary (0/1/bool, NaN for missing).

    Raises
    ------
    ValueError
        If an outcome is not 0/1 or missing, or an option is invalid.

    Warns
    -----
    FewClustersWarning
        With fewer than 20 clusters (see :func:`cluster_bootstrap`).

    References
    ----------
    Field & Welsh (2007); Efron & Tibshirani (1993). See :func:`cluster_bootstrap`.
    """
    return _warn_few_clusters(_paired_difference_bootstrap(
        x, y, clusters, binary=True, n_resamples=n_resamples, confidence_level=confidence_level, seed=seed,
        method=method,
    ))
