"""Malformed answer files and import batteries: one clear message with file, line and key, exit code 2,
and nothing written (no run directory, no leftover temporary folder, an existing run untouched)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.run_helpers import run_cli

from fairpair.cli import main
from fairpair.errors import FairpairError
from fairpair.importers import import_answers
from import_helpers import RECORDS_MAPPING, import_battery, write_jsonl, write_yaml


def _row(set_id: str = "t1/r0/p0", group: str = "espana", name: str = "Lucía", **kw) -> dict:
    row = {"set": set_id, "template": "t1", "groups": {"origen": group}, "variants": {"origen": name},
           "prompt": f"Hola, soy {name}.", "answer": "Le ofrecemos el reembolso completo del importe."}
    row.update(kw)
    return row


def _good_rows() -> list[dict]:
    return [_row("s1", "espana", "Lucía"), _row("s1", "magreb", "Fátima"), _row("s1", "rumania", "Ioana"),
            _row("s2", "espana", "María"), _row("s2", "magreb", "Aicha"), _row("s2", "rumania", "Elena")]


@pytest.fixture
def bat(tmp_path) -> Path:
    return write_yaml(tmp_path / "import.yaml", import_battery())


def _fails(tmp_path: Path, src: Path, bat: Path, **kw) -> FairpairError:
    out = tmp_path / "run"
    with pytest.raises(FairpairError) as exc:
        import_answers(src, bat, out, **kw)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary folder left
    return exc.value


def _lines(tmp_path: Path, text: str, name: str = "a.jsonl") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_the_good_rows_import(tmp_path, bat):
    res = import_answers(write_jsonl(tmp_path / "a.jsonl", _good_rows()), bat, tmp_path / "run")
    assert (res.answers, res.matched_sets) == (6, 2)


def test_a_line_that_is_not_json(tmp_path, bat):
    rows = [json.dumps(r, ensure_ascii=False) for r in _good_rows()]
    rows.insert(3, '{"set": "s9", "template": "t1",')
    err = _fails(tmp_path, _lines(tmp_path, "\n".join(rows) + "\n"), bat)
    assert (Path(err.file).name, err.line) == ("a.jsonl", 4)
    assert err.message.startswith("not valid JSON")
    assert "nothing was imported" in err.hint


def test_cli_prints_file_line_and_key_and_exits_2(tmp_path, bat, capsys):
    rows = _good_rows()
    rows[4]["groups"] = {"origen": "magrib"}
    rows[4]["variants"] = {"origen": "Aicha"}
    src = write_jsonl(tmp_path / "a.jsonl", rows)
    with pytest.raises(SystemExit) as exc:
        main(["import-answers", str(src), "-b", str(bat), "-o", str(tmp_path / "run")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{src}:5: [groups.origen] unknown group 'magrib' of 'origen'" in " ".join(err.split())
    assert "did you mean 'magreb'?" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_every_bad_row_is_counted_and_the_first_ones_listed(tmp_path, bat):
    rows = _good_rows()
    rows[1]["groups"]["origen"] = "nowhere"
    rows[3]["answer"] = None
    rows[5]["colour"] = "red"
    err = _fails(tmp_path, write_jsonl(tmp_path / "a.jsonl", rows), bat)
    assert (err.line, err.key) == (2, "groups.origen")
    assert "2 more problem(s): line 4, line 6 [colour]" in err.hint


@pytest.mark.parametrize("change, line, key, message", [
    (lambda r: r[2].update(groups={"origin": "rumania"}, variants={}), 3, "groups.origin",
     "unknown attribute 'origin'"),
    (lambda r: r[2].update(variants={"origen": "Ioanna"}), 3, "variants.origen",
     "'Ioanna' is not a declared variant of group 'rumania'"),
    (lambda r: r[1].update(error="timeout"), 2, None, "give either 'answer'"),
    (lambda r: r[1].pop("answer"), 2, None, "give either 'answer'"),
    (lambda r: r[0].pop("prompt"), 1, None, "give the 'prompt' or the 'messages'"),
    (lambda r: r[0].update(prompt=None, messages=[{"role": "user", "content": "Hola"},
                                                  {"role": "assistant", "content": "Hola"}]), 1, None,
     "'messages' must end with the user's message"),
    (lambda r: r[0].update(messages=[{"role": "robot", "content": "x"}], prompt=None), 1, "messages.0.role",
     "Input should be 'system', 'user' or 'assistant'"),
    (lambda r: r[0].pop("template"), 1, "template", "missing required key 'template'"),
    (lambda r: r[0].update(template="t 1"), 1, "template", "is not a valid id"),
    (lambda r: r[0].update(repetition=-1), 1, "repetition", "greater than or equal to 0"),
    (lambda r: r[0].update(repetition="1"), 1, "repetition", "Input should be a valid integer"),
    (lambda r: r[0].update(timestamp="yesterday"), 1, "timestamp", "valid datetime"),
    (lambda r: r[0].update(varaints={}), 1, "varaints", "unknown key 'varaints'"),
    (lambda r: r[4].update(set="s1"), 5, None, "matched set 's1' already has a case origen=magreb (line 2) "
                                               "with other variants, prompt"),
    (lambda r: r.append(dict(r[0])), 7, None, "a second answer of target 'imported' to matched set 's1', "
                                              "origen=espana (the first is at line 1)"),
    (lambda r: r[3].update(set="s1", groups={"origen": "rumania"}, variants={"origen": "Elena"}, template="t2"),
     4, "set", "matched set 's1' is template 't1', repetition 0 at line 1; this row says template 't2'"),
    (lambda r: r[0].update(design="counterfactual-origen", groups={}, variants={}), 2, "design",
     "design 'counterfactual-origen' varies nothing (line 1); this row varies origen"),
    (lambda r: r[1].update(measures={"refund": 0.5}), 2, "measures.refund",
     "measure 'refund' is yes/no: give true or false (got 0.5)"),
    (lambda r: r[1].update(measures={"words": True}), 2, "measures.words", "measure 'words' is count"),
    (lambda r: r[1].update(measures={"words": 2.5}), 2, "measures.words", "a count: give a whole number"),
    (lambda r: r[1].update(measures={"tone": 3}), 2, "measures.tone", "measure 'tone' is not declared"),
    (lambda r: r[1].update(measures={"refund": "yes"}), 2, "measures.refund", "Input should be a valid"),
    (lambda r: r[1].update(error="503", answer=None, measures={"refund": True}), 2, "measures",
     "measured values on a row without an answer"),
])
def test_bad_rows(tmp_path, bat, change, line, key, message):
    rows = _good_rows()
    change(rows)
    err = _fails(tmp_path, write_jsonl(tmp_path / "a.jsonl", rows), bat)
    assert (err.line, err.key) == (line, key), err.format()
    assert message in err.message, err.format()


@pytest.mark.parametrize("change, key", [
    (lambda r: r.update(measures={"words": float("nan")}), "measures.words"),
    (lambda r: r.update(measures={"refund": float("-inf")}), "measures.refund"),
    (lambda r: r.update(latency_s=float("inf")), "latency_s"),
])
def test_nan_and_infinity_are_refused_with_their_key(tmp_path, bat, capsys, change, key):
    """Python's json writes NaN and Infinity, and the strict reader took them: a NaN count stopped the
    import with an internal error (exit 1), a NaN yes/no was reported as 'a valid boolean' with two more
    problems in the row, an infinite latency was stored."""
    rows = _good_rows()
    change(rows[1])
    src = write_jsonl(tmp_path / "a.jsonl", rows)
    code, _, err = run_cli(["import-answers", src, "-b", bat, "-o", tmp_path / "run"], capsys)
    assert code == 2, err
    assert f"{src}:2: [{key}] Input should be a finite number" in err
    assert "more problem(s) in this row" not in err and "internal error" not in err
    assert not (tmp_path / "run").exists()


def test_a_key_given_twice_in_a_row(tmp_path, bat):
    """JSON parsers keep the last of two equal keys: the first value was dropped without a word."""
    lines = [json.dumps(r, ensure_ascii=False) for r in _good_rows()]
    lines[2] = lines[2].replace('"groups": {"origen": "rumania"}',
                                '"groups": {"origen": "rumania", "origen": "magreb"}')
    lines[4] = lines[4].replace('{"set": "s2"', '{"set": "s9", "set": "s2"')
    err = _fails(tmp_path, _lines(tmp_path, "\n".join(lines) + "\n"), bat)
    assert (err.line, err.key, err.message) == (3, "origen", "key 'origen' appears twice in one object; give it once")
    assert "1 more problem(s): line 5 [set]" in err.hint


def test_one_name_in_two_groups(tmp_path):
    bat = write_yaml(tmp_path / "import.yaml", import_battery(variants=False))
    rows = _good_rows()
    rows[4]["variants"]["origen"] = "lucia"  # Lucía (espana) again, for magreb: accents and case do not count
    err = _fails(tmp_path, write_jsonl(tmp_path / "a.jsonl", rows), bat)
    assert (err.line, err.key) == (5, "variants.origen")
    assert "'lucia' is a variant of group 'espana' (line 1) and of 'magreb'" in err.message


def test_not_utf8_names_the_line(tmp_path, bat):
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in _good_rows()).encode("utf-8")
    p = tmp_path / "a.jsonl"
    p.write_bytes(text.replace("Fátima".encode(), "F\xe1tima".encode("latin-1")))
    err = _fails(tmp_path, p, bat)
    assert err.line == 2 and "not valid UTF-8" in err.message


def test_an_empty_file_and_a_missing_file(tmp_path, bat):
    err = _fails(tmp_path, _lines(tmp_path, "\n\n"), bat)
    assert err.message == "no answers in the file"
    err = _fails(tmp_path, tmp_path / "nope.jsonl", bat)
    assert err.message == "file not found"


def test_an_existing_run_is_never_added_to_or_overwritten(tmp_path, bat):
    src = write_jsonl(tmp_path / "a.jsonl", _good_rows())
    out = tmp_path / "run"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(FairpairError) as exc:
        import_answers(src, bat, out)
    assert "exists and is not empty" in exc.value.message
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert import_answers(src, bat, empty).answers == 6  # an empty directory holds nothing to lose


def test_a_failure_while_writing_leaves_nothing(tmp_path, bat, monkeypatch):
    from fairpair.store import Store

    calls = []
    real = Store.add_response

    def flaky(self, **kw):
        calls.append(1)
        if len(calls) == 4:
            raise FairpairError("cannot write the run store: the disk is full")
        return real(self, **kw)

    monkeypatch.setattr(Store, "add_response", flaky)
    err = _fails(tmp_path, write_jsonl(tmp_path / "a.jsonl", _good_rows()), bat)
    assert "disk is full" in err.message and len(calls) == 4


# ------------------------------------------------------------------ CSV


def _csv(tmp_path: Path, text: str) -> Path:
    return _lines(tmp_path, text, "a.csv")


CSV_HEAD = "set,template,group.origen,variant.origen,prompt,answer,measure.refund\n"


def test_csv_good(tmp_path, bat):
    src = _csv(tmp_path, CSV_HEAD + 's1,t1,espana,Lucía,"Hola, soy Lucía.",ok,true\n'
                                    's1,t1,magreb,Fátima,"Hola,\nsoy Fátima.",ok,FALSE\n')
    res = import_answers(src, bat, tmp_path / "run")
    assert (res.answers, res.measurements) == (2, 2)


@pytest.mark.parametrize("body, line, key, message", [
    ('s1,t1,espana,Lucía,Hola,ok,true\ns1,t1,magreb,Fátima,Hola,ok,maybe\n', 3, "measure.refund",
     "not true, false or a number: 'maybe'"),
    ('s1,t1,espana,Lucía,"Hola\n\nmultiline",ok,true\ns1,t1,magrib,Fátima,Hola,ok,true\n', 5, "group.origen",
     "unknown group 'magrib'"),
    ('s1,t1,espana,Lucía,Hola,ok\n', 2, None, "6 cells where the header has 7 columns"),
    ('s1,,espana,Lucía,Hola,ok,true\n', 2, "template", "missing required key 'template'"),
])
def test_csv_bad_rows(tmp_path, bat, body, line, key, message):
    err = _fails(tmp_path, _csv(tmp_path, CSV_HEAD + body), bat)
    assert (err.line, err.key) == (line, key), err.format()
    assert message in err.message


@pytest.mark.parametrize("drop, key, message", [
    ("set", "set", "no 'set' column; every row needs one"),
    ("template", "template", "no 'template' column"),
    ("prompt", "prompt", "no 'prompt' column (nor 'messages')"),
    ("answer", "answer", "no 'answer' column (nor 'error')"),
])
def test_csv_without_a_required_column_is_one_error_at_the_header(tmp_path, bat, capsys, drop, key, message):
    """Before: one problem per row ('missing required key' on each, or 'give either answer or error' with
    no key), the first at line 2."""
    cols = CSV_HEAD.strip().split(",")
    rows = [r.split(",") for r in ("s1,t1,espana,Lucía,Hola,ok,true", "s1,t1,magreb,Fátima,Hola,ok,false")]
    keep = [i for i, c in enumerate(cols) if c != drop]
    src = _csv(tmp_path, "\n".join(",".join(r[i] for i in keep) for r in [cols, *rows]) + "\n")
    err = _fails(tmp_path, src, bat)
    assert (err.line, err.key) == (1, key) and message in err.message, err.format()
    code, _, text = run_cli(["import-answers", src, "-b", bat, "-o", tmp_path / "run"], capsys)
    assert code == 2 and f"{src}:1: [{key}] {message}" in text


def test_csv_bad_header_and_json_cells(tmp_path, bat):
    err = _fails(tmp_path, _csv(tmp_path, "set,templte,prompt,answer\ns1,t1,Hola,ok\n"), bat)
    assert (err.line, err.key, err.message, err.hint) == (1, "templte", "unknown column 'templte'",
                                                          "did you mean 'template'?")
    (tmp_path / "a.csv").unlink()
    err = _fails(tmp_path, _csv(tmp_path, "set,template,group.origen,messages,answer\n"
                                          "s1,t1,espana,[{\"role\": \"user\"...,ok\n"), bat)
    assert (err.line, err.key) == (2, "messages") and err.message.startswith("not valid JSON")


# ------------------------------------------------------------------ chat-completion records


def _record(custom_id="s1|espana", *, content="ok", messages=None, rep=0, name="Lucía"):
    return {"custom_id": custom_id, "body": {"messages": messages or [{"role": "user", "content": "Hola"}]},
            "metadata": {"template": "t1", "rep": rep, "name": name},
            "response": {"body": {"object": "chat.completion", "model": "m",
                                  "choices": [{"message": {"role": "assistant", "content": content}}]}},
            "error": None}


@pytest.fixture
def rbat(tmp_path) -> Path:
    return write_yaml(tmp_path / "records.yaml", import_battery(records=RECORDS_MAPPING))


@pytest.mark.parametrize("bad, key, message", [
    (lambda r: r.pop("metadata"), None, "nothing at $.metadata.template (records.template)"),
    (lambda r: r.update(custom_id="s1-espana"), None, "'s1-espana' at $.custom_id does not match"),
    (lambda r: r["metadata"].update(rep="first"), None, "repetition 'first' is not a whole number"),
    (lambda r: r["response"].update(body={"choices": []}), None, "no chat completion with 'choices'"),
    (lambda r: r["body"].update(messages=[{"role": "user", "content": [{"type": "image_url"}]}]), None,
     "a content part of type 'image_url'"),
    (lambda r: r["metadata"].update(name=["Lucía"]), None, "the variant of 'origen' is a list"),
])
def test_bad_records(tmp_path, rbat, bad, key, message):
    recs = [_record("s1|espana"), _record("s1|magreb", name="Fátima"), _record("s1|rumania", name="Ioana")]
    bad(recs[1])
    err = _fails(tmp_path, write_jsonl(tmp_path / "out.jsonl", recs), rbat)
    assert (err.line, err.key) == (2, key), err.format()
    assert message in err.message, err.format()


def test_bad_record_in_a_json_list_is_named_by_its_index(tmp_path, rbat):
    recs = [_record("s1|espana"), _record("s1|magreb", name="Fátima")]
    recs[1]["custom_id"] = "s1|magrib"
    p = tmp_path / "records.json"
    p.write_text(json.dumps(recs), encoding="utf-8")
    err = _fails(tmp_path, p, rbat)
    assert (err.line, err.key) == (None, "[1].groups.origen") and "unknown group 'magrib'" in err.message
    p.write_text('[{"custom_id": 1,\n "x": }]', encoding="utf-8")
    err = _fails(tmp_path, p, rbat)
    assert err.line == 2 and err.message.startswith("not valid JSON")


def test_format_and_mapping_must_agree(tmp_path, bat, rbat):
    src = write_jsonl(tmp_path / "a.jsonl", _good_rows())
    err = _fails(tmp_path, src, bat, fmt="chat-completions")
    assert "needs a 'records' mapping" in err.message
    err = _fails(tmp_path, src, rbat, fmt="jsonl")
    assert (err.key, err.line) == ("records", 44) and "only read with --format chat-completions" in err.message
    err = _fails(tmp_path, _lines(tmp_path, "x", "a.txt"), bat)
    assert "cannot tell the format" in err.message
    err = _fails(tmp_path, src, bat, fmt="xml")
    assert "unknown --format 'xml'" in err.message


# ------------------------------------------------------------------ the import battery


@pytest.mark.parametrize("edit, line, key, message, hint", [
    (lambda b: b.update(templates=[{"id": "t"}]), 44, "templates",
     "this is a battery to run (templates), not an import battery", "run it with `fairpair run"),
    (lambda b: b["attributes"]["origen"]["groups"]["espana"].update(lable="x"), 13,
     "attributes.origen.groups.espana.lable", "unknown key 'lable'", "did you mean 'label'?"),
    (lambda b: b["attributes"]["origen"].update(groups={"espana": {}}), 7, "attributes.origen.groups",
     "at least 2 items", None),
    (lambda b: b["measures"]["refund"].update(any_off=["x"]), 28, "measures.refund.any_off",
     "unknown key 'any_off' for kind 'keywords'", None),
    (lambda b: b["measures"].update(tone={"kind": "jugde"}), 31, "measures.tone.kind", "unknown kind 'jugde'",
     "did you mean 'judge'?"),
    (lambda b: b["measures"].update(hired={"kind": "imported"}), 30, "measures.hired.scale",
     "missing required key 'scale'", None),
    (lambda b: b["analysis"]["comparisons"][0].update(reference="spain"), 37,
     "analysis.comparisons.0.reference", "unknown group 'spain' of 'origen'", "did you mean 'espana'?"),
    (lambda b: b["analysis"]["comparisons"][0].update(design="counterfactual-origin"), 39,
     "analysis.comparisons.0.design", "unknown design 'counterfactual-origin'",
     "did you mean 'counterfactual-origen'?"),
])
def test_bad_import_batteries(tmp_path, edit, line, key, message, hint):
    b = import_battery()
    edit(b)
    bat = write_yaml(tmp_path / "import.yaml", b)
    err = _fails(tmp_path, write_jsonl(tmp_path / "a.jsonl", _good_rows()), bat)
    assert (Path(err.file).name, err.key) == ("import.yaml", key), err.format()
    assert message in err.message, err.format()
    if hint:
        assert hint in (err.hint or ""), err.format()
    assert err.line == line, (err.format(), bat.read_text())


def test_what_the_rows_leave_out_is_said_loudly(tmp_path, bat, capsys):
    rows = [r for r in _good_rows() if r["groups"]["origen"] != "rumania"]
    rows.append(_row("s3", "espana", "Carmen"))  # a set with a single member
    src = write_jsonl(tmp_path / "a.jsonl", rows)
    res = import_answers(src, bat, tmp_path / "run")
    assert res.warnings == ["1 matched set(s) have a single member and form no pair (e.g. 's3')",
                            "attribute 'origen': no row has group(s) rumania"]
    main(["import-answers", str(src), "-b", str(bat), "-o", str(tmp_path / "run2"), "--no-measure",
          "--no-report"])
    out = " ".join(capsys.readouterr().out.split())
    assert "warning: 1 matched set(s) have a single member" in out
    assert "warning: attribute 'origen': no row has group(s) rumania" in out


def test_a_target_option_no_row_uses_is_said_loudly(tmp_path, bat, capsys):
    """Every row names its target: --target did nothing, and nothing said so."""
    src = write_jsonl(tmp_path / "a.jsonl", [dict(r, target="bot_a") for r in _good_rows()])
    code, out, _ = run_cli(["import-answers", src, "-b", bat, "-o", tmp_path / "run", "--target", "bot_b",
                            "--no-measure", "--no-report"], capsys)
    assert code == 0
    assert "warning: --target 'bot_b' names no answer: every row names its own target (bot_a)" in " ".join(out.split())
    assert import_answers(src, bat, tmp_path / "run2").warnings == []  # not given: nothing to say
    rows = _good_rows()
    rows[0]["target"] = "bot_a"  # some rows use it: no warning
    assert import_answers(write_jsonl(tmp_path / "b.jsonl", rows), bat, tmp_path / "run3",
                          target="bot_b").targets == ["bot_a", "bot_b"]


@pytest.mark.parametrize("edit, line, key, message, hint", [
    (lambda m: m["set"].update(patern="x"), 50, "records.set.patern", "unknown key 'patern'",
     "did you mean 'pattern'?"),
    (lambda m: m["set"].update(pattern="(x"), 49, "records.set.pattern", "not a valid regular expression", None),
    (lambda m: m["set"].pop("path"), 47, "records.set.path", "missing required key 'path'", None),
    (lambda m: m["groups"].update(origen=3), 53, "records.groups.origen",
     "give a JSONPath such as '$.metadata.group', or {path: ..., pattern: ...} (got int 3)", None),
    (lambda m: m.update(template="$.[[["), 50, "records.template", "not a valid JSONPath", None),
    (lambda m: m.update(mesages="$.x"), 59, "records.mesages", "unknown key 'mesages'", "did you mean 'messages'?"),
])
def test_bad_records_mappings(tmp_path, edit, line, key, message, hint):
    b = import_battery(records=RECORDS_MAPPING)
    edit(b["records"])
    bat = write_yaml(tmp_path / "records.yaml", b)
    err = _fails(tmp_path, write_jsonl(tmp_path / "out.jsonl", [_record()]), bat)
    assert (Path(err.file).name, err.line, err.key) == ("records.yaml", line, key), err.format()
    assert message in err.message and (hint is None or hint in err.hint), err.format()


def test_unicode_line_separators_and_crlf_are_not_line_breaks(tmp_path, bat):
    rows = _good_rows()
    rows[0]["answer"] = "Primera línea\u2028segunda\u0085tercera\x0bcuarta"
    text = "\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\r\n"
    src = _lines(tmp_path, "\ufeff" + text)  # with a byte-order mark
    res = import_answers(src, bat, tmp_path / "run")
    assert res.answers == 6
    from fairpair.store import Store

    with Store.open(tmp_path / "run", create=False) as s:
        assert rows[0]["answer"] in {r.text for r in s.responses()}
    csv_text = (CSV_HEAD.replace("\n", "\r\n") + 's1,t1,espana,Lucía,Hola,"a\u2028b",true\r\n'
                's1,t1,magreb,Fátima,Hola,ok,false\r\n')
    res = import_answers(_csv(tmp_path, csv_text), bat, tmp_path / "run2")
    assert res.answers == 2


@pytest.mark.parametrize("edit, line, key, message", [
    (lambda b: b["analysis"]["comparisons"][0].update(margin=5), 38, "analysis.comparisons.0.margin",
     "margin 5 on the yes/no measure 'refund' is 500 points"),
    (lambda b: b["analysis"]["comparisons"].append(dict(b["analysis"]["comparisons"][0], id="again")), 44,
     "analysis.comparisons.2", "this comparison repeats comparisons[0]"),
    # issue 28, a plan is a contract: what can never be compared is refused for imports too
    (lambda b: b["analysis"]["comparisons"][0].update(groups=["espana"]), 39, "analysis.comparisons.0.groups",
     "this comparison forms no pair of groups: 'groups' holds only the reference group 'espana'"),
    (lambda b: b["analysis"]["comparisons"][1].update(groups=["magreb"]), 42, "analysis.comparisons.1.groups",
     "this comparison forms no pair of groups: 'groups' holds one group ('magreb')"),
    (lambda b: b.update(measures={}), 29, "analysis.comparisons.0.measure",
     "measure 'refund' is not declared: the battery declares no measure"),
    (lambda b: b["analysis"].update(alpha=0.5), 44, "analysis.alpha", "less than or equal to 0.2"),
    (lambda b: b["analysis"]["comparisons"][0].update(margin=0), 38, "analysis.comparisons.0.margin",
     "margin 0"),
])
def test_a_run_batterys_plan_checks_apply_to_imports(tmp_path, edit, line, key, message):
    b = import_battery()
    edit(b)
    bat = write_yaml(tmp_path / "import.yaml", b)
    err = _fails(tmp_path, write_jsonl(tmp_path / "a.jsonl", _good_rows()), bat)
    assert (err.line, err.key) == (line, key), err.format()
    assert message in err.message, err.format()


def test_a_runnable_battery_given_to_import_says_so(tmp_path):
    """A newcomer passed the battery they ran (groups with a 'lexicon') and read "unknown key 'lexicon'"."""
    from import_helpers import run_battery

    b = run_battery()
    b["attributes"]["origen"]["groups"]["espana"] = {"lexicon": "es_names_spain"}
    bat = write_yaml(tmp_path / "battery.yaml", b)
    err = _fails(tmp_path, write_jsonl(tmp_path / "a.jsonl", _good_rows()), bat)
    assert "this is a battery to run (templates, designs, target), not an import battery" in err.message
    assert "lexicon" not in err.message and "no 'lexicon'" in err.hint and err.key == "templates"
