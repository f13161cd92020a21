"""The run engine with real targets over loopback: retries, failures as data, resume, secrets, lock."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fairpair.battery import load_battery
from fairpair.cases import expand
from fairpair.cli import main as cli_main
from fairpair.run import RunLock, RunSettings, Store, execute_run, run_target
from fairpair.run._preflight import PreflightError
from fairpair.targets.mock import MockTarget
from fairpair.testing import Fault, names_table, openai_target, serve_json, serve_openai, write_battery

FAST = RunSettings(concurrency=4, timeout=10, max_attempts=3, backoff_initial=0.01, backoff_max=0.05)


def openai_block(server, **kw):
    return openai_target(server.base_url, **kw)


def oks(run_dir: Path, target: str) -> dict[str, int]:
    con = sqlite3.connect(run_dir / "store.sqlite")
    try:
        rows = con.execute("SELECT case_id, COUNT(*) FROM responses WHERE target=? AND status='ok' "
                           "GROUP BY case_id", (target,)).fetchall()
    except sqlite3.OperationalError as exc:  # polled while the run is still creating its tables
        if "no such table" not in str(exc):
            raise
        rows = []
    finally:
        con.close()
    return dict(rows)


def test_retry_honours_retry_after(tmp_path):
    # every distinct request fails once with 429 + retry-after-ms 400, far above the 10-50 ms backoff
    with serve_openai(faults=[Fault("429", first=1, retry_after_ms=400)]) as server:
        lb = load_battery(write_battery(tmp_path, openai_block(server), templates=1,
                                        names={"a": ["Lucía"], "b": ["Fátima"]}))
        execute_run(lb, tmp_path / "run", FAST)
        times: dict[bytes, list[float]] = {}
        for r in server.received:
            times.setdefault(r.body, []).append(r.at)
    assert len(times) == 2 and all(len(t) == 2 for t in times.values())
    gaps = [t[1] - t[0] for t in times.values()]
    assert all(0.4 <= g < 1.5 for g in gaps), gaps
    with Store.open(tmp_path / "run") as store:
        resp = list(store.responses("openai"))
    assert [r.attempts for r in resp] == [2, 2]


def test_retry_without_retry_after_uses_short_backoff(tmp_path):
    with serve_openai(faults=[Fault("503", first=2)]) as server:
        lb = load_battery(write_battery(tmp_path, openai_block(server), templates=1,
                                        names={"a": ["Lucía"], "b": ["Fátima"]}))
        execute_run(lb, tmp_path / "run", FAST)
        assert server.n_requests == 6
        first, last = server.received[0].at, server.received[-1].at
    assert last - first < 0.4
    assert sorted(oks(tmp_path / "run", "openai").values()) == [1, 1]


def test_401_is_a_stored_failure_with_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FP_RUN_KEY", "sk-run-wrong-key-123456")
    with serve_openai(api_key="sk-the-right-one") as server:
        lb = load_battery(write_battery(tmp_path, openai_block(server, api_key_env="FP_RUN_KEY")))
        with pytest.raises(PreflightError) as ei:  # the preflight stops the run at the first case
            execute_run(lb, tmp_path / "run", FAST)
        n = server.n_requests
        # without the preflight and the breaker every case is tried once and stored as a failure
        out = execute_run(lb, tmp_path / "run2", dataclasses.replace(FAST, preflight=False,
                                                                     max_consecutive_failures=0))
        n2 = server.n_requests - n
    assert "HTTP 401" in ei.value.message and "sk-run-wrong-key-123456" not in ei.value.format()
    assert n == 1  # not retried, and nothing else sent
    with Store.open(tmp_path / "run") as store:
        assert store.counts("openai") == {"cases": 16, "answered": 0, "failed": 1, "retried": 0}
    counts = out.manifest["counts"]["openai"]
    assert counts == {"answered": 0, "failed": 16, "retried": 0, "cases": 16}
    assert n2 == 16  # not retried
    with Store.open(tmp_path / "run2") as store:
        errors = {r.error for r in store.responses("openai", status="failed")}
    assert len(errors) == 1
    (error,) = errors
    assert error.startswith("TargetError (HTTP 401): authentication failed (check the env var FP_RUN_KEY)")
    assert "sk-run-wrong-key-123456" not in error


def test_unreachable_server_gives_stored_failures(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        lb = load_battery(write_battery(tmp_path, {"kind": "openai", "base_url": f"http://127.0.0.1:{port}/v1",
                                                   "model": "m", "api_key_env": None}, templates=1))
        with pytest.raises(PreflightError):  # by default the preflight stops at the first case
            execute_run(lb, tmp_path / "pre", FAST)
        out = execute_run(lb, tmp_path / "run", dataclasses.replace(FAST, preflight=False,
                                                                    max_consecutive_failures=0))
    with Store.open(tmp_path / "pre") as store:
        failed = list(store.responses("openai", status="failed"))
    assert len(failed) == 1 and failed[0].attempts == 3 and "connection error" in failed[0].error
    assert out.manifest["counts"]["openai"]["failed"] == 8
    with Store.open(tmp_path / "run") as store:
        failed = list(store.responses("openai", status="failed"))
    assert len(failed) == 8 and all(r.attempts == 3 for r in failed)
    assert all("connection error" in r.error for r in failed)


def test_python_callable_that_raises_is_a_stored_failure(tmp_path):
    (tmp_path / "fp_run_bot_raises.py").write_text(
        "def answer(messages, context):\n"
        "    if context['crm']['nombre'] == 'Fátima':\n"
        "        raise KeyError('sin historial')\n"
        "    return 'ok ' + context['crm']['nombre']\n", encoding="utf-8")
    lb = load_battery(write_battery(tmp_path, {"kind": "python", "callable": "fp_run_bot_raises:answer",
                                               "path": "."}, templates=1))
    try:
        out = execute_run(lb, tmp_path / "run", FAST)
    finally:
        sys.modules.pop("fp_run_bot_raises", None)
        sys.path[:] = [p for p in sys.path if p != str(tmp_path.resolve())]
    assert out.manifest["counts"]["python"] == {"answered": 7, "failed": 1, "retried": 0, "cases": 8}
    with Store.open(tmp_path / "run") as store:
        (failed,) = store.responses("python", status="failed")
        ok = next(store.responses("python"))
    assert failed.error == "TargetError: fp_run_bot_raises:answer raised KeyError: 'sin historial'"
    assert ok.text.startswith("ok ")


def test_rerun_sends_nothing_twice(tmp_path):
    with serve_openai(names=names_table()) as server:
        lb = load_battery(write_battery(tmp_path, openai_block(server), repetitions=2))
        execute_run(lb, tmp_path / "run", FAST)
        first = server.n_requests
        execute_run(lb, tmp_path / "run", FAST)
        assert server.n_requests == first == 32
        assert set(server.count_by_body.values()) == {1}
    assert set(oks(tmp_path / "run", "openai").values()) == {1} and len(oks(tmp_path / "run", "openai")) == 32


def test_cancelled_run_completes_on_rerun(tmp_path):
    lb = load_battery(write_battery(tmp_path, {"kind": "mock"}, repetitions=4))
    cases = list(expand(lb))
    store = Store.open(tmp_path / "run")
    store.add_cases(cases)
    calls: list[str] = []

    class Counting(MockTarget):
        async def generate(self, request):
            calls.append(request.case_id)
            return await super().generate(request)

    async def interrupted():
        task = asyncio.create_task(run_target(store, "mock", Counting({"latency": 0.05}), cases, FAST))
        while len(store.answered_ids("mock")) < 10:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupted())
    done = store.answered_ids("mock")
    assert 10 <= len(done) < len(cases)
    stats = asyncio.run(run_target(store, "mock", Counting({"latency": 0.0}), cases, FAST))
    assert stats.skipped == len(done) and stats.answered == len(cases) - len(done)
    store.close()
    counts = oks(tmp_path / "run", "mock")
    assert len(counts) == len(cases) == 64 and set(counts.values()) == {1}
    # only the cases in flight at the cancel were asked twice
    assert len(calls) - len(cases) <= FAST.concurrency


@pytest.mark.slow
def test_sigkill_midway_then_rerun(tmp_path):
    with serve_openai(latency=0.05, names=names_table()) as server:
        battery = write_battery(tmp_path, openai_block(server), repetitions=6)  # 96 cases
        run_dir = tmp_path / "run"
        cmd = [sys.executable, "-m", "fairpair.cli", "run", str(battery), "--out", str(run_dir), "--concurrency",
               "2", "--no-measure", "--no-analyze", "--no-report", "-q"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (run_dir / "store.sqlite").exists() and len(oks(run_dir, "openai")) >= 15:
                break
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        partial = len(oks(run_dir, "openai"))
        assert 15 <= partial < 96
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        sent_twice = sum(1 for v in server.count_by_body.values() if v > 1)
    counts = oks(run_dir, "openai")
    assert len(counts) == 96 and set(counts.values()) == {1}
    assert sent_twice <= 2  # at most the requests in flight when the process died
    with Store.open(run_dir) as store:
        assert store.integrity_ok()


def test_repetitions_are_independent_samples(tmp_path):
    lb = load_battery(write_battery(tmp_path, {"kind": "mock"}, repetitions=2, templates=6))
    cases = list(expand(lb))
    by_rep = {(c.template, c.groups["origen"], c.position, c.repetition): c for c in cases}
    mock = MockTarget({"correlation": 1.0, "refund": 0.5})
    from fairpair.run._engine import request_for

    decisions: dict[tuple[str, int], set[bool]] = {}
    same_text = 0
    for (t, g, p, rep), c in by_rep.items():
        if rep:
            continue
        other = by_rep[(t, g, p, 1)]
        assert c.id != other.id and c.seed != other.seed and c.conversation() == other.conversation()
        a = asyncio.run(mock.generate(request_for(c, c.conversation())))
        b = asyncio.run(mock.generate(request_for(other, other.conversation())))
        same_text += a.text == b.text
        decisions.setdefault((t, 0), set()).add("Le ofrecemos el reembolso" in a.text)
        decisions.setdefault((t, 1), set()).add("Le ofrecemos el reembolso" in b.text)
    # correlation 1: inside a repetition every member shares the draw (one decision per template and rep)...
    assert all(len(v) == 1 for v in decisions.values())
    # ...and the repetitions draw anew: some template decides differently in its two repetitions
    assert any(decisions[(t, 0)] != decisions[(t, 1)] for t, _ in decisions)
    assert same_text < len(cases) // 4  # per-case draws (answer length) differ too


def test_secrets_never_reach_the_run_directory_or_the_output(tmp_path, monkeypatch, capsys):
    api_key = "sk-live-SECRETabc123def456"
    header = "hdr-SECRET-9f8e7d6c"
    monkeypatch.setenv("FP_SECRET_KEY", api_key)
    monkeypatch.setenv("FP_SECRET_HDR", header)

    def leaky(r):  # an endpoint whose errors echo the request's credentials
        return 500, {"error": {"message": f"upstream refused token {r.headers.get('x-token')} "
                                          f"and auth {r.headers.get('authorization')}"}}

    with serve_openai(api_key="sk-another-key") as server, serve_json(leaky) as bad:
        battery = tmp_path / "b" / "battery.yaml"
        write_battery(tmp_path / "b", {}, templates=1)
        text = battery.read_text(encoding="utf-8")
        targets = {
            "wrong_key": openai_block(server, api_key_env="FP_SECRET_KEY",
                                      extra_headers={"X-Token": "${FP_SECRET_HDR}"}),
            "leaky_http": {"kind": "http", "url": bad.url, "reply_path": "$.reply",
                           "headers": {"X-Token": "${FP_SECRET_HDR}", "Authorization": "Bearer ${FP_SECRET_KEY}"}},
        }
        import json

        data = json.loads(text)
        del data["target"]
        data["targets"] = targets
        battery.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(SystemExit) as ei:  # the preflight stops at the first case; its message is redacted
            cli_main(["run", str(battery), "--out", str(tmp_path / "pre"), "--max-attempts", "2", "-q"])
        assert ei.value.code == 2
        run_dir = tmp_path / "run"
        cli_main(["run", str(battery), "--out", str(run_dir), "--max-attempts", "2", "--no-measure",
                  "--no-analyze", "--no-report", "-q", "--no-preflight",
                  "--max-consecutive-failures", "0"])  # returns normally: failures are data
        assert any(api_key in (r.headers.get("authorization") or "") for r in server.received)  # it was sent
    out = capsys.readouterr()
    with Store.open(run_dir) as store:
        errors = [r.error for r in store.responses(status="failed")]
    assert len(errors) == 16 and any("***" in e for e in errors)
    for f in run_dir.rglob("*"):
        if f.is_file():
            blob = f.read_bytes()
            assert api_key.encode() not in blob and header.encode() not in blob, f
    assert api_key not in out.out + out.err and header not in out.out + out.err
    assert "the first case failed" in out.err and "***" in out.err
    for f in (tmp_path / "pre").rglob("*"):
        if f.is_file():
            assert api_key.encode() not in f.read_bytes() and header.encode() not in f.read_bytes(), f


def test_second_run_on_a_locked_directory_exits_2(tmp_path, capsys):
    lb_path = write_battery(tmp_path, {"kind": "mock"}, templates=1)
    run_dir = tmp_path / "run"
    with RunLock(run_dir):
        with pytest.raises(SystemExit) as ei:
            cli_main(["run", str(lb_path), "--out", str(run_dir), "--no-measure", "--no-analyze", "--no-report",
                      "-q"])
    assert ei.value.code == 2
    err = capsys.readouterr().err
    assert "this run directory is in use by fairpair pid" in err and "Traceback" not in err
