"""No module outside ``fairpair.store`` speaks SQL (issue 15): every read and write of a run's tables
goes through the store's typed methods."""

from __future__ import annotations

import ast
from pathlib import Path

import fairpair

SRC = Path(fairpair.__file__).parent
SQL_CALLS = {"execute", "executemany", "executescript"}


def _offences(path: Path, root: Path = SRC) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "conn":
            out.append(f"{path.relative_to(root)}:{node.lineno}: .conn")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SQL_CALLS:
            out.append(f"{path.relative_to(root)}:{node.lineno}: .{node.func.attr}(")
    return out


def test_no_sql_outside_the_store():
    files = [p for p in SRC.rglob("*.py") if "store" not in p.relative_to(SRC).parts[:1]]
    assert len(files) > 50  # the scan sees the package
    offences = [o for p in files for o in _offences(p)]
    assert offences == []


def test_the_scan_finds_sql(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f(store):\n    store.conn.execute('SELECT 1')\n    store.x.executemany('q', [])\n"
                     "    c = store.conn\n    c.executescript('')\n")
    assert sorted(_offences(probe, tmp_path)) == ["probe.py:2: .conn", "probe.py:2: .execute(",
                                                  "probe.py:3: .executemany(", "probe.py:4: .conn",
                                                  "probe.py:5: .executescript("]
