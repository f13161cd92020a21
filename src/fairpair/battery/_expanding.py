"""What a design's ``expand`` receives: :class:`ExpandContext`, the protocol the cases stage implements.

The designs (:mod:`fairpair.battery._designs`) carry their own expansion, but the renderer that
turns a template into a :class:`~fairpair.records.Case` lives in :mod:`fairpair.cases`, a floor
above the battery; the design sees it only through this protocol
(:class:`fairpair.cases.ExpandContext` implements it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from fairpair.records import Case

if TYPE_CHECKING:  # pragma: no cover
    from fairpair.battery._schema import Attribute, Battery, Template

__all__ = ["ExpandContext"]


class ExpandContext(Protocol):
    """The battery (``battery``), this design's id (``did``) and kind, its templates and
    repetitions (``reps``), and the renderer.

    ``render(template, rep, **how)`` renders one case of this design; ``exclude(reason, count)``
    records an exclusion in the expansion manifest; ``positions(attr, groups)`` is the number of
    variant positions the groups share (1 for a writing style); ``indefinite_article(phrase)``
    is English "a"/"an" by sound.
    """

    battery: Battery
    did: str
    kind: str
    templates: list[Template]
    reps: int

    def render(self, t: Template, rep: int, **how: Any) -> Case: ...

    def exclude(self, reason: str, count: int) -> None: ...

    def positions(self, attr: Attribute, groups: list[str]) -> int: ...

    def indefinite_article(self, phrase: str) -> str: ...
