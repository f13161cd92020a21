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


class _RunObject:
    """Stands for :class:`fairpair.store.Run`: the stages take anything with a ``path``."""

    def __init__(self, path: Path):
        self.path = path


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

    measured = pipeline.measure(_RunObject(run_dir), settings)  # a Run-like object works as well as a path
    assert measured.counts == {"ok": 2 * cases, "missing": 0, "failed": 0, "skipped": 0}

    analyzed = pipeline.analyze(run_dir, settings)
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    verdicts = [c["verdict"] for c in results["comparisons"]]
    assert analyzed.counts["comparisons"] == len(verdicts) == 1
    assert analyzed.counts[verdicts[0]] == 1 and analyzed.output.comparisons[0].verdict == verdicts[0]

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
