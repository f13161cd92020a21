"""docs/batch.md's commands end to end, answers and judges through a loopback batch server of each format:
a two-scene sample of the persona study (pairwise judge in both orders, embeddings) and the shop battery."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fairpair.cli import main
from fairpair.measures import embed as embed_mod
from fairpair.testing import hash_embedder, names_table
from fairpair.testing._aio import BatchBehaviour, serve_anthropic_api, serve_batch_api
from run_helpers import rows

ROOT = Path(__file__).resolve().parents[2]


def blocks(fmt: str, server) -> tuple[dict, dict]:
    """The ``target`` and ``judge`` blocks of docs/batch.md's audit.yaml, at the loopback server."""
    if fmt == "openai":
        return ({"kind": "openai", "base_url": server.base_url, "model": "mock-1", "api_key_env": None},
                {"kind": "openai", "base_url": server.base_url, "model": "judge-1", "api_key_env": None,
                 "temperature": 0})
    root = server.base_url.removesuffix("/v1")
    return ({"kind": "anthropic", "base_url": root, "model": "mock-1", "api_key_env": "FAKE_ANTHROPIC_KEY",
             "max_tokens": 160},
            {"kind": "anthropic", "base_url": root, "model": "judge-1", "api_key_env": "FAKE_ANTHROPIC_KEY",
             "temperature": 0})


def cli(capsys, *argv: str) -> str:
    try:
        main(list(argv))
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    return capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
@pytest.mark.parametrize("study", ["persona", "shop"])
def test_the_docs_commands_run_a_battery_through_batches(tmp_path, capsys, monkeypatch, fmt, study):
    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", "sk-ant-loopback-0000")
    monkeypatch.setattr(embed_mod, "get_embedder", hash_embedder)
    serve = serve_batch_api if fmt == "openai" else serve_anthropic_api
    if study == "persona":
        battery, sample = ROOT / "examples/persona_power/battery.yaml", \
            ["--templates", "work-promotion,work-shift", "--axes", "age"]
    else:
        battery, sample = ROOT / "examples/tienda_online/battery.yaml", ["--templates", "pedido_roto,financiacion"]
    mock = {"language": "en" if study == "persona" else "es"}  # the mock answers in the battery's language
    with serve(BatchBehaviour(), names=names_table(), mock=mock) as (server, api):
        target, judge = blocks(fmt, server)
        folder = tmp_path / battery.parent.name  # docs/batch.md: audit.yaml beside the battery it includes
        shutil.copytree(battery.parent, folder)
        audit = folder / "audit.yaml"
        # the scripted judge gives one verdict to everything: its self-test (run through the batch) fails
        audit.write_text(json.dumps({"include": ["battery.yaml"], "name": f"{study}_batch", "target": target,
                                     "judge": judge, "judge_self_test": "warn"}), encoding="utf-8")
        run = str(tmp_path / "runs" / "audit")
        args = ["run", str(audit), *sample, "--out", run, "--yes", "-q"]
        first = cli(capsys, *args, "--batch")
        assert "submitted" in first and "come back later" in first
        waiting = cli(capsys, "status", run)
        assert "waiting: batch" in waiting
        second = cli(capsys, *args)  # the answers are stored; the judge's calls go in their batch
        assert "the judge's batches are not all in" in second
        third = cli(capsys, *args)  # the judge's answers are stored; analysis and report
        assert "report:" in third
        status = cli(capsys, "status", run)
    answers = rows(run, "SELECT COUNT(*), COUNT(DISTINCT case_id) FROM responses WHERE status='ok'")
    cases = rows(run, "SELECT COUNT(*) FROM cases")[0][0]
    assert answers == [(cases, cases)] and "waiting:" not in status
    if study == "persona":
        assert cases == 40  # 2 scenes x 2 power conditions x (9 age pairs + 1 baseline)
        pref = rows(run, "SELECT detail FROM measurements WHERE measure='preferencia' AND status='ok'")
        assert len(pref) == 36 and all(set(json.loads(d)["orders"]) == {"AB", "BA"} for (d,) in pref)
    else:
        tone = rows(run, "SELECT COUNT(*) FROM measurements WHERE measure='tono.courtesy' AND status='ok'")
        assert tone == [(cases,)]
    # every judge call went through the batch API, none live
    assert (api.live if fmt == "anthropic" else 0) == 0
    assert (Path(run) / "report" / "report.html").exists()


def test_the_shipped_batch_example_runs_against_its_loopback_server(tmp_path, capsys):
    """docs/batch.md's "Try it on your machine": examples/batch/server.py (a subprocess, on a free port) and
    the four commands, with audit.yaml's base_url pointed at that port."""
    import re
    import subprocess
    import sys

    folder = tmp_path / "batch"
    shutil.copytree(ROOT / "examples" / "batch", folder)
    proc = subprocess.Popen([sys.executable, str(folder / "server.py"), "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = re.search(r"on (http://127\.0\.0\.1:\d+/v1)", line).group(1)
        audit = folder / "audit.yaml"
        text = audit.read_text(encoding="utf-8")
        assert text.count("http://127.0.0.1:8790/v1") == 2  # the port the docs and server.py default to
        audit.write_text(text.replace("http://127.0.0.1:8790/v1", url), encoding="utf-8")
        run = str(tmp_path / "runs" / "batch")
        args = ["run", str(audit), "--out", run, "--yes", "-q"]
        assert "submitted 128 requests" in cli(capsys, *args, "--batch")
        assert "waiting: batch" in cli(capsys, "status", run)
        assert "the judge's batches are not all in" in cli(capsys, *args)
        assert "report:" in cli(capsys, *args)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert rows(run, "SELECT COUNT(*) FROM measurements WHERE measure='tone.courtesy' AND status='ok'") == [(128,)]


@pytest.mark.parametrize("example, target, judge", [("persona_power", "anthropic", "openai"),
                                                    ("tienda_online", "openai", "openai")])
def test_the_docs_audit_files_are_shipped(example, target, judge):
    from fairpair.battery import load_battery

    b = load_battery(ROOT / "examples" / example / "audit.yaml").battery
    assert (b.target.kind, b.judge.kind) == (target, judge)


def test_run_batch_refusal_leaves_no_run_directory(tmp_path, capsys):
    """A target without a batch API (here the mock) is refused, exit 2, before the run directory is made."""
    from fairpair.testing import small_battery
    from run_helpers import run_cli

    battery = tmp_path / "b.yaml"
    battery.write_text(json.dumps(small_battery(name="nobatch")), encoding="utf-8")
    out = tmp_path / "runs" / "nobatch"
    code, stdout, err = run_cli(["run", battery, "--out", out, "--batch", "--yes"], capsys)
    assert code == 2 and "has no batch API" in err and "run directory" not in stdout
    assert not out.exists() and not out.parent.exists()
