"""The interchange format of ``fairpair import-answers``: one row per answer, and the battery that reads them.

A row (:class:`AnswerRow`) is one answer of one system to one member of a
matched set of counterfactual prompts: the set, the template (scenario) it
instantiates, the repetition, the group of every protected attribute the
prompt signals, the literal variant (the name, age... the model saw), the
prompt or the messages sent, the answer text (or the error instead of an
answer), optionally values already measured elsewhere, the model and when it
answered. The file is JSON Lines (one :class:`AnswerRow` per line) or CSV
(see :data:`CSV_COLUMNS`).

The battery (:class:`ImportBattery`, a YAML file validated as strictly as a
run's battery) says how to read the rows: the protected attributes and their
groups, the measures, the pre-registered analysis plan, the judge, and for
OpenAI chat-completion records (:class:`RecordsMapping`) where the set, the
template, the groups and the variants live in each record. Both JSON schemas
are generated from these models (``fairpair answers-schema``).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, field_validator, model_validator

from fairpair.battery import AnalysisPlan, MeasureSpec, TargetSpec

__all__ = ["AnswerRow", "RowCandidate", "RowRanking", "RowMessage", "RowToolCall", "ImportBattery", "ImportAttribute",
           "ImportGroup", "RecordsMapping", "FieldRef", "CSV_COLUMNS", "CSV_PREFIXES", "ID_PATTERN", "answers_schema"]

#: Ids of templates, designs and the battery: letters, digits, ``_``, ``.`` and ``-`` (as in a battery).
ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$"
_Id = Annotated[str, Field(pattern=ID_PATTERN)]
_Value = StrictBool | StrictInt | Annotated[StrictFloat, Field(allow_inf_nan=False)] | None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RowMessage(_Strict):
    """One chat message as sent (OpenAI-style ``role`` and ``content``)."""

    role: Literal["system", "user", "assistant"]
    content: str


class RowToolCall(_Strict):
    """A tool (function) call the system made before its final answer, as ``tool_call`` measures read it."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    result: Any = None


class RowCandidate(_Strict):
    """One candidate of a ranking request, as shown: the name (or id) the model saw and its group."""

    name: str = Field(min_length=1)
    group: str = Field(min_length=1)


class RowRanking(_Strict):
    """The candidates of one ranking request, in the order the prompt showed them (slot 1 first).

    ``attribute``: the protected attribute whose groups the candidates
    signal (default: the battery's only attribute). ``order``: an order
    already parsed elsewhere, best first, as 1-based positions in
    ``candidates`` or as their names; it may stop early (the top picks only).
    Without it the battery's ``ranking`` measure reads the answer text.
    """

    attribute: str | None = None
    candidates: list[RowCandidate] = Field(min_length=2)
    order: list[Annotated[int, Field(ge=1)] | str] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> RowRanking:
        names = [c.name for c in self.candidates]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"candidate '{dup}' is shown twice in one request")
        if self.order is not None:
            if not self.order:
                raise ValueError("'order' is empty: leave it out to let the ranking measure read the answer")
            picks = [self.position(x) for x in self.order]
            bad = [x for x, p in zip(self.order, picks, strict=True) if p is None]
            if bad:
                raise ValueError(f"'order' names {bad[0]!r}, which is not one of the {len(names)} candidates "
                                 f"(give 1-based positions or names)")
            if len(set(picks)) != len(picks):
                raise ValueError("'order' names a candidate twice")
        return self

    def position(self, x: int | str) -> int | None:
        """0-based index of ``x`` (a 1-based position or a name) among the candidates, or None."""
        if isinstance(x, int):
            return x - 1 if 1 <= x <= len(self.candidates) else None
        for i, c in enumerate(self.candidates):
            if c.name == x:
                return i
        return None


class AnswerRow(_Strict):
    """One answer, in the interchange format (one JSON object per line, or one CSV row).

    Attributes
    ----------
    set:
        The matched set: answers whose prompts differ only in the signal of
        the protected attribute(s) share it (compared pair by pair).
    template:
        The scenario (prompt template) the prompt instantiates; the analysis
        resamples templates (cluster bootstrap), so sets of one template are
        not independent.
    repetition:
        0, 1, ...: independent samples of the same prompt (>= 0).
    groups:
        Attribute -> group of the prompt (``{"origin": "maghreb"}``); several
        attributes make a crossed design; empty for a baseline prompt with no
        signal.
    variants:
        Attribute -> the literal value the model saw (``{"origin": "Fátima"}``):
        masked before any judge reads the answer, and the per-name breakdown.
    design:
        Design id (default ``counterfactual-<attribute>``, ``crossed-a-x-b``
        or ``baseline``, as a run names them).
    target:
        The system that answered (default: ``--target``, else ``imported``).
    system, prompt, messages:
        What was sent: ``prompt`` (the user's message, with an optional
        ``system`` prompt) or the whole ``messages`` list ending with the
        user's message.
    context:
        Fields the production system received beside the messages (CRM record).
    answer, error:
        The answer text, or why there is none (stored as a failed answer);
        exactly one of the two.
    tool_calls:
        Tool calls made before the answer.
    ranking:
        A request of a ranking (selection) design: the candidates shown in
        one prompt, in order, with the group of each (:class:`RowRanking`);
        then ``groups`` and ``variants`` stay empty, the set is the request
        and ``prompt`` may be left out (the case then lists the candidates).
    measures:
        Values already measured elsewhere, by the name of a measure the
        battery declares (``true``/``false`` for yes/no measures, numbers
        otherwise; ``null``: measured, no value). Measures the row leaves out
        are computed by ``fairpair measure``.
    model, timestamp, finish_reason, prompt_tokens, completion_tokens, latency_s, system_fingerprint:
        What the system reported about the answer, kept as provenance
        (``timestamp``: ISO 8601, when the answer was produced).
    """

    set: str = Field(min_length=1)
    template: _Id
    repetition: int = Field(0, ge=0)
    groups: dict[str, str] = Field(default_factory=dict)
    variants: dict[str, str] = Field(default_factory=dict)
    design: _Id | None = None
    target: _Id | None = None
    system: str | None = None
    prompt: str | None = None
    messages: list[RowMessage] | None = None
    context: dict[str, Any] = Field(default_factory=dict)
    answer: str | None = None
    error: str | None = None
    tool_calls: list[RowToolCall] = Field(default_factory=list)
    ranking: RowRanking | None = None
    measures: dict[str, _Value] = Field(default_factory=dict)
    model: str | None = None
    timestamp: datetime | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = Field(None, ge=0)
    completion_tokens: int | None = Field(None, ge=0)
    latency_s: float | None = Field(None, ge=0, allow_inf_nan=False)
    system_fingerprint: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> AnswerRow:
        if (self.answer is None) == (self.error is None):
            raise ValueError("give either 'answer' (the text) or 'error' (why there is none), not both or neither")
        if self.ranking is not None and (self.groups or self.variants):
            raise ValueError("a ranking row gives its candidates' groups in 'ranking.candidates', not in "
                             "'groups' or 'variants'")
        if self.messages is None and self.prompt is None and self.ranking is None:
            raise ValueError("give the 'prompt' or the 'messages' that were sent")
        if self.messages is not None:
            if self.prompt is not None or self.system is not None:
                raise ValueError("give either 'messages' or 'prompt' (with an optional 'system'), not both")
            if not self.messages or self.messages[-1].role != "user":
                raise ValueError("'messages' must end with the user's message that was answered")
        for k in self.variants:
            if k not in self.groups:
                raise ValueError(f"variants names attribute '{k}', which is not in 'groups'")
        return self

    def conversation(self) -> tuple[list[dict[str, str]], list[str]]:
        """``(messages before the answered turn, [the answered user turn])``, as a case holds them."""
        if self.messages is not None:
            msgs = [m.model_dump() for m in self.messages]
            return msgs[:-1], [msgs[-1]["content"]]
        head = [{"role": "system", "content": self.system}] if self.system is not None else []
        if self.prompt is None and self.ranking is not None:
            return head, [RANKING_PROMPT_MISSING + "; ".join(c.name for c in self.ranking.candidates)]
        return head, [self.prompt or ""]


#: The CSV columns of the interchange format (any order); ``group.<attribute>``, ``variant.<attribute>``
#: and ``measure.<measure>`` add one column each. ``messages``, ``context`` and ``tool_calls`` hold JSON.
CSV_COLUMNS: tuple[str, ...] = tuple(k for k in AnswerRow.model_fields if k not in ("groups", "variants", "measures"))
#: Column prefix -> the row field it fills.
CSV_PREFIXES: dict[str, str] = {"group.": "groups", "variant.": "variants", "measure.": "measures"}
#: CSV columns whose cells are JSON.
CSV_JSON_COLUMNS = ("messages", "context", "tool_calls", "ranking")
#: The user turn recorded for a ranking row imported without its prompt (the candidates follow, in order).
RANKING_PROMPT_MISSING = "(prompt not imported) candidates in the order shown: "


class ImportGroup(_Strict):
    """One group of an attribute. ``variants``: the values that signal it (names...); when given, every
    row's variant must be one of them, otherwise they are taken from the rows. ``references``: words
    that name the group, masked before a judge reads an answer (as in a battery)."""

    label: str | None = None
    variants: list[str] = Field(default_factory=list)
    references: list[str] = Field(default_factory=list)

    @field_validator("variants", mode="before")
    @classmethod
    def _as_strings(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [str(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else x for x in v]
        return v


class ImportAttribute(_Strict):
    """A protected attribute of the rows: its ``signal`` (what the prompts show) and its groups."""

    signal: Literal["name", "age", "postal_code", "neighbourhood", "writing_style", "identity", "text"] = "name"
    description: str | None = None
    groups: dict[str, ImportGroup] = Field(min_length=2)


class FieldRef(_Strict):
    """Where a value lives in a record: a JSONPath (``$.metadata.group``) and optionally a regular
    expression whose first group (or whole match) is the value (``pattern: '^(t\\d+)/'``)."""

    path: str
    pattern: str | None = None

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return v


_Ref = str | FieldRef


class RecordsMapping(_Strict):
    """Where the row's fields live in an OpenAI chat-completion record (JSONPath, from the record's root).

    A record is a ``chat.completion`` response object, or any JSON object that
    holds one (``completion``: e.g. ``$.response.body`` for the Batch API's
    output lines) beside the request's ``messages`` and your own metadata.
    The answer is ``choices[0].message.content`` (and its ``tool_calls``);
    ``model``, ``created`` (the timestamp), ``usage``, ``finish_reason`` and
    ``system_fingerprint`` are read from the completion. A record whose
    ``error`` (at ``error``) is not null is stored as a failed answer.
    """

    completion: str = "$"
    messages: _Ref
    set: _Ref
    template: _Ref
    repetition: _Ref | None = None
    groups: dict[str, _Ref] = Field(min_length=1)
    variants: dict[str, _Ref] = Field(default_factory=dict)
    design: _Ref | None = None
    target: _Ref | None = None
    measures: dict[str, _Ref] = Field(default_factory=dict)
    error: _Ref | None = None


class ImportBattery(_Strict):
    """The battery of an import: how to read the rows (attributes, measures, analysis plan, mapping).

    The same keys as a run's battery where they mean the same (``measures``,
    ``judge``, ``analysis``...); no templates, designs or target: those come
    from the rows. ``records`` is only for ``--format chat-completions``.
    """

    schema_version: Literal[1]
    name: _Id
    description: str | None = None
    language: Literal["es", "en"] = "es"
    attributes: dict[str, ImportAttribute] = Field(min_length=1)
    judge: TargetSpec | None = None
    allow_self_judging: bool = False
    judge_self_test: Literal["stop", "warn", "off"] = "stop"
    embedder: str | None = None
    measures: dict[str, MeasureSpec] = Field(default_factory=dict)
    analysis: AnalysisPlan = Field(default_factory=AnalysisPlan)
    records: RecordsMapping | None = None


def answers_schema(which: Literal["row", "battery"] = "row") -> dict[str, Any]:
    """The JSON schema of one interchange row (``row``) or of the import battery (``battery``)."""
    model = AnswerRow if which == "row" else ImportBattery
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
