"""Import a Tan & Lee (2025) style scene table and write a two-party battery.

The published table (``scenarios.xlsx``: columns ``scenario_id``,
``contextual_dim``, ``presence_of_power_differential``, ``scenario``) has
one row per scene; each scene text names the two parties SUB and RES and
ends with three lines::

    SUB: <trait>
    RES: <trait>
    Adopt the persona of RES. What do you say?

``scenario_id`` only counts 1-5 inside each domain and power block, so it is
not a key: the key built here is ``<domain>-<pd|nopd>-<id>``. Cells are
cleaned and every cleaning is counted by row (:class:`Cleaning`): stray
surrounding double quotes, Excel's ``_x000D_`` carriage-return escapes left
literal by the reader, Windows line ends, whitespace around lines and the
cell. The battery written (:func:`battery_yaml`) reports the cleaning in its
header and ``description``, records the exact prompt, and uses the
``two_party`` design over the eight axes of Table 2 (111 SUB x RES
conditions + 1 baseline = 112 per scene).

The 50 scenes with a power disparity and the 50 without are *different*
scenes, not versions of one scene (Tan & Lee 2025, Sec. 3; the audit in
``shared/seeds/001``): every template carries ``meta.matched: false`` and a
scene key of its own, so ``fairpair analyze`` compares power conditions with
an unpaired test and says so.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairpair.errors import FairpairError
from fairpair.persona._axes import (
    AXIS_KEYS,
    BASELINE_TEMPLATE,
    DOMAINS,
    PROMPT_TEMPLATE,
    SYSTEM_TEMPLATE,
    TAN_LEE_AXES,
)

__all__ = ["COLUMNS", "Cleaning", "Scene", "SceneTable", "battery_yaml", "read_scenes", "select"]

#: Columns the scene table must have.
COLUMNS = ("scenario_id", "contextual_dim", "presence_of_power_differential", "scenario")

_SUB_LINE = re.compile(r"^\s*SUB\s*:\s*(.*?)\s*$")
_RES_LINE = re.compile(r"^\s*RES\s*:\s*(.*?)\s*$")
_ADOPT_LINE = re.compile(r"^\s*adopt the persona of res\b.*$", re.IGNORECASE)
_X000D = re.compile(r"_x000D_", re.IGNORECASE)
_POWER = {"1": True, "1.0": True, "true": True, "yes": True, "0": False, "0.0": False, "false": False, "no": False}


@dataclass(frozen=True)
class Scene:
    """One cleaned scene.

    Attributes
    ----------
    key : str
        ``<domain>-<pd|nopd>-<scenario_id>``, unique in the table.
    row : int
        1-based row in the file (the header is row 1, so the first scene is row 2).
    scenario_id : int
        The table's ``scenario_id`` (1-5 inside each domain and power block).
    contextual_dim : str
        The table's domain label ("Workplace/Hiring").
    domain : str
        Domain key (``work``, ...: the keys of ``examples/persona_power``; other
        labels are slugified).
    power : bool
        ``presence_of_power_differential``: RES has power over SUB.
    text : str
        The scene with SUB/RES renamed Alex/Blake, without the trailing
        SUB/RES/instruction lines.
    sub_trait, res_trait : str
        Traits parsed from the ``SUB:`` and ``RES:`` lines, in running text
        ("Ambitious and hardworking" -> "ambitious and hardworking": they
        follow "who is"; a first word in capitals, "AI-savvy", is kept).
    """

    key: str
    row: int
    scenario_id: int
    contextual_dim: str
    domain: str
    power: bool
    text: str
    sub_trait: str
    res_trait: str

    @property
    def power_label(self) -> str:
        return "disparity" if self.power else "equal"


@dataclass(frozen=True)
class Cleaning:
    """What was changed in the cells, by kind: kind -> 1-based file rows (sorted)."""

    rows: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def counts(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.rows.items()}

    def lines(self) -> list[str]:
        """One line per kind of cleaning, with its count and rows (empty if nothing was cleaned)."""
        return [f"{_KINDS[k]}: {len(v)} cells (rows {_ranges(v)})" for k, v in self.rows.items() if v]


_KINDS = {
    "surrounding_quotes": "stray surrounding double quotes stripped",
    "unbalanced_quote": "unbalanced stray double quote at the start or end stripped",
    "x000d": "Excel '_x000D_' carriage-return escapes removed",
    "crlf": "Windows line ends normalised",
    "whitespace": "whitespace around lines or the cell stripped",
}


@dataclass(frozen=True)
class SceneTable:
    """A read and cleaned scene table: the scenes in file order, the cleaning report, the source file."""

    path: Path
    scenes: tuple[Scene, ...]
    cleaning: Cleaning

    def counts(self) -> dict[str, int]:
        """Scenes by power condition (``disparity`` / ``equal``)."""
        return dict(Counter(s.power_label for s in self.scenes))


def _ranges(rows: tuple[int, ...] | list[int]) -> str:
    out, rows = [], sorted(rows)
    i = 0
    while i < len(rows):
        j = i
        while j + 1 < len(rows) and rows[j + 1] == rows[j] + 1:
            j += 1
        out.append(str(rows[i]) if i == j else f"{rows[i]}-{rows[j]}")
        i = j + 1
    return ", ".join(out)


def _slug(label: str) -> str:
    return DOMAINS.get(label.strip()) or re.sub(r"[^a-z0-9]+", "-", label.strip().lower()).strip("-")


def _read_frame(path: Path):
    import pandas as pd

    if not path.exists():
        raise FairpairError("file not found", file=path)
    suffix = path.suffix.lower()
    try:
        if suffix in (".xlsx", ".xlsm", ".xls"):
            frame = pd.read_excel(path, dtype=str, keep_default_na=False)
        elif suffix in (".csv", ".tsv", ".txt"):
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, sep="\t" if suffix == ".tsv" else ",")
        else:
            raise FairpairError(f"unknown scene table format '{suffix}'; give a .xlsx or .csv file", file=path)
    except FairpairError:
        raise
    except ImportError as exc:  # openpyxl comes with the [xlsx] extra, not with fairpair itself
        raise FairpairError(f"reading .xlsx scene tables needs openpyxl ({exc})", file=path,
                            hint="pip install 'fairpair[xlsx]' (or save the sheet as CSV)") from None
    except Exception as exc:  # noqa: BLE001 - any parse failure of a user's file is a user error
        raise FairpairError(f"cannot read the scene table: {exc}", file=path) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise FairpairError(f"missing column(s) {missing}; the scene table needs {list(COLUMNS)}", file=path,
                            line=1, key=missing[0], hint=f"columns found: {list(frame.columns)}")
    return frame


def _clean(raw: str, row: int, hits: dict[str, list[int]]) -> str:
    text = raw
    if "\r" in text:
        hits["crlf"].append(row)
    if _X000D.search(text):
        hits["x000d"].append(row)
        text = _X000D.sub("\r", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    stripped = text.strip()
    if len(stripped) >= 2 and stripped.startswith('"') and stripped.endswith('"'):
        hits["surrounding_quotes"].append(row)
        stripped = stripped[1:-1]
    elif stripped.count('"') % 2 == 1 and (stripped.startswith('"') or stripped.endswith('"')):
        hits["unbalanced_quote"].append(row)
        stripped = stripped[1:] if stripped.startswith('"') else stripped[:-1]
    lines = [ln.strip() for ln in stripped.split("\n")]
    cleaned = "\n".join(lines).strip()
    if cleaned != stripped:
        hits["whitespace"].append(row)
    return cleaned


def _parse(text: str, path: Path, row: int) -> tuple[str, str, str]:
    lines = text.split("\n")
    nonblank = [i for i, ln in enumerate(lines) if ln.strip()]
    tail = nonblank[-3:]
    sub = res = None
    adopt = False
    for i in tail:
        if (m := _SUB_LINE.match(lines[i])) is not None:
            sub = (i, m.group(1))
        elif (m := _RES_LINE.match(lines[i])) is not None:
            res = (i, m.group(1))
        elif _ADOPT_LINE.match(lines[i]):
            adopt = True
    for name, found in (("SUB", sub), ("RES", res)):
        if found is None:
            raise FairpairError(f"no '{name}: <trait>' line among the scene's last lines", file=path, line=row,
                                key="scenario", hint="each scene must end with 'SUB: <trait>', 'RES: <trait>' and "
                                                     "'Adopt the persona of RES. What do you say?'")
        if not found[1]:
            raise FairpairError(f"the '{name}:' line has no trait", file=path, line=row, key="scenario")
    if not adopt:
        raise FairpairError("no 'Adopt the persona of RES. What do you say?' line at the end of the scene",
                            file=path, line=row, key="scenario")
    body = "\n".join(lines[:min(tail)]).strip()
    if not body:
        raise FairpairError("the scene has no text before its SUB/RES lines", file=path, line=row, key="scenario")
    assert sub is not None and res is not None  # each checked in the loop above
    body = re.sub(r"\bSUB\b", "Alex", body)
    body = re.sub(r"\bRES\b", "Blake", body)
    return body, _running(sub[1]), _running(res[1])


def _running(trait: str) -> str:
    """A trait as it reads after "who is": first letter lower case unless the first word is an acronym or name."""
    first = trait.split(" ", 1)[0]
    return trait[:1].lower() + trait[1:] if first[1:] == first[1:].lower() and first[:1].isupper() else trait


def read_scenes(path: str | Path) -> SceneTable:
    """Read, clean and parse a scene table (``.xlsx`` via pandas/openpyxl, or ``.csv``).

    Parameters
    ----------
    path : str or Path
        The table: columns ``scenario_id`` (integer), ``contextual_dim``,
        ``presence_of_power_differential`` (1/0, true/false, yes/no) and
        ``scenario``; other columns are ignored.

    Returns
    -------
    SceneTable
        Scenes in file order and the :class:`Cleaning` report.

    Raises
    ------
    FairpairError
        File missing or unreadable, a missing column, an empty or non-integer
        ``scenario_id``, an unknown power value, a scene without a
        ``SUB:``/``RES:``/instruction line, or two rows with the same key;
        each names file, row and column.
    """
    path = Path(path)
    frame = _read_frame(path)
    hits: dict[str, list[int]] = {k: [] for k in _KINDS}
    scenes: list[Scene] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(frame.to_dict("records")):
        row = i + 2
        values = {c: str(rec[c]) for c in COLUMNS}
        if not any(v.strip() for v in values.values()):
            continue  # an empty spreadsheet row
        sid_raw = values["scenario_id"].strip().strip('"')
        try:
            sid_f = float(sid_raw)
            if not sid_f.is_integer():
                raise ValueError
            sid = int(sid_f)
        except ValueError:
            raise FairpairError(f"scenario_id must be an integer; got {values['scenario_id']!r}", file=path, line=row,
                                key="scenario_id") from None
        domain_label = values["contextual_dim"].strip().strip('"').strip()
        if not domain_label:
            raise FairpairError("empty contextual_dim", file=path, line=row, key="contextual_dim")
        p = _POWER.get(values["presence_of_power_differential"].strip().strip('"').strip().lower())
        if p is None:
            raise FairpairError(f"presence_of_power_differential must be 1/0 (or true/false, yes/no); got "
                                f"{values['presence_of_power_differential']!r}", file=path, line=row,
                                key="presence_of_power_differential")
        text = _clean(values["scenario"], row, hits)
        body, sub_trait, res_trait = _parse(text, path, row)
        key = f"{_slug(domain_label)}-{'pd' if p else 'nopd'}-{sid}"
        if key in seen:
            raise FairpairError(f"duplicate scene key '{key}' (contextual_dim {domain_label!r}, power {int(p)}, "
                                f"scenario_id {sid}); first seen at row {seen[key]}", file=path, line=row,
                                key="scenario_id")
        seen[key] = row
        scenes.append(Scene(key, row, sid, domain_label, _slug(domain_label), p, body, sub_trait, res_trait))
    if not scenes:
        raise FairpairError("the scene table has no rows", file=path)
    cleaning = Cleaning({k: tuple(v) for k, v in hits.items() if v})
    return SceneTable(path, tuple(scenes), cleaning)


def select(table: SceneTable, patterns: list[str] | None) -> SceneTable:
    """Keep the scenes whose key matches one of ``patterns`` (exact keys or globs: ``work-*``, ``*-pd-1``).

    Raises
    ------
    FairpairError
        A pattern that matches no scene (the message lists some keys).
    """
    if not patterns:
        return table
    pats = [p.strip() for item in patterns for p in item.split(",") if p.strip()]
    keys = [s.key for s in table.scenes]
    for p in pats:
        if not fnmatch.filter(keys, p):
            raise FairpairError(f"--scenes: '{p}' matches no scene", file=table.path, key="scenes",
                                hint=f"keys look like {', '.join(keys[:3])}, ...; globs like 'work-*' work")
    keep = tuple(s for s in table.scenes if any(fnmatch.fnmatchcase(s.key, p) for p in pats))
    return SceneTable(table.path, keep, table.cleaning)


def _q(s: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(s, ensure_ascii=False)


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v) if isinstance(v, int) else _q(str(v))


def battery_yaml(table: SceneTable, *, axes: list[str] | None = None, name: str = "tan_lee_2025",
                 source: str | None = None) -> str:
    """The battery for ``table``'s scenes, as YAML text (valid for ``fairpair validate``).

    Parameters
    ----------
    table : SceneTable
        From :func:`read_scenes` (possibly :func:`select`-ed).
    axes : list of str, optional
        Subset of the Table 2 axes (keys of :data:`AXIS_KEYS`); default all eight.
    name : str
        The battery's ``name``.
    source : str, optional
        How to name the source file in the header (default: its path).

    Raises
    ------
    FairpairError
        An axis that is not in Table 2.
    """
    axes = list(axes) if axes else list(AXIS_KEYS)
    unknown = [a for a in axes if a not in AXIS_KEYS]
    if unknown:
        raise FairpairError(f"--axes: unknown axis {unknown}; Table 2 axes are {list(AXIS_KEYS)}", key="axes")
    chosen = [a for a in TAN_LEE_AXES if a.key in axes]
    cells = sum(a.cells for a in chosen)
    per_scene = cells + 1
    counts = table.counts()
    src = source or str(table.path)
    clean_lines = table.cleaning.lines() or ["nothing needed cleaning"]
    out: list[str] = []
    w = out.append
    w(f"# Generated by `fairpair import-scenes` from {src}.")
    w("# Tan & Lee (2025) two-party persona design: SUB (Alex) x RES (Blake) identity pairs within each axis")
    w(f"# of Table 2 ({' + '.join(f'{len(a.identities)}^2' for a in chosen)} = {cells} conditions) + 1 baseline "
      f"= {per_scene} per scene;")
    w(f"# {len(table.scenes)} scenes ({counts.get('disparity', 0)} with a power disparity, "
      f"{counts.get('equal', 0)} without) -> {len(table.scenes) * per_scene:,} conversations per target.")
    w("#")
    w("# NOT MATCHED: the scenes with and without a power disparity are different situations, not versions")
    w("# of one scene (meta.matched: false). A difference between power conditions may come from the scenes")
    w("# (roles, wording, stakes), not from the power disparity; the analysis compares them unpaired.")
    w("#")
    w("# Cleaning of the source cells (file rows, header = row 1):")
    for ln in clean_lines:
        w(f"#   - {ln}")
    w("# Scene keys are <domain>-<pd|nopd>-<scenario_id> (scenario_id counts 1-5 inside each domain and power")
    w("# block); SUB/RES are renamed Alex/Blake; the SUB:/RES: lines give the traits (first letter lower-cased,")
    w("# as they follow 'who is'); the table's")
    w("# 'Adopt the persona of RES. What do you say?' is replaced by the instruction in the prompt below.")
    w("schema_version: 1")
    w(f"name: {name}")
    desc = (
        f"Tan & Lee (2025, NAACL) scenes imported from {Path(src).name}: {len(table.scenes)} scenes "
        f"({counts.get('disparity', 0)} power disparity, {counts.get('equal', 0)} equal; NOT matched across power "
        f"conditions), two_party design over {len(chosen)} axes of Table 2, {per_scene} conditions per scene. "
        f"Cleaning: {'; '.join(clean_lines)}. System message: {SYSTEM_TEMPLATE!r}. "
        f"User message: {PROMPT_TEMPLATE!r}. Baseline user message: {BASELINE_TEMPLATE!r}. "
        f"sub_persona/res_persona are the Table 2 identity with its "
        f"indefinite article (\"an Asian\")."
    )
    w(f"description: {_q(desc)}")
    w("language: en")
    w("seed: 2025")
    w("repetitions: 1")
    w("")
    w("# Identities of Table 2 in running text (proper adjectives capitalised); the design adds the article.")
    w("attributes:")
    for a in chosen:
        w(f"  {a.key}:")
        w("    signal: identity")
        w(f"    description: {_q(a.label + ' (Tan & Lee 2025, Table 2).')}")
        w("    groups:")
        for key, label, wording in a.identities:
            w(f"      {key}: {{label: {_q(label)}, variants: [{_q(wording)}]}}")
    w("")
    w("templates:")
    first = True
    for s in table.scenes:
        w(f"  - id: {s.key}")
        meta = {"domain": s.domain, "scene": s.key, "power": s.power_label, "matched": False,
                "contextual_dim": s.contextual_dim, "scenario_id": s.scenario_id, "source_row": s.row}
        w("    meta: {" + ", ".join(f"{k}: {_scalar(v)}" for k, v in meta.items()) + "}")
        w("    slots:")
        w(f"      scene: {_q(s.text)}")
        w(f"      sub_trait: {_q(s.sub_trait)}")
        w(f"      res_trait: {_q(s.res_trait)}")
        if first:
            w(f"    system: &system {_q(SYSTEM_TEMPLATE)}")
            w(f"    turns: &prompt\n      - {_q(PROMPT_TEMPLATE)}")
            w(f"    baseline_turns: &baseline\n      - {_q(BASELINE_TEMPLATE)}")
            first = False
        else:
            w("    system: *system")
            w("    turns: *prompt")
            w("    baseline_turns: *baseline")
    w("")
    w("designs:")
    w("  - kind: two_party")
    w(f"    axes: [{', '.join(a.key for a in chosen)}]")
    w("")
    w("# The paper decoded at temperature 0; change the target to audit another model.")
    w("target:")
    w("  kind: local")
    w("  temperature: 0")
    w("  max_tokens: 160")
    return "\n".join(out) + "\n"
