"""A results.json cut short (a disk that filled, a copy interrupted) and what ``status`` says of a run:
exit 2 with file, line and the way out; ``analyze`` writes it again, keeping the damaged file."""

from __future__ import annotations

import shutil

import pytest
from tests.reliability.conftest import demo_battery
from tests.run_helpers import run_cli


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """A mock run measured by the mock judge (its rows are per rubric dimension: tono.courtesy, ...)."""
    from fairpair.cli import main

    tmp = tmp_path_factory.mktemp("judged")
    run = tmp / "run"
    try:
        main(["run", str(demo_battery(tmp / "b")), "--out", str(run), "-q", "--no-report"])
    except SystemExit as exc:
        assert not exc.code, exc.code
    return run


def _cut(run, tmp_path, text_end: bytes | None = None):
    """A copy of ``run`` whose results.json stops half-way (or just after the first ``text_end``)."""
    copy = tmp_path / "cut"
    shutil.copytree(run, copy)
    data = (copy / "results.json").read_bytes()
    end = data.index(text_end) + 1 if text_end else len(data) // 2
    (copy / "results.json").write_bytes(data[:end])
    return copy, data[:end].count(b"\n") + 1


@pytest.mark.parametrize("argv", [["gate"], ["report"], ["export", "--out", "{tmp}/tables"]])
def test_a_results_json_cut_short_names_its_line_and_the_way_out(judged, tmp_path, capsys, argv):
    run, line = _cut(judged, tmp_path)
    code, _, err = run_cli([argv[0], run, *[a.format(tmp=tmp_path) for a in argv[1:]]], capsys)
    assert code == 2
    assert f"{run}/results.json:{line}:" in err and "results.json" in err
    assert f"`fairpair analyze {run}` writes it again from the run's store (no answer is lost)" in err


def test_status_says_it_is_unreadable_and_analyze_replaces_it_keeping_the_damaged_one(judged, tmp_path, capsys):
    """A cut inside a multi-byte character: analyze stopped with an internal error (exit 1) while comparing
    the old file with the new one as text."""
    run, _ = _cut(judged, tmp_path)
    # the first byte of a two-byte character ("í") ends the file: it is no longer UTF-8
    (run / "results.json").write_bytes((run / "results.json").read_bytes() + "í".encode()[:1])
    damaged = (run / "results.json").read_bytes()
    code, out, _ = run_cli(["status", run], capsys)
    assert code == 0
    assert "analysis: results.json unreadable (cut short or damaged)" in out
    assert f"fairpair analyze {run}" in out
    code, out, err = run_cli(["analyze", run], capsys)
    assert code == 0, err
    (kept,) = (run / "results.previous").iterdir()
    assert kept.read_bytes() == damaged
    code, out, _ = run_cli(["status", run], capsys)
    assert "analysis: results.json written" in out and f"fairpair analyze {run}" not in out


def test_status_of_a_run_measured_by_a_judge_has_no_measure_left(judged, capsys):
    """The judge measure 'tono' is stored as tono.courtesy, tono.condescension, tono.distrust: status
    listed 'measure tono: 0 measured' and `fairpair measure RUN` as left to do on a measured run."""
    code, out, _ = run_cli(["status", judged], capsys)
    assert code == 0
    assert "measure tono.courtesy:" in out and "measure tono.distrust:" in out
    assert "measure tono:" not in out and f"fairpair measure {judged}" not in out
