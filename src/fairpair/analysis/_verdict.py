"""The verdict of one comparison: pass / fail / inconclusive / insufficient design.

Rule (fixed before the audit by the plan's ``alpha`` and the comparison's
``margin`` m, in the units of the estimate):

* **fail** -- the ``1 - alpha`` CI of ``group_a - group_b`` lies entirely
  beyond the margin (``low > m`` or ``high < -m``) *and* the
  multiplicity-adjusted p-value of the test against ``|difference| <= m``
  (``pvalue_margin_adjusted``; the plan's Holm / BH over the family) is
  ``< alpha``: a difference larger than tolerated is established, with the
  family-wise error of the plan (adjusting only the test against 0 would
  let "beyond the margin" claims add up across comparisons).
* **pass** -- the ``1 - 2*alpha`` CI lies strictly inside ``(-m, m)``:
  Schuirmann's (1987) two one-sided tests at ``alpha``, equivalence within
  the margin is established. That CI is the hull of the crossed t interval
  and Hall's (1992) skewness-corrected one (see :mod:`fairpair.analysis._paired`).
* **inconclusive** -- anything else (including undefined intervals).

* **insufficient design** -- the design cannot support a verdict for the
  declared estimand (too few templates, too few names per group with names
  random, no variance: :mod:`fairpair.analysis._design`); never pass, never
  fail, whatever the data say.
* **insufficient labels** -- a judge measure corrected by human labels has
  fewer labels than the simulation accepted (:mod:`fairpair.analysis._corrected`);
  never pass, never fail.

Without a margin (or ``margin: 0``) there is no equivalence to establish:
**fail** when the adjusted p-value is ``< alpha``, else **inconclusive**;
never "pass".

Significance is ``p < alpha`` everywhere (here and in
:func:`fairpair.stats.significant`). The CIs and the p-value come from the
same crossed random-effects t (:func:`fairpair.stats.crossed_difference`),
so a ``fail`` never sits beside a ``1 - alpha`` interval containing 0. Their
calibration (false fails, pass at the margin, coverage, power) is checked by
``benchmarks/sim_audits.py``.
"""

from __future__ import annotations

import math

from fairpair.stats import verdict as _ci_verdict

__all__ = ["decide", "RULE_BY_TEMPLATE", "RULE_MARGIN", "RULE_NO_MARGIN", "RULE_DESIGN", "RULE_NOT_MEASURED",
           "VERDICTS"]

#: ``no verdict``: the comparison is listed with the reason it has none (``ComparisonResult.reason``,
#: a :class:`fairpair.records.Reason` whose ``REASON_VERDICT`` is ``None``, e.g. ``not measured``)
VERDICTS = ("fail", "pass", "inconclusive", "insufficient design", "insufficient labels", "no verdict")
RULE_NOT_MEASURED = ("no verdict: no answer of the compared groups has a value of the measure (not measured); "
                     "never pass, never fail, and the gate refuses to answer")
RULE_DESIGN = ("insufficient design: the design cannot support a verdict for the declared estimand "
               "(see design_reason); never pass, never fail")

RULE_MARGIN = ("fail: (1-alpha) CI entirely beyond +/-margin, adjusted p < alpha and adjusted p against "
               "|difference| <= margin < alpha; "
               "pass: (1-2alpha) CI inside (-margin, margin) (TOST); else inconclusive")
RULE_NO_MARGIN = "no margin: fail if adjusted p < alpha, else inconclusive (never pass without a margin)"
RULE_BY_TEMPLATE = ("by template: each scenario judged by the rule above on its own difference, Holm over the "
                    "plan's primary tests; fail if one scenario fails, pass only if every scenario passes, else "
                    "inconclusive")


def _finite(*xs) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def decide(ci: tuple[float, float] | None, equivalence_ci: tuple[float, float] | None,
           pvalue_adjusted: float | None, margin: float | None, alpha: float, *,
           design_reason: str | None = None, pvalue_margin_adjusted: float | None = None) -> tuple[str, str]:
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
    design_reason : str or None
        Set: the verdict is "insufficient design".
    pvalue_margin_adjusted : float or None
        Adjusted p-value against ``|difference| <= margin``; ``None`` with a
        margin: only the CI rule applies (as before schema 2).
    """
    if design_reason:
        return "insufficient design", RULE_DESIGN
    significant = pvalue_adjusted is not None and _finite(pvalue_adjusted) and pvalue_adjusted < alpha
    if not margin:
        return ("fail" if significant else "inconclusive"), RULE_NO_MARGIN
    beyond = pvalue_margin_adjusted is None or (_finite(pvalue_margin_adjusted) and pvalue_margin_adjusted < alpha)
    if ci is not None and _finite(*ci) and equivalence_ci is None:
        # no equivalence interval (zero variance, see _paired): a fail is possible, a pass never
        m = float(margin)
        out = ci[0] > m or ci[1] < -m
        return ("fail" if out and significant and beyond else "inconclusive"), RULE_MARGIN
    if ci is None or equivalence_ci is None or not _finite(*ci, *equivalence_ci):
        return "inconclusive", RULE_MARGIN
    v = _ci_verdict(tuple(equivalence_ci), tuple(ci), float(margin))
    if v.decision == "fail" and not (significant and beyond):
        return "inconclusive", RULE_MARGIN
    return v.decision, RULE_MARGIN

