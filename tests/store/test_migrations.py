"""Named migrations (the simonw/llm pattern): each migration a function, applied once and recorded by
name, so that two branches that each add one cannot collide; stores written before migrations had
names (``schema_version`` 1-3) are read as having the first that many applied.

``data/store-main-9f4b5d7.sqlite.gz`` is a store written by fairpair at 9f4b5d7 (numbered
migrations, ``schema_version`` 3): ``small_battery`` (seed 3, one repetition, mock target),
``execute_run`` then ``measure_run`` (measures ``refund`` and ``words``), checkpointed and vacuumed.
"""

from __future__ import annotations

import gzip
import sqlite3
from pathlib import Path

import pytest

from fairpair.battery import loaded_from_store
from fairpair.errors import FairpairError
from fairpair.records import Case, Measurement, Response
from fairpair.store import MIGRATIONS, SCHEMA_VERSION, Run, Store

OLD_STORE = Path(__file__).parent / "data" / "store-main-9f4b5d7.sqlite.gz"
NAMES = [m.__name__ for m in MIGRATIONS]


def _old_run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "old"
    run_dir.mkdir()
    (run_dir / "store.sqlite").write_bytes(gzip.decompress(OLD_STORE.read_bytes()))
    return run_dir


def _meta(run_dir: Path, key: str) -> str | None:
    con = sqlite3.connect(run_dir / "store.sqlite")
    try:
        row = con.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]
    finally:
        con.close()


def test_a_new_store_records_every_migration_by_name(tmp_path):
    with Store.open(tmp_path) as store:
        assert store.applied_migrations() == NAMES
    assert NAMES[:4] == ["m001_initial", "m002_answer_text_json", "m003_batches", "m004_measurement_scale"]
    assert len(set(NAMES)) == len(NAMES)
    assert _meta(tmp_path, "schema_version") == str(SCHEMA_VERSION)
    with Store.open(tmp_path, readonly=True) as store:  # nothing left to apply: a reader opens it
        assert store.n_cases() == 0


def test_a_store_of_main_migrates_and_reads(tmp_path):
    run_dir = _old_run(tmp_path)
    assert _meta(run_dir, "schema_version") == "3"
    with Run.open(run_dir) as run:  # a reader reads it as it is (its pending migrations: nothing stored)
        assert run.store.pending == set(NAMES[3:])  # m004_measurement_scale and every later one
        assert run.store.labels() == [] and run.store.label_samples() == []  # m005_human_labels: none stored
        assert run.store.applied_migrations() == NAMES[:3]
        assert len(list(run.cases())) == 8 and len(list(run.responses())) == 8
        assert {m.scale for m in run.measurements()} == {None} and run.store.measure_scales() == {}
    assert _meta(run_dir, "schema_version") == "3"
    with Run.open(run_dir, "w") as run:  # a writer migrates it  # a reader that may migrate (the one write it makes)
        assert run.store.applied_migrations() == NAMES
        cases = list(run.cases())
        assert len(cases) == 8 and all(isinstance(c, Case) for c in cases)
        answers = list(run.responses())
        assert len(answers) == 8 and all(isinstance(r, Response) and r.text for r in answers)
        ms = list(run.measurements())
        assert len(ms) == 16 and all(isinstance(m, Measurement) for m in ms)
        assert {m.measure for m in ms} == {"refund", "words"}
        assert {m.scale for m in ms} == {None}  # stored before the scale was recorded
        assert loaded_from_store(run.store).battery.name == "main_store"
        assert run.battery().battery.name == "main_store"
    assert _meta(run_dir, "schema_version") == str(SCHEMA_VERSION)
    with Store.open(run_dir) as store:  # migrated once: a new row stores its scale
        assert store.add_measurement(target="mock", case_id=cases[0].id, measure="extra", status="ok",
                                     value=True, scale="binary")
        assert store.measure_scales() == {"extra": "binary"}


def test_a_numbered_store_is_read_as_its_first_migrations(tmp_path):
    run_dir = _old_run(tmp_path)
    con = sqlite3.connect(run_dir / "store.sqlite")
    con.execute("DROP TABLE batch_states")
    con.execute("DROP TABLE batch_cases")
    con.execute("DROP TABLE batches")
    con.execute("UPDATE meta SET value='2' WHERE key='schema_version'")  # a store of before migration 3
    con.commit()
    con.close()
    with pytest.raises(FairpairError, match="schema 2 needs migrating"):  # as before: numbered ones missing
        Store.open(run_dir, readonly=True)
    with Store.open(run_dir) as store:
        assert store.applied_migrations() == NAMES
        assert store.batches() == []


def test_a_migration_this_fairpair_does_not_know_is_refused(tmp_path):
    with Store.open(tmp_path) as store:
        with store.transaction():
            store.conn.execute("INSERT INTO migrations VALUES ('m999_from_another_branch', 'now')")
    for readonly in (True, False):
        with pytest.raises(FairpairError, match="m999_from_another_branch.*upgrade fairpair"):
            Store.open(tmp_path, readonly=readonly)


def test_a_migration_added_later_is_applied_by_name(tmp_path, monkeypatch):
    with Store.open(tmp_path):
        pass

    def m900_a_branchs_table(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")

    monkeypatch.setattr("fairpair.store._sqlite.MIGRATIONS", [*MIGRATIONS, m900_a_branchs_table])
    with Store.open(tmp_path, readonly=True) as store:
        assert store.pending == {"m900_a_branchs_table"}
    with Store.open(tmp_path) as store:
        assert store.applied_migrations() == [*NAMES, "m900_a_branchs_table"]
    with Store.open(tmp_path, readonly=True) as store:
        assert store.applied_migrations()[-1] == "m900_a_branchs_table"


def test_a_stage_reads_the_recorded_battery_in_a_fresh_interpreter(tmp_path):
    # the store imports nothing of the battery: each stage reads the recorded battery through
    # fairpair.battery.recorded_battery, so importing the stage alone is enough (no import order)
    import os
    import subprocess
    import sys

    import fairpair

    run_dir = _old_run(tmp_path)
    src = str(Path(fairpair.__file__).resolve().parents[1])
    code = ("import sys; from fairpair.analysis import analyze_run; res = analyze_run(sys.argv[1]); "
            "print(res.battery, [c.id for c in res.comparisons])")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code, str(run_dir)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "main_store ['refund']"
