"""report, export and gate on a run that another process is writing (a ``run`` or ``measure`` holds its
lock): they read what is stored, as before, and now say loudly that it is not all there is."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tests.analysis.analysis_runs import battery_dict, make_run
from tests.run_helpers import run_cli

from fairpair.store import RunLock

HOLD = ("import sys; from pathlib import Path; from fairpair.store import RunLock; "
        "lock = RunLock(Path(sys.argv[1])).__enter__(); print('held', flush=True); sys.stdin.read()")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("inuse"), "r", battery_dict(templates=4, repetitions=1))


@pytest.fixture
def held(run_dir):
    """``run_dir`` locked by another process, as a ``fairpair run`` in progress holds it."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield f"fairpair pid {proc.pid}"
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


@pytest.mark.parametrize("argv, what", [
    (["report", "{run}", "--out", "{tmp}/rep"], "the report shows"),
    (["export", "{run}", "--out", "{tmp}/tables"], "the tables hold"),
    (["gate", "{run}", "--on-insufficient"], "the gate judges"),
])
def test_reading_a_run_being_written_warns(run_dir, held, tmp_path, capsys, argv, what):
    code, out, err = run_cli([a.format(run=run_dir, tmp=tmp_path) for a in argv], capsys)
    assert code in (0, 1), err  # the gate may fail on the mock's verdicts: what matters is the warning
    flat = " ".join(out.split())
    assert (f"warning: {run_dir} is in use by {held} (a run or measure is writing it): {what} only what was "
            "stored so far") in flat


def test_no_warning_once_the_writer_has_finished(run_dir, tmp_path, capsys):
    assert RunLock.holder(run_dir) is None and RunLock.holder(tmp_path / "nowhere") is None
    code, out, _ = run_cli(["export", run_dir, "--out", tmp_path / "tables"], capsys)
    assert code == 0 and "in use" not in out
