"""Expansion of a battery into matched cases.

The expansion is deterministic (same battery -> byte-identical
``cases.jsonl``), streams (a generator, so a million cases never sit in memory
at once) and records every exclusion with its reason and count in the
expansion manifest: nothing is dropped silently.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fairpair import __version__
from fairpair._files import atomic_path
from fairpair.battery import SLOT_RE, AAControlDesign, Attribute, Battery, LoadedBattery, Template, plain_scalar
from fairpair.cases._style import apply_transforms
from fairpair.records import Case, case_json

__all__ = ["Expansion", "ExpandContext", "expand", "fill_slots", "context_text", "context_lookup", "indefinite_article",
           "write_cases"]

_MISSING = object()


def context_lookup(context: Any, dotted: str) -> Any:
    """The value at ``dotted`` (``crm.nombre``; list items by index) in ``context``, or a sentinel."""
    cur = context
    for part in dotted.split(".") if dotted else ():
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return _MISSING
    return cur


class _AsWrittenDumper(yaml.SafeDumper):
    """Writes a string without quotes whenever fairpair's loader reads it back as that string.

    ``02142``, ``89.00``, ``12:30`` and ``yes`` stay bare, as the user wrote
    them; only text that would read back as another type (``"true"``,
    ``"7"``, ``""``) is quoted.
    """

    def resolve(self, kind, value, implicit):  # noqa: D102 - PyYAML hook
        if kind is yaml.ScalarNode and implicit[0]:
            v = plain_scalar(value)
            if v is None:
                return "tag:yaml.org,2002:null"
            if isinstance(v, bool):
                return "tag:yaml.org,2002:bool"
            if isinstance(v, int):
                return "tag:yaml.org,2002:int"
            if isinstance(v, float):
                return "tag:yaml.org,2002:float"
            return "tag:yaml.org,2002:str"
        return super().resolve(kind, value, implicit)


def context_text(value: Any, fmt: str = "yaml") -> str:
    """A context value as the text the model reads.

    Scalars are their text as written in the battery (``02142``, ``12:30``;
    ``true``/``false``/``null`` for YAML's booleans and null). A mapping or
    list is written as YAML (block style, keys in the order written, no line
    folding) or as indented JSON (``fmt="json"``).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (str, int, float)):
        return str(value)
    # A record is written once per distinct value: every case of a template carries the same
    # CRM record, and PyYAML's pure-Python emitter costs about a millisecond per record.
    key = (fmt, repr(value))  # exact for what a battery holds: str/int/float/bool/None/date, lists, dicts
    text = _CONTEXT_TEXT.get(key)
    if text is None:
        if fmt == "json":
            text = json.dumps(value, ensure_ascii=False, indent=2)
        else:
            text = yaml.dump(value, Dumper=_AsWrittenDumper, allow_unicode=True, sort_keys=False,
                             default_flow_style=False, width=1_000_000).rstrip("\n")
        if len(_CONTEXT_TEXT) >= 4096:
            _CONTEXT_TEXT.clear()
        _CONTEXT_TEXT[key] = text
    return text


#: (format, repr of the value) -> its text; bounded (cleared when full).
_CONTEXT_TEXT: dict[tuple[str, str], str] = {}


def fill_slots(text: str, values: dict[str, str], context: dict[str, Any] | None = None,
               fmt: str = "yaml") -> str:
    """Replace ``{slot}`` and ``{context.path}`` in one pass; ``{{``/``}}`` are literal braces.

    A name is a slot first (``values``), else a path in ``context``
    (``{crm}`` the whole record, ``{crm.nombre}`` one field), written with
    :func:`context_text`. A value is inserted literally: braces,
    ``{other_slot}``, Jinja or format syntax inside a value are never
    evaluated. Unknown names are left as they are (the battery check rejects
    them before expansion).
    """
    def sub(m):
        tok = m.group(0)
        if tok == "{{":
            return "{"
        if tok == "}}":
            return "}"
        name = m.group(1)
        if name in values:
            return values[name]
        if context is not None:
            found = context_lookup(context, name)
            if found is not _MISSING:
                return context_text(found, fmt)
        return tok

    return SLOT_RE.sub(sub, text)


_AN_EXCEPTIONS = ("uni", "use", "usu", "eu", "one", "once")
_A_EXCEPTIONS = ("hour", "honest", "heir", "honou")


def indefinite_article(phrase: str) -> str:
    """``"an Asian"``, ``"a Caucasian"``, ``"a Unitarian"``, ``"an hour"``: English a/an by sound."""
    w = phrase.strip().lower()
    if w.startswith(_A_EXCEPTIONS):
        art = "an"
    elif w.startswith(_AN_EXCEPTIONS):
        art = "a"
    else:
        art = "an" if w[:1] in "aeiou" else "a"
    return f"{art} {phrase.strip()}"


@dataclass
class Expansion:
    """Counts and exclusions gathered while expanding (the expansion manifest)."""

    battery: str
    battery_sha256: str
    designs: dict[str, dict[str, Any]] = field(default_factory=dict)
    exclusions: list[dict[str, Any]] = field(default_factory=list)
    total: int = 0
    prompts: list[dict[str, Any]] = field(default_factory=list)

    def add_prompt(self, template: Template) -> None:
        """Record the template's prompt text as written (slots unfilled); identical prompts are listed once."""
        key = {"system": template.system, "system_file": template.system_file,
               "history": [m.model_dump(mode="json") for m in template.history], "turns": list(template.turns),
               "baseline_turns": template.baseline_turns}
        for p in self.prompts:
            if p["prompt"] == key:
                if template.id not in p["templates"]:
                    p["templates"].append(template.id)
                return
        self.prompts.append({"prompt": key, "templates": [template.id]})

    def exclude(self, design: str, reason: str, count: int) -> None:
        if count:
            self.exclusions.append({"design": design, "reason": reason, "count": count})

    def manifest(self) -> dict[str, Any]:
        return {"battery": self.battery, "battery_sha256": self.battery_sha256,
                "fairpair_version": __version__, "total_cases": self.total,
                "designs": self.designs, "exclusions": self.exclusions, "prompt_templates": self.prompts}


def _seed(battery: Battery, template: str, rep: int, stream: str | None = None) -> int:
    key = f"{battery.seed}|{template}|{rep}" + (f"|{stream}" if stream is not None else "")
    h = hashlib.sha256(key.encode()).hexdigest()
    return int(h[:8], 16)


def _case_id(payload: dict[str, Any]) -> str:
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:20]


def _set_dotted(d: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    for p in parts[:-1]:
        nxt = d.get(p)
        if not isinstance(nxt, dict):
            nxt = {}
            d[p] = nxt
        d = nxt
    d[parts[-1]] = value


def _fill_any(obj: Any, values: dict[str, str]) -> Any:
    if isinstance(obj, str):
        return fill_slots(obj, values)
    if isinstance(obj, dict):
        return {k: _fill_any(v, values) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_fill_any(v, values) for v in obj]
    return obj


class _Renderer:
    def __init__(self, battery: Battery):
        self.b = battery
        self.neutral = {a.slot: a.neutral for a in battery.attributes.values()
                        if a.slot and a.neutral is not None}

    def render(self, t: Template, design_id: str, design_kind: str, rep: int, *,
               chosen: dict[str, tuple[Attribute, str, int]], matched_set: str,
               extra_slots: dict[str, str] | None = None, groups: dict[str, str] | None = None,
               variants: dict[str, str] | None = None, position: int | None = None,
               attribute: str | None = None, axis: str | None = None, baseline: bool = False,
               turns_override: list[str] | None = None, seed_stream: str | None = None) -> Case:
        values = dict(self.neutral)
        values.update(self.b.slots)
        values.update(t.slots)
        context = copy.deepcopy(t.context)
        transforms = []
        protected: list[str] = []
        literal: list[tuple[str, str]] = []
        g_out = dict(groups or {})
        v_out = dict(variants or {})
        style_key = ""
        for an, (attr, gname, k) in chosen.items():
            group = attr.groups[gname]
            g_out[an] = gname
            values.update(group.slots)  # the forms that agree with the group (harta / harto)
            if attr.signal == "writing_style":
                transforms.extend(group.transforms)
                style_key += f"{an}={gname};"
                continue
            value = group.variants[k]
            v_out[an] = value
            protected.append(value)
            if attr.slot:
                values[attr.slot] = value
            if attr.context_field:
                literal.append((attr.context_field, value))
            for ck, cv in group.context.items():
                _set_dotted(context, ck, copy.deepcopy(cv))
        for an, attr in self.b.attributes.items():  # a CRM always has the field: neutral when not varied
            if an not in chosen and attr.context_field and attr.neutral is not None:
                literal.insert(0, (attr.context_field, attr.neutral))
        if extra_slots:
            values.update(extra_slots)
        context = _fill_any(context, values)
        for field_path, value in literal:  # after filling: a variant is never read as a template
            _set_dotted(context, field_path, value)
        # seed_stream: a fresh stream of repetition seeds (the seeds split of an A/A control); None: the
        # common random numbers of (template, repetition) that every design shares
        seed = _seed(self.b, t.id, rep, seed_stream)
        raw_turns = turns_override if turns_override is not None else t.turns
        fmt = self.b.context_channels.format
        turns = [fill_slots(s, values, context, fmt) for s in raw_turns]
        if transforms:  # every value filled into the user's text is kept as is (names, ages...)
            used = {m.group(1) for s in raw_turns for m in SLOT_RE.finditer(s) if m.group(1)}
            protected += [values[s] for s in sorted(used) if s in values]
            tseed = int(hashlib.sha256(f"{t.id}|{style_key}|{position}".encode()).hexdigest()[:8], 16)
            turns = [apply_transforms(s, transforms, tseed + i, protected) for i, s in enumerate(turns)]
        # the messages every target receives: the context is written into them here, once
        channels = self.b.context_channels
        messages: list[dict[str, str]] = []
        if t.system:
            messages.append({"role": "system", "content": fill_slots(t.system, values, context, fmt)})
        if channels.message is not None:
            messages.append({"role": channels.message.role,
                             "content": fill_slots(channels.message.content, values, context, fmt)})
        messages += [{"role": m.role, "content": fill_slots(m.content, values, context, fmt)} for m in t.history]
        payload = {"battery": self.b.name, "design": design_id, "template": t.id, "rep": rep,
                   "groups": g_out, "variants": v_out, "messages": messages, "turns": turns,
                   "context": context, "axis": axis, "baseline": baseline}
        if seed_stream is not None:  # only then, so that every other case keeps its id
            payload["seed_stream"] = seed_stream
        return Case(id=_case_id(payload), battery=self.b.name, design=design_id, design_kind=design_kind,
                    template=t.id, repetition=rep, matched_set=matched_set, block=f"{t.id}/r{rep}",
                    position=position, attribute=attribute, axis=axis, baseline=baseline,
                    groups=g_out, variants=v_out, messages=messages, turns=turns, context=context,
                    seed=seed, meta=dict(t.meta))


def aa_groups(d: AAControlDesign) -> tuple[str, str]:
    """The two pseudo-group labels of an A/A control design."""
    return d.pseudo_groups()


def _positions(attr: Attribute, groups: list[str]) -> int:
    if attr.signal == "writing_style":
        return 1
    return min(len(attr.groups[g].variants) for g in groups)


@dataclass
class ExpandContext:
    """What a design's ``expand`` receives: the battery, its templates and repetitions, the renderer.

    ``render(template, rep, **how)`` renders one case of this design
    (see ``_Renderer.render``); ``exclude(reason, count)`` records an exclusion in
    the expansion manifest; ``positions(attr, groups)`` is the number of variant
    positions the groups share (1 for a writing style).
    """

    battery: Battery
    renderer: _Renderer
    did: str
    kind: str
    templates: list[Template]
    reps: int
    expansion: Expansion

    positions = staticmethod(_positions)
    indefinite_article = staticmethod(indefinite_article)

    def render(self, t: Template, rep: int, **how: Any) -> Case:
        return self.renderer.render(t, self.did, self.kind, rep, **how)

    def exclude(self, reason: str, count: int) -> None:
        self.expansion.exclude(self.did, reason, count)


def expand(loaded: LoadedBattery, expansion: Expansion | None = None) -> Iterator[Case]:
    """Yield every case of the battery, in a fixed order.

    Order: designs as declared, then templates, repetitions, positions and
    groups (each design's ``expand``). Pass an :class:`Expansion` to collect
    counts and exclusions.
    """
    b = loaded.battery
    exp = expansion if expansion is not None else Expansion(b.name, loaded.sha256)
    r = _Renderer(b)
    for di, d in enumerate(b.designs):
        did = b.design_id(di)
        reps = d.repetitions or b.repetitions
        templates = [t for t in b.templates if not d.templates or t.id in d.templates]
        skipped = len(b.templates) - len(templates)
        for t in templates:
            exp.add_prompt(t)
        exp.exclude(did, "templates not listed in the design's 'templates'", skipped)
        stats: dict[str, Any] = {"kind": d.kind, "templates": len(templates), "repetitions": reps, "cases": 0,
                 "matched_sets": 0}
        sets: set[str] = set()
        for case in d.expand(ExpandContext(b, r, did, d.kind, templates, reps, exp)):
            stats["cases"] += 1
            sets.add(case.matched_set)
            exp.total += 1
            yield case
        stats["matched_sets"] = len(sets)
        exp.designs[did] = stats


def write_cases(loaded: LoadedBattery, out: Path) -> Expansion:
    """Write ``cases.jsonl`` (one canonical JSON object per line) and return the manifest."""
    exp = Expansion(loaded.battery.name, loaded.sha256)
    with atomic_path(out) as tmp, tmp.open("w", encoding="utf-8", newline="\n") as fh:
        for case in expand(loaded, exp):
            fh.write(case_json(case))
            fh.write("\n")
    return exp
