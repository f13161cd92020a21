"""Built-in lexicons: first names that signal a group, each list with its source.

Lists live in ``lexicons/*.yaml`` beside this module. Each file has a
``source`` (where the names come from), a ``caveat`` and ``lists`` keyed by
``lang/group/gender`` (e.g. ``es/maghreb/female``). A battery group uses one
with ``lexicon: es/maghreb/female`` and ``take: 3``.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from fairpair.battery._yaml import load_text_yaml

__all__ = ["lexicon_names", "load_lexicon", "lexicon_source", "all_lexicons"]


@cache
def all_lexicons() -> dict[str, dict[str, Any]]:
    """``{list name: {"names": [...], "source": str, "caveat": str, "file": str, "label": {language: str}}}``;
    ``label`` is the group's name in a report sentence ("Users with Spanish female names..."), by language."""
    out: dict[str, dict[str, Any]] = {}
    root = resources.files("fairpair.battery") / "lexicons"
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".yaml"):
            continue
        doc = load_text_yaml(entry.read_text(encoding="utf-8"))  # names as written
        for name, spec in doc["lists"].items():
            out[name] = {"names": list(spec["names"]), "source": spec.get("source", doc["source"]),
                         "caveat": doc.get("caveat", ""), "file": entry.name, "label": dict(spec.get("label") or {})}
    return out


def lexicon_names() -> list[str]:
    return sorted(all_lexicons())


def load_lexicon(name: str) -> list[str]:
    """The names of one list, in their documented order. Raises KeyError if unknown."""
    return list(all_lexicons()[name]["names"])


def lexicon_source(name: str) -> str:
    return all_lexicons()[name]["source"]
