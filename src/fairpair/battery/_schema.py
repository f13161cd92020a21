"""The battery schema: what a user writes in ``battery.yaml``.

Every model forbids unknown keys (``extra="forbid"``); the loader turns a
pydantic error into a :class:`~fairpair.errors.BatteryError` that names file,
line and key, with a "did you mean" for misspelt keys. The JSON schema of a
battery is generated from these models (``fairpair schema``), so docs cannot
drift from the code.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "SCHEMA_VERSION", "Battery", "Attribute", "Group", "Transform", "Template", "Message",
    "CounterfactualDesign", "CrossedDesign", "TwoPartyDesign", "AAControlDesign", "BaselineDesign", "RankingDesign",
    "Design",
    "DESIGN_KINDS",
    "TargetSpec", "MeasureSpec", "AnalysisPlan", "Comparison", "SLOT_RE", "ContextChannels",
    "ContextMessage", "ContextTool",
]

SCHEMA_VERSION = 1
#: A slot in a template: ``{name}``, or a context path ``{crm}`` / ``{crm.nombre}``.
#: ``{{`` and ``}}`` are literal braces.
SLOT_RE = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\}")


from fairpair.battery._strict import _ID, _Strict  # noqa: E402,F401 - shared with the designs


class Transform(_Strict):
    """A deterministic rewriting of the user's text: the writing-style signal.

    Kinds
    -----
    ``misspell``
        Introduces common Spanish/English spelling errors at ``rate`` (0-1) of
        eligible words: dropped accents, b/v and y/ll swaps, dropped silent h,
        doubled or dropped letters. Seeded per case, so it is reproducible.
    ``strip_accents``, ``lowercase``, ``strip_punctuation``
        What they say (messages typed in a hurry).
    ``max_words``
        Keep the first ``max_words`` words (very short messages).
    ``replace``
        Whole-word replacements ``pairs: {from: to}`` (one word each, e.g.
        ``{she: he, her: his}``) and ``phrases: {from: to}`` (several words,
        e.g. ``{"I am agree": "I agree"}``). A key matches only between Unicode
        word boundaries (``she`` never changes "chef" or "shelps"), in any
        case, and the replacement keeps the case of what it replaces
        (``She`` -> ``He``, ``SHE`` -> ``HE``). All keys are matched in one
        pass, longest first, so ``{he: she, she: he}`` swaps.
    """

    kind: Literal["misspell", "strip_accents", "lowercase", "strip_punctuation", "max_words", "replace"]
    rate: float = Field(0.15, ge=0.0, le=1.0)
    max_words: int | None = Field(None, ge=1)
    pairs: dict[str, str] = Field(default_factory=dict)
    phrases: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _needs(self) -> Transform:
        if self.kind == "max_words" and self.max_words is None:
            raise ValueError("kind 'max_words' needs 'max_words: N'")
        if self.kind == "replace" and not (self.pairs or self.phrases):
            raise ValueError("kind 'replace' needs 'pairs: {from: to}' (words) or 'phrases: {from: to}'")
        if self.kind != "replace" and (self.pairs or self.phrases):
            raise ValueError(f"'pairs' and 'phrases' belong to kind 'replace', not '{self.kind}'")
        for k in self.pairs:
            if len(k.split()) != 1:
                raise ValueError(f"replace pair {k!r} is not one word: put it under 'phrases:' "
                                 f"(several words matched as a whole)")
        for k in self.phrases:
            if not k.strip():
                raise ValueError("an empty phrase cannot be replaced")
        seen: dict[str, str] = {}
        for k in (*self.pairs, *self.phrases):  # matched in any case: 'he' and 'He' are one key
            f = " ".join(k.casefold().split())
            if f in seen:
                raise ValueError(f"replace keys {seen[f]!r} and {k!r} are the same words: keys match in any case and "
                                 "the replacement keeps the case of what it replaces ('He' -> 'She'), so give one")
            seen[f] = k
        return self


class Group(_Strict):
    """One group of a protected attribute and the variants that signal it.

    ``variants`` are the literal values the model sees (names, ages, postal
    codes). ``lexicon`` takes them from a built-in list instead
    (``fairpair lexicons`` lists them, each with its source); ``take`` keeps
    the first N. ``references`` are words that name the group ("árabe") and
    must be masked before a judge reads an answer. ``transforms`` make a
    writing-style group. ``context`` is merged into the case context (e.g. a
    CRM field the production system would pass). ``slots`` are the words
    that agree with the group, one slot per grammatical form (Spanish
    ``{harta}``: ``harta`` for a female group, ``harto`` for a male one);
    every group of the attribute declares the same slots, and the battery's
    ``slots`` give the form used when the attribute is not varied.
    """

    label: str | None = None
    variants: list[str] = Field(default_factory=list)
    lexicon: str | None = None
    take: int | None = Field(None, ge=1)
    references: list[str] = Field(default_factory=list)
    transforms: list[Transform] = Field(default_factory=list)
    context: dict[str, Any] = Field(default_factory=dict)
    slots: dict[str, str] = Field(default_factory=dict)

    @field_validator("variants", "references")
    @classmethod
    def _bounded(cls, values: list[str]) -> list[str]:
        for v in values:
            bad = _CONTROL.search(v)
            if bad:  # a line break can smuggle an instruction into a prompt; an escape, recolour a terminal
                raise ValueError(f"{v[:40]!r} holds the control character {bad.group()!r}: a "
                                 "signal value is one line of plain text (no line break, tab or escape code)")
            if len(v) > MAX_SIGNAL_CHARS or len(v.split()) > MAX_SIGNAL_WORDS:
                raise ValueError(f"{v[:40]!r}... is {len(v)} characters and {len(v.split())} words: a signal value "
                                 f"(a name, an age, a place, a group's word) has at most {MAX_SIGNAL_CHARS} "
                                 f"characters and {MAX_SIGNAL_WORDS} words (every one is masked in every answer "
                                 "before a judge reads it)")
        return values


#: Characters a signal value may not hold: C0/C1 controls (line breaks, tab and ESC included), DEL,
#: and the bidirectional and line/paragraph separator controls.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


#: The longest signal value (variant or reference) a group may declare: the longest in the
#: examples is 26 characters ("physically disabled person"); the masker compiles each into
#: its pattern, so the bound also bounds the pattern (issue 28).
MAX_SIGNAL_CHARS = 120
MAX_SIGNAL_WORDS = 12


class Attribute(_Strict):
    """A protected attribute (origin, gender, age, ...) and how it is signalled.

    ``signal`` is what the model sees: a first ``name``, an ``age``, a
    ``postal_code`` or ``neighbourhood``, a ``writing_style`` (a transformation
    of the user's text), an ``identity`` label (two-party persona design) or
    free ``text``. ``slot`` is the template slot the variant fills; ``neutral``
    fills it when the attribute is not the one being varied;
    ``context_field`` also writes the variant into the case context (dotted
    path, e.g. ``crm.age``), as a CRM would.
    """

    signal: Literal["name", "age", "postal_code", "neighbourhood", "writing_style", "identity", "text"]
    slot: str | None = None
    neutral: str | None = None
    #: a dotted path of identifiers (``crm.nombre``): no empty part (``crm..nombre``), no spaces
    context_field: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")] | None = None
    min_variants: int = Field(1, ge=1)
    description: str | None = None
    groups: dict[str, Group]

    @model_validator(mode="after")
    def _check(self) -> Attribute:
        # writing_style rewrites the text; identity is written by the two_party design into
        # its sub/res slots: neither needs a slot of its own
        if self.signal not in ("writing_style", "identity") and not self.slot and not self.context_field:
            raise ValueError(f"a '{self.signal}' attribute needs 'slot' (or 'context_field')")
        if not self.groups:
            raise ValueError("an attribute needs at least one group")
        return self


class Message(_Strict):
    role: Literal["system", "user", "assistant"]
    content: str


class Template(_Strict):
    """A business scenario with slots, as production would see it.

    ``system`` (or ``system_file``, read relative to the battery) is the
    production system prompt; ``context`` is what production passes (CRM
    record, order history); ``history`` are earlier turns; ``turns`` are the
    user messages sent one after another (the answer to the last one is the
    one measured). ``slots`` fixes template-level values (e.g. the scene's
    traits in the two-party design). ``meta`` labels the template (domain,
    power condition, matched scene id).
    """

    id: Annotated[str, Field(pattern=_ID)]
    system: str | None = None
    system_file: str | None = None
    context: dict[str, Any] = Field(default_factory=dict)
    history: list[Message] = Field(default_factory=list)
    turns: list[str] = Field(min_length=1)
    slots: dict[str, str] = Field(default_factory=dict)
    meta: dict[str, str | int | float | bool] = Field(default_factory=dict)
    baseline_turns: list[str] | None = None

    @field_validator("turns")
    @classmethod
    def _no_empty_turn(cls, turns: list[str]) -> list[str]:
        for i, t in enumerate(turns):
            if not t.strip():
                raise ValueError(f"turn {i + 1} is empty: the model would be sent a blank user message")
        return turns

    @model_validator(mode="after")
    def _one_system(self) -> Template:
        if self.system is not None and self.system_file is not None:
            raise ValueError("give either 'system' or 'system_file', not both")
        return self


class ContextMessage(_Strict):
    """A message of its own that carries the context, placed right after the system prompt.

    ``content`` is a template: ``{crm}`` is the whole record (YAML or JSON,
    see :class:`ContextChannels`), ``{crm.nombre}`` one field, ``{slot}`` a slot.
    ``role``: ``system`` or ``developer`` (OpenAI's newer name for
    instructions from the application).
    """

    role: Literal["system", "developer"] = "system"
    content: str = Field(min_length=1)


class ContextTool(_Strict):
    """A function the model may call to read the context (``lookup_customer``).

    It is offered to the model with an empty parameter list (OpenAI
    function-calling format) and answered with ``returns`` (a dotted path in
    the case context, e.g. ``crm``; empty for the whole context), JSON-encoded.
    A model that never calls it never sees the context: the answers record
    every tool call, so check them.
    """

    name: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")] = "lookup_customer"
    description: str = "Returns the record of the customer in this conversation from the CRM."
    returns: str = ""

    def definition(self) -> dict[str, Any]:
        """The OpenAI-style tool definition offered to the model."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": {"type": "object", "properties": {}}}}


class ContextChannels(_Strict):
    """How a template's ``context`` reaches the model, the same for every target kind.

    Channels (any combination; the context must reach the model by at least one):

    * **the prompt**: ``{crm.nombre}`` or ``{crm}`` anywhere in ``system`` /
      ``system_file`` (the production prompt file as is), ``history`` or
      ``turns``;
    * ``message``: a separate system/developer message rendered from a template;
    * ``tool``: a function the model calls, answered with the context;
    * the ``http`` target's ``body`` template (``{{context.crm}}``).

    ``format``: how a mapping or list (``{crm}``) is written into text:
    ``yaml`` (default; block style, keys in the order written) or ``json``
    (indented). Scalars are written as their text (``02142`` stays ``02142``).
    """

    format: Literal["yaml", "json"] = "yaml"
    message: ContextMessage | None = None
    tool: ContextTool | None = None


from fairpair.battery._designs import (  # noqa: E402 - the designs need _Strict above
    DESIGN_KINDS,
    AAControlDesign,
    BaselineDesign,
    CounterfactualDesign,
    CrossedDesign,
    Design,
    RankingDesign,
    TwoPartyDesign,
)


class TargetSpec(BaseModel):
    """A target block: ``kind`` plus the options of that kind's plugin.

    The options are validated by the plugin's own ``Options`` model.
    ``system`` (or ``system_file``, read relative to the battery) is the
    system prompt this target runs with, in place of every template's
    ``system``: the same model under two prompts is two targets of one
    battery (the production prompt and a changed one), compared in one run.
    It may read the context (``{crm}``, ``{crm.nombre}``) as a template's
    system prompt does, not the slots. Not for a judge (fairpair writes the
    judge's prompts).
    """

    model_config = ConfigDict(extra="allow", frozen=True)
    kind: str
    system: str | None = None
    system_file: str | None = None

    @model_validator(mode="after")
    def _one_system(self) -> TargetSpec:
        if self.system is not None and self.system_file is not None:
            raise ValueError("give either 'system' or 'system_file', not both")
        return self

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class MeasureSpec(BaseModel):
    """A measure block: ``kind`` plus the options of that kind's plugin."""

    model_config = ConfigDict(extra="allow", frozen=True)
    kind: str

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Generalize(_Strict):
    """What a verdict generalises over (the estimand), fixed before the audit.

    Templates are always a random factor (the verdict speaks of scenarios
    like these) and repetitions are nested in template x name cells.
    ``names: random`` (default): the verdict speaks of the groups, i.e. of
    other names of these groups too (Clark 1973; Judd, Westfall & Kenny
    2012); it needs enough names per group. ``names: fixed``: it holds for
    the names used ("a customer called Fatima is treated worse than one
    called Lucia"), a narrower but legitimate claim.

    ``templates: random`` (default): the verdict speaks of other scenarios
    like these templates, and needs 8 of them. ``templates: fixed``: it holds
    for these scenarios (one job posting, a handful of them): the spread of
    the difference between them is part of the claim, not noise, so a single
    template can give a verdict (:func:`fairpair.stats.scenario_differences`;
    ``docs/scenarios.md``).
    """

    names: Literal["random", "fixed"] = "random"
    templates: Literal["random", "fixed"] = "random"


class Comparison(_Strict):
    """A pre-registered comparison: a measure across the groups of an attribute.

    ``groups``: ``all_pairs`` or an explicit list; ``reference``: compare every
    other group with this one instead of all pairs. ``margin``: the largest
    difference tolerated (proportion for yes/no measures, e.g. 0.03 = 3
    points; measure units for continuous ones), judged on the confidence
    interval. ``design``: restrict to one design id. ``generalize``:
    overrides the plan's estimand for this comparison. ``by: template``:
    the verdict is made scenario by scenario (each template's difference is a
    primary test, Holm over them with the plan's other primary tests): one
    unfair scenario fails the comparison, and it passes only when every
    scenario passes.
    """

    id: Annotated[str, Field(pattern=_ID)] | None = None
    measure: str
    attribute: str
    groups: list[str] | Literal["all_pairs"] = "all_pairs"
    reference: str | None = None
    margin: float | None = Field(None, ge=0)
    design: str | None = None
    primary: bool = True
    generalize: Generalize | None = None
    by: Literal["template"] | None = None


class AnalysisPlan(_Strict):
    """The pre-registered analysis plan, hashed into the run before any answer is sent.

    ``generalize``: the estimand of every comparison (see
    :class:`Generalize`). ``fail_on_inconclusive`` / ``fail_on_insufficient``:
    ``fairpair gate`` and the pytest plugin also fail on primary
    comparisons that are inconclusive / have an insufficient design.
    """

    #: above 1e-6 (a smaller level leaves no interval a float can hold) and at most 0.2 (more
    #: than one false fail in five is no audit; at 0.5 the pass rule's 1 - 2 alpha interval vanishes)
    alpha: float = Field(0.05, gt=1e-6, le=0.2)
    correction: Literal["holm", "bh", "none"] = "holm"
    exact_threshold: int = Field(25, ge=0)
    bootstrap_resamples: int = Field(2000, ge=0, le=100_000)  # more adds nothing but hours
    confidence_level: float = Field(0.95, gt=0, lt=1)
    seed: int = 0
    comparisons: list[Comparison] = Field(default_factory=list)
    fail_on_inconclusive: bool = False
    fail_on_insufficient: bool = False
    generalize: Generalize = Field(default_factory=Generalize)


class Battery(_Strict):
    """A whole battery: attributes, templates, designs, repetitions, target, measures, plan."""

    schema_version: Literal[1]
    name: Annotated[str, Field(pattern=_ID)]
    description: str | None = None
    language: Literal["es", "en"] = "es"
    seed: int = 0
    repetitions: int = Field(1, ge=1, strict=True)  # strict: `true` is not 1
    attributes: dict[str, Attribute] = Field(default_factory=dict)
    slots: dict[str, str] = Field(default_factory=dict)
    templates: list[Template] = Field(min_length=1)
    designs: list[Design] = Field(min_length=1)
    context_channels: ContextChannels = Field(default_factory=ContextChannels)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    tool_results: dict[str, str] = Field(default_factory=dict)
    target: TargetSpec | None = None
    targets: dict[str, TargetSpec] = Field(default_factory=dict)
    judge: TargetSpec | None = None
    allow_self_judging: bool = False
    #: before judging: ``stop`` (default; a judge below the self-test's thresholds stops ``measure``),
    #: ``warn`` (judge-based verdicts carry the warning and are never ``pass``), ``off`` (untested)
    judge_self_test: Literal["stop", "warn", "off"] = "stop"
    embedder: str | None = None
    measures: dict[str, MeasureSpec] = Field(default_factory=dict)
    analysis: AnalysisPlan = Field(default_factory=AnalysisPlan)

    @model_validator(mode="after")
    def _one_target_block(self) -> Battery:
        if self.target is not None and self.targets:
            raise ValueError("give either 'target' or 'targets', not both")
        return self

    def all_tools(self) -> list[dict[str, Any]]:
        """``tools`` plus the context tool of ``context_channels`` (OpenAI function definitions)."""
        out = list(self.tools)
        if self.context_channels.tool is not None:
            out.append(self.context_channels.tool.definition())
        return out

    def all_tool_results(self) -> dict[str, str]:
        """Tool name -> context path answered (``tool_results`` plus the context tool)."""
        out = dict(self.tool_results)
        if self.context_channels.tool is not None:
            out[self.context_channels.tool.name] = self.context_channels.tool.returns
        return out

    def target_specs(self) -> dict[str, TargetSpec]:
        """Targets by name (``target:`` alone is named after its kind)."""
        if self.target is not None:
            return {self.target.kind: self.target}
        return dict(self.targets)

    def speakers(self) -> dict[str, tuple[str, str]]:
        """Design id -> ``(res, sub)``, the names of the party the model plays and of the one it
        answers, for the designs whose answers are checked to stay in role (the two-party design)."""
        out = {}
        for i, d in enumerate(self.designs):
            roles = d.speakers(self)
            if roles is not None:
                out[self.design_id(i)] = roles
        return out

    def ranking_designs(self) -> list[tuple[str, Any]]:
        """``(id, design)`` of the ranking designs (kind ``ranking``), in order: the designs the ranking
        statistics analyse (:func:`fairpair.analysis.analyze_ranking`), not the paired comparisons. The one
        place that tells a ranking design from the others."""
        return [(self.design_id(i), d) for i, d in enumerate(self.designs) if d.kind == "ranking"]

    def ranking_measures(self) -> list[str]:
        """Names of the measures of kind ``ranking`` (each reads an answer as an order of its candidates), in
        order."""
        return [name for name, spec in self.measures.items() if spec.kind == "ranking"]

    def design_id(self, index: int) -> str:
        """The id of ``designs[index]``: its ``id``, else its kind's default (``counterfactual-origen``)."""
        d = self.designs[index]
        return d.id or d.default_id()
