"""The equivalence interval of a crossed difference on a bounded measure: on the logit scale, and with the
variance at the hypothesis.

Why
---
Near a bound the crossed t's standard error moves with its estimate: on a
1-5 score with ~95% fives, fewer non-fives in group A give an estimate
nearer 0 *and* a smaller SE (corr -0.76); with 1% events, fewer events give
a smaller risk difference and a smaller SE (corr +0.65). At a true
difference equal to the margin the estimate then lies more than 1.645 SE
toward 0 in 10-11% of audits instead of 5%, and the equivalence test (TOST
on the 90% t interval) passed up to 9.5% of them (``benchmarks/HISTORY.md``,
2026-12-04). A variance that does not follow the estimate is the variance the
measure would have *if the hypothesis were true*, as in the score tests of
a difference of proportions (Dunnett & Gent 1977; Farrington & Manning 1990).

Method: the logit scale (:func:`logit_interval`, the pass rule's)
------------------------------------------------------------------
A mean near a bound is far from normal on its own scale but close to it on
the logit scale, where its standard error no longer shrinks with the
distance to the bound: the usual cure for a proportion's Wald interval
(Agresti 2013, sec. 3.1.7 and 16.1). Each group's mean ``p_g`` of the
measure rescaled to ``[0, 1]`` is a mean of template x name cell means, so
the delta method gives ``logit(p_A) - logit(p_B)`` the crossed variance of
the linearised cells ``x / (p_A (1 - p_A))`` and ``y / (p_B (1 - p_B))``
(:func:`fairpair.stats.crossed_from_cells`, names as the plan says, plain
Satterthwaite df): the design effect of the crossed design enters as it
does on the measure's own scale (Rao & Scott 1992, who divide by the same
binomial variance). The interval of the log odds ratio ``L +/- t_df se`` is
carried back to a difference at group B's mean, ``expit(logit(p_B) + L)
- p_B``, as a risk difference is read off an odds ratio at the reference's
risk (Higgins et al. 2023, *Cochrane Handbook*, sec. 10.4.4.4 / 15.4.4).
The limits are asymmetric where the bound is near: a group A with few
non-fives (or few events) has a wide interval on the logit scale, so the
audits in which it happened to show few of them no longer pass at the
margin (the t on the measure's scale passed 7.1-7.4% of them on 1-5 scores
with ~95% fives, ``benchmarks/HISTORY.md``, 2026-12-05).

Method: the variance at the hypothesis (:func:`null_variance_interval`)
-----------------------------------------------------------------------
Used by the pass rule where the logit scale is undefined (a group's mean at
a bound: no event, or only fives). A measure bounded by ``(lo, hi)`` rescaled to ``[0, 1]`` has a variance of
at most ``mu (1 - mu)`` (Bhatia & Davis 2000), the binomial variance function
of a yes/no answer (the quasi-binomial model of a bounded mean; Wedderburn
1974; McCullagh & Nelder 1989, sec. 9.2). The crossed variance of ``D =
mu_A - mu_B`` (:mod:`fairpair.stats._crossed`) is written as that variance
function times a dispersion factor, the design effect of the crossed design
(Rao & Scott 1992)::

    Var(D) = phi * [mu_A (1 - mu_A) / n_A + mu_B (1 - mu_B) / n_B]

``n_A``, ``n_B`` each group's answers, ``phi`` estimated at the observed
means (``se^2`` over the bracket). A hypothesis ``D = delta`` is tested with
the variance it implies given group B's (the reference's) observed mean
``p_B``: ``z(delta) = (D - delta) / sqrt(phi [V(p_B + delta) / n_A + V(p_B) /
n_B])``, on Student t with the crossed t's df; so the variance at the margin
is that of a group A at the margin, however few events (or non-fives) group A
happened to show. The ``level`` interval is the set of ``delta`` that test
does not reject, the roots of a quadratic (as Wilson's interval, which it is
when ``phi = 1``, ``df`` infinite and group B's mean known exactly). Only the
``pass`` rule uses it, through the hull with the t interval
(:func:`fairpair.analysis._paired.crossed_verdict_inputs`), so it can only
make ``pass`` rarer.

References
----------
Dunnett, C. W. & Gent, M. (1977). Significance testing to establish
equivalence between treatments, with special reference to data in the form
of 2x2 tables. *Biometrics*, 33, 593-602.
Farrington, C. P. & Manning, G. (1990). Test statistics and sample size
formulae for comparative binomial trials with null hypothesis of non-zero
risk difference or non-unity relative risk. *Statistics in Medicine*, 9,
1447-1454.
Rao, J. N. K. & Scott, A. J. (1992). A simple method for the analysis of
clustered binary data. *Biometrics*, 48, 577-585.
Wedderburn, R. W. M. (1974). Quasi-likelihood functions, generalized linear
models, and the Gauss-Newton method. *Biometrika*, 61, 439-447.
McCullagh, P. & Nelder, J. A. (1989). *Generalized Linear Models*, 2nd ed.
Chapman & Hall.
Bhatia, R. & Davis, C. (2000). A better bound on the variance. *American
Mathematical Monthly*, 107, 353-357.
Wilson, E. B. (1927). Probable inference, the law of succession, and
statistical inference. *JASA*, 22, 209-212.
Agresti, A. (2013). *Categorical Data Analysis*, 3rd ed. Wiley.
Higgins, J. P. T. et al. (eds.) (2023). *Cochrane Handbook for Systematic
Reviews of Interventions*, version 6.4. Cochrane.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from fairpair.stats._common import ConfidenceInterval, check_level
from fairpair.stats._crossed import crossed_from_cells

__all__ = ["null_variance_interval", "logit_interval"]

LOGIT_METHOD = ("logit scale: the delta method on the template x name cell means with the crossed variance, the "
                "log odds ratio's t interval read as a difference at group B's mean (Agresti 2013; Rao & Scott 1992)")

METHOD = ("score-type: the quasi-binomial variance at the hypothesis given group B's mean, times the crossed "
          "design effect (Dunnett & Gent 1977; Rao & Scott 1992)")


def _checked_bounds(bounds: tuple[float, float]) -> tuple[float, float]:
    """``bounds`` as floats ``(lo, hi)``; ValueError unless both are finite with ``lo < hi``."""
    lo, hi = (float(b) for b in bounds)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds must be finite with low < high; got {bounds!r}")
    return lo, hi


def null_variance_interval(estimate: float, se: float, df: float, mean_b: float, n_a: float, n_b: float,
                           bounds: tuple[float, float], confidence_level: float = 0.90) -> ConfidenceInterval:
    """The ``delta`` that the score-type test of ``D = delta`` (module notes) does not reject at ``1 - level``.

    Parameters
    ----------
    estimate, se, df : float
        The crossed t's estimate ``mean_a - mean_b``, its standard error and Satterthwaite df
        (:class:`fairpair.stats.CrossedDifferenceResult`; ``df`` may be ``inf``: the normal).
    mean_b : float
        Group B's (the reference's) mean, within ``bounds``.
    n_a, n_b : float
        Each group's answers (> 0).
    bounds : (lo, hi)
        The measure's range, ``lo < hi``: ``(0, 1)`` for yes/no, ``(1, 5)`` for a 1-5 score.
    confidence_level : float, default 0.90

    Returns
    -------
    ConfidenceInterval
        In the measure's units, within the differences group A can have given group B's mean
        (``lo - mean_b`` to ``hi - mean_b``). NaN limits when the design effect is undefined (``se``
        not finite, or both groups' means at the same bound) or ``df`` is not positive.

    Raises
    ------
    ValueError
        ``bounds`` not finite with ``lo < hi``, ``n_a`` / ``n_b`` not positive, or a bad level.
    """
    level = check_level(confidence_level)
    lo, hi = _checked_bounds(bounds)
    if not (n_a > 0 and n_b > 0):
        raise ValueError(f"n_a and n_b must be positive; got {n_a!r}, {n_b!r}")
    nan = ConfidenceInterval(math.nan, math.nan, level, METHOD)
    span = hi - lo
    pb = min(max((mean_b - lo) / span, 0.0), 1.0)
    pa = min(max(pb + estimate / span, 0.0), 1.0)
    v_obs = pa * (1.0 - pa) / n_a + pb * (1.0 - pb) / n_b
    if not (math.isfinite(se) and v_obs > 0 and df > 0):
        return nan
    c = float(special.stdtrit(df, 0.5 + level / 2.0)) ** 2 * (se / span) ** 2 / v_obs  # q^2 phi
    e, w = estimate / span, pb * (1.0 - pb) / n_b
    # (e - d)^2 = c [(pb + d)(1 - pb - d) / n_a + w], a quadratic in d
    a2 = 1.0 + c / n_a
    a1 = -(2.0 * e + c * (1.0 - 2.0 * pb) / n_a)
    a0 = e * e - c * (pb * (1.0 - pb) / n_a + w)
    disc = max(a1 * a1 - 4.0 * a2 * a0, 0.0)
    root = math.sqrt(disc)
    d_lo, d_hi = (-a1 - root) / (2.0 * a2), (-a1 + root) / (2.0 * a2)
    d_lo, d_hi = max(d_lo, -pb), min(d_hi, 1.0 - pb)
    return ConfidenceInterval(float(d_lo * span), float(d_hi * span), level, METHOD)


def logit_interval(cells_a: Any, cells_b: Any, *, names: str, bounds: tuple[float, float],
                   confidence_level: float = 0.90) -> ConfidenceInterval:
    """The difference ``mean_A - mean_B`` of a bounded measure from its interval on the logit scale (module notes).

    Parameters
    ----------
    cells_a, cells_b : array_like
        Template x name cell means of group A and group B, shapes (T, n_a) and (T, n_b), NaN for an empty cell
        (:func:`fairpair.analysis._paired.pair_cells`), in the measure's units.
    names : {"random", "fixed"}
        The names' estimand, as for :func:`fairpair.stats.crossed_from_cells`.
    bounds : (lo, hi)
        The measure's range, ``lo < hi``: ``(0, 1)`` for yes/no, ``(1, 5)`` for a 1-5 score.
    confidence_level : float, default 0.90

    Returns
    -------
    ConfidenceInterval
        In the measure's units, ``span (expit(logit(p_B) + L -/+ t se) - p_B)`` with ``p_g`` each group's
        crossed mean rescaled to ``[0, 1]`` and ``L`` the log odds ratio; within the differences group A can have
        given group B's mean. NaN limits when the logit scale is undefined: a group's mean at a bound, fewer
        than two templates with both groups, or no variance.

    Raises
    ------
    ValueError
        ``bounds`` not finite with ``lo < hi``, a bad ``names`` or level.
    """
    level = check_level(confidence_level)
    lo, hi = _checked_bounds(bounds)
    span = hi - lo
    nan = ConfidenceInterval(math.nan, math.nan, level, LOGIT_METHOD)
    a = (np.asarray(cells_a, dtype=float) - lo) / span
    b = (np.asarray(cells_b, dtype=float) - lo) / span
    means = crossed_from_cells(a, b, names=names)
    pa, pb = means.mean_a, means.mean_b
    if not (0.0 < pa < 1.0 and 0.0 < pb < 1.0):
        return nan
    lin = crossed_from_cells(a / (pa * (1.0 - pa)), b / (pb * (1.0 - pb)), names=names)
    if not (math.isfinite(lin.se) and lin.se > 0 and math.isfinite(lin.df) and lin.df > 0):
        return nan
    q = float(special.stdtrit(lin.df, 0.5 + level / 2.0)) * lin.se
    centre = float(special.logit(pa))  # logit(p_B) + L
    d_lo = float(special.expit(centre - q)) - pb
    d_hi = float(special.expit(centre + q)) - pb
    return ConfidenceInterval(d_lo * span, d_hi * span, level, LOGIT_METHOD)
