"""The report reads the run once into one typed view model and renders every output from it (issue 15, item 7).

``fairpair report RUN`` and ``fairpair run`` (``pipeline.after_run``) build exactly one
:class:`~fairpair.report.ReportModel`; after it is built, nothing opens the run or its store
(HTML, Markdown, JSON and the terminal table are rendered from the model). The model's records
are typed (the analysis's :class:`~fairpair.analysis.ComparisonResult` and friends, and frozen
view records), and the JSON summary carries the values of ``results.json`` unchanged.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from fairpair.analysis import ComparisonResult, JudgeBlock, OmnibusResult
from fairpair.cli import main
from fairpair.report import ReportModel, load_report_data, report_model, write_report
from fairpair.report._view import AAControlRow, CollectedRow, DroppedRow, EvidenceBlock, Figures, VerdictRow
from fairpair.store import Run, Store

from .conftest import COMPARISONS, LABELS, MEASURES, _battery


@pytest.fixture
def events(monkeypatch):
    """Log ``open`` (Run.open, Store.open) and ``build`` (a ReportModel made) in the order they happen."""
    log: list[str] = []
    run_open, store_open = Run.open.__func__, Store.open.__func__
    init = ReportModel.__init__

    def open_run(cls, *a, **kw):
        log.append("open")
        return run_open(cls, *a, **kw)

    def open_store(cls, *a, **kw):
        log.append("open")
        return store_open(cls, *a, **kw)

    def build(self, *a, **kw):
        log.append("build")
        init(self, *a, **kw)

    monkeypatch.setattr(Run, "open", classmethod(open_run))
    monkeypatch.setattr(Store, "open", classmethod(open_store))
    monkeypatch.setattr(ReportModel, "__init__", build)
    return log


def test_fairpair_report_builds_one_model_and_reads_the_run_once(mock_run, tmp_path, events, capsys):
    main(["report", str(mock_run), "--out", str(tmp_path / "rep"), "--lang", "en"])
    out = capsys.readouterr().out
    assert "report.html" in out and "A − B" in out  # the files and the verdict table
    assert events.count("build") == 1
    # the run directory opened once (Run.open) and its store once (read-only, at the first read)
    assert events == ["open", "open", "build"]
    assert json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))["verdicts"]


def test_fairpair_run_builds_one_model_and_no_stage_after_it_opens_the_store(tmp_path, events, capsys):
    b = _battery(name="tienda_once", templates=3, repetitions=2, labels=LABELS["es"], comparisons=COMPARISONS,
                 measures=MEASURES, target={"kind": "mock", "bias": {"magreb": {"refund": 0.2}}})
    bpath = tmp_path / "tienda_once.yaml"
    bpath.write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False), encoding="utf-8")
    main(["run", str(bpath), "--out", str(tmp_path / "run"), "-q"])
    assert (tmp_path / "run" / "report" / "report.html").exists()
    assert events.count("build") == 1
    assert "open" not in events[events.index("build"):]  # rendering (files, terminal) reads only the model
    assert events[events.index("build") - 2:events.index("build")] == ["open", "open"]


def test_rendering_a_built_model_opens_nothing(mock_run, tmp_path, events):
    from rich.console import Console

    from fairpair.report import print_verdicts

    with Run.open(mock_run) as run:
        model = report_model(run, language="es")
    del events[:]
    write_report(mock_run, out=tmp_path, model=model)
    print_verdicts(Console(file=open(tmp_path / "t.txt", "w"), width=160), model=model)
    assert events == []


def test_the_view_model_is_typed_and_frozen(mock_run):
    with Run.open(mock_run) as run:
        model = report_model(run, language="en", with_figures=False)
        results = run.results()
    assert model.rows and all(isinstance(r, VerdictRow) and isinstance(r.result, ComparisonResult)
                              for r in model.rows)
    # the records of results.json, as read (answer statuses no answer has are one line after the table)
    shown = [c for c in results.comparisons
             if not (c.measure.startswith("answer.") and c.verdict != "fail" and c.value_a == c.value_b == 0)]
    assert [r.result for r in model.rows] == shown and len(shown) < len(results.comparisons)
    assert model.omnibus and all(isinstance(o, OmnibusResult) for o in model.omnibus)
    assert isinstance(model.judge, JudgeBlock)
    assert model.evidence and all(isinstance(e, EvidenceBlock) and e.row.verdict == "fail" for e in model.evidence)
    assert all(isinstance(d, DroppedRow) for d in model.dropped)
    assert all(isinstance(a, AAControlRow) for a in model.aa_controls)
    assert model.figures == Figures()  # built without figures (the terminal's model)
    assert model.collected and all(isinstance(c, CollectedRow) for c in model.collected)
    assert sum(c.cases for c in model.collected) == model.n_cases
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.rows[0].verdict = "pass"  # type: ignore[misc]
    with pytest.raises(ValueError):  # pydantic: frozen
        model.rows[0].result.verdict = "pass"  # type: ignore[misc]


def test_json_summary_carries_the_values_of_results_json(mock_run, tmp_path):
    raw = json.loads((mock_run / "results.json").read_text(encoding="utf-8"))
    paths = write_report(mock_run, out=tmp_path, language="en")
    summary = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert len(summary["verdicts"]) == len(raw["comparisons"])
    for v, c in zip(summary["verdicts"], raw["comparisons"], strict=True):
        for key in ("id", "target", "measure", "attribute", "design", "group_a", "group_b", "scale", "primary",
                    "verdict", "estimate", "ci", "margin", "test", "pvalue", "pvalue_adjusted", "correction",
                    "n_pairs", "n_dropped"):
            assert v[key] == c[key], key
    assert summary["self_judging"] is raw["judge"]["self_judging"]


def test_report_data_accepts_a_results_json_object(mock_run):
    # a results.json object given to ReportData is validated into the typed record every stage reads
    data = load_report_data(mock_run, language="en")
    raw = json.loads((mock_run / "results.json").read_text(encoding="utf-8"))
    again = dataclasses.replace(data, results=raw)
    assert again.results == data.results and isinstance(again.comparisons[0], ComparisonResult)
