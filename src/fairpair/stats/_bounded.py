"""The equivalence interval of a crossed difference on a bounded measure, with the variance at the hypothesis.

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

Method
------
A measure bounded by ``(lo, hi)`` rescaled to ``[0, 1]`` has a variance of
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
"""

from __future__ import annotations

import math

from scipy import special

from fairpair.stats._common import ConfidenceInterval, check_level

__all__ = ["null_variance_interval"]

METHOD = ("score-type: the quasi-binomial variance at the hypothesis given group B's mean, times the crossed "
          "design effect (Dunnett & Gent 1977; Rao & Scott 1992)")


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
    lo, hi = (float(b) for b in bounds)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds must be finite with low < high; got {bounds!r}")
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
