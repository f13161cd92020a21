"""``fairpair import-answers``: answers that already exist become an ordinary run directory.

The import reads every row first, checks each one against the import battery
(attributes, groups, variants, measures) and against the others (one case per
set and group, one answer per target and case, one template and repetition per
set), and only when nothing is wrong writes the run: a new store in a private
folder beside the destination, filled in one SQLite transaction, its manifest
written, and the folder renamed into place. A bad row therefore leaves nothing
behind, and an existing run is never added to or overwritten.

The run holds what ``fairpair run`` would have written: the cases (one per
matched-set member, with the prompt that was sent), the answers (failed ones
as failures), the values already measured, a battery built from the import
battery and the rows (templates and designs as the rows name them), the plan
hash registered before any analysis, and the manifest with every source file's
SHA-256 as provenance. ``measure``, ``analyze``, ``report``, ``compare`` and
``gate`` then work on it unchanged.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from fairpair import __version__
from fairpair._text import fold
from fairpair.battery import (
    Attribute,
    BaselineDesign,
    Battery,
    CounterfactualDesign,
    CrossedDesign,
    Group,
    LoadedBattery,
    MeasureSpec,
    RankingDesign,
    TargetSpec,
    Template,
    battery_hash,
    load_mapping,
)
from fairpair.battery import Located as YamlLocated
from fairpair.battery._load import _at as _value_at
from fairpair.cases import Case
from fairpair.errors import BatteryError, FairpairError
from fairpair.importers._format import AnswerRow, ImportBattery
from fairpair.importers._read import FORMATS, Located, RowProblem, Source, read_rows

if TYPE_CHECKING:
    from fairpair.store import Store

__all__ = ["ImportResult", "LoadedImport", "import_answers", "load_import_battery"]

#: The slot prefix of an imported ranking design's candidates: ``{candidate_1}`` ... ``{candidate_k}``.
RANKING_SLOT = "candidate"
#: Problems listed in the message of a failed import (all are counted).
_SHOWN = 8


# ---------------------------------------------------------------- the import battery


@dataclass(frozen=True)
class LoadedImport:
    """A validated import battery, where it came from, its positions and the file's SHA-256."""

    battery: ImportBattery
    path: Path
    located: YamlLocated
    sha256: str

    def where(self, path: tuple) -> tuple[str | None, int | None]:
        return self.located.where(tuple(path))

    def fail(self, message: str, path: tuple, hint: str | None = None) -> BatteryError:
        return _fail(self.located, message, path, hint)


def _fail(located: YamlLocated, message: str, path: tuple, hint: str | None = None) -> BatteryError:
    file, line = located.where(tuple(path))
    return BatteryError(message, file=file, line=line, key=".".join(str(p) for p in path) or None, hint=hint)


def _union_tag(loc: tuple, data: Any) -> int | None:
    """Index in ``loc`` of the member pydantic tried of a ``str | FieldRef`` reference (not a key of the file)."""
    d = data
    for i, part in enumerate(loc):
        if part in ("str", "FieldRef") and not (isinstance(d, dict) and part in d):
            return i
        d = d.get(part) if isinstance(d, dict) else (d[part] if isinstance(d, list) and isinstance(part, int)
                                                      and 0 <= part < len(d) else None)
    return None


def _first_error(exc: ValidationError, data: Any) -> ErrorDetails:
    """The error to report: for a ``str | FieldRef`` reference written as a mapping, the mapping's own error
    (pydantic lists the failed ``str`` alternative first)."""
    errors = exc.errors()
    for e in errors:
        loc = tuple(e["loc"])
        tag = _union_tag(loc, data)
        if tag is not None and loc[tag] == "str" and isinstance(_value_at(data, _data_path(loc[:tag], data)), dict):
            continue
        return e
    return errors[0]


def _owner(loc: tuple) -> type[BaseModel] | None:
    """The model that owns the last key of a validation error's location (for "did you mean")."""
    import types
    import typing

    def unwrap(a: Any) -> Any:
        while typing.get_origin(a) is typing.Annotated:
            a = typing.get_args(a)[0]
        return a

    def is_model(a: Any) -> bool:
        return isinstance(a, type) and issubclass(a, BaseModel)

    ann: Any = ImportBattery
    for part in loc[:-1]:
        ann = unwrap(ann)
        if typing.get_origin(ann) in (typing.Union, types.UnionType):
            args = typing.get_args(ann)
            named = [a for a in args if getattr(a, "__name__", None) == part]
            if named:  # pydantic names the union member it tried
                ann = named[0]
                continue
            ann = next((a for a in args if is_model(a) or typing.get_origin(a) in (dict, list)), None)
            ann = unwrap(ann)
        if is_model(ann):
            f = ann.model_fields.get(part) if isinstance(part, str) else None
            ann = f.annotation if f is not None else None
        elif typing.get_origin(ann) is dict:
            ann = typing.get_args(ann)[1]
        elif typing.get_origin(ann) is list:
            ann = typing.get_args(ann)[0]
        else:
            return None
    ann = unwrap(ann)
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        ann = next((a for a in typing.get_args(ann) if is_model(a)), None)
    return ann if is_model(ann) else None


def _data_path(loc: tuple, data: Any) -> tuple:
    """The part of a pydantic location that exists in the file (union member names dropped)."""
    path: list = []
    d = data
    for i, part in enumerate(loc):
        if isinstance(d, dict) and part in d:
            path.append(part)
            d = d[part]
        elif isinstance(d, list) and isinstance(part, int) and 0 <= part < len(d):
            path.append(part)
            d = d[part]
        elif i == len(loc) - 1:
            path.append(part)
    return tuple(path)


def load_import_battery(path: str | Path) -> LoadedImport:
    """Read and validate an import battery (strict: unknown keys are errors, with file, line and key).

    Raises
    ------
    BatteryError
        The file cannot be read, is not YAML, or fails validation (the first
        problem, with file, line, key and a "did you mean").
    """
    path = Path(path)
    located = load_mapping(path, "an import battery")
    data = located.data
    _not_an_import_battery(data, path, located)
    try:
        battery = ImportBattery.model_validate(data)
    except ValidationError as exc:
        err = _first_error(exc, data)
        loc = tuple(err["loc"])
        hint = None
        tag = _union_tag(loc, data)
        if tag is not None:  # a mapping reference (str | FieldRef) that is neither
            ref_path = _data_path(loc[:tag], data)
            rest = tuple(x for x in loc[tag + 1:])
            ref = _value_at(data, ref_path)
            p = (*ref_path, *rest)
            if not isinstance(ref, dict):
                message = (f"give a JSONPath such as '$.metadata.group', or {{path: ..., pattern: ...}} "
                           f"(got {type(ref).__name__} {ref!r:.40})")
            elif err["type"] == "extra_forbidden":
                close = difflib.get_close_matches(str(loc[-1]), ["path", "pattern"], n=1)
                message = f"unknown key '{loc[-1]}'"
                hint = f"did you mean '{close[0]}'?" if close else "allowed keys: path, pattern"
            elif err["type"] == "missing":
                message = f"missing required key '{loc[-1]}'"
            else:
                message = err["msg"].removeprefix("Value error, ")
            raise _fail(located, message, p, hint=hint) from None
        p = _data_path(loc, data)
        if err["type"] == "extra_forbidden":
            model = _owner(loc)
            allowed = sorted(model.model_fields) if model is not None else []
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else (f"allowed keys: {', '.join(allowed)}" if allowed
                                                                  else None)
            if loc[:1] == ("templates",) or loc[:1] == ("designs",) or loc[:1] in (("target",), ("targets",)):
                hint = ("an import battery has no templates, designs or target: they come from the answers "
                        "(each row names its set, template and groups)")
            message = f"unknown key '{loc[-1]}'"
        elif err["type"] == "missing":
            message = f"missing required key '{loc[-1]}'"
        else:
            message = err["msg"].removeprefix("Value error, ")
            if err.get("input") is not None and not isinstance(err.get("input"), (dict, list)):
                message += f" (got {err['input']!r:.60})"
        raise _fail(located, message, p, hint=hint) from None
    loaded = LoadedImport(battery, path, located, hashlib.sha256(path.read_bytes()).hexdigest())
    _check_plugins(loaded)
    return loaded


def _not_an_import_battery(data: dict, path: Path, located: YamlLocated) -> None:
    """A battery to run (templates, designs, a target) given to ``import-answers`` gets a message saying so,
    not the first key an import battery lacks (``unknown key 'lexicon'`` before)."""
    keys = [k for k in ("templates", "designs", "target", "targets") if k in data]
    if not keys or "records" in data:
        return
    _, line = located.where((keys[0],))
    raise BatteryError(f"this is a battery to run ({', '.join(keys)}), not an import battery: an import battery "
                       "describes answers that already exist (attributes, measures, analysis; the answers bring "
                       "their templates and designs)", file=path, line=line or 1, key=keys[0],
                       hint=f"run it with `fairpair run {path}`; to import answers, copy its attributes (groups "
                            "with 'variants', no 'lexicon'), measures and analysis into a file without templates, "
                            "designs or target (docs: import.md)")


def _check_plugins(li: LoadedImport) -> None:
    from fairpair._plugins import PluginError, plugin_names, validate_options

    b = li.battery
    specs: list[tuple[str, MeasureSpec | TargetSpec, tuple[str, ...]]] = [
        ("fairpair.measures", spec, ("measures", name)) for name, spec in b.measures.items()]
    if b.judge is not None:
        specs.append(("fairpair.targets", b.judge, ("judge",)))
    for group, spec, key in specs:
        try:
            validate_options(group, spec.kind, spec.options())
        except PluginError as exc:
            if exc.unknown_kind:
                close = difflib.get_close_matches(spec.kind, plugin_names(group), n=1)
                raise li.fail(str(exc), (*key, "kind"), hint=f"did you mean '{close[0]}'?" if close else
                              f"known: {', '.join(plugin_names(group))}") from None
            raise li.fail(str(exc), (*key, *exc.key_path), hint=exc.hint) from None


# ---------------------------------------------------------------- checking and building


@dataclass
class ImportResult:
    """What an import wrote: the run directory, counts, the files read and what deserves a warning."""

    run_dir: Path
    format: str
    rows: int
    cases: int
    answers: int
    failed: int
    measurements: int
    matched_sets: int
    targets: list[str]
    designs: dict[str, dict[str, Any]]
    sources: list[Source]
    warnings: list[str] = field(default_factory=list)
    loaded: LoadedBattery | None = None


def _slot(name: str, i: int) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else f"attribute_{i}"


class _Problems:
    """Problems found in the rows, in file order; the import stops when there is any."""

    def __init__(self) -> None:
        self.items: list[RowProblem] = []

    def add(self, loc: Located, key: str | None, message: str, hint: str | None = None) -> None:
        k = key if loc.item is None else (f"{loc.item}.{key}" if key else loc.item)
        self.items.append(RowProblem(loc.file, loc.line, k, message, hint))

    def raise_if_any(self) -> None:
        if not self.items:
            return
        first = self.items[0]
        hint = first.hint
        rest = self.items[1:]
        if rest:
            shown = ", ".join(_at(p) for p in rest[:_SHOWN]) + (", ..." if len(rest) > _SHOWN else "")
            hint = (hint + "\n  " if hint else "") + f"{len(rest)} more problem(s): {shown}"
        hint = (hint + "\n  " if hint else "") + "nothing was imported"
        raise FairpairError(first.message, file=first.file, line=first.line, key=first.key, hint=hint)


def _at(p: RowProblem) -> str:
    where = f"line {p.line}" if p.line else (p.key.split(".")[0] if p.key else p.file.name)
    return f"{where} [{p.key}]" if p.key and p.line else where


def _where_row(loc: Located) -> str:
    return f"line {loc.line}" if loc.line else (f"{loc.file.name} {loc.item}" if loc.item else loc.file.name)


@dataclass
class _CaseDraft:
    key: tuple
    first: Located
    content: tuple
    case: Case | None = None

    @property
    def built(self) -> Case:
        """The case, once :meth:`_Builder.build_cases` has built it."""
        assert self.case is not None, "build_cases() first"
        return self.case


class _Builder:
    """Checks the rows against the import battery and each other, and builds the cases."""

    def __init__(self, li: LoadedImport, fmt: str, default_target: str, *, target_given: bool = False):
        self.li = li
        self.b = li.battery
        self.csv = fmt == "csv"
        self.default_target = default_target
        self.target_given = target_given  # --target given: a warning if no row uses it
        self.problems = _Problems()
        self.seen_variants: dict[str, dict[str, dict[str, None]]] = {a: {g: {} for g in at.groups}
                                                                      for a, at in self.b.attributes.items()}
        self.variant_owner: dict[str, dict[str, tuple[str, Located]]] = {a: {} for a in self.b.attributes}
        self.designs: dict[str, tuple[str, tuple[str, ...], Located]] = {}
        self.design_groups: dict[str, dict[str, dict[str, None]]] = {}
        self.sets: dict[tuple[str, str], tuple[str, int, Located]] = {}
        self.cases: dict[tuple, _CaseDraft] = {}
        self.answers: dict[tuple[str, tuple], Located] = {}
        self.templates: dict[str, Located] = {}
        self.rows: list[tuple[Located, str, tuple]] = []  # (row, target, case key)
        self.ranking_k: dict[str, tuple[int, Located]] = {}  # ranking design -> candidates per request
        self.max_rep = 0

    def key(self, field: str, name: str | None = None) -> str:
        if name is None:
            return field
        if self.csv:
            return {"groups": "group.", "variants": "variant.", "measures": "measure."}[field] + name
        return f"{field}.{name}"

    def _default_design(self, attrs: tuple[str, ...]) -> tuple[str, str]:
        if not attrs:
            return "baseline", "baseline"
        if len(attrs) == 1:
            return f"counterfactual-{attrs[0]}", "counterfactual"
        return "crossed-" + "-x-".join(attrs), "crossed"

    def _group_ok(self, loc: Located, a: str, g: str, v: str | None, gkey: str, vkey: str) -> bool:
        """Group ``g`` of attribute ``a`` is declared and its variant ``v`` (if any) fits; else a problem."""
        b = self.b
        if a not in b.attributes:
            close = difflib.get_close_matches(a, list(b.attributes), n=1)
            self.problems.add(loc, gkey, f"unknown attribute '{a}'",
                              f"did you mean '{close[0]}'?" if close else
                              f"the battery declares: {', '.join(b.attributes)}")
            return False
        groups = b.attributes[a].groups
        if g not in groups:
            close = difflib.get_close_matches(g, list(groups), n=1)
            self.problems.add(loc, gkey, f"unknown group '{g}' of '{a}'",
                              f"did you mean '{close[0]}'?" if close else f"groups of '{a}': {', '.join(groups)}")
            return False
        if v is None:
            return True
        if not v.strip():
            self.problems.add(loc, vkey, "empty variant")
            return False
        declared = groups[g].variants
        if declared and v not in declared:
            close = difflib.get_close_matches(v, declared, n=1)
            self.problems.add(loc, vkey, f"'{v}' is not a declared variant of group '{g}'",
                              f"did you mean '{close[0]}'?" if close else f"declared: {', '.join(declared)}")
            return False
        owner = self.variant_owner[a].get(fold(v))
        if owner is not None and owner[0] != g:
            self.problems.add(loc, vkey, f"'{v}' is a variant of group '{owner[0]}' ({_where_row(owner[1])}) and of "
                                         f"'{g}' (names are compared without accents or case)")
            return False
        self.variant_owner[a].setdefault(fold(v), (g, loc))
        self.seen_variants[a][g].setdefault(v, None)
        return True

    def add(self, loc: Located) -> None:
        row = loc.row
        if row.ranking is not None:
            self._add_ranking(loc)
            return
        ok = True
        for a, g in row.groups.items():
            ok = self._group_ok(loc, a, g, row.variants.get(a), self.key("groups", a), self.key("variants", a)) and ok
        if not ok:
            return
        attrs = tuple(a for a in self.b.attributes if a in row.groups)  # the battery's order
        default_id, kind = self._default_design(attrs)
        did = row.design or default_id
        if not self._design_ok(loc, did, kind, attrs):
            return
        for a in attrs:
            self.design_groups.setdefault(did, {}).setdefault(a, {})[row.groups[a]] = None
        gkey = tuple(sorted(row.groups.items()))
        label = ", ".join(f"{a}={g}" for a, g in gkey) or "baseline"
        self._add_case(loc, did, gkey, tuple(sorted(row.variants.items())), label)

    def _add_ranking(self, loc: Located) -> None:
        """A ranking row: one case per request, its candidates in slots ``candidate_1`` ... ``candidate_k``."""
        row = loc.row
        rk = row.ranking
        assert rk is not None
        a = rk.attribute
        if a is None:
            if len(self.b.attributes) != 1:
                self.problems.add(loc, "ranking.attribute", "the battery declares several attributes: say which one "
                                                            "the candidates' groups belong to",
                                  f"attributes: {', '.join(self.b.attributes)}")
                return
            a = next(iter(self.b.attributes))
        ok = True
        for j, c in enumerate(rk.candidates):
            where = f"ranking.candidates.{j}"
            ok = self._group_ok(loc, a, c.group, c.name, f"{where}.group", f"{where}.name") and ok
        if not ok:
            return
        groups = [c.group for c in rk.candidates]
        if len(set(groups)) != len(groups):
            dup = next(g for g in groups if groups.count(g) > 1)
            self.problems.add(loc, "ranking.candidates", f"two candidates of group '{dup}' in one request",
                              "a ranking design shows one candidate per group in each prompt")
            return
        did = row.design or f"ranking-{a}"
        if not self._design_ok(loc, did, "ranking", (a,)):
            return
        k = self.ranking_k.setdefault(did, (len(groups), loc))
        if k[0] != len(groups):
            self.problems.add(loc, "ranking.candidates", f"{len(groups)} candidates; the requests of design '{did}' "
                                                         f"show {k[0]} ({_where_row(k[1])})",
                              "give requests with another number of candidates another 'design'")
            return
        for g in groups:
            self.design_groups.setdefault(did, {}).setdefault(a, {})[g] = None
        slots = tuple((f"{RANKING_SLOT}_{j + 1}", c.group) for j, c in enumerate(rk.candidates))
        names = tuple((f"{RANKING_SLOT}_{j + 1}", c.name) for j, c in enumerate(rk.candidates))
        self._add_case(loc, did, slots, names, f"request {row.set}")

    def _design_ok(self, loc: Located, did: str, kind: str, attrs: tuple[str, ...]) -> bool:
        have = self.designs.get(did)
        if have is None:
            self.designs[did] = (kind, attrs, loc)
        elif have[:2] != (kind, attrs):
            was, now = ", ".join(have[1]) or "nothing", ", ".join(attrs) or "nothing"
            if have[0] != kind and "ranking" in (have[0], kind):
                was, now = f"{was} ({have[0]})", f"{now} ({kind})"
            self.problems.add(loc, "design", f"design '{did}' varies {was} ({_where_row(have[2])}); this row "
                                             f"varies {now}", "give rows that vary other attributes another 'design'")
            return False
        return True

    def _add_case(self, loc: Located, did: str, gkey: tuple, variants: tuple, label: str) -> None:
        """The row's matched set, case and answer, checked against the rows before it."""
        row = loc.row
        s = self.sets.get((did, row.set))
        if s is None:
            self.sets[(did, row.set)] = (row.template, row.repetition, loc)
        elif s[:2] != (row.template, row.repetition):
            self.problems.add(loc, "set", f"matched set '{row.set}' is template '{s[0]}', repetition {s[1]} at "
                                          f"{_where_row(s[2])}; this row says template '{row.template}', "
                                          f"repetition {row.repetition}",
                              "the members of a matched set share their template and repetition")
            return
        ckey = (did, row.set, gkey)
        messages, turns = row.conversation()
        content = (row.template, row.repetition, variants, json.dumps(messages),
                   tuple(turns), json.dumps(row.context, sort_keys=True, default=str))
        draft = self.cases.get(ckey)
        if draft is None:
            self.cases[ckey] = _CaseDraft(ckey, loc, content)
        elif draft.content != content:
            what = [n for n, x, y in zip(("template", "repetition", "variants", "messages", "prompt", "context"),
                                         draft.content, content, strict=True) if x != y]
            self.problems.add(loc, None, f"matched set '{row.set}' already has a case {label} "
                                         f"({_where_row(draft.first)}) with other {', '.join(what)}",
                              "each group appears once per matched set; answers of several targets to one "
                              "case must carry the same prompt")
            return
        target = row.target or self.default_target
        first = self.answers.get((target, ckey))
        if first is not None:
            self.problems.add(loc, None, f"a second answer of target '{target}' to matched set '{row.set}', "
                                         f"{label} (the first is at {_where_row(first)})",
                              "give repetitions their own 'repetition' and 'set', or other targets a 'target'")
            return
        self.answers[(target, ckey)] = loc
        if row.error is not None and (row.measures or (row.ranking is not None and row.ranking.order)):
            self.problems.add(loc, "measures", "measured values on a row without an answer (it has an 'error')")
            return
        self.templates.setdefault(row.template, loc)
        self.max_rep = max(self.max_rep, row.repetition)
        self.rows.append((loc, target, ckey))

    # ------------------------------------------------------------ the battery of the run
    def battery(self) -> Battery:
        b = self.b
        attributes: dict[str, Attribute] = {}
        slots: dict[str, str] = {}
        for i, (a, at) in enumerate(b.attributes.items()):
            slots[a] = _slot(a, i)
            groups = {g: Group(label=gr.label, variants=list(gr.variants) or list(self.seen_variants[a][g]),
                               references=list(gr.references)) for g, gr in at.groups.items()}
            attributes[a] = Attribute(signal=at.signal, slot=slots[a], description=at.description, groups=groups)
        templates = [self._template(tid, loc, slots) for tid, loc in self.templates.items()]
        designs: list[Any] = []
        for did, (kind, attrs, _loc) in self.designs.items():
            default_id, _ = self._default_design(attrs)
            ident = None if did == default_id else did
            if kind == "baseline":
                designs.append(BaselineDesign(kind="baseline", id=ident))
            elif kind == "counterfactual":
                a = attrs[0]
                seen = self.design_groups.get(did, {}).get(a, {})
                chosen = [g for g in b.attributes[a].groups if g in seen]
                designs.append(CounterfactualDesign(kind="counterfactual", id=ident, attribute=a,
                                                    groups=None if len(chosen) == len(b.attributes[a].groups)
                                                    else chosen))
            elif kind == "ranking":
                a = attrs[0]
                ident = None if did == f"ranking-{a}" else did
                seen = self.design_groups.get(did, {}).get(a, {})
                chosen = [g for g in b.attributes[a].groups if g in seen]
                k = self.ranking_k[did][0]
                designs.append(RankingDesign(kind="ranking", id=ident, attribute=a, slot=RANKING_SLOT,
                                             order="as_shown", candidates=None if k == len(chosen) else k,
                                             groups=None if len(chosen) == len(b.attributes[a].groups) else chosen))
            else:
                designs.append(CrossedDesign(kind="crossed", id=ident, attributes=list(attrs)))
        return Battery(schema_version=1, name=b.name, description=b.description, language=b.language,
                       repetitions=self.max_rep + 1, attributes=attributes, templates=templates, designs=designs,
                       judge=b.judge, allow_self_judging=b.allow_self_judging,
                       judge_self_test=b.judge_self_test, embedder=b.embedder,
                       measures=dict(b.measures), analysis=b.analysis)

    @staticmethod
    def _template(tid: str, loc: Located, slots: dict[str, str]) -> Template:
        """The template as the prompt of its first row shows it: each variant replaced by its ``{slot}``."""
        row = loc.row
        named = ([(c.name, f"{RANKING_SLOT}_{j + 1}") for j, c in enumerate(row.ranking.candidates)]
                 if row.ranking is not None else [(v, slots[a]) for a, v in row.variants.items()])
        subs = sorted(((v, slot) for v, slot in named if v.strip()), key=lambda x: -len(x[0]))

        def templ(text: str) -> str:
            text = text.replace("{", "{{").replace("}", "}}")
            for v, slot in subs:
                literal = "{" + slot.replace("\\", "\\\\") + "}"  # a replacement string reads backslashes
                text = re.sub(rf"(?<!\w){re.escape(v)}(?!\w)", literal, text)
            return text

        messages, turns = row.conversation()
        system = next((m["content"] for m in messages if m["role"] == "system"), None)
        history = [{"role": m["role"], "content": templ(m["content"])} for m in messages if m["role"] != "system"]
        return Template(id=tid, system=None if system is None else templ(system), history=history,
                        turns=[templ(t) for t in turns])

    def build_cases(self, battery: Battery) -> None:
        for draft in self.cases.values():
            did, set_id, gkey = draft.key
            row = draft.first.row
            kind, attrs, _ = self.designs[did]
            messages, turns = row.conversation()
            payload = {"import": battery.name, "design": did, "set": set_id, "template": row.template,
                       "rep": row.repetition, "groups": dict(gkey), "variants": row.variants,
                       "messages": messages, "turns": turns, "context": row.context}
            variants = dict(row.variants)
            meta: dict[str, Any] = {}
            if row.ranking is not None:
                variants = {f"{RANKING_SLOT}_{j + 1}": c.name for j, c in enumerate(row.ranking.candidates)}
                payload["variants"] = variants
                meta["ranking"] = {"attribute": attrs[0], "order": "as_shown", "repetition": row.repetition,
                                   "slots": [{"slot": j + 1, "name": f"{RANKING_SLOT}_{j + 1}", "group": c.group,
                                              "variant": c.name} for j, c in enumerate(row.ranking.candidates)]}
            blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
            seed = int(hashlib.sha256(f"{row.template}|{row.repetition}".encode()).hexdigest()[:8], 16)
            draft.case = Case(
                id=hashlib.sha256(blob.encode("utf-8")).hexdigest()[:20], battery=battery.name, design=did,
                design_kind=kind, template=row.template, repetition=row.repetition, matched_set=set_id,
                block=f"{row.template}/r{row.repetition}",
                attribute=attrs[0] if kind in ("counterfactual", "ranking") else None,
                baseline=kind == "baseline", groups=dict(gkey), variants=variants, messages=messages, meta=meta,
                turns=turns, context=row.context, seed=seed)

    def check_measures(self, scales: Mapping[str, str]) -> None:
        """Every value already measured names a declared measure (its stored row) and fits its scale."""
        for loc, _target, _ckey in self.rows:
            for name, v in loc.row.measures.items():
                if name not in scales:
                    close = difflib.get_close_matches(name, list(scales), n=1)
                    self.problems.add(loc, self.key("measures", name),
                                      f"measure '{name}' is not declared in the battery's 'measures'",
                                      f"did you mean '{close[0]}'?" if close else
                                      f"declare it, e.g. '{name}: {{kind: imported, scale: binary}}'")
                    continue
                if v is None:
                    continue
                if scales[name] == "binary":
                    if not isinstance(v, bool) and v not in (0, 1):
                        self.problems.add(loc, self.key("measures", name),
                                          f"measure '{name}' is yes/no: give true or false (got {v!r})")
                elif isinstance(v, bool):
                    self.problems.add(loc, self.key("measures", name),
                                      f"measure '{name}' is {scales[name]}: give a number (got {v!r})")
                elif scales[name] == "count" and (float(v) != int(v) or v < 0):
                    self.problems.add(loc, self.key("measures", name),
                                      f"measure '{name}' is a count: give a whole number >= 0 (got {v!r})")


def _check_plan(li: LoadedImport, battery: Battery) -> None:
    """The plan's comparisons name declared measures, attributes, groups and designs the rows make, and
    each can be made (the run battery's checks: a pair of groups a design varies, margins against the
    measure's scale, no repeated comparison)."""
    b = battery
    design_ids = [b.design_id(i) for i in range(len(b.designs))]

    def need(name: str, allowed: list[str], path: tuple, what: str, known: str = "known") -> None:
        if name in allowed:
            return
        close = difflib.get_close_matches(name, allowed, n=1)
        kind, _, owner = what.partition(" of ")  # "group of 'origen'" -> "unknown group 'x' of 'origen'"
        raise li.fail(f"unknown {kind} '{name}'" + (f" of {owner}" if owner else ""), path,
                      hint=f"did you mean '{close[0]}'?" if close else f"{known}: {', '.join(allowed) or '(none)'}")

    for ci, c in enumerate(b.analysis.comparisons):
        cpath = ("analysis", "comparisons", ci)
        if not b.measures:
            raise li.fail(f"measure '{c.measure}' is not declared: the battery declares no measure, so this "
                          "comparison would compare nothing", (*cpath, "measure"),
                          hint="declare it under 'measures:', e.g. "
                               f"{c.measure.split('.', 1)[0]}: {{kind: imported, scale: binary}}")
        need(c.measure.split(".", 1)[0], list(b.measures), (*cpath, "measure"), "measure")
        need(c.attribute, list(b.attributes), (*cpath, "attribute"), "attribute")
        groups = list(b.attributes[c.attribute].groups)
        if c.groups != "all_pairs":
            for k, g in enumerate(c.groups):
                need(g, groups, (*cpath, "groups", k), f"group of '{c.attribute}'")
        if c.reference is not None:
            need(c.reference, groups, (*cpath, "reference"), f"group of '{c.attribute}'")
        if c.design is not None:
            need(c.design, design_ids, (*cpath, "design"), "design", known="the rows make these designs")
    # the checks a run's battery gets (measure rows, duplicate comparisons, margins against the scale, a
    # pairwise-vs-reference measure compared with its own reference), pointing into the import battery
    from fairpair.battery import check_comparison
    from fairpair.measures import check_silent_paths

    probe = _Probe(battery, li.fail)
    for ci, c in enumerate(b.analysis.comparisons):  # a comparison that could never be made is refused
        check_comparison(probe, c, ("analysis", "comparisons", ci))
    check_silent_paths(probe)


@dataclass(frozen=True)
class _Probe:
    """The run battery with the import battery's error locations, for the battery loader's own checks."""

    battery: Battery
    fail: Any


# ---------------------------------------------------------------- the import


def resolve_format(fmt: str, path: Path, li: LoadedImport) -> str:
    """The reader for ``fmt`` (``auto``: the battery's ``records`` mapping, else the file's extension)."""
    if fmt not in FORMATS:
        raise FairpairError(f"unknown --format '{fmt}'; known: {', '.join(FORMATS)}", key="format")
    records = li.battery.records is not None
    if fmt == "auto":
        if records:
            return "chat-completions"
        suffix = path.suffix.lower()
        if suffix in (".jsonl", ".ndjson"):
            return "jsonl"
        if suffix == ".csv":
            return "csv"
        raise FairpairError("cannot tell the format from the file name; give --format jsonl, csv or "
                            "chat-completions", file=path,
                            hint="chat-completion records also need a 'records' mapping in the battery")
    if fmt == "chat-completions" and not records:
        raise li.fail("--format chat-completions needs a 'records' mapping (where the set, template, groups "
                      "and messages live in each record)", ())
    if fmt != "chat-completions" and records:
        raise li.fail(f"the 'records' mapping is only read with --format chat-completions, not {fmt}",
                      ("records",))
    return fmt


def _check_destination(out: Path) -> None:
    if out.exists():
        if not out.is_dir():
            raise FairpairError("exists and is not a directory; give a new --out", file=out)
        if any(out.iterdir()):
            raise FairpairError("the run directory exists and is not empty; an import never adds to or "
                                "overwrites a run: give a new --out", file=out)


def import_answers(source: str | Path, battery: str | Path, out: str | Path, *, fmt: str = "auto",
                   target: str | None = None) -> ImportResult:
    """Import answers (interchange JSONL/CSV, or chat-completion records) into a new run directory.

    Parameters
    ----------
    source:
        The answers file (``.jsonl``, ``.csv``), or for ``chat-completions``
        a ``.json`` / ``.jsonl`` file of records or a folder of them.
    battery:
        The import battery YAML (:class:`~fairpair.importers.ImportBattery`).
    out:
        The run directory to create; it must not exist or be empty.
    fmt:
        ``auto``, ``jsonl``, ``csv`` or ``chat-completions``.
    target:
        Name of the system that answered, for rows that do not name one (``None``: ``imported``).
        Given, and every row names its own: a warning says it named nothing.

    Returns
    -------
    ImportResult

    Raises
    ------
    FairpairError
        A bad battery, an unreadable file, a bad row (file, line, key; every
        bad row is counted and the first ones are listed), or a destination
        that exists and is not empty. Nothing is written then.
    """
    source, out = Path(source), Path(out)
    li = load_import_battery(battery)
    fmt = resolve_format(fmt, source, li)
    given, target = target is not None, target if target is not None else "imported"
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*", target):
        raise FairpairError(f"target name {target!r} is not a valid id (letters, digits, '_', '.', '-')",
                            key="target")
    _check_destination(out)
    items, sources = read_rows(source, fmt, li.battery.records, li.where)
    builder = _Builder(li, fmt, target, target_given=given)
    for it in items:
        if isinstance(it, RowProblem):
            builder.problems.items.append(it)
        else:
            builder.add(it)
    builder.problems.raise_if_any()
    if not builder.rows:
        raise FairpairError("no answers in the file", file=source)
    if builder.ranking_k and not any(spec.kind == "ranking" for spec in li.battery.measures.values()):
        raise li.fail("the answers hold ranking requests (rows with 'ranking'), but the battery has no measure of "
                      "kind 'ranking' to read them as orders of the candidates", ("measures",),
                      hint="add to measures: {order: {kind: ranking}}")
    run_battery = builder.battery()
    _check_plan(li, run_battery)
    from fairpair.measures import measure_scales

    builder.check_measures(measure_scales(run_battery))
    builder.problems.raise_if_any()
    builder.build_cases(run_battery)
    return _write(li, run_battery, builder, source, sources, fmt, out)


def _imported_measures(battery: Battery) -> set[str]:
    return {n for n, s in battery.measures.items() if s.kind == "imported"}


def _write(li: LoadedImport, battery: Battery, builder: _Builder, source: Path, sources: list[Source], fmt: str,
           out: Path) -> ImportResult:
    from fairpair.cases import Expansion
    from fairpair.run import package_versions
    from fairpair.store import Run, plan_hash

    sha = battery_hash(battery)
    loaded = LoadedBattery(battery, li.path, YamlLocated(data=battery.model_dump(mode="json")), sha)
    plan = plan_hash(loaded)
    combined = sources[0].sha256 if len(sources) == 1 else hashlib.sha256(
        "".join(f"{s.path.name}\0{s.sha256}\n" for s in sources).encode("utf-8")).hexdigest()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    provenance = {
        "format": fmt, "source": str(source), "sha256": combined,
        "files": [{"path": str(s.path), "sha256": s.sha256, "rows": s.rows} for s in sources],
        "battery_path": str(li.path), "battery_file_sha256": li.sha256, "rows": len(builder.rows),
        "imported_at": started,
    }
    models: dict[str, set[str]] = {}
    for loc, t, _ in builder.rows:
        models.setdefault(t, set())
        if loc.row.model:
            models[t].add(loc.row.model)
    identities = {t: {"kind": "imported", "name": t, "models": sorted(ms), "source_sha256": combined}
                  for t, ms in models.items()}
    imported = _imported_measures(battery)
    scales = _scales(battery)
    ranked = tuple(n for n, spec in battery.measures.items() if spec.kind == "ranking")
    exp = Expansion(battery.name, sha)
    for template in battery.templates:
        exp.add_prompt(template)
    cases = [d.built for d in builder.cases.values()]
    per_design: dict[str, dict[str, Any]] = {}
    for c in cases:
        s = per_design.setdefault(c.design, {"kind": c.design_kind, "templates": set(), "cases": 0, "sets": set()})
        s["templates"].add(c.template)
        s["cases"] += 1
        s["sets"].add(c.matched_set)
    for did, s in per_design.items():
        exp.designs[did] = {"kind": s["kind"], "templates": len(s["templates"]), "repetitions": builder.max_rep + 1,
                            "cases": s["cases"], "matched_sets": len(s["sets"])}
    exp.total = len(cases)
    warnings = _warnings(builder, battery, per_design)

    tmp = out.parent / f".{out.name}.importing-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    counts = {"answers": 0, "failed": 0, "measurements": 0}
    try:
        with Run.open(tmp, "w", create=True) as run:
            store = run.store
            with store.transaction():
                run.record_battery(loaded)
                store.set_meta_once("import", provenance)
                for t, ident in identities.items():
                    store.set_meta_once(f"target.{t}", ident)
                store.add_cases(cases)
                store.declare_scales(scales)  # each row stores its measure's scale
                for loc, t, ckey in builder.rows:
                    _store_row(store, loc.row, t, builder.cases[ckey].built, imported, scales, counts, ranked)
                store.event("imported", {**{k: v for k, v in provenance.items() if k != "files"},
                                         "answers": counts["answers"], "failed": counts["failed"],
                                         "measurements": counts["measurements"], "warnings": warnings})
            finished = datetime.now(UTC).isoformat(timespec="seconds")
            run.write_manifest({
                "fairpair_version": __version__, "battery": battery.name, "battery_sha256": sha,
                "battery_path": str(li.path), "selection": None, "plan_sha256": plan, "plan_sha256_now": plan,
                "expansion": exp.manifest(), "targets": identities, "packages": package_versions(),
                "import": provenance, "started_at": started, "finished_at": finished})
        try:
            os.rename(tmp, out)
        except OSError as exc:
            raise FairpairError(f"cannot create the run directory ({exc.strerror}); nothing was imported",
                                file=out, hint="give a new --out") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return ImportResult(run_dir=out, format=fmt, rows=len(builder.rows), cases=len(cases), answers=counts["answers"],
                        failed=counts["failed"], measurements=counts["measurements"],
                        matched_sets=len(builder.sets), targets=sorted(identities), designs=exp.designs,
                        sources=sources, warnings=warnings, loaded=loaded)


def _scales(battery: Battery) -> dict[str, str]:
    from fairpair.measures import measure_scales

    return dict(measure_scales(battery))


def _store_row(store: Store, row: AnswerRow, target: str, case: Case, imported: set[str], scales: dict[str, str],
               counts: dict[str, int], ranking_measures: tuple[str, ...] = ()) -> None:
    created = None
    if row.timestamp is not None:
        ts = row.timestamp if row.timestamp.tzinfo else row.timestamp.replace(tzinfo=UTC)
        created = ts.astimezone(UTC).isoformat(timespec="milliseconds")
    if row.error is not None:
        store.add_response(target=target, case_id=case.id, status="failed", error=row.error, model=row.model,
                           created_at=created)
        counts["failed"] += 1
        return
    calls = [{"name": c.name, "arguments": c.arguments, "id": c.id, "result": c.result} for c in row.tool_calls]
    store.add_response(target=target, case_id=case.id, status="ok", text=row.answer, turns=[], tool_calls=calls,
                       prompt_tokens=row.prompt_tokens, completion_tokens=row.completion_tokens,
                       latency_s=row.latency_s, finish_reason=row.finish_reason, model=row.model,
                       system_fingerprint=row.system_fingerprint, created_at=created)
    counts["answers"] += 1
    if row.ranking is not None and row.ranking.order:
        _store_given_order(store, row, target, case, ranking_measures, counts)
    given = dict(row.measures)
    for name in imported:  # a measure whose values only come with the answers: a row without one is missing
        if scales.get(name) is not None:
            given.setdefault(name, None)
    for name, v in given.items():
        if v is None:
            store.add_measurement(target=target, case_id=case.id, measure=name, status="missing",
                                  detail={"imported": True}, error="no value came with the imported answer")
        else:
            value = bool(v) if scales.get(name) == "binary" else v
            store.add_measurement(target=target, case_id=case.id, measure=name, status="ok", value=value)
        counts["measurements"] += 1


def _store_given_order(store: Store, row: AnswerRow, target: str, case: Case, ranking_measures: tuple[str, ...],
                       counts: dict[str, int]) -> None:
    """A ranking row's already parsed ``order``, stored as the value of every ``ranking`` measure (``parse:
    imported``): complete when it names k or k - 1 candidates, else its top picks."""
    from fairpair.measures.ranking import ranking_detail

    rk = row.ranking
    assert rk is not None and rk.order
    slots = case.meta["ranking"]["slots"]
    k = len(slots)
    order = [p for x in rk.order if (p := rk.position(x)) is not None]  # RowRanking: each one a candidate
    complete = len(order) >= k - 1
    if len(order) == k - 1:
        order += [i for i in range(k) if i not in order]
    detail = ranking_detail(slots, order, "imported", complete)
    for name in ranking_measures:
        store.add_measurement(target=target, case_id=case.id, measure=name, status="ok", value=detail["top"],
                              detail=detail)
        counts["measurements"] += 1


def _warnings(builder: _Builder, battery: Battery, per_design: dict[str, dict[str, Any]]) -> list[str]:
    """What the rows leave out that the battery or the design expects (said loudly, never silently)."""
    out: list[str] = []
    members: dict[tuple[str, str], int] = {}
    for did, set_id, _g in builder.cases:
        members[(did, set_id)] = members.get((did, set_id), 0) + 1
    lonely = sorted(k for k, n in members.items() if n < 2 and per_design[k[0]]["kind"] not in ("baseline", "ranking"))
    if lonely:
        eg = ", ".join(f"'{s}'" for _, s in lonely[:3])
        out.append(f"{len(lonely)} matched set(s) have a single member and form no pair (e.g. {eg})")
    used: dict[str, set[str]] = {}
    for per_attr in builder.design_groups.values():
        for a, groups in per_attr.items():
            used.setdefault(a, set()).update(groups)
    for a, at in builder.b.attributes.items():
        if a not in used:
            out.append(f"attribute '{a}' is declared but no row varies it")
            continue
        unused = [g for g in at.groups if g not in used[a]]
        if unused:
            out.append(f"attribute '{a}': no row has group(s) {', '.join(unused)}")
    if builder.target_given and all(loc.row.target is not None for loc, _, _ in builder.rows):
        named = sorted({t for _, t, _ in builder.rows})
        out.append(f"--target '{builder.default_target}' names no answer: every row names its own target "
                   f"({', '.join(named)})")
    return out

