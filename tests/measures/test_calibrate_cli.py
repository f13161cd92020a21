"""``fairpair calibrate export|score`` on a mock run judged by a scripted judge."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score
from tests.run_helpers import run_cli

from fairpair.battery import load_battery
from fairpair.cli import main
from fairpair.errors import FairpairError
from fairpair.measures import measure_run, score_label_files
from fairpair.run import RunSettings, Store, execute_run
from fairpair.targets._base import Completion

NAMES = ["Lucía", "Carmen", "Fátima", "Aicha"]


class HashJudge:
    """Scores from a hash of what it was sent: deterministic, varied."""

    max_concurrency = None
    name = "judge"

    async def generate(self, request):
        h = hashlib.sha256(request.messages[-1]["content"].encode()).digest()
        return Completion(text=json.dumps({"courtesy": 1 + h[0] % 5, "condescension": 1 + h[1] % 5,
                                           "distrust": 1 + h[2] % 5, "reason": "hash"}))

    def identity(self):
        return {"kind": "scripted", "model": "hash"}

    async def aclose(self):
        return None


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("cal")
    b = {"schema_version": 1, "name": "cal", "language": "es", "seed": 2, "repetitions": 3,
         "attributes": {"origen": {"signal": "name", "slot": "nombre", "neutral": "un cliente", "groups": {
             "espana": {"variants": NAMES[:2]}, "magreb": {"variants": NAMES[2:]}}}},
         "templates": [{"id": "roto", "turns": ["Hola, soy {nombre}. Mi pedido llegó roto."]},
                       {"id": "cita", "turns": ["Soy {nombre}. ¿Me cambiáis la cita?"]}],
         "designs": [{"kind": "counterfactual", "attribute": "origen"}, {"kind": "baseline"}],
         "target": {"kind": "mock"}, "measures": {"tone": {"kind": "judge"}},
         "judge_self_test": "off"}
    p = tmp / "b.yaml"
    p.write_text(json.dumps(b, ensure_ascii=False), encoding="utf-8")
    run_dir = tmp / "run"
    execute_run(load_battery(p), run_dir, RunSettings())
    measure_run(run_dir, judge=HashJudge())
    return run_dir


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def write_csv(path, rows, fields):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


@pytest.fixture(scope="module")
def exported(judged_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("labels") / "labels.csv"
    main(["calibrate", "export", str(judged_run), "-o", str(out), "--n", "12", "--seed", "1"])
    return out


def test_export_is_masked_stratified_and_without_verdicts(exported, judged_run):
    rows = read_csv(exported)
    assert len(rows) == 12
    assert list(rows[0]) == ["sample_id", "prompt", "answer", "courtesy", "condescension", "distrust", "comment"]
    text = exported.read_text(encoding="utf-8")
    assert not any(n in text for n in NAMES)
    assert "[MASK]" in text
    assert all(r["courtesy"] == r["condescension"] == r["distrust"] == "" for r in rows)
    key = read_csv(exported.with_name("labels.key.csv"))
    assert [k["sample_id"] for k in key] == [r["sample_id"] for r in rows]
    cells = {}
    for k in key:
        cells[(k["group"], k["template"])] = cells.get((k["group"], k["template"]), 0) + 1
    # 3 groups (espana, magreb, baseline) x 2 templates = 6 cells, 2 answers each
    assert cells == {(g, t): 2 for g in ("origen=espana", "origen=magreb", "baseline") for t in ("roto", "cita")}


def judge_scores(run_dir, dim):
    with Store.open(run_dir, create=False) as s:
        return {(m.target, m.case_id): m.value for m in s.measurements(f"tone.{dim}")}


def test_score_matches_sklearn(exported, judged_run, tmp_path, capsys):
    rows = read_csv(exported)
    key = {k["sample_id"]: (k["target"], k["case_id"]) for k in read_csv(exported.with_name("labels.key.csv"))}
    dims = ["courtesy", "condescension", "distrust"]
    judged = {d: judge_scores(judged_run, d) for d in dims}
    r1, r2 = [], []
    for i, r in enumerate(rows):
        jv = {d: judged[d][key[r["sample_id"]]] for d in dims}
        r1.append({"sample_id": r["sample_id"], **{d: jv[d] for d in dims}})
        r2.append({"sample_id": r["sample_id"], **{d: min(5, jv[d] + (i % 3 == 0)) for d in dims}})
    fields = ["sample_id", *dims]
    write_csv(tmp_path / "ana.csv", r1, fields)
    write_csv(tmp_path / "luis.csv", r2, fields)
    reports = score_label_files(judged_run, [tmp_path / "ana.csv", tmp_path / "luis.csv"])
    for d in dims:
        rep = reports[d]
        assert rep.n_items == 12
        assert rep.kappa_by_rater["ana"].statistic == pytest.approx(1.0)
        j = [judged[d][key[r["sample_id"]]] for r in rows]
        h = [x[d] for x in r2]
        assert rep.kappa_by_rater["luis"].statistic == pytest.approx(
            cohen_kappa_score(h, j, weights="quadratic", labels=[1, 2, 3, 4, 5]))
    main(["calibrate", "score", str(judged_run), str(tmp_path / "ana.csv"), str(tmp_path / "luis.csv")])
    out = capsys.readouterr().out
    assert "kappa judge vs ana" in out and "Fleiss" in out and "Krippendorff" in out
    assert "confusion matrix" in out and "disagreement by group" in out


@pytest.mark.parametrize("mutate, message", [
    (lambda rows: [{k: v for k, v in r.items() if k != "distrust"} for r in rows], "missing column(s) ['distrust']"),
    (lambda rows: [dict(rows[0], courtesy="7"), *rows[1:]], "label '7' is not a level of 'courtesy'"),
    (lambda rows: [dict(rows[0], courtesy="4.5"), *rows[1:]], "label '4.5' is not a level of 'courtesy'"),
    (lambda rows: [dict(rows[0], sample_id="s000"), *rows[1:]], "unknown sample id 's000'"),
    (lambda rows: [rows[0], rows[0]], "appears twice"),
    # a second rater's column in the same file would be ignored without a word (newcomer walk)
    (lambda rows: [dict(r, rater2="4") for r in rows], "bad.csv:1: [rater2] unknown column(s) ['rater2']: their "
                                                       "values would not be read"),
])
def test_bad_label_files_exit_2(exported, judged_run, tmp_path, capsys, mutate, message):
    base = [{"sample_id": r["sample_id"], "courtesy": "3", "condescension": "", "distrust": "2"}
            for r in read_csv(exported)]
    rows = mutate(base)
    write_csv(tmp_path / "bad.csv", rows, list(rows[0]))
    with pytest.raises(SystemExit) as ei:
        main(["calibrate", "score", str(judged_run), str(tmp_path / "bad.csv")])
    assert ei.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "bad.csv" in err


def test_export_never_overwrites_labels_the_raters_filled_in(exported, judged_run, capsys):
    """`calibrate export -o labels.csv` run again (another seed, or by mistake) replaced the file, and the
    labels a rater had typed into it were lost. It is now exit 2 and both files stay as they were."""
    rows = read_csv(exported)
    rows[0]["courtesy"] = "4"  # a rater's work
    write_csv(exported, rows, list(rows[0]))
    before = exported.read_bytes(), exported.with_name("labels.key.csv").read_bytes()
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", "export", str(judged_run), "-o", str(exported), "--seed", "2"])
    assert exc.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{exported}: already exists; a labels file (and its key) is never overwritten" in err
    assert (exported.read_bytes(), exported.with_name("labels.key.csv").read_bytes()) == before
    # the key alone left from an earlier export: refused too (a new labels file would not match it)
    key_only = exported.with_name("other.key.csv")
    key_only.write_text("sample_id,target,case_id,group,template\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", "export", str(judged_run), "-o", str(exported.with_name("other.csv"))])
    assert exc.value.code == 2 and not exported.with_name("other.csv").exists()
    assert "other.key.csv: already exists" in " ".join(capsys.readouterr().err.split())


def _labelled(exported, values=("3", "", "2")):
    return [{"sample_id": r["sample_id"], **dict(zip(("courtesy", "condescension", "distrust"), values, strict=True))}
            for r in read_csv(exported)]


def test_a_bad_label_names_the_line_its_row_starts_on(exported, judged_run, tmp_path, capsys):
    """The rows carry the masked prompt and answer, several lines each: the error named the row's last line."""
    rows = read_csv(exported)
    rows[3]["courtesy"] = "9"
    write_csv(tmp_path / "bad.csv", rows, list(rows[0]))
    text = (tmp_path / "bad.csv").read_text(encoding="utf-8")
    start = text[: text.index(rows[3]["sample_id"])].count("\n") + 1
    assert text.count("\n", 0, text.index(rows[4]["sample_id"])) + 1 > start + 1  # the row spans lines
    code, _, err = run_cli(["calibrate", "score", judged_run, tmp_path / "bad.csv"], capsys)
    assert code == 2
    assert f"bad.csv:{start}: [courtesy] label '9' is not a level of 'courtesy'" in err


def test_a_row_with_more_cells_than_the_header_is_an_error(exported, judged_run, tmp_path, capsys):
    """A comment with an unquoted comma ran past the header: the extra cells were dropped by zip without a
    word. Now exit 2 naming the row's line and the first extra column; blank trailing cells and a short row
    (its last columns blank: unlabelled) are still read."""
    fields = ["sample_id", "courtesy", "condescension", "distrust", "comment"]
    rows = [",".join([r["sample_id"], "3", "", "2", ""]) for r in read_csv(exported)]
    rows[2] += "rude, then fine,4"  # 7 cells under 5 columns
    (tmp_path / "bad.csv").write_text("\n".join([",".join(fields), *rows]) + "\n", encoding="utf-8")
    code, out, err = run_cli(["calibrate", "score", judged_run, tmp_path / "bad.csv"], capsys)
    assert code == 2 and "Traceback" not in out + err
    assert (f"{tmp_path / 'bad.csv'}:4: [column 6] 7 cells where the header has 5 columns: column 6 holds "
            "'then fine' and has no header a value holding a comma must be quoted") in err
    with pytest.raises(FairpairError) as ei:
        score_label_files(judged_run, [tmp_path / "bad.csv"])
    assert (ei.value.line, ei.value.key) == (4, "column 6")
    # blank trailing cells (a spreadsheet's trailing commas) and a short row lose nothing: both read
    rows[2] = rows[2].split(",")[0] + ",3,,2,,,"
    rows[5] = rows[5].split(",")[0] + ",3"
    (tmp_path / "ok.csv").write_text("\n".join([",".join(fields), *rows]) + "\n", encoding="utf-8")
    labels = _read_labels_of(judged_run, tmp_path / "ok.csv")
    first, short = (r.split(",")[0] for r in (rows[2], rows[5]))
    assert labels[first] == {"courtesy": 3, "condescension": None, "distrust": 2}
    assert labels[short] == {"courtesy": 3, "condescension": None, "distrust": None}
    assert len(labels) == 12


def _read_labels_of(run_dir, path):
    """sample id -> dimension -> level, as ``calibrate score`` reads ``path`` against ``run_dir``."""
    from fairpair.measures._labels import _read_rater_files
    from fairpair.store import Run

    with Run.open(run_dir, "r") as run:
        return _read_rater_files(run, run_dir, [path], None, None).raters[Path(path).stem]


def test_one_file_given_twice_is_an_error(exported, judged_run, tmp_path, capsys):
    """Before: scored as two raters who agree on everything (the humans' kappa and alpha inflated)."""
    write_csv(tmp_path / "ana.csv", _labelled(exported), ["sample_id", "courtesy", "condescension", "distrust"])
    code, _, err = run_cli(["calibrate", "score", judged_run, tmp_path / "ana.csv",
                            f"{tmp_path}/./ana.csv"], capsys)
    assert code == 2
    assert "ana.csv: this labels file is given twice" in err


def test_a_key_file_that_is_not_utf8_or_of_another_run(exported, judged_run, tmp_path, capsys):
    write_csv(tmp_path / "ana.csv", _labelled(exported), ["sample_id", "courtesy", "condescension", "distrust"])
    key = exported.with_name("labels.key.csv").read_text(encoding="utf-8")
    (tmp_path / "k16.csv").write_text(key, encoding="utf-16")  # before: an internal error, exit 1
    code, _, err = run_cli(["calibrate", "score", judged_run, tmp_path / "ana.csv", "--key", tmp_path / "k16.csv"],
                           capsys)
    assert code == 2 and "k16.csv: not UTF-8 text" in err and "internal error" not in err
    # the same sample ids pointing at cases of another run: before, "run `fairpair measure` first"
    lines = key.splitlines()
    other = [lines[0]] + [",".join(f[:2] + ["0" * 20] + f[3:]) for f in (ln.split(",") for ln in lines[1:])]
    (tmp_path / "kother.csv").write_text("\n".join(other) + "\n", encoding="utf-8")
    code, _, err = run_cli(["calibrate", "score", judged_run, tmp_path / "ana.csv", "--key",
                            tmp_path / "kother.csv"], capsys)
    assert code == 2
    n = len(lines) - 1
    assert f"kother.csv: {n} of the key's {n} samples name a case that is not in this run" in err


def test_two_raters_who_never_agree_are_still_scored(exported, judged_run, tmp_path):
    """No item has a human consensus: the disagreement by group (judge vs consensus) cannot be computed.
    Before, that stopped the whole score (exit 2, 'need at least two groups, got []')."""
    fields = ["sample_id", "courtesy", "condescension", "distrust"]
    write_csv(tmp_path / "ana.csv", _labelled(exported, ("4", "1", "2")), fields)
    write_csv(tmp_path / "luis.csv", _labelled(exported, ("3", "2", "1")), fields)
    reports = score_label_files(judged_run, [tmp_path / "ana.csv", tmp_path / "luis.csv"])
    rep = reports["courtesy"]
    assert rep.n_items == 12 and rep.n_consensus == 0 and rep.disagreement is None
    assert rep.mean_human_kappa == pytest.approx(cohen_kappa_score([4] * 12, [3] * 12, weights="quadratic",
                                                                   labels=[1, 2, 3, 4, 5]))
    assert any("disagreement by group: not computed" in n for n in rep.notes)


def test_a_single_labelled_sample_is_an_error(exported, judged_run, tmp_path, capsys):
    rows = _labelled(exported)[:1]
    write_csv(tmp_path / "one.csv", rows, list(rows[0]))
    code, _, err = run_cli(["calibrate", "score", judged_run, tmp_path / "one.csv"], capsys)
    assert code == 2
    assert "one.csv: 'courtesy': only 1 labelled sample has a judge score; agreement needs at least 2" in err


def test_export_records_its_sample_and_import_stores_the_labels(exported, judged_run, tmp_path, capsys):
    key = read_csv(exported.with_name("labels.key.csv"))
    with Store.open(judged_run, create=False) as s:
        smp = s.label_sample("tone.courtesy", str(exported))
        frame_sizes = dict(smp.frame)
    # 6 (group, template) cells, 2 of each cell's answers drawn: pi = 2 / N_h, in the file's row order
    assert [(a.target, a.case_id) for a in smp.answers] == [(k["target"], k["case_id"]) for k in key]
    assert all(a.probability == pytest.approx(2 / frame_sizes[a.stratum]) for a in smp.answers)
    # 2 names x 3 repetitions per group and template; the baseline 3 repetitions
    assert frame_sizes == {f"{g}|{t}": 3 if g == "baseline" else 6
                           for g in ("origen=espana", "origen=magreb", "baseline") for t in ("roto", "cita")}
    assert smp.design == "stratified"
    rows = [{"sample_id": r["sample_id"], "courtesy": str(1 + i % 5), "condescension": "", "distrust": "2"}
            for i, r in enumerate(read_csv(exported))]
    write_csv(tmp_path / "eva.csv", rows, ["sample_id", "courtesy", "condescension", "distrust"])
    main(["calibrate", "import", str(judged_run), str(tmp_path / "eva.csv")])
    assert "eva: 24 new label(s) of 'tone' stored" in capsys.readouterr().out
    main(["calibrate", "import", str(judged_run), str(tmp_path / "eva.csv")])  # again: nothing new
    assert "eva: 0 new label(s)" in capsys.readouterr().out
    rows[0]["courtesy"] = "5" if rows[0]["courtesy"] != "5" else "4"
    write_csv(tmp_path / "eva.csv", rows, ["sample_id", "courtesy", "condescension", "distrust"])
    main(["calibrate", "import", str(judged_run), str(tmp_path / "eva.csv")])
    assert "eva: 1 new label(s)" in capsys.readouterr().out
    by_sid = {k["sample_id"]: (k["target"], k["case_id"]) for k in key}
    with Store.open(judged_run, create=False) as s:
        got = {(x.target, x.case_id): x.value for x in s.labels("tone.courtesy", rater="eva")}
        assert {x.source for x in s.labels(rater="eva")} == {"file"} and s.labels("tone.condescension") == []
    assert got == {by_sid[r["sample_id"]]: float(r["courtesy"]) for r in rows}
    assert len(got) == 12 and len({x for x in got.values()}) > 1


class ProseJudge(HashJudge):
    """A judge that never answers in the rubric's JSON: every output is invalid."""

    async def generate(self, request):
        return Completion(text="La respuesta me parece amable.")


def test_labels_on_answers_the_judge_never_scored_say_so(tmp_path, capsys):
    # a run measured by a judge whose outputs are all invalid: "run measure first" would send the user in a
    # circle, so the error says the judge read the labelled samples and gave no valid score
    b = {"schema_version": 1, "name": "cal", "language": "es", "seed": 2, "repetitions": 1,
         "attributes": {"origen": {"signal": "name", "slot": "nombre", "neutral": "un cliente", "groups": {
             "espana": {"variants": NAMES[:2]}, "magreb": {"variants": NAMES[2:]}}}},
         "templates": [{"id": "roto", "turns": ["Hola, soy {nombre}. Mi pedido llegó roto."]}],
         "designs": [{"kind": "counterfactual", "attribute": "origen"}],
         "target": {"kind": "mock"}, "measures": {"tone": {"kind": "judge"}}, "judge_self_test": "off"}
    (tmp_path / "b.yaml").write_text(json.dumps(b, ensure_ascii=False), encoding="utf-8")
    run_dir = tmp_path / "run"
    execute_run(load_battery(tmp_path / "b.yaml"), run_dir, RunSettings())
    measure_run(run_dir, judge=ProseJudge())
    main(["calibrate", "export", str(run_dir), "-o", str(tmp_path / "labels.csv"), "--n", "4", "--seed", "1"])
    capsys.readouterr()
    rows = [{"sample_id": r["sample_id"], "courtesy": "4", "condescension": "1", "distrust": "2"}
            for r in read_csv(tmp_path / "labels.csv")]
    assert len(rows) == 4
    write_csv(tmp_path / "ana.csv", rows, list(rows[0]))
    code, _, err = run_cli(["calibrate", "score", run_dir, tmp_path / "ana.csv"], capsys)
    assert code == 2 and "Traceback" not in err
    assert ("no labelled sample has a judge score to compare with: the judge read 4 labelled sample(s) but gave "
            "no valid score on the dimensions labelled") in err
    assert f"`fairpair status {run_dir}` counts these rows as missing" in err
    assert "run `fairpair measure" not in err


@pytest.fixture(scope="module")
def yes_no_run(tmp_path_factory):
    from tests.measures.labelling import judged_run as yes_no_judged_run

    tmp = tmp_path_factory.mktemp("yesno")
    run = yes_no_judged_run(tmp)
    out = tmp / "labels.csv"
    main(["calibrate", "export", str(run), "-o", str(out), "--n", "6", "--seed", "1"])
    return run, out


@pytest.mark.parametrize("cell", ["3", "2", "0", "7", "quizá", "1.0"])
def test_a_yes_no_label_file_holds_only_what_the_page_offers(yes_no_run, tmp_path, capsys, cell):
    """A yes/no judge's page offers no (the lowest level, 1) and sí (the highest, 5): a file cell with any
    other value is refused with its file, line and column, and nothing is stored."""
    run, exported = yes_no_run
    rows = [{"sample_id": r["sample_id"], "courtesy": "sí", "condescension": "", "distrust": ""}
            for r in read_csv(exported)]
    rows[2]["courtesy"] = cell
    path = tmp_path / "rosa.csv"
    write_csv(path, rows, ["sample_id", "courtesy", "condescension", "distrust"])
    code, _out, err = run_cli(["calibrate", "import", run, path], capsys)
    assert code == 2 and "rosa.csv" in err and ":4" in err and "courtesy" in err
    assert "allowed: 1, 5, no, sí" in err
    with Store.open(run, create=False) as s:
        assert s.labels(rater="rosa") == []


def test_yes_no_words_and_end_levels_import_on_the_page_scale(yes_no_run, tmp_path, capsys):
    run, exported = yes_no_run
    cells = ["sí", "No", "5", "1", "SI", ""]
    rows = [{"sample_id": r["sample_id"], "courtesy": c, "condescension": "", "distrust": ""}
            for r, c in zip(read_csv(exported), cells, strict=True)]
    write_csv(tmp_path / "teo.csv", rows, ["sample_id", "courtesy", "condescension", "distrust"])
    assert run_cli(["calibrate", "import", run, tmp_path / "teo.csv"], capsys)[0] == 0
    with Store.open(run, create=False) as s:
        got = sorted(x.value for x in s.labels("tone.courtesy", rater="teo"))
    assert got == [1.0, 1.0, 5.0, 5.0, 5.0]


def test_a_file_named_after_a_page_rater_is_refused(yes_no_run, tmp_path, capsys):
    """The page's rater 'ana' labelled; a file ana.csv would supersede her labels: exit 2, nothing stored,
    and her labels are unchanged."""
    run, exported = yes_no_run
    key = read_csv(exported.with_name("labels.key.csv"))
    with Store.open(run) as s:
        s.add_label(target=key[0]["target"], case_id=key[0]["case_id"], measure="tone.courtesy", rater="ana",
                    value=1.0, source="page")
        before = [(x.target, x.case_id, x.value, x.source) for x in s.labels(rater="ana")]
    rows = [{"sample_id": r["sample_id"], "courtesy": "5", "condescension": "", "distrust": ""}
            for r in read_csv(exported)]
    write_csv(tmp_path / "ana.csv", rows, ["sample_id", "courtesy", "condescension", "distrust"])
    code, _out, err = run_cli(["calibrate", "import", run, tmp_path / "ana.csv"], capsys)
    assert code == 2 and "ana.csv" in err and "rater 'ana'" in err and "ana-file.csv" in err
    with Store.open(run, create=False) as s:
        assert [(x.target, x.case_id, x.value, x.source) for x in s.labels(rater="ana")] == before
