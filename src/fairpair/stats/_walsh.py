"""Order statistics of Walsh averages without forming all n(n+1)/2 of them.

For large samples the k-th smallest pairwise sum ``d_i + d_j`` (``i <= j``)
is found by bisection on its value, counting the sums below a threshold with
one vectorised ``searchsorted`` over the sorted sample (O(n log n) a step);
each step also tries the next sum above the current lower bound, so the
search ends on an actual Walsh average, not an approximation.
"""

from __future__ import annotations

import numpy as np

__all__ = ["walsh_order_statistics", "signed_rank_cdf"]

_BRUTE_FORCE_MAX_N = 1500


def _prefix(ds: np.ndarray, s: float) -> np.ndarray:
    """For each i, the number of j with fl(ds[i] + ds[j]) <= s.

    ``searchsorted`` on ``s - ds[i]`` can be off at the boundary by rounding;
    the loops move each boundary past whole runs of tied values until it
    agrees with the computed sums (floating-point addition is monotone, so
    the set is a prefix).
    """
    n = ds.size
    pos = np.searchsorted(ds, s - ds, side="right")
    while True:
        fix = np.zeros(n, dtype=bool)
        m = pos < n
        fix[m] = ds[m] + ds[pos[m]] <= s
        if not fix.any():
            break
        pos[fix] = np.searchsorted(ds, ds[pos[fix]], side="right")
    while True:
        fix = np.zeros(n, dtype=bool)
        m = pos > 0
        fix[m] = ds[m] + ds[pos[m] - 1] > s
        if not fix.any():
            break
        pos[fix] = np.searchsorted(ds, ds[pos[fix] - 1], side="left")
    return pos


def _count_le(ds: np.ndarray, idx: np.ndarray, s: float) -> int:
    # number of pairs i <= j with ds[i] + ds[j] <= s
    return int(np.maximum(_prefix(ds, s) - idx, 0).sum())


def _next_above(ds: np.ndarray, idx: np.ndarray, s: float) -> float:
    # smallest pairwise sum ds[i] + ds[j] (i <= j) strictly greater than s
    pos = np.maximum(_prefix(ds, s), idx)
    ok = pos < ds.size
    if not ok.any():
        return np.inf
    return float((ds[ok] + ds[pos[ok]]).min())


def _kth_sum(ds: np.ndarray, idx: np.ndarray, k: int) -> float:
    lo = 2.0 * ds[0] - (abs(ds[0]) + 1.0)  # count(lo) == 0 < k
    hi = 2.0 * ds[-1]  # count(hi) == N >= k
    for _ in range(400):
        s = _next_above(ds, idx, lo)
        if _count_le(ds, idx, s) >= k:
            return s
        lo = s
        mid = lo + (hi - lo) / 2.0
        if not lo < mid < hi:
            break
        if _count_le(ds, idx, mid) >= k:
            hi = mid
        else:
            lo = mid
    return _next_above(ds, idx, lo)


def walsh_order_statistics(d: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """The ``ranks``-th smallest Walsh averages ``(d_i + d_j) / 2``, ``i <= j``.

    Parameters
    ----------
    d : ndarray, shape (n,)
        Finite values, n >= 1.
    ranks : array_like of int
        1-based ranks in ``1 .. n(n+1)/2``.

    Returns
    -------
    ndarray of float, same shape as ``ranks``.
    """
    ds = np.sort(np.asarray(d, dtype=float))
    ranks = np.asarray(ranks, dtype=np.int64)
    n = ds.size
    if ds.size <= _BRUTE_FORCE_MAX_N:
        iu = np.triu_indices(n)
        sums = ds[iu[0]] + ds[iu[1]]
        kth = np.partition(sums, np.unique(ranks - 1))
        return kth[ranks - 1] / 2.0
    idx = np.arange(n)
    out = np.array([_kth_sum(ds, idx, int(k)) for k in ranks.ravel()])
    return out.reshape(ranks.shape) / 2.0


def signed_rank_cdf(n: int) -> np.ndarray:
    """Exact null CDF of the Wilcoxon signed-rank statistic ``T+`` without ties.

    Returns ``F`` with ``F[t] = P(T+ <= t)`` for ``t = 0 .. n(n+1)/2``, by the
    generating function ``prod_i (1 + x**i) / 2**n`` (float64 is exact in the
    counts for ``n <= 50``).
    """
    total = n * (n + 1) // 2
    counts = np.zeros(total + 1)
    counts[0] = 1.0
    for i in range(1, n + 1):
        counts[i:] = counts[i:] + counts[: total + 1 - i]
    return np.cumsum(counts) / 2.0**n
