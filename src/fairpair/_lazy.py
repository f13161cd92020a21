"""Lazy package exports: a package's ``__getattr__`` that imports a name from its module on first use."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, table: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The module-level ``__getattr__`` of ``package`` for ``table`` (public name -> module path).

    The value is cached in ``namespace`` (the package's ``globals()``) after the first lookup.
    Raises AttributeError for a name not in ``table``.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
