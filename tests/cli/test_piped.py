"""Output that is not a terminal (``fairpair report RUN | less``, CI logs, ``nohup``), found by a newcomer
walk: the tables were wrapped at rich's fallback of 80 columns into cells of a few words. Under pytest's
capture neither stream is a terminal."""

from __future__ import annotations

import re

from run_helpers import run_cli


def _starter(tmp_path, capsys, monkeypatch):
    """The starter battery on the mock (8 templates x 2 groups x 8 names x 4 repetitions = 512 cases)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["init", "b.yaml"], capsys)
    assert code == 0, out + err
    return tmp_path / "b.yaml"


# ------------------------------------------------------------------ 1. tables at their width, not 80


def _row(out: str, first_cell: str) -> str:
    rows = [ln for ln in out.splitlines() if ln.startswith(f"│ {first_cell} ")]
    assert len(rows) == 1, out
    return rows[0]


def test_a_piped_table_keeps_each_row_on_one_line(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    code, out, _ = run_cli(["lexicons"], capsys)
    assert code == 0
    row = _row(out, "en/white/female")
    assert "Allison, Anne, Carrie, Emily, ..." in row
    assert "Bertrand, M. & Mullainathan, S. (2004). Are Emily and Greg More Employable Than ..." in row
    assert row.endswith("│") and len(row) > 80
    # every row is one line: as many lines between the header's rule and the bottom border as lexicons
    from fairpair.battery import all_lexicons

    body = out.split("┩\n", 1)[1].split("└", 1)[0].splitlines()
    assert len(body) == len(all_lexicons())


def test_columns_still_sets_the_width(capsys, monkeypatch):
    """rich honours $COLUMNS: an 80-column log gets 80-column tables, wrapped as before."""
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(["lexicons"], capsys)
    assert code == 0
    assert max(len(ln) for ln in out.splitlines()) == 80
    assert "Employable Than" not in _row(out, "en/white/female")


def test_a_piped_verdict_row_and_plan_line_stay_on_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    battery = _starter(tmp_path, capsys, monkeypatch)
    code, out, _ = run_cli(["plan", battery], capsys)
    assert code == 0
    # was wrapped after "prompt tokens" at 80 columns
    assert "conversations: 512 per target; targets: 1; requests: 512; prompt tokens (estimate, chars/4): 37,920" \
        in out.splitlines()
    code, out, _ = run_cli(["run", battery, "--out", "run", "-q", "--no-report"], capsys)
    assert code == 0, out
    code, out, _ = run_cli(["report", "run", "--verbose"], capsys)
    assert code == 0, out
    row = _row(out, "FALLA")  # verdict, comparison, A − B, interval, p adj., n: one line of 87 columns
    assert re.fullmatch(r"│ FALLA +│ reembolso: maghreb − spain │ +−28,1 p\. p\. │ +−39,8\.\.−16,4 │ +0,001 │ +256 │",
                        row), row
    from fairpair.cli._app import console

    assert console._width is None  # the verdict table's wider print left no fixed width behind
