"""The verdict of one comparison: pass / fail / inconclusive.

Rule (fixed before the audit by the plan's ``alpha`` and the comparison's
``margin`` m, in the units of the estimate):

* **fail** -- the ``1 - alpha`` CI of ``group_a - group_b`` lies entirely
  beyond the margin (``low > m`` or ``high < -m``) *and* the
  multiplicity-adjusted p-value of the paired test is ``< alpha``: a
  difference larger than tolerated is established.
* **pass** -- the ``1 - 2*alpha`` CI lies strictly inside ``(-m, m)``:
  Schuirmann's (1987) two one-sided tests at ``alpha``, equivalence within
  the margin is established.
* **inconclusive** -- anything else (including undefined intervals).

Without a margin (or ``margin: 0``) there is no equivalence to establish:
**fail** when the adjusted p-value is ``< alpha``, else **inconclusive**;
never "pass".

The CIs are the cluster-bootstrap intervals resampling templates (see
:mod:`fairpair.analysis._paired`), so the verdict respects the nesting of
answers in templates; the p-value is McNemar's or Wilcoxon's. Their
calibration (false fails, power, coverage) is checked by
``benchmarks/sim_calibration.py``.
"""

from __future__ import annotations

import math

from fairpair.stats._equivalence import verdict as _ci_verdict

__all__ = ["decide", "RULE_MARGIN", "RULE_NO_MARGIN"]

RULE_MARGIN = ("fail: (1-alpha) CI entirely beyond +/-margin and adjusted p < alpha; "
               "pass: (1-2alpha) CI inside (-margin, margin) (TOST); else inconclusive")
RULE_NO_MARGIN = "no margin: fail if adjusted p < alpha, else inconclusive (never pass without a margin)"


def _finite(*xs) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def decide(ci: tuple[float, float] | None, equivalence_ci: tuple[float, float] | None,
           pvalue_adjusted: float | None, margin: float | None, alpha: float) -> tuple[str, str]:
    """Return ``(verdict, rule)`` for one comparison (see the module notes).

    Parameters
    ----------
    ci, equivalence_ci : (low, high) or None
        The ``1 - alpha`` and ``1 - 2*alpha`` intervals of the difference.
    pvalue_adjusted : float or None
        After the plan's correction; ``None``/NaN never fails.
    margin : float or None
        ``None`` or 0: significance-only rule.
    alpha : float
    """
    significant = _finite(pvalue_adjusted) and pvalue_adjusted < alpha
    if not margin:
        return ("fail" if significant else "inconclusive"), RULE_NO_MARGIN
    if ci is None or equivalence_ci is None or not _finite(*ci, *equivalence_ci):
        return "inconclusive", RULE_MARGIN
    v = _ci_verdict(tuple(equivalence_ci), tuple(ci), float(margin))
    if v.decision == "fail" and not significant:
        return "inconclusive", RULE_MARGIN
    return v.decision, RULE_MARGIN
