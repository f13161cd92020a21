"""The package boundaries issue 15 asks for, counted on the source tree.

A module of one package (``fairpair.run``) may import another package's public
names (``from fairpair.store import Run``) but, apart from a short list of
documented exceptions, not its private modules (``from fairpair.store._sqlite
import ...``): a package's ``__init__`` is its interface.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import fairpair

SRC = Path(fairpair.__file__).parent
PRIVATE = re.compile(r"fairpair\.([a-z_]+)\.(_[a-z_0-9]+)")
#: Issue 15's "done when": fewer than 10 imports of another package's private modules.
LIMIT = 10


def _package(path: Path) -> str:
    rel = path.relative_to(SRC).parts
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


def cross_package_private_imports() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                m = PRIVATE.fullmatch(node.module)
                if m and m.group(1) != _package(path):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} from {node.module} import "
                                 + ", ".join(a.name for a in node.names))
    return found


def test_fewer_than_ten_cross_package_private_imports():
    found = cross_package_private_imports()
    assert len(found) < LIMIT, "\n".join(found)


def test_every_lazy_export_resolves():
    import importlib

    for pkg in sorted(p.parent.name for p in SRC.glob("*/__init__.py")):
        mod = importlib.import_module(f"fairpair.{pkg}")
        for name in getattr(mod, "_LAZY_EXPORTS", {}):
            assert getattr(mod, name) is not None, f"fairpair.{pkg}.{name}"


def test_counter_sees_a_private_import(tmp_path):
    # the counter itself: a private import of another package is found, one of its own package is not
    assert PRIVATE.fullmatch("fairpair.store._sqlite")
    assert not PRIVATE.fullmatch("fairpair.store")
    assert _package(SRC / "run" / "_runner.py") == "run"
    assert _package(SRC / "pipeline.py") == "pipeline"
