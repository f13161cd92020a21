"""Readers of answer files: interchange JSONL and CSV, and OpenAI chat-completion records.

Every reader yields :class:`Located` rows or :class:`RowProblem` records (file,
1-based line, key, message): nothing is skipped silently and the import
decides, after reading everything, whether it can go ahead.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fairpair.errors import FairpairError
from fairpair.importers._format import (
    CSV_COLUMNS,
    CSV_JSON_COLUMNS,
    CSV_PREFIXES,
    AnswerRow,
    FieldRef,
    RecordsMapping,
)

__all__ = ["Located", "RowProblem", "Source", "read_rows", "read_text", "FORMATS"]

#: ``--format`` values: ``auto`` picks by extension (``.jsonl``/``.ndjson`` interchange rows,
#: ``.csv``), or ``chat-completions`` when the battery has a ``records`` mapping.
FORMATS = ("auto", "jsonl", "csv", "chat-completions")


@dataclass(frozen=True)
class Located:
    """A valid row and where it came from (``line`` 1-based; ``key`` names an item inside a JSON list)."""

    file: Path
    line: int | None
    row: AnswerRow
    item: str | None = None


@dataclass(frozen=True)
class RowProblem:
    """A row that cannot be imported: where (file, line, key) and why."""

    file: Path
    line: int | None
    key: str | None
    message: str
    hint: str | None = None

    def error(self) -> FairpairError:
        return FairpairError(self.message, file=self.file, line=self.line, key=self.key, hint=self.hint)


@dataclass(frozen=True)
class Source:
    """One file read: its path, SHA-256 (hex) and the rows it held."""

    path: Path
    sha256: str
    rows: int


def _problem_from_validation(exc: ValidationError, file: Path, line: int | None, *, csv_names: bool = False,
                             prefix: str = "") -> RowProblem:
    """The first problem of a row's validation error, with the key as the file spells it."""
    errs = exc.errors()
    err = errs[0]
    loc = [p for p in err["loc"]]
    if err["type"] == "json_invalid":
        return RowProblem(file, line, None, f"not valid JSON: {err.get('ctx', {}).get('error', err['msg'])}")
    if loc and loc[0] == "measures" and len(loc) > 2:  # the union member pydantic tried (bool, int, float)
        loc = loc[:2]  # NaN or infinity: the float member's error says what is wrong
        err = next((e for e in errs if e["loc"][:2] == err["loc"][:2] and e["type"] == "finite_number"), err)
    key = ".".join(str(p) for p in loc) or None
    if csv_names and loc and loc[0] in ("groups", "variants", "measures") and len(loc) > 1:
        key = {"groups": "group.", "variants": "variant.", "measures": "measure."}[loc[0]] + str(loc[1])
    if prefix:
        key = f"{prefix}.{key}" if key else prefix
    msg = err["msg"].removeprefix("Value error, ")
    hint = None
    if err["type"] == "extra_forbidden":
        bad = str(loc[-1])
        msg = f"unknown key '{bad}'"
        fields = list(AnswerRow.model_fields) if len(loc) == 1 else []
        close = difflib.get_close_matches(bad, fields, n=1)
        hint = f"did you mean '{close[0]}'?" if close else (f"allowed keys: {', '.join(fields)}" if fields else None)
    elif err["type"] == "missing":
        msg = f"missing required key '{loc[-1]}'"
    elif err["type"] == "string_pattern_mismatch":
        msg = (f"{err.get('input')!r} is not a valid id: use letters, digits, '_', '.' and '-' (no spaces), "
               "starting with a letter, digit or '_'")
    elif err.get("input") is not None and not isinstance(err.get("input"), (dict, list)):
        msg += f" (got {err['input']!r:.60})"
    # the members of a measure's union (bool, int, float) each fail on one value: one problem
    more = len({tuple(e["loc"][:2]) if e["loc"][:1] == ("measures",) else tuple(e["loc"]) for e in errs}) - 1
    if more:
        hint = (hint + "; " if hint else "") + f"{more} more problem(s) in this row"
    return RowProblem(file, line, key, msg, hint)


def read_text(path: Path) -> tuple[str, str]:
    """``(text, sha256 of the bytes)`` of a UTF-8 file (a BOM is dropped): the hash is of exactly what is
    imported. A byte that is not UTF-8 is an error naming its line."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FairpairError("file not found", file=path) from None
    except IsADirectoryError:
        raise FairpairError("is a directory; give a file (a folder is read only with --format chat-completions)",
                            file=path) from None
    except OSError as exc:
        raise FairpairError(f"cannot read: {exc.strerror}", file=path) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FairpairError(f"not valid UTF-8 ({exc.reason} at byte {exc.start}); save the file as UTF-8",
                            file=path, line=line) from None
    return text, hashlib.sha256(data).hexdigest()


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Numbered lines, split at ``\\n`` only (JSON text may hold U+2028 and other Unicode line breaks)."""
    for i, ln in enumerate(text.split("\n"), 1):
        yield i, ln.removesuffix("\r")


# ---------------------------------------------------------------- interchange JSONL


def read_jsonl(path: Path, text: str) -> Iterator[Located | RowProblem]:
    """Rows of an interchange JSONL file's ``text`` (one JSON object per line; blank lines are allowed)."""
    for line, ln in _lines(text):
        if not ln.strip():
            continue
        try:
            row = AnswerRow.model_validate_json(ln, strict=True)
        except ValidationError as exc:
            yield _problem_from_validation(exc, path, line)
            continue
        twice = _key_twice(ln)
        if twice is not None:  # the JSON parser keeps the last value and drops the first without a word
            yield RowProblem(path, line, twice, f"key '{twice}' appears twice in one object; give it once")
            continue
        yield Located(path, line, row)


def _key_twice(text: str) -> str | None:
    """The first key that appears twice in one JSON object of ``text`` (at any depth), or None."""
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        if not found:
            found.extend(k for i, k in enumerate(keys) if k in keys[:i])
        return dict(items)

    try:
        json.loads(text, object_pairs_hook=pairs)
    except ValueError:  # pydantic read it: what json cannot read is left to it
        return None
    return found[0] if found else None


# ---------------------------------------------------------------- interchange CSV


def _cell_value(cell: str) -> bool | int | float:
    """A measure cell: ``true``/``false`` (any case) or a number."""
    low = cell.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(low)
    except ValueError:
        pass
    try:
        f = float(low)
    except ValueError:
        raise ValueError(f"not true, false or a number: {cell!r:.40}") from None
    if f != f or f in (float("inf"), float("-inf")):
        raise ValueError(f"not a finite number: {cell!r:.40}")
    return f


def read_csv(path: Path, text: str) -> Iterator[Located | RowProblem]:
    """Rows of an interchange CSV file's ``text`` (header row first; an empty cell is an absent value)."""
    fh = io.StringIO(text, newline="")
    with fh:
        try:
            reader = csv.reader(fh)
            header = next(reader, None)
        except csv.Error as exc:
            raise FairpairError(f"unreadable CSV: {exc}", file=path, line=1) from None
        if header is None:
            raise FairpairError("empty file: expected a header row", file=path, line=1)
        header = [h.strip() for h in header]
        known = list(CSV_COLUMNS)
        for h in header:
            if h in known or any(h.startswith(p) and len(h) > len(p) for p in CSV_PREFIXES):
                continue
            close = difflib.get_close_matches(h, known + ["group.<attribute>", "variant.<attribute>",
                                                          "measure.<measure>"], n=1)
            raise FairpairError(f"unknown column '{h}'", file=path, line=1, key=h,
                                hint=f"did you mean '{close[0]}'?" if close else
                                f"columns: {', '.join(known)}, group.<attribute>, variant.<attribute>, "
                                "measure.<measure>")
        dup = sorted({h for h in header if header.count(h) > 1})
        if dup:
            raise FairpairError(f"column '{dup[0]}' appears twice", file=path, line=1, key=dup[0])
        for need in (("set",), ("template",), ("prompt", "messages", "ranking"), ("answer", "error")):
            if not any(h in header for h in need):  # else every row would fail on it, one by one
                raise FairpairError(f"no '{need[0]}' column" + (f" (nor '{need[1]}')" if len(need) > 1 else "")
                                    + "; every row needs one", file=path, line=1, key=need[0],
                                    hint="`fairpair answers-schema` lists the columns")
        prev_end = 1
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise FairpairError(f"unreadable CSV: {exc}", file=path, line=reader.line_num) from None
            line = prev_end + 1
            prev_end = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                yield RowProblem(path, line, None, f"{len(cells)} cells where the header has {len(header)} columns")
                continue
            data: dict[str, Any] = {}
            bad: RowProblem | None = None
            for h, cell in zip(header, cells, strict=True):
                if cell == "":
                    continue
                prefix = next((p for p in CSV_PREFIXES if h.startswith(p)), None)
                if prefix is not None:
                    field = CSV_PREFIXES[prefix]
                    name = h[len(prefix):]
                    if field == "measures":
                        try:
                            data.setdefault(field, {})[name] = _cell_value(cell)
                        except ValueError as exc:
                            bad = RowProblem(path, line, h, str(exc))
                            break
                    else:
                        data.setdefault(field, {})[name] = cell
                elif h in CSV_JSON_COLUMNS:
                    try:
                        data[h] = json.loads(cell)
                    except ValueError as exc:
                        bad = RowProblem(path, line, h, f"not valid JSON: {exc}")
                        break
                else:
                    data[h] = cell
            if bad is not None:
                yield bad
                continue
            try:
                row = AnswerRow.model_validate(data)
            except ValidationError as exc:
                yield _problem_from_validation(exc, path, line, csv_names=True)
                continue
            yield Located(path, line, row)


# ---------------------------------------------------------------- chat-completion records


def _compile(expr: str):
    from jsonpath_ng.ext import parse

    return parse(expr)


class _Mapping:
    """A :class:`RecordsMapping` with its JSONPaths compiled (errors name the mapping key)."""

    def __init__(self, mapping: RecordsMapping, where):
        self.m = mapping
        self.paths: dict[str, Any] = {}
        self.where = where  # key path -> (file, line) of the battery
        for key, ref in self._refs():
            expr = ref.path if isinstance(ref, FieldRef) else ref
            try:
                self.paths[key] = _compile(expr)
            except Exception as exc:  # noqa: BLE001 - jsonpath-ng raises bare Exception too
                file, line = where(("records", *key.split(".")))
                raise FairpairError(f"not a valid JSONPath: {expr!r} ({exc})", file=file, line=line,
                                    key=f"records.{key}", hint="e.g. $.metadata.group") from None

    def _refs(self) -> Iterator[tuple[str, Any]]:
        m = self.m
        yield "completion", m.completion
        for k in ("messages", "set", "template", "repetition", "design", "target", "error"):
            ref = getattr(m, k)
            if ref is not None:
                yield k, ref
        for block in ("groups", "variants", "measures"):
            for name, ref in getattr(m, block).items():
                yield f"{block}.{name}", ref

    def ref(self, key: str):
        block, _, name = key.partition(".")
        return getattr(self.m, block)[name] if name else getattr(self.m, block)

    def get(self, record: Any, key: str, *, required: bool = True) -> tuple[bool, Any]:
        """``(found, value)`` of the mapping ``key`` in ``record``; ValueError says why when it cannot."""
        matches = self.paths[key].find(record)
        ref = self.ref(key)
        expr = ref.path if isinstance(ref, FieldRef) else ref
        if not matches:
            if required:
                raise ValueError(f"nothing at {expr} (records.{key})")
            return False, None
        value = matches[0].value
        if isinstance(ref, FieldRef) and ref.pattern is not None:
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise ValueError(f"the value at {expr} is a {type(value).__name__}, not text to match "
                                 f"(records.{key}.pattern)")
            m = re.search(ref.pattern, str(value))
            if m is None:
                raise ValueError(f"{str(value)!r:.60} at {expr} does not match {ref.pattern!r} "
                                 f"(records.{key}.pattern)")
            value = m.group(1) if m.groups() else m.group(0)
        return True, value


def _text_content(content: Any) -> str:
    """A message's content as text: a string, or the ``text`` parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str):
                parts.append(p["text"])
            else:
                kind = p.get("type") if isinstance(p, dict) else type(p).__name__
                raise ValueError(f"a content part of type {kind!r} (only text parts can be imported)")
        return "".join(parts)
    raise ValueError(f"message content is a {type(content).__name__}, not text")


def _scalar(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{what} is a {type(value).__name__} ({json.dumps(value, default=str)[:60]}), "
                         "not text or a number")
    return str(value)


def _record_row(rec: Any, mp: _Mapping) -> dict[str, Any]:
    """The interchange row (as a dict) of one chat-completion record; ValueError says what is wrong."""
    if not isinstance(rec, dict):
        raise ValueError(f"a record must be a JSON object, not {type(rec).__name__}")
    row: dict[str, Any] = {}
    for k in ("set", "template"):
        row[k] = _scalar(mp.get(rec, k)[1], k)
    for k in ("design", "target"):
        if getattr(mp.m, k) is not None:
            row[k] = _scalar(mp.get(rec, k)[1], k)
    if mp.m.repetition is not None:
        rep = mp.get(rec, "repetition")[1]
        text = _scalar(rep, "the repetition")
        if not re.fullmatch(r"\d+", text.strip()):
            raise ValueError(f"repetition {rep!r:.40} is not a whole number >= 0")
        row["repetition"] = int(text)
    row["groups"] = {a: _scalar(mp.get(rec, f"groups.{a}")[1], f"the group of '{a}'") for a in mp.m.groups}
    row["variants"] = {a: _scalar(mp.get(rec, f"variants.{a}")[1], f"the variant of '{a}'") for a in mp.m.variants}
    measures = {}
    for name in mp.m.measures:
        found, v = mp.get(rec, f"measures.{name}", required=False)
        if found:
            if isinstance(v, bool) or v is None or isinstance(v, (int, float)):
                measures[name] = v
            else:
                raise ValueError(f"measure '{name}' is a {type(v).__name__}, not true, false, null or a number")
    if measures:
        row["measures"] = measures
    messages = mp.get(rec, "messages")[1]
    if not isinstance(messages, list):
        raise ValueError(f"the messages (records.messages) are a {type(messages).__name__}, not a list")
    msgs = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m:
            raise ValueError(f"message {i} has no 'role'")
        if m["role"] in ("tool", "function") or (m["role"] == "assistant" and m.get("tool_calls")):
            raise ValueError(f"message {i} is a tool exchange ({m['role']}); only system, user and assistant "
                             "text messages can be imported")
        if m["role"] == "developer":  # OpenAI's newer name for the system prompt
            m = {**m, "role": "system"}
        msgs.append({"role": m["role"], "content": _text_content(m.get("content"))})
    row["messages"] = msgs
    if mp.m.error is not None:
        found, err = mp.get(rec, "error", required=False)
        if found and err not in (None, "", {}):
            row["error"] = err if isinstance(err, str) else json.dumps(err, ensure_ascii=False, sort_keys=True)
            return row
    comp = mp.get(rec, "completion")[1]
    if not isinstance(comp, dict) or not isinstance(comp.get("choices"), list) or not comp["choices"]:
        raise ValueError("no chat completion with 'choices' at records.completion "
                         f"({mp.m.completion}); is it the right path?")
    choice = comp["choices"][0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ValueError("choices[0] has no 'message'")
    row["answer"] = _text_content(message.get("content"))
    calls = []
    for c in message.get("tool_calls") or []:
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ValueError("a tool call without function.name")
        args = fn.get("arguments") or {}
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                args = {"_raw": args}
        calls.append({"name": fn["name"], "arguments": args if isinstance(args, dict) else {"_value": args},
                      "id": c.get("id")})
    if calls:
        row["tool_calls"] = calls
    if choice.get("finish_reason") is not None:
        row["finish_reason"] = str(choice["finish_reason"])
    if isinstance(comp.get("model"), str):
        row["model"] = comp["model"]
    if isinstance(comp.get("system_fingerprint"), str):
        row["system_fingerprint"] = comp["system_fingerprint"]
    created = comp.get("created")
    if isinstance(created, (int, float)) and not isinstance(created, bool):
        row["timestamp"] = datetime.fromtimestamp(created, tz=UTC)
    usage = comp.get("usage")
    if isinstance(usage, dict):
        for k in ("prompt_tokens", "completion_tokens"):
            if isinstance(usage.get(k), int):
                row[k] = usage[k]
    return row


def _records(path: Path, text: str) -> Iterator[tuple[int | None, str | None, Any] | RowProblem]:
    """``(line, item, record)`` of a ``.jsonl`` (one per line) or ``.json`` file (an object or a list)."""
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        for line, ln in _lines(text):
            if not ln.strip():
                continue
            try:
                yield line, None, json.loads(ln)
            except ValueError as exc:
                yield RowProblem(path, line, None, f"not valid JSON: {exc}")
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        yield RowProblem(path, exc.lineno, None, f"not valid JSON: {exc.msg}")
        return
    if isinstance(data, list):
        for i, rec in enumerate(data):
            yield None, f"[{i}]", rec
    else:
        yield 1, None, data


def read_records(path: Path, text: str, mapping: RecordsMapping, where) -> Iterator[Located | RowProblem]:
    """Rows of one chat-completion record file (``.json``: one record or a list; ``.jsonl``: one per line)."""
    mp = _Mapping(mapping, where)
    for item in _records(path, text):
        if isinstance(item, RowProblem):
            yield item
            continue
        line, key, rec = item
        try:
            data = _record_row(rec, mp)
        except ValueError as exc:
            yield RowProblem(path, line, key, str(exc))
            continue
        try:
            row = AnswerRow.model_validate(data)
        except ValidationError as exc:
            yield _problem_from_validation(exc, path, line, prefix=key or "")
            continue
        yield Located(path, line, row, key)


def record_files(path: Path) -> list[Path]:
    """The record files of ``path``: itself, or the ``*.json`` / ``*.jsonl`` files of a folder (sorted)."""
    if not path.exists():
        raise FairpairError("not found", file=path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in (".json", ".jsonl", ".ndjson"))
        if not files:
            raise FairpairError("this folder holds no .json or .jsonl files", file=path)
        return files
    return [path]


def read_rows(path: Path, fmt: str, mapping: RecordsMapping | None, where) -> tuple[
        list[Located | RowProblem], list[Source]]:
    """Every row (or problem) of ``path`` in ``fmt`` (resolved: not ``auto``) and the files read."""
    items: list[Located | RowProblem] = []
    sources: list[Source] = []
    files = record_files(path) if fmt == "chat-completions" else [path]
    for f in files:
        text, sha = read_text(f)
        if fmt == "jsonl":
            rows = read_jsonl(f, text)
        elif fmt == "csv":
            rows = read_csv(f, text)
        else:
            assert mapping is not None
            rows = read_records(f, text, mapping, where)
        n = len(items)
        items.extend(rows)
        sources.append(Source(f, sha, len(items) - n))
    return items, sources
