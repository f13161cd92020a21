"""Every understood failure is exit 2 with one message (issue 14, points 7 and 8): a store damaged in the
middle, a malformed results.json, ``expand -o`` into a missing folder, nested includes and their errors."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from fairpair.battery import load_battery
from fairpair.errors import BatteryError
from fairpair.records import RESULTS_SCHEMA
from fairpair.testing import write_battery


@pytest.fixture(scope="module")
def done_run(tmp_path_factory):
    from fairpair.cli import main

    tmp = tmp_path_factory.mktemp("understood")
    b = write_battery(tmp / "b", {"kind": "mock"}, templates=2)
    try:
        main(["run", str(b), "--out", str(tmp / "run"), "-q", "--no-report"])
    except SystemExit as exc:
        assert not exc.code
    return b, tmp / "run"


def _damage(run: Path, dest: Path) -> Path:
    shutil.copytree(run, dest)
    p = dest / "store.sqlite"
    for extra in ("store.sqlite-wal", "store.sqlite-shm"):
        (dest / extra).unlink(missing_ok=True)
    data = bytearray(p.read_bytes())
    # the middle half of the file: wherever the tables' pages lie (the layout moves as the schema grows),
    # every command that reads them meets the damage; page 1 (the schema) stays intact
    lo, hi = max(len(data) // 4, 4096), 3 * len(data) // 4
    data[lo:hi] = b"Z" * (hi - lo)
    p.write_bytes(bytes(data))
    return p


@pytest.mark.parametrize("command", ["report", "analyze", "export", "status"])
def test_a_store_damaged_in_the_middle_is_one_message_and_exit_2(done_run, tmp_path, cli, command):
    store = _damage(done_run[1], tmp_path / "damaged")
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    r = cli(command, tmp_path / "damaged")
    if command == "status" and r.code == 0:  # status reads only intact pages of this damage
        return
    assert r.code == 2, r.output
    assert "internal error" not in r.output
    assert f"{store}: the run store is damaged (database disk image is malformed)" in r.err
    assert ".recover" in r.err and "another --out" in r.err
    if command in ("report", "analyze", "export", "status"):
        assert hashlib.sha256(store.read_bytes()).hexdigest() == before  # touched nothing


def test_a_damaged_store_in_run_is_one_message(done_run, tmp_path, cli):
    store = _damage(done_run[1], tmp_path / "damaged")
    r = cli("run", done_run[0], "--out", tmp_path / "damaged", "-q")
    assert r.code == 2, r.output
    assert "the run store is damaged" in r.err and str(store) in r.err


@pytest.mark.parametrize("content, expected", [
    (f'{{"schema": "{RESULTS_SCHEMA}", "comparisons": [', "cannot read the analysis results"),
    (f'{{"schema": "{RESULTS_SCHEMA}", "comparisons": 5}}', "results.json is malformed: "),
])
def test_malformed_results_json_under_report(done_run, tmp_path, cli, content, expected):
    shutil.copytree(done_run[1], tmp_path / "r")
    (tmp_path / "r" / "results.json").write_text(content, encoding="utf-8")
    r = cli("report", tmp_path / "r")
    assert r.code == 2, r.output
    assert expected in r.err and str(tmp_path / "r" / "results.json") in r.err
    # the hint names this run, never a placeholder
    assert f"`fairpair analyze {tmp_path / 'r'}` writes it again from the run's store" in r.err
    assert "analyze RUN" not in r.err
    # off a terminal the report's start is a plain progress line (fairpair._progress); the error is two lines
    lines = [ln for ln in r.err.strip().splitlines() if ln != "writing the report: started"]
    assert "internal error" not in r.output and len(lines) <= 2


def test_expand_into_a_missing_folder(done_run, tmp_path, cli):
    r = cli("expand", done_run[0], "-o", tmp_path / "no" / "such" / "cases.jsonl")
    assert r.code == 2
    assert f"{tmp_path / 'no' / 'such'}: the output folder does not exist" in r.err
    assert not (tmp_path / "no").exists()


def _battery_with(tmp_path: Path) -> dict:
    return json.loads(write_battery(tmp_path / "base", {"kind": "mock"}).read_text(encoding="utf-8"))


def test_includes_nest(tmp_path):
    data = _battery_with(tmp_path)
    target = data.pop("target")
    seed = data.pop("seed")
    (tmp_path / "c.yaml").write_text(json.dumps({"target": target}), encoding="utf-8")
    (tmp_path / "b.yaml").write_text(json.dumps({"include": ["c.yaml"], "seed": seed}), encoding="utf-8")
    (tmp_path / "a.yaml").write_text(json.dumps({**data, "include": ["b.yaml"]}), encoding="utf-8")
    lb = load_battery(tmp_path / "a.yaml")
    assert lb.battery.target.kind == "mock" and lb.battery.seed == seed


def test_an_include_cycle_through_a_second_file_names_that_file(tmp_path):
    data = _battery_with(tmp_path)
    (tmp_path / "b.yaml").write_text('seed: 3\ninclude: [a.yaml]\n', encoding="utf-8")
    (tmp_path / "a.yaml").write_text(json.dumps({**data, "include": ["b.yaml"]}), encoding="utf-8")
    with pytest.raises(BatteryError) as ei:
        load_battery(tmp_path / "a.yaml")
    e = ei.value
    assert "include cycle: a.yaml -> b.yaml -> a.yaml" in e.message
    assert e.file == str(tmp_path / "b.yaml") and e.line == 2


def test_an_error_inside_a_nested_include_names_its_file(tmp_path):
    data = _battery_with(tmp_path)
    (tmp_path / "b.yaml").write_text('seed: 3\ninclude: [missing.yaml]\n', encoding="utf-8")
    (tmp_path / "a.yaml").write_text(json.dumps({**data, "include": ["b.yaml"]}), encoding="utf-8")
    with pytest.raises(BatteryError) as ei:
        load_battery(tmp_path / "a.yaml")
    assert "included file not found" in ei.value.message and ei.value.file == str(tmp_path / "b.yaml")
    assert "unknown key" not in ei.value.format()
