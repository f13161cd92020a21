"""Names shared across requests: the multiway cluster-robust variance of a mean over matched sets.

A ranking audit shows k candidates per request, one name of each group. When
each group's names come from a short list, the same name recurs in many
requests, in different company (a different name set each time). A name is a
random factor (Clark 1973): every request showing it shares its effect, so
two requests that share *any* candidate's name are correlated. The crossed
estimator of :mod:`fairpair.stats._ranking` takes the *name set* (the k names
together) as the random unit, which is right when the names of all groups
repeat together (the ``ranking`` design's name positions) but treats requests
with different name sets as independent, so its interval is too narrow when
names recur in different sets (about 91% instead of 95% with each name in 10
of 1,000 requests, ``benchmarks/sim_ranking_fixed.py``).

The covariance such sharing adds is estimated here as in multiway
cluster-robust inference (Cameron, Gelbach & Miller 2011): for a linear
estimate ``sum_i a_i`` (``a_i = w_i e_i``: weight times residual), the sum of
``a_i a_j`` over the pairs ``i != j`` that share at least one name, by
inclusion-exclusion over the groups' name dimensions::

    sum_{i != j share some name} a_i a_j = sum_{S nonempty} (-1)^(|S|+1) Q(P_S)

where ``P_S`` is the partition of the requests by the names of the groups in
``S`` together and ``Q(P) = sum_c (sum_{i in c} a_i)^2 - sum_i a_i^2`` the
off-diagonal sum within its clusters. Only clusters of two or more requests
count, and every refinement of a singleton is a singleton, so the
enumeration keeps the non-singleton rows only and identical partitions are
merged (with names that repeat together every ``P_S`` is the name-set
partition and the sum collapses to one term).

* :func:`multiway_cluster_variance` -- the CGM "meat" ``sum_{i, j share a
  cluster in some dimension} s_i s_j`` of any number of dimensions;
* :func:`name_clusters` -- the partitions of one audit's requests, built
  once (they depend on the names, not on the values);
* :func:`shared_name_variance` -- the variance the shared names add to the
  mean of a per-set value beyond what the crossed (templates random) or
  stratified (templates fixed) estimator already counts;
* :func:`multiway_mean_variance` -- the whole variance of the mean of the
  template means, templates and names random (name sets not crossed with the
  templates);
* :func:`multiway_cluster_covariance`, :func:`shared_name_covariance`,
  :func:`multiway_mean_covariance` -- the same sums for a per-set *vector*
  (the k - 1 contrasts of the tests over all groups), each ``a_i a_j`` an
  outer product ``a_i a_j'`` (one implementation: the scalar functions are
  the 1-column case), and :func:`psd_part`, the positive semi-definite part
  CGM take of such a difference of covariance matrices.

References
----------
Cameron, A. C., Gelbach, J. B., & Miller, D. L. (2011). Robust inference with
multiway clustering. *Journal of Business & Economic Statistics*, 29(2),
238-249. Clark, H. H. (1973). The language-as-fixed-effect fallacy. *JVLVB*,
12, 335-359. Satterthwaite, F. E. (1946). An approximate distribution of
estimates of variance components. *Biometrics Bulletin*, 2, 110-114.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["NameClusters", "SharedNameVariance", "SharedNameCovariance", "multiway_cluster_variance",
           "multiway_cluster_covariance", "multiway_mean_variance", "multiway_mean_covariance", "name_clusters",
           "psd_part", "shared_name_variance", "shared_name_covariance"]


def _codes(x: Any) -> np.ndarray:
    """Dense integer codes of one clustering dimension (labels of any type)."""
    arr = np.asarray(x.to_numpy() if hasattr(x, "to_numpy") else x)
    return np.unique(arr, return_inverse=True)[1].reshape(-1).astype(np.intp)


def _clusters(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of non-singleton clusters (ascending) and their codes relabelled 0..m-1 by first appearance."""
    _u, first, inv, cnt = np.unique(codes, return_index=True, return_inverse=True, return_counts=True)
    keep = cnt[inv.reshape(-1)] >= 2
    rows = np.flatnonzero(keep)
    if rows.size == 0:
        return rows, rows
    order = np.argsort(np.argsort(first[cnt >= 2]))  # relabel by first appearance: one key per partition
    relabel = np.full(cnt.size, -1, dtype=np.intp)
    relabel[cnt >= 2] = order
    return rows, relabel[inv.reshape(-1)[rows]]


def _partitions(dims: np.ndarray, less: np.ndarray | None = None) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """Inclusion-exclusion terms ``(sign, rows, codes)`` over the columns of ``dims`` (n, D); -1: no cluster.

    One term per distinct partition ``P_S`` with a non-zero summed sign, keeping only the rows of
    clusters with two or more members; ``less`` (codes, shape (n,)): its partition enters with sign -1.
    """
    n, d = dims.shape
    acc: dict[bytes, list[Any]] = {}

    def add(sign: int, rows: np.ndarray, codes: np.ndarray) -> None:
        key = rows.tobytes() + b"|" + codes.tobytes()
        if key in acc:
            acc[key][0] += sign
        else:
            acc[key] = [sign, rows, codes]

    def walk(last: int, rows: np.ndarray, codes: np.ndarray, size: int) -> None:
        add(1 if size % 2 else -1, rows, codes)
        for e in range(last + 1, d):
            col = dims[rows, e]
            ok = col >= 0
            if ok.sum() < 2:
                continue
            key = codes[ok].astype(np.int64) * (int(dims[:, e].max()) + 1) + col[ok]
            sub, sub_codes = _clusters(key)
            if sub.size:
                walk(e, rows[ok][sub], sub_codes, size + 1)

    for e in range(d):
        valid = np.flatnonzero(dims[:, e] >= 0)
        sub, sub_codes = _clusters(dims[valid, e])
        if sub.size:
            walk(e, valid[sub], sub_codes, 1)
    if less is not None:
        rows, codes = _clusters(less)
        if rows.size:
            add(-1, rows, codes)
    return [(int(s), r, c) for s, r, c in acc.values() if s != 0]


def _gram(x: np.ndarray) -> Any:
    """``sum_i x_i x_i'``: a float for 1-D ``x``, the (q, q) matrix for ``x`` of shape (n, q)."""
    return float(x @ x) if x.ndim == 1 else x.T @ x


def _sum_by(codes: np.ndarray, x: np.ndarray, size: int = 0) -> np.ndarray:
    """Sums of the rows of ``x`` by code: shape (m,) for 1-D ``x``, (m, q) for 2-D, ``m >= size``."""
    if x.ndim == 1:
        return np.bincount(codes, weights=x, minlength=size)
    m = max(size, int(codes.max()) + 1 if codes.size else 0)
    return np.column_stack([np.bincount(codes, weights=x[:, j], minlength=m) for j in range(x.shape[1])]
                           ).reshape(m, x.shape[1])


def _gram_by(codes: np.ndarray, x: np.ndarray, size: int) -> np.ndarray:
    """``sum_i x_i x_i'`` by code: shape (size,) for 1-D ``x``, (size, q, q) for 2-D."""
    if x.ndim == 1:
        return np.bincount(codes, weights=x * x, minlength=size)
    out = np.zeros((size, x.shape[1], x.shape[1]))
    np.add.at(out, codes, x[:, :, None] * x[:, None, :])
    return out


def _outer_rows(x: np.ndarray) -> np.ndarray:
    """Each row's square (1-D) or outer product (2-D: shape (m, q, q))."""
    return x * x if x.ndim == 1 else x[:, :, None] * x[:, None, :]


def _offdiag(a: np.ndarray, rows: np.ndarray, codes: np.ndarray) -> Any:
    """``sum_c (sum_{i in c} a_i)(sum_{i in c} a_i)' - sum_i a_i a_i'`` over the clusters ``codes`` of ``rows``.

    ``a`` of shape (n,): a float; (n, q): the (q, q) matrix (the multivariate "meat").
    """
    if rows.size == 0:
        return 0.0 if a.ndim == 1 else np.zeros((a.shape[1], a.shape[1]))
    ar = a[rows]
    s = _sum_by(codes, ar)
    return _gram(s) - _gram(ar)


def _offdiag_by(a: np.ndarray, rows: np.ndarray, codes: np.ndarray, cluster_template: np.ndarray,
                size: int) -> np.ndarray:
    """:func:`_offdiag` of clusters that lie within one template, by template (shape (size,) or (size, q, q))."""
    if rows.size == 0:
        return np.zeros(size) if a.ndim == 1 else np.zeros((size, a.shape[1], a.shape[1]))
    ar = a[rows]
    sums = _sum_by(codes, ar)
    sq = _gram_by(codes, ar, sums.shape[0])
    within = _outer_rows(sums) - sq
    if a.ndim == 1:
        return np.bincount(cluster_template[: sums.size], weights=within, minlength=size)
    out = np.zeros((size, a.shape[1], a.shape[1]))
    np.add.at(out, cluster_template[: sums.shape[0]], within)
    return out


def psd_part(m: Any) -> np.ndarray:
    """The positive semi-definite part of a symmetric matrix: its negative eigenvalues set to 0.

    Cameron, Gelbach & Miller (2011, section 2.3): the multiway cluster-robust
    covariance is a difference of positive semi-definite matrices and may have
    negative eigenvalues; ``U diag(max(lambda, 0)) U'`` keeps it a covariance.
    ``m`` of shape (q, q), symmetrised first; returns shape (q, q).
    """
    x = np.asarray(m, dtype=float)
    x = (x + x.T) / 2.0
    lam, u = np.linalg.eigh(x)
    return (u * np.maximum(lam, 0.0)) @ u.T


def multiway_cluster_variance(scores: Any, clusters: Any) -> float:
    """``sum_{i, j} s_i s_j 1[i and j share a cluster in at least one dimension]`` (diagonal included).

    Parameters
    ----------
    scores : array_like of float, shape (n,)
        Per-observation scores (for a mean, ``(v_i - mean) / n``); NaN is not allowed.
    clusters : array_like, shape (n,) or (n, D)
        One cluster label per observation and dimension.

    Returns
    -------
    float
        The multiway cluster-robust "meat" of Cameron, Gelbach & Miller (2011),
        eq. 2.13, without small-sample factors: with one dimension the one-way
        cluster-robust sum ``sum_c (sum_{i in c} s_i)^2``; with two, ``V_1 + V_2
        - V_12`` (what :class:`statsmodels.regression.linear_model.OLS` with
        ``cov_type="cluster"`` and two group columns returns, uncorrected). It
        may be negative with three or more dimensions.

    Raises
    ------
    ValueError
        Mismatched lengths, or NaN scores.
    """
    return float(_multiway_meat(np.asarray(scores, dtype=float).ravel(), clusters))


def multiway_cluster_covariance(scores: Any, clusters: Any) -> np.ndarray:
    """The matrix form of :func:`multiway_cluster_variance`: ``sum_{i, j share a cluster} s_i s_j'``.

    Parameters
    ----------
    scores : array_like of float, shape (n, q)
        Per-observation score vectors (for a least-squares fit, ``x_i e_i``); NaN is not allowed.
    clusters : array_like, shape (n,) or (n, D)
        One cluster label per observation and dimension.

    Returns
    -------
    ndarray, shape (q, q)
        The multiway cluster-robust "meat" of Cameron, Gelbach & Miller (2011),
        eq. 2.13, without small-sample factors (statsmodels' ``cov_type="cluster"``
        meat with ``use_correction=False``: one way ``sum_c S_c S_c'``, two ways
        ``V_1 + V_2 - V_12``). Symmetric; not necessarily positive semi-definite
        with two or more dimensions (:func:`psd_part`).

    Raises
    ------
    ValueError
        ``scores`` not 2-D, mismatched lengths, or NaN scores.
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 2:
        raise ValueError(f"scores must be 2-D (observations x parameters); got shape {s.shape}")
    return np.asarray(_multiway_meat(s, clusters))


def _multiway_meat(s: np.ndarray, clusters: Any) -> Any:
    c = np.asarray(clusters.to_numpy() if hasattr(clusters, "to_numpy") else clusters)
    c = c.reshape(c.shape[0], -1) if c.ndim else c.reshape(1, 1)
    if c.shape[0] != s.shape[0]:
        raise ValueError(f"clusters must have one row per score; got {c.shape[0]} and {s.shape[0]}")
    if np.isnan(s).any():
        raise ValueError("scores must not be NaN")
    dims = np.column_stack([_codes(c[:, j]) for j in range(c.shape[1])])
    return _gram(s) + sum((sign * _offdiag(s, rows, codes) for sign, rows, codes in _partitions(dims)),
                          start=0.0 * _gram(s))


@dataclass(frozen=True)
class NameClusters:
    """The requests of one audit grouped by their names, built once by :func:`name_clusters`.

    Attributes
    ----------
    template : ndarray of int, shape (n,)
        Template code of each matched set.
    nameset : ndarray of int, shape (n,)
        Code of each set's names together (the unit of the crossed estimator).
    names : ndarray of int, shape (n, D)
        Each group's name code per set, -1 where the prompt lacks the group.
    n_names : int
        The fewest distinct names of one group (the clusters of the sparsest
        dimension: ``n_names - 1`` is the degrees of freedom given to the
        shared-name term).
    union : tuple
        Inclusion-exclusion terms ``(sign, rows, codes, rows_t, codes_t,
        template_of_code_t)`` over the name dimensions (pairs sharing some
        name): the partition and its refinement by template.
    beyond_sets : tuple
        The same terms less the name-set partition (pairs sharing some name
        but not all): empty when the names repeat only together.
    crossed : bool
        Whether the name sets are crossed with the templates (at least half
        of the sets have a name set seen in two or more templates, as the
        ``ranking`` design's name positions are): the crossed template x
        name-set estimator applies. Otherwise (names drawn per request, so
        almost every name set is new) it cannot tell templates from name
        sets, and a templates-random mean is the mean of the template means.
    """

    template: np.ndarray
    nameset: np.ndarray
    names: np.ndarray
    n_names: int
    union: tuple
    beyond_sets: tuple
    crossed: bool = True
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def cached(self, key: tuple, make: Any) -> Any:
        """``make()`` once per ``key`` (the sums that depend only on which sets have a value)."""
        if key not in self._cache:
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[key] = make()
        return self._cache[key]

    def __len__(self) -> int:
        return int(self.nameset.size)


def _with_template(terms: list[tuple[int, np.ndarray, np.ndarray]], template: np.ndarray) -> tuple:
    out = []
    for sign, rows, codes in terms:
        key = codes.astype(np.int64) * (int(template.max()) + 1) + template[rows]
        sub, sub_codes = _clusters(key)
        tmpl_of = np.zeros(0, dtype=np.intp)
        if sub.size:
            tmpl_of = np.zeros(int(sub_codes.max()) + 1, dtype=np.intp)
            tmpl_of[sub_codes] = template[rows[sub]]
        out.append((sign, rows, codes, rows[sub], sub_codes, tmpl_of))
    return tuple(out)


def name_clusters(template: Any, names: Any) -> NameClusters:
    """Group one audit's matched sets by each group's name, for :func:`shared_name_variance`.

    Parameters
    ----------
    template : array_like, shape (n,)
        Template of each matched set (request).
    names : array_like of int, shape (n, D)
        The name (code) of each group's candidate in each set, one column per
        group; a negative code where the set has no candidate of that group.
        Codes need only be distinct within a column.

    Returns
    -------
    NameClusters

    Raises
    ------
    ValueError
        ``names`` not 2-D or of another length than ``template``.
    """
    nm = np.asarray(names)
    if nm.ndim != 2:
        raise ValueError(f"names must be 2-D (sets x groups); got shape {nm.shape}")
    tmpl = _codes(template)
    if tmpl.size != nm.shape[0]:
        raise ValueError(f"template and names must have one row per set; got {tmpl.size} and {nm.shape[0]}")
    dims = np.column_stack([np.where(nm[:, j] >= 0, _codes(nm[:, j]), -1) for j in range(nm.shape[1])])
    nameset = np.unique(dims, axis=0, return_inverse=True)[1].reshape(-1).astype(np.intp)
    counts = [int(np.unique(dims[dims[:, j] >= 0, j]).size) for j in range(dims.shape[1])]
    counts = [c for c in counts if c > 0]
    pairs = np.unique(np.column_stack([nameset, tmpl]), axis=0)
    spans = np.bincount(pairs[:, 0], minlength=int(nameset.max()) + 1 if nameset.size else 0)
    crossed = bool(nameset.size) and float(np.mean(spans[nameset] >= 2)) >= 0.5
    return NameClusters(tmpl, nameset, dims, min(counts) if counts else 0, _with_template(_partitions(dims), tmpl),
                        _with_template(_partitions(dims, nameset), tmpl), crossed)


@dataclass(frozen=True)
class SharedNameVariance:
    """Result of :func:`shared_name_variance`.

    Attributes
    ----------
    variance : float
        The covariance that requests sharing a name add to the mean's
        variance (may be negative: an unbiased estimate of a non-negative
        quantity; callers add ``max(variance, 0)``).
    df : float
        Degrees of freedom given to it: the fewest names of a group minus one.
    n_pairs : int
        Ordered pairs of requests the term sums over.
    correction : float
        The factor the residual sum was multiplied by (:func:`multiway_mean_variance`; 1 otherwise).
    """

    variance: float
    df: float
    n_pairs: int
    correction: float = 1.0


def shared_name_variance(values: Any, clusters: NameClusters, *, templates: str = "random") -> SharedNameVariance:
    """The variance that names shared across matched sets add to the mean of a per-set value.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        One value per matched set (a 0/1 top pick, a per-set difference, a
        linearised ratio term); NaN is left out.
    clusters : NameClusters
        From :func:`name_clusters` over the same sets.
    templates : {"random", "fixed"}
        The estimator the term is added to. The mean is ``sum_i w_i v_i`` with
        ``w_i = 1 / (T n_t)`` (mean over templates of each template's mean)
        and residuals ``e_i = v_i - mean_t``, ``a_i = w_i e_i``.

        * ``"random"``: the crossed estimator (templates and name sets
          random) already counts the pairs of one template and the pairs of
          one name set; the term is ``sum a_i a_j`` over the pairs in
          different templates and different name sets that share a name.
          When the name sets are not crossed with the templates
          (``clusters.crossed`` false) the estimator is the variance of the
          template means, which counts the pairs of one template only; the
          term then takes every pair in different templates sharing a name.
        * ``"fixed"``: the stratified estimator counts no pair; the term is
          ``sum_t Q_t / (1 - H_t) + Q_x - sum_t s_t^2 / (n_t T^2)``: ``Q_t =
          sum a_i a_j`` over the pairs of template t (diagonal included)
          that share a name, ``H_t = sum w_i w_j`` over the same pairs over
          ``W_t^2``, ``Q_x`` the pairs of different templates sharing a name.
          The residuals around a template's mean lose about ``Var(m_t)`` per
          pair, ``E[e_i e_j] = cov_ij - Var(m_t)``, whatever the sharing (as
          in :func:`multiway_mean_variance`); without shared names ``Q_t /
          (1 - H_t)`` is exactly ``s_t^2 / (n_t T^2)``, so the term is 0.

    Returns
    -------
    SharedNameVariance

    Raises
    ------
    ValueError
        ``values`` of another length than the clusters, or a bad ``templates``.
    """
    v = np.asarray(values, dtype=float).ravel()
    total, df, pairs = _shared(v, clusters, templates)
    return SharedNameVariance(float(total), df, pairs)


@dataclass(frozen=True)
class SharedNameCovariance:
    """Result of :func:`shared_name_covariance` and :func:`multiway_mean_covariance`.

    Attributes
    ----------
    covariance : ndarray, shape (q, q)
        The covariance matrix (symmetric; not clipped to positive semi-definite: see :func:`psd_part`).
    df, n_pairs, correction
        As :class:`SharedNameVariance`.
    """

    covariance: np.ndarray
    df: float
    n_pairs: int
    correction: float = 1.0


def shared_name_covariance(values: Any, clusters: NameClusters, *, templates: str = "fixed") -> SharedNameCovariance:
    """The covariance matrix that names shared across matched sets add to the mean of a per-set vector.

    The matrix form of :func:`shared_name_variance` (one implementation: every ``a_i a_j`` there is the outer
    product ``a_i a_j'`` here, so for any vector ``c`` the quadratic form ``c' V c`` is
    :func:`shared_name_variance` of ``values @ c``), for Wald and Hotelling tests over several contrasts at once
    (:func:`fairpair.stats.stratified_k_test`).

    Parameters
    ----------
    values : array_like of float, shape (n, q)
        One vector per matched set (the k - 1 contrasts of a set's values); a row with NaN is left out.
    clusters : NameClusters
        From :func:`name_clusters` over the same sets.
    templates : {"random", "fixed"}, default "fixed"
        As :func:`shared_name_variance`.

    Returns
    -------
    SharedNameCovariance
        ``covariance`` (q, q), an unbiased estimate that may be indefinite: add it to the estimator's own
        covariance and take the :func:`psd_part` of the sum (Cameron, Gelbach & Miller 2011).

    Raises
    ------
    ValueError
        ``values`` not 2-D or of another length than the clusters, or a bad ``templates``.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 2:
        raise ValueError(f"values must be 2-D (sets x contrasts); got shape {v.shape}")
    total, df, pairs = _shared(v, clusters, templates)
    return SharedNameCovariance(np.asarray(total, dtype=float).reshape(v.shape[1], v.shape[1]), df, pairs)


def _rows_ok(v: np.ndarray) -> np.ndarray:
    return ~np.isnan(v) if v.ndim == 1 else ~np.isnan(v).any(axis=1)


def _col(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per-set ``x`` (n,) shaped to broadcast against ``v`` ((n,) or (n, q))."""
    return x if v.ndim == 1 else x[:, None]


def _shared(v: np.ndarray, clusters: NameClusters, templates: str) -> tuple[Any, float, int]:
    """:func:`shared_name_variance` for ``v`` of shape (n,) (a float) or (n, q) (a (q, q) matrix)."""
    if templates not in ("random", "fixed"):
        raise ValueError(f"templates must be 'random' or 'fixed'; got {templates!r}")
    if v.shape[0] != len(clusters):
        raise ValueError(f"values must have one value per set; got {v.shape[0]} for {len(clusters)} sets")
    ok = _rows_ok(v)
    nan = float("nan")
    zero = 0.0 if v.ndim == 1 else np.zeros((v.shape[1], v.shape[1]))
    if ok.sum() < 2:
        return zero + nan, nan, 0
    tmpl = clusters.template
    nt = np.bincount(tmpl[ok], minlength=int(tmpl.max()) + 1).astype(float)
    big_t = int((nt > 0).sum())
    sums = _sum_by(tmpl[ok], v[ok], nt.size)
    mean_t = np.divide(sums, _col(nt, v), out=np.zeros_like(sums), where=_col(nt, v) > 0)
    w = np.where(ok, 1.0 / (big_t * np.maximum(nt[tmpl], 1.0)), 0.0)
    a = np.where(_col(ok, v), _col(w, v) * (np.nan_to_num(v) - mean_t[tmpl]), 0.0)
    ind = ok.astype(float)
    mask = ok.tobytes()
    total: Any = zero
    if templates == "random":
        terms = clusters.beyond_sets if clusters.crossed else clusters.union

        def count_random() -> float:
            return sum(sign * (_offdiag(ind, r, c) - _offdiag(ind, rt, ct)) for sign, r, c, rt, ct, _tm in terms)

        for sign, rows, codes, rows_t, codes_t, _tm in terms:
            total = total + sign * (_offdiag(a, rows, codes) - _offdiag(a, rows_t, codes_t))
        pairs = clusters.cached(("random", mask), count_random)
    else:
        ss = _gram_by(tmpl[ok], v[ok] - mean_t[tmpl[ok]], nt.size)
        per_t = (-1,) + (1,) * (ss.ndim - 1)
        ntb = nt.reshape(per_t)
        s2 = np.divide(ss, ntb - 1, out=np.zeros_like(ss), where=ntb > 1)
        v_strat = np.divide(s2, ntb * big_t ** 2, out=np.zeros_like(s2), where=ntb > 0).sum(axis=0)

        def count_fixed() -> tuple[float, np.ndarray]:
            """Ordered pairs sharing a name, and per template H_t: sum of w_i w_j over its pairs sharing a name
            (diagonal included) over W_t^2."""
            n_pairs = 0.0
            within = np.bincount(tmpl, weights=w * w, minlength=nt.size)
            for sign, r, c, rt, ct, tm in clusters.union:
                n_pairs += sign * _offdiag(ind, r, c)
                within += sign * _offdiag_by(w, rt, ct, tm, nt.size)
            wt = np.bincount(tmpl, weights=w, minlength=nt.size)
            return n_pairs, np.divide(within, wt * wt, out=np.zeros_like(within), where=wt > 0)

        pairs, h_t = clusters.cached(("fixed", mask), count_fixed)
        q = _gram(a)
        q_t = _gram_by(tmpl, a, nt.size)
        for sign, rows, codes, rows_t, codes_t, tm in clusters.union:
            q = q + sign * _offdiag(a, rows, codes)
            q_t = q_t + sign * _offdiag_by(a, rows_t, codes_t, tm, nt.size)
        if not clusters.union:  # no name shared by two sets: exactly the stratified variance
            total = zero
        elif np.any(h_t >= 1.0):
            total = zero + nan
        else:
            total = (q_t / (1.0 - h_t).reshape(per_t)).sum(axis=0) + (q - q_t.sum(axis=0)) - v_strat
    return total, float(max(clusters.n_names - 1, 1)), int(round(pairs))


def multiway_mean_variance(values: Any, clusters: NameClusters) -> SharedNameVariance:
    """Variance of the mean of the template means with templates and every group's names as random factors.

    For designs whose name sets are not crossed with the templates (``clusters.crossed`` false: names
    drawn per request), where template x name-set cell means cannot tell the factors apart. The
    estimate is ``m = sum_i w_i v_i``, ``w_i = 1 / (T n_t)``; its variance the multiway cluster-robust
    sum of Cameron, Gelbach & Miller (2011, eq. 2.13) over the template and the name dimensions,
    ``Q = sum_{i, j share the template or a name} a_i a_j`` with ``a_i = w_i (v_i - m)``, divided by
    ``1 - H``, ``H = sum_{i, j share the template or a name} w_i w_j``. The divisor removes the
    bias of residuals taken around the estimated mean: ``E[(S_c - W_c m)^2] = Var(S_c) - W_c^2
    Var(m)`` when every value's covariance with the mean is about ``Var(m)``, and each dimension
    loses a share of the *whole* variance, not only of its own component (with 8 names a group and
    10 templates, CGM's per-dimension ``G / (G - 1)`` left 15-25% of the variance out in a check of
    Gaussian crossed effects). With one dimension of ``G`` equal clusters it is CGM's ``G / (G - 1)``
    (CR1). ``df`` is ``min(T, fewest names of a group) - 1``, as CGM recommend. NaN with fewer than
    two templates or values.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        One value per matched set; NaN is left out.
    clusters : NameClusters

    Returns
    -------
    SharedNameVariance
        ``variance`` the whole variance of the estimate (not an addition), ``df`` as above,
        ``n_pairs`` the ordered pairs ``i != j`` sharing the template or a name, ``correction``
        the divisor's inverse ``1 / (1 - H)``.

    Raises
    ------
    ValueError
        ``values`` of another length than the clusters.
    """
    total, df, pairs, correction = _multiway(np.asarray(values, dtype=float).ravel(), clusters)
    return SharedNameVariance(float(total), df, pairs, correction)


def multiway_mean_covariance(values: Any, clusters: NameClusters) -> SharedNameCovariance:
    """The matrix form of :func:`multiway_mean_variance` (the same sums with outer products ``a_i a_j'``): the
    covariance of the mean of the template means of a per-set vector, templates and every group's names random.

    Parameters
    ----------
    values : array_like of float, shape (n, q)
        One vector per matched set; a row with NaN is left out.
    clusters : NameClusters

    Returns
    -------
    SharedNameCovariance
        ``covariance`` (q, q) the whole covariance of the estimate (may be indefinite: :func:`psd_part`), ``df``
        ``min(T, fewest names of a group) - 1``, ``correction`` ``1 / (1 - H)``. NaN with fewer than two
        templates or values.

    Raises
    ------
    ValueError
        ``values`` not 2-D or of another length than the clusters.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 2:
        raise ValueError(f"values must be 2-D (sets x contrasts); got shape {v.shape}")
    total, df, pairs, correction = _multiway(v, clusters)
    return SharedNameCovariance(np.asarray(total, dtype=float).reshape(v.shape[1], v.shape[1]), df, pairs,
                                correction)


def _multiway(v: np.ndarray, clusters: NameClusters) -> tuple[Any, float, int, float]:
    """:func:`multiway_mean_variance` for ``v`` of shape (n,) (a float) or (n, q) (a (q, q) matrix)."""
    if v.shape[0] != len(clusters):
        raise ValueError(f"values must have one value per set; got {v.shape[0]} for {len(clusters)} sets")
    ok = _rows_ok(v)
    nan = float("nan")
    zero = 0.0 if v.ndim == 1 else np.zeros((v.shape[1], v.shape[1]))
    tmpl = clusters.template
    nt = np.bincount(tmpl[ok], minlength=int(tmpl.max()) + 1 if tmpl.size else 0).astype(float)
    big_t = int((nt > 0).sum())
    if big_t < 2 or int(ok.sum()) < 2:
        return zero + nan, nan, 0, 1.0
    w = np.where(ok, 1.0 / (big_t * np.maximum(nt[tmpl], 1.0)), 0.0)
    est = (_col(w, v) * np.nan_to_num(v)).sum(axis=0)
    a = np.where(_col(ok, v), _col(w, v) * (np.nan_to_num(v) - est), 0.0)

    def share(x: np.ndarray) -> Any:
        """``sum_{i, j share the template or a name} x_i x_j'`` (diagonal included)."""
        out = _gram(_sum_by(tmpl, x))
        for sign, rows, codes, rows_t, codes_t, _tm in clusters.union:  # a shared name, another template
            out = out + sign * (_offdiag(x, rows, codes) - _offdiag(x, rows_t, codes_t))
        return out

    h, pairs = clusters.cached(("multiway", ok.tobytes()),
                               lambda: (share(w), share(ok.astype(float)) - float(ok.sum())))
    correction = 1.0 / (1.0 - h) if h < 1.0 else nan
    df = float(min(big_t, clusters.n_names) - 1) if clusters.n_names > 1 else float(big_t - 1)
    return share(a) * correction, df, int(round(pairs)), correction
