"""YAML loading that remembers where every key came from.

PyYAML builds plain Python objects and forgets positions; fairpair needs to
point at ``file:line`` for every validation error. :func:`load_yaml` composes
the node tree, builds the objects itself and records, for every key path, the
file and 1-based line it came from. It also resolves ``!include PATH`` tags
(YAML files become data, any other file becomes text), rejects duplicate keys
(PyYAML keeps the last one silently) and detects include cycles.

Values as written. PyYAML implements YAML 1.1, whose implicit types change
text silently: ``02142`` and ``0777`` become the integers 2142 and 511,
``12:30`` becomes 750 (base 60), ``0x1F`` becomes 31, ``NO``/``off``/``yes``
become booleans and ``2021-03-14`` a date. A battery is mostly text for the
model (names, postal codes, CRM fields), so this loader resolves plain
(unquoted) scalars with the YAML 1.2 core schema
(https://yaml.org/spec/1.2.2/#103-core-schema) and then keeps a scalar as a
number, boolean or null **only when that value writes back to exactly the
text in the file**: ``7``, ``0.15``, ``-3``, ``true``, ``false``, ``null``
(and an empty value). Everything else stays the string the user wrote:
``02142``, ``0777``, ``12:30``, ``0x1F``, ``NO``, ``off``, ``yes``, ``~``,
``1e3``, ``.inf``, ``89.00``, ``True``. The schema then turns numbers into
text where it expects text (``coerce_numbers_to_str``) and text into numbers
where it expects numbers (``repetitions``, ``margin``, ``seed``), so a value
reaches the model exactly as written. Keys are always the text written.
Quoted scalars are always strings; explicit tags (``!!int 0777``) are honoured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fairpair.errors import BatteryError

__all__ = ["Located", "load_yaml", "load_mapping", "plain_scalar", "load_text_yaml", "read_capped", "MAX_FILE_BYTES"]

#: The largest file a battery reads (the battery, an include, a ``system_file`` or an ``!include``d
#: text): 8 MiB, hundreds of times a real battery or production prompt. Larger files, and anything
#: that is not a regular file (``/dev/zero``, a FIFO, a terminal), are refused before they are read.
MAX_FILE_BYTES = 8 * 1024 * 1024

Path_ = tuple[str | int, ...]


@dataclass
class Located:
    """Loaded data plus a map from key path to ``(file, line)``."""

    data: Any
    lines: dict[Path_, tuple[str, int]] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    #: the source text of every plain (unquoted) scalar, by key path (for "quote it" hints)
    texts: dict[Path_, str] = field(default_factory=dict)

    def where(self, path: Path_) -> tuple[str | None, int | None]:
        """Closest known position for ``path`` (walks up to the parents)."""
        p = tuple(path)
        while True:
            if p in self.lines:
                return self.lines[p]
            if not p:
                return (str(self.files[0]) if self.files else None, None)
            p = p[:-1]


class _Loader(yaml.SafeLoader):
    """SafeLoader without YAML 1.1's implicit types: every plain scalar composes as text.

    Only the merge key ``<<`` is still recognised (to refuse it with a clear message).
    """


_Loader.yaml_implicit_resolvers = {}
_Loader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])

_INT_12 = re.compile(r"[-+]?[0-9]+")
_FLOAT_12 = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")


def plain_scalar(text: str) -> str | int | float | bool | None:
    """The value of a plain YAML scalar, kept as text unless it writes back identically.

    ``"7"`` -> 7, ``"0.15"`` -> 0.15, ``"true"`` -> True, ``"null"`` or ``""``
    -> None; ``"02142"``, ``"0x1F"``, ``"12:30"``, ``"NO"``, ``"~"``,
    ``"1e3"``, ``".inf"``, ``"89.00"`` -> the same string (YAML 1.2 core
    schema, then the round-trip rule of the module docstring).
    """
    if text in ("", "null"):
        return None
    if text == "true":
        return True
    if text == "false":
        return False
    if _INT_12.fullmatch(text):
        value = int(text)
        return value if str(value) == text else text
    if _FLOAT_12.fullmatch(text):
        f = float(text)
        return f if repr(f) == text else text
    return text


class _TextLoader(yaml.SafeLoader):
    """For files fairpair ships (lexicons): every plain scalar is kept as its text."""


_TextLoader.yaml_implicit_resolvers = {}


def load_text_yaml(text: str) -> Any:
    """``yaml.safe_load`` with every scalar read as the string written (no implicit types)."""
    return yaml.load(text, Loader=_TextLoader)  # noqa: S506 - a SafeLoader subclass


def read_capped(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Raises
    ------
    OSError
        The file cannot be opened or read (``FileNotFoundError`` included).
    ValueError
        ``path`` is not a regular file (a device such as ``/dev/zero``, a FIFO, a socket), or it is
        larger than ``limit`` bytes; the message says which. A FIFO is opened without blocking, so
        the refusal is immediate.
    """
    import os
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or \
                stat.S_ISBLK(st.st_mode) else "not a regular file"
            raise ValueError(f"{path} is {what}, not a regular file")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path} is larger than {limit // (1024 * 1024)} MiB, the most a battery reads")
    return data


def _read(path: Path, stack: tuple[Path, ...], origin: tuple[str, int] | None) -> str:
    f: str | None
    line: int | None
    try:
        return read_capped(path).decode("utf-8")
    except ValueError as exc:
        if isinstance(exc, UnicodeDecodeError):
            line = exc.object[: exc.start].count(b"\n") + 1
            raise BatteryError(f"not valid UTF-8 ({exc.reason} at byte {exc.start}); save the file as UTF-8",
                               file=path, line=line) from None
        f, line = origin or (str(path), None)
        raise BatteryError(f"cannot read {path}: " + str(exc).replace(f"{path} ", "it ", 1), file=f,
                           line=line) from None
    except FileNotFoundError:
        f, line = origin or (None, None)
        raise BatteryError(f"file not found: {path}", file=f, line=line) from None
    except OSError as exc:
        f, line = origin or (None, None)
        raise BatteryError(f"cannot read {path}: {exc.strerror}", file=f, line=line) from None


def _compose(path: Path, text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or str(exc)
        raise BatteryError(f"unreadable YAML: {problem}", file=path, line=line) from None
    except yaml.YAMLError as exc:
        raise BatteryError(f"unreadable YAML: {exc}", file=path) from None


def load_yaml(path: str | Path, *, _stack: tuple[Path, ...] = (), _origin=None) -> Located:
    """Load a YAML file with positions and ``!include`` resolution.

    Raises
    ------
    BatteryError
        Unreadable file or YAML, duplicate key, include cycle, missing include.
    """
    path = Path(path)
    resolved = path.resolve()
    if resolved in _stack:
        chain = " -> ".join(p.name for p in (*_stack, resolved))
        f, line = _origin or (str(path), None)
        raise BatteryError(f"include cycle: {chain}", file=f, line=line, key="!include")
    text = _read(path, _stack, _origin)
    from fairpair.battery._bounds import check_bounds

    check_bounds(text, path)  # depth and alias expansion bounded before anything is built
    node = _compose(path, text)
    out = Located(data=None, files=[path])
    if node is None:
        out.data = None
        return out
    loader = _Loader("")
    out.data = _build(node, (), path, loader, out, (*_stack, resolved))
    return out


def load_mapping(path: str | Path, what: str, keys: str = "key: value") -> Located:
    """:func:`load_yaml` of a file that must hold a mapping: ``what`` names it in the errors ("an import
    battery", "a price table"), ``keys`` shows what the mapping holds.

    Raises
    ------
    BatteryError
        ``path`` is a directory, cannot be read or is no YAML mapping.
    """
    path = Path(path)
    if path.is_dir():
        raise BatteryError(f"is a directory; give {what}'s YAML file", file=path)
    located = load_yaml(path)
    if not isinstance(located.data, dict):
        raise BatteryError(f"{what} must be a YAML mapping ({keys})", file=path, line=1)
    return located


def _build(node: yaml.Node, at: Path_, file: Path, loader: _Loader, out: Located, stack) -> Any:
    line = node.start_mark.line + 1
    out.lines.setdefault(at, (str(file), line))
    if node.tag == "!include":
        if not isinstance(node, yaml.ScalarNode):
            raise BatteryError("!include takes a file path", file=file, line=line, key=_dotted(at))
        target = (file.parent / node.value).resolve()
        if target.suffix.lower() in (".yaml", ".yml"):
            sub = load_yaml(target, _stack=stack, _origin=(str(file), line))
            for p, pos in sub.lines.items():
                out.lines.setdefault(at + p, pos)
            for p, txt in sub.texts.items():
                out.texts.setdefault(at + p, txt)
            out.files.extend(sub.files)
            return sub.data
        if target in stack:
            raise BatteryError(f"include cycle at {target.name}", file=file, line=line, key=_dotted(at))
        out.files.append(target)
        return _read(target, stack, (str(file), line))
    if isinstance(node, yaml.MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise BatteryError("YAML merge keys (<<) are not supported; use !include",
                                   file=file, line=key_node.start_mark.line + 1, key=_dotted(at))
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag == "tag:yaml.org,2002:str":
                key = key_node.value  # a key is always the text written
            else:
                key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)):
                raise BatteryError("mapping keys must be plain scalars", file=file,
                                   line=key_node.start_mark.line + 1, key=_dotted(at))
            key = str(key) if not isinstance(key, str) else key
            if key in result:
                raise BatteryError(f"duplicate key '{key}'", file=file,
                                   line=key_node.start_mark.line + 1, key=_dotted((*at, key)))
            out.lines[(*at, key)] = (str(file), key_node.start_mark.line + 1)
            result[key] = _build(value_node, (*at, key), file, loader, out, stack)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_build(v, (*at, i), file, loader, out, stack) for i, v in enumerate(node.value)]
    if node.tag == "tag:yaml.org,2002:str" and node.style is None:  # plain: YAML 1.2, as written
        out.texts[at] = node.value
        return plain_scalar(node.value)
    try:
        return loader.construct_object(node, deep=True)
    except yaml.constructor.ConstructorError as exc:
        raise BatteryError(f"unsupported YAML value: {exc.problem}", file=file, line=line,
                           key=_dotted(at)) from None


def _dotted(path: Path_) -> str:
    parts: list[str] = []
    for p in path:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            parts.append(("." if parts else "") + (str(p) if p != "" else "''"))  # an empty key, visibly
    return "".join(parts)
