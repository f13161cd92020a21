"""The README is a front door and benchmarks/README.md a table (issue 34): sizes and the first commands.

The reference lives in docs/ (checked by ``mkdocs build --strict`` in .ci/run); the measurement
log lives in benchmarks/HISTORY.md.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MAIN_JOB = ("python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[local]' && "
            "fairpair run examples/tienda_online/demo.yaml --out runs/demo")
TESTS = "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]' && pytest"


def _fenced_blocks(text: str, lang: str) -> list[str]:
    """The bodies of the fenced code blocks opened with ```lang, in order."""
    return [m.group(1).strip() for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)]


def _cells(row: str) -> list[str]:
    """A Markdown table row's cells; a pipe inside a `code span` (or escaped) does not split."""
    cells, cell, in_code, prev = [], [], False, ""
    for ch in row.strip().strip("|"):
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code and prev != "\\":
            cells.append("".join(cell).strip())
            cell = []
        else:
            cell.append(ch)
        prev = ch
    cells.append("".join(cell).strip())
    return cells


def _tables(text: str) -> list[list[str]]:
    """Each Markdown table of the text as its list of rows (header and separator included)."""
    tables, current = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


def test_cells_split_outside_code_spans():
    assert _cells("| a | `x|y` | b \\| c |") == ["a", "`x|y`", "b \\| c"]


def test_readme_is_at_most_250_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the reference belongs in docs/"


def test_readme_opens_with_the_main_job_then_the_tests():
    blocks = _fenced_blocks((ROOT / "README.md").read_text(encoding="utf-8"), "bash")
    assert blocks[:2] == [MAIN_JOB, TESTS]


def test_ci_runs_the_readme_test_command_and_the_strict_docs_build():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert TESTS.replace("pip install -e", "pip install -q -e") in ci
    assert re.search(r"^[^#\n]*mkdocs build --strict", ci, re.M)


def test_benchmarks_readme_is_one_table_of_short_cells():
    text = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    tables = _tables(text)
    assert len(tables) == 1, f"benchmarks/README.md has {len(tables)} tables; history goes to HISTORY.md"
    header, _separator, *rows = tables[0]
    assert rows
    width = len(_cells(header))
    for row in rows:
        cells = _cells(row)
        assert len(cells) == width, f"{cells[0]}: {len(cells)} cells, the header has {width}"
        for cell in cells:
            assert len(cell.split()) <= 40, f"{cells[0]}: a cell of {len(cell.split())} words: {cell[:80]}..."


def test_readme_links_point_at_files_that_exist():
    """mkdocs checks the links inside docs/; the README's links into docs/ and benchmarks/ are checked here."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t.split("#", 1)[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]
    assert targets
    assert [t for t in targets if t and not (ROOT / t).exists()] == []
