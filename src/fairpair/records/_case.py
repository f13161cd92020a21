"""The ``Case`` record: one conversation to send, and how it is matched."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["Case", "case_json", "case_from_json"]


class Case(BaseModel):
    """One conversation, fully rendered, with its place in the design.

    Attributes
    ----------
    id:
        Content hash (20 hex chars) of battery name, design, template, groups,
        variants, repetition and the rendered conversation: stable across
        machines, and the store's resume key.
    matched_set:
        Cases that differ only in the signal share it. Counterfactual and
        crossed designs: ``design/template/r<rep>/p<position>`` (variant *k*
        of every group); two-party and baseline: ``design/template/r<rep>``.
    block:
        ``template/r<rep>``: links a case to the baseline of the same
        template and repetition across designs.
    groups:
        Attribute (or ``sub``/``res`` in the two-party design, the candidate
        slot ``candidate_1``... in the ranking design) -> group.
    variants:
        Attribute (or ``sub``/``res``, or the candidate slot) -> the literal value the model saw.
    messages:
        System prompt and earlier turns, OpenAI-style.
    turns:
        User messages sent one after another; the reply to the last is measured.
    meta:
        The template's ``meta`` labels; a ranking case adds ``ranking``:
        ``attribute``, ``order`` (``latin_square``/``rotations``),
        ``order_index``, ``repetition`` and ``slots`` (per slot, 1-based:
        ``slot``, ``name``, ``group``, ``variant``).
    seed:
        Depends on template and repetition only (common random numbers: both
        members of a pair are sampled with the same seed, so the only
        difference is the signal), never on the group; the one exception is
        the second pseudo-group of an ``aa_control`` design with ``split:
        seeds``, which repeats the first one's cases with a fresh stream of
        seeds (SHA-256 of battery seed, template, repetition and design id).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    battery: str
    design: str
    design_kind: str
    template: str
    repetition: int
    matched_set: str
    block: str
    position: int | None = None
    attribute: str | None = None
    axis: str | None = None
    baseline: bool = False
    groups: dict[str, str] = {}
    variants: dict[str, str] = {}
    messages: list[dict[str, str]]
    turns: list[str]
    context: dict[str, Any] = {}
    seed: int
    meta: dict[str, Any] = {}

    def conversation(self) -> list[dict[str, str]]:
        """The messages as sent for a single-turn case (system, history, the user turn)."""
        return [*self.messages, *({"role": "user", "content": t} for t in self.turns)]

    def group_label(self) -> str:
        """``origin=maghreb`` style label of the case's cell, or ``baseline``."""
        if self.baseline:
            return "baseline"
        return ",".join(f"{k}={v}" for k, v in self.groups.items())


def case_json(case: Case) -> str:
    """One canonical JSON line (sorted keys, UTF-8): the byte-identical expansion format, and the
    form a case is stored in."""
    return json.dumps(case.model_dump(mode="json"), sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))


def case_from_json(data: str | bytes) -> Case:
    """The :class:`Case` of one line of :func:`case_json` (the form a case is stored in): the one
    decoder of a stored case, used by the store, the measure stage, the analysis and the report.

    Raises
    ------
    pydantic.ValidationError
        ``data`` is not a case (not JSON, a key unknown or missing).
    """
    return Case.model_validate_json(data)
