"""Difference between two groups when stimuli (names) are crossed with scenarios (templates).

An audit shows the same names in every template and repeats each
template x name cell a few times. The answers are therefore not
independent: they share the template (scenario) and the name. Treating the
pairs as independent units ignores both, and the rate of false findings
climbs far above alpha (Clark 1973, "the language-as-fixed-effect fallacy";
Judd, Westfall & Kenny 2012). :func:`crossed_difference` gives the
difference between the groups' means with one t statistic whose standard
error counts templates (always a random factor) and, unless the names are
declared fixed, names (a random factor nested in groups); repetitions are
nested in template x name cells and enter through the cell means.

Model and estimator
-------------------
With ``m[t, n]`` the mean of the answers of name ``n`` (of group A or B) in
template ``t``, the estimate is ``D = mean_t D_t``, ``D_t = mean_{n in A}
m[t, n] - mean_{n in B} m[t, n]`` (the mean paired difference of a balanced
design). Under the crossed random-effects model ``m[t, n] = mu_g + a_t +
g_{t,g} + b_n + c_{t,n}`` (template, template x group, name and template x
name effects; the repetition error is part of ``c``), the method-of-moments
(ANOVA) estimator of ``Var(D)`` is::

    names random:  S_T^2 / T + sum_g max(0, S_{N,g}^2 - MS_{res,g} / T) / n_g
    names fixed:   S_T^2 / T

with ``S_T^2`` the sample variance of ``D_t`` over the ``T`` templates,
``S_{N,g}^2`` that of the name means ``M_n = mean_t m[t, n]`` over the
``n_g`` names of group ``g`` and ``MS_{res,g}`` the template x name
interaction mean square within group ``g``. ``E[S_{N,g}^2] = sigma^2_{N,g} +
sigma^2_{c,g} / T`` and ``E[MS_{res,g}] = sigma^2_{c,g}``, so each name term
is unbiased for ``sigma^2_{N,g} / n_g`` and, as usual for variance
components, a negative estimate is set to zero (so the names-random variance
is never below the names-fixed one).

"Sometimes pool": a truncated variance component is biased upwards when the
true name variance is 0 or tiny, which made names-random intervals cover
97-98.5% instead of 95% in ``benchmarks/sim_audits.py``. Following the
preliminary-test rule of Bancroft (1944) and Paull (1950) (pool a random
component into the error term when its F test is not significant at 0.25;
Hines 1996), the name component is set to 0 when the F test of names
within groups against the template x name interaction has ``p > 0.25``
(``pool``). In the simulation this brought coverage to 94-96.5% for name
variances from 0 to 0.1 of the latent variance (96.3-97% at exactly 0).

In a balanced design this is the
two-way cluster-robust variance ``V_T + V_N - V_TN`` of Cameron, Gelbach &
Miller (2011) with the small-sample form of the ANOVA estimator (Clark's
1973 quasi-F for one contrast). Degrees of freedom: Satterthwaite (1946) for
the linear combination of mean squares (``T - 1`` for names fixed, as
``scipy.stats.ttest_1samp`` on the ``D_t``). The interval ``D +/- t_df * SE``
and the two-sided p-value come from the same t statistic, so a p-value
below ``1 - level`` never sits beside an interval containing 0.

Equivalence (the ``pass`` rule)
-------------------------------
The ``1 - 2 alpha`` interval of the ``pass`` rule (Schuirmann's TOST) is
:meth:`CrossedDifferenceResult.equivalence_interval`: the hull of the t
interval above and of Hall's (1992) skewness-corrected t interval at the
same level, so a ``pass`` needs both to lie inside the margin. Hall's
transformation ``g(t) = t + l (t^2/3 + 1/6) + l^2 t^3 / 27``, with ``l`` the
estimated third cumulant of ``D`` in units of ``se^3``
(:attr:`CrossedDifferenceResult.skewness`, from the template differences),
removes the first-order skewness of the t; it is monotone with a
closed-form inverse. Why: for yes/no measures the template differences are
skewed (a template with a base rate near 1 shows both a smaller difference
and a smaller spread), so the t is too, its lower tail the heavier, and the
symmetric interval passed 6.45% (0.25) of audits whose true difference
equals the margin (``benchmarks/sim_audits.py``, independent yes/no
answers, 20 templates x 3 names x 5 repetitions, names fixed, 10,000
audits; goal at most alpha + 1 point). Candidates, on the same draws:
Hall's interval alone 6.06% (0.24) (and, used for every interval, false
fails up to 7.2% at 8 templates: rejected before); the hull 5.47% (0.23);
the hull with ``l`` shrunk by its sampling variance (positive-part,
``6/T^2``) 5.97% (0.24), too close to the goal to keep; the TOST on
arcsine-square-root cell means, with the margin mapped through the
transform at group B's rate, 2.51% (0.16) but ``pass`` at a true
difference of 0 fell from 81% to 43% (cell means of a few yes/no answers
sit at 0 or 1, where the transform stretches them). The hull can only
make ``pass`` rarer than the t interval, so no row's ``pass`` at the margin
rises; its price is power to pass (80.8% -> 77.1% on that row, 41% -> 30%
at 8 templates x 10 names random, rho 0.5; the table in
``benchmarks/HISTORY.md``). The ``1 - alpha`` interval, the p-values and
``fail`` keep the symmetric t. Both intervals contain the estimate, so
``pass`` and ``fail`` stay exclusive; on the side the skewness points to,
the equivalence interval can reach beyond the ``1 - alpha`` t interval
(then the data are too skewed for the symmetric interval to be trusted
there).

Unbalanced data: cell means use the answers that exist. Within each group,
an empty template x name cell is filled from the least-squares additive
template + name fit of that group's observed cells (Yates's missing-cell
method, solved directly); the interaction degrees of freedom count observed
cells only. With empty cells the name means are noisier than ``1/T`` of a
cell: ``E[S_{N,g}^2] = sigma^2_{N,g} + h_g sigma^2_{c,g}`` with ``h_g`` the
mean centred variance of the least-squares name effects (``tr(C^+)/(n_g -
1)``, ``C`` the reduced normal equations of the names; Searle 1987), so the
name term is ``max(0, S_{N,g}^2 - h_g MS_{res,g}) / n_g`` and the F tests use
``S_{N,g}^2 / h_g``. Subtracting ``MS_{res,g} / T`` instead left the name
term biased upwards: with one repetition and 15% of the answers (so of the
cells) missing, 95% intervals covered 96.9% instead of 95%
(``benchmarks/sim_audits.py``). Templates where a group has no answer at
all are dropped.

Bounded measures (``kurtosis``): yes/no and 1-5 measures near a bound (1%
events, ceiling scores with ~95% fives) have heavy-tailed template
differences whose sample variance (and name means' variance) is far noisier
than the chi-square behind Satterthwaite's df; :func:`crossed_from_cells`
then counts each mean square with the df of its kurtosis (:func:`_kurtosis_df`),
which took the 95% interval's coverage from 92.6-94.0% to 93.9-94.7% on those
rows of ``benchmarks/sim_audits.py`` (1000 audits a truth; ``benchmarks/HISTORY.md``). The pass rule
of these measures hulls the t with an interval on the logit scale (:mod:`fairpair.stats._bounded`).

Calibration: ``benchmarks/sim_audits.py`` simulates whole audits (independent
answers, correlated repetitions, template x group bias, name effects, 3-20
templates, 3 and 10 names per group, binary, count and 1-5 measures, 15%
missing answers) through the analysis; the table in ``benchmarks/HISTORY.md``
shows the level and coverage this estimator reaches and the designs for which
fairpair declares ``insufficient design`` instead.

References
----------
Clark, H. H. (1973). The language-as-fixed-effect fallacy. *Journal of
Verbal Learning and Verbal Behavior*, 12, 335-359.
Bancroft, T. A. (1944). On biases in estimation due to the use of
preliminary tests of significance. *Annals of Mathematical Statistics*,
15, 190-204.
Paull, A. E. (1950). On a preliminary test for pooling mean squares in the
analysis of variance. *Annals of Mathematical Statistics*, 21, 539-556.
Hines, W. G. S. (1996). Pragmatics of pooling in ANOVA tables. *The
American Statistician*, 50, 127-139.
Searle, S. R. (1987). *Linear Models for Unbalanced Data*. Wiley (ch. 4,
the two-way additive model with missing cells).
Hall, P. (1992). On the removal of skewness by transformation. *Journal
of the Royal Statistical Society B*, 54, 221-228.
Schuirmann, D. J. (1987). A comparison of the two one-sided tests
procedure and the power approach for assessing the equivalence of average
bioavailability. *J. Pharmacokinetics and Biopharmaceutics*, 15, 657-680.
Satterthwaite, F. E. (1946). An approximate distribution of estimates of
variance components. *Biometrics Bulletin*, 2, 110-114.
Box, G. E. P. & Andersen, S. L. (1955). Permutation theory in the derivation
of robust criteria and the study of departures from assumption. *JRSS B*,
17, 1-34.
Anscombe, F. J. & Glynn, W. J. (1983). Distribution of the kurtosis statistic b2 for normal
samples. *Biometrika*, 70, 227-234.
Cramer, H. (1946). *Mathematical Methods of Statistics*. Princeton (sec.
27.4, the variance of a sample variance).
Cameron, A. C., Gelbach, J. B., & Miller, D. L. (2011). Robust inference
with multiway clustering. *Journal of Business & Economic Statistics*, 29,
238-249.
Judd, C. M., Westfall, J., & Kenny, D. A. (2012). Treating stimuli as a
random factor in social psychology. *JPSP*, 103, 54-69.
Westfall, J., Kenny, D. A., & Judd, C. M. (2014). Statistical power and
optimal design in experiments in which samples of participants respond to
samples of stimuli. *JEP: General*, 143, 2020-2045.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special, stats

from fairpair.stats._common import ConfidenceInterval, as_labels, check_choice, check_level

__all__ = ["CrossedDifferenceResult", "CrossedFResult", "crossed_difference", "crossed_omnibus",
           "names_heterogeneity", "cell_matrix"]

NAMES = ("random", "fixed")
#: Preliminary-test level of the "sometimes pool" rule for the name component (Bancroft 1944; Paull 1950).
POOL = 0.25
#: Fewest values whose sample variance gets the kurtosis-corrected df (:func:`_kurtosis_df`): the validity
#: limit of Anscombe & Glynn's kurtosis test in :func:`scipy.stats.kurtosistest`.
KURTOSIS_MIN = 20


def cell_matrix(values: Any, template: Any, name: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Cell means ``m[t, n]`` of ``values`` (NaN dropped) and answer counts; empty cells are NaN.

    Returns ``(means, counts, template_labels, name_labels)`` with means
    and counts of shape ``(n_templates, n_names)``.
    """
    v = np.asarray(values, dtype=float).ravel()
    tl, tc = as_labels(template, "template", v.size)
    nl, nc = as_labels(name, "name", v.size)
    ok = ~np.isnan(v)
    T, N = len(tl), len(nl)
    flat = tc[ok] * N + nc[ok]
    cnt = np.bincount(flat, minlength=T * N).reshape(T, N).astype(float)
    tot = np.bincount(flat, weights=v[ok], minlength=T * N).reshape(T, N)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(cnt > 0, tot / np.where(cnt > 0, cnt, 1.0), np.nan)
    return means, cnt, np.asarray(tl, dtype=object), np.asarray(nl, dtype=object)


def _additive_fill(x: np.ndarray) -> tuple[np.ndarray, int, float]:
    """Fill NaN cells of ``x`` (T x n) from the least-squares additive template + name fit of the observed cells.

    Returns ``(filled, observed cells, h)``: the filled table, whose row
    and column means are the least-squares template and name effects (plus
    the grand mean), so the sums of squares of the filled table are those of
    the unbalanced additive model (Yates's missing-cell method, solved
    directly instead of by iteration); and ``h`` with ``E[S_N^2] = sigma_N^2
    + h sigma_c^2`` for the sample variance ``S_N^2`` of its column means
    (``1 / T`` when no cell is empty). The name effects solve the reduced
    normal equations ``C c = q`` with ``C = diag(k) - N' diag(1/r) N``
    (``N`` the 0/1 incidence of observed cells, ``r`` / ``k`` its row and
    column counts) and have covariance ``sigma_c^2 C^+``, whose centred mean
    variance is ``tr(C^+) / (n - 1)`` (Searle 1987, *Linear Models for
    Unbalanced Data*, ch. 4). Rows without an observed cell are left NaN.
    """
    obs = ~np.isnan(x)
    n_obs = int(obs.sum())
    t, n = x.shape
    if obs.all() or n_obs == 0:
        return x, n_obs, (1.0 / t if t else np.nan)
    inc = obs.astype(float)
    r = inc.sum(axis=1)
    k = inc.sum(axis=0)
    xz = np.where(obs, x, 0.0)
    row_tot, col_tot = xz.sum(axis=1), xz.sum(axis=0)
    live = r > 0
    w = inc[live] / r[live, None]
    q = col_tot - w.T @ row_tot[live]
    if n <= 2 * int(live.sum()) + 10:  # few names: the n x n eigendecomposition is cheap
        cmat = np.diag(k) - inc[live].T @ w
        ev, vec = np.linalg.eigh(cmat)  # Moore-Penrose inverse of the symmetric C, rounding-level eigenvalues as 0
        keep = ev > 1e-9 * max(1.0, float(np.abs(ev).max()))
        cinv = (vec[:, keep] / ev[keep]) @ vec[:, keep].T
        c = cinv @ q
        trace, identified = float(np.trace(cinv)), bool(keep.any())
    else:
        c, trace, identified = _names_low_rank(inc[live], r[live], k, q)
    rows = np.full(t, np.nan)
    rows[live] = (row_tot[live] - inc[live] @ c) / r[live]
    filled = np.where(obs, x, rows[:, None] + c[None, :])
    # no name contrast estimable (e.g. each template shows one name): the name variance is not identified
    h = float(trace / (n - 1)) if n > 1 and identified else np.nan
    return filled, n_obs, h


def _names_low_rank(inc: np.ndarray, r: np.ndarray, k: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, float, bool]:
    """``C^+ q`` and ``tr(C^+)`` of ``C = diag(k) - N' diag(1/r) N`` without forming the n x n ``C``.

    For many names and few templates (a name set per request, as in a ranking audit): ``C`` is
    ``diag(k)`` minus a rank-T term, and its null space is spanned by the indicators ``1_c`` of the
    names of each connected component of the template-name graph. ``M = C + a sum_c 1_c 1_c'`` is
    then invertible, ``M^-1 = C^+ + sum_c 1_c 1_c' / (a n_c^2)``, and ``M^-1`` follows from the
    Woodbury identity with a (T + m) x (T + m) solve: O(n T^2) time and O(n T) memory instead of
    the O(n^3) eigendecomposition. Names without an observed cell get ``c = 0`` (as with the
    pseudo-inverse). Returns ``(c, tr(C^+), whether any name contrast is estimable)``.
    """
    from scipy.sparse.csgraph import connected_components

    t, n = inc.shape
    seen = k > 0
    c = np.zeros(n)
    ni = int(seen.sum())
    if ni == 0:
        return c, 0.0, False
    sub = inc[:, seen]
    ks = k[seen]
    _m, label = connected_components(_bipartite(sub), directed=False)
    comp = label[t:]
    comps, comp_idx = np.unique(comp, return_inverse=True)
    m = comps.size
    sizes = np.bincount(comp_idx, minlength=m).astype(float)
    a = float(ks.mean())
    ind = np.zeros((ni, m))
    ind[np.arange(ni), comp_idx] = 1.0
    b = np.hstack([sub.T / np.sqrt(r)[None, :], np.sqrt(a) * ind])  # M = D - U U' + V V' = D + B S B'
    sgn = np.concatenate([-np.ones(t), np.ones(m)])
    dinv = 1.0 / ks
    bd = b * dinv[:, None]  # D^-1 B
    kmat = np.diag(sgn) + b.T @ bd  # S^-1 + B' D^-1 B (S = S^-1: +-1 on the diagonal)
    kinv = np.linalg.pinv(kmat)
    qs = q[seen]
    c[seen] = dinv * qs - bd @ (kinv @ (bd.T @ qs))
    trace_m = float(dinv.sum() - np.einsum("ij,ji->", kinv, bd.T @ bd))
    trace = trace_m - float(np.sum(1.0 / (a * sizes)))
    return c, trace, ni > m


def _bipartite(sub: np.ndarray) -> Any:
    """The template-name graph of a (T, n) 0/1 incidence, as a sparse (T + n) square adjacency."""
    from scipy.sparse import coo_matrix

    t, n = sub.shape
    i, j = np.nonzero(sub)
    rows = np.concatenate([i, t + j])
    cols = np.concatenate([t + j, i])
    return coo_matrix((np.ones(rows.size), (rows, cols)), shape=(t + n, t + n)).tocsr()


@dataclass(frozen=True)
class _Group:
    n: int  # names with answers
    s2_names: float  # sample variance of name means
    ms_res: float  # template x name interaction mean square
    df_res: int
    h: float = float("nan")  # E[s2_names] = sigma^2_N + h * sigma^2_c (h = 1/T when no cell is empty)
    df_names: float = float("nan")  # df of s2_names allowing for the name means' kurtosis (:func:`_kurtosis_df`)


def _group_stats(x: np.ndarray) -> tuple[np.ndarray, _Group]:
    """Row means (per template) and the ANOVA pieces of one group's T x n cell means (NaN = empty)."""
    filled, n_obs, h = _additive_fill(x)
    t, n = filled.shape
    rows = filled.mean(axis=1)
    cols = filled.mean(axis=0)
    s2 = float(cols.var(ddof=1)) if n > 1 else np.nan
    df_res = n_obs - t - n + 1
    if n > 1 and t > 1 and df_res > 0:
        r = filled - rows[:, None] - cols[None, :] + filled.mean()
        ms = float((r ** 2).sum() / df_res)
    else:
        ms = np.nan
    h = h if n > 1 else np.nan
    return rows, _Group(n, s2, ms, max(df_res, 0), h, _kurtosis_df(cols) if n > 1 else np.nan)


@dataclass(frozen=True)
class CrossedDifferenceResult:
    """Result of :func:`crossed_difference`.

    Attributes
    ----------
    estimate : float
        ``D``, mean over templates of (mean of group A's names - mean of
        group B's names), in the measure's units (a risk difference for 0/1).
    statistic : float
        ``estimate / se``; NaN when ``se`` is 0 or undefined.
    pvalue : float
        Two-sided, Student t with ``df``; NaN when undefined.
    df : float
        Satterthwaite degrees of freedom (``T - 1`` with names fixed).
    se : float
        Standard error of ``estimate``.
    names : {"random", "fixed"}
        The estimand: generalise to other names of the groups, or to these names.
    n_templates : int
        Templates with answers from both groups.
    n_names_a, n_names_b : int
        Names (variants) with answers, per group.
    n_values : int
        Answers used (non-NaN).
    variance_components : dict of str to float
        Contributions to ``se**2``: ``templates`` (``S_T^2 / T``),
        ``names_a`` and ``names_b`` (the truncated name terms; 0 with names
        fixed).
    mean_squares : dict of str to float
        ``s2_templates`` (``S_T^2``), ``s2_names_a``/``_b`` (``S_{N,g}^2``),
        ``ms_interaction_a``/``_b`` (``MS_{res,g}``).
    template_differences : ndarray, shape (n_templates,)
        ``D_t``.
    mean_a, mean_b : float
        Mean over templates of each group's name-averaged cell means
        (``estimate = mean_a - mean_b``).
    method : str
    note : str or None
        Why a quantity is undefined, or that a name component was truncated.
    skewness : float
        ``k3(D_t) / T^2 / se^3``: the estimated third cumulant of
        ``estimate`` (``k3(D_t)`` the unbiased k-statistic of the template
        differences, :func:`scipy.stats.kstat`) in units of ``se^3``; with
        names fixed ``gamma / sqrt(T)``, ``gamma`` the sample skewness of the
        ``D_t``. NaN with fewer than 3 templates or no variance. Used by
        :meth:`equivalence_interval`.
    """

    estimate: float
    statistic: float
    pvalue: float
    df: float
    se: float
    names: str
    n_templates: int
    n_names_a: int
    n_names_b: int
    n_values: int
    variance_components: dict = field(repr=False)
    mean_squares: dict = field(repr=False)
    template_differences: np.ndarray = field(repr=False)
    mean_a: float = float("nan")
    mean_b: float = float("nan")
    method: str = ""
    note: str | None = None
    skewness: float = float("nan")

    def skew_corrected_interval(self, confidence_level: float = 0.90, *,
                                bounds: tuple[float, float] | None = None) -> ConfidenceInterval:
        """Hall's (1992) skewness-corrected t interval: invert ``g(t) = t + l (t^2/3 + 1/6) + l^2 t^3 / 27``.

        ``l`` is :attr:`skewness`; ``g`` is monotone and its inverse
        closed-form, ``g^-1(z) = 3/l [cbrt(1 + l (z - l/6)) - 1]``, so the
        interval is ``(estimate - se g^-1(q), estimate - se g^-1(-q))`` with
        ``q = t_df((1 + level)/2)``. Equal to :meth:`confidence_interval`
        when ``l`` is 0 or undefined; NaN limits when that one is.
        """
        level = check_level(confidence_level)
        base = self.confidence_interval(level, bounds=bounds)
        lam = self.skewness
        if not (np.isfinite(base.low) and np.isfinite(lam)) or lam == 0:
            return base
        q = float(special.stdtrit(self.df, 0.5 + level / 2.0))
        # 3/l (c - 1) with c = cbrt(1 + x), x = l (z - l/6), written 3 (z - l/6) / (c^2 + c + 1): no
        # cancellation when l is tiny
        inv = []
        for z in (q, -q):
            c = float(np.cbrt(1.0 + lam * (z - lam / 6.0)))
            inv.append(3.0 * (z - lam / 6.0) / (c * c + c + 1.0))
        lo, hi = self.estimate - self.se * inv[0], self.estimate - self.se * inv[1]
        if bounds is not None:
            lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
        return ConfidenceInterval(float(lo), float(hi), level, f"{self.method}; Hall (1992) skewness correction")

    def equivalence_interval(self, confidence_level: float = 0.90, *,
                             bounds: tuple[float, float] | None = None) -> ConfidenceInterval:
        """The interval of the ``pass`` rule: the hull of :meth:`confidence_interval` and
        :meth:`skew_corrected_interval` at ``confidence_level`` (see the module notes, "Equivalence").

        Never narrower than the t interval on either side, so a ``pass`` needs both the symmetric t and
        the skewness-corrected t to put the interval inside the margin.
        """
        base = self.confidence_interval(confidence_level, bounds=bounds)
        hall = self.skew_corrected_interval(confidence_level, bounds=bounds)
        if not (np.isfinite(base.low) and np.isfinite(hall.low)) or hall.method == base.method:
            return base
        return ConfidenceInterval(min(base.low, hall.low), max(base.high, hall.high), base.confidence_level,
                                  f"{self.method}; hull with the Hall (1992) skewness-corrected t")

    def confidence_interval(self, confidence_level: float = 0.95, *, bounds: tuple[float, float] | None = None
                            ) -> ConfidenceInterval:
        """``estimate +/- t_{df}((1 + level) / 2) * se``; NaN limits when undefined.

        ``bounds`` clips the limits (e.g. ``(-1, 1)`` for a risk difference).
        """
        level = check_level(confidence_level)
        if not (np.isfinite(self.se) and np.isfinite(self.df) and self.df > 0 and self.se > 0):
            return ConfidenceInterval(np.nan, np.nan, level, self.method)
        q = float(special.stdtrit(self.df, 0.5 + level / 2.0)) * self.se
        lo, hi = self.estimate - q, self.estimate + q
        if bounds is not None:
            lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
        return ConfidenceInterval(float(lo), float(hi), level, self.method)


def _satterthwaite(terms: list[tuple[float, float, float]]) -> float:
    """df of ``sum c * ms`` from ``(c, ms, df)`` terms (Satterthwaite 1946)."""
    total = sum(c * ms for c, ms, _ in terms)
    den = sum((c * ms) ** 2 / d for c, ms, d in terms if d > 0)
    if not (total > 0 and den > 0):
        return np.nan
    return float(total ** 2 / den)


def group_names(group: Any, name: Any, n: int, groups: tuple[Any, Any] | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Name codes of ``n`` answers and, per name code, whether the name belongs to group A.

    ``group`` must hold exactly two labels; ``groups`` says which is A (default: the first in sorted
    order). Raises ``ValueError`` otherwise, or when a name appears in both groups.
    """
    gl, gc = as_labels(group, "group", n)
    if groups is not None:
        order = [list(gl).index(g) if g in list(gl) else -1 for g in groups]
        if -1 in order or len(set(order)) != 2:
            raise ValueError(f"groups {groups!r} must be two distinct labels present in group")
    if len(gl) != 2:
        raise ValueError(f"group must hold exactly two labels; got {len(gl)}")
    is_a = gc == (order[0] if groups is not None else 0)
    nl, nc = as_labels(name, "name", n)
    ga = np.bincount(nc, weights=is_a.astype(float), minlength=len(nl))
    gt = np.bincount(nc, minlength=len(nl))
    if np.any((ga > 0) & (ga < gt)):
        bad = [str(nl[i]) for i in np.nonzero((ga > 0) & (ga < gt))[0]]
        raise ValueError(f"a name must belong to one group; in both: {bad[:5]}")
    return nc, ga > 0


def crossed_difference(values: Any, template: Any, name: Any, group: Any, *, groups: tuple[Any, Any] | None = None,
                       names: str = "random", pool: float | None = POOL) -> CrossedDifferenceResult:
    """Difference of two groups' means with templates and names as random factors.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        One answer's measure each (0/1 for yes/no measures: the result is a
        risk difference); NaN for a missing answer (left out).
    template : array_like, shape (n,)
        Template (scenario) of each answer; random factor.
    name : array_like, shape (n,)
        Name (variant of the protected attribute) of each answer; a name
        belongs to one group. Random factor nested in group with
        ``names="random"``, fixed with ``names="fixed"``.
    group : array_like, shape (n,)
        Group of each answer; exactly two distinct labels.
    groups : (a, b), optional
        Which label is group A (the difference is ``A - B``); default the
        two labels in sorted order.
    names : {"random", "fixed"}, default "random"
        The estimand: ``"random"`` generalises to other names of these
        groups and other templates like these; ``"fixed"`` to these names in
        other templates like these.

    Returns
    -------
    CrossedDifferenceResult
        See the module notes for the estimator (method of moments on the
        crossed random-effects model, Satterthwaite df). Undefined
        quantities (one template, one name per group with names random, no
        variance) are NaN with a ``note``; this function never raises on
        such data.

    Raises
    ------
    ValueError
        Mismatched lengths, a bad ``names``, not exactly two groups, or a
        name that appears in both groups.

    References
    ----------
    Clark (1973); Satterthwaite (1946); Cameron, Gelbach & Miller (2011);
    Judd, Westfall & Kenny (2012): see :mod:`fairpair.stats._crossed`.
    """
    check_choice("names", names, NAMES)
    v = np.asarray(values, dtype=float).ravel()
    nc, in_a = group_names(group, name, v.size, groups)
    means, _cnt, _tl, _nl = cell_matrix(v, template, nc)
    name_in_a = in_a[: means.shape[1]]
    return crossed_from_cells(means[:, name_in_a], means[:, ~name_in_a], names=names,
                              n_values=int((~np.isnan(v)).sum()), pool=pool)


def _pretest(groups: list[_Group], t: int) -> float:
    """p-value of the pooled F test of names within groups (:func:`names_heterogeneity` on the pieces)."""
    df_n = sum(g.n - 1 for g in groups)
    df_r = sum(g.df_res for g in groups if np.isfinite(g.ms_res))
    if df_n <= 0 or df_r <= 0:
        return float("nan")
    num = sum(g.s2_names / g.h * (g.n - 1) for g in groups) / df_n
    den = sum(g.ms_res * g.df_res for g in groups if np.isfinite(g.ms_res)) / df_r
    if not den > 0:
        return float("nan")
    return float(special.fdtrc(df_n, df_r, num / den))


def crossed_from_cells(cells_a: np.ndarray, cells_b: np.ndarray, *, names: str = "random",
                       n_values: int | None = None, pool: float | None = POOL,
                       names_from: CrossedDifferenceResult | None = None,
                       kurtosis: bool = False) -> CrossedDifferenceResult:
    """:func:`crossed_difference` from cell means: arrays (T, n_a) and (T, n_b), NaN for empty cells.

    ``names_from``: take the name components (names random) from another inference of the same
    design instead of these cells (each entering Satterthwaite's df through that inference's own mean
    squares, ``S_N^2 / n_g`` with ``n_g - 1`` df minus ``h MS_res / n_g`` with the interaction's df):
    the prediction-powered values of :mod:`fairpair.stats._ppi`, whose labelled-sample noise makes
    their own name components noisy and, truncated at 0, biased upwards (20% too wide at 50 labels
    in ``benchmarks/sim_labels.py``), take them from the judge's scores of every answer.

    ``kurtosis``: Satterthwaite's df count the template term ``S_T^2`` with the df of a sample variance of
    the ``D_t``'s kurtosis and each name term ``S_{N,g}^2`` with that of its name means'
    (:func:`_kurtosis_df`) instead of ``T - 1`` and ``n_g - 1``. For bounded measures (yes/no, 1-5
    scores; :mod:`fairpair.analysis._paired`): near a bound the ``D_t`` are heavy-tailed (a template with
    a cluster of events or of non-fives), ``S_T^2`` varied about 2.5 times as much as a chi-square with
    ``T - 1`` df (``benchmarks/HISTORY.md``, issue 30) and the 95% interval covered 92.3-93.5%.
    Estimate and standard error are unchanged.
    """
    check_choice("names", names, NAMES)
    method = f"crossed random effects (templates, names {names}), method of moments, Satterthwaite df"
    a = np.asarray(cells_a, dtype=float)
    b = np.asarray(cells_b, dtype=float)
    a = a[:, ~np.isnan(a).all(axis=0)] if a.size else a
    b = b[:, ~np.isnan(b).all(axis=0)] if b.size else b
    keep = ~(np.isnan(a).all(axis=1) | np.isnan(b).all(axis=1)) if a.size and b.size else np.zeros(0, bool)
    a, b = a[keep], b[keep]
    a = a[:, ~np.isnan(a).all(axis=0)]
    b = b[:, ~np.isnan(b).all(axis=0)]
    t = int(keep.sum())
    nan = float("nan")
    if n_values is None:
        n_values = int((~np.isnan(a)).sum() + (~np.isnan(b)).sum())
    empty = CrossedDifferenceResult(nan, nan, nan, nan, nan, names, t, a.shape[1] if t else 0,
                                    b.shape[1] if t else 0, n_values, {}, {}, np.zeros(0), nan, nan, method)
    if t == 0:
        return _with(empty, note="no template has answers from both groups")
    rows_a, sa = _group_stats(a)
    rows_b, sb = _group_stats(b)
    d_t = rows_a - rows_b
    est = float(d_t.mean())
    notes: list[str] = []
    s2t = float(d_t.var(ddof=1)) if t > 1 else nan
    ms = {"s2_templates": s2t, "s2_names_a": sa.s2_names, "s2_names_b": sb.s2_names,
          "ms_interaction_a": sa.ms_res, "ms_interaction_b": sb.ms_res,
          "df_interaction_a": float(sa.df_res), "df_interaction_b": float(sb.df_res),
          "h_names_a": sa.h, "h_names_b": sb.h}
    comp = {"templates": s2t / t if t > 1 else nan, "names_a": 0.0, "names_b": 0.0}
    terms = [(1.0 / t, s2t, _kurtosis_df(d_t) if kurtosis else t - 1.0)] if t > 1 else []
    if t < 2:
        notes.append("one template: the template variance cannot be estimated")
    ms["names_pretest_pvalue"] = nan
    if names == "random":
        one = [key for key, g in (("A", sa), ("B", sb)) if g.n < 2]
        for key in one:
            comp[f"names_{key.lower()}"] = nan
            notes.append(f"group {key} has one name: the name variance cannot be estimated")
        pooled = False
        if names_from is not None and not one:
            for key in ("a", "b"):
                val = names_from.variance_components.get(f"names_{key}", nan)
                comp[f"names_{key}"] = float(val) if np.isfinite(val) else nan
                if np.isfinite(val) and val > 0:
                    terms += _names_terms(names_from, key, float(val))
            ms["names_pretest_pvalue"] = names_from.mean_squares.get("names_pretest_pvalue", nan)
            pooled = True  # nothing more to estimate here
        elif not one and pool is not None and t > 1:
            pre = _pretest([sa, sb], t)
            ms["names_pretest_pvalue"] = pre
            if np.isfinite(pre) and pre > pool:
                pooled = True
                notes.append(f"no evidence of name effects (preliminary F test p = {pre:.2g} > {pool:g}): "
                             "the name component is pooled into the template term")
        for key, g in (("a", sa), ("b", sb)):
            if pooled or g.n < 2 or names_from is not None:
                continue
            if not np.isfinite(g.h):
                comp[f"names_{key}"] = nan
                notes.append(f"group {key.upper()}'s names cannot be told apart from the templates (no template "
                             "shows two of its names): the name variance cannot be estimated")
                continue
            ms_res = g.ms_res if np.isfinite(g.ms_res) else 0.0
            val = (g.s2_names - ms_res * g.h) / g.n
            if val > 0:
                comp[f"names_{key}"] = float(val)
                terms.append((1.0 / g.n, g.s2_names, g.df_names if kurtosis else g.n - 1.0))
                if g.df_res > 0 and np.isfinite(g.ms_res):
                    terms.append((-g.h / g.n, g.ms_res, float(g.df_res)))
            else:
                notes.append(f"group {key.upper()}'s name variance estimate is negative: set to 0")
    var = sum(comp.values())
    se = float(np.sqrt(var)) if np.isfinite(var) and var >= 0 else nan
    df = _satterthwaite(terms) if np.isfinite(var) else nan
    if np.isfinite(var) and var == 0:
        notes.append("no variance between templates or names: the standard error is 0")
    if np.isfinite(se) and se > 0 and np.isfinite(df):
        stat = est / se
        p = float(2.0 * special.stdtr(df, -abs(stat)))
    else:
        stat = p = nan
    lam = nan
    if t >= 3 and np.isfinite(se) and se > 0:
        lam = float(stats.kstat(d_t, 3)) / t ** 2 / se ** 3  # k3 of the mean of T templates over se^3
    return CrossedDifferenceResult(est, float(stat), p, float(df), se, names, t, sa.n, sb.n, n_values, comp, ms,
                                   d_t, float(rows_a.mean()), float(rows_b.mean()), method, "; ".join(notes) or None,
                                   lam)


def _kurtosis_df(x: np.ndarray) -> float:
    """Degrees of freedom of the sample variance of ``x`` (shape (n,)) allowing for its kurtosis.

    ``Var(S^2) = sigma^4 (2 / (n - 1) + kappa / n)`` for excess kurtosis ``kappa`` (Cramer 1946, sec.
    27.4), so the scaled chi-square with the same two moments (Satterthwaite's principle; Box & Andersen
    1955 for the F test) has ``nu = (n - 1) / (1 + kappa (n - 1) / (2 n))`` df. ``kappa`` is the sample's
    ``G2 = k4 / k2^2`` (Fisher's k-statistics, :func:`scipy.stats.kstat`; scipy's ``kurtosis(bias=False)``),
    at least 0 so ``nu`` never exceeds ``n - 1``; ``n - 1`` with no variance.

    "Sometimes correct", as the name component is "sometimes pooled" (:data:`POOL`): ``n - 1`` unless
    Anscombe & Glynn's (1983) test of excess kurtosis (:func:`scipy.stats.kurtosistest`, one-sided)
    has ``p <= POOL``, and ``n - 1`` below :data:`KURTOSIS_MIN` values, where that test is not valid
    (scipy's note) and ``G2`` is too noisy to act on (SD 1.5 at n = 8 under normality): an answer
    status with 8 templates, 22 of 48 answers empty against none, had its df cut from 7 to 2.9.
    """
    d_t = np.asarray(x, dtype=float)
    t = d_t.size
    k2 = float(stats.kstat(d_t, 2)) if t >= KURTOSIS_MIN else 0.0
    if not k2 > 0:
        return t - 1.0
    if not stats.kurtosistest(d_t, alternative="greater").pvalue <= POOL:
        return t - 1.0
    kappa = max(float(stats.kstat(d_t, 4)) / k2 ** 2, 0.0)
    return (t - 1.0) / (1.0 + kappa * (t - 1.0) / (2.0 * t))


def _names_terms(src: CrossedDifferenceResult, key: str, val: float) -> list[tuple[float, float, float]]:
    """Satterthwaite's ``(c, ms, df)`` terms of group ``key``'s name component ``val`` as ``src`` estimated
    it, ``S_N^2 / n - h MS_res / n``: a component taken from another inference keeps the sampling
    variability of its own mean squares (a single ``(val, n - 1)`` term overstates the df of a difference
    of mean squares; in ``benchmarks/sim_labels.py`` it gave df 19-21 where the t statistics' spread
    showed 14-18, and 5.5-5.7% false fails)."""
    n = float(src.n_names_a if key == "a" else src.n_names_b)
    ms = src.mean_squares
    s2, ms_res = ms.get(f"s2_names_{key}", np.nan), ms.get(f"ms_interaction_{key}", np.nan)
    h, df_res = ms.get(f"h_names_{key}", np.nan), ms.get(f"df_interaction_{key}", 0.0)
    if not (np.isfinite(s2) and n > 1):
        return [(1.0, val, n - 1.0)]
    terms = [(1.0 / n, float(s2), n - 1.0)]
    if np.isfinite(ms_res) and np.isfinite(h) and df_res > 0:
        terms.append((-h / n, float(ms_res), float(df_res)))
    return terms


def _with(r: CrossedDifferenceResult, **kw) -> CrossedDifferenceResult:
    from dataclasses import replace

    return replace(r, **kw)


@dataclass(frozen=True)
class CrossedFResult:
    """An F (or quasi-F) test on template x name cell means (:func:`crossed_omnibus`, :func:`names_heterogeneity`).

    Attributes
    ----------
    statistic : float
    pvalue : float
        Upper tail of F(``df_num``, ``df_den``); NaN when undefined.
    df_num, df_den : float
        Degrees of freedom (Satterthwaite for a quasi-F).
    method : str
    note : str or None
    """

    statistic: float
    pvalue: float
    df_num: float
    df_den: float
    method: str
    note: str | None = None


def _f(num: float, den: float, d1: float, d2: float, method: str, note: str | None = None) -> CrossedFResult:
    if not (np.isfinite(num) and np.isfinite(den) and den > 0 and d1 > 0 and d2 > 0):
        why = "no variance in the error term" if np.isfinite(den) and den == 0 else "too few templates or names"
        return CrossedFResult(np.nan, np.nan, d1, d2, method, note or why)
    f = num / den
    return CrossedFResult(float(f), float(special.fdtrc(d1, d2, f)), float(d1), float(d2), method, note)


def crossed_omnibus(cells: list[np.ndarray], *, names: str = "random") -> CrossedFResult:
    """Test that k >= 2 groups share one mean, templates (and names) random.

    Parameters
    ----------
    cells : list of ndarray, each shape (T, n_g)
        Cell means of each group's names in the same T templates (NaN =
        empty; filled as in :func:`crossed_difference`).
    names : {"random", "fixed"}

    Returns
    -------
    CrossedFResult
        Names fixed: ``F = MS_G / MS_GxT`` on the template x group means,
        df ``(k - 1, (k - 1)(T - 1))`` (the mixed two-way ANOVA with
        templates random). Names random: Clark's (1973) quasi-F ``F' =
        (MS_G + MS_TxN(G)) / (MS_GxT + MS_N(G))`` with Satterthwaite df for
        numerator and denominator; unequal numbers of names per group use
        their harmonic mean (unweighted-means analysis). Templates where a
        group has no answer are dropped.

    References
    ----------
    Clark (1973); Satterthwaite (1946); Winer, Brown & Michels (1991),
    *Statistical Principles in Experimental Design*, 3rd ed., ch. 5 (quasi-F).
    """
    check_choice("names", names, NAMES)
    k = len(cells)
    if k < 2:
        raise ValueError("crossed_omnibus needs at least two groups")
    cl = [np.asarray(c, dtype=float) for c in cells]
    keep = np.ones(cl[0].shape[0], dtype=bool)
    for c in cl:
        keep &= ~np.isnan(c).all(axis=1)
    cl = [c[keep][:, ~np.isnan(c[keep]).all(axis=0)] for c in cl]
    t = int(keep.sum())
    method = ("quasi-F (Clark 1973), templates and names random" if names == "random"
              else "F (group vs group x template), templates random")
    if t < 2 or any(c.shape[1] < 1 for c in cl):
        return CrossedFResult(np.nan, np.nan, k - 1.0, np.nan, method, "too few templates")
    parts = [_group_stats(c) for c in cl]
    g_tm = np.column_stack([p[0] for p in parts])  # T x k template x group means
    nh = float(k / sum(1.0 / p[1].n for p in parts))
    gm = g_tm.mean(axis=0)
    ms_g = t * float(((gm - gm.mean()) ** 2).sum()) / (k - 1)
    inter = g_tm - g_tm.mean(axis=1, keepdims=True) - gm[None, :] + g_tm.mean()
    df_gt = (k - 1) * (t - 1)
    ms_gt = float((inter ** 2).sum()) / df_gt
    if names == "fixed":
        return _f(ms_g, ms_gt, k - 1.0, float(df_gt), method)
    if any(p[1].n < 2 for p in parts):
        return CrossedFResult(np.nan, np.nan, k - 1.0, np.nan, method,
                              "a group has one name: the name variance cannot be estimated")
    # per-name mean squares pooled over groups (in units of a single cell mean)
    df_n = sum(p[1].n - 1 for p in parts)
    ms_n = sum(p[1].s2_names / p[1].h * (p[1].n - 1) for p in parts) / df_n
    df_tn = sum(p[1].df_res for p in parts)
    ms_tn = (sum(p[1].ms_res * p[1].df_res for p in parts if p[1].df_res > 0) / df_tn) if df_tn > 0 else 0.0
    # group-level mean squares are in units of a mean over nh names: scale by nh
    num_terms = [(nh, ms_g, k - 1.0), (1.0, ms_tn, float(df_tn))]
    den_terms = [(nh, ms_gt, float(df_gt)), (1.0, ms_n, float(df_n))]
    num = sum(c * m for c, m, _ in num_terms)
    den = sum(c * m for c, m, _ in den_terms)
    return _f(num, den, _satterthwaite(num_terms), _satterthwaite(den_terms), method)


def names_heterogeneity(cells: list[np.ndarray]) -> CrossedFResult:
    """Test that the names of each group have the same mean (no name effect), templates random.

    Parameters
    ----------
    cells : list of ndarray, each shape (T, n_g)
        Cell means of each group's names (NaN = empty).

    Returns
    -------
    CrossedFResult
        ``F = MS_N(G) / MS_TxN(G)``, the names-within-groups mean square
        over the template x name interaction mean square, both pooled over
        groups; df ``(sum (n_g - 1), sum (T - 1)(n_g - 1))``. The
        denominator is the interaction, not the repetition error, so
        correlated repetitions within a cell do not inflate the test.
        Groups with one name contribute nothing.

    References
    ----------
    Clark (1973); Winer, Brown & Michels (1991), ch. 5 (nested random
    factor tested against its interaction with the crossed factor).
    """
    method = "F test of names within groups against the template x name interaction"
    parts = []
    for c in cells:
        c = np.asarray(c, dtype=float)
        c = c[~np.isnan(c).all(axis=1)][:, ~np.isnan(c).all(axis=0)] if c.size else c
        if c.ndim == 2 and c.shape[0] >= 2 and c.shape[1] >= 2:
            parts.append((_group_stats(c)[1], c.shape[0]))
    if not parts:
        return CrossedFResult(np.nan, np.nan, 0.0, 0.0, method, "no group has two names in two templates")
    df_n = float(sum(g.n - 1 for g, _ in parts))
    ms_n = sum(g.s2_names / g.h * (g.n - 1) for g, _tt in parts) / df_n
    df_tn = float(sum(g.df_res for g, _ in parts))
    ms_tn = sum(g.ms_res * g.df_res for g, _ in parts if g.df_res > 0) / df_tn if df_tn > 0 else np.nan
    return _f(ms_n, ms_tn, df_n, df_tn, method)
