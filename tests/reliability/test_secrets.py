"""A planted secret never reaches the run directory, the exports or the output.

The secret is an ``api_key_env`` value (target and judge) and a ``${VAR}``
header of an ``http`` and an ``openai`` target; the loopback server echoes the
credentials it got in 401 and 500 bodies (as some providers do). The whole
pipeline runs (run, measure, analyze, report, export, calibrate export), then
every byte of the run directory (SQLite database, WAL and shared memory
included), of the exports and of every captured output is scanned.
"""

from __future__ import annotations

import hashlib
import io
import json
from contextlib import redirect_stderr, redirect_stdout

from fairpair.cli import main
from fairpair.testing._server import LoopbackServer, OpenAIMock, Received, Reply

from .conftest import demo_battery, query

KEY = "sk-test-PLANTED-1234567890"
HDR = "hdr-PLANTED-0987654321"


def _leaky_server() -> LoopbackServer:
    mock = OpenAIMock()

    async def handler(req: Received) -> Reply:
        creds = f"authorization={req.headers.get('authorization')} x-token={req.headers.get('x-token')}"
        h = int(hashlib.sha256(req.body).hexdigest(), 16) % 4
        if h == 0:
            return Reply.of_json(401, {"error": {"message": f"Incorrect API key provided: {creds}"}})
        if h == 1:
            return Reply.of_json(500, {"error": {"message": f"upstream refused {creds}"}})
        if req.path.startswith("/bot"):
            return Reply.of_json(200, {"reply": "Le ofrecemos el reembolso. " + json.loads(req.body)["messages"][-1]
                                       ["content"][:40]})
        return await mock(req)

    return LoopbackServer(handler)


def test_planted_secret_appears_nowhere(tmp_path, monkeypatch):
    monkeypatch.setenv("FP_PLANT_KEY", KEY)
    monkeypatch.setenv("FP_PLANT_HDR", HDR)
    outputs: list[str] = []

    def fp(*args) -> int:
        buf = io.StringIO()
        with redirect_stdout(buf), redirect_stderr(buf):
            try:
                main([str(a) for a in args])
                code = 0
            except SystemExit as exc:
                code = exc.code or 0
        outputs.append(buf.getvalue())
        return code

    with _leaky_server() as server:
        targets = {
            "api": {"kind": "openai", "base_url": server.base_url, "model": "mock-1", "api_key_env": "FP_PLANT_KEY",
                    "extra_headers": {"X-Token": "${FP_PLANT_HDR}"}},
            "web": {"kind": "http", "url": server.url + "/bot", "reply_path": "$.reply",
                    "headers": {"Authorization": "Bearer ${FP_PLANT_KEY}", "X-Token": "${FP_PLANT_HDR}"}},
        }
        judge = {"kind": "openai", "base_url": server.base_url, "model": "judge-1", "api_key_env": "FP_PLANT_KEY"}
        battery = demo_battery(tmp_path / "b", None, judge=judge)
        data = battery.read_text(encoding="utf-8").replace("target:\n  kind: mock\n", "")
        battery.write_text(data + "targets: " + json.dumps(targets) + "\n", encoding="utf-8")
        run = tmp_path / "run"
        assert fp("run", battery, "--out", run, "--max-attempts", "2", "--no-measure", "--no-analyze",
                  "--no-preflight", "--max-consecutive-failures", "0") == 0, outputs[-1]  # store every failure
        assert fp("measure", run, "--max-attempts", "1") == 0, outputs[-1]
        assert fp("analyze", run) == 0, outputs[-1]
        assert fp("report", run, "--lang", "en") == 0, outputs[-1]
        assert fp("export", run, "-o", tmp_path / "exp") == 0, outputs[-1]
        assert fp("export", run, "-f", "parquet", "-o", tmp_path / "pq") in (0, 2), outputs[-1]
        assert fp("calibrate", "export", run, "-o", tmp_path / "labels.csv") == 0, outputs[-1]
        sent = [r.headers.get("authorization", "") + r.headers.get("x-token", "") for r in server.received]
    # the secrets were really sent, and errors that echo them were really stored (redacted)
    assert sum(KEY in s for s in sent) > 50 and sum(HDR in s for s in sent) > 50
    errors = [e for (e,) in query(run, "SELECT error FROM responses WHERE status='failed'")]
    errors += [e for (e,) in query(run, "SELECT error FROM measurements WHERE error IS NOT NULL")]
    assert any("upstream refused" in e for e in errors), errors[:3]
    assert any("***" in e for e in errors)
    secrets = (KEY.encode(), HDR.encode(), KEY[8:].encode())  # the key or a recognisable part of it
    scanned = 0
    for root in (run, tmp_path / "exp", tmp_path / "pq", tmp_path):
        for f in root.rglob("*"):
            if f.is_file() and f.suffix != ".yaml":  # the battery names the variables, not their values
                blob = f.read_bytes()
                scanned += 1
                for s in secrets:
                    assert s not in blob, f"{s!r} in {f}"
    assert scanned >= 10 and (run / "store.sqlite-wal").exists() or (run / "store.sqlite").exists()
    for out in outputs:
        for s in secrets:
            assert s.decode() not in out
