"""``fairpair run`` and ``fairpair measure`` killed with SIGKILL many times, then resumed.

Kills land at seeded random moments: while requests are in flight (loopback
server with latency) and while answers are committed back to back (mock target,
no latency, one commit per answer). After every kill the store must pass
``PRAGMA integrity_check`` and keep every answer seen before; at the end every
case has exactly one stored answer and every (target, case, measure) exactly
one ``ok``/``missing`` row.
"""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from fairpair.testing import serve_openai

from .conftest import TONE, demo_battery, fairpair_cmd, query

pytestmark = pytest.mark.slow

JUDGE = '''
import json, re, time

def judge(messages, context):
    time.sleep(0.01)
    return json.dumps({"courtesy": 4, "condescension": 1, "distrust": 1, "reason": "ok"})
'''

ROWS = ("reembolso", "agente_humano", "palabras", "opciones", *(f"tono.{d}" for d in TONE))


def _count(run: Path, table: str) -> int:
    try:
        return query(run, f"SELECT COUNT(*) FROM {table}")[0][0]
    except sqlite3.Error:
        return 0


def _wait_for_progress(proc, run: Path, table: str, before: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if (run / "store.sqlite").exists() and _count(run, table) > before:
            return
        time.sleep(0.01)


def _check_store(run: Path, seen: dict[int, tuple[str, str]]) -> None:
    assert query(run, "PRAGMA integrity_check") == [("ok",)]
    dup = query(run, "SELECT case_id FROM responses WHERE status='ok' GROUP BY target, case_id HAVING COUNT(*) > 1")
    assert dup == []
    rows = {i: (c, t) for i, c, t in query(run, "SELECT id, case_id, text FROM responses WHERE status='ok'")}
    lost = {i for i in seen if rows.get(i) != seen[i]}
    assert not lost, f"{len(lost)} stored answers changed or vanished"
    seen.update(rows)


def _kill_loop(cmd, run: Path, rng: random.Random, *, kills: int, table: str, max_offset: float,
               seen: dict | None = None, check=None) -> int:
    """Start ``cmd``, SIGKILL it at a random moment after it starts writing ``table``; repeat."""
    done = 0
    for _ in range(kills):
        before = _count(run, table)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if rng.random() < 0.25:
            time.sleep(rng.uniform(0.2, 2.5))  # anywhere: imports, migration, case insertion, sending
        else:
            _wait_for_progress(proc, run, table, before)
            time.sleep(rng.uniform(0, max_offset))
        if proc.poll() is not None:
            assert proc.returncode == 0, proc.stderr.read()
            break  # it finished before the kill
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        done += 1
        if (run / "store.sqlite").exists() and check is not None:
            check()
    return done


def test_run_killed_at_random_moments_then_resumed(tmp_path):
    rng = random.Random(20260)
    seen: dict[int, tuple[str, str]] = {}
    with serve_openai(latency=0.05) as server:
        target = {"kind": "openai", "base_url": server.base_url, "model": "mock-1", "api_key_env": None}
        battery = demo_battery(tmp_path / "b", target, repetitions=20)  # 720 cases
        run = tmp_path / "run"
        cmd = fairpair_cmd("run", battery, "--out", run, "--concurrency", "8", "--no-measure", "--no-analyze",
                           "--no-report", "-q")
        kills = _kill_loop(cmd, run, rng, kills=10, table="responses", max_offset=0.4, seen=seen,
                           check=lambda: _check_store(run, seen))
        assert kills >= 8
        partial = len(seen)
        assert 0 < partial < 720
        final = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300)
        assert final.returncode == 0, final.stderr
        sent = server.count_by_body
    _check_store(run, seen)
    assert query(run, "SELECT COUNT(*), COUNT(DISTINCT seq) FROM cases") == [(720, 720)]
    per_case = dict(query(run, "SELECT case_id, COUNT(*) FROM responses WHERE status='ok' GROUP BY case_id"))
    assert len(per_case) == 720 and set(per_case.values()) == {1}
    assert query(run, "SELECT COUNT(*) FROM responses WHERE status='failed'") == [(0,)]
    # only requests in flight at a kill were sent twice (at most concurrency per kill)
    assert sum(n - 1 for n in sent.values()) <= 8 * kills


def test_commits_killed_back_to_back_then_measure_killed_then_resumed(tmp_path):
    """Mock target without latency: answers are committed back to back, so kills hit commits."""
    rng = random.Random(7)
    seen: dict[int, tuple[str, str]] = {}
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "fp_crash_judge.py").write_text(JUDGE, encoding="utf-8")
    judge = {"kind": "python", "callable": "fp_crash_judge:judge", "path": str(tmp_path / "j")}
    # 4,320 cases: enough that a fast machine does not finish the run inside the kill loop's waits
    # (up to 2.5 s; with 1,440 cases an idle machine finished after 3 kills)
    n_cases = 36 * 120
    battery = demo_battery(tmp_path / "b", {"kind": "mock"}, judge=judge, repetitions=120)
    run = tmp_path / "run"
    cmd = fairpair_cmd("run", battery, "--out", run, "--concurrency", "8", "--no-measure", "--no-analyze",
                       "--no-report", "-q")
    kills = _kill_loop(cmd, run, rng, kills=10, table="responses", max_offset=0.15, seen=seen,
                       check=lambda: _check_store(run, seen))
    assert kills >= 6
    final = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    _check_store(run, seen)
    per_case = dict(query(run, "SELECT case_id, COUNT(*) FROM responses WHERE status='ok' GROUP BY case_id"))
    assert len(per_case) == n_cases and set(per_case.values()) == {1}

    # the measure stage, killed and resumed in the same way
    mcmd = fairpair_cmd("measure", run, "--concurrency", "8")
    seen_m: dict[int, tuple] = {}

    def check_measurements() -> None:
        assert query(run, "PRAGMA integrity_check") == [("ok",)]
        dup = query(run, "SELECT target, case_id, measure FROM measurements WHERE status IN ('ok','missing') "
                         "GROUP BY target, case_id, measure HAVING COUNT(*) > 1")
        assert dup == []
        rows = {r[0]: r[1:] for r in query(run, "SELECT id, case_id, measure, status, value FROM measurements")}
        assert all(rows.get(i) == v for i, v in seen_m.items())
        seen_m.update(rows)

    mkills = _kill_loop(mcmd, run, rng, kills=8, table="measurements", max_offset=1.0, check=check_measurements)
    assert mkills >= 5
    assert 0 < len(seen_m) < n_cases * len(ROWS)
    final = subprocess.run(mcmd, check=False, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    check_measurements()
    done = query(run, "SELECT measure, COUNT(*), COUNT(DISTINCT case_id) FROM measurements "
                      "WHERE status IN ('ok','missing') GROUP BY measure")
    assert {m: (n, d) for m, n, d in done} == {r: (n_cases, n_cases) for r in ROWS}
    # the judge always answered validly: every tone row is ok with the scripted levels
    assert query(run, "SELECT DISTINCT measure, value FROM measurements WHERE measure LIKE 'tono.%'") and \
        {(m, v) for m, v in query(run,
                                  "SELECT DISTINCT measure, value FROM measurements WHERE measure LIKE 'tono.%'")} \
        == {("tono.courtesy", "4"), ("tono.condescension", "1"), ("tono.distrust", "1")}
