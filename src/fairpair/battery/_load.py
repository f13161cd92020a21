"""Load and validate a battery file.

:func:`load_battery` reads YAML (with ``!include`` and a top-level
``include:`` list of files merged underneath the main file), fills groups that
name a built-in ``lexicon``, reads ``system_file`` prompts, validates against
the strict schema and then checks what a schema cannot: a name in two groups of
one attribute, too few variants, a slot no attribute fills, a design or
comparison naming an attribute that does not exist, a comparison no design can make (its
attribute varied by no design, or no pair of its groups varied together by one: issue 28, "a plan
is a contract"). Every problem is a
:class:`~fairpair.errors.BatteryError` with file, line and key.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from fairpair._text import fold
from fairpair.battery._lexicons import lexicon_names, load_lexicon
from fairpair.battery._schema import SLOT_RE, Attribute, Battery
from fairpair.battery._yaml import Located, _dotted, load_yaml, read_capped
from fairpair.errors import BatteryError

__all__ = ["LoadedBattery", "load_battery", "battery_hash", "DesignCheck", "number_text_warnings", "yaml_error"]


@dataclass(frozen=True)
class LoadedBattery:
    """A validated battery, where it came from and its content hash."""

    battery: Battery
    path: Path
    located: Located
    sha256: str
    selection: dict | None = None  # set by fairpair.battery.select (--templates/--axes)

    @property
    def files(self) -> list[Path]:
        return self.located.files

    def fail(self, message: str, path: tuple, hint: str | None = None) -> BatteryError:
        file, line = self.located.where(path)
        return BatteryError(message, file=file, line=line, key=_dotted(path), hint=hint)


def battery_hash(battery: Battery) -> str:
    """sha256 of the canonical JSON of the validated battery (includes resolved includes)."""
    blob = json.dumps(battery.model_dump(mode="json"), sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def load_battery(path: str | Path) -> LoadedBattery:
    """Read, validate and check a battery file.

    Raises
    ------
    BatteryError
        With file, line and key for every problem found (the first one).
    """
    path = Path(path)
    if path.is_dir():
        candidates = sorted(path.glob("*.yaml"))
        hint = f"files here: {', '.join(p.name for p in candidates)}" if candidates else None
        raise BatteryError("is a directory; give the battery YAML file", file=path, hint=hint)
    located = load_yaml(path)
    data = located.data
    if not isinstance(data, dict):
        raise BatteryError("a battery must be a YAML mapping (key: value)", file=path, line=1)
    data = _merge_includes(data, path, located)
    _not_a_run_battery(data, path)
    _resolve_lexicons(data, located)
    _resolve_system_files(data, path, located)
    try:
        battery = Battery.model_validate(data)
    except ValidationError as exc:
        raise _to_battery_error(exc, data, located) from None
    loaded = LoadedBattery(battery, path, located, battery_hash(battery))
    _check(loaded)
    return loaded


def _not_a_run_battery(data: dict, path: Path) -> None:
    """A file without templates and designs is not a battery to run: an import battery (read by
    ``fairpair import-answers``) or a target block meant for ``include:`` gets a message saying so, not
    the first of its missing keys."""
    if "templates" in data or "designs" in data:
        return
    if "records" in data or ("attributes" in data and "target" not in data and "targets" not in data):
        raise BatteryError("no templates or designs: this looks like an import battery (attributes, measures, "
                           "analysis), which describes answers that already exist", file=path, line=1,
                           hint=f"it is read by `fairpair import-answers ANSWERS --battery {path}`; a battery "
                                "to run needs 'templates', 'designs' and a 'target'")
    if set(data) <= {"target", "targets", "judge"} and data:
        raise BatteryError("a target block alone, not a battery (no templates, designs or attributes)", file=path,
                           line=1, hint=f"paste it into your battery or add `include: [{path.name}]` to a battery "
                                        "without a 'target:'; `fairpair validate` and `fairpair check` take that "
                                        "battery")


# ---------------------------------------------------------------- includes


def _written_by(including: Path, missing: Path) -> str | None:
    """How to make a missing included file that a command writes: the scenes of a persona study come from
    ``fairpair import-scenes`` (the including file says so, or the file is named after its scenes)."""
    try:
        text = including.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    if "import-scenes" in text or "scene" in missing.stem.lower():
        return (f"it is the battery `fairpair import-scenes` writes from the study's scene table; write it first: "
                f"fairpair import-scenes SCENES.xlsx -o {missing} (docs/persona.md)")
    return None


def _merge_includes(data: dict, path: Path, located: Located, stack: tuple[Path, ...] = ()) -> dict:
    """Merge the files of ``data``'s ``include:`` list underneath it; included files may include
    others (``stack``: the files above, for cycles). Errors name the file that has the problem."""
    stack = (*stack, path.resolve())
    includes = data.pop("include", None)
    if includes is None:
        return data
    if isinstance(includes, str):
        includes = [includes]
    if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
        file, line = located.where(("include",))
        raise BatteryError("'include' takes a file path or a list of paths", file=file, line=line,
                           key="include")
    merged: dict = {}
    for i, inc in enumerate(includes):
        if not (path.parent / inc).exists():
            file, line = located.where(("include", i))
            raise BatteryError(f"included file not found: {path.parent / inc}", file=file, line=line,
                               key=f"include[{i}]", hint=_written_by(path, path.parent / inc))
        sub = load_yaml(path.parent / inc, _stack=stack, _origin=located.where(("include", i)))
        if not isinstance(sub.data, dict):
            file, line = located.where(("include", i))
            raise BatteryError(f"included file {inc} must be a mapping", file=file, line=line,
                               key=f"include[{i}]")
        sub.data = _merge_includes(sub.data, path.parent / inc, sub, stack)  # includes nest
        for p, pos in sub.lines.items():
            located.lines.setdefault(p, pos)
        for p, txt in sub.texts.items():
            located.texts.setdefault(p, txt)
        located.files.extend(sub.files)
        merged = _deep_merge(merged, sub.data)
    return _deep_merge(merged, data)


def _deep_merge(base: dict, over: dict) -> dict:
    """``over`` merged onto ``base``, mappings key by key; a mapping with a ``kind`` (a target, a judge,
    a measure) of another kind than ``base``'s replaces it whole: options of another kind mean nothing
    there (an included battery's ``target: {kind: local, ...}`` under ``target: {kind: openai, ...}``)."""
    out = dict(base)
    for k, v in over.items():
        old = out.get(k)
        if isinstance(v, dict) and isinstance(old, dict) and ("kind" not in v or v.get("kind") == old.get("kind")):
            out[k] = _deep_merge(old, v)
        else:
            out[k] = v
    return out


def _resolve_lexicons(data: dict, located: Located) -> None:
    attrs = data.get("attributes")
    if not isinstance(attrs, dict):
        return
    for an, attr in attrs.items():
        groups = attr.get("groups") if isinstance(attr, dict) else None
        if not isinstance(groups, dict):
            continue
        for gn, group in groups.items():
            if not isinstance(group, dict) or group.get("lexicon") is None:
                continue
            key = ("attributes", an, "groups", gn, "lexicon")
            name = group["lexicon"]
            if not isinstance(name, str):
                continue  # the schema reports the type
            try:
                names = load_lexicon(name)
            except KeyError:
                file, line = located.where(key)
                close = difflib.get_close_matches(name, lexicon_names(), n=1)
                hint = f"did you mean '{close[0]}'?" if close else "run `fairpair lexicons` to list them"
                raise BatteryError(f"unknown lexicon '{name}'", file=file, line=line,
                                   key=_dotted(key), hint=hint) from None
            take = group.get("take")
            if isinstance(take, int) and not isinstance(take, bool) and take > len(names):
                file, line = located.where(("attributes", an, "groups", gn, "take"))
                raise BatteryError(f"take: {take}, but lexicon '{name}' has {len(names)} names", file=file, line=line,
                                   key=_dotted(("attributes", an, "groups", gn, "take")),
                                   hint=f"use take: {len(names)} or less, and list more names of your own "
                                        "under 'variants'")
            if isinstance(take, int) and take > 0:
                names = names[:take]
            explicit = group.get("variants") or []
            group["variants"] = list(explicit) + [n for n in names if n not in explicit]


def _resolve_system_files(data: dict, path: Path, located: Located) -> None:
    """Read every ``system_file`` (of a template, or of a target) into ``system``, relative to the battery."""
    blocks: list[tuple[tuple, Any]] = []
    if isinstance(data.get("templates"), list):
        blocks += [(("templates", i), t) for i, t in enumerate(data["templates"])]
    blocks.append((("target",), data.get("target")))
    if isinstance(data.get("targets"), dict):
        blocks += [(("targets", n), t) for n, t in data["targets"].items()]
    for where, t in blocks:
        if isinstance(t, dict) and isinstance(t.get("system_file"), str) and t.get("system") is None:
            f = path.parent / t["system_file"]
            key = _dotted((*where, "system_file"))
            try:
                t["system"] = read_capped(f).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BatteryError(f"system prompt not valid UTF-8 ({exc.reason} at byte {exc.start}); save the "
                                   "file as UTF-8", file=f, line=exc.object[: exc.start].count(b"\n") + 1,
                                   key=key) from None
            except (OSError, ValueError) as exc:  # ValueError: not a regular file, or too large
                file, line = located.where((*where, "system_file"))
                why = exc.strerror if isinstance(exc, OSError) else str(exc).replace(f"{f} ", "it ", 1)
                raise BatteryError(f"cannot read system prompt {f}: {why}", file=file,
                                   line=line, key=key) from None
            located.files.append(f)
            del t["system_file"]


# ---------------------------------------------------------------- errors


def _to_battery_error(exc: ValidationError, data: Any, located: Located,
                      root: type[BaseModel] = Battery) -> BatteryError:
    """The first of pydantic's errors about ``data`` (validated as ``root``) as a
    :class:`~fairpair.errors.BatteryError` with file, line, key and a "did you mean"; the others in
    its hint. Any YAML file read with :func:`~fairpair.battery.load_yaml` and validated by a strict
    model reports its errors through this (the battery; ``prices.yaml``, :mod:`fairpair.cost`)."""
    errors = _first_the_typos(exc.errors())
    err = errors[0]
    loc = tuple(err["loc"])
    path, model = _data_path(loc, data, root)
    file, line = located.where(path)
    hint = None
    if err["type"] == "extra_forbidden":
        bad = str(path[-1])
        allowed = sorted(model.model_fields) if model is not None else []
        close = difflib.get_close_matches(bad, allowed, n=1, cutoff=0.6)
        if close:
            hint = f"did you mean '{close[0]}'?"
        elif allowed:
            hint = "allowed keys: " + ", ".join(allowed)
        message = f"unknown key '{bad}'"
    elif err["type"] == "missing":
        message = f"missing required key '{path[-1] if path else loc[-1]}'"
    elif err["type"] == "union_tag_invalid":
        ctx = err.get("ctx", {})
        message = f"unknown design kind {ctx.get('tag')!r}"
        hint = f"allowed: {ctx.get('expected_tags')}"
        tag = str(ctx.get("tag", "")).strip("'")
        from fairpair.battery._designs import DESIGN_KINDS

        close = difflib.get_close_matches(tag, list(DESIGN_KINDS), n=1)
        if close:
            hint = f"did you mean '{close[0]}'? ({hint})"
        path = (*path, "kind")
        file, line = located.where(path)
    elif err["type"] == "literal_error":
        message = f"{err['msg']} (got {err.get('input')!r})"
    elif err["type"] == "string_pattern_mismatch" and path and path[-1] == "context_field":
        message = (f"{_short(err.get('input'))} is not a dotted path of names such as crm.nombre (letters, digits "
                   "and '_' between the dots, no empty part)")
    elif err["type"] == "string_pattern_mismatch":
        message = (f"{_short(err.get('input'))} is not a valid id: use letters, digits, '_', '.' and '-' "
                   f"(no spaces), starting with a letter, digit or '_'")
    elif err["type"] == "string_type" and (err.get("input") is None or isinstance(err.get("input"), bool)):
        inp = err.get("input")
        written = located.texts.get(path, "" if inp is None else str(inp).lower())
        what = "a boolean" if isinstance(inp, bool) else "null (no value)"
        message = f"{written or 'an empty value'} is read by YAML as {what}, not as text"
        quoted = json.dumps(written, ensure_ascii=False)
        last = path[-1] if path else None
        hint = f"quote it to keep the text: {last}: {quoted}" if isinstance(last, str) else \
            f"quote it to keep the text: - {quoted}"
    else:
        message = err["msg"].removeprefix("Value error, ")
        inp = err.get("input")
        if inp is not None and err["type"].endswith("_type"):
            message += f" (got {type(inp).__name__} {_short(inp)})"
        elif isinstance(inp, (int, float, str)) and not isinstance(inp, bool) and \
                err["type"] not in ("value_error", "assertion_error"):
            message += f" (got {_short(inp)})"  # out of range, unparsable number, too short...
        either = _EITHER.match(message)
        if either and isinstance(_at(data, path), dict) and either.group(2) in _at(data, path):
            path = (*path, either.group(2))  # point at the second of the two keys
            file, line = located.where(path)
    more = errors[1:]
    if more:  # listed, not only counted
        shown = "; ".join(f"[{_dotted(_data_path(tuple(e['loc']), data, root)[0])}] "
                          f"{e['msg'].removeprefix('Value error, ')}" for e in more[:3])
        hint = (hint + "\n  " if hint else "") + f"also: {shown}" + \
            (f"; and {len(more) - 3} more" if len(more) > 3 else "")
    return BatteryError(message, file=file, line=line, key=_dotted(path), hint=hint)


#: The public name of :func:`_to_battery_error`, for the other strict YAML files (``prices.yaml``).
yaml_error = _to_battery_error


def _first_the_typos(errors: list[Any]) -> list[Any]:
    """pydantic's errors with unknown keys first: a misspelt key (``templtes``) also makes the key it
    meant missing, and its "did you mean" is the useful message."""
    return sorted(errors, key=lambda e: e["type"] != "extra_forbidden")


_EITHER = re.compile(r"give either '(\w+)' or '(\w+)'")


def _at(data: Any, path: tuple) -> Any:
    for p in path:
        try:
            data = data[p]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) < 60 else s[:57] + "..."


def _data_path(loc: tuple, data: Any, root: type[BaseModel] = Battery) -> tuple[tuple, type[BaseModel] | None]:
    """Map a pydantic error location to a data path, and the model that owns its last key."""
    path: list = []
    d = data
    model: type[BaseModel] | None = root
    ann: Any = root
    for part in loc:
        if isinstance(d, dict) and isinstance(part, str) and part not in d and d.get("kind") == part:
            ann = _pick_union(ann, part)  # discriminated-union tag, not a key in the file
            continue
        if isinstance(d, dict) and part in d:
            path.append(part)
            d = d[part]
        elif isinstance(d, list) and isinstance(part, int) and part < len(d):
            path.append(part)
            d = d[part]
        elif isinstance(d, dict) and part not in d and isinstance(part, str) and ann is not None \
                and (model := _model_of(ann)) is not None and part not in model.model_fields:
            # union tag (e.g. 'counterfactual') or an extra key
            if d.get("kind") == part:
                ann = _pick_union(ann, part)
                continue
            path.append(part)
            d = None
            model = _model_of(ann)
            ann = None
            continue
        else:
            path.append(part)
            d = None
        model = _model_of(ann)
        ann = _child_annotation(ann, part)
    if path and ann is None and model is None:
        model = None
    return tuple(path), model if model is not None else None


def _unwrap(ann: Any) -> Any:
    while typing.get_origin(ann) is typing.Annotated:
        ann = typing.get_args(ann)[0]
    return ann


def _model_of(ann: Any) -> type[BaseModel] | None:
    ann = _unwrap(ann)
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    if typing.get_origin(ann) in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        models = [m for m in map(_model_of, typing.get_args(ann)) if m is not None]
        return models[0] if len(models) == 1 else None  # ``Price | None``: its one model
    return None


def _pick_union(ann: Any, tag: str) -> Any:
    ann = _unwrap(ann)
    for a in typing.get_args(ann):
        m = _model_of(a)
        if m is not None and "kind" in m.model_fields:
            args = typing.get_args(m.model_fields["kind"].annotation)
            if tag in args:
                return m
    return ann


def _child_annotation(ann: Any, part: Any) -> Any:
    ann = _unwrap(ann)
    m = _model_of(ann)
    if m is not None:
        f = m.model_fields.get(part) if isinstance(part, str) else None
        return f.annotation if f is not None else None
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin in (list, tuple) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        for a in args:
            if _model_of(a) is not None:
                return _child_annotation(a, part)
            if typing.get_origin(_unwrap(a)) in (list, dict):
                return _child_annotation(a, part)
    return None


# ---------------------------------------------------------------- semantic checks


def _check(lb: LoadedBattery) -> None:
    b = lb.battery
    attrs = b.attributes
    # variants: non-empty, minimum, no value in two groups
    for an, attr in attrs.items():
        seen: dict[str, str] = {}
        for gn, g in attr.groups.items():
            gpath = ("attributes", an, "groups", gn)
            if attr.signal == "writing_style":
                if g.variants:
                    raise lb.fail("a writing_style group declares 'transforms', not 'variants'",
                                  (*gpath, "variants"))
                continue
            if not g.variants:
                raise lb.fail(f"group '{gn}' has no variants (give 'variants' or a 'lexicon')", gpath)
            if len(g.variants) < attr.min_variants:
                raise lb.fail(
                    f"group '{gn}' has {len(g.variants)} variant(s); this attribute requires at least "
                    f"{attr.min_variants} (min_variants), so that no single value is measured", gpath)
            for i, v in enumerate(g.variants):
                if not v.strip():
                    raise lb.fail("empty variant", (*gpath, "variants", i))
                k = fold(v)
                if k in seen and seen[k] != gn:
                    raise lb.fail(f"'{v}' appears in two groups of '{an}': '{seen[k]}' and '{gn}' "
                                  f"(names are compared folded: without accents or case, apostrophes, dashes "
                                  f"and spaces unified)",
                                  (*gpath, "variants", i))
                if k in seen:
                    raise lb.fail(f"'{v}' appears twice in group '{gn}' (names are compared folded: "
                                  f"without accents or case, apostrophes, dashes and spaces unified)", (*gpath,
                                                                                                        "variants", i))
                seen[k] = gn
            if g.transforms:
                raise lb.fail("'transforms' belong to a writing_style attribute", (*gpath, "transforms"))
    # slots per grammatical form: the same names in every group, a default when not varied
    group_slots: set[str] = set()
    for an, attr in attrs.items():
        names = {gn: set(g.slots) for gn, g in attr.groups.items()}
        every = set().union(*names.values()) if names else set()
        for gn, got in names.items():
            if got != every:
                missing = sorted(every - got)
                raise lb.fail(f"group '{gn}' of '{an}' does not give slot(s) {', '.join(missing)}: every group "
                              f"must give the same slots (one form per group)", ("attributes", an, "groups", gn),
                              hint=f"add slots: {{{missing[0]}: ...}} to group '{gn}'")
        varied_everywhere = all(d.fills(an) for d in b.designs)
        for s_name in sorted(every):
            if not varied_everywhere and s_name not in b.slots:
                raise lb.fail(f"slot '{{{s_name}}}' is given by the groups of '{an}' but has no default for the "
                              f"designs that do not vary '{an}'", ("attributes", an),
                              hint=f"add it to the battery's slots: {{{s_name}: ...}} (the neutral form)")
        group_slots |= every
    # slots used by templates
    known_slots = set(b.slots) | group_slots
    slot_owner: dict[str, str] = {}
    for an, attr in attrs.items():
        if attr.slot:
            if attr.slot in slot_owner:
                raise lb.fail(f"slot '{attr.slot}' is filled by both '{slot_owner[attr.slot]}' and '{an}'",
                              ("attributes", an, "slot"))
            slot_owner[attr.slot] = an
    two_party_slots: set[str] = set()  # slots the designs fill themselves (personas, candidates)
    for d in b.designs:
        two_party_slots |= d.own_slots(b)
    template_ids = [t.id for t in b.templates]
    dup = {t for t in template_ids if template_ids.count(t) > 1}
    if dup:
        first = sorted(dup)[0]
        i = template_ids.index(first, template_ids.index(first) + 1)  # the second use
        raise lb.fail(f"template id '{sorted(dup)[0]}' is used twice", ("templates", i, "id"))
    msg = b.context_channels.message
    for i, t in enumerate(b.templates):
        texts: list[tuple[tuple[Any, ...], str]] = [(("templates", i, "turns", j), s) for j, s in enumerate(t.turns)]
        texts += [(("templates", i, "history", j, "content"), m.content) for j, m in enumerate(t.history)]
        if t.system:
            texts.append((("templates", i, "system"), t.system))
        for j, s in enumerate(t.baseline_turns or []):
            texts.append((("templates", i, "baseline_turns", j), s))
        if msg is not None:
            texts.append((("context_channels", "message", "content"), msg.content))
        shape, origins = _context_shape(b, t, i)
        slot_names = set(t.slots) | known_slots | set(slot_owner) | two_party_slots
        for k in sorted(set(shape) & slot_names):
            raise lb.fail(f"'{{{k}}}' is both a slot and a context key of template '{t.id}'",
                          ("templates", i, "context", k), hint="rename one of them")
        used: list[str] = []  # context paths the prompt channels carry
        in_system: list[str] = []  # those of the template's system prompt (a target's own prompt replaces it)
        for p, text in texts:
            open_ = _UNCLOSED.search(text)
            if open_:  # '{nombre' without its '}' would reach the model as written
                raise lb.fail(f"'{{{open_.group(1)}' opens a slot that is never closed", p,
                              hint=f"write '{{{open_.group(1)}}}' for the slot, or '{{{{' for a literal brace")
            for m in SLOT_RE.finditer(text):
                s = m.group(1)
                if s is None:
                    continue
                if s in slot_names:
                    continue
                if _context_has(shape, s):
                    (in_system if p == ("templates", i, "system") else used).append(s)
                    continue
                cands = sorted(slot_names) + sorted(_context_paths(shape))
                close = difflib.get_close_matches(s, cands, n=1)
                also = f", nor a field of the context of template '{t.id}'" if shape else ""
                raise lb.fail(f"slot '{{{s}}}' is not filled by any attribute or 'slots' entry{also}", p,
                              hint=f"did you mean '{{{close[0]}}}'?" if close else
                              (f"known: {', '.join('{' + c + '}' for c in cands)}" if cands else None))
        _check_routing(lb, i, t, shape, origins, used, in_system)
    # designs
    for di, d in enumerate(b.designs):
        dpath = ("designs", di)
        for a, sub in d.attribute_keys():
            _need(lb, a, list(attrs), (*dpath, *sub), "attribute")
        for ti, tid in enumerate(d.templates or []):
            _need(lb, tid, template_ids, (*dpath, "templates", ti), "template")
        d.check(DesignCheck(lb, di))
    # templates must use the varied slot of counterfactual designs
    for di, d in enumerate(b.designs):
        if d.slot_attributes():
            for a in d.slot_attributes():
                attr = attrs[a]
                if attr.signal != "writing_style" and not attr.slot and not attr.context_field:
                    raise lb.fail(f"attribute '{a}' has no 'slot' or 'context_field', so design "
                                  f"'{b.design_id(di)}' would vary nothing", ("attributes", a),
                                  hint="give the attribute a 'slot' that the templates use")
                if attr.signal == "writing_style" or not attr.slot:
                    continue
                for i, t in enumerate(b.templates):
                    if d.templates and t.id not in d.templates:
                        continue
                    slots_used = {m.group(1) for s in (*t.turns, t.system or "", *(h.content for h in t.history))
                                  for m in SLOT_RE.finditer(s) if m.group(1)}
                    if attr.slot not in slots_used and not attr.context_field:
                        raise lb.fail(
                            f"template '{t.id}' never uses slot '{{{attr.slot}}}', so design "
                            f"'{b.design_id(di)}' would vary nothing in it", ("templates", i, "turns"),
                            hint=f"add {{{attr.slot}}} to a turn, or list templates under designs[{di}].templates")
    # the neutral value is needed wherever an attribute's slot appears but it is not varied
    for an, attr in attrs.items():
        if attr.slot and attr.neutral is None and attr.signal not in ("identity", "writing_style"):
            varied_everywhere = all(d.fills(an) for d in b.designs)
            if not varied_everywhere:
                raise lb.fail(f"attribute '{an}' needs a 'neutral' value for the designs that do not vary "
                              f"it (e.g. the baseline)", ("attributes", an))
    # targets, measures and comparisons
    context_slots = [(set(_context_paths(_context_shape(b, t, i)[0])), t.id) for i, t in enumerate(b.templates)]
    for name, spec in b.target_specs().items():
        key = ("target",) if b.target is not None else ("targets", name)
        if not name.strip():  # the answers are stored, reported and selected (--target) by this name
            raise lb.fail("empty target name", key, hint="give the target a name, e.g. 'produccion'")
        _check_plugin(lb, "fairpair.targets", spec, key)
        if spec.kind == "local" and b.all_tools():
            from fairpair.targets.local import local_tools_supported

            why = local_tools_supported(spec.options())
            if why:
                raise lb.fail(f"target '{name}' (local) cannot offer tools: {why}", (*key, "kind"),
                              hint="set chat_template_tools: true on the target if the GGUF's chat template "
                                   "renders tools, or route the context through the system prompt or a "
                                   "context message instead")
        if spec.system is not None:
            _check_target_system(lb, spec.system, (*key, "system"), context_slots)
    if b.judge is not None:
        _check_plugin(lb, "fairpair.targets", b.judge, ("judge",))
        if b.judge.system is not None:
            raise lb.fail("a judge takes no system prompt: fairpair writes the judge's prompts", ("judge", "system"),
                          hint="give 'system' or 'system_file' to a target under test")
    for name, mspec in b.measures.items():
        if not name.strip():  # stored and compared by its name: '' reads as no measure at all
            raise lb.fail("empty measure name", ("measures", name),
                          hint="give the measure a name: the comparisons, the report and --measure use it")
        _check_plugin(lb, "fairpair.measures", mspec, ("measures", name))
    for ci, c in enumerate(b.analysis.comparisons):
        cpath = ("analysis", "comparisons", ci)
        # a measure with several outputs is compared as 'name.field'; with no measure declared
        # (measures: {}) every comparison names an undeclared one and would compare nothing
        if not b.measures:
            raise lb.fail(f"measure '{c.measure}' is not declared: the battery declares no measure, so this "
                          "comparison would compare nothing", (*cpath, "measure"),
                          hint=f"declare it under 'measures:', e.g. {c.measure.split('.', 1)[0]}: {{kind: keywords, "
                               "any_of: [...]}")
        _need(lb, c.measure.split(".", 1)[0], list(b.measures), (*cpath, "measure"), "measure")
        _need(lb, c.attribute, list(attrs), (*cpath, "attribute"), "attribute")
        groups = list(attrs[c.attribute].groups)
        if c.groups != "all_pairs":
            for gi, gname in enumerate(c.groups):
                _need(lb, gname, groups, (*cpath, "groups", gi), f"group of '{c.attribute}'")
        if c.reference is not None:
            _need(lb, c.reference, groups, (*cpath, "reference"), f"group of '{c.attribute}'")
        check_comparison(lb, c, cpath)
        if c.design is not None:
            _need(lb, c.design, [b.design_id(i) for i in range(len(b.designs))], (*cpath, "design"), "design")
    from fairpair._plugins import PluginError, battery_checks

    try:
        checks = battery_checks()
    except PluginError as exc:  # an installed package's check that cannot be loaded: named, no traceback
        raise BatteryError(str(exc), file=lb.path, hint="fix or uninstall the package that declares it") from None
    for check in checks:  # settings that would silently do nothing (mock bias/language, fields, margins:
        check(lb)  # fairpair.measures.check_silent_paths, which reads the measures, a floor above the battery)


def check_comparison(lb: Any, c: Any, cpath: tuple) -> None:
    """The checks a pre-registered comparison ``c`` (at ``cpath``) gets once its names are known, so that
    what could never be compared is refused (issue 28, "a plan is a contract"): a pairwise-vs-reference
    measure not compared with its own reference, and a pair of groups some design varies. ``lb`` has
    ``battery`` and ``fail(message, path, hint=None)`` (a :class:`LoadedBattery`, or the import's probe).

    Raises
    ------
    BatteryError
        Through ``lb.fail``, naming the comparison's key.
    """
    _pairwise_reference(lb, lb.battery, c, cpath)
    _check_pairs(lb, c, cpath)


def _check_pairs(lb: Any, c: Any, cpath: tuple) -> None:
    """The comparison names an attribute some design varies, and at least one pair of its groups that
    one design varies together; every group it lists (and its reference) is in such a pair."""
    b = lb.battery
    designs = [(b.design_id(i), d) for i, d in enumerate(b.designs)
               if (c.design is None or c.design == b.design_id(i)) and d.compares(c, b.design_id(i))]
    if not designs:
        which = f"design '{c.design}'" if c.design else "no design"
        raise lb.fail((f"{which} does not vary '{c.attribute}'" if c.design else f"no design varies "
                       f"'{c.attribute}'") + ", so this comparison could never be made",
                      (*cpath, "design" if c.design else "attribute"),
                      hint=f"add a design that varies it (designs: [{{kind: counterfactual, attribute: "
                           f"{c.attribute}}}]) or remove the comparison")
    listed = [] if c.groups == "all_pairs" else list(c.groups)
    paired: set[str] = set()
    for _did, d in designs:
        varied = d.comparison_groups(b, c.attribute)
        chosen = [g for g in (varied if c.groups == "all_pairs" else listed) if g in varied]
        if c.reference is not None:
            if c.reference in varied:
                for g in chosen:
                    if g != c.reference:
                        paired |= {g, c.reference}
        elif len(chosen) >= 2:
            paired |= set(chosen)
    if not paired:
        if c.reference is not None and listed and set(listed) <= {c.reference}:
            why = f"'groups' holds only the reference group '{c.reference}'"
            hint = f"list the groups to compare with '{c.reference}' (or leave 'groups' out: every group)"
        elif c.reference is None and len(listed) == 1:
            why = f"'groups' holds one group ('{listed[0]}')"
            hint = "list two groups or more (or leave 'groups' out: all pairs)"
        else:
            why = "no design varies two of its groups together"
            hint = "name groups that one design varies (see the design's 'groups')"
        raise lb.fail(f"this comparison forms no pair of groups: {why}", (*cpath, "groups" if listed else
                      "reference"), hint=hint)
    for k, g in enumerate(listed):
        if g not in paired and g != c.reference:
            raise lb.fail(f"group '{g}' is in no pair this comparison can form: no design "
                          + (f"'{c.design}' " if c.design else "") + "varies it together with "
                          + (f"'{c.reference}'" if c.reference else "another listed group"),
                          (*cpath, "groups", k), hint="remove it, or add it to a design's 'groups'")
    if c.reference is not None and c.reference not in paired:
        raise lb.fail(f"reference group '{c.reference}' is varied by no design that also varies a compared group",
                      (*cpath, "reference"), hint="choose a group the design varies")


#: ``{name`` not followed by more of a slot's characters nor by ``}`` (a slot left open); ``{{`` is a
#: literal brace, so a brace after another one is not a slot's.
_UNCLOSED = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)(?![A-Za-z0-9_}]|\.[A-Za-z0-9_])")


def _check_target_system(lb: LoadedBattery, text: str, where: tuple, context_slots: list[tuple[set, str]]) -> None:
    """A target's own system prompt is filled from each case's context only (``{crm}``, ``{crm.nombre}``): a
    ``{name}`` that is not a context path of every template would reach the model as written."""
    for m in SLOT_RE.finditer(text):
        s = m.group(1)
        if s is None:
            continue
        for paths, tid in context_slots:
            if s not in paths:
                close = difflib.get_close_matches(s, sorted(paths), n=1)
                raise lb.fail(f"'{{{s}}}' in the target's system prompt is not a field of the context of template "
                              f"'{tid}' (a target's system prompt reads the context, not the slots)", where,
                              hint=f"did you mean '{{{close[0]}}}'?" if close else
                              (f"context fields: {', '.join('{' + p + '}' for p in sorted(paths))}" if paths
                               else "this template has no context"))


def _pairwise_reference(lb: LoadedBattery, b: Any, c: Any, cpath: tuple) -> None:
    """A comparison of a pairwise-vs-reference measure that involves that reference group cannot form
    pairs (the reference group's answers are the comparison point and get no value): an error, not n = 0."""
    spec = b.measures.get(c.measure.split(".", 1)[0])
    if spec is None:
        return
    opts = spec.options()
    if opts.get("against") != "reference" or not opts.get("reference"):
        return
    ref = opts["reference"]
    if opts.get("attribute") not in (None, c.attribute) or ref not in b.attributes[c.attribute].groups:
        return
    involved = c.reference == ref or (c.groups != "all_pairs" and ref in c.groups) or \
        (c.groups == "all_pairs" and c.reference is None)
    if involved:
        where = (*cpath, "reference") if c.reference == ref else (*cpath, "groups")
        raise lb.fail(f"measure '{c.measure}' compares every answer with group '{ref}' (against: reference), so "
                      f"'{ref}' has no value of it and this comparison could form no pairs", where,
                      hint=f"compare the other groups among themselves (groups: [...] without '{ref}'), "
                           f"or use 'against: baseline'")


# ---------------------------------------------------------------- context channels


def _set_path(d: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    for part in parts[:-1]:
        if not isinstance(d.get(part), dict):
            d[part] = {}
        d = d[part]
    d[parts[-1]] = value


def _context_shape(b: Battery, t, i: int) -> tuple[dict, list[tuple[str, tuple]]]:
    """The union of every case's context for template ``t`` and where each added field comes from."""
    shape = json.loads(json.dumps(t.context, default=str))
    origins: list[tuple[str, tuple]] = []  # (dotted path, battery path) of fields set by attributes
    for an, attr in b.attributes.items():
        if attr.context_field:
            _set_path(shape, attr.context_field, "")
            origins.append((attr.context_field, ("attributes", an, "context_field")))
        for gn, g in attr.groups.items():
            for ck, cv in g.context.items():  # nested values too: '{reparto.zona}' of a group's 'reparto: {zona: C}'
                _set_path(shape, ck, _merged(_get_path(shape, ck), json.loads(json.dumps(cv, default=str))))
                origins.append((ck, ("attributes", an, "groups", gn, "context", ck)))
    return shape, origins


def _get_path(d: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        d = d.get(part) if isinstance(d, dict) else None
    return d


def _merged(old: Any, new: Any) -> Any:
    """``new`` with the keys of ``old`` it lacks (the union of the groups' context values), recursively."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {**old, **{k: _merged(old.get(k), v) for k, v in new.items()}}
    return new if new is not None else old


def _context_has(shape: Any, dotted: str) -> bool:
    cur = shape
    for part in dotted.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return False
    return True


def _context_paths(shape: Any, prefix: str = "") -> list[str]:
    out: list[str] = []
    if isinstance(shape, dict):
        for k, v in shape.items():
            p = f"{prefix}.{k}" if prefix else str(k)
            out.append(p)
            out += _context_paths(v, p)
    return out


#: targets that hand the whole ``ChatRequest.context`` to user code (nothing to route)
_CONTEXT_AS_DATA = ("python", "mock")
_ROUTE_HINT = ("route it to the model: write {{{key}}} (the whole record) or {{{key}.field}} into the system prompt "
               "(or a turn); or add a context message: 'context_channels: {{message: {{role: system, content: "
               "\"Datos del cliente:\\n{{{key}}}\"}}}}'; or a tool the model calls: "
               "'context_channels: {{tool: {{name: lookup_customer, returns: {key}}}}}'")


def _system_paths(text: str | None) -> list[str]:
    """The context paths (``{crm}``, ``{crm.nombre}``) a system prompt reads."""
    return [m.group(1) for m in SLOT_RE.finditer(text or "") if m.group(1)]


def _check_routing(lb: LoadedBattery, i: int, t, shape: dict, origins: list[tuple[str, tuple]],
                   used: list[str], in_system: Sequence[str] = ()) -> None:
    """Every context field reaches the model through at least one channel of every target.

    A target with its own ``system`` prompt reads its own prompt's fields instead of the template's
    system prompt's; a field that only some targets' own prompts read is the difference between the
    targets by design, so the other targets need not carry it."""
    from fairpair.targets.http import body_context_paths

    b = lb.battery
    own = [p for spec in b.target_specs().values() for p in _system_paths(spec.system)]
    tools = b.all_tool_results() if b.all_tools() else {}
    tool = b.context_channels.tool
    if tool is not None and tool.returns and not _context_has(shape, tool.returns):
        raise lb.fail(f"the context tool returns '{tool.returns}', which template '{t.id}' has no field for",
                      ("context_channels", "tool", "returns"),
                      hint=f"known: {', '.join(_context_paths(shape)) or '(the context is empty)'}; "
                           f"leave 'returns' empty for the whole context")
    for tname, returns in b.tool_results.items():  # a path the context lacks would answer null, unseen
        if returns and not _context_has(shape, returns):
            raise lb.fail(f"tool '{tname}' returns '{returns}', which template '{t.id}' has no field for: the model "
                          "would be answered null", ("tool_results", tname),
                          hint=f"known: {', '.join(_context_paths(shape)) or '(the context is empty)'}")
    if not shape:
        return
    common = list(used) + list(tools.values())

    def reached(path: str, routes: list[str]) -> bool:
        return any(r == "" or path == r or path.startswith(r + ".") for r in routes) or \
            any(path == r or path.startswith(r + ".") or r.startswith(path + ".") for r in own)

    specs: dict[str | None, Any] = {k: v for k, v in b.target_specs().items()} or {None: None}
    for name, spec in specs.items():
        kind = spec.kind if spec is not None else None
        if kind in _CONTEXT_AS_DATA or kind not in (None, "openai", "anthropic", "litellm", "local", "http"):
            continue
        routes = list(common) + (_system_paths(spec.system) if spec is not None and spec.system is not None
                                 else list(in_system))
        if kind == "http":
            routes += body_context_paths(spec.options().get("body"))
        who = f" of target '{name}' ({kind})" if kind else ""
        hint = _ROUTE_HINT + ("; or '{{{{context.{key}}}}}' in the http body" if kind == "http" else "")
        for path, where in origins:
            if not reached(path, routes):
                raise lb.fail(f"context field '{path}' reaches no channel{who} in template '{t.id}': the "
                              f"model would never see it", where, hint=hint.format(key=path.split(".")[0]))
        for key in shape:
            if not any(r == "" or r.split(".")[0] == key for r in [*routes, *own]):
                raise lb.fail(f"context '{key}' of template '{t.id}' reaches no channel{who}: the model "
                              f"would never see it", ("templates", i, "context", key), hint=hint.format(key=key))


def _equal_variants(lb: LoadedBattery, attr: Attribute, groups: list[str], an: str, path: tuple) -> None:
    if attr.signal == "writing_style":
        return
    counts = {g: len(attr.groups[g].variants) for g in groups}
    if len(set(counts.values())) > 1:
        raise lb.fail(
            f"groups of '{an}' have different numbers of variants {counts}; pairs are formed by "
            f"position within the group, so they must be equal", ("attributes", an, "groups"),
            hint="use 'take: N' on lexicon groups or trim the lists")


def _need(lb: LoadedBattery, name: str, allowed: list[str], path: tuple, what: str) -> None:
    if name in allowed:
        return
    close = difflib.get_close_matches(name, allowed, n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"known: {', '.join(allowed) or '(none)'}"
    kind, _, owner = what.partition(" of ")  # "group of 'origen'" -> "unknown group 'x' of 'origen'"
    raise lb.fail(f"unknown {kind} '{name}'" + (f" of {owner}" if owner else ""), path, hint=hint)


@dataclass(frozen=True)
class DesignCheck:
    """What a design's ``check`` receives: the battery and error helpers anchored at ``designs[index]``.

    Every helper raises (or returns, for ``raise ck.fail(...)``) a
    :class:`~fairpair.errors.BatteryError` naming file, line and key.
    """

    lb: LoadedBattery
    index: int

    @property
    def battery(self) -> Battery:
        return self.lb.battery

    @property
    def attrs(self) -> dict[str, Attribute]:
        return self.lb.battery.attributes

    @property
    def path(self) -> tuple:
        return ("designs", self.index)

    def fail(self, message: str, sub: tuple = (), hint: str | None = None) -> BatteryError:
        """An error at ``designs[index].<sub>``."""
        return self.lb.fail(message, (*self.path, *sub), hint=hint)

    def fail_at(self, message: str, path: tuple, hint: str | None = None) -> BatteryError:
        """An error at an absolute key path of the battery (e.g. a template's turns)."""
        return self.lb.fail(message, path, hint=hint)

    def need(self, name: str, allowed: list[str], sub: tuple, what: str) -> None:
        """``name`` must be one of ``allowed`` (an "unknown ..." error with a "did you mean")."""
        _need(self.lb, name, allowed, (*self.path, *sub), what)

    def equal_variants(self, attr: Attribute, groups: list[str], name: str) -> None:
        """The groups must offer the same number of variants (pairs are formed by position)."""
        _equal_variants(self.lb, attr, groups, name, self.path)


def _check_plugin(lb: LoadedBattery, group: str, spec: Any, path: tuple) -> None:
    from fairpair._plugins import PluginError, plugin_names, validate_options

    try:
        validate_options(group, spec.kind, spec.options())
    except PluginError as exc:
        if exc.unknown_kind:
            close = difflib.get_close_matches(spec.kind, plugin_names(group), n=1)
            raise lb.fail(str(exc), (*path, "kind"),
                          hint=f"did you mean '{close[0]}'?" if close else
                          f"known: {', '.join(plugin_names(group))}") from None
        raise lb.fail(str(exc), (*path, *exc.key_path), hint=exc.hint) from None


_DECIMAL_TEXT = re.compile(r"[-+]?[0-9]*\.[0-9]+(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+")


def number_text_warnings(lb: LoadedBattery) -> list[str]:
    """A warning for each context value written as a decimal number that YAML would rewrite
    (``importe: 89.00``, ``1e3``): the loader keeps it as the text written, so the prompt shows
    ``89.00`` but a JSON context (an ``http`` body, ``context_channels: {format: json}``, a tool
    result) carries the string ``"89.00"``. Leading-zero codes (``02142``) are text on purpose and
    are not reported."""
    out = []
    for path, text in lb.located.texts.items():
        if "context" not in path or not _DECIMAL_TEXT.fullmatch(text):
            continue
        file, line = lb.located.where(path)
        out.append(f"{Path(file).name if file else ''}:{line}: [{_dotted(path)}] {text} is kept as the text '{text}' "
                   f"(YAML would read {float(text)!r}): a JSON context carries it as a string; write {float(text)!r} "
                   f"for a number, or quote it (\"{text}\") to say it is text")
    return out
