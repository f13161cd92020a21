"""``fairpair run --dry-run`` prints the exact request of one case per template and sends nothing."""

from __future__ import annotations

import json

from fairpair.battery import load_battery
from fairpair.run import RunSettings, execute_run
from fairpair.testing import serve_openai, write_battery
from run_helpers import run_cli

FAST = RunSettings(concurrency=2, timeout=10, max_attempts=2, backoff_initial=0.01, backoff_max=0.05)


def test_dry_run_prints_the_exact_body_and_hides_the_key(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FP_DRY_KEY", "sk-dry-run-secret-9876")
    with serve_openai(api_key="sk-dry-run-secret-9876") as server:
        target = {"kind": "openai", "base_url": server.base_url, "model": "m", "api_key_env": "FP_DRY_KEY",
                  "temperature": 0.5}
        path = write_battery(tmp_path, target, templates=2, names={"a": ["Lucía"], "b": ["Fátima"]})
        code, out, _ = run_cli(["run", str(path), "--dry-run"], capsys)
        assert code == 0 and server.received == []  # nothing sent
        execute_run(load_battery(path), tmp_path / "run", FAST)
        sent = {r.body.decode("utf-8") for r in server.received}
    assert "sk-dry-run-secret" not in out
    assert f"POST {server.base_url}/chat/completions" in out
    assert "authorization: Bearer ***" in out and "content-type: application/json" in out
    bodies = [line for line in out.splitlines() if line.startswith('{"model"')]
    assert len(bodies) == 2  # one case per template
    for b in bodies:
        assert b in sent  # byte for byte what the run sent
        msg = json.loads(b)["messages"][0]["content"]
        assert "Datos del cliente (CRM):" in msg and "nombre: Lucía" in msg
    assert "dry run: 4 cases would be sent" in out


def test_dry_run_with_a_missing_key_shows_stars_and_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("FP_DRY_MISSING", raising=False)
    target = {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "FP_DRY_MISSING"}
    path = write_battery(tmp_path, target, templates=1)
    code, out, _ = run_cli(["run", str(path), "--dry-run"], capsys)
    assert code == 0
    assert "FP_DRY_MISSING is not set" in out and "authorization: Bearer ***" in out


def test_dry_run_of_a_mock_target_shows_the_request_object(tmp_path, capsys):
    path = write_battery(tmp_path, {"kind": "mock"}, templates=1)
    code, out, _ = run_cli(["run", str(path), "--dry-run"], capsys)
    assert code == 0 and "has no wire format" in out and '"context"' in out


def test_expand_writes_the_rendered_messages(tmp_path, capsys):
    path = write_battery(tmp_path, {"kind": "mock"}, templates=1, names={"a": ["Lucía"], "b": ["Fátima"]},
                        crm_in_prompt=True)
    out_file = tmp_path / "cases.jsonl"
    code, _, _ = run_cli(["expand", str(path), "-o", str(out_file)], capsys)
    assert code == 0
    cases = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    for c in cases:
        name = c["variants"]["origen"]
        assert c["messages"][0]["content"].endswith(f"nombre: {name}")


def test_dry_run_with_the_default_key_variable_unset(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    target = {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}  # api_key_env by default
    path = write_battery(tmp_path, target, templates=1)
    code, out, _ = run_cli(["run", str(path), "--dry-run"], capsys)
    assert code == 0 and "OPENAI_API_KEY is not set" in out and "authorization: Bearer ***" in out
