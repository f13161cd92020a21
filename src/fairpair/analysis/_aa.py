"""A/A controls: one group's variants split in two pseudo-groups, analysed as real comparisons.

For every ``aa_control`` design (``{kind: aa_control, attribute: origen,
group: espana}``) and every measure the plan compares on that attribute,
the two halves of the group's variants (``espana~1`` vs ``espana~2``,
:meth:`fairpair.battery.AAControlDesign.pseudo_groups`) are compared through
:func:`fairpair.analysis._analyze.analyze_loaded`, i.e. the very inference,
verdict rule and multiplicity correction of the real comparisons (Holm, or
the plan's correction, within the A/A family; no margin, so the verdict is
``fail`` or ``inconclusive``). Both halves belong to one group, so the true
difference is zero up to the names' own effects: the A/A estimates are the
empirical noise floor of the audit, and a ``fail`` flags it (the answers or
the analysis do not behave as the test assumes: e.g. a name the model
treats differently, nondeterminism, a measure that drifts).

This is the A/A test of online experimentation (Kohavi, Tang & Xu 2020,
ch. 19), applied to a counterfactual audit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fairpair.analysis._data import RunData
from fairpair.records import ComparisonResult

if TYPE_CHECKING:
    from fairpair.battery import Battery

__all__ = ["AAOutcome", "analyze_aa"]


@dataclass
class AAOutcome:
    comparisons: list[ComparisonResult] = field(default_factory=list)
    flag: str | None = None
    notes: list[str] = field(default_factory=list)


def analyze_aa(battery: Battery, data: RunData) -> AAOutcome:
    """Run the A/A controls of a battery on loaded data (empty outcome when it has none)."""
    from fairpair.analysis._analyze import analyze_loaded

    comps = []
    for i, d in enumerate(battery.designs):  # only A/A controls add comparisons of their own
        comps += d.control_comparisons(battery, battery.design_id(i))
    if not comps:
        return AAOutcome()
    plan = battery.analysis.model_copy(update={"comparisons": comps})
    derived = battery.model_copy(update={"analysis": plan})
    results, _omnibus, notes = analyze_loaded(derived, data, heterogeneity=False, always_compared=())
    failed = [c for c in results if c.verdict == "fail"]
    flag = None
    if failed:
        flag = ("; ".join(f"{c.measure} differs between two halves of the same group ({c.group_a} vs "
                          f"{c.group_b}, target {c.target})" for c in failed)
                + ": the answers or the analysis do not behave as the test assumes; read the real comparisons "
                  "with this noise floor in mind")
    return AAOutcome(results, flag, [f"A/A control: {n}" for n in notes])
