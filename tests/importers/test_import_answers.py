"""`fairpair import-answers`: the answers of a mock run, written out in each format and imported, give the
run's own results; the imported run works with measure, analyze, report, compare and gate."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from fairpair.analysis import analyze_run
from fairpair.cli import main
from fairpair.importers import AnswerRow, ImportBattery, import_answers
from fairpair.measures import measure_run
from fairpair.store import Store
from import_helpers import (
    RECORDS_MAPPING,
    answer_rows,
    chat_records,
    import_battery,
    write_csv,
    write_jsonl,
    write_yaml,
)


def _keys(run: Path) -> dict[str, tuple]:
    """case id -> (matched set, groups): what identifies a case across two runs of the same answers."""
    with Store.open(run, create=False) as s:
        return {c.id: (c.matched_set, tuple(sorted(c.groups.items()))) for c in s.iter_cases()}


def _results(run: Path) -> dict:
    res = json.loads((run / "results.json").read_text(encoding="utf-8"))
    keys = _keys(run)
    for c in res["comparisons"]:  # evidence names cases by id: name them by set and groups instead
        for ev in c["evidence"]:
            ev["case_a"], ev["case_b"] = keys[ev["case_a"]], keys[ev["case_b"]]
    return res


def assert_same_results(run_a: Path, run_b: Path, *, same_plan: bool = True) -> None:
    """Every statistic, verdict and count of the two runs' results.json agree (the plan hash too, unless
    the measures were declared otherwise: it hashes them)."""
    a, b = _results(run_a), _results(run_b)
    # the planted bias is in the estimate; 3 names per group with names random (the default) give no verdict
    first = a["comparisons"][0]
    plan = [c for c in a["comparisons"] if not c["measure"].startswith("answer.")]  # answer statuses aside
    assert len(plan) == 5 and first["verdict"] == "insufficient design" and first["estimate"] < -0.2
    for key in ("comparisons", "omnibus", "two_party", "counts", "measures", "targets", "plan_sha256", "alpha",
                "correction", "n_resamples", "seed", "notes"):
        if key == "plan_sha256" and not same_plan:
            continue
        assert json.loads(json.dumps(a[key], default=list)) == json.loads(json.dumps(b[key], default=list)), key


def test_jsonl_import_gives_the_mock_runs_results(mock_run, tmp_path):
    rows = answer_rows(mock_run)
    src = write_jsonl(tmp_path / "answers.jsonl", rows)
    bat = write_yaml(tmp_path / "import.yaml", import_battery())
    res = import_answers(src, bat, tmp_path / "imported", target="mock")
    assert (res.rows, res.cases, res.answers, res.failed, res.matched_sets) == (216, 216, 216, 0, 72)
    assert res.designs["counterfactual-origen"]["templates"] == 12 and res.warnings == []
    counts = measure_run(tmp_path / "imported").counts
    assert counts["refund"].ok == 216 and counts["words"].ok == 216
    analyze_run(tmp_path / "imported")
    assert_same_results(mock_run, tmp_path / "imported")


def test_values_that_came_with_the_answers_are_kept_and_the_rest_measured(mock_run, tmp_path):
    rows = answer_rows(mock_run, with_measures=True)
    for r in rows:  # only 'refund' came measured: 'words' is left to fairpair's word_count
        del r["measures"]["words"]
    src = write_jsonl(tmp_path / "answers.jsonl", rows)
    bat = write_yaml(tmp_path / "import.yaml", import_battery())
    res = import_answers(src, bat, tmp_path / "imported", target="mock")
    assert res.measurements == 216
    counts = measure_run(tmp_path / "imported").counts
    assert (counts["refund"].skipped, counts["refund"].ok) == (216, 0)
    assert counts["words"].ok == 216
    analyze_run(tmp_path / "imported")
    assert_same_results(mock_run, tmp_path / "imported")


def test_csv_with_measured_values_needs_no_measure_stage(mock_run, tmp_path):
    src = write_csv(tmp_path / "answers.csv", answer_rows(mock_run, with_measures=True))
    bat = write_yaml(tmp_path / "import.yaml", import_battery(measures={
        "refund": {"kind": "imported", "scale": "binary"}, "words": {"kind": "imported", "scale": "count"}}))
    res = import_answers(src, bat, tmp_path / "imported", target="mock")
    assert (res.format, res.answers, res.measurements) == ("csv", 216, 432)
    with Store.open(tmp_path / "imported", create=False) as s:
        assert {m.measure for m in s.measurements()} == {"refund", "words"}
        case = next(s.iter_cases())
        assert case.messages == [{"role": "system", "content": "Eres el asistente de una tienda."}]
        assert case.turns[0].startswith("Hola, soy ")
        r = s.answer("mock", case.id)
        assert r.created_at == "2026-11-30T10:00:00.000+00:00" and r.model == "mock-1"
    analyze_run(tmp_path / "imported")
    assert_same_results(mock_run, tmp_path / "imported", same_plan=False)


def test_chat_completion_records_in_a_folder_give_the_same_results(mock_run, tmp_path):
    records = chat_records(answer_rows(mock_run))
    folder = tmp_path / "records"
    folder.mkdir()
    write_jsonl(folder / "part1.jsonl", records[:80])
    write_jsonl(folder / "part2.jsonl", records[80:150])
    (folder / "part3.json").write_text(json.dumps(records[150:], ensure_ascii=False, indent=1), encoding="utf-8")
    (folder / "notes.txt").write_text("not a record file", encoding="utf-8")
    bat = write_yaml(tmp_path / "import.yaml", import_battery(records=RECORDS_MAPPING))
    res = import_answers(folder, bat, tmp_path / "imported", target="mock")
    assert res.format == "chat-completions" and [s.rows for s in res.sources] == [80, 70, 66]
    with Store.open(tmp_path / "imported", create=False) as s:
        r = next(s.responses())
        assert (r.prompt_tokens, r.completion_tokens, r.finish_reason) == (20, 40, "stop")
        assert r.created_at.startswith("2025-11-30T10:00:00")
    measure_run(tmp_path / "imported")
    analyze_run(tmp_path / "imported")
    assert_same_results(mock_run, tmp_path / "imported")
    manifest = json.loads((tmp_path / "imported" / "manifest.json").read_text(encoding="utf-8"))
    files = manifest["import"]["files"]
    assert [Path(f["path"]).name for f in files] == ["part1.jsonl", "part2.jsonl", "part3.json"]
    for f in files:
        assert f["sha256"] == hashlib.sha256(Path(f["path"]).read_bytes()).hexdigest()
    combined = hashlib.sha256("".join(f"{Path(f['path']).name}\0{f['sha256']}\n" for f in files).encode()).hexdigest()
    assert manifest["import"]["sha256"] == combined


def test_a_failed_call_in_the_records_is_stored_as_a_failed_answer(mock_run, tmp_path):
    records = chat_records(answer_rows(mock_run))[:6]
    records[2]["error"] = {"code": "rate_limit_exceeded", "message": "Too many requests"}
    records[2]["response"] = None
    src = write_jsonl(tmp_path / "batch_output.jsonl", records)
    bat = write_yaml(tmp_path / "import.yaml", import_battery(records=RECORDS_MAPPING))
    res = import_answers(src, bat, tmp_path / "imported")
    assert (res.answers, res.failed, res.targets) == (5, 1, ["imported"])
    with Store.open(tmp_path / "imported", create=False) as s:
        failed = list(s.responses(status="failed"))
        assert len(failed) == 1 and "rate_limit_exceeded" in failed[0].error
        assert s.counts("imported") == {"cases": 6, "answered": 5, "failed": 1, "retried": 0}


def test_manifest_records_the_source_file_sha256_and_the_plan(mock_run, tmp_path):
    src = write_jsonl(tmp_path / "answers.jsonl", answer_rows(mock_run))
    bat = write_yaml(tmp_path / "import.yaml", import_battery())
    import_answers(src, bat, tmp_path / "imported", target="mock")
    m = json.loads((tmp_path / "imported" / "manifest.json").read_text(encoding="utf-8"))
    assert m["import"]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert m["import"]["battery_file_sha256"] == hashlib.sha256(bat.read_bytes()).hexdigest()
    assert m["import"]["format"] == "jsonl" and m["import"]["rows"] == 216
    assert m["targets"]["mock"] == {"kind": "imported", "name": "mock", "models": ["mock-1"],
                                    "source_sha256": m["import"]["sha256"]}
    assert m["counts"]["mock"] == {"answered": 216, "cases": 216, "failed": 0, "retried": 0}
    # the plan hash is the one a run of the same plan and measures registers
    mock_manifest = json.loads((mock_run / "manifest.json").read_text(encoding="utf-8"))
    assert m["plan_sha256"] == mock_manifest["plan_sha256"]
    with Store.open(tmp_path / "imported", create=False) as s:
        assert s.get_meta("plan_sha256") == m["plan_sha256"]
        assert [e["kind"] for e in s.events()] == ["plan_registered", "imported"]
        b = s.get_meta("battery")
        assert [t["id"] for t in b["templates"]][:3] == ["t00", "t01", "t02"]
        assert b["templates"][0]["turns"] == ["Hola, soy {origen}. Caso 0: mi pedido llegó roto."]
        assert b["attributes"]["origen"]["groups"]["magreb"]["variants"] == ["Fátima", "Aicha", "Khadija"]


def test_variants_are_taken_from_the_rows_when_the_battery_lists_none(mock_run, tmp_path):
    src = write_jsonl(tmp_path / "answers.jsonl", answer_rows(mock_run))
    bat = write_yaml(tmp_path / "import.yaml", import_battery(variants=False))
    import_answers(src, bat, tmp_path / "imported")
    with Store.open(tmp_path / "imported", create=False) as s:
        groups = s.get_meta("battery")["attributes"]["origen"]["groups"]
    assert groups["espana"]["variants"] == ["Lucía", "María", "Carmen"]
    assert groups["rumania"]["variants"] == ["Ioana", "Elena", "Andreea"]


def test_cli_both_spellings_then_gate_compare_and_report(mock_run, tmp_path, capsys):
    src = write_csv(tmp_path / "answers.csv", answer_rows(mock_run))
    bat = write_yaml(tmp_path / "import.yaml", import_battery())
    main(["import-answers", str(src), "--battery", str(bat), "-o", str(tmp_path / "a"), "--target", "mock",
          "--no-report"])
    out = capsys.readouterr().out
    assert "imported 216 rows (csv)" in out and "72 matched sets" in out
    assert (tmp_path / "a" / "results.json").exists()
    main(["import-answers", str(src), "-b", str(bat), "--out", str(tmp_path / "b"), "--target", "mock",
          "--no-measure", "--no-analyze", "--no-report"])
    assert not (tmp_path / "b" / "results.json").exists()
    main(["measure", str(tmp_path / "b")])
    main(["analyze", str(tmp_path / "b")])
    assert_same_results(mock_run, tmp_path / "b")
    with pytest.raises(SystemExit) as exc:  # no primary comparison has a verdict (3 names, names random): exit 2
        main(["gate", str(tmp_path / "b")])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:  # asked to fail on it, the gate fails
        main(["gate", str(tmp_path / "b"), "--on-insufficient"])
    assert exc.value.code == 1
    capsys.readouterr()
    main(["compare", str(mock_run), str(tmp_path / "b"), "--json"])
    cmp = json.loads(capsys.readouterr().out)
    assert len(cmp["rows"]) == 5 and all(r["change"] == 0 for r in cmp["rows"])
    main(["report", str(tmp_path / "b")])
    md = (tmp_path / "b" / "report" / "report.md").read_text(encoding="utf-8")
    assert "fairpair import-answers NEW_ANSWERS" in md
    assert hashlib.sha256(src.read_bytes()).hexdigest() in md


def test_answers_schema_is_generated_from_the_models(capsys):
    main(["answers-schema"])
    schema = json.loads(capsys.readouterr().out)
    assert schema == {**AnswerRow.model_json_schema(), "$schema": "https://json-schema.org/draft/2020-12/schema"}
    assert {"set", "template", "repetition", "groups", "variants", "messages", "prompt", "answer", "measures",
            "model", "timestamp"} <= set(schema["properties"])
    assert set(schema["required"]) == {"set", "template"} and schema["additionalProperties"] is False
    main(["answers-schema", "--battery"])
    bschema = json.loads(capsys.readouterr().out)
    assert bschema["properties"].keys() == ImportBattery.model_json_schema()["properties"].keys()
    assert "records" in bschema["properties"]


def test_crossed_and_baseline_rows_make_their_designs(tmp_path):
    rows = []
    for t in ("t1", "t2"):
        base = {"template": t, "prompt": f"Hola ({t})", "answer": "ok"}
        rows.append({**base, "set": f"{t}-b", "groups": {}})
        for k, (sexo, edad) in enumerate([("f", "joven"), ("f", "mayor"), ("m", "joven"), ("m", "mayor")]):
            rows.append({**base, "set": f"{t}-x", "groups": {"sexo": sexo, "edad": edad},
                         "measures": {"ok": k % 2 == 0}})
    src = write_jsonl(tmp_path / "a.jsonl", rows)
    bat = write_yaml(tmp_path / "b.yaml", {
        "schema_version": 1, "name": "x", "attributes": {
            "sexo": {"groups": {"f": {}, "m": {}}}, "edad": {"signal": "age", "groups": {"joven": {}, "mayor": {}}}},
        "measures": {"ok": {"kind": "imported", "scale": "binary"}},
        "analysis": {"comparisons": [{"measure": "ok", "attribute": "edad", "reference": "joven"}]}})
    res = import_answers(src, bat, tmp_path / "run")
    assert set(res.designs) == {"baseline", "crossed-sexo-x-edad"}
    assert res.designs["crossed-sexo-x-edad"]["cases"] == 8
    r = analyze_run(tmp_path / "run")
    (c,) = [c for c in r.comparisons if c.measure == "ok"]  # answer statuses aside
    assert (c.design, c.group_a, c.group_b, c.n_pairs) == ("crossed-sexo-x-edad", "mayor", "joven", 4)
    assert (c.value_a, c.value_b) == (0.0, 1.0)


def test_judge_measures_find_counterparts_and_are_blinded_on_an_imported_run(tmp_path):
    """A pairwise judge against the baseline: each answer is judged beside the baseline answer of its
    template and repetition, with every name masked; a tool call in the row is read by a tool_call measure."""
    from fairpair.targets._base import Completion

    class Judge:
        max_concurrency = None

        def __init__(self):
            self.calls = []

        async def generate(self, request):
            self.calls.append(request)
            return Completion(text='{"winner": "tie", "reason": "igual"}', model="scripted")

        def identity(self):
            return {"kind": "scripted", "model": "scripted-judge"}

        async def aclose(self):
            return None

    rows = []
    for t in ("t1", "t2"):
        rows.append({"set": f"{t}-base", "template": t, "groups": {}, "prompt": "Hola, soy un cliente.",
                     "answer": "Le ayudamos."})
        for g, name in (("espana", "Lucía"), ("magreb", "Fátima")):
            rows.append({"set": f"{t}-p0", "template": t, "groups": {"origen": g}, "variants": {"origen": name},
                         "prompt": f"Hola, soy {name}.", "answer": f"Hola {name}, le ayudamos.",
                         "tool_calls": [{"name": "issue_refund", "arguments": {"reason": "roto"}}] if g == "espana"
                         else []})
    src = write_jsonl(tmp_path / "a.jsonl", rows)
    b = import_battery(measures={"hhh": {"kind": "pairwise", "against": "baseline"},
                                 "refund_tool": {"kind": "tool_call", "name": "issue_refund"}})
    b["analysis"] = {"comparisons": [{"measure": "refund_tool", "attribute": "origen", "reference": "espana"}]}
    b["judge_self_test"] = "off"  # the scripted judge always prefers A; the self-test is tested elsewhere
    import_answers(src, write_yaml(tmp_path / "b.yaml", b), tmp_path / "run")
    judge = Judge()
    counts = measure_run(tmp_path / "run", judge=judge).counts
    assert (counts["hhh"].ok, counts["hhh"].failed) == (4, 0)
    assert len(judge.calls) == 8  # both orders
    seen = " ".join(m["content"] for r in judge.calls for m in r.messages)
    assert "Lucía" not in seen and "Fátima" not in seen and "[MASK]" in seen
    with Store.open(tmp_path / "run", create=False) as s:
        vals = {(s.case(m.case_id).groups.get("origen"), m.measure): m.value for m in s.measurements()}
    assert vals[("espana", "hhh")] == 0.5 and vals[("espana", "refund_tool")] is True
    assert vals[("magreb", "refund_tool")] is False


def test_a_judge_that_wrote_the_imported_answers_is_refused(tmp_path):
    from fairpair.errors import FairpairError
    from fairpair.targets.mock import MockTarget

    rows = [{"set": "s", "template": "t", "groups": {"origen": g}, "prompt": "Hola", "answer": "Hola",
             "model": "mock-1"} for g in ("espana", "magreb")]
    b = import_battery(measures={"tono": {"kind": "judge"}})
    b["analysis"] = {}
    import_answers(write_jsonl(tmp_path / "a.jsonl", rows), write_yaml(tmp_path / "b.yaml", b), tmp_path / "run")
    with pytest.raises(FairpairError, match="the judge is the same system as target 'imported'"):
        measure_run(tmp_path / "run", judge=MockTarget({"model": "mock-1"}, name="judge"))


def test_two_targets_answering_the_same_cases(mock_run, tmp_path):
    """Rows of two systems to the same prompts: one case each, one answer per system, analysed per system."""
    rows = answer_rows(mock_run, with_measures=True)
    both = [{**r, "target": "before"} for r in rows] + [
        {**r, "target": "after", "measures": {**r["measures"], "refund": True}} for r in rows]
    bat = write_yaml(tmp_path / "import.yaml", import_battery(measures={
        "refund": {"kind": "imported", "scale": "binary"}, "words": {"kind": "imported", "scale": "count"}}))
    res = import_answers(write_jsonl(tmp_path / "a.jsonl", both), bat, tmp_path / "run")
    assert (res.cases, res.answers, res.targets) == (216, 432, ["after", "before"])
    r = analyze_run(tmp_path / "run")
    refund = {(c.target, c.group_a): c for c in r.comparisons if c.measure == "refund"}
    assert refund[("after", "magreb")].estimate == 0.0  # every answer refunds
    assert refund[("before", "magreb")].estimate == pytest.approx(-0.3888888888888889)
