"""``fairpair.store.Run``: one object opens a run directory (lock, store, recorded battery, manifest,
results.json) and reads it back as typed, frozen records."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from fairpair.analysis import ComparisonResult, Results, analyze_run
from fairpair.battery import load_battery
from fairpair.errors import FairpairError
from fairpair.measures import measure_run
from fairpair.run import RunSettings, execute_run
from fairpair.store import Case, Measurement, Response, Run
from fairpair.testing import small_battery

BATTERY = small_battery(
    name="store_api", seed=3, repetitions=2, target={"kind": "mock", "bias": {"magreb": {"refund": 0.3}}},
    measures={"refund": {"kind": "keywords", "any_of": ["reembolso completo"]}, "words": {"kind": "word_count"}},
    analysis={"bootstrap_resamples": 200, "comparisons": [
        {"id": "refund", "measure": "refund", "attribute": "origen", "reference": "espana"}]})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("store_api")
    (d / "b.yaml").write_text(json.dumps(BATTERY, ensure_ascii=False), encoding="utf-8")
    execute_run(load_battery(d / "b.yaml"), d / "run", RunSettings(concurrency=2))
    measure_run(d / "run")
    analyze_run(d / "run")
    return d / "run"


def test_a_missing_directory_is_an_error(tmp_path):
    with pytest.raises(FairpairError, match="run directory not found"):
        Run.open(tmp_path / "nope")
    with pytest.raises(FairpairError, match="run directory not found"):
        Run.open(tmp_path / "nope", "w")
    with pytest.raises(ValueError, match="mode"):
        Run.open(tmp_path, "a")  # type: ignore[arg-type]


def test_writing_holds_the_lock_reading_does_not(run_dir):
    with Run.open(run_dir, "w") as run:
        assert run.mode == "w"
        with pytest.raises(FairpairError, match="in use by fairpair pid"):
            Run.open(run_dir, "w")
        with Run.open(run_dir) as reader:  # readers need no lock
            assert reader.store.n_cases() == 16
    with Run.open(run_dir, "w"):  # released on close
        pass


def test_the_recorded_battery_and_the_manifest(run_dir):
    with Run.open(run_dir) as run:
        loaded = run.battery()
        assert loaded.battery.name == "store_api" and run.battery() is loaded  # read once
        assert sorted(loaded.battery.measures) == ["refund", "words"]
        m = run.manifest()
        assert m["battery"] == "store_api" and m["counts"]["mock"]["answered"] == 16


def test_typed_frozen_records(run_dir):
    with Run.open(run_dir) as run:
        cases = list(run.cases())
        assert len(cases) == 16 and all(isinstance(c, Case) for c in cases)
        assert run.case(cases[0].id) == cases[0] and run.case("no-such-id") is None
        answers = list(run.responses())
        assert len(answers) == 16 and all(isinstance(r, Response) and r.status == "ok" for r in answers)
        ms = list(run.measurements())
        assert len(ms) == 32 and all(isinstance(m, Measurement) for m in ms)
        # the scale each measure declares: keywords is yes/no, word_count a count
        assert {m.measure: m.scale for m in ms} == {"refund": "binary", "words": "count"}
        assert {type(m.value) for m in ms if m.measure == "refund"} == {bool}
        with pytest.raises(dataclasses.FrozenInstanceError):
            ms[0].value = 1  # type: ignore[misc]
        # the scale is stored with each row: the bare store reads it too
        assert {m.measure: m.scale for m in run.store.measurements()} == {"refund": "binary", "words": "count"}
        assert run.store.measure_scales() == {"refund": "binary", "words": "count"}


def test_results_are_typed(run_dir):
    raw = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    with Run.open(run_dir) as run:
        res = run.results()
        assert isinstance(res, Results)
        assert all(isinstance(c, ComparisonResult) for c in res.comparisons)
        assert [(c.id, c.group_a, c.group_b, c.n_pairs) for c in res.comparisons] == \
            [(c["id"], c["group_a"], c["group_b"], c["n_pairs"]) for c in raw["comparisons"]]
        assert res.comparisons[0].n_pairs == 8  # 2 templates x 2 repetitions x 2 positions


def test_results_absent_and_of_another_schema(tmp_path, run_dir):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    (copy / "results.json").unlink()
    with Run.open(copy) as run:
        assert run.results() is None and run.results_json() is None
    (copy / "results.json").write_text(json.dumps({"schema": "fairpair.results/1"}), encoding="utf-8")
    with Run.open(copy) as run:
        with pytest.raises(FairpairError, match="results.json has schema 'fairpair.results/1'"):
            run.results()
        assert run.results_json(validate=False) == {"schema": "fairpair.results/1"}


def test_write_results_keeps_the_earlier_file(tmp_path, run_dir):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    with Run.open(copy) as run:
        res = run.results()
        run.write_results(res.model_copy(update={"notes": ["another"]}))
        assert run.results().notes == ["another"]
    kept = list((copy / "results.previous").iterdir())
    assert len(kept) == 1 and json.loads(kept[0].read_text(encoding="utf-8"))["notes"] != ["another"]


def test_the_manifest_merge_is_typed(tmp_path, run_dir):
    """Issue 27: each stage's keys are merged over the file's as RunManifest fields (a key set replaces the
    file's whole, the others are kept, a key a later fairpair added is kept, a wrongly typed one dropped)."""
    import shutil

    from fairpair.records import RunManifest

    old = RunManifest.model_validate({"battery": "b", "measurement": {"judge": "x"}, "later_key": [1]})
    new = old.merged(RunManifest.model_validate({"measurement": {"embedders": []}, "import": {"rows": 3}}))
    assert new.to_dict() == {"battery": "b", "measurement": {"embedders": []}, "later_key": [1],
                             "import": {"rows": 3}}
    assert old.measurement == {"judge": "x"}  # the original is not changed
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    path = copy / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["finished_at"] = 12345  # the wrong type (a damaged file): dropped, every other key kept
    data["later_key"] = {"kept": True}
    path.write_text(json.dumps(data), encoding="utf-8")
    with Run.open(copy, "w") as run:
        written = run.write_manifest({"measurement": {"engine": "local"}})
    assert written["measurement"] == {"engine": "local"} and written["later_key"] == {"kept": True}
    assert "finished_at" not in written and written["battery"] == data["battery"]
    assert written["counts"] == data["counts"] and written["plan_changed_after_registration"] is False
    assert json.loads(path.read_text(encoding="utf-8")) == written
    with Run.open(copy, "w") as run, pytest.raises(ValueError):  # a stage writing the wrong type is a bug
        run.write_manifest({"counts": "nope"})
