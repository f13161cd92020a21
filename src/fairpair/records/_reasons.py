"""Why a comparison has no verdict, or only an ``inconclusive`` one: one list, one precedence.

Every output (terminal, report, ``results.json``, gate, JUnit, the pytest plugin) names a
comparison's reason from this list, and when several apply the first in precedence order is
the headline reason (the others may be listed after it). The order is the project's contract
(issue "Nothing pre-registered vanishes"):

1. ``incomplete run`` -- the run has not stored every answer yet;
2. ``not measured`` -- the comparison's measure has no stored values;
3. ``insufficient design`` -- the design cannot support a verdict for the declared estimand;
4. ``heterogeneous average`` -- the difference is spread so unevenly over scenarios that an
   average cannot be called equivalent (issue "Bias that lives in a few scenarios");
5. ``insufficient labels`` -- too few human labels to correct the judge (issue "Human labels");
   ``unreliable judge`` -- the judge failed its self-test on anchors with known scores, so a
   ``pass`` is withheld (``judge_self_test: warn``);
6. the interval and p-value reasons of an ``inconclusive``: the interval does not settle the
   margin, the adjusted p-value against zero, the adjusted p-value against the margin.

Adding a reason means adding a member here at its place in that order; nothing else keeps
its own list.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

__all__ = ["Reason", "REASON_VERDICT", "first_reason"]


# not StrEnum: str() and f"{}" of a member give "Reason.X" here, the value under StrEnum, and members reach f-strings
class Reason(str, Enum):  # noqa: UP042
    """A reason for no verdict (or an ``inconclusive`` one), in precedence order (first wins)."""

    INCOMPLETE_RUN = "incomplete run"
    NOT_MEASURED = "not measured"
    INSUFFICIENT_DESIGN = "insufficient design"
    HETEROGENEOUS_AVERAGE = "heterogeneous average"
    INSUFFICIENT_LABELS = "insufficient labels"
    UNRELIABLE_JUDGE = "unreliable judge"
    INTERVAL = "interval"
    ADJUSTED_P_ZERO = "adjusted p against zero"
    ADJUSTED_P_MARGIN = "adjusted p against the margin"

    @property
    def rank(self) -> int:
        """Position in the precedence order, 0 = highest."""
        return _ORDER.index(self)


_ORDER: tuple[Reason, ...] = tuple(Reason)

#: The verdict a comparison carries when this reason is its headline reason. ``None``: no
#: verdict at all (the comparison is listed with its reason only).
REASON_VERDICT: dict[Reason, str | None] = {
    Reason.INCOMPLETE_RUN: None,
    Reason.NOT_MEASURED: None,
    Reason.INSUFFICIENT_DESIGN: "insufficient design",
    Reason.HETEROGENEOUS_AVERAGE: "inconclusive",
    Reason.INSUFFICIENT_LABELS: "insufficient labels",
    Reason.UNRELIABLE_JUDGE: "inconclusive",
    Reason.INTERVAL: "inconclusive",
    Reason.ADJUSTED_P_ZERO: "inconclusive",
    Reason.ADJUSTED_P_MARGIN: "inconclusive",
}


def first_reason(reasons: Iterable[Reason | str]) -> Reason | None:
    """The reason of highest precedence among ``reasons`` (members or their values).

    Returns ``None`` for an empty iterable. Raises ``ValueError`` for a string that names
    no reason.
    """
    found = [r if isinstance(r, Reason) else Reason(r) for r in reasons]
    return min(found, key=lambda r: r.rank) if found else None
