"""Bounds on a YAML document checked before it is built: nesting depth and expanded size.

A YAML alias repeats its anchor's whole subtree, so a few lines of nested
aliases (the "billion laughs" bomb) expand to billions of nodes, and a deeply
nested document overflows a recursive builder. :func:`check_bounds` reads the
parser's event stream (PyYAML's parser keeps its own stack, it does not recurse),
counts the depth and the size every node would have once aliases are expanded,
and stops at :data:`MAX_DEPTH` or :data:`MAX_NODES` before anything is built.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from fairpair.errors import BatteryError

__all__ = ["MAX_DEPTH", "MAX_NODES", "check_bounds"]

#: Deepest nesting of mappings and sequences accepted (a real battery uses under 10).
MAX_DEPTH = 64
#: Most nodes the document may have with every alias expanded (a 1,200-case battery has a few thousand).
MAX_NODES = 1_000_000


def check_bounds(text: str, path: str | Path, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> None:
    """Raise :class:`BatteryError` (file and line) when ``text`` nests deeper than ``max_depth`` or
    expands (aliases included) to more than ``max_nodes`` nodes. YAML syntax errors are left to the
    loader, which reports them with their line."""
    sizes: dict[str, int] = {}  # anchor -> expanded size of its node
    stack: list[list] = [[None, 0]]  # open collections: [anchor, size so far]
    total = 0
    try:
        for ev in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                stack.append([ev.anchor, 1])
                if len(stack) - 1 > max_depth:
                    raise BatteryError(f"the YAML nests deeper than {max_depth} levels", file=str(path),
                                       line=ev.start_mark.line + 1)
                continue
            if isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                anchor, size = stack.pop()
            elif isinstance(ev, yaml.ScalarEvent):
                anchor, size = ev.anchor, 1
            elif isinstance(ev, yaml.AliasEvent):
                anchor, size = None, sizes.get(ev.anchor, 1)
            else:
                continue
            if anchor is not None:
                sizes[anchor] = size
            stack[-1][1] += size
            total = stack[0][1]
            if total > max_nodes or size > max_nodes:
                raise BatteryError(f"the YAML expands to more than {max_nodes:,} values (its aliases repeat "
                                   "whole subtrees); write the values out or use !include",
                                   file=str(path), line=ev.start_mark.line + 1)
    except yaml.YAMLError:
        return
