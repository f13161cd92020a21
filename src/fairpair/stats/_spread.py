"""Difference in within-cell spread between two groups, templates and names as random factors.

A chatbot can treat two groups alike on average and still answer one of
them less predictably: the same question about the same scenario, asked
again with a name of group A, gives scores that scatter more than with a
name of group B (JobFair, Wang et al. 2024, test such a gap in spread beside
the gap in the mean). The spread of one template x name cell is the
standard deviation of its repetitions; :func:`spread_difference` compares
the groups' mean within-cell standard deviation with the same crossed
inference as their means (:func:`fairpair.stats.crossed_difference`).

Statistic
---------
For each template x name cell with ``r >= 2`` answers, ``s_tn`` is the
sample standard deviation (``ddof=1``) divided by ``c4(r) =
sqrt(2 / (r - 1)) Gamma(r / 2) / Gamma((r - 1) / 2)``, unbiased for the
cell's SD under normal answers (Cureton 1968; ASTM E2587), so cells with
fewer answers (missing ones) do not look less spread. ``S_A`` / ``S_B``
are each group's mean of ``s_tn`` over templates and names (the
``mean_a`` / ``mean_b`` of :func:`~fairpair.stats.crossed_from_cells` on
the SD cells: empty cells filled from the additive template + name fit).
The estimate is the log ratio ``L = log(S_A / S_B)`` (0: the same
spread; ``log(1.5) = 0.41``: group A's answers scatter 1.5 times as much).

Inference
---------
Fieller's (1954) method: the ratio ``rho = S_A / S_B`` is the value at which
the linear contrast ``S_A - rho S_B`` (group A's mean cell SD minus ``rho``
times group B's) is 0, and that contrast is a difference of two groups' cell
means, so the crossed estimator gives its t statistic with templates and
(unless fixed) names as random factors (method of moments, Satterthwaite df,
the name-pooling pretest; Clark 1973; :mod:`fairpair.stats._crossed`): template
effects on spread, template x group effects and names whose answers scatter
more than others' all count. The test of equal spreads is the crossed t of
``S_A - S_B`` (``statistic``, ``df``, ``pvalue``); the ``level`` interval is
the set of ratios ``rho`` whose contrast's t is within ``t_df(rho)``'s
``(1 + level) / 2`` quantile (found by root finding on ``log rho``; on the log
scale for ``estimate``), so the interval excludes a ratio exactly when the
test of that ratio rejects it, and excludes 1 exactly when ``pvalue < 1 -
level``. The interval can be unbounded (``inf`` limits) when group B's mean SD
is itself not clearly above 0. ``se`` is the delta-method standard error of
``estimate`` (Oehlert 1992), shown for scale only.

Why not the delta method's ``L / se``: where few cells carry the spread (a
1-5 score with 95% fives: most cells of five answers are all fives and their
SD is 0) the log ratio of two small means is far from its linearisation: in
``benchmarks/sim_audits.py`` (ceiling 1-5 scores, 20 templates x 3 names x 5
repetitions, names fixed) the delta-method t failed 7.1% of fair audits (SD
of the t 1.15) where the crossed t of the difference, the test inverted
here, failed 4.3%.
With ``templates="fixed"`` the contrast goes through
:func:`~fairpair.stats.scenario_differences_from_cells` instead (the claim
is about these scenarios).

Cells with one answer carry no spread and are left out (a design with one
repetition has no spread statistic). Yes/no answers are not for this
statistic: their spread is a function of their rate (``sqrt(p (1 - p))``).
A group whose every cell is constant (``S = 0``) gives no log ratio.
Calibration (level, coverage and power in whole audits with name effects,
template x group effects and spread effects of templates and names):
``benchmarks/sim_audits.py``.

References
----------
Wang, Z., et al. (2024). JobFair: A framework for benchmarking gender
hiring bias in large language models. arXiv:2406.15484.
Cureton, E. E. (1968). Unbiased estimation of the standard deviation.
*The American Statistician*, 22(1), 22.
Clark, H. H. (1973). The language-as-fixed-effect fallacy. *JVLVB*, 12, 335-359.
Oehlert, G. W. (1992). A note on the delta method. *The American
Statistician*, 46, 27-29.
Fieller, E. C. (1954). Some problems in interval estimation. *JRSS B*, 16(2), 175-185.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special

from fairpair.stats._common import ConfidenceInterval, as_labels, check_choice, check_level
from fairpair.stats._crossed import NAMES, POOL, crossed_from_cells, group_names

__all__ = ["SpreadDifferenceResult", "spread_difference", "spread_from_cells", "cell_sds", "c4"]

#: Beyond this distance from the estimate on the log scale (a ratio of e^30) a Fieller limit is infinite.
_UNBOUNDED = 30.0


def c4(n: Any) -> np.ndarray:
    """``E[s] / sigma`` for the sample SD (``ddof=1``) of ``n`` normal values: ``sqrt(2/(n-1)) G(n/2)/G((n-1)/2)``.

    NaN for ``n < 2``. ``c4(2) = sqrt(2/pi) = 0.7979``, ``c4(5) = 0.9400`` (ASTM E2587 table).
    """
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.sqrt(2.0 / (n - 1.0)) * np.exp(special.gammaln(n / 2.0) - special.gammaln((n - 1.0) / 2.0))
    return np.where(n >= 2, out, np.nan)


def cell_sds(values: Any, template_code: Any, name_code: Any, n_templates: int, n_names: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """Unbiased within-cell SDs ``s / c4(r)`` of a (n_templates, n_names) grid of cells, and the answer counts.

    ``template_code`` / ``name_code``: integer codes in ``[0, n_templates)`` / ``[0, n_names)``; NaN
    values are left out. Cells with fewer than two answers are NaN.
    """
    v = np.asarray(values, dtype=float).ravel()
    ok = ~np.isnan(v)
    flat = np.asarray(template_code, dtype=np.intp)[ok] * n_names + np.asarray(name_code, dtype=np.intp)[ok]
    size = n_templates * n_names
    cnt = np.bincount(flat, minlength=size).astype(float)
    tot = np.bincount(flat, weights=v[ok], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = tot / cnt
        dev = v[ok] - mean[flat]
        ss = np.bincount(flat, weights=dev * dev, minlength=size)
        sd = np.sqrt(ss / (cnt - 1.0)) / c4(cnt)
    sd = np.where(cnt >= 2, sd, np.nan)
    return sd.reshape(n_templates, n_names), cnt.reshape(n_templates, n_names)


@dataclass(frozen=True)
class SpreadDifferenceResult:
    """Result of :func:`spread_difference`.

    Attributes
    ----------
    estimate : float
        ``log(sd_a / sd_b)``, the log ratio of the groups' mean within-cell SDs (natural log).
    sd_a, sd_b : float
        Mean unbiased within-cell SD of each group, in the measure's units.
    se : float
        Delta-method standard error of ``estimate`` (scale only: the test and interval are Fieller's).
    df, statistic, pvalue : float
        The crossed t of ``sd_a - sd_b`` (Satterthwaite df) and its two-sided Student t p-value: the test
        of equal spreads; NaN when undefined.
    names, templates : str
        The estimand (``"random"`` / ``"fixed"``), as for the mean.
    n_templates, n_names_a, n_names_b : int
        Templates and names with a cell of at least two answers in both groups / each group.
    n_cells : int
        Cells with at least two answers (the cells that carry a spread).
    method : str
    note : str or None
    """

    estimate: float
    sd_a: float
    sd_b: float
    se: float
    df: float
    statistic: float
    pvalue: float
    names: str
    templates: str
    n_templates: int
    n_names_a: int
    n_names_b: int
    n_cells: int
    method: str
    note: str | None = None
    #: ``rho -> (estimate, se, df)`` of the crossed contrast ``sd_a - rho sd_b`` (None when undefined)
    _contrast: Callable[[float], tuple[float, float, float]] | None = field(default=None, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def ratio(self) -> float:
        """``sd_a / sd_b`` (``exp(estimate)``)."""
        return float(np.exp(self.estimate))

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Fieller's interval of ``estimate`` (log scale): the ``log rho`` whose contrast ``sd_a - rho sd_b``
        the crossed t does not reject at ``1 - confidence_level``; ``-inf`` / ``inf`` limits when unbounded,
        NaN limits when undefined."""
        level = check_level(confidence_level)
        if level not in self._cache:
            self._cache[level] = self._fieller(level)
        low, high = self._cache[level]
        return ConfidenceInterval(low, high, level, self.method)

    def equivalence_interval(self, alpha: float = 0.05) -> ConfidenceInterval:
        """The ``1 - 2 alpha`` interval of the ``pass`` rule (two one-sided Fieller tests at ``alpha``)."""
        return self.confidence_interval(1.0 - 2.0 * alpha)

    def contrast_t(self, rho: float) -> tuple[float, float]:
        """``(t, df)`` of the crossed t of ``sd_a - rho sd_b`` (NaN when undefined): 0 at ``rho = ratio``."""
        if self._contrast is None or not (np.isfinite(rho) and rho > 0):
            return float("nan"), float("nan")
        est, se, df = self._contrast(float(rho))
        if not (np.isfinite(se) and se > 0 and np.isfinite(df) and df > 0):
            return float("nan"), float("nan")
        return est / se, df

    def pvalue_beyond(self, max_ratio: float | None) -> float:
        """Two-sided p-value against ``1 / max_ratio <= rho <= max_ratio`` (the spread margin): the Fieller test
        of the nearer bound, ``min(1, 2 P(T > |t|))``; 1 when the estimate lies inside the bounds, :attr:`pvalue`
        without a bound. Below ``alpha`` exactly when the ``1 - alpha`` interval lies beyond the bound."""
        if not max_ratio:
            return self.pvalue
        m = float(np.log(max_ratio))
        if not np.isfinite(self.estimate):
            return float("nan")
        if abs(self.estimate) <= m:
            return 1.0
        t, df = self.contrast_t(float(np.exp(m if self.estimate > 0 else -m)))
        return float(min(1.0, 2.0 * special.stdtr(df, -abs(t)))) if np.isfinite(t) else float("nan")

    def _fieller(self, level: float) -> tuple[float, float]:
        nan = float("nan")
        if not (np.isfinite(self.estimate) and np.isfinite(self.pvalue)):
            return nan, nan
        x0 = self.estimate

        def f(x: float) -> float:  # |t(rho)| minus its critical value: < 0 inside the interval
            t, df = self.contrast_t(float(np.exp(x)))
            return abs(t) - float(special.stdtrit(df, 0.5 + level / 2.0)) if np.isfinite(t) else nan

        out = []
        # first bracket: around the delta method's limit (usually close), then doubling outwards
        q = float(special.stdtrit(self.df, 0.5 + level / 2.0)) if np.isfinite(self.df) else 2.0
        step0 = max(0.8 * q * self.se, 0.01) if np.isfinite(self.se) else 0.1
        for sign in (-1.0, 1.0):
            inner, step = x0, step0
            while True:
                x = x0 + sign * step
                fx = f(x)
                if not np.isfinite(fx):
                    return nan, nan
                if fx >= 0:
                    out.append(float(optimize.brentq(f, min(inner, x), max(inner, x), xtol=1e-6)))
                    break
                if step > _UNBOUNDED:
                    out.append(sign * float("inf"))
                    break
                inner, step = x, 1.6 * step if inner == x0 else 2.0 * step
        return out[0], out[1]
    def ratio_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """:meth:`confidence_interval` on the ratio scale (``exp`` of its limits)."""
        ci = self.confidence_interval(confidence_level)
        return ConfidenceInterval(float(np.exp(ci.low)), float(np.exp(ci.high)), ci.confidence_level, ci.method)


def spread_from_cells(sd_a: Any, sd_b: Any, *, names: str = "random", templates: str = "random",
                      pool: float | None = POOL) -> SpreadDifferenceResult:
    """:func:`spread_difference` from within-cell SDs: arrays (T, n_a) and (T, n_b), NaN for cells without one.

    The SDs are :func:`cell_sds`' (unbiased, ``s / c4(r)``); the same T templates in the same order.
    """
    check_choice("names", names, NAMES)
    check_choice("templates", templates, ("random", "fixed"))
    a = np.asarray(sd_a, dtype=float)
    b = np.asarray(sd_b, dtype=float)
    method = (f"log ratio of mean within-cell SDs; Fieller's interval from the crossed t (templates {templates}, "
              f"names {names}), Satterthwaite df")
    n_cells = int((~np.isnan(a)).sum() + (~np.isnan(b)).sum())
    nan = float("nan")

    def _crossed(x: np.ndarray, y: np.ndarray) -> Any:
        if templates == "fixed":
            from fairpair.stats._scenarios import scenario_differences_from_cells

            return scenario_differences_from_cells(x, y, names=names).as_crossed()
        return crossed_from_cells(x, y, names=names, pool=pool)

    base = _crossed(a, b)
    sa, sb = float(base.mean_a), float(base.mean_b)
    counts = (base.n_templates, base.n_names_a, base.n_names_b)
    if not (np.isfinite(sa) and np.isfinite(sb)):
        why = ("no template has a cell of at least two answers in both groups: the spread needs repetitions "
               "(at least 2 answers per template x name cell)")
        return SpreadDifferenceResult(nan, sa, sb, nan, nan, nan, nan, names, templates, *counts, n_cells, method,
                                      why)
    if not (sa > 0 and sb > 0):
        which = " and ".join(g for g, s in (("A", sa), ("B", sb)) if not s > 0)
        return SpreadDifferenceResult(nan, sa, sb, nan, nan, nan, nan, names, templates, *counts, n_cells, method,
                                      f"every answer of group {which} repeats its cell's: no spread, no log ratio")
    lin = _crossed(a / sa, b / sb)  # the delta method's linearisation: se of the log ratio, for scale
    est = float(np.log(sa / sb))

    def contrast(rho: float) -> tuple[float, float, float]:
        r = _crossed(a, rho * b)
        return float(r.estimate), float(r.se), float(r.df)

    se, df = float(base.se), float(base.df)
    if np.isfinite(se) and se > 0 and np.isfinite(df) and df > 0:
        stat = float(base.estimate) / se
        p = float(2.0 * special.stdtr(df, -abs(stat)))
    else:
        stat = p = nan
    return SpreadDifferenceResult(est, sa, sb, float(lin.se), df, float(stat), p, names, templates, *counts, n_cells,
                                  method, base.note, contrast)


def spread_difference(values: Any, template: Any, name: Any, group: Any, *, groups: tuple[Any, Any] | None = None,
                      names: str = "random", templates: str = "random",
                      pool: float | None = POOL) -> SpreadDifferenceResult:
    """Log ratio of two groups' mean within-cell SDs, templates and names as random factors.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        One answer's measure each (continuous, count or a 1-5 score); NaN for a missing answer.
    template, name, group : array_like, shape (n,)
        Template, name (nested in group) and group of each answer; exactly two groups.
    groups : (a, b), optional
        Which label is group A (the ratio is ``A / B``); default the two labels in sorted order.
    names, templates : {"random", "fixed"}
        The estimand, as in :func:`fairpair.stats.crossed_difference`.
    pool : float or None
        The name-pooling pretest's level (:data:`fairpair.stats._crossed.POOL`; None: never pool).

    Returns
    -------
    SpreadDifferenceResult
        See the module notes. Undefined quantities are NaN with a ``note``; never raises on such data.

    Raises
    ------
    ValueError
        Mismatched lengths, a bad ``names`` / ``templates``, not exactly two groups, or a name in both groups.
    """
    v = np.asarray(values, dtype=float).ravel()
    nc, name_in_a = group_names(group, name, v.size, groups)
    tl, tc = as_labels(template, "template", v.size)
    sd, _cnt = cell_sds(v, tc, nc, len(tl), name_in_a.size)
    return spread_from_cells(sd[:, name_in_a], sd[:, ~name_in_a], names=names, templates=templates, pool=pool)
