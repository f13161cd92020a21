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


def _battery_with(tmp_path, targets: dict):
    battery = demo_battery(tmp_path / "b", None)
    data = battery.read_text(encoding="utf-8").replace("target:\n  kind: mock\n", "")
    battery.write_text(data + "targets: " + json.dumps(targets) + "\n", encoding="utf-8")
    return battery


def _grep_tree(root, secrets) -> int:
    scanned = 0
    for f in root.rglob("*"):
        if f.is_file():
            blob = f.read_bytes()
            scanned += 1
            for s in secrets:
                assert s.encode() not in blob, f"{s!r} in {f}"
    return scanned


def test_planted_secret_is_not_in_the_dry_run(tmp_path, monkeypatch, cli):
    """``--dry-run`` prints each request as it would be sent, with the ``${VAR}`` secrets as ``***``."""
    monkeypatch.setenv("FP_PLANT_KEY", KEY)
    monkeypatch.setenv("FP_PLANT_HDR", HDR)
    battery = _battery_with(tmp_path, {
        "api": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "mock-1", "api_key_env": "FP_PLANT_KEY",
                "extra_headers": {"X-Token": "${FP_PLANT_HDR}"}},
        "web": {"kind": "http", "url": "http://127.0.0.1:9/bot", "reply_path": "$.reply",
                "headers": {"Authorization": "Bearer ${FP_PLANT_KEY}", "X-Token": "${FP_PLANT_HDR}"}}})
    r = cli("run", battery, "--dry-run", "--out", tmp_path / "run")
    assert r.code == 0, r.output
    assert "authorization: Bearer ***" in r.output.replace("Authorization", "authorization")
    for s in (KEY, HDR, KEY[8:]):
        assert s not in r.output
    if (tmp_path / "run").exists():  # a dry run sends nothing; whatever it wrote holds no secret
        _grep_tree(tmp_path / "run", (KEY, HDR, KEY[8:]))


def test_a_literal_secret_in_a_battery_is_refused_and_reaches_no_disk(tmp_path, cli):
    """A literal header value (openai ``extra_headers``, http ``headers``) is refused before anything
    is written: validate, --dry-run and run exit 2 naming the header and the variable to use, and
    the secret appears in no output and in no file of the run directory."""
    for kind, block, key in (
            ("openai", {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m",
                        "extra_headers": {"Authorization": f"Bearer {KEY}"}}, "extra_headers.Authorization"),
            ("http", {"kind": "http", "url": "http://127.0.0.1:9/bot", "reply_path": "$.reply",
                      "headers": {"X-Token": HDR}}, "headers.X-Token")):
        battery = _battery_with(tmp_path / kind, {"t": block})
        run = tmp_path / kind / "run"
        for args in (("validate", battery), ("run", battery, "--dry-run"), ("run", battery, "--out", run, "-q")):
            r = cli(*args)
            assert r.code == 2, r.output
            assert f"[targets.t.{key}]" in r.output and "export " in r.output, r.output
            assert KEY not in r.output and HDR not in r.output and KEY[8:] not in r.output
        if run.exists():
            _grep_tree(run, (KEY, HDR, KEY[8:]))
