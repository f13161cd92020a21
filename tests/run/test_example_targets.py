"""examples/targets/: every target block validates and answers ``fairpair check`` against a loopback
server standing in for the real one (issue 14, point 9)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fairpair.battery import load_battery
from fairpair.cli import main
from fairpair.testing import serve_json, serve_openai, write_battery

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "targets"
OPENAI_KINDS = {"ollama.yaml": "http://localhost:11434", "vllm.yaml": "http://localhost:8000",
                "lmstudio.yaml": "http://localhost:1234"}


def _battery_including(tmp_path: Path, block: str) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "targets")
    b = write_battery(tmp_path, {"kind": "mock"}, templates=1, crm_in_prompt=True)  # the target is replaced below
    data = json.loads(b.read_text(encoding="utf-8"))
    del data["target"]
    data["include"] = [f"targets/{block}"]
    b.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return b


def _check(capsys, battery) -> tuple[int, str]:
    capsys.readouterr()
    try:
        main(["check", str(battery)])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out + out.err


def test_every_example_is_listed_and_validates(tmp_path):
    blocks = sorted(p.name for p in EXAMPLES.glob("*.yaml"))
    assert blocks == ["http.yaml", "lmstudio.yaml", "ollama.yaml", "python.yaml", "vllm.yaml"]
    for name in blocks:
        lb = load_battery(_battery_including(tmp_path / name, name))
        assert lb.battery.target is not None


@pytest.mark.parametrize("name", sorted(OPENAI_KINDS))
def test_openai_compatible_blocks_answer_check(tmp_path, capsys, name):
    with serve_openai() as server:
        b = _battery_including(tmp_path, name)
        block = tmp_path / "targets" / name
        block.write_text(block.read_text(encoding="utf-8").replace(OPENAI_KINDS[name], server.url),
                         encoding="utf-8")
        code, out = _check(capsys, b)
        model = server.received[0].json()["model"]
    assert code == 0, out
    assert "ok target openai (openai) answered case" in out
    assert model == load_battery(b).battery.target.options()["model"]


def test_http_block_answers_check(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BOT_TOKEN", "tok-example-123456")
    seen = []

    def handler(req):
        seen.append(req)
        body = req.json()
        return 200, {"reply": {"text": f"Hola {body['customer']['name']}, lo revisamos."}}

    with serve_json(handler) as server:
        b = _battery_including(tmp_path, "http.yaml")
        block = tmp_path / "targets" / "http.yaml"
        block.write_text(block.read_text(encoding="utf-8").replace("http://localhost:8080", server.url),
                         encoding="utf-8")
        code, out = _check(capsys, b)
    assert code == 0, out
    assert "ok target http (http) answered case" in out and "Hola Lucía, lo revisamos." in out
    assert seen[0].headers["authorization"] == "Bearer tok-example-123456"
    assert isinstance(seen[0].json()["messages"], list)


def test_python_block_answers_check(tmp_path, capsys):
    b = _battery_including(tmp_path, "python.yaml")
    data = json.loads(b.read_text(encoding="utf-8"))
    (tmp_path / "echo_bot.py").write_text((EXAMPLES / "echo_bot.py").read_text(encoding="utf-8"), encoding="utf-8")
    code, out = _check(capsys, b)
    assert code == 0, (out, data)
    assert "ok target python (python) answered case" in out and "Hola Lucía, hemos recibido" in out
