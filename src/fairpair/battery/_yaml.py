"""YAML loading that remembers where every key came from.

PyYAML builds plain Python objects and forgets positions; fairpair needs to
point at ``file:line`` for every validation error. :func:`load_yaml` composes
the node tree, builds the objects itself and records, for every key path, the
file and 1-based line it came from. It also resolves ``!include PATH`` tags
(YAML files become data, any other file becomes text), rejects duplicate keys
(PyYAML keeps the last one silently) and detects include cycles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fairpair.errors import BatteryError

__all__ = ["Located", "load_yaml"]

Path_ = tuple[str | int, ...]


@dataclass
class Located:
    """Loaded data plus a map from key path to ``(file, line)``."""

    data: Any
    lines: dict[Path_, tuple[str, int]] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

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
    pass


def _read(path: Path, stack: tuple[Path, ...], origin: tuple[str, int] | None) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        f, line = origin or (None, None)
        raise BatteryError(f"file not found: {path}", file=f, line=line) from None
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise BatteryError(f"not valid UTF-8 ({exc.reason} at byte {exc.start}); save the file as UTF-8",
                           file=path, line=line) from None
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
            parts.append(("." if parts else "") + str(p))
    return "".join(parts)
