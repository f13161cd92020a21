"""``fairpair init`` writes a commented battery that validates and runs (issue 14, point 9)."""

from __future__ import annotations

import time

import pytest
import yaml

from fairpair.battery import load_battery
from fairpair.battery._init import TARGET_PRESETS, InitChoices, starter_battery
from run_helpers import refused_port, run_cli


def _cli(capsys, *args):
    """``fairpair ARGS`` in-process: (exit code, stdout and stderr as printed, one after the other)."""
    code, out, err = run_cli(args, capsys, collapse=False)
    return code, out + err


@pytest.mark.parametrize("language", ["es", "en"])
@pytest.mark.parametrize("target", sorted(TARGET_PRESETS))
def test_every_starter_battery_validates(tmp_path, language, target):
    path = tmp_path / "b.yaml"
    path.write_text(starter_battery(InitChoices(language=language, target=target)), encoding="utf-8")
    lb = load_battery(path)
    b = lb.battery
    assert b.language == language and len(b.templates) == 3 and len(b.analysis.comparisons) == 2
    assert b.target.kind == TARGET_PRESETS[target]["kind"]
    if TARGET_PRESETS[target]["url"] and b.target.kind == "openai":
        assert b.target.options()["base_url"] == TARGET_PRESETS[target]["url"]
    assert path.read_text(encoding="utf-8").count("# ") >= 10  # commented


def test_init_writes_a_battery_that_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out = _cli(capsys, "init", "--language", "en", "--groups", "en/white/male,en/black/male")
    assert code == 0, out
    data = yaml.safe_load((tmp_path / "battery.yaml").read_text(encoding="utf-8"))
    assert data["attributes"]["origin"]["groups"]["white"]["lexicon"] == "en/white/male"
    assert "next: fairpair plan battery.yaml; fairpair check battery.yaml" in out
    code, out = _cli(capsys, "run", "battery.yaml", "--out", "run", "-q", "--no-report")
    assert code == 0, out
    assert "target mock: 18/18 answered, 0 failed" in out
    code, out = _cli(capsys, "init")  # never overwrites
    assert code == 2 and "already exists; fairpair init never overwrites a file" in out


def test_init_with_a_refused_port_ends_in_exit_2_within_seconds(tmp_path, capsys):
    port = refused_port()
    b = tmp_path / "b.yaml"
    code, out = _cli(capsys, "init", b, "--target", "ollama", "--url", f"http://127.0.0.1:{port}/v1")
    assert code == 0, out
    t0 = time.monotonic()
    code, out = _cli(capsys, "run", b, "--out", tmp_path / "run")
    assert code == 2
    assert time.monotonic() - t0 < 15
    assert "the first case failed, so nothing else was sent" in out and "unreachable" in out
    assert "internal error" not in out


def test_init_refuses_unknown_choices(tmp_path, capsys):
    code, out = _cli(capsys, "init", tmp_path / "x.yaml", "--groups", "es/spain/female,es/magreb/female")
    assert code == 2 and "did you mean 'es/maghreb/female'?" in out
    code, out = _cli(capsys, "init", tmp_path / "x.yaml", "--target", "olama")
    assert code == 2 and "unknown target 'olama'" in out
    assert not (tmp_path / "x.yaml").exists()


@pytest.mark.parametrize("value, says", [
    ("foo", "unknown target 'foo'; --target must be mock, openai, ollama, vllm, lmstudio, http or local"),
    ("olama", "unknown target 'olama'; --target must be mock, openai, ollama, vllm, lmstudio, http or local "
              "(did you mean 'ollama'?)"),
    ("python", "init has no starter for the target kind 'python'; --target must be mock, openai, ollama, vllm, "
               "lmstudio, http or local (write a 'python' target block by hand: see examples/targets/)"),
    ("litellm", "init has no starter for the target kind 'litellm'"),
    ("", "unknown target ''"),
])
def test_init_target_is_one_of_the_kinds_it_writes(tmp_path, value, says):
    from typer.testing import CliRunner

    from fairpair.cli import app

    out = tmp_path / "x.yaml"
    res = CliRunner().invoke(app, ["init", str(out), "--target", value])
    text = " ".join(res.output.split())  # rich wraps the usage error's box
    assert res.exit_code == 2 and "Invalid value for '--target'" in text and says in text
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert "Traceback" not in res.output and not out.exists()
    ok = CliRunner().invoke(app, ["init", str(out), "--target", "vllm"])
    assert ok.exit_code == 0 and 'base_url: "http://localhost:8000/v1"' in out.read_text(encoding="utf-8")


def test_the_readme_walk_with_a_refused_port(tmp_path, capsys, monkeypatch):
    """The README's "your own audit" commands, with nothing listening on the target's port."""
    import re
    import shlex
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Your own audit in three commands", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]
    assert [c.split()[1] for c in commands] == ["init", "check", "run"]
    port = refused_port()
    monkeypatch.chdir(tmp_path)
    init = re.sub(r"http://localhost:\d+", f"http://127.0.0.1:{port}", commands[0])
    code, out = _cli(capsys, *shlex.split(init)[1:])
    assert code == 0, out
    t0 = time.monotonic()
    code, out = _cli(capsys, *shlex.split(commands[1])[1:])  # fairpair check
    assert code == 2 and "unreachable" in out
    run = commands[2].split("&&")[0]
    code, out = _cli(capsys, *shlex.split(run)[1:])  # fairpair run
    assert code == 2 and "the first case failed, so nothing else was sent" in out
    assert time.monotonic() - t0 < 20
    code, out = _cli(capsys, *shlex.split(commands[2].split("&&")[1])[1:])  # fairpair status
    assert code == 0 and "1 failed" in out and "left to do:" in out
