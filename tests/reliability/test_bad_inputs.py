"""A corpus of bad inputs across every command: each gives a clear message and exit code 2.

Label CSVs for ``calibrate score``, run directories from another version or not
runs at all, results files with an unknown schema, reanalysis and scene files
with the wrong shape, runs of different batteries for ``compare``, a ``gate``
without an analysis, bad formats and bad option values. Files live in
tests/data/bad_inputs/ (``__SID__`` in a labels file is replaced by a real
sample id of the run); run directories are built by the fixture. Bad batteries
have their own corpus (tests/battery/test_bad_batteries.py).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from fairpair.cli import main

from .conftest import demo_battery

DATA = Path(__file__).resolve().parents[1] / "data" / "bad_inputs"

JUDGE = '''
import json

def judge(messages, context):
    return json.dumps({"courtesy": 4, "condescension": 1, "distrust": 2, "reason": "ok"})
'''


def _main(args) -> int:
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Paths the table refers to: {RUN}, {NOANALYSIS}, {OTHER}, {V99}, ..., {DATA}, {TMP}."""
    tmp = tmp_path_factory.mktemp("bad")
    (tmp / "code").mkdir()
    (tmp / "code" / "fp_bad_inputs_judge.py").write_text(JUDGE, encoding="utf-8")
    judge = {"kind": "python", "callable": "fp_bad_inputs_judge:judge", "path": str(tmp / "code")}
    battery = demo_battery(tmp / "b", {"kind": "mock"}, judge=judge)
    p = {"DATA": DATA, "TMP": tmp, "BATTERY": battery, "EMPTY": ""}
    p["RUN"] = tmp / "run"
    assert _main(["run", battery, "--out", p["RUN"], "-q", "--no-report"]) == 0
    assert _main(["calibrate", "export", p["RUN"], "-o", tmp / "labels.csv", "--n", "12"]) == 0
    sid = (tmp / "labels.csv").read_text(encoding="utf-8").splitlines()[1].split(",")[0]
    (tmp / "labels").mkdir()
    for f in DATA.glob("labels_*.csv"):
        raw = f.read_bytes()
        for enc in ("utf-8", "latin-1", "utf-16"):
            try:
                text = raw.decode(enc)
                break
            except UnicodeDecodeError:
                continue
        if "__SID__" in text and enc in ("latin-1", "utf-16"):
            raw = text.replace("__SID__", sid).encode(enc)
        elif b"__SID__" in raw:
            raw = raw.replace(b"__SID__", sid.encode())
        (tmp / "labels" / f.name).write_bytes(raw)
    p["LABELS"] = tmp / "labels"
    p["NOMEASURE"] = tmp / "nomeasure"
    assert _main(["run", battery, "--out", p["NOMEASURE"], "-q", "--no-measure", "--no-analyze", "--no-report"]) == 0
    other = demo_battery(tmp / "b2", {"kind": "mock"}, judge=judge, name="otra_bateria")
    p["OTHER"] = tmp / "other"
    assert _main(["run", other, "--out", p["OTHER"], "-q", "--no-report"]) == 0
    # a store written by a newer fairpair
    p["V99"] = tmp / "v99"
    shutil.copytree(p["RUN"], p["V99"])
    con = sqlite3.connect(p["V99"] / "store.sqlite")
    con.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    con.commit()
    con.close()
    # a store without a schema version, and one with an unreadable one
    for name, sql in (("noversion", "DELETE FROM meta WHERE key='schema_version'"),
                      ("badversion", "UPDATE meta SET value='uno' WHERE key='schema_version'")):
        p[name.upper()] = tmp / name
        shutil.copytree(p["RUN"], p[name.upper()])
        con = sqlite3.connect(p[name.upper()] / "store.sqlite")
        con.execute(sql)
        con.commit()
        con.close()
    # some other program's SQLite database, and random bytes, named store.sqlite
    p["FOREIGN"] = tmp / "foreign"
    p["FOREIGN"].mkdir()
    con = sqlite3.connect(p["FOREIGN"] / "store.sqlite")
    con.execute("CREATE TABLE invoices (id INTEGER, total REAL)")
    con.commit()
    con.close()
    p["GARBAGE"] = tmp / "garbage"
    p["GARBAGE"].mkdir()
    (p["GARBAGE"] / "store.sqlite").write_bytes(os.urandom(8192))
    p["EMPTYDIR"] = tmp / "empty"
    p["EMPTYDIR"].mkdir()
    p["AFILE"] = tmp / "a_file.txt"
    p["AFILE"].write_text("not a directory\n", encoding="utf-8")
    p["MISSING"] = tmp / "does_not_exist"
    # runs whose results.json is from another version / not JSON
    for name, src in (("BADRESULTS", "results_unknown_schema.json"), ("NOTJSONRESULTS", "results_not_json.json")):
        p[name] = tmp / name.lower()
        shutil.copytree(p["RUN"], p[name])
        shutil.copy(DATA / src, p[name] / "results.json")
    p["EXISTING_OUT"] = tmp / "existing.yaml"
    p["EXISTING_OUT"].write_text("x: 1\n", encoding="utf-8")
    yield p
    import sys

    sys.modules.pop("fp_bad_inputs_judge", None)


# id, command line ({NAME} placeholders), fragments the message must contain (file or key included)
CASES = [
    # ---- calibrate score: label files
    ("labels missing sample_id", "calibrate score {RUN} {LABELS}/labels_missing_sample_id.csv",
     ["labels_missing_sample_id.csv", "sample_id"]),
    ("labels missing rubric column", "calibrate score {RUN} {LABELS}/labels_missing_rubric_column.csv",
     ["labels_missing_rubric_column.csv", "distrust"]),
    ("label out of range", "calibrate score {RUN} {LABELS}/labels_out_of_range.csv",
     ["labels_out_of_range.csv", "courtesy", "7"]),
    ("label not a number", "calibrate score {RUN} {LABELS}/labels_not_a_number.csv",
     ["labels_not_a_number.csv", "courtesy", "muy bien"]),
    ("label fractional", "calibrate score {RUN} {LABELS}/labels_fractional.csv",
     ["labels_fractional.csv", "courtesy", "3.5"]),
    ("label unknown sample", "calibrate score {RUN} {LABELS}/labels_unknown_sample.csv",
     ["labels_unknown_sample.csv", "s0000000000"]),
    ("labels latin-1", "calibrate score {RUN} {LABELS}/labels_latin1.csv", ["labels_latin1.csv", "UTF-8"]),
    ("labels utf-16", "calibrate score {RUN} {LABELS}/labels_utf16.csv", ["labels_utf16.csv"]),
    ("labels empty", "calibrate score {RUN} {LABELS}/labels_empty.csv", ["labels_empty.csv"]),
    ("labels header only", "calibrate score {RUN} {LABELS}/labels_header_only.csv",
     ["no labelled sample has a judge score"]),
    ("labels duplicate sample", "calibrate score {RUN} {LABELS}/labels_duplicate_sample.csv",
     ["labels_duplicate_sample.csv"]),
    ("labels binary", "calibrate score {RUN} {LABELS}/labels_binary.csv", ["labels_binary.csv"]),
    ("labels duplicate column", "calibrate score {RUN} {LABELS}/labels_duplicate_column.csv",
     ["labels_duplicate_column.csv", "courtesy", "more than once"]),
    ("labels file missing", "calibrate score {RUN} {TMP}/no_labels.csv", ["no_labels.csv"]),
    ("key missing columns",
     "calibrate score {RUN} {LABELS}/labels_out_of_range.csv --key {DATA}/key_missing_columns.csv",
     ["key_missing_columns.csv"]),
    ("calibrate unknown measure", "calibrate score {RUN} {LABELS}/labels_out_of_range.csv --measure tonos",
     ["tonos"]),
    ("calibrate non-judge measure", "calibrate export {RUN} -o {TMP}/l2.csv --measure palabras",
     ["palabras", "judge"]),
    ("calibrate export into a directory", "calibrate export {RUN} -o {TMP}", ["is a directory"]),
    ("calibrate export n 0", "calibrate export {RUN} --n 0", ["--n"]),
    # ---- run directories from another version, or not runs at all
    ("store schema 99: report", "report {V99}", ["store.sqlite", "schema version 99", "upgrade fairpair"]),
    ("store schema 99: measure", "measure {V99}", ["store.sqlite", "schema version 99"]),
    ("store schema 99: analyze", "analyze {V99}", ["store.sqlite", "schema version 99"]),
    ("store schema 99: run", "run {BATTERY} --out {V99} -q", ["store.sqlite", "schema version 99"]),
    ("store schema 99: export", "export {V99}", ["store.sqlite", "schema version 99"]),
    ("store without schema version", "report {NOVERSION}", ["store.sqlite", "schema_version"]),
    ("store with unreadable schema version", "analyze {BADVERSION}", ["store.sqlite", "'uno'"]),
    ("foreign sqlite: report", "report {FOREIGN}", ["store.sqlite", "not a fairpair run store"]),
    ("foreign sqlite: run", "run {BATTERY} --out {FOREIGN} -q", ["store.sqlite", "not a fairpair run store"]),
    ("random bytes store: report", "report {GARBAGE}", ["store.sqlite", "not a"]),
    ("random bytes store: measure", "measure {GARBAGE}", ["store.sqlite", "not a"]),
    ("empty dir: report", "report {EMPTYDIR}", ["empty", "not a fairpair run directory"]),
    ("empty dir: analyze", "analyze {EMPTYDIR}", ["empty", "not a fairpair run directory"]),
    ("empty dir: measure", "measure {EMPTYDIR}", ["empty", "not a fairpair run directory"]),
    ("empty dir: export", "export {EMPTYDIR}", ["empty", "not a fairpair run directory"]),
    ("empty dir: gate", "gate {EMPTYDIR}", ["empty"]),
    ("empty dir: calibrate export", "calibrate export {EMPTYDIR} -o {TMP}/l3.csv", ["empty"]),
    ("file instead of dir: report", "report {AFILE}", ["a_file.txt"]),
    ("file instead of dir: measure", "measure {AFILE}", ["a_file.txt"]),
    ("file instead of dir: run --out", "run {BATTERY} --out {AFILE} -q", ["a_file.txt"]),
    ("missing dir: report", "report {MISSING}", ["does_not_exist", "not found"]),
    ("missing dir: gate", "gate {MISSING}", ["does_not_exist"]),
    ("results.json unknown schema: report", "report {BADRESULTS}", ["results.json"]),
    ("results.json unknown schema: gate", "gate {BADRESULTS}", ["results.json"]),
    ("results.json not JSON: report", "report {NOTJSONRESULTS}", ["results.json"]),
    ("results.json not JSON: gate", "gate {NOTJSONRESULTS}", ["results.json"]),
    # ---- reanalyze
    ("reanalysis missing columns", "reanalyze {DATA}/reanalysis_missing_columns.csv --resamples 0",
     ["reanalysis_missing_columns.csv", "demographic_dim"]),
    ("reanalysis empty", "reanalyze {DATA}/reanalysis_empty.csv --resamples 0", ["reanalysis_empty.csv"]),
    ("reanalysis not CSV", "reanalyze {DATA}/reanalysis_not_csv.csv --resamples 0", ["reanalysis_not_csv.csv"]),
    ("reanalysis binary", "reanalyze {DATA}/reanalysis_binary.csv --resamples 0", ["reanalysis_binary.csv"]),
    ("reanalysis header only", "reanalyze {DATA}/reanalysis_header_only.csv --resamples 0",
     ["reanalysis_header_only.csv"]),
    ("reanalysis missing file", "reanalyze {TMP}/nope.csv --resamples 0", ["nope.csv"]),
    ("reanalysis bad ddof", "reanalyze {DATA}/reanalysis_empty.csv --ddof 3", ["ddof"]),
    ("reanalysis bad format", "reanalyze {DATA}/reanalysis_empty.csv --format tan-lee-2024", ["tan-lee-2024"]),
    # ---- import-scenes
    ("scenes wrong columns", "import-scenes {DATA}/scenes_wrong_columns.csv", ["scenes_wrong_columns.csv",
                                                                               "scenario_id"]),
    ("scenes empty", "import-scenes {DATA}/scenes_empty.csv", ["scenes_empty.csv"]),
    ("scenes bad power value", "import-scenes {DATA}/scenes_bad_power.csv",
     ["scenes_bad_power.csv", "maybe"]),
    ("scenes without SUB/RES", "import-scenes {DATA}/scenes_no_placeholders.csv",
     ["scenes_no_placeholders.csv", "SUB: <trait>"]),
    ("scenes duplicate id", "import-scenes {DATA}/scenes_duplicate_id.csv", ["scenes_duplicate_id.csv"]),
    ("scenes not xlsx", "import-scenes {DATA}/scenes_not_xlsx.xlsx", ["scenes_not_xlsx.xlsx"]),
    ("scenes header only", "import-scenes {DATA}/scenes_header_only.csv", ["scenes_header_only.csv"]),
    ("scenes unknown extension", "import-scenes {DATA}/scenes.txt", ["scenes.txt"]),
    ("scenes unknown axis", "import-scenes {DATA}/scenes_valid.csv --axes colour", ["colour"]),
    ("scenes unknown scene glob", "import-scenes {DATA}/scenes_valid.csv --scenes school-*", ["school-*"]),
    ("scenes output exists", "import-scenes {DATA}/scenes_valid.csv -o {EXISTING_OUT}", ["existing.yaml"]),
    # ---- compare, gate, export
    ("compare different batteries", "compare {RUN} {OTHER}", ["otra_bateria", "tienda_online_demo"]),
    ("compare with an empty dir", "compare {RUN} {EMPTYDIR}", ["empty"]),
    ("gate junit into a directory", "gate {RUN} --on-insufficient --junit {TMP}", ["Is a directory", "--junit"]),
    ("gate baseline of another battery", "gate {RUN} --baseline {OTHER}", ["otra_bateria"]),
    ("export bad format", "export {RUN} -f xlsx", ["xlsx", "csv"]),
    ("export into a file", "export {RUN} -o {AFILE}", ["a_file.txt"]),
    ("report bad language", "report {RUN} --lang fr", ["fr"]),
    # ---- bad option values and usage
    ("run concurrency 0", "run {BATTERY} --concurrency 0", ["--concurrency"]),
    ("run negative timeout", "run {BATTERY} --timeout -1", ["--timeout"]),
    ("run timeout not a number", "run {BATTERY} --timeout soon", ["--timeout", "valid number"]),
    ("run unknown option", "run {BATTERY} --concurency 4", ["--concurency"]),
    ("run unknown target", "run {BATTERY} --out {TMP}/t1 --target gpt5 -q", ["gpt5"]),
    ("run battery missing", "run {TMP}/nope.yaml", ["nope.yaml"]),
    ("measure unknown measure", "measure {RUN} -m reembolsos", ["reembolsos"]),
    ("measure attempts 0", "measure {RUN} --max-attempts 0", ["--max-attempts"]),
    ("report negative evidence", "report {RUN} --evidence -1", ["--evidence"]),
    ("unknown command", "analyse {RUN}", ["analyse"]),
    # ---- issue 28: the minor list's command-line cases
    ("run --out empty", "run {BATTERY} --out {EMPTY} -q", ["--out", "current directory"]),
    ("run --no-analyze --gate", "run {BATTERY} --out {TMP}/g1 -q --no-analyze --gate", ["--gate", "--no-analyze"]),
    ("run --dry-run --batch", "run {BATTERY} --dry-run --batch", ["--batch", "--dry-run"]),
    ("compare a run with itself", "compare {RUN} {RUN}", ["same run"]),
    ("init name with an accent", "init {TMP}/init_bad.yaml --name mi_auditoría --lang es --target mock",
     ["--name", "'mi_auditoría' is not a battery name", "nothing was written", "--name mi_auditoria"]),
    ("gate a run never measured", "gate {NOMEASURE}", ["nothing to gate"]),
]


def _id(c) -> str:
    return c.values[0] if hasattr(c, "values") else c[0]


@pytest.mark.parametrize("cid, cmd, fragments", CASES, ids=[_id(c) for c in CASES])
def test_bad_input_gives_a_clear_error_and_exit_2(env, capsys, cid, cmd, fragments):
    args = [a.format(**{k: str(v) for k, v in env.items()}) for a in cmd.split()]
    capsys.readouterr()
    code = _main(args)
    cap = capsys.readouterr()
    out = cap.out + cap.err
    if os.environ.get("FP_PROBE"):
        print(f"\n### {cid}: rc={code}\n{out[-600:]}", file=__import__("sys").__stderr__)
    assert "Traceback" not in out and "internal error" not in out, out
    assert code == 2, out
    flat = " ".join(out.split())
    for frag in fragments:
        assert frag in flat, (frag, out)


def test_corpus_is_large(env):
    assert len(CASES) >= 50
    assert len(list(DATA.iterdir())) >= 25


def test_init_with_a_bad_name_writes_nothing(env):
    assert _main(["init", str(env["TMP"] / "init_bad2.yaml"), "--name", "my audit ñ", "--lang", "en",
                  "--target", "mock"]) == 2
    assert not (env["TMP"] / "init_bad2.yaml").exists()


def test_run_out_empty_leaves_the_current_directory_alone(env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _main(["run", str(env["BATTERY"]), "--out", "", "-q"]) == 2
    assert list(tmp_path.iterdir()) == []


def test_validate_warns_of_a_battery_without_a_target(env, tmp_path, capsys):
    """Documented warning (not an error: a battery is also a plan, and `check`/`run` refuse it with exit 2)."""
    text = Path(env["BATTERY"]).read_text(encoding="utf-8")
    import yaml

    data = yaml.safe_load(text)
    data.pop("target")
    b = tmp_path / "no_target.yaml"
    b.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    capsys.readouterr()
    assert _main(["validate", b]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "warning: no 'target' (or 'targets')" in out and "refuse it until a target block is added" in out
    assert _main(["run", b, "--out", tmp_path / "r", "-q"]) == 2
