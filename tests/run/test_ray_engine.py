"""The Ray engine (issue 16): cases on a Ray actor pool, the driver the store's single writer.

The slow tests start a local Ray (``ray.init(num_cpus=2)``); without Ray installed they are skipped,
and the fast tests check that ``--engine ray`` then exits 2 with the install line.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fairpair.battery import load_battery
from fairpair.cli import main as cli_main
from fairpair.run import RunSettings, execute_run
from fairpair.testing import write_battery

MOCK = {"kind": "mock", "refund": 0.6, "latency": 0.0}


def stored(run_dir: Path, target: str = "mock") -> list[tuple[str, str, str | None, int]]:
    """Every stored response of ``target``: (case_id, status, text, attempts), sorted."""
    con = sqlite3.connect(run_dir / "store.sqlite")
    try:
        return sorted(con.execute("SELECT case_id, status, COALESCE(text, error), attempts FROM responses "
                                  "WHERE target=?", (target,)).fetchall())
    except sqlite3.OperationalError as exc:  # polled while the run is still creating its tables
        if "no such table" not in str(exc):
            raise
        return []
    finally:
        con.close()


def n_cases(run_dir: Path) -> int:
    con = sqlite3.connect(run_dir / "store.sqlite")
    try:
        return con.execute("SELECT COUNT(*) FROM cases").fetchone()[0]
    finally:
        con.close()


# ------------------------------------------------------------------ without Ray


def test_engine_ray_without_ray_exits_2_with_the_install_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    battery = write_battery(tmp_path, MOCK, templates=1)
    with pytest.raises(SystemExit) as exc:
        cli_main(["run", str(battery), "--out", str(tmp_path / "run"), "--engine", "ray", "-q"])
    out = capsys.readouterr()
    assert exc.value.code == 2
    assert "pip install 'fairpair[ray]'" in out.out + out.err
    assert "Traceback" not in out.out + out.err
    assert not (tmp_path / "run").exists()  # nothing started


def test_ray_options_without_engine_ray_are_an_error(tmp_path, capsys):
    battery = write_battery(tmp_path, MOCK, templates=1)
    with pytest.raises(SystemExit) as exc:
        cli_main(["run", str(battery), "--out", str(tmp_path / "run"), "--actors", "2", "-q"])
    assert exc.value.code == 2
    out = capsys.readouterr()
    assert "--address and --actors belong to --engine ray" in out.out + out.err


def test_unknown_engine_is_an_error(tmp_path):
    from fairpair.errors import FairpairError

    lb = load_battery(write_battery(tmp_path, MOCK, templates=1))
    with pytest.raises(FairpairError, match="unknown engine 'spark'"):
        execute_run(lb, tmp_path / "run", RunSettings(engine="spark"))


# ------------------------------------------------------------------ on a local Ray


@pytest.mark.slow
def test_ray_engine_stores_what_the_inprocess_engine_stores(tmp_path, ray_local):
    lb = load_battery(write_battery(tmp_path, {**MOCK, "latency": 0.01}, templates=3, repetitions=2))
    base = RunSettings(concurrency=4, timeout=10, max_attempts=2, backoff_initial=0.01, backoff_max=0.05)
    execute_run(lb, tmp_path / "inprocess", base)
    out = execute_run(lb, tmp_path / "ray", RunSettings(**{**base.__dict__, "engine": "ray", "actors": 2}))
    a, b = stored(tmp_path / "inprocess"), stored(tmp_path / "ray")
    assert len(a) == n_cases(tmp_path / "ray") == 3 * 8 * 2
    assert [(c, s, t) for c, s, t, _ in a] == [(c, s, t) for c, s, t, _ in b]  # same cases, same answers
    assert out.manifest["settings"]["engine"] == "ray" and out.manifest["settings"]["actors"] == 2
    # resume: a second run finds everything answered and sends nothing
    again = execute_run(lb, tmp_path / "ray", RunSettings(**{**base.__dict__, "engine": "ray", "actors": 2}))
    assert again.manifest["last_session"]["mock"]["skipped"] == 48
    assert again.manifest["last_session"]["mock"]["answered"] == 0
    assert stored(tmp_path / "ray") == b


@pytest.mark.slow
def test_killing_a_worker_mid_run_loses_and_duplicates_nothing(tmp_path, ray_local):
    lb = load_battery(write_battery(tmp_path, {**MOCK, "latency": 0.2}, templates=4, repetitions=2))
    pools: list = []
    killed: list[int] = []

    def kill_one_worker() -> None:
        while not pools:
            time.sleep(0.05)
        pid = ray_local.get(pools[0][0].pid.remote())
        time.sleep(0.6)  # a few cases answered, others in flight on that worker
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
        killed.append(ray_local.get(pools[0][0].pid.remote(), timeout=60))  # the restarted worker

    killer = threading.Thread(target=kill_one_worker, daemon=True)
    killer.start()
    settings = RunSettings(concurrency=4, timeout=10, max_attempts=3, backoff_initial=0.01, backoff_max=0.05,
                           preflight=False, engine="ray", actors=2)
    out = execute_run(lb, tmp_path / "run", settings, ray_pool=pools.append)
    killer.join(10)
    assert killed, "the worker was not killed"
    rows = stored(tmp_path / "run")
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)) == n_cases(tmp_path / "run") == 4 * 8 * 2  # each case exactly once
    assert [r for r in rows if r[1] != "ok"] == []
    session = out.manifest["last_session"]["mock"]
    assert session["answered"] == 64 and session["failed"] == 0
    assert len(killed) == 2 and killed[1] != killed[0]  # Ray restarted the worker, which answered the rest


@pytest.mark.slow
def test_killing_the_driver_mid_run_then_resuming_answers_each_case_once(tmp_path):
    pytest.importorskip("ray")
    b = write_battery(tmp_path, {**MOCK, "latency": 0.2}, templates=4, repetitions=2)  # 64 cases
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src") + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "fairpair.cli", "run", str(b), "--out", str(run), "-q", "--engine", "ray",
           "--actors", "2", "--concurrency", "4", "--no-measure", "--no-analyze", "--no-report"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if (run / "store.sqlite").exists() and len(stored(run)) >= 8:
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)  # the driver only; Ray's own processes end with it
    proc.wait(30)
    first = stored(run)
    assert 8 <= len(first) < 64
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400)
    assert again.returncode == 0, again.stderr[-2000:]
    rows = stored(run)
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)) == n_cases(run) == 64  # each case once, none lost
    assert all(r[1] == "ok" for r in rows)
    assert set(first) <= set(rows)  # what was stored before the kill is kept as it was


@pytest.mark.slow
def test_workers_that_cannot_build_the_target_stop_the_run(tmp_path, ray_local, monkeypatch):
    from fairpair.errors import FairpairError

    code = tmp_path / "driver_only"
    code.mkdir()
    (code / "fp_driver_only_bot.py").write_text("def answer(messages, context):\n    return 'hola'\n")
    monkeypatch.syspath_prepend(str(code))  # importable here, not on the Ray workers
    lb = load_battery(write_battery(tmp_path, {"kind": "python", "callable": "fp_driver_only_bot:answer"},
                                    templates=1))
    with pytest.raises(FairpairError, match="the Ray workers cannot start it: .*fp_driver_only_bot"):
        execute_run(lb, tmp_path / "run", RunSettings(engine="ray", actors=1, preflight=False))
    assert stored(tmp_path / "run", "python") == []  # nothing sent, nothing stored
    sys.modules.pop("fp_driver_only_bot", None)


def test_batch_and_engine_ray_together_are_an_error(tmp_path, capsys):
    battery = write_battery(tmp_path, MOCK, templates=1)
    with pytest.raises(SystemExit) as exc:
        cli_main(["run", str(battery), "--out", str(tmp_path / "run"), "--engine", "ray", "--batch", "-q"])
    out = capsys.readouterr()
    assert exc.value.code == 2
    assert "drop --engine ray" in out.out + out.err
