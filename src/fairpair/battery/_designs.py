"""The designs of a battery, each one class that carries its own behaviour.

A design says which cases a battery makes and how they are matched. Each
class declares its options (validated strictly, as every battery block) and
implements the verbs the stages call, so adding a design is adding one class
here (and to :data:`Design`):

``default_id()``
    The design's id when the battery gives none.
``varied_attributes()`` / ``attribute_keys()``
    The attributes it varies (checked to exist by the loader), and where the battery names them.
``fills(attribute)``
    Whether every case of the design fills that attribute's slot with a
    group's value (so the attribute needs no neutral value for it).
``own_slots()``
    Template slots the design itself fills (two-party personas, ranking candidates).
``slot_attributes()``
    Attributes whose slot every template of the design must use.
``check(ck)``
    The design's own consistency rules (``ck``: :class:`fairpair.battery._load.DesignCheck`,
    which raises errors with file, line and key).
``select(axes)``
    The design narrowed to the attributes of ``--axes`` (``None``: dropped).
``expand(ex)``
    Its cases (``ex``: :class:`fairpair.cases._expand.ExpandContext`, the renderer and counts).
``plan(battery, stats, comparisons)``
    The sizes ``fairpair plan`` prints for it.
``compares(comparison, design_id)`` / ``comparison_groups(battery, attribute)``
    Whether a pre-registered comparison reads its cases, and over which groups.
``control_comparisons(battery, design_id)``
    Comparisons the design adds on its own (the A/A control's halves).

The stages receive helpers as arguments (no import of ``cases`` or
``analysis`` here), so this module is imported by the schema without cycles.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from math import comb
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import Field

from fairpair.battery._strict import _ID, _Strict

if TYPE_CHECKING:  # pragma: no cover
    from fairpair.battery._load import DesignCheck
    from fairpair.battery._schema import Battery, Comparison
    from fairpair.cases._case import Case
    from fairpair.cases._expand import ExpandContext

__all__ = ["CounterfactualDesign", "CrossedDesign", "TwoPartyDesign", "AAControlDesign", "BaselineDesign",
           "Design", "DESIGN_KINDS"]


class _DesignBase(_Strict):
    id: Annotated[str, Field(pattern=_ID)] | None = None
    templates: list[str] | None = None
    repetitions: int | None = Field(None, ge=1, strict=True)  # strict: `true` is not 1

    # -- the verbs (defaults: a design that varies nothing, like the baseline) --

    def default_id(self) -> str:
        return str(getattr(self, "kind"))

    def varied_attributes(self) -> list[str]:
        """The attributes this design varies."""
        return [a for a, _ in self.attribute_keys()]

    def attribute_keys(self) -> list[tuple[str, tuple]]:
        """Each varied attribute with the key path, under the design, where the battery names it."""
        return []

    def fills(self, attribute: str) -> bool:
        return False

    def own_slots(self) -> set[str]:
        return set()

    def slot_attributes(self) -> list[str]:
        return []

    def check(self, ck: "DesignCheck") -> None:
        return None

    def select(self, axes: set[str]) -> "_DesignBase | None":
        return self

    def expand(self, ex: "ExpandContext") -> Iterator["Case"]:  # pragma: no cover - every design has one
        raise NotImplementedError

    def plan(self, battery: "Battery", stats: dict[str, Any],
             comparisons: Callable[[str, int], int]) -> dict[str, Any]:
        """Sizes added to ``stats`` (the expansion's counts of one design) for ``fairpair plan``;
        ``comparisons(attribute, n_groups)`` counts what the analysis plan compares."""
        return {}

    def compares(self, comparison: "Comparison", design_id: str) -> bool:
        return False

    def comparison_groups(self, battery: "Battery", attribute: str) -> list[str]:
        return list(battery.attributes[attribute].groups)

    def control_comparisons(self, battery: "Battery", design_id: str) -> list["Comparison"]:
        return []


class CounterfactualDesign(_DesignBase):
    """One attribute varies; everything else is fixed.

    Pairs for a two-group comparison are formed by position: variant *k* of
    group A is paired with variant *k* of group B in the same template and
    repetition, so every group must offer the same number of variants.
    """

    kind: Literal["counterfactual"]
    attribute: str
    groups: list[str] | None = None

    def default_id(self) -> str:
        return f"counterfactual-{self.attribute}"

    def attribute_keys(self) -> list[tuple[str, tuple]]:
        return [(self.attribute, ("attribute",))]

    def fills(self, attribute: str) -> bool:
        return self.attribute == attribute

    def slot_attributes(self) -> list[str]:
        return [self.attribute]

    def check(self, ck: "DesignCheck") -> None:
        attr = ck.attrs[self.attribute]
        for k, g in enumerate(self.groups or []):
            ck.need(g, list(attr.groups), ("groups", k), f"group of '{self.attribute}'")
        chosen = self.groups or list(attr.groups)
        if len(chosen) < 2:
            raise ck.fail("a counterfactual design needs at least two groups")
        ck.equal_variants(attr, chosen, self.attribute)

    def select(self, axes: set[str]) -> "_DesignBase | None":
        return self if self.attribute in axes else None

    def expand(self, ex: "ExpandContext") -> Iterator["Case"]:
        attr = ex.battery.attributes[self.attribute]
        groups = self.groups or list(attr.groups)
        left_out = [g for g in attr.groups if g not in groups]
        if left_out:
            ex.exclude(f"groups not in the design: {', '.join(left_out)}", len(left_out))
        npos = ex.positions(attr, groups)
        for t in ex.templates:
            for rep in range(ex.reps):
                for k in range(npos):
                    ms = f"{ex.did}/{t.id}/r{rep}/p{k}"
                    for g in groups:
                        yield ex.render(t, rep, chosen={self.attribute: (attr, g, k)}, matched_set=ms,
                                        position=k, attribute=self.attribute)

    def plan(self, battery, stats, comparisons):
        attr = battery.attributes[self.attribute]
        groups = self.groups or list(attr.groups)
        return {"attribute": self.attribute, "groups": len(groups),
                "variants_per_group": 1 if attr.signal == "writing_style" else
                min(len(attr.groups[g].variants) for g in groups),
                "pairs": stats.get("matched_sets"), "comparisons": comparisons(self.attribute, len(groups))}

    def compares(self, comparison, design_id: str) -> bool:
        return self.attribute == comparison.attribute

    def comparison_groups(self, battery, attribute: str) -> list[str]:
        return list(self.groups) if self.groups else super().comparison_groups(battery, attribute)


class CrossedDesign(_DesignBase):
    """An explicit intersection (e.g. gender x age x origin): all group combinations."""

    kind: Literal["crossed"]
    attributes: list[str] = Field(min_length=2)

    def default_id(self) -> str:
        return "crossed-" + "-x-".join(self.attributes)

    def attribute_keys(self) -> list[tuple[str, tuple]]:
        return [(a, ("attributes", k)) for k, a in enumerate(self.attributes)]

    def fills(self, attribute: str) -> bool:
        return attribute in self.attributes

    def slot_attributes(self) -> list[str]:
        return list(self.attributes)

    def check(self, ck: "DesignCheck") -> None:
        slots = [ck.attrs[a].slot for a in self.attributes if ck.attrs[a].slot]
        if len(set(slots)) != len(slots):
            raise ck.fail("crossed attributes must fill different slots (to cross origin and gender through one "
                          "name, declare one attribute with groups per combination)", ("attributes",))
        for a in self.attributes:
            ck.equal_variants(ck.attrs[a], list(ck.attrs[a].groups), a)

    def select(self, axes: set[str]) -> "_DesignBase | None":
        return self if set(self.attributes) <= axes else None

    def expand(self, ex: "ExpandContext") -> Iterator["Case"]:
        b = ex.battery
        attrs = [b.attributes[a] for a in self.attributes]
        # a writing style has no variants: it is applied at every position of the others
        with_values = [a for a in attrs if a.signal != "writing_style"]
        npos = min((ex.positions(a, list(a.groups)) for a in with_values), default=1)
        for a_name, a in zip(self.attributes, attrs):
            if a.signal == "writing_style":
                continue
            extra = ex.positions(a, list(a.groups)) - npos
            if extra > 0:
                ex.exclude(f"variants of '{a_name}' beyond position {npos} (the shortest crossed attribute "
                           f"has {npos})", extra * len(a.groups))
        cells = list(itertools.product(*(list(a.groups) for a in attrs)))
        for t in ex.templates:
            for rep in range(ex.reps):
                for k in range(npos):
                    ms = f"{ex.did}/{t.id}/r{rep}/p{k}"
                    for cell in cells:
                        chosen = {an: (a, g, k) for an, a, g in zip(self.attributes, attrs, cell)}
                        yield ex.render(t, rep, chosen=chosen, matched_set=ms, position=k)

    def plan(self, battery, stats, comparisons):
        cells = 1
        for a in self.attributes:
            cells *= len(battery.attributes[a].groups)
        return {"cells": cells, "pairs": stats.get("matched_sets"), "comparisons": comb(cells, 2)}

    def compares(self, comparison, design_id: str) -> bool:
        return comparison.attribute in self.attributes


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

    def default_id(self) -> str:
        return "two_party"

    def attribute_keys(self) -> list[tuple[str, tuple]]:
        return [(a, ("axes", k)) for k, a in enumerate(self.axes)]

    def own_slots(self) -> set[str]:
        return {self.sub_slot, self.res_slot}

    def check(self, ck: "DesignCheck") -> None:
        for a in self.axes:
            if ck.attrs[a].signal != "identity":
                raise ck.fail(f"two_party axes must be 'identity' attributes; '{a}' is '{ck.attrs[a].signal}'",
                              ("axes",))

    def select(self, axes: set[str]) -> "_DesignBase | None":
        keep = [a for a in self.axes if a in axes]
        return self.model_copy(update={"axes": keep}) if keep else None

    def expand(self, ex: "ExpandContext") -> Iterator["Case"]:
        b = ex.battery
        for t in ex.templates:
            for rep in range(ex.reps):
                ms = f"{ex.did}/{t.id}/r{rep}"
                if self.include_baseline:
                    if t.baseline_turns is not None:
                        yield ex.render(t, rep, chosen={}, matched_set=ms, baseline=True,
                                        turns_override=t.baseline_turns)
                    else:
                        yield ex.render(t, rep, chosen={}, matched_set=ms, baseline=True,
                                        extra_slots={self.sub_slot: self.baseline_value,
                                                     self.res_slot: self.baseline_value})
                for axis in self.axes:
                    attr = b.attributes[axis]
                    for sub, res in itertools.product(list(attr.groups), repeat=2):
                        sv = attr.groups[sub].variants[0]
                        rv = attr.groups[res].variants[0]
                        if self.article:
                            sv, rv = ex.indefinite_article(sv), ex.indefinite_article(rv)
                        yield ex.render(t, rep, chosen={}, matched_set=ms, axis=axis,
                                        groups={"sub": sub, "res": res}, variants={"sub": sv, "res": rv},
                                        extra_slots={self.sub_slot: sv, self.res_slot: rv})
                    extra = sum(len(g.variants) - 1 for g in attr.groups.values())
                    if extra and rep == 0 and t is ex.templates[0]:
                        ex.exclude(f"axis '{axis}': only the first variant of each identity is used in the "
                                   f"two-party design", extra)

    def plan(self, battery, stats, comparisons):
        cells = {a: len(battery.attributes[a].groups) ** 2 for a in self.axes}
        n = sum(cells.values())
        return {"cells_per_axis": cells, "cells": n, "conditions_per_template": n + (1 if self.include_baseline else 0),
                # per cell, against the baseline
                "pairs": stats.get("matched_sets") if self.include_baseline else 0, "comparisons": n}


class AAControlDesign(_DesignBase):
    """An A/A control: one group's variants split into two pseudo-groups that should not differ.

    The variants of ``group`` (of ``attribute``) are split in order into a
    first half (pseudo-group ``<group>~1``) and a second half (``<group>~2``);
    variant *k* of the first half is paired with variant *k* of the second
    in the same template and repetition (an odd last variant is left out).
    Every measure of the plan's comparisons on ``attribute`` is then compared
    between the pseudo-groups, through the same analysis as the real
    comparisons. Both halves belong to the same group, so a ``fail`` says
    that the system's answers or the analysis do not behave as the test
    assumes (the empirical noise floor; e.g. a name-specific quirk, or
    nondeterminism the test does not expect).
    """

    kind: Literal["aa_control"]
    attribute: str
    group: str

    def pseudo_groups(self) -> tuple[str, str]:
        """The two pseudo-group labels, ``<group>~1`` and ``<group>~2``."""
        return f"{self.group}~1", f"{self.group}~2"

    def default_id(self) -> str:
        return f"aa_control-{self.attribute}-{self.group}"

    def attribute_keys(self) -> list[tuple[str, tuple]]:
        return [(self.attribute, ("attribute",))]

    def slot_attributes(self) -> list[str]:
        return [self.attribute]

    def check(self, ck: "DesignCheck") -> None:
        attr = ck.attrs[self.attribute]
        ck.need(self.group, list(attr.groups), ("group",), f"group of '{self.attribute}'")
        if attr.signal == "writing_style":
            raise ck.fail(f"an A/A control splits a group's variants; '{self.attribute}' is a writing style "
                          f"(no variants to split)", ("attribute",))
        nv = len(attr.groups[self.group].variants)
        if nv < 2:
            raise ck.fail(f"group '{self.group}' of '{self.attribute}' has {nv} variant(s): an A/A control needs "
                          f"at least 2 to split into two pseudo-groups (4 or more to generalise over names)",
                          ("group",))

    def expand(self, ex: "ExpandContext") -> Iterator["Case"]:
        # one group's variants split in two halves, paired by position within the halves
        # (variant k with variant half + k)
        attr = ex.battery.attributes[self.attribute]
        nv = len(attr.groups[self.group].variants)
        half = nv // 2
        if nv % 2:
            ex.exclude(f"last variant of '{self.group}' (an odd count cannot be split in two halves)", 1)
        pseudo = self.pseudo_groups()
        for t in ex.templates:
            for rep in range(ex.reps):
                for k in range(half):
                    ms = f"{ex.did}/{t.id}/r{rep}/p{k}"
                    for j, g in enumerate(pseudo):
                        case = ex.render(t, rep, chosen={self.attribute: (attr, self.group, k + j * half)},
                                         matched_set=ms, position=k, attribute=self.attribute)
                        yield case.model_copy(update={"groups": {**case.groups, self.attribute: g}})

    def plan(self, battery, stats, comparisons):
        return {"attribute": self.attribute, "groups": 2,
                "variants_per_group": len(battery.attributes[self.attribute].groups[self.group].variants) // 2,
                "pairs": stats.get("matched_sets"), "comparisons": 1}

    def compares(self, comparison, design_id: str) -> bool:
        # A/A controls only when named (control_comparisons names them)
        return comparison.design == design_id and self.attribute == comparison.attribute

    def comparison_groups(self, battery, attribute: str) -> list[str]:
        return list(self.pseudo_groups())

    def control_comparisons(self, battery, design_id: str) -> list["Comparison"]:
        from fairpair.battery._schema import Comparison

        measures = list(dict.fromkeys(c.measure for c in battery.analysis.comparisons
                                      if c.attribute == self.attribute))
        # the halves' names are compared as these names (names fixed): a name the system treats
        # differently is exactly what an A/A control should catch
        return [Comparison(id=f"aa-{m}-{self.group}", measure=m, attribute=self.attribute,
                           groups=list(self.pseudo_groups()), design=design_id, primary=True,
                           generalize={"names": "fixed"})
                for m in measures]


class BaselineDesign(_DesignBase):
    """No signal at all: every attribute slot gets its ``neutral`` value."""

    kind: Literal["baseline"]

    def default_id(self) -> str:
        return "baseline"

    def expand(self, ex: "ExpandContext") -> Iterator["Case"]:
        for t in ex.templates:
            for rep in range(ex.reps):
                yield ex.render(t, rep, chosen={}, matched_set=f"{ex.did}/{t.id}/r{rep}", baseline=True)


#: Every design class, keyed by its ``kind``.
DESIGN_KINDS: dict[str, type[_DesignBase]] = {
    "counterfactual": CounterfactualDesign, "crossed": CrossedDesign, "two_party": TwoPartyDesign,
    "aa_control": AAControlDesign, "baseline": BaselineDesign,
}

Design = Annotated[
    Union[CounterfactualDesign, CrossedDesign, TwoPartyDesign, AAControlDesign, BaselineDesign],
    Field(discriminator="kind"),
]
