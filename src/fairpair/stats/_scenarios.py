"""Where a difference lives: per-scenario differences, the templates-fixed average, and heterogeneity.

One estimator serves two questions (issues "Bias that lives in a few
scenarios" and "Real answers at real scale"):

* **Per scenario** (template): the difference between the groups in each
  template, ``D_t = mean_{n in A} m[t, n] - mean_{n in B} m[t, n]`` on the
  template x name cell means ``m`` (empty cells filled from each group's
  least-squares additive template + name fit, as in
  :func:`fairpair.stats.crossed_difference`), with a t interval.
* **The average over these templates** (``templates: fixed``): ``D =
  mean_t D_t`` as a claim about these scenarios, so the spread of the
  template differences is part of the estimand and adds no sampling
  variance.

Names random or fixed, as the plan declares (the model is that of
:mod:`fairpair.stats._crossed`: ``m[t, n] = mu_g + a_t + g_{t,g} + b_n +
c_{t,n}``; templates fixed conditions on ``a`` and ``g``):

========  ===================================================  ===================================================
names     per scenario ``Var(D_t)``                            average over these templates ``Var(D)``
========  ===================================================  ===================================================
random    ``MS_within (1/k_A,t + 1/k_B,t)``: the names of a     ``S_{N,A}^2 / n_A + S_{N,B}^2 / n_B``: Welch's t on
          scenario vary by ``sigma_N^2 + sigma_c^2``, pooled    the names' means over these templates (the names
          over templates and groups, df ``sum (k_g,t - 1)``     are the only random units; ``E[S_N^2] = sigma_N^2 +
                                                                sigma_c^2 / T``), Welch-Satterthwaite df
fixed     ``MS_res (1/k_A,t + 1/k_B,t)``: the template x name   ``sum_t Var(D_t) / T^2`` (the same error, df
          interaction pooled over groups, df ``sum (T - 1)      ``sum (T - 1)(n_g - 1)``)
          (n_g - 1)``
========  ===================================================  ===================================================

``k_g,t`` counts group ``g``'s names with answers in template ``t``. In a
balanced table these are the ordinary least-squares contrasts of the cell
means ``m ~ template:group`` (names random, per scenario) and ``m ~
template:group + name`` (names fixed), with their residual mean squares
(checked against statsmodels OLS in ``tests/stats/test_scenario_differences.py``); the
names-random average is exactly ``scipy.stats.ttest_ind(..., equal_var=False)``
on the names' means. Pooling the error over templates assumes it does not
change much between templates; the coverage of the intervals, and the level
and power of the scenario-level family, are checked by the whole-audit
simulation (``benchmarks/sim_audits.py``, table in ``benchmarks/README.md``).

Bounded measures (yes/no, 1-5 scores)
-------------------------------------
Near a bound (1% events, 95% top scores) the variance of a cell mean
follows its mean, so the pooled t above makes a template with few events or
non-top scores look surer than it is, and one with many look less sure: it
failed a fair scenario in 6-12% of such audits. With ``bounds`` the
per-template tests and intervals are score-type instead (a quasi-binomial
version of Miettinen & Nurminen's test for a risk difference, names as the
units): on ``[0, 1]`` (``(x - low) / (high - low)``) the name cell means of
group ``g`` in template ``t`` have variance ``phi mu_{t,g} (1 - mu_{t,g})``;
``Var(D_t) = phi (mu_A (1 - mu_A) / k_A,t + mu_B (1 - mu_B) / k_B,t)`` is
evaluated at the restricted maximum-likelihood means with ``mu_A - mu_B``
equal to the value tested (0, or the margin on the estimate's side;
:func:`score_restricted`), not at the estimate, and the interval inverts the
test (:func:`score_interval`), so it stays inside the scale and has width in a
template with no event. The dispersion ``phi`` is the error pooled as above
(``MS_within`` or ``MS_res``, same df, the t reference) over the mean of the
template-group variances ``V(mean) + s^2 / k`` (each unbiased for ``mu (1 -
mu)``, weighted by ``k - 1``); where ``mu (1 - mu)`` is the same in every
cell this is the t above. Checked against the restricted maximum of the
binomial likelihood (scipy), statsmodels' score test at 0 and Newcombe's
(1998) table of score intervals; level and power in ``benchmarks/sim_audits.py``
(ceiling and 1% rows).

Heterogeneity (templates random)
--------------------------------
:func:`scenario_heterogeneity` says how unevenly the difference spreads over
scenarios, for the guard of the templates-random average (a verdict about
other scenarios like these):

* the template x group variance share ``I^2 = sigma_D^2 / (sigma_D^2 +
  W)`` with ``W`` the within-template noise of ``D_t`` (``MS_res (1/n_A +
  1/n_B)``) and ``F = S_T^2 / W ~ F(T - 1, df_res)`` under homogeneity
  (name effects cancel in ``D_t - D``); its interval inverts ``F / (1 +
  theta) ~ F`` (the interval for a ratio of variance components, Searle,
  Casella & McCulloch 1992, sec. 3.5);
* Rosner's (1983) generalized extreme Studentized deviate (ESD) test on the
  ``D_t`` for up to ``ceil(T / 4)`` outlying scenarios: unlike the F (which
  spreads one extreme template over ``T - 1`` df) it is made for a few
  extreme templates, and it scales each deviation by the spread of the
  others, so the normal template x group variation of the crossed model
  does not set it off (it is the model the templates-random t already
  allows for). Its p-value is the smallest level at which at least one
  outlier is declared. On yes/no and 1-5 measures (``n_permutations``) its
  levels are permutation p-values of the ESD on ``D_t`` studentized by the
  names within each template, the names permuted between the groups within
  every template, min-p over the steps (Rosner's normal levels fired on the
  binomial noise of ``D_t`` in 47-74% of fair ceiling and 1% audits).

References
----------
Farrington, C. P. & Manning, G. (1990). Test statistics and sample size
formulae for comparative binomial trials with null hypothesis of non-zero
risk difference or non-unity relative risk. *Statistics in Medicine*, 9,
1447-1454.
Miettinen, O. & Nurminen, M. (1985). Comparative analysis of two rates.
*Statistics in Medicine*, 4, 213-226.
Newcombe, R. G. (1998). Interval estimation for the difference between
independent proportions: comparison of eleven methods. *Statistics in
Medicine*, 17, 873-890.
Rosner, B. (1983). Percentage points for a generalized ESD many-outlier
procedure. *Technometrics*, 25, 165-172.
Searle, S. R., Casella, G., & McCulloch, C. E. (1992). *Variance
Components*. Wiley.
Welch, B. L. (1947). The generalization of "Student's" problem when several
different population variances are involved. *Biometrika*, 34, 28-35.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from fairpair.stats._common import ConfidenceInterval, check_choice
from fairpair.stats._crossed import (
    NAMES,
    CrossedDifferenceResult,
    _additive_fill,
    _group_stats,
    _satterthwaite,
    cell_matrix,
)

__all__ = ["ScenarioDifferencesResult", "ScenarioHeterogeneityResult", "scenario_differences",
           "scenario_differences_from_cells", "scenario_heterogeneity", "score_interval", "score_restricted",
           "score_se", "stratified_difference"]


def _tp(stat: np.ndarray | float, df: np.ndarray | float) -> np.ndarray:
    """Two-sided Student t p-values (NaN where undefined)."""
    with np.errstate(invalid="ignore"):
        return 2.0 * special.stdtr(df, -np.abs(stat))


@dataclass(frozen=True)
class ScenarioDifferencesResult:
    """Result of :func:`scenario_differences`.

    Attributes
    ----------
    names : {"random", "fixed"}
        The names' estimand (templates are fixed here: these scenarios).
    templates : ndarray of int, shape (T,)
        Row index (in the input cell tables) of each template kept: those
        with answers from both groups.
    estimates : ndarray, shape (T,)
        ``D_t`` per template, in the measure's units (a risk difference for 0/1).
    se : ndarray, shape (T,)
        Standard error of each ``D_t``.
    df : float
        Degrees of freedom of every per-template t (the pooled error's).
    pvalues : ndarray, shape (T,)
        Two-sided p-value of ``D_t = 0``.
    k_a, k_b : ndarray of int, shape (T,)
        Names with answers per template and group.
    n_names_a, n_names_b : int
        Names with answers per group.
    estimate : float
        ``mean_t D_t``: the average over these templates.
    average_se, average_df : float
        Its standard error and degrees of freedom (Welch-Satterthwaite with
        names random, the pooled interaction's with names fixed).
    pvalue : float
        Two-sided p-value of the average against 0.
    mean_a, mean_b : float
        ``estimate = mean_a - mean_b``.
    method : str
    note : str or None
        Why a quantity is undefined.
    bounds : (low, high) or None
        A bounded measure's range (yes/no: ``(0, 1)``; a 1-5 score: its lowest and highest value): the
        per-template tests and intervals are then score-type (see the module notes), ``se`` is the
        standard error of ``D_t`` when the groups do not differ in that template, and ``pvalues`` the
        score test's. ``None``: the t of the module notes.
    dispersion : float
        Bounded measures: ``phi``, the pooled error over the variance function (NaN otherwise).
    group_means : ndarray, shape (T, 2)
        Bounded measures: each template's group means on the ``[0, 1]`` scale (empty otherwise).
    """

    names: str
    templates: np.ndarray
    estimates: np.ndarray
    se: np.ndarray
    df: float
    pvalues: np.ndarray
    k_a: np.ndarray
    k_b: np.ndarray
    estimate: float
    average_se: float
    average_df: float
    pvalue: float
    mean_a: float
    mean_b: float
    method: str
    note: str | None = None
    n_values: int = 0
    variance: dict[str, float] = field(default_factory=dict)
    n_names_a: int = 0
    n_names_b: int = 0
    bounds: tuple[float, float] | None = None
    dispersion: float = float("nan")
    group_means: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    _intervals: dict[float, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def as_crossed(self) -> CrossedDifferenceResult:
        """The average over these templates as a :class:`~fairpair.stats.CrossedDifferenceResult` (its
        intervals, p-value and equivalence interval: the symmetric t, no skewness term), so the analysis
        treats both estimands alike."""
        comp = {k: v for k, v in self.variance.items() if k in ("names_a", "names_b")}
        if self.names == "fixed" and np.isfinite(self.average_se):
            comp["cells"] = self.average_se ** 2
        return CrossedDifferenceResult(self.estimate, self.statistic, self.pvalue, self.average_df, self.average_se,
                                       self.names, self.n_templates, self.n_names_a, self.n_names_b, self.n_values,
                                       comp, dict(self.variance), self.estimates, self.mean_a, self.mean_b,
                                       self.method, self.note)

    @property
    def n_templates(self) -> int:
        return int(self.templates.size)

    @property
    def statistic(self) -> float:
        """``estimate / average_se`` (NaN when undefined)."""
        return float(self.estimate / self.average_se) if self.average_se > 0 else float("nan")

    def confidence_intervals(self, confidence_level: float = 0.95) -> np.ndarray:
        """Per-template intervals, shape (T, 2); NaN rows where undefined. The t interval, or for a bounded
        measure the inverted score test (inside the bounds, not centred on ``D_t``)."""
        q = special.stdtrit(self.df, 0.5 + confidence_level / 2.0) if self.df > 0 else np.nan
        if self.bounds is not None:
            if not np.isfinite(q * self.dispersion):
                return np.full((self.n_templates, 2), np.nan)
            if confidence_level not in self._intervals:  # a report asks twice (with and without the margin)
                w = self.bounds[1] - self.bounds[0]
                m = self.group_means
                self._intervals[confidence_level] = w * score_interval(self.estimates / w, m[:, 0], self.k_a,
                                                                       m[:, 1], self.k_b, self.dispersion, q)
            return self._intervals[confidence_level].copy()
        half = q * self.se
        return np.column_stack([self.estimates - half, self.estimates + half])

    def pvalues_beyond(self, margin: float | None) -> np.ndarray:
        """Per template, two-sided p-value against ``|D_t| <= margin`` (``pvalues`` without a margin): the t,
        or for a bounded measure the score test at ``D_t = +-margin`` (its standard error where the difference
        is the margin, not where it is estimated)."""
        m = float(margin or 0.0)
        if m == 0:
            return self.pvalues
        se = self.se
        if self.bounds is not None:
            w = self.bounds[1] - self.bounds[0]
            g = self.group_means
            side = np.where(self.estimates < 0, -1.0, 1.0)
            se = w * score_se(g[:, 0], self.k_a, g[:, 1], self.k_b, side * min(m / w, 1.0), self.dispersion)
        with np.errstate(invalid="ignore", divide="ignore"):
            z = (np.abs(self.estimates) - m) / se
            p = np.minimum(1.0, 2.0 * special.stdtr(self.df, -z))
        return np.where(z > 0, p, np.where(np.isnan(z), np.nan, 1.0))

    def confidence_interval(self, confidence_level: float = 0.95,
                            bounds: tuple[float, float] | None = None) -> ConfidenceInterval:
        """t interval of the average over these templates, clipped to ``bounds`` if given."""
        if not (self.average_se >= 0 and self.average_df > 0):
            return ConfidenceInterval(np.nan, np.nan, confidence_level, self.method)
        half = float(special.stdtrit(self.average_df, 0.5 + confidence_level / 2.0)) * self.average_se
        lo, hi = self.estimate - half, self.estimate + half
        if bounds is not None:
            lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
        return ConfidenceInterval(float(lo), float(hi), confidence_level, self.method)


def score_restricted(m1: Any, n1: Any, m0: Any, n0: Any, delta: Any) -> tuple[np.ndarray, np.ndarray]:
    """The means ``(p1, p0)`` of two binomial-type samples that maximise the likelihood under ``p1 - p0 = delta``.

    Parameters
    ----------
    m1, n1, m0, n0 : array_like
        Each sample's mean on ``[0, 1]`` and its size (real numbers: names per group and template here,
        answers in a 2 x 2 table); broadcast together with ``delta``.
    delta : array_like
        The difference under the null hypothesis, in ``[-1, 1]``.

    Returns
    -------
    (p1, p0) : ndarrays
        The restricted maximum-likelihood estimates: the closed-form root of Farrington & Manning's (1990)
        cubic, clipped to ``[0, 1]`` (statsmodels 0.15's ``score_test_proportions_2indep`` solves another
        cubic that agrees only with equal sizes; the tests check the likelihood's maximum directly).

    References
    ----------
    Miettinen, O. & Nurminen, M. (1985). Comparative analysis of two rates. *Statistics in Medicine*, 4, 213-226.
    Farrington, C. P. & Manning, G. (1990). Test statistics and sample size formulae for comparative binomial
    trials with null hypothesis of non-zero risk difference or non-unity relative risk. *Statistics in Medicine*,
    9, 1447-1454.
    """
    m1, n1, m0, n0, d = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (m1, n1, m0, n0, delta)))
    th = n0 / n1
    a = 1.0 + th
    b = -(1.0 + th + m1 + th * m0 + d * (th + 2.0))
    c = d * d + d * (2.0 * m1 + th + 1.0) + m1 + th * m0
    e = -m1 * d * (1.0 + d)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = b ** 3 / (27.0 * a ** 3) - b * c / (6.0 * a * a) + e / (2.0 * a)
        u = np.sign(v) * np.sqrt(np.maximum(b * b / (9.0 * a * a) - c / (3.0 * a), 0.0))
        cos = np.where(u != 0, v / np.where(u != 0, u ** 3, 1.0), 0.0)
        w = (np.pi + np.arccos(np.clip(cos, -1.0, 1.0))) / 3.0
        p1 = np.where(d == 0, (n1 * m1 + n0 * m0) / (n1 + n0), 2.0 * u * np.cos(w) - b / (3.0 * a))
    p1 = np.clip(p1, np.maximum(0.0, d), np.minimum(1.0, 1.0 + d))
    return p1, p1 - d


def score_se(m1: Any, n1: Any, m0: Any, n0: Any, delta: Any, dispersion: float = 1.0) -> np.ndarray:
    """Standard error of ``m1 - m0`` where the true difference is ``delta`` (on ``[0, 1]``):
    ``sqrt(phi (p1 (1 - p1) / n1 + p0 (1 - p0) / n0))`` at :func:`score_restricted`'s ``(p1, p0)``.
    ``dispersion`` ``phi`` = 1: the binomial variance (Miettinen & Nurminen without their ``n / (n - 1)``)."""
    p1, p0 = score_restricted(m1, n1, m0, n0, delta)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt(dispersion * (p1 * (1.0 - p1) / n1 + p0 * (1.0 - p0) / n0))


def score_interval(d: Any, m1: Any, n1: Any, m0: Any, n0: Any, dispersion: float, quantile: Any,
                   iterations: int = 24) -> np.ndarray:
    """The score interval of a difference on ``[0, 1]``: every ``delta`` with ``|d - delta| <= quantile x
    score_se(delta)`` (Miettinen & Nurminen's interval with ``dispersion`` 1 and a normal ``quantile``).

    Both ends of every interval are found at once by the Illinois variant of false position (a bracketing
    root finder: each end stays between ``d`` and the bound), vectorised over ``d``; ``quantile`` may hold
    several levels (shape ``(L,)``). Returns shape ``quantile.shape + d.shape + (2,)``, inside ``[-1, 1]``;
    NaN where ``d`` is.
    """
    d = np.asarray(d, dtype=float)
    q = np.asarray(quantile, dtype=float)
    shape = q.shape + (2,) + d.shape
    sign = np.array([1.0, -1.0]).reshape((1,) * q.ndim + (2,) + (1,) * d.ndim)
    qq = q.reshape(q.shape + (1,) * (d.ndim + 1))

    def gap(x: np.ndarray) -> np.ndarray:  # > 0: x is outside the interval (lower end: d - x = q se(x))
        return sign * (d - x) - qq * score_se(m1, n1, m0, n0, x, dispersion)

    inner, outer = np.broadcast_to(d, shape).copy(), np.broadcast_to(-sign, shape).copy()
    f_in, f_out = gap(inner), gap(outer)
    at_bound = ~(f_out > 0)  # the bound itself is inside: the end is the bound
    side = np.zeros(shape)
    x = inner
    for i in range(iterations):
        if i < iterations // 3:  # bisection first: an end where se(d) = 0 (no event) has f_in = 0
            x = 0.5 * (inner + outer)
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                x = (inner * f_out - outer * f_in) / (f_out - f_in)
            x = np.where(np.isfinite(x), np.clip(x, np.minimum(inner, outer), np.maximum(inner, outer)),
                         0.5 * (inner + outer))
        fx = gap(x)
        out_now = fx > 0
        if i >= iterations // 3:  # Illinois: halve the value kept at an end that stayed twice running
            f_in = np.where(out_now & (side == 1), 0.5 * f_in, f_in)
            f_out = np.where(~out_now & (side == -1), 0.5 * f_out, f_out)
        f_in, f_out = np.where(out_now, f_in, fx), np.where(out_now, fx, f_out)
        inner, outer = np.where(out_now, inner, x), np.where(out_now, x, outer)
        side = np.where(out_now, 1, -1)
    res = np.where(at_bound, outer, x)
    res = np.where(np.isnan(np.broadcast_to(d, shape)), np.nan, res)
    return np.moveaxis(res, q.ndim, -1)


def _bounded_parts(fa: np.ndarray, fb: np.ndarray, a: np.ndarray, b: np.ndarray, bounds: tuple[float, float],
                   ms: float) -> tuple[np.ndarray, float]:
    """Each template's group means on ``[0, 1]`` (shape (T, 2)) and the dispersion ``phi``: the pooled error
    ``ms`` (on ``[0, 1]``) over the mean of the variance function ``V(mu) = mu (1 - mu)`` of the
    template-group means, each estimated without bias (``V(mean) + s^2 / k``), weighted by ``k - 1``."""
    lo, hi = bounds
    w = hi - lo
    means = np.clip(np.column_stack([fa.mean(axis=1), fb.mean(axis=1)]) - lo, 0.0, w) / w
    num = den = 0.0
    for j, x in enumerate((a, b)):
        k = (~np.isnan(x)).sum(axis=1)
        ok = k > 1
        s2 = np.zeros(k.shape)
        if ok.any():
            s2[ok] = np.nanvar(x[ok], axis=1, ddof=1) / w ** 2
        v = means[:, j] * (1.0 - means[:, j]) + np.where(ok, s2 / np.maximum(k, 1), 0.0)
        num += float(np.sum(np.maximum(k - 1, 0) * v))
        den += float(np.maximum(k - 1, 0).sum())
    vbar = num / den if den > 0 else float("nan")
    phi = ms / w ** 2 / vbar if vbar > 0 else float("nan")
    return means, phi


def _drop_empty(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    keep = ~(np.isnan(a).all(axis=1) | np.isnan(b).all(axis=1)) if a.size and b.size else np.zeros(0, bool)
    a, b = a[keep], b[keep]
    a = a[:, ~np.isnan(a).all(axis=0)] if a.size else a
    b = b[:, ~np.isnan(b).all(axis=0)] if b.size else b
    return a, b, np.nonzero(keep)[0]


def _within(x: np.ndarray) -> tuple[float, int]:
    """Sum of squares of the observed cells around their template's mean, and its df (``sum_t (k_t - 1)``)."""
    obs = ~np.isnan(x)
    k = obs.sum(axis=1)
    mean_t = np.where(k > 0, np.nansum(x, axis=1) / np.maximum(k, 1), 0.0)
    ss = float(np.nansum((x - mean_t[:, None]) ** 2))
    return ss, int(np.maximum(k - 1, 0).sum())


def scenario_differences_from_cells(cells_a: Any, cells_b: Any, *, names: str = "random",
                                    n_values: int | None = None,
                                    bounds: tuple[float, float] | None = None) -> ScenarioDifferencesResult:
    """Per-template differences and their average over these templates, from cell means.

    Parameters
    ----------
    cells_a, cells_b : array_like, shapes (T, n_a) and (T, n_b)
        Template x name cell means of each group's names (NaN = empty), the
        same T templates in the same order.
    names : {"random", "fixed"}
        ``"random"``: each scenario's difference and the average generalise
        to other names of the groups; ``"fixed"``: to these names.
    bounds : (low, high), optional
        The measure's range, for a bounded measure (yes/no, a 1-5 score):
        per-template score tests and intervals instead of the t (module
        notes, "Bounded measures"). The average is unchanged.

    Returns
    -------
    ScenarioDifferencesResult
        Templates where a group has no answer are left out (``templates``
        keeps the others' row indices). Undefined quantities are NaN with a
        ``note``; this function never raises on such data.

    Raises
    ------
    ValueError
        ``cells_a`` and ``cells_b`` have different numbers of rows, a bad ``names``, or ``bounds`` with
        ``low >= high``.
    """
    check_choice("names", names, NAMES)
    if bounds is not None and not float(bounds[0]) < float(bounds[1]):
        raise ValueError(f"bounds must be (low, high) with low < high; got {bounds!r}")
    a0 = np.asarray(cells_a, dtype=float)
    b0 = np.asarray(cells_b, dtype=float)
    if a0.ndim != 2 or b0.ndim != 2 or a0.shape[0] != b0.shape[0]:
        raise ValueError(f"cells_a and cells_b must be (T, n) tables with the same T; got {a0.shape} and {b0.shape}")
    a, b, rows = _drop_empty(a0, b0)
    t = int(rows.size)
    if n_values is None:
        n_values = int((~np.isnan(a0)).sum() + (~np.isnan(b0)).sum())
    method = (f"templates fixed (these scenarios), names {names}: "
              + ("Welch t on the names' means; per scenario t with the within-template name variance pooled"
                 if names == "random" else "t with the template x name interaction as error"))
    nan = float("nan")
    empty = np.zeros(0)
    if t == 0:
        return ScenarioDifferencesResult(names, rows, empty, empty, nan, empty, rows, rows, nan, nan, nan, nan, nan,
                                         nan, method, "no template has answers from both groups", n_values, {},
                                         0, 0)
    fa, _na_obs, _ha = _additive_fill(a)
    fb, _nb_obs, _hb = _additive_fill(b)
    d_t = fa.mean(axis=1) - fb.mean(axis=1)
    ka = (~np.isnan(a)).sum(axis=1)
    kb = (~np.isnan(b)).sum(axis=1)
    inv = 1.0 / ka + 1.0 / kb
    notes: list[str] = []
    variance: dict[str, float] = {}
    if names == "random":
        ssa, dfa = _within(a)
        ssb, dfb = _within(b)
        df = float(dfa + dfb)
        ms = (ssa + ssb) / df if df > 0 else nan
        variance["ms_within"] = ms
        ca, cb = fa.mean(axis=0), fb.mean(axis=0)
        na, nb = ca.size, cb.size
        if na > 1 and nb > 1:
            va, vb = float(ca.var(ddof=1)) / na, float(cb.var(ddof=1)) / nb
            avg_var = va + vb
            avg_df = _satterthwaite([(1.0, va, na - 1.0), (1.0, vb, nb - 1.0)])
            variance.update(names_a=va, names_b=vb)
        else:
            avg_var = avg_df = nan
            notes.append("a group has one name: the names' variance cannot be estimated (declare `names: fixed`)")
    else:
        _ra, ga = _group_stats(a)
        _rb, gb = _group_stats(b)
        df_ = [(g.ms_res, g.df_res) for g in (ga, gb) if g.df_res > 0 and np.isfinite(g.ms_res)]
        df = float(sum(d for _m, d in df_))
        ms = sum(m * d for m, d in df_) / df if df > 0 else nan
        variance["ms_interaction"] = ms
        if not df > 0:
            notes.append("no template x name interaction to estimate the error from (one template or one name per "
                         "group): declare `names: random` or use more templates")
        avg_var = float(np.sum(ms * inv) / t ** 2) if df > 0 else nan
        avg_df = df if df > 0 else nan
    se = np.sqrt(ms * inv) if df > 0 else np.full(t, nan)
    means, phi = np.zeros((0, 2)), nan
    if bounds is not None:
        means, phi = _bounded_parts(fa, fb, a, b, (float(bounds[0]), float(bounds[1])), ms if df > 0 else nan)
        w = float(bounds[1]) - float(bounds[0])
        se = w * score_se(means[:, 0], ka, means[:, 1], kb, 0.0, phi) if np.isfinite(phi) else np.full(t, nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(se > 0, _tp(d_t / np.where(se > 0, se, 1.0), df), np.where(d_t == 0, 1.0, 0.0)) \
            if df > 0 else np.full(t, nan)
    p = np.where(np.isnan(se), nan, p)
    est = float(d_t.mean())
    avg_se = float(np.sqrt(avg_var)) if np.isfinite(avg_var) and avg_var >= 0 else nan
    if np.isfinite(avg_se) and avg_se > 0 and np.isfinite(avg_df):
        pv = float(_tp(est / avg_se, avg_df))
    else:
        pv = nan
        if np.isfinite(avg_se) and avg_se == 0:
            notes.append("no variance between names or cells: the standard error is 0")
    return ScenarioDifferencesResult(names, rows, d_t, se, df if df > 0 else nan, p, ka, kb, est, avg_se,
                                     float(avg_df), pv, float(fa.mean()), float(fb.mean()), method,
                                     "; ".join(notes) or None, n_values, variance, a.shape[1], b.shape[1],
                                     None if bounds is None else (float(bounds[0]), float(bounds[1])), phi, means)


def scenario_differences(values: Any, template: Any, name: Any, group: Any, *,
                         groups: tuple[Any, Any] | None = None, names: str = "random") -> ScenarioDifferencesResult:
    """:func:`scenario_differences_from_cells` from one row per answer.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        One answer's measure each (NaN: missing, left out).
    template, name, group : array_like, shape (n,)
        Template (scenario), name (a variant of the protected attribute; it
        belongs to one group) and group (exactly two labels) of each answer.
    groups : (a, b), optional
        Which label is group A (differences are ``A - B``); default the two
        labels in sorted order.
    names : {"random", "fixed"}

    Raises
    ------
    ValueError
        Mismatched lengths, not exactly two groups, a name in both groups.
    """
    v = np.asarray(values, dtype=float).ravel()
    g = np.asarray(group, dtype=object).ravel()
    labels = sorted(set(g.tolist()), key=str)
    if len(labels) != 2:
        raise ValueError(f"group must hold exactly two labels; got {len(labels)}")
    ga, gb = groups if groups is not None else (labels[0], labels[1])
    if {ga, gb} != set(labels):
        raise ValueError(f"groups {groups!r} must be the two labels present in group")
    means, _cnt, tl, nl = cell_matrix(v, template, name)
    nm = np.asarray(name, dtype=object).ravel()
    in_a = {x for x, gg in zip(nm.tolist(), g.tolist(), strict=True) if gg == ga}
    in_b = {x for x, gg in zip(nm.tolist(), g.tolist(), strict=True) if gg == gb}
    if in_a & in_b:
        raise ValueError(f"a name must belong to one group; in both: {sorted(map(str, in_a & in_b))[:5]}")
    col_a = np.array([x in in_a for x in nl.tolist()])
    r = scenario_differences_from_cells(means[:, col_a], means[:, ~col_a], names=names,
                                        n_values=int((~np.isnan(v)).sum()))
    return r


@dataclass(frozen=True)
class ScenarioHeterogeneityResult:
    """Result of :func:`scenario_heterogeneity`: how unevenly the difference spreads over templates.

    Attributes
    ----------
    statistic, pvalue : float
        ``F = S_T^2 / W`` and its upper tail on ``(df_num, df_den)``.
    df_num, df_den : float
    share : float
        Template x group variance share ``I^2 = max(0, 1 - 1/F)`` in [0, 1).
    share_low, share_high : float
        Its interval at ``confidence_level``.
    confidence_level : float
    outliers : ndarray of int
        Row indices (into the cell tables given) of the outlying templates the
        generalized ESD declares at ``outlier_alpha``, most extreme first.
    outlier_pvalue : float
        The smallest level at which the ESD declares at least one outlier.
    outlier_alpha : float
    estimate_without : float
        ``mean D_t`` over the other templates (NaN when no outlier).
    method : str
    note : str or None
    """

    statistic: float
    pvalue: float
    df_num: float
    df_den: float
    share: float
    share_low: float
    share_high: float
    confidence_level: float
    outliers: np.ndarray
    outlier_pvalue: float
    outlier_alpha: float
    estimate_without: float
    method: str = ("F of the template differences against the template x name interaction; Rosner's (1983) "
                   "generalized ESD for up to ceil(T/4) outlying templates")
    note: str | None = None


def _esd(x: np.ndarray, k_max: int) -> tuple[np.ndarray, np.ndarray]:
    """Rosner's generalized ESD: the removed points in order and, per step ``i``, the level at which
    ``R_i = lambda_i``."""
    idx = np.arange(x.size)
    vals = x.astype(float).copy()
    order, levels = [], []
    n = x.size
    for i in range(1, k_max + 1):
        if vals.size < 3:
            break
        s = vals.std(ddof=1)
        dev = np.abs(vals - vals.mean())
        j = int(np.argmax(dev))
        r = float(dev[j] / s) if s > 0 else (0.0 if dev[j] == 0 else math.inf)
        m = n - i  # n - i + 1 values, lambda_i uses t with n - i - 1 df
        nu = m - 1
        if nu < 1:
            break
        den = m * m - r * r * (m + 1)
        t2 = r * r * nu * (m + 1) / den if den > 0 else math.inf
        lvl = float(min(1.0, 2.0 * (m + 1) * special.stdtr(nu, -math.sqrt(t2)))) if math.isfinite(t2) else 0.0
        order.append(int(idx[j]))
        levels.append(lvl)
        idx = np.delete(idx, j)
        vals = np.delete(vals, j)
    return np.array(order, dtype=int), np.array(levels)


#: The heterogeneity guard's permutations come in two stages: this many first, all of them only when the
#: first stage's p-value is below ``SCREEN_FACTOR`` times the guard's level (:func:`scenario_heterogeneity`).
SCREEN_PERMUTATIONS = 199
SCREEN_FACTOR = 10.0


def _esd_statistics(d: np.ndarray, k_max: int) -> np.ndarray:
    """Rosner's ``R_1 .. R_k`` of the generalized ESD, vectorised over the leading axes of ``d[..., T]`` (NaN
    values left out). The value farthest from the mean of those left is always the lowest or the highest of
    them, so each row is sorted once and each step updates running sums (no pass over ``T`` per step)."""
    x = np.sort(np.asarray(d, dtype=float), axis=-1)  # NaN last
    cnt = np.sum(~np.isnan(x), axis=-1).astype(float)
    xz = np.where(np.isnan(x), 0.0, x)
    s1, s2 = xz.sum(axis=-1), (xz * xz).sum(axis=-1)
    tiny = 1e-9 * np.max(np.abs(xz), axis=-1, initial=0.0)  # the running sums' rounding: equal values left
    lo = np.zeros(x.shape[:-1], dtype=np.intp)
    hi = np.maximum(cnt.astype(np.intp) - 1, 0)
    out = np.full(x.shape[:-1] + (k_max,), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        for i in range(k_max):
            mean = s1 / cnt
            sd = np.sqrt(np.maximum(s2 - s1 * mean, 0.0) / (cnt - 1.0))
            xl = np.take_along_axis(xz, lo[..., None], axis=-1)[..., 0]
            xh = np.take_along_axis(xz, hi[..., None], axis=-1)[..., 0]
            low_side = mean - xl > xh - mean
            top = np.where(low_side, mean - xl, xh - mean)
            r = np.where(sd > tiny, top / sd, np.where(top <= tiny, 0.0, np.inf))
            out[..., i] = np.where(cnt >= 2, r, np.where(cnt == 1, 0.0, np.nan))
            gone = np.where(low_side, xl, xh)
            s1, s2, cnt = s1 - gone, s2 - gone * gone, cnt - 1.0
            lo, hi = lo + low_side, hi - ~low_side
    return out


def _studentized(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``D_t / sqrt(w_t + mean w)``, ``w_t`` the variance of ``D_t`` from the names within template ``t``
    (the mean over templates keeps a template without spread, e.g. no event, from dividing by 0)."""
    na, nb = np.sum(~np.isnan(a), -1), np.sum(~np.isnan(b), -1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a group with 0 or 1 name in a template: no spread
        w = np.nanvar(a, -1, ddof=1) / na + np.nanvar(b, -1, ddof=1) / nb
        w = np.where(np.isnan(w), 0.0, w)
        return (np.nanmean(a, -1) - np.nanmean(b, -1)) / np.sqrt(w + w.mean(-1, keepdims=True) + 1e-300)


def _permutation_levels(a: np.ndarray, b: np.ndarray, k: int, n_permutations: int,
                        seed: int | None) -> tuple[np.ndarray, float]:
    """Per ESD step, the share of within-template permutations of the names between the groups whose ``R_i``
    reaches the observed one (``(1 + #) / (1 + B)``), and the level of the smallest of them (min-p over the
    steps, calibrated on the same permutations, so that trying ``k`` steps does not add up)."""
    obs = _esd_statistics(_studentized(a, b), k)
    c = np.concatenate([a, b], axis=1)
    rng = np.random.default_rng(seed)
    pc = rng.permuted(np.broadcast_to(c, (n_permutations,) + c.shape), axis=-1)
    null = _esd_statistics(_studentized(pc[..., : a.shape[1]], pc[..., a.shape[1]:]), k)
    null = np.where(np.isnan(null), -np.inf, null)
    tol = 1e-9 * np.maximum(1.0, np.abs(np.where(np.isfinite(obs), obs, 1.0)))
    levels = (1.0 + np.sum(null >= obs - tol, axis=0)) / (1.0 + n_permutations)
    levels = np.where(np.isnan(obs), 1.0, levels)
    srt = np.sort(null, axis=0)  # each permutation's own per-step level, against the same permutations
    p_null = (1.0 + n_permutations - np.stack([np.searchsorted(srt[:, i], null[:, i], side="left")
                                               for i in range(k)], axis=1)) / (1.0 + n_permutations)
    overall = (1.0 + np.sum(p_null.min(axis=1) <= levels.min() + 1e-12)) / (1.0 + n_permutations)
    return levels, float(overall)


def scenario_heterogeneity(cells_a: Any, cells_b: Any, *, confidence_level: float = 0.95,
                           outlier_alpha: float = 0.05, n_permutations: int = 0,
                           seed: int | None = None) -> ScenarioHeterogeneityResult:
    """How unevenly the difference between two groups spreads over templates (templates random).

    Parameters
    ----------
    cells_a, cells_b : array_like, shapes (T, n_a) and (T, n_b)
        Template x name cell means (NaN = empty); templates where a group
        has no answer are left out.
    confidence_level : float
        Of the variance-share interval.
    outlier_alpha : float
        Level of the generalized ESD (Rosner 1983) for outlying templates.
    n_permutations : int
        0: the ESD's levels are Rosner's t approximation (normal ``D_t``). B > 0: each
        step's level is a permutation p-value instead: the names are permuted between
        the groups within every template, B times, ``R_i`` is compared with its
        permutation distribution, and the ESD's p-value is the level of the
        smallest step p-value (min-p over the steps, on the same permutations).
        Exact when no template differs from the others and the groups do not
        differ (approximate when they differ alike everywhere), whatever the measure's distribution
        (yes/no, rare events, scores at a ceiling, where the t levels fire on the
        binomial noise of ``D_t``). Needs 2+ names in all. Sequential: the first
        :data:`SCREEN_PERMUTATIONS` decide when their p-value is at least
        :data:`SCREEN_FACTOR` times ``outlier_alpha`` (most audits: the cost of a
        comparison falls about fivefold); otherwise all B are drawn. The test's
        level is unchanged (it rejects only when the B-permutation p-value is below
        ``outlier_alpha``); the outliers are ordered by the studentized ``D_t``.
    seed : int or None
        Of the permutations.

    Returns
    -------
    ScenarioHeterogeneityResult
        See the module notes. NaN (with a ``note``) with fewer than 3
        templates or no template x name interaction; the ESD needs 5
        templates.
    """
    a, b, rows = _drop_empty(np.asarray(cells_a, dtype=float), np.asarray(cells_b, dtype=float))
    t = a.shape[0]
    nan = float("nan")
    none = np.zeros(0, dtype=int)
    if t < 3:
        return ScenarioHeterogeneityResult(nan, nan, nan, nan, nan, nan, nan, confidence_level, none, nan,
                                           outlier_alpha, nan, note="fewer than 3 templates")
    ra, ga = _group_stats(a)
    rb, gb = _group_stats(b)
    d_t = ra - rb
    parts = [(g.ms_res, g.df_res) for g in (ga, gb) if g.df_res > 0 and np.isfinite(g.ms_res)]
    df_den = float(sum(d for _m, d in parts))
    notes = []
    if df_den > 0:
        ms = sum(m * d for m, d in parts) / df_den
        w = ms * (1.0 / ga.n + 1.0 / gb.n)
        f = float(d_t.var(ddof=1) / w) if w > 0 else nan
    else:
        f = nan
        notes.append("no template x name interaction: the noise of a template's difference cannot be estimated")
    df_num = float(t - 1)
    if np.isfinite(f):
        p = float(special.fdtrc(df_num, df_den, f))
        share = max(0.0, 1.0 - 1.0 / f) if f > 0 else 0.0
        lo_q = special.fdtri(df_num, df_den, 0.5 + confidence_level / 2.0)
        hi_q = special.fdtri(df_num, df_den, 0.5 - confidence_level / 2.0)
        s_lo = max(0.0, 1.0 - lo_q / f) if f > 0 else 0.0
        s_hi = max(0.0, 1.0 - hi_q / f) if f > 0 else 0.0
    else:
        p = share = s_lo = s_hi = nan
    out = none
    p_out = nan
    without = nan
    if t >= 5:
        order, levels = _esd(d_t, max(1, math.ceil(t / 4)))
        overall = None
        if n_permutations > 0 and levels.size:
            # the statistic the permutations calibrate orders the templates too
            order, _lv = _esd(_studentized(a, b), levels.size)
            first = min(n_permutations, SCREEN_PERMUTATIONS)
            levels, overall = _permutation_levels(a, b, levels.size, first, seed)
            if first < n_permutations and overall < SCREEN_FACTOR * outlier_alpha:
                levels, overall = _permutation_levels(a, b, levels.size, n_permutations, seed)
        if levels.size:
            p_out = float(levels.min()) if overall is None else overall
            hits = np.nonzero(levels < outlier_alpha)[0] if p_out < outlier_alpha else np.zeros(0, dtype=int)
            if hits.size:
                pos = order[: int(hits.max()) + 1]
                out = rows[pos]
                without = float(np.delete(d_t, pos).mean())
    else:
        notes.append("fewer than 5 templates: no outlier test")
    return ScenarioHeterogeneityResult(f, p, df_num, df_den, share, s_lo, s_hi, confidence_level, out, p_out,
                                       outlier_alpha, without, note="; ".join(notes) or None)


def stratified_difference(x: Any, y: Any, template: Any) -> CrossedDifferenceResult:
    """The average over these templates of a paired per-set difference, templates fixed.

    The estimand of a ranking audit about *these* postings: each matched set
    (one request: its candidates shown together) gives ``d = x - y``; the
    estimate is ``mean_t mean(d | t)`` over the templates with a value, and
    its variance ``sum_t s_t^2 / n_t / T^2`` (sets within a template are
    exchangeable draws: name sets random, templates fixed), with the
    Welch-Satterthwaite degrees of freedom ``(sum w_t)^2 / sum(w_t^2 / (n_t
    - 1))``, ``w_t = s_t^2 / (n_t T^2)``. With one template it is the
    one-sample t test of ``d`` (:func:`scipy.stats.ttest_1samp`); with equal
    ``n_t`` and variances, the stratified mean's t of Cochran (1977),
    *Sampling Techniques*, ch. 5. Its level and coverage are in
    ``benchmarks/sim_ranking.py``'s templates-fixed rows.

    Parameters
    ----------
    x, y : array_like of float, shape (n,)
        One value per matched set for each group (0/1 top-pick indicators, or
        the ranked-above indicators); a set with NaN in either is left out.
    template : array_like, shape (n,)
        Template (posting) of each set.

    Returns
    -------
    CrossedDifferenceResult
        ``names`` is ``"random"`` (other name sets of the groups), the
        variance component ``sets``; a template with fewer than two sets adds
        no variance and is named in ``note``. Never raises on degenerate data.
    """
    xv = np.asarray(x, dtype=float).ravel()
    yv = np.asarray(y, dtype=float).ravel()
    tv = np.asarray(template).ravel()
    if not (xv.size == yv.size == tv.size):
        raise ValueError(f"x, y and template must have one value per set; got {xv.size}, {yv.size}, {tv.size}")
    keep = ~(np.isnan(xv) | np.isnan(yv))
    d, t = xv[keep] - yv[keep], tv[keep]
    labels, inv = np.unique(t, return_inverse=True) if d.size else (np.zeros(0), np.zeros(0, dtype=np.intp))
    k = int(labels.size)
    nan = float("nan")
    method = "templates fixed (these scenarios), name sets random: stratified mean of the per-set difference"
    if k == 0:
        return CrossedDifferenceResult(nan, nan, nan, nan, nan, "random", 0, 0, 0, 0, {}, {}, np.zeros(0),
                                       method=method, note="no set has values for both groups")
    n_t = np.bincount(inv, minlength=k).astype(float)
    mean_t = np.bincount(inv, weights=d, minlength=k) / n_t
    ss_t = np.bincount(inv, weights=(d - mean_t[inv]) ** 2, minlength=k)
    var_t = np.where(n_t > 1, ss_t / np.maximum(n_t - 1, 1), 0.0)
    w = var_t / n_t / k**2
    se = float(math.sqrt(w.sum()))
    df = _satterthwaite([(1.0 / (n * k**2), v, n - 1.0) for n, v in zip(n_t, var_t, strict=True)])
    est = float(mean_t.mean())
    stat = est / se if se > 0 else nan
    pvalue = float(2.0 * special.stdtr(df, -abs(stat))) if math.isfinite(stat) and math.isfinite(df) else nan
    single = [str(lbl) for lbl, n in zip(labels, n_t, strict=True) if n < 2]
    note = (f"{len(single)} template(s) with one set add no variance: {', '.join(single[:5])}" if single else None)
    return CrossedDifferenceResult(est, stat, pvalue, df, se, "random", k, int(d.size), int(d.size), int(d.size),
                                   {"sets": float(w.sum())}, {"s2_sets": float(var_t.mean())}, mean_t,
                                   method=method, note=note)
