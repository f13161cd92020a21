"""Output that is not a terminal (``fairpair report RUN | less``, CI logs, ``nohup``), found by a newcomer
walk: the tables were wrapped at rich's fallback of 80 columns into cells of a few words, and a run printed
nothing while it ran, so a 5-minute run looked hung. Under pytest's capture neither stream is a terminal."""

from __future__ import annotations

import re

import pytest

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
    assert row == "│ en/white/female      │ Allison, Anne, Carrie, Emily, Jill, Laurie … (9) │"
    # every row is one line: as many lines between the header's rule and the bottom border as lexicons
    from fairpair.battery import all_lexicons

    body = out.split("┩\n", 1)[1].split("└", 1)[0].splitlines()
    assert len(body) == len(all_lexicons())
    # the sources after the table run to 160 columns, not rich's fallback of 80
    source = next(ln for ln in out.splitlines() if ln.startswith("source of en/white/female"))
    assert 80 < len(source) <= 160 and "Are Emily and Greg More Employable Than" in source


def test_columns_still_sets_the_width(capsys, monkeypatch):
    """rich honours $COLUMNS: an 80-column log gets 80-column lines, wrapped as before."""
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(["lexicons"], capsys)
    assert code == 0
    assert max(len(ln) for ln in out.splitlines()) == 80
    source = next(ln for ln in out.splitlines() if ln.startswith("source of en/white/female"))
    assert "Employable Than" not in source


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
    assert re.fullmatch(r"│ FALLA +│ reembolso: maghreb − spain │ +−24,6 p\. p\. │ +−37,2\.\.−12,0 │ +0,003 │ +256 │",
                        row), row
    from fairpair.cli._app import console

    assert console._width is None  # the verdict table's wider print left no fixed width behind


# ------------------------------------------------------------------ 2. progress as plain lines on stderr


RUN_LINE = re.compile(r"run \(target mock\): (\d+)/512 answers \((\d+)%\), 0 failed, (\d+)s elapsed")


def test_a_run_off_a_terminal_says_its_progress_on_stderr(tmp_path, capsys, monkeypatch):
    import fairpair._progress as progress

    battery = _starter(tmp_path, capsys, monkeypatch)
    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.0)  # a line after every answer
    code, out, err = run_cli(["run", battery, "--out", "run"], capsys, collapse=False)
    assert code == 0, out + err
    assert "\x1b" not in err  # no ANSI codes in a log
    lines = err.splitlines()
    runs = [RUN_LINE.fullmatch(ln) for ln in lines if ln.startswith("run (target mock)")]
    assert all(runs), lines[:5]
    done = [int(m.group(1)) for m in runs if m]
    # the preflight's answer is stored before the target starts; then one line per answer; then the end line
    assert done == [1, *range(2, 513), 512]
    assert [int(m.group(2)) for m in runs if m][-1] == 100 and runs[0] and runs[0].group(2) == "0"
    for measure in ("palabras", "reembolso"):
        said = [ln for ln in lines if ln.startswith(f"measure {measure}: ")]
        assert said[0] == f"measure {measure}: 0/512 answers (0%), 0 failed, 0s elapsed"
        assert re.fullmatch(rf"measure {measure}: 512/512 answers \(100%\), 0 failed, \d+s elapsed", said[-1])
    assert "analysing the pre-registered comparisons: started" in lines
    assert any(re.fullmatch(r"analysing the pre-registered comparisons: done in \d+\.\d s", ln) for ln in lines)
    assert "writing the report: started" in lines
    assert any(re.fullmatch(r"writing the report: done in \d+\.\d s", ln) for ln in lines)
    assert "target mock: 512/512 answered, 0 failed, 0 retried" in out  # stdout's summary is unchanged


def test_progress_lines_keep_their_interval_and_quiet_has_none(tmp_path, capsys, monkeypatch):
    import fairpair._progress as progress

    battery = _starter(tmp_path, capsys, monkeypatch)
    monkeypatch.setattr(progress, "PLAIN_EVERY", 3600.0)  # only each stage's start and end
    code, out, err = run_cli(["run", battery, "--out", "r1", "--no-measure", "--no-analyze", "--no-report"],
                             capsys, collapse=False)
    assert code == 0, out + err
    runs = [ln for ln in err.splitlines() if ln.startswith("run (target mock)")]
    assert [RUN_LINE.fullmatch(ln).group(1) for ln in runs] == ["1", "512"]  # type: ignore[union-attr]
    code, out, err = run_cli(["run", battery, "--out", "r2", "-q"], capsys, collapse=False)
    assert code == 0, out + err
    assert err == ""  # -q: no progress at all


def test_plain_lines_wait_the_interval_on_a_fake_clock(capsys, monkeypatch):
    import fairpair._progress as progress

    monkeypatch.setattr(progress, "PLAIN_EVERY", 10.0)
    now = [100.0]
    lines = progress.PlainLines("run (target t)", 480, unit="answers", clock=lambda: now[0])
    said = []
    for t, done, failed in [(100.0, 0, 0), (104.0, 40, 0), (109.9, 90, 1), (110.0, 120, 3), (115.0, 150, 3),
                            (125.0, 200, 3), (170.5, 480, 4)]:
        now[0] = t
        said.append(lines.say(done, failed=failed, force=done in (0, 480)))
    assert said == [True, False, False, True, False, True, True]
    assert capsys.readouterr().err.splitlines() == [
        "run (target t): 0/480 answers (0%), 0 failed, 0s elapsed",
        "run (target t): 120/480 answers (25%), 3 failed, 10s elapsed",
        "run (target t): 200/480 answers (42%), 3 failed, 25s elapsed",
        "run (target t): 480/480 answers (100%), 4 failed, 1m10s elapsed",
    ]
    assert [progress._clock_text(s) for s in (0, 59.9, 60, 3599, 3600, 7500)] == \
        ["0s", "59s", "1m00s", "59m59s", "1h00m", "2h05m"]


@pytest.mark.parametrize("label", ["run (target a\x1b[2Jb)"])
def test_a_plain_line_prints_no_control_character(capsys, label):
    from fairpair._progress import PlainLines

    PlainLines(label, 2).say(1, force=True)
    assert capsys.readouterr().err == "run (target a?[2Jb): 1/2 (50%), 0s elapsed\n"


def test_plain_lines_only_for_the_process_s_own_output(capsys):
    """A console a library caller points at a buffer gets no lines on stderr; the CLI's consoles do."""
    import io

    from rich.console import Console

    from fairpair._progress import plain_progress, progress_enabled
    from fairpair.cli._app import console, err_console

    assert not plain_progress(Console(file=io.StringIO())) and not plain_progress(None)
    assert plain_progress(console) and plain_progress(err_console)  # pytest's capture: not a terminal
    assert not plain_progress(Console(file=io.StringIO(), force_terminal=True))
    with progress_enabled(False):
        assert not plain_progress(console)
