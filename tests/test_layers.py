"""The floors of fairpair (issue 27): a module imports only its own floor's packages and the floors
below it, never one above, at module level, inside a function or under TYPE_CHECKING; and every
name imported from another package is in that package's ``__all__``.

The order is written once, in ``pyproject.toml`` (``[tool.importlinter]``, checked by
``lint-imports`` in ``.ci/run``). This test reads it from there and also sees what import-linter
cannot: the module paths written as strings (``_LAZY_EXPORTS``, ``_LAZY``, a constant given to
``importlib.import_module``). The plugin registry (``fairpair._plugins``) names plugins by entry
point, which are higher floors by design, and is not a lower floor importing a higher one.
"""

from __future__ import annotations

import ast
import importlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

import fairpair

SRC = Path(fairpair.__file__).parent
PYPROJECT = SRC.parents[1] / "pyproject.toml"
#: Imports across floors that are known and not yet removed, with the reason (keep this short).
KNOWN: set[tuple[str, str]] = set()  # no exception: the pytest plugin lives on the top floor (fairpair.testing)


def floors() -> list[list[str]]:
    """The contract's layers, top first, each a list of top-level names (``cli``, ``_calls``...)."""
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [[p.strip() for p in layer.replace(":", "|").split("|")] for layer in contract["layers"]]


def independent(layer: str) -> bool:
    return "|" in layer


@dataclass(frozen=True)
class Ref:
    source: str  # the importing module, e.g. fairpair.store._run
    line: int
    target: str  # the module (or package) named, e.g. fairpair.analysis
    names: tuple[str, ...] = ()  # for ``from X import a, b``
    how: str = "import"


def _module_name(path: Path) -> str:
    parts = ("fairpair", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _string_modules(node: ast.AST) -> list[tuple[int, str]]:
    """Module paths written as strings: the values of a ``_LAZY_EXPORTS`` / ``_LAZY`` dict, and a constant
    (or the constant head of an f-string) given to ``import_module``."""
    out: list[tuple[int, str]] = []
    for n in ast.walk(node):
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if names & {"_LAZY_EXPORTS", "_LAZY"} and isinstance(n.value, ast.Dict):
                for v in n.value.values:
                    if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.startswith("fairpair"):
                        out.append((n.lineno, v.value.split(":")[0]))
        if isinstance(n, ast.Call) and n.args:
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name == "import_module":
                a = n.args[0]
                if isinstance(a, ast.JoinedStr) and a.values and isinstance(a.values[0], ast.Constant):
                    a = a.values[0]
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("fairpair"):
                    out.append((n.lineno, a.value.rstrip(".")))
    return out


def references(path: Path) -> list[Ref]:
    """Every fairpair module ``path`` names: imports anywhere in the file, and module strings."""
    source = _module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    out: list[Ref] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [Ref(source, node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "fairpair"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = source.split(".")
                base = base[:len(base) - node.level + (1 if is_pkg else 0)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module.split(".")[0] != "fairpair":
                continue
            names = tuple(a.name for a in node.names)
            if module == "fairpair":  # ``from fairpair import pipeline`` names a module
                out += [Ref(source, node.lineno, f"fairpair.{n}") for n in names
                        if (SRC / n).is_dir() or (SRC / f"{n}.py").exists()]
            else:
                out.append(Ref(source, node.lineno, module, names, "from"))
    out += [Ref(source, line, m, how="string") for line, m in _string_modules(tree)]
    return out


def _top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def all_references() -> list[Ref]:
    return [r for p in sorted(SRC.rglob("*.py")) for r in references(p)]


def layer_violations(refs: list[Ref] | None = None) -> list[str]:
    layers = floors()
    rank = {name: i for i, layer in enumerate(layers) for name in layer}  # 0 = top
    with_siblings = {name: layer for layer in layers for name in layer}
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    raw = {name: layer for c in config if c["type"] == "layers" for layer in c["layers"]
           for name in (p.strip() for p in layer.replace(":", "|").split("|"))}
    out = []
    for r in refs if refs is not None else all_references():
        here, there = _top(r.source), _top(r.target)
        if here is None or there is None or here == there or (r.source, there) in KNOWN:
            continue
        assert here in rank, f"{r.source} is on no floor of pyproject.toml's layers contract"
        assert there in rank, f"{r.target} ({r.source}:{r.line}) is on no floor of the layers contract"
        if rank[there] < rank[here]:
            out.append(f"{r.source}:{r.line} {here} -> {there} ({r.how} {r.target})")
        elif rank[there] == rank[here] and independent(raw[here]) and there in with_siblings[here]:
            out.append(f"{r.source}:{r.line} {here} -> {there}: independent floors ({r.how} {r.target})")
    return out


def names_not_in_all(refs: list[Ref] | None = None) -> list[str]:
    """``from fairpair.X import name`` in another package where ``name`` is not in ``fairpair.X.__all__``
    (nor a submodule of it); private modules (``fairpair.X._y``) are counted by test_architecture.py."""
    out = []
    for r in refs if refs is not None else all_references():
        here, there = _top(r.source), _top(r.target)
        if r.how != "from" or here is None or there is None or here == there:
            continue
        if any(part.startswith("_") for part in r.target.split(".")[2:]):
            continue  # a private module: tests/test_architecture.py counts those
        mod = importlib.import_module(r.target)
        public = set(getattr(mod, "__all__", ()))
        for n in r.names:
            if n == "*" or n in public:
                continue
            if importlib.util.find_spec(f"{r.target}.{n}") if hasattr(mod, "__path__") else False:
                continue  # a submodule
            out.append(f"{r.source}:{r.line} from {r.target} import {n}")
    return out


def test_no_floor_imports_a_floor_above_it():
    found = layer_violations()
    assert found == [], "\n".join(found)


def test_every_name_imported_across_packages_is_public():
    found = names_not_in_all()
    assert found == [], "\n".join(found)


def test_records_import_nothing_else_of_fairpair():
    refs = [r for p in sorted((SRC / "records").rglob("*.py")) for r in references(p)]
    assert [r for r in refs if _top(r.target) != "records"] == []


def test_every_package_is_on_a_floor():
    on_floor = {name for layer in floors() for name in layer}
    packages = {p.parent.name for p in SRC.glob("*/__init__.py")} | {p.stem for p in SRC.glob("*.py")} - {"__init__"}
    assert packages - on_floor == set()


def test_the_scan_sees_function_level_imports_and_strings(tmp_path):
    # the checker itself: an import inside a function and a module string count, a sibling's too
    probe = SRC / "store" / "_run.py"
    refs = [Ref("fairpair.store._run", 1, "fairpair.analysis", ("Results",), "from"),
            Ref("fairpair.store._run", 2, "fairpair.measures._runner", how="string"),
            Ref("fairpair.analysis._x", 3, "fairpair.importers", ("x",), "from"),
            Ref("fairpair.cli._x", 4, "fairpair.store", ("Run",), "from")]
    found = layer_violations(refs)
    assert [f.split(" ")[1] for f in found] == ["store", "store", "analysis"]
    assert "independent" in found[2]
    src = ("def f():\n    from fairpair.analysis import Results\n"
           "_LAZY_EXPORTS = {'x': 'fairpair.report._view'}\n"
           "def g():\n    return importlib.import_module(f'fairpair.cli.{x}')\n")
    assert probe.exists()
    tree = ast.parse(src)
    assert sorted(m for _, m in _string_modules(tree)) == ["fairpair.cli", "fairpair.report._view"]


def test_the_known_exceptions_are_the_contracts_ignored_imports():
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in config if c["type"] == "layers"]
    assert sorted(contract.get("ignore_imports", [])) == sorted(f"{m} -> fairpair.{p}" for m, p in KNOWN)
