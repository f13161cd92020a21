"""The battery schema: what a user writes in ``battery.yaml``.

Every model forbids unknown keys (``extra="forbid"``); the loader turns a
pydantic error into a :class:`~fairpair.errors.BatteryError` that names file,
line and key, with a "did you mean" for misspelt keys. The JSON schema of a
battery is generated from these models (``fairpair schema``), so docs cannot
drift from the code.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "SCHEMA_VERSION", "Battery", "Attribute", "Group", "Transform", "Template", "Message",
    "CounterfactualDesign", "CrossedDesign", "TwoPartyDesign", "BaselineDesign", "Design",
    "TargetSpec", "MeasureSpec", "AnalysisPlan", "Comparison", "SLOT_RE",
]

SCHEMA_VERSION = 1
#: A slot in a template: ``{name}``. ``{{`` and ``}}`` are literal braces.
SLOT_RE = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ID = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
        Literal replacements ``pairs: {from: to}`` (e.g. second-language
        constructions), applied in the order given.
    """

    kind: Literal["misspell", "strip_accents", "lowercase", "strip_punctuation", "max_words", "replace"]
    rate: float = Field(0.15, ge=0.0, le=1.0)
    max_words: int | None = Field(None, ge=1)
    pairs: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _needs(self) -> "Transform":
        if self.kind == "max_words" and self.max_words is None:
            raise ValueError("kind 'max_words' needs 'max_words: N'")
        if self.kind == "replace" and not self.pairs:
            raise ValueError("kind 'replace' needs 'pairs: {from: to}'")
        return self


class Group(_Strict):
    """One group of a protected attribute and the variants that signal it.

    ``variants`` are the literal values the model sees (names, ages, postal
    codes). ``lexicon`` takes them from a built-in list instead
    (``fairpair lexicons`` lists them, each with its source); ``take`` keeps
    the first N. ``references`` are words that name the group ("árabe") and
    must be masked before a judge reads an answer. ``transforms`` make a
    writing-style group. ``context`` is merged into the case context (e.g. a
    CRM field the production system would pass).
    """

    label: str | None = None
    variants: list[str] = Field(default_factory=list)
    lexicon: str | None = None
    take: int | None = Field(None, ge=1)
    references: list[str] = Field(default_factory=list)
    transforms: list[Transform] = Field(default_factory=list)
    context: dict[str, Any] = Field(default_factory=dict)

    @field_validator("variants", mode="before")
    @classmethod
    def _as_strings(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [str(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else x for x in v]
        return v


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
    context_field: str | None = None
    min_variants: int = Field(1, ge=1)
    description: str | None = None
    groups: dict[str, Group]

    @model_validator(mode="after")
    def _check(self) -> "Attribute":
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

    @model_validator(mode="after")
    def _one_system(self) -> "Template":
        if self.system is not None and self.system_file is not None:
            raise ValueError("give either 'system' or 'system_file', not both")
        return self


class _DesignBase(_Strict):
    id: Annotated[str, Field(pattern=_ID)] | None = None
    templates: list[str] | None = None
    repetitions: int | None = Field(None, ge=1, strict=True)  # strict: `true` is not 1


class CounterfactualDesign(_DesignBase):
    """One attribute varies; everything else is fixed.

    Pairs for a two-group comparison are formed by position: variant *k* of
    group A is paired with variant *k* of group B in the same template and
    repetition, so every group must offer the same number of variants.
    """

    kind: Literal["counterfactual"]
    attribute: str
    groups: list[str] | None = None


class CrossedDesign(_DesignBase):
    """An explicit intersection (e.g. gender x age x origin): all group combinations."""

    kind: Literal["crossed"]
    attributes: list[str] = Field(min_length=2)


class TwoPartyDesign(_DesignBase):
    """The SUB x RES persona design (Tan & Lee 2025).

    For each template and axis, every (SUB identity, RES identity) pair of the
    axis's groups, plus one baseline without demographics per template. The
    identity is written with its indefinite article ("an Asian") into
    ``sub_slot`` / ``res_slot``; the baseline uses ``baseline_turns`` of the
    template (or fills the slots with ``baseline_value``).
    """

    kind: Literal["two_party"]
    axes: list[str] = Field(min_length=1)
    sub_slot: str = "sub_persona"
    res_slot: str = "res_persona"
    baseline_value: str = "a person"
    article: bool = True
    include_baseline: bool = True


class BaselineDesign(_DesignBase):
    """No signal at all: every attribute slot gets its ``neutral`` value."""

    kind: Literal["baseline"]


Design = Annotated[
    Union[CounterfactualDesign, CrossedDesign, TwoPartyDesign, BaselineDesign],
    Field(discriminator="kind"),
]


class TargetSpec(BaseModel):
    """A target block: ``kind`` plus the options of that kind's plugin.

    The options are validated by the plugin's own ``Options`` model.
    """

    model_config = ConfigDict(extra="allow", frozen=True)
    kind: str

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class MeasureSpec(BaseModel):
    """A measure block: ``kind`` plus the options of that kind's plugin."""

    model_config = ConfigDict(extra="allow", frozen=True)
    kind: str

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Comparison(_Strict):
    """A pre-registered comparison: a measure across the groups of an attribute.

    ``groups``: ``all_pairs`` or an explicit list; ``reference``: compare every
    other group with this one instead of all pairs. ``margin``: the largest
    difference tolerated (proportion for yes/no measures, e.g. 0.03 = 3
    points; measure units for continuous ones), judged on the confidence
    interval. ``design``: restrict to one design id.
    """

    id: Annotated[str, Field(pattern=_ID)] | None = None
    measure: str
    attribute: str
    groups: list[str] | Literal["all_pairs"] = "all_pairs"
    reference: str | None = None
    margin: float | None = Field(None, ge=0)
    design: str | None = None
    primary: bool = True


class AnalysisPlan(_Strict):
    """The pre-registered analysis plan, hashed into the run before any answer is sent."""

    alpha: float = Field(0.05, gt=0, lt=1)
    correction: Literal["holm", "bh", "none"] = "holm"
    exact_threshold: int = Field(25, ge=0)
    bootstrap_resamples: int = Field(2000, ge=0, le=100_000)  # more adds nothing but hours
    confidence_level: float = Field(0.95, gt=0, lt=1)
    seed: int = 0
    comparisons: list[Comparison] = Field(default_factory=list)
    fail_on_inconclusive: bool = False


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
    tools: list[dict[str, Any]] = Field(default_factory=list)
    tool_results: dict[str, str] = Field(default_factory=dict)
    target: TargetSpec | None = None
    targets: dict[str, TargetSpec] = Field(default_factory=dict)
    judge: TargetSpec | None = None
    allow_self_judging: bool = False
    embedder: str | None = None
    measures: dict[str, MeasureSpec] = Field(default_factory=dict)
    analysis: AnalysisPlan = Field(default_factory=AnalysisPlan)

    @model_validator(mode="after")
    def _one_target_block(self) -> "Battery":
        if self.target is not None and self.targets:
            raise ValueError("give either 'target' or 'targets', not both")
        return self

    def target_specs(self) -> dict[str, TargetSpec]:
        """Targets by name (``target:`` alone is named after its kind)."""
        if self.target is not None:
            return {self.target.kind: self.target}
        return dict(self.targets)

    def design_id(self, index: int) -> str:
        d = self.designs[index]
        if d.id:
            return d.id
        if isinstance(d, CounterfactualDesign):
            return f"counterfactual-{d.attribute}"
        if isinstance(d, CrossedDesign):
            return "crossed-" + "-x-".join(d.attributes)
        if isinstance(d, TwoPartyDesign):
            return "two_party"
        return "baseline"
