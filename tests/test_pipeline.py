"""The stages as functions of a run: ``stage(run, settings) -> StageResult``, and the pipeline as a loop."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from fairpair import pipeline
from fairpair.battery import load_battery
from fairpair.errors import FairpairError
from fairpair.store import Run
from run_helpers import run_cli

NAMES = {"espana": ["Lucía", "Carmen"], "magreb": ["Fátima", "Aicha"]}


def _battery(tmp: Path) -> Path:
    b = {"schema_version": 1, "name": "stages", "language": "es", "seed": 3, "repetitions": 2,
         "attributes": {"origen": {"signal": "name", "slot": "nombre", "groups": {
             g: {"variants": v} for g, v in NAMES.items()}}},
         "templates": [{"id": f"t{i}", "turns": [f"Hola, soy {{nombre}}. Caso {i}: quiero el reembolso."]}
                       for i in range(3)],
         "designs": [{"kind": "counterfactual", "attribute": "origen"}],
         "target": {"kind": "mock", "bias": {"magreb": {"refund": 0.2}}},
         "measures": {"reembolso": {"kind": "keywords", "any_of": ["reembolso"]}, "palabras": {"kind": "word_count"}},
         "analysis": {"bootstrap_resamples": 200, "generalize": {"names": "fixed"}, "comparisons": [
             {"id": "reembolso", "measure": "reembolso", "attribute": "origen", "reference": "espana"}]}}
    path = tmp / "stages.yaml"
    path.write_text(yaml.safe_dump(b, allow_unicode=True), encoding="utf-8")
    return path


def test_each_stage_returns_a_frozen_result_with_counts_that_match_the_files(tmp_path):
    lb = load_battery(_battery(tmp_path))
    settings = pipeline.Settings(battery=lb)
    cases = 3 * 2 * 2 * 2  # templates x groups x variants x repetitions

    exp = pipeline.expand(tmp_path / "cases.jsonl", settings)
    lines = (tmp_path / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    assert (exp.stage, exp.counts["cases"], len(lines)) == ("expand", cases, cases)
    assert json.loads((tmp_path / "cases.manifest.json").read_text())["total_cases"] == cases
    with pytest.raises(dataclasses.FrozenInstanceError):
        exp.stage = "x"  # type: ignore[misc]

    run_dir = tmp_path / "run"
    ran = pipeline.run(run_dir, settings)
    with sqlite3.connect(run_dir / "store.sqlite") as db:
        stored = db.execute("SELECT COUNT(*) FROM responses WHERE status = 'ok'").fetchone()[0]
    assert ran.counts == {"answered": cases, "failed": 0, "retried": 0, "cases": cases, "cases_added": 0}
    assert stored == cases and ran.warnings == () and ran.elapsed > 0

    with Run.open(run_dir, "w") as opened:  # the open run works as well as its path (and stays open)
        measured = pipeline.measure(opened, settings)
        assert opened.store.n_cases() == cases
    assert measured.counts == {"ok": 2 * cases, "missing": 0, "failed": 0, "skipped": 0}

    analyzed = pipeline.analyze(run_dir, settings)
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    verdicts = [c["verdict"] for c in results["comparisons"]]
    assert analyzed.counts["comparisons"] == len(verdicts) == 1 + 3  # the plan's, failed / empty / refused answers
    assert analyzed.counts[verdicts[0]] == verdicts.count(verdicts[0])
    assert [c.verdict for c in analyzed.output.comparisons] == verdicts

    reported = pipeline.report(run_dir, dataclasses.replace(settings, language="en"))
    assert reported.counts == {"files": 3}
    assert all(p.exists() for p in reported.output.values())
    assert json.loads(reported.output["json"].read_text(encoding="utf-8"))["language"] == "en"


def test_the_pipeline_is_a_loop_over_the_stages_and_after_run_keeps_its_meaning(tmp_path):
    from rich.console import Console

    lb = load_battery(_battery(tmp_path))
    run_dir = tmp_path / "run"
    results = pipeline.run_stages(run_dir, ["run", "measure", "analyze"], pipeline.Settings(battery=lb))
    assert [r.stage for r in results] == ["run", "measure", "analyze"]
    console = Console(record=True, width=200)
    code = pipeline.after_run(run_dir, lb, console, report=True, gate=False)
    text = console.export_text()
    assert code == 0 and f"report: {run_dir / 'report' / 'report.html'}" in text
    again = pipeline.measure(run_dir, pipeline.Settings())  # resumable: everything was measured before
    assert again.counts["ok"] == 0 and again.counts["skipped"] > 0
    with pytest.raises(FairpairError, match="unknown stage"):
        pipeline.run_stages(run_dir, ["measure", "judge"], pipeline.Settings())
    with pytest.raises(FairpairError, match="needs the battery"):
        pipeline.run(run_dir, pipeline.Settings())


def test_no_measure_with_nothing_measured_writes_no_results_nor_report(tmp_path, capsys):
    # before: results.json and a report with "insufficient design" for every comparison, no measure in it
    battery, run_dir = _battery(tmp_path), tmp_path / "run"
    code, out, _ = run_cli(["run", battery, "--out", run_dir, "--no-measure", "--no-preflight", "-q"], capsys)
    assert code == 0
    assert (run_dir / "store.sqlite").exists()
    assert not (run_dir / "results.json").exists() and not (run_dir / "report").exists()
    text = " ".join(out.split())
    assert "--no-measure: none of the 24 answers is measured; results.json and the report are not written" in text
    assert f"fairpair measure {run_dir}, then fairpair analyze {run_dir} and fairpair report {run_dir}" in text
    with sqlite3.connect(run_dir / "store.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM responses WHERE status = 'ok'").fetchone()[0] == 24
        assert db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 0
    # --gate has nothing to judge: a clear error (exit 2), not a gate on empty results
    code, out, _ = run_cli(["run", battery, "--out", run_dir, "--no-measure", "--gate", "--no-preflight", "-q"], capsys)
    assert code == 2 and not (run_dir / "results.json").exists()
    # the commands it names do the rest
    assert run_cli(["measure", run_dir], capsys)[0] == 0
    assert run_cli(["analyze", run_dir], capsys)[0] == 0 and (run_dir / "results.json").exists()


def test_no_measure_with_some_answers_measured_says_how_many_are_left(tmp_path, capsys):
    battery, run_dir = _battery(tmp_path), tmp_path / "run"
    lb = load_battery(battery)
    pipeline.run(run_dir, pipeline.Settings(battery=lb))
    pipeline.measure(run_dir, pipeline.Settings(measures=("reembolso",)))  # palabras is left unmeasured
    code, out, _ = run_cli(["run", battery, "--out", run_dir, "--no-measure", "--no-preflight", "-q"], capsys)
    assert code == 0
    text = " ".join(out.split())
    assert ("--no-measure: measure palabras: 24 of 24 answers not measured; the results and the report cover the "
            "measured ones only") in text
    assert "reembolso:" not in text.split("--no-measure")[1][:40]  # the measured measure is not listed
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    (c,) = [c for c in results["comparisons"] if not c["measure"].startswith("answer.")]  # answer statuses aside
    assert c["measure"] == "reembolso" and c["n_pairs"] == 12  # the measured answers are analysed
    assert (run_dir / "report" / "report.html").exists()


def test_one_open_run_through_analyze_and_report_hands_the_results_over_unread(tmp_path, monkeypatch):
    lb = load_battery(_battery(tmp_path))
    run_dir = tmp_path / "run"
    pipeline.run_stages(run_dir, ["run", "measure"], pipeline.Settings(battery=lb))
    with Run.open(run_dir, "r") as opened:
        analyzed = pipeline.analyze(opened, pipeline.Settings())
        assert opened.results() is analyzed.output  # the record returned, not results.json read back
        monkeypatch.setattr(Run, "results_json", lambda self, **kw: pytest.fail("results.json read back"))
        reported = pipeline.report(opened, pipeline.Settings())
    monkeypatch.undo()
    on_disk = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))  # still written for later stages
    assert [c["verdict"] for c in on_disk["comparisons"]] == [c.verdict for c in analyzed.output.comparisons]
    again = pipeline.report(run_dir, pipeline.Settings(report_out=tmp_path / "again"))  # read from the file
    md, md_again = (r.output["md"].read_text(encoding="utf-8").splitlines() for r in (reported, again))
    assert md[:-1] == md_again[:-1] and len(md) > 50  # alike but for the last line's time of writing
    with Run.open(run_dir) as opened, pytest.raises(FairpairError, match="writes the run"):
        pipeline.measure(opened, pipeline.Settings())  # a writing stage refuses a run open read-only
