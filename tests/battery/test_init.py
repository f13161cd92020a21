"""``fairpair init`` writes a commented battery that validates and runs (issue 14, point 9)."""

from __future__ import annotations

import time
from pathlib import Path

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
    assert b.language == language and len(b.templates) == 8 and len(b.analysis.comparisons) == 2
    assert b.repetitions == 4 and all(g.take == 8 for g in next(iter(b.attributes.values())).groups.values())
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
    assert "target mock: 512/512 answered, 0 failed" in out  # 8 templates x 2 groups x 8 names x 4 repetitions
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


# ------------------------------------------------------------------ the starter can give a verdict


def _refund_rates(run_dir) -> dict[str, float]:
    """Share of answers with a refund per group, read straight from the store with sqlite3."""
    from run_helpers import rows

    got: dict[str, list[bool]] = {}
    for group, value in rows(run_dir, "SELECT json_extract(c.data, '$.groups.origen'), m.value FROM measurements m "
                                      "JOIN cases c USING (case_id) WHERE m.measure = 'reembolso' AND m.status = 'ok'"):
        got.setdefault(group, []).append(value == "true")
    return {g: sum(v) / len(v) for g, v in got.items()} | {f"n_{g}": len(v) for g, v in got.items()}


def _comparison(run_dir, measure: str) -> dict:
    import json

    res = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    return next(c for c in res["comparisons"] if c["measure"] == measure)


def test_the_starter_finds_the_mock_s_planted_gap(tmp_path, capsys, monkeypatch):
    """The starter was 3 templates x 3 names x 1 repetition: with templates and names random every comparison
    was 'insufficient design' whatever the target did. Now: `init --target ollama` prints the one command
    that writes the same battery on the mock (with its planted gap: Maghrebi names refunded 45% of the time
    instead of 70%), and that command's run ends in a fail for the refund comparison (exit 1 with --gate)."""
    import shlex

    monkeypatch.chdir(tmp_path)
    code, out = _cli(capsys, "init", "shop.yaml", "--target", "ollama")
    assert code == 0, out
    hint = " ".join(out.split()).split("offline first? the same battery on the mock target, with a planted gap: ",
                                       1)[1]
    assert hint == ("fairpair init shop_mock.yaml --target mock --lang es --groups es/spain/female,es/maghreb/female "
                    "--name shop && fairpair run shop_mock.yaml")
    first, second = (shlex.split(part)[1:] for part in hint.split("&&"))
    code, out = _cli(capsys, *first)
    assert code == 0, out
    assert "the es/maghreb/female names get a refund 45% of the time, the others 70%" in " ".join(out.split())
    real, mock = (yaml.safe_load(Path(f).read_text(encoding="utf-8")) for f in ("shop.yaml", "shop_mock.yaml"))
    assert real.pop("target")["kind"] == "openai"
    assert mock.pop("target") == {"kind": "mock", "language": "es", "bias": {"maghreb": {"refund": 0.45}}}
    assert real == mock  # the same battery, only the target differs
    assert real["name"] == "shop"  # named after the file
    code, out = _cli(capsys, *second, "--out", "run", "-q", "--no-report", "--gate")
    assert code == 1, out  # --gate: a pre-registered comparison fails
    rates = _refund_rates(tmp_path / "run")
    assert rates == {"spain": 180 / 256, "maghreb": 122 / 256, "n_spain": 256, "n_maghreb": 256}
    c = _comparison(tmp_path / "run", "reembolso")
    assert (c["group_a"], c["group_b"], c["n_pairs"], c["n_clusters"]) == ("maghreb", "spain", 256, 8)
    assert (c["n_names_a"], c["n_names_b"], c["design_reason"]) == (8, 8, None)
    # the balanced crossed design's group means are the plain rates
    assert c["value_a"] == pytest.approx(122 / 256) and c["value_b"] == pytest.approx(180 / 256)
    assert c["estimate"] == pytest.approx((122 - 180) / 256)
    assert c["verdict"] == "fail" and c["ci"][1] < -0.05 < 0 and c["ci"][0] < -0.25 < c["ci"][1]
    assert _comparison(tmp_path / "run", "palabras")["verdict"] == "pass"


def test_the_starter_without_the_planted_gap_does_not_fail(tmp_path, capsys, monkeypatch):
    import re

    monkeypatch.chdir(tmp_path)
    code, out = _cli(capsys, "init", "b.yaml")
    assert code == 0, out
    text = Path("b.yaml").read_text(encoding="utf-8")
    clean = re.sub(r"\n  bias:[^\n]*\n    maghreb: \{refund: 0\.45\}[^\n]*", "", text)
    assert clean != text and "bias" not in yaml.safe_load(clean)["target"]
    Path("b.yaml").write_text(clean, encoding="utf-8")
    code, out = _cli(capsys, "run", "b.yaml", "--out", "run", "-q", "--no-report", "--gate")
    assert code == 0, out
    rates = _refund_rates(tmp_path / "run")
    assert rates == {"spain": 181 / 256, "maghreb": 188 / 256, "n_spain": 256, "n_maghreb": 256}
    c = _comparison(tmp_path / "run", "reembolso")
    assert c["estimate"] == pytest.approx((188 - 181) / 256) and c["design_reason"] is None
    assert c["verdict"] == "inconclusive" and c["ci"][0] < 0 < c["ci"][1]


# ------------------------------------------------------------------ the model of an OpenAI-compatible server


@pytest.mark.parametrize("answer, model", [("mistral-nemo:12b", "mistral-nemo:12b"), ("", "llama3.2")])
def test_init_on_a_terminal_asks_the_ollama_model(tmp_path, monkeypatch, answer, model):
    """Picking ollama interactively asked the URL but never the model: every battery named llama3.2."""
    from typer.testing import CliRunner

    import fairpair.cli._battery as battery_cli
    from fairpair.cli import app

    monkeypatch.setattr(battery_cli, "_interactive", lambda: True)
    out = tmp_path / "shop.yaml"
    # language, groups (the default), target, URL (the default), model
    res = CliRunner().invoke(app, ["init", str(out)], input=f"en\n\nollama\n\n{answer}\n")
    assert res.exit_code == 0, res.output
    assert "model name (as the server lists it) [llama3.2]:" in res.output
    target = yaml.safe_load(out.read_text(encoding="utf-8"))["target"]
    assert (target["kind"], target["base_url"], target["model"]) == ("openai", "http://localhost:11434/v1", model)
    assert load_battery(out).battery.target.options()["model"] == model


def test_init_asks_no_model_for_a_target_without_one(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import fairpair.cli._battery as battery_cli
    from fairpair.cli import app

    monkeypatch.setattr(battery_cli, "_interactive", lambda: True)
    res = CliRunner().invoke(app, ["init", str(tmp_path / "m.yaml")], input="es\n\nmock\n")
    assert res.exit_code == 0, res.output
    assert "model name" not in res.output and "target URL" not in res.output
    assert yaml.safe_load((tmp_path / "m.yaml").read_text(encoding="utf-8"))["target"]["kind"] == "mock"


@pytest.mark.parametrize("flags, model", [([], "llama3.2"), (["--model", "qwen3:8b"], "qwen3:8b")])
def test_init_without_a_terminal_takes_model_or_the_preset(tmp_path, capsys, flags, model):
    b = tmp_path / "b.yaml"
    code, out = _cli(capsys, "init", b, "--target", "ollama", *flags)
    assert code == 0, out
    assert "model name" not in out  # nothing asked
    assert yaml.safe_load(b.read_text(encoding="utf-8"))["target"]["model"] == model
    assert TARGET_PRESETS["ollama"]["model"] == "llama3.2"


# ------------------------------------------------------------------ the battery's name


@pytest.mark.parametrize("file, name", [("shop.yaml", "shop"), ("Tienda Online.yaml", "Tienda_Online"),
                                        ("auditoría-2026.v2.yaml", "auditoria-2026.v2"), ("-ñ-.yaml", "n"),
                                        ("__.yaml", "my_audit"), ("battery.yaml", "battery")])
def test_init_names_the_battery_after_its_file(tmp_path, capsys, file, name):
    """`fairpair init shop.yaml` wrote `name: my_audit`: every battery, and its runs' directories
    (runs/<name>-<time>), had the same name."""
    code, out = _cli(capsys, "init", tmp_path / file)
    assert code == 0, out
    assert yaml.safe_load((tmp_path / file).read_text(encoding="utf-8"))["name"] == name
    assert f"battery '{name}'" in out


def test_init_name_option_wins_and_a_bad_one_is_refused(tmp_path, capsys):
    code, out = _cli(capsys, "init", tmp_path / "shop.yaml", "--name", "tienda_v1")
    assert code == 0, out
    assert yaml.safe_load((tmp_path / "shop.yaml").read_text(encoding="utf-8"))["name"] == "tienda_v1"
    code, out = _cli(capsys, "init", tmp_path / "x.yaml", "--name", "mi auditoría")
    assert code == 2 and "'mi auditoría' is not a battery name" in out
    assert "--name mi_auditoria" in " ".join(out.split())
    assert not (tmp_path / "x.yaml").exists()
