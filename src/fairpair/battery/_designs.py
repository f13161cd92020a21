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
``own_slots(battery)``
    Template slots the design itself fills (two-party personas, ranking candidates).
``slot_attributes()``
    Attributes whose slot every template of the design must use.
``check(ck)``
    The design's own consistency rules (``ck``: :class:`fairpair.battery._load.DesignCheck`,
    which raises errors with file, line and key).
``select(axes)``
    The design narrowed to the attributes of ``--axes`` (``None``: dropped).
``expand(ex)``
    Its cases (``ex``: :class:`fairpair.battery._expanding.ExpandContext`, the renderer and counts).
``plan(battery, stats, comparisons)``
    The sizes ``fairpair plan`` prints for it.
``compares(comparison, design_id)`` / ``comparison_groups(battery, attribute)``
    Whether a pre-registered comparison reads its cases, and over which groups.
``control_comparisons(battery, design_id)``
    Comparisons the design adds on its own (the A/A control's halves).
``speakers(battery)``
    ``(res, sub)``: who the model plays and whom it answers, when its answers
    are a role-play reply (two-party), for the ``out_of_role`` answer status.
``analysed_without_plan``
    Class flag: the analysis runs for it even without planned comparisons.

The stages receive helpers as arguments (no import of ``cases`` or
``analysis`` here), so this module is imported by the schema without cycles.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from math import comb
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field

from fairpair.battery._strict import _ID, _Strict

if TYPE_CHECKING:  # pragma: no cover
    from fairpair.battery._expanding import ExpandContext
    from fairpair.battery._load import DesignCheck
    from fairpair.battery._schema import Battery, Comparison
    from fairpair.records import Case

__all__ = ["CounterfactualDesign", "CrossedDesign", "TwoPartyDesign", "TwoPartyRoles", "AAControlDesign",
           "BaselineDesign",
           "RankingDesign", "Design", "DESIGN_KINDS", "williams_rows"]


class _DesignBase(_Strict):
    id: Annotated[str, Field(pattern=_ID)] | None = None
    templates: list[str] | None = None
    repetitions: int | None = Field(None, ge=1, strict=True)  # strict: `true` is not 1

    #: analysed without a pre-registered comparison (the two-party cells, the ranking statistics)
    analysed_without_plan: ClassVar[bool] = False
    if TYPE_CHECKING:  # every design declares its own ``kind: Literal[...]`` field
        kind: str

    # -- the verbs (defaults: a design that varies nothing, like the baseline) --

    def default_id(self) -> str:
        return str(self.kind)

    def varied_attributes(self) -> list[str]:
        """The attributes this design varies."""
        return [a for a, _ in self.attribute_keys()]

    def attribute_keys(self) -> list[tuple[str, tuple]]:
        """Each varied attribute with the key path, under the design, where the battery names it."""
        return []

    def fills(self, attribute: str) -> bool:
        return False

    def own_slots(self, battery: Battery) -> set[str]:
        return set()

    def slot_attributes(self) -> list[str]:
        return []

    def check(self, ck: DesignCheck) -> None:
        return None

    def select(self, axes: set[str]) -> _DesignBase | None:
        return self

    def expand(self, ex: ExpandContext) -> Iterator[Case]:  # pragma: no cover - every design has one
        raise NotImplementedError

    def plan(self, battery: Battery, stats: dict[str, Any],
             comparisons: Callable[[str, int], int]) -> dict[str, Any]:
        """Sizes added to ``stats`` (the expansion's counts of one design) for ``fairpair plan``;
        ``comparisons(attribute, n_groups)`` counts what the analysis plan compares."""
        return {}

    def summary(self, battery: Battery) -> str | None:
        """One line for ``fairpair validate`` (None: nothing beyond the counts)."""
        return None

    def speakers(self, battery: Battery) -> tuple[str, str] | None:
        """``(res, sub)`` when the design's answers are a role-play reply of RES to SUB (checked by
        the ``out_of_role`` answer status); None for designs where the model speaks as itself."""
        return None

    def compares(self, comparison: Comparison, design_id: str) -> bool:
        return False

    def comparison_groups(self, battery: Battery, attribute: str) -> list[str]:
        return list(battery.attributes[attribute].groups)

    def control_comparisons(self, battery: Battery, design_id: str) -> list[Comparison]:
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

    def check(self, ck: DesignCheck) -> None:
        attr = ck.attrs[self.attribute]
        for k, g in enumerate(self.groups or []):
            ck.need(g, list(attr.groups), ("groups", k), f"group of '{self.attribute}'")
        chosen = self.groups or list(attr.groups)
        if len(chosen) < 2:
            raise ck.fail("a counterfactual design needs at least two groups")
        ck.equal_variants(attr, chosen, self.attribute)

    def select(self, axes: set[str]) -> _DesignBase | None:
        return self if self.attribute in axes else None

    def expand(self, ex: ExpandContext) -> Iterator[Case]:
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

    def check(self, ck: DesignCheck) -> None:
        slots = [ck.attrs[a].slot for a in self.attributes if ck.attrs[a].slot]
        if len(set(slots)) != len(slots):
            raise ck.fail("crossed attributes must fill different slots (to cross origin and gender through one "
                          "name, declare one attribute with groups per combination)", ("attributes",))
        for a in self.attributes:
            ck.equal_variants(ck.attrs[a], list(ck.attrs[a].groups), a)

    def select(self, axes: set[str]) -> _DesignBase | None:
        return self if set(self.attributes) <= axes else None

    def expand(self, ex: ExpandContext) -> Iterator[Case]:
        b = ex.battery
        attrs = [b.attributes[a] for a in self.attributes]
        # a writing style has no variants: it is applied at every position of the others
        with_values = [a for a in attrs if a.signal != "writing_style"]
        npos = min((ex.positions(a, list(a.groups)) for a in with_values), default=1)
        for a_name, a in zip(self.attributes, attrs, strict=True):
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
                        chosen = {an: (a, g, k) for an, a, g in zip(self.attributes, attrs, cell, strict=True)}
                        yield ex.render(t, rep, chosen=chosen, matched_set=ms, position=k)

    def plan(self, battery, stats, comparisons):
        cells = 1
        for a in self.attributes:
            cells *= len(battery.attributes[a].groups)
        return {"cells": cells, "pairs": stats.get("matched_sets"), "comparisons": comb(cells, 2)}

    def compares(self, comparison, design_id: str) -> bool:
        return comparison.attribute in self.attributes


class TwoPartyRoles(_Strict):
    """The names of the two parties as the prompts write them: ``sub`` asks, ``res`` (the party the
    model plays) answers. Default ``Alex`` and ``Blake``, the names ``fairpair persona import``
    gives SUB and RES."""

    sub: Annotated[str, Field(min_length=1, pattern=r"^[^\W\d_][\w .'-]*$")] = "Alex"
    res: Annotated[str, Field(min_length=1, pattern=r"^[^\W\d_][\w .'-]*$")] = "Blake"


def _names(text: str, name: str) -> bool:
    import re

    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


class TwoPartyDesign(_DesignBase):
    """The SUB x RES persona design (Tan & Lee 2025).

    For each template and axis, every (SUB identity, RES identity) pair of the
    axis's groups, plus one baseline without demographics per template. The
    identity is written with its indefinite article ("an Asian") into
    ``sub_slot`` / ``res_slot``; the baseline uses ``baseline_turns`` of the
    template (or fills the slots with ``baseline_value``).

    ``roles`` names the two parties as the prompts write them (default
    ``{sub: Alex, res: Blake}``): every answer of the design is checked to
    be RES answering SUB (the ``out_of_role`` answer status, see
    :mod:`fairpair.measures.status`). Roles given explicitly must both be
    named in the text of every template the design uses (an error
    otherwise); the default roles apply to a design whose templates all
    name both, and are off (said by ``fairpair validate``) for one whose
    templates do not. ``roles: null`` turns the check off.
    """

    kind: Literal["two_party"]
    analysed_without_plan: ClassVar[bool] = True
    axes: list[str] = Field(min_length=1)
    sub_slot: str = "sub_persona"
    res_slot: str = "res_persona"
    baseline_value: str = "a person"
    article: bool = True
    include_baseline: bool = True
    roles: TwoPartyRoles | None = Field(default_factory=TwoPartyRoles)

    def default_id(self) -> str:
        return "two_party"

    def _templates(self, battery: Battery) -> list:
        return [t for t in battery.templates if not self.templates or t.id in self.templates]

    @staticmethod
    def _template_text(battery: Battery, t) -> str:
        """Everything the template's prompts are written from: system, history, turns, slot values."""
        return "\n".join([t.system or "", *t.turns, *(t.baseline_turns or ()), *t.slots.values(),
                          *battery.slots.values(), *(m.content for m in t.history)])

    def _unnamed(self, battery: Battery) -> list[tuple[str, str]]:
        """(template id, name) for each party name a template of the design never writes."""
        if self.roles is None:
            return []
        return [(t.id, name) for t in self._templates(battery) for name in (self.roles.sub, self.roles.res)
                if not _names(self._template_text(battery, t), name)]

    def speakers(self, battery: Battery) -> tuple[str, str] | None:
        """``(res, sub)``: who answers and whom, for the out-of-role check; None when it is off
        (``roles: null``, or default roles that the templates do not name)."""
        if self.roles is None or self._unnamed(battery):
            return None
        return self.roles.res, self.roles.sub

    def summary(self, battery: Battery) -> str | None:
        if self.roles is None:
            return "two-party roles: off (roles: null), answers are not checked to stay in role"
        if self._unnamed(battery):
            return (f"two-party roles: off, the templates do not name both '{self.roles.sub}' and "
                    f"'{self.roles.res}' (set roles: {{sub: ..., res: ...}} to check that answers stay in role)")
        return (f"two-party roles: {self.roles.res} (RES) answers {self.roles.sub} (SUB); "
                "out-of-role answers are counted")

    def attribute_keys(self) -> list[tuple[str, tuple]]:
        return [(a, ("axes", k)) for k, a in enumerate(self.axes)]

    def own_slots(self, battery: Battery) -> set[str]:
        return {self.sub_slot, self.res_slot}

    def check(self, ck: DesignCheck) -> None:
        for a in self.axes:
            if ck.attrs[a].signal != "identity":
                raise ck.fail(f"two_party axes must be 'identity' attributes; '{a}' is '{ck.attrs[a].signal}'",
                              ("axes",))
        if self.roles is not None and "roles" in self.model_fields_set:
            if self.roles.sub == self.roles.res:
                raise ck.fail(f"two_party roles: sub and res are both '{self.roles.sub}'", ("roles",))
            missing = self._unnamed(ck.battery)
            if missing:
                tid, name = missing[0]
                raise ck.fail(f"two_party roles: template '{tid}' never names '{name}'"
                              + (f" ({len(missing) - 1} more such)" if len(missing) > 1 else ""), ("roles",),
                              hint="roles are the names the prompts give the two parties; roles: null turns "
                                   "the out-of-role check off")

    def select(self, axes: set[str]) -> _DesignBase | None:
        keep = [a for a in self.axes if a in axes]
        return self.model_copy(update={"axes": keep}) if keep else None

    def expand(self, ex: ExpandContext) -> Iterator[Case]:
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
    """An A/A control: two pseudo-groups of one group that should not differ.

    ``split: names`` (the default): the variants of ``group`` (of
    ``attribute``) are split in order into a first half (pseudo-group
    ``<group>~1``) and a second half (``<group>~2``); variant *k* of the
    first half is paired with variant *k* of the second in the same template
    and repetition (an odd last variant is left out). A ``fail`` then says
    that the halves' names are treated differently, or that the answers or
    the analysis do not behave as the test assumes.

    ``split: seeds``: every variant of ``group`` is sent twice in each
    template and repetition, once with the repetition's usual seed
    (pseudo-group ``<group>~seed1``) and once with a fresh seed of its own
    (``<group>~seed2``, SHA-256 of the battery seed, template, repetition
    and design id); the two copies are paired. The names are the same, so
    the only difference is the system's sampling: a ``fail`` says that its
    nondeterminism (e.g. a hosted model giving different outputs for one
    seed) is larger than the analysis assumes.

    Every measure of the plan's comparisons on ``attribute`` is then compared
    between the pseudo-groups through the same analysis as the real
    comparisons (the empirical noise floor; Kohavi, Tang & Xu 2020, ch. 19,
    the A/A test).
    """

    kind: Literal["aa_control"]
    attribute: str
    group: str
    split: Literal["names", "seeds"] = "names"

    def pseudo_groups(self) -> tuple[str, str]:
        """The two pseudo-group labels: ``<group>~1`` / ``<group>~2`` (names), ``<group>~seed1`` / ``~seed2``."""
        if self.split == "seeds":
            return f"{self.group}~seed1", f"{self.group}~seed2"
        return f"{self.group}~1", f"{self.group}~2"

    def default_id(self) -> str:
        return f"aa_control-{self.attribute}-{self.group}" + ("-seeds" if self.split == "seeds" else "")

    def attribute_keys(self) -> list[tuple[str, tuple]]:
        return [(self.attribute, ("attribute",))]

    def slot_attributes(self) -> list[str]:
        return [self.attribute]

    def check(self, ck: DesignCheck) -> None:
        attr = ck.attrs[self.attribute]
        ck.need(self.group, list(attr.groups), ("group",), f"group of '{self.attribute}'")
        if attr.signal == "writing_style":
            raise ck.fail(f"an A/A control pairs a group's variants; '{self.attribute}' is a writing style "
                          f"(no variants to pair)", ("attribute",))
        nv = len(attr.groups[self.group].variants)
        if self.split == "names" and nv < 2:
            raise ck.fail(f"group '{self.group}' of '{self.attribute}' has {nv} variant(s): an A/A control needs "
                          f"at least 2 to split into two pseudo-groups (4 or more to generalise over names), "
                          f"or `split: seeds` (the same variants with fresh seeds)", ("group",))

    def expand(self, ex: ExpandContext) -> Iterator[Case]:
        attr = ex.battery.attributes[self.attribute]
        nv = len(attr.groups[self.group].variants)
        pseudo = self.pseudo_groups()
        if self.split == "seeds":
            # every variant twice: the repetition's seed, then a fresh one (paired by template x repetition x variant)
            for t in ex.templates:
                for rep in range(ex.reps):
                    for k in range(nv):
                        ms = f"{ex.did}/{t.id}/r{rep}/p{k}"
                        for j, g in enumerate(pseudo):
                            case = ex.render(t, rep, chosen={self.attribute: (attr, self.group, k)},
                                             matched_set=ms, position=k, attribute=self.attribute,
                                             seed_stream=f"aa:{ex.did}" if j else None)
                            yield case.model_copy(update={"groups": {**case.groups, self.attribute: g}})
            return
        # one group's variants split in two halves, paired by position within the halves
        # (variant k with variant half + k)
        half = nv // 2
        if nv % 2:
            ex.exclude(f"last variant of '{self.group}' (an odd count cannot be split in two halves)", 1)
        for t in ex.templates:
            for rep in range(ex.reps):
                for k in range(half):
                    ms = f"{ex.did}/{t.id}/r{rep}/p{k}"
                    for j, g in enumerate(pseudo):
                        case = ex.render(t, rep, chosen={self.attribute: (attr, self.group, k + j * half)},
                                         matched_set=ms, position=k, attribute=self.attribute)
                        yield case.model_copy(update={"groups": {**case.groups, self.attribute: g}})

    def plan(self, battery, stats, comparisons):
        nv = len(battery.attributes[self.attribute].groups[self.group].variants)
        return {"attribute": self.attribute, "groups": 2, "split": self.split,
                "variants_per_group": nv if self.split == "seeds" else nv // 2,
                "pairs": stats.get("matched_sets"), "comparisons": 1}

    def compares(self, comparison, design_id: str) -> bool:
        # A/A controls only when named (control_comparisons names them)
        return comparison.design == design_id and self.attribute == comparison.attribute

    def comparison_groups(self, battery, attribute: str) -> list[str]:
        return list(self.pseudo_groups())

    def control_comparisons(self, battery, design_id: str) -> list[Comparison]:
        from fairpair.battery._schema import Comparison

        measures = list(dict.fromkeys(c.measure for c in battery.analysis.comparisons
                                      if c.attribute == self.attribute))
        tail = "-seeds" if self.split == "seeds" else ""
        # the halves' names are compared as these names (names fixed): a name the system treats
        # differently is exactly what an A/A control should catch
        return [Comparison(id=f"aa-{m}-{self.group}{tail}", measure=m, attribute=self.attribute,
                           groups=list(self.pseudo_groups()), design=design_id, primary=True,
                           generalize={"names": "fixed"})
                for m in measures]


class BaselineDesign(_DesignBase):
    """No signal at all: every attribute slot gets its ``neutral`` value."""

    kind: Literal["baseline"]

    def default_id(self) -> str:
        return "baseline"

    def expand(self, ex: ExpandContext) -> Iterator[Case]:
        for t in ex.templates:
            for rep in range(ex.reps):
                yield ex.render(t, rep, chosen={}, matched_set=f"{ex.did}/{t.id}/r{rep}", baseline=True)


def williams_rows(n: int) -> list[list[int]]:
    """The rows of a balanced Latin square for ``n`` treatments (Williams 1949).

    Row ``i`` is the first row ``0, 1, n-1, 2, n-2, ...`` shifted by ``i``
    (mod ``n``): every treatment takes every position once, and every
    ordered pair of treatments is adjacent once (``n`` even). For odd ``n``
    the mirrored rows are added (``2n`` rows), which restores the balance of
    adjacent pairs.

    Williams, E. J. (1949). Experimental designs balanced for the
    estimation of residual effects of treatments. *Australian Journal of
    Scientific Research A* 2(2), 149-168.
    """
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(x + i) % n for x in first] for i in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


class RankingDesign(_DesignBase):
    """The ranking (selection) design of hiring audits: k candidates in one prompt, one per group.

    Every template has one slot per candidate, ``{<slot>_1}`` ... ``{<slot>_k}``
    (``slot: candidate`` gives ``{candidate_1}``...), each filled with one
    variant (a name) of a different group of ``attribute``; the answer is
    parsed into an order of the candidates by a ``ranking`` measure.

    ``groups``: the groups that take part (default all, at least 2);
    ``candidates``: k, the slots per prompt (default the number of groups;
    fewer takes the first k columns of each order, so every group still
    takes every slot equally often). ``order``: how the groups are placed
    in the slots across repetitions: ``latin_square`` (the balanced Latin
    square of Williams 1949, :func:`williams_rows`: every group in every
    slot once and, for an even number of groups, every ordered pair of
    groups adjacent once; 2n orders for odd n) or ``rotations`` (the n
    cyclic shifts: every group in every slot once). The order of template
    number ``t`` (0-based), repetition ``r`` and name position ``p`` is
    ``orders[(t + r + p) % len(orders)]``, so over the repetitions every
    template and name position goes through the orders in turn.
    ``as_shown`` is the order of an imported run (``fairpair import-answers``
    with ranking rows): each request's own order, recorded in its case; a
    battery to run cannot use it. Names are
    crossed with templates as in the counterfactual design: name position
    ``p`` uses variant ``p`` of every group (the groups must offer the same
    number of variants). Each case records the group and variant of every
    slot in ``meta.ranking``; its ``groups``/``variants`` are keyed by slot
    (``candidate_1: espana``).

    Source of the design: the resume-ranking audits of LLMs, e.g. Bloomberg
    (Yin, Alba & Nicoletti 2024) and Armstrong et al. (2024), "The Silicon
    Ceiling", which rotate equally qualified candidates through the
    positions of one prompt.
    """

    kind: Literal["ranking"]
    analysed_without_plan: ClassVar[bool] = True
    attribute: str
    groups: list[str] | None = None
    candidates: int | None = Field(None, ge=2, strict=True)
    slot: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] = "candidate"
    order: Literal["latin_square", "rotations", "as_shown"] = "latin_square"

    def default_id(self) -> str:
        return f"ranking-{self.attribute}"

    def attribute_keys(self) -> list[tuple[str, tuple]]:
        return [(self.attribute, ("attribute",))]

    def fills(self, attribute: str) -> bool:
        # its cases never use the attribute's own slot (check() forbids it): no neutral value needed
        return self.attribute == attribute

    def chosen_groups(self, battery: Battery) -> list[str]:
        return list(self.groups) if self.groups else list(battery.attributes[self.attribute].groups)

    def k(self, battery: Battery) -> int:
        """The number of candidates per prompt."""
        return self.candidates or len(self.chosen_groups(battery))

    def slot_names(self, battery: Battery) -> list[str]:
        return [f"{self.slot}_{i}" for i in range(1, self.k(battery) + 1)]

    def own_slots(self, battery: Battery) -> set[str]:
        attr = battery.attributes.get(self.attribute)
        if attr is None:
            return set()
        chosen = self.chosen_groups(battery)
        if len(chosen) < 2 or any(g not in attr.groups for g in chosen) or \
                (self.candidates or 0) > len(chosen):
            # a design that check() will reject: every slot the attribute could fill, so that the
            # design's own error (unknown group, too few groups, k too large) is the one reported
            return {f"{self.slot}_{i}" for i in range(1, max(len(attr.groups), self.candidates or 0) + 1)}
        return set(self.slot_names(battery))

    def orders(self, battery: Battery) -> list[tuple[str, ...]]:
        """The orders of groups over the slots (each a tuple of k groups), in the order they are used."""
        groups = self.chosen_groups(battery)
        n, k = len(groups), self.k(battery)
        if self.order == "as_shown":  # imported: each case records the order its request showed
            return [tuple(groups[:k])]
        if self.order == "rotations":
            rows = [[(i + j) % n for j in range(n)] for i in range(n)]
        else:
            rows = williams_rows(n)
        return [tuple(groups[x] for x in row[:k]) for row in rows]

    def check(self, ck: DesignCheck) -> None:
        attr = ck.attrs[self.attribute]
        for j, g in enumerate(self.groups or []):
            ck.need(g, list(attr.groups), ("groups", j), f"group of '{self.attribute}'")
        chosen = self.chosen_groups(ck.battery)
        if len(set(chosen)) != len(chosen):
            raise ck.fail("a group is listed twice", ("groups",))
        if len(chosen) < 2:
            raise ck.fail("a ranking design needs at least two groups", ("groups",) if self.groups else ())
        if self.candidates is not None and self.candidates > len(chosen):
            raise ck.fail(f"candidates: {self.candidates} is more than the {len(chosen)} groups of the design (one "
                          f"candidate per group in each prompt)", ("candidates",),
                          hint=f"use at most candidates: {len(chosen)}, or add groups")
        if attr.signal in ("writing_style", "identity"):
            raise ck.fail(f"a ranking design fills its candidate slots with the variants of '{self.attribute}'; a "
                          f"'{attr.signal}' attribute has no variants to put in a slot", ("attribute",))
        with_slots = [g for g in chosen if attr.groups[g].slots]
        if with_slots:
            raise ck.fail(f"group '{with_slots[0]}' of '{self.attribute}' declares 'slots' (one grammatical form "
                          f"per group): a ranking prompt holds several groups at once, so no form agrees with all",
                          ("attribute",))
        if self.order == "as_shown":
            raise ck.fail("order: as_shown is the order of imported requests (each case records its own); a battery "
                          "that runs needs latin_square or rotations", ("order",))
        ck.equal_variants(attr, chosen, self.attribute)
        ranking_measures = set(ck.battery.ranking_measures())
        if not ranking_measures:
            raise ck.fail("a ranking design needs a measure of kind 'ranking' to read its answers as orders of the "
                          "candidates", ("kind",), hint="add to measures: {order: {kind: ranking}}")
        for ci, c in enumerate(ck.battery.analysis.comparisons):
            if c.measure.split("=", 1)[0].split(".", 1)[0] in ranking_measures:
                raise ck.fail_at(f"'{c.measure}' is a ranking measure: ranking designs are analysed by the ranking "
                                 f"statistics (selection rates, four-fifths ratios, position effect; results.json "
                                 f"'rankings'), not by pre-registered comparisons",
                                 ("analysis", "comparisons", ci, "measure"),
                                 hint="remove this comparison; the ranking analysis runs without one")
        wanted = self.slot_names(ck.battery)
        for i, t in enumerate(ck.battery.templates):
            if self.templates and t.id not in self.templates:
                continue
            from fairpair.battery._schema import SLOT_RE

            texts = (*t.turns, t.system or "", *(h.content for h in t.history))
            used = {m.group(1) for s in texts for m in SLOT_RE.finditer(s) if m.group(1)}
            lacking = [s for s in wanted if s not in used]
            if lacking:
                raise ck.fail_at(f"template '{t.id}' lacks slot(s) {', '.join('{' + s + '}' for s in lacking)} of "
                                 f"ranking design '{ck.battery.design_id(ck.index)}' ({len(wanted)} candidates: "
                                 f"one slot each)", ("templates", i, "turns"),
                                 hint=f"write {', '.join('{' + s + '}' for s in wanted)} into a turn, or list the "
                                      f"design's templates under designs[{ck.index}].templates")
            if attr.slot and attr.slot in used:
                raise ck.fail_at(f"template '{t.id}' uses '{{{attr.slot}}}', the slot of '{self.attribute}', but "
                                 f"ranking design '{ck.battery.design_id(ck.index)}' names its candidates through "
                                 f"{{{wanted[0]}}}..{{{wanted[-1]}}}", ("templates", i, "turns"),
                                 hint="use the candidate slots, or keep this template out of the design's templates")

    def summary(self, battery: Battery) -> str | None:
        names = self.slot_names(battery)
        return (f"ranking of {len(names)} candidates of '{self.attribute}' "
                f"({', '.join(self.chosen_groups(battery))}) in slots {{{names[0]}}}..{{{names[-1]}}}, "
                + (f"{self.order.replace('_', ' ')} over {len(self.orders(battery))} orders" if self.order != "as_shown"
                 else "in the order each imported request showed"))

    def select(self, axes: set[str]) -> _DesignBase | None:
        return self if self.attribute in axes else None

    def expand(self, ex: ExpandContext) -> Iterator[Case]:
        b = ex.battery
        attr = b.attributes[self.attribute]
        groups = self.chosen_groups(b)
        left_out = [g for g in attr.groups if g not in groups]
        if left_out:
            ex.exclude(f"groups not in the design: {', '.join(left_out)}", len(left_out))
        orders = self.orders(b)
        names = self.slot_names(b)
        npos = ex.positions(attr, groups)
        for ti, t in enumerate(ex.templates):
            for rep in range(ex.reps):
                for p in range(npos):
                    oi = (ti + rep + p) % len(orders)
                    order = orders[oi]
                    variants = [attr.groups[g].variants[p] for g in order]
                    slots = [{"slot": j + 1, "name": names[j], "group": g, "variant": v}
                             for j, (g, v) in enumerate(zip(order, variants, strict=True))]
                    by_slot = dict(zip(names, variants, strict=True))
                    case = ex.render(t, rep, chosen={}, matched_set=f"{ex.did}/{t.id}/r{rep}/p{p}", position=p,
                                     attribute=self.attribute, groups=dict(zip(names, order, strict=True)),
                                     variants=by_slot, extra_slots=dict(by_slot))
                    meta = {**case.meta, "ranking": {"attribute": self.attribute, "order": self.order,
                                                     "order_index": oi, "repetition": rep, "slots": slots}}
                    yield case.model_copy(update={"meta": meta})

    def plan(self, battery, stats, comparisons):
        attr = battery.attributes[self.attribute]
        groups = self.chosen_groups(battery)
        n_orders = len(self.orders(battery))
        sets = stats.get("matched_sets") or 0
        per_template = sets // max(stats.get("templates") or 1, 1)
        return {"attribute": self.attribute, "groups": len(groups), "candidates": self.k(battery),
                "order": self.order, "orders": n_orders,
                "variants_per_group": min(len(attr.groups[g].variants) for g in groups),
                # every template goes through the orders equally often when its sets are a multiple of them
                "orders_balanced": per_template % n_orders == 0,
                "pairs": sets, "comparisons": comb(len(groups), 2)}


#: Every design class, keyed by its ``kind``.
DESIGN_KINDS: dict[str, type[_DesignBase]] = {
    "counterfactual": CounterfactualDesign, "crossed": CrossedDesign, "two_party": TwoPartyDesign,
    "aa_control": AAControlDesign, "baseline": BaselineDesign, "ranking": RankingDesign,
}

Design = Annotated[
    CounterfactualDesign | CrossedDesign | TwoPartyDesign | AAControlDesign | BaselineDesign | RankingDesign,
    Field(discriminator="kind"),
]
