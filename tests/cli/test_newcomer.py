"""What a new user meets first, and the mistakes they make: each test stands for a problem found by following
the README on a clean clone and then feeding the commands bad input (exit 2 with file, line and key before
anything is sent; nothing stored is lost; a setting that does nothing is said out loud)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairpair.testing import serve_openai, write_battery
from run_helpers import refused_port, run_cli


def _cli(argv, capsys) -> tuple[int, str, str]:
    """:func:`run_cli` with stdout's whitespace collapsed too (its messages are read as one line)."""
    code, out, err = run_cli(argv, capsys)
    return code, " ".join(out.split()), err


def _line_of(path: Path, key: str) -> int:
    """1-based line of the first line of ``path`` that starts with ``"key":`` (the JSON written by write_battery)."""
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip().startswith(f'"{key}":'):
            return i
    raise AssertionError(f"no {key!r} in {path}")


# ------------------------------------------------------------------ self-judging, before anything is sent


def test_self_judging_refused_before_any_request_is_sent(tmp_path, capsys):
    """A judge that is the target itself used to be refused by the measure stage, after every case had been
    sent (and paid for); and the hint, 'set allow_self_judging: true', could not help that run, whose
    measures read the battery recorded at its start. Now `run` refuses it before the first request."""
    with serve_openai() as server:
        block = {"kind": "openai", "base_url": server.base_url, "model": "m-1", "api_key_env": None}
        path = write_battery(tmp_path, {**block, "temperature": 0.7})
        data = json.loads(path.read_text(encoding="utf-8"))
        data["measures"] = {"tono": {"kind": "judge"}}
        data["judge"] = {**block, "temperature": 0}  # the same model: decoding parameters do not make another
        path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        code, out, err = _cli(["run", path, "--out", tmp_path / "run"], capsys)
        assert code == 2
        assert f"{path}:{_line_of(path, 'judge')}: [judge] the judge is the same system as target 'openai'" in err
        assert "nothing was sent" in err and "Traceback" not in err + out
        assert server.received == []  # not even the preflight case
        assert not (tmp_path / "run").exists()



def test_self_judging_allowed_or_another_judge_runs(tmp_path):
    """The check refuses only the same system: ``allow_self_judging: true`` or another model goes ahead."""
    from fairpair.battery import load_battery
    from fairpair.measures import check_self_judging

    block = {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m-1", "api_key_env": None}
    path = write_battery(tmp_path, block)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["measures"] = {"tono": {"kind": "judge"}}
    for judge, allow, refused in [(block, False, True), (block, True, False), ({**block, "model": "m-2"}, False, False),
                                  ({**block, "base_url": "http://127.0.0.1:10/v1"}, False, False)]:
        data["judge"], data["allow_self_judging"] = judge, allow
        path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        lb = load_battery(path)
        if refused:
            with pytest.raises(Exception, match="same system as target 'openai'"):
                check_self_judging(lb)
        else:
            check_self_judging(lb)
    # no measure calls the (default) judge: nothing to refuse, even with a local target like the default judge
    path = write_battery(tmp_path, {"kind": "local"})
    data = json.loads(path.read_text(encoding="utf-8"))
    data["measures"] = {"palabras": {"kind": "word_count"}}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    check_self_judging(load_battery(path))
    # a judge measure without a 'judge:': the default judge is the embedded model, the target too
    data["measures"] = {"tono": {"kind": "judge"}}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    with pytest.raises(Exception, match=r"battery.yaml:\d+: \[measures.tono\] the judge is the same system as "
                                        r"target 'local' .*the embedded default judge is used"):
        check_self_judging(load_battery(path))


# ------------------------------------------------------------------ a run resumed with an edited battery


def test_resumed_run_with_an_edited_battery_says_the_edits_are_not_used(tmp_path, capsys):
    """Adding a measure and running again into the same --out used to say nothing: the run measured with the
    battery recorded at its start, so the new measure was silently never measured. Now the run says which
    keys changed and that they are not used there; the stored answers are kept, never overwritten."""
    path = write_battery(tmp_path, {"kind": "mock"})
    data = json.loads(path.read_text(encoding="utf-8"))
    data["measures"] = {"palabras": {"kind": "word_count"}}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    run = tmp_path / "run"
    code, out, err = _cli(["run", path, "--out", run], capsys)
    assert code == 0 and "battery differs" not in out + err
    code, out, err = _cli(["run", path, "--out", run], capsys)  # the same battery: resumes quietly
    assert code == 0 and "battery differs" not in out + err

    data["measures"]["opciones"] = {"kind": "n_options"}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    code, out, err = _cli(["run", path, "--out", run], capsys)
    assert code == 0
    assert (f"the battery differs from the one recorded when {run} was started (changed: measures): this run "
            "directory keeps the recorded battery") in out + err
    assert "run the edited battery into a new --out" in out + err
    from fairpair.store import Run

    with Run.open(run) as r:
        assert {m.measure for m in r.measurements()} == {"palabras"}  # what the warning says: not measured
        assert len(list(r.responses())) == 16  # 2 templates x 2 groups x 4 names, kept


# ------------------------------------------------------------------ a ranking battery's overall verdict


def test_a_ranking_battery_that_fails_is_not_reported_as_having_nothing_to_judge(tmp_path, capsys):
    """The shipped ranking example printed its failing pairs and then 'NOT ANALYSED There are no pre-registered
    comparisons to judge.'; its report opened with that, said 'No failing comparison: nothing to show' and
    'no comparison fails' in what to do, while `fairpair gate` failed on the same verdicts. The overall verdict
    now counts the ranking design's pairs and four-fifths ratios, as the gate does."""
    import yaml

    from fairpair.testing._ranking import ranking_battery

    b = ranking_battery(k=3, templates=8, names=5, repetitions=6, seed=4, selection={"g1": 1.0, "g2": 0.1, "g3": 1.0},
                        style="numbered")
    path = tmp_path / "rk.yaml"
    path.write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False), encoding="utf-8")
    run = tmp_path / "run"
    code, out, err = _cli(["run", path, "--out", run], capsys)
    assert code == 0
    assert "FALLA Al menos una comparación prerregistrada falla." in out
    assert "No hay comparaciones prerregistradas que juzgar" not in out
    summary = json.loads((run / "report" / "report.json").read_text(encoding="utf-8"))
    assert summary["overall"] == "fail"
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert "**FALLA**: Al menos una comparación prerregistrada falla." in md
    assert "Ninguna comparación falla" not in md  # neither in the evidence nor in what to do
    assert "Las comparaciones que fallan son las del diseño de ranking" in md
    assert "| Comparación |" not in md  # no empty table of (non-ranking) comparisons
    code, out, err = _cli(["gate", run], capsys)
    assert code == 1  # the gate and the report agree


# ------------------------------------------------------------------ init's group labels


def test_lexicons_name_shows_one_lexicon_in_full(capsys):
    """`fairpair lexicons` listed four names and 80 characters of the source cut mid-word with "...", and
    could not show one lexicon. `fairpair lexicons NAME` prints every name, its labels, the full source and
    caveat; an unknown name exits 2 with the valid names and a "did you mean"."""
    from fairpair.battery import all_lexicons

    spec = all_lexicons()["en/black/male"]
    code, out, err = run_cli(["lexicons", "en/black/male"], capsys)
    assert code == 0 and err == ""
    out = " ".join(out.split())
    assert "en/black/male (9 names, en_names.yaml)" in out
    assert "names: Darnell, Hakim, Jamal, Jermaine, Kareem, Leroy, Rasheed, Tremayne, Tyrone" in out
    assert "label (en): African-American-sounding male names" in out
    assert "label (es): nombres de hombre percibidos como afroamericanos (EE. UU.)" in out
    assert f"source: {spec['source']}" in out and spec["source"].endswith("1974-1979).")
    assert f"caveat: {spec['caveat']}" in out and "..." not in out and "…" not in out
    code, out, err = run_cli(["lexicons", "es/magreb/female"], capsys)
    assert code == 2 and "Traceback" not in out + err
    assert "unknown lexicon 'es/magreb/female'; NAME must be en/black/female, en/black/male," in err
    assert "es/subsaharan/female or es/subsaharan/male (did you mean 'es/maghreb/female'?)" in err
    code, out, err = run_cli(["lexicons", "zzz"], capsys)
    assert code == 2 and "unknown lexicon 'zzz'" in err and "did you mean" not in err
    # the list: whole words and names only, each lexicon's count, and the pointer to NAME
    code, out, err = run_cli(["lexicons"], capsys)
    assert code == 0 and "..." not in out
    assert "│ en/black/male │ Darnell, Hakim, Jamal, Jermaine, Kareem … (9) │" in " ".join(out.split())
    assert "│ es/china/male │ Wei, Jun, Hao, Lei, Jian, Ming, Tao, Qiang (8) │" in " ".join(out.split())  # all fit
    out = " ".join(out.split())  # each source once, in full, after the table
    assert out.count("source of ") == 2 and out.count("Bertrand") == 1
    assert f"source of en/white/female, en/white/male, en/black/female, en/black/male: {spec['source']}" in out
    assert "fairpair lexicons NAME shows one in full" in out


def test_clip_keeps_what_fits_and_cuts_between_words():
    from fairpair.cli._battery import _clip

    assert _clip("Bertrand, M. (2004).", 20) == "Bertrand, M. (2004)."
    assert _clip("Bertrand, M. & Mullainathan, S. (2004).", 20) == "Bertrand, M. & …"
    assert _clip("Ion, Constantin, Gheorghe, Vasile", 20, sep=",") == "Ion, Constantin …"
    assert _clip("Supercalifragilistic", 8) == "Superca …"


def test_init_labels_groups_in_words_not_lexicon_ids(tmp_path, capsys):
    """`fairpair init` wrote `label: "en/black/female"`, so the first run's verdicts read 'Users with
    en/black/female were offered a refund ... than users with en/white/female'. Every built-in lexicon now
    carries a label in both languages, and init writes it in the battery's language."""
    from fairpair.battery import all_lexicons

    for name, spec in all_lexicons().items():
        assert set(spec["label"]) == {"es", "en"} and all(spec["label"].values()), name
        assert name not in spec["label"].values()
    code, out, err = _cli(["init", tmp_path / "b.yaml", "--lang", "en"], capsys)
    assert code == 0
    code, out, err = _cli(["run", tmp_path / "b.yaml", "--out", tmp_path / "run", "--verbose"], capsys)
    assert code == 0  # --verbose: each comparison's sentence under the table
    assert "Users with African-American-sounding female names" in out
    assert "than users with White-sounding female names" in out
    assert "en/black/female" not in out and "en/white/female" not in out
    code, out, err = _cli(["init", tmp_path / "c.yaml", "--lang", "es", "--groups",
                           "es/spain/male,es/maghreb/male,es/china/female"], capsys)
    assert code == 0
    text = (tmp_path / "c.yaml").read_text(encoding="utf-8")
    assert 'spain: {label: "nombres de hombre españoles", lexicon: es/spain/male' in text
    assert 'maghreb: {label: "nombres de hombre árabes (Magreb)", lexicon: es/maghreb/male' in text
    assert 'china: {label: "nombres de mujer chinos", lexicon: es/china/female' in text


# ------------------------------------------------------------------ a judge that nothing calls


@pytest.mark.parametrize("key, value", [("judge", {"kind": "mock"}), ("allow_self_judging", True)])
def test_a_judge_that_no_measure_calls_is_an_error(tmp_path, capsys, key, value):
    """`judge:` in a battery whose measures are all rules (keywords, word counts) validated and ran without a
    word: the judge was never called. It is now an error naming file, line and key; with a measure that
    calls it, the same battery validates."""
    path = write_battery(tmp_path, {"kind": "mock"})
    data = json.loads(path.read_text(encoding="utf-8"))
    data["measures"] = {"palabras": {"kind": "word_count"}}
    data[key] = value
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    code, out, err = _cli(["validate", path], capsys)
    assert code == 2
    assert f"{path}:{_line_of(path, key)}: [{key}] '{key}' is set but no measure calls a judge, so it would do " \
           "nothing" in err
    assert "Traceback" not in out + err
    data["measures"]["tono"] = {"kind": "judge"}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    code, out, err = _cli(["validate", path], capsys)
    assert code == 0, err


# ------------------------------------------------------------------ rate limits that limit nothing


@pytest.mark.parametrize("option, value", [("--rpm", "-5"), ("--rpm", "0"), ("--tpm", "0"), ("--tpm", "-1e3")])
def test_a_rate_limit_of_zero_or_below_is_refused(tmp_path, capsys, option, value):
    """`--rpm -5` (or 0) ran the whole battery without any limit and without a word: the limiter treats a
    falsy rate as 'unlimited' and a negative one never waits. Now exit 2 before the run directory exists."""
    path = write_battery(tmp_path, {"kind": "mock"})
    code, out, err = _cli(["run", path, "--out", tmp_path / "run", option, value], capsys)
    assert code == 2
    assert f"Invalid value for '{option}'" in err and "is not a rate; give a number above 0" in err
    assert not (tmp_path / "run").exists()
    code, out, err = _cli(["run", path, "--out", tmp_path / "run", option, "6000", "--no-measure"], capsys)
    assert code == 0, err


def test_rpm_spaces_the_requests_the_server_receives_from_the_first_on(tmp_path, capsys, monkeypatch):
    """`--rpm 60` answered 75 requests in its first 15 s (the bucket started full). On a loopback server:
    `--rpm 1200` (20 a second) with 8 workers, the requests arrive 50 ms apart from the first; the run's
    preflight (its own caller, before the run) may add one."""
    monkeypatch.setenv("FP_RPM_KEY", "sk-x")
    with serve_openai() as server:
        target = {"kind": "openai", "base_url": server.base_url, "model": "m", "api_key_env": "FP_RPM_KEY"}
        path = write_battery(tmp_path, target, templates=3, names={"a": ["Lucía", "Ana"], "b": ["Fátima", "Aixa"]})
        code, out, err = _cli(["run", path, "--out", tmp_path / "run", "--rpm", "1200", "--concurrency", "8",
                               "--no-measure"], capsys)
        at = sorted(r.at for r in server.received)
    assert code == 0, err
    assert len(at) >= 8
    for seconds in (0.1, 0.25):
        most = max(sum(1 for t in at[i:] if t < a + seconds - 0.03) for i, a in enumerate(at))  # 30 ms of jitter
        assert most <= 1200 * seconds / 60 + 1  # + the preflight's request
    assert at[-1] - at[0] >= (len(at) - 2) * 0.05 - 0.01


# ------------------------------------------------------------------ expand onto a file of yours


def test_expand_never_overwrites_a_file_it_did_not_write(tmp_path, capsys):
    """`fairpair expand b.yaml -o answers.jsonl` replaced the user's file with the cases, without a word.
    A file that is not an earlier expansion (no manifest beside it) is now refused and kept; an earlier
    expansion is written again (byte-identical for the same battery)."""
    path = write_battery(tmp_path, {"kind": "mock"})
    mine = tmp_path / "answers.jsonl"
    mine.write_text('{"mine": true}\n', encoding="utf-8")
    code, out, err = _cli(["expand", path, "-o", mine], capsys)
    assert code == 2
    assert f"{mine}: already exists and is not an earlier `fairpair expand` output" in err
    assert mine.read_text(encoding="utf-8") == '{"mine": true}\n'
    assert not (tmp_path / "answers.manifest.json").exists()
    cases = tmp_path / "cases.jsonl"
    assert _cli(["expand", path, "-o", cases], capsys)[0] == 0
    first = cases.read_bytes()
    assert _cli(["expand", path, "-o", cases], capsys)[0] == 0  # its own earlier output: written again
    assert cases.read_bytes() == first and first.count(b"\n") == 16


# ------------------------------------------------------------------ validate on a file that is not a run battery


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name, message, hint", [
    ("imported_answers/import.yaml", "no templates or designs: this looks like an import battery",
     "it is read by `fairpair import-answers ANSWERS --battery"),
    ("imported_answers/records.yaml", "no templates or designs: this looks like an import battery",
     "it is read by `fairpair import-answers ANSWERS --battery"),
    ("targets/ollama.yaml", "a target block alone, not a battery", "add `include: [ollama.yaml]` to a battery"),
])
def test_validate_says_what_a_shipped_file_that_is_not_a_run_battery_is(capsys, name, message, hint):
    """`fairpair validate examples/imported_answers/import.yaml` answered "[attributes.origen] a 'name'
    attribute needs 'slot'", and on examples/targets/ollama.yaml "missing required key 'schema_version'":
    true, and no help to a newcomer trying the shipped files. Now it says what the file is and where it goes."""
    code, out, err = _cli(["validate", EXAMPLES / name], capsys)
    assert code == 2
    assert f"{EXAMPLES / name}:1: {message}" in err and hint in err


# ------------------------------------------------------------------ lexicon take, system_file encoding


def _battery_with(tmp_path, edit) -> Path:
    path = write_battery(tmp_path, {"kind": "mock"})
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def test_take_more_names_than_the_lexicon_has_is_an_error(tmp_path, capsys):
    """`take: 300` on a lexicon of 8 names validated and silently took 8 (a design smaller than written)."""
    def edit(d):
        d["attributes"]["origen"]["groups"] = {"espana": {"lexicon": "es/spain/female", "take": 300},
                                               "magreb": {"lexicon": "es/maghreb/female", "take": 8}}
    path = _battery_with(tmp_path, edit)
    code, out, err = _cli(["validate", path], capsys)
    assert code == 2
    assert f"{path}:{_line_of(path, 'take')}: [attributes.origen.groups.espana.take] take: 300, but lexicon " \
           "'es/spain/female' has 8 names" in err
    path = _battery_with(tmp_path, lambda d: d["attributes"]["origen"]["groups"].update(
        espana={"lexicon": "es/spain/female", "take": 8}, magreb={"lexicon": "es/maghreb/female", "take": 8}))
    assert _cli(["validate", path], capsys)[0] == 0  # all of them is fine


def test_a_system_file_that_is_not_utf8_is_a_battery_error(tmp_path, capsys):
    """A Latin-1 system prompt file (`system_file:`) ended in 'internal error: UnicodeDecodeError ... this is
    a bug in fairpair', exit 1; now exit 2 with the file, its line and the template's key."""
    (tmp_path / "prompt.md").write_bytes("Eres el asistente.\nResponde con amabilidad, señora.".encode("latin-1"))

    def edit(d):
        del d["templates"][0]["system"]
        d["templates"][0]["system_file"] = "prompt.md"
    path = _battery_with(tmp_path, edit)
    code, out, err = _cli(["validate", path], capsys)
    assert code == 2
    assert f"{tmp_path / 'prompt.md'}:2: [templates[0].system_file] system prompt not valid UTF-8" in err
    assert "internal error" not in err


# ------------------------------------------------------------------ export onto files of yours


def test_export_to_a_folder_never_overwrites_a_file(tmp_path, capsys):
    """`fairpair export RUN --out DIR` replaced DIR/answers.csv (and the other tables) without a word. A table
    file already in --out is now refused, naming it, before any table is written; the default RUN/export/,
    fairpair's own folder, is written again from the store."""
    path = write_battery(tmp_path, {"kind": "mock"})
    run = tmp_path / "run"
    assert _cli(["run", path, "--out", run, "--no-measure", "--no-analyze", "--no-report"], capsys)[0] == 0
    mine = tmp_path / "tables"
    mine.mkdir()
    (mine / "measurements.csv").write_text("mine\n", encoding="utf-8")
    code, out, err = _cli(["export", run, "--out", mine], capsys)
    assert code == 2
    assert f"{mine / 'measurements.csv'}: already exists; an export to --out never overwrites a file" in err
    assert "Traceback" not in out + err
    assert sorted(p.name for p in mine.iterdir()) == ["measurements.csv"]  # answers.csv not written either
    assert (mine / "measurements.csv").read_text(encoding="utf-8") == "mine\n"
    fresh = tmp_path / "fresh"
    assert _cli(["export", run, "--out", fresh], capsys)[0] == 0
    assert sorted(p.name for p in fresh.iterdir()) == ["answers.csv", "measurements.csv"]
    first = (fresh / "answers.csv").read_bytes()
    code, out, err = _cli(["export", run, "--out", fresh], capsys)  # its own earlier export too: refused
    assert code == 2 and f"{fresh / 'answers.csv'}: already exists" in err
    assert (fresh / "answers.csv").read_bytes() == first
    for _ in range(2):  # the default folder inside the run is rewritten
        assert _cli(["export", run], capsys)[0] == 0
    assert (run / "export" / "answers.csv").read_bytes() == first


# ------------------------------------------------------------------ empty names in a battery


@pytest.mark.parametrize("block, key", [("measures", "measures.''"), ("targets", "targets.''")])
def test_an_empty_measure_or_target_name_is_an_error(tmp_path, capsys, block, key):
    """`measures: {"": {kind: word_count}}` validated and ran, its measurements stored under the name ''
    (a target named '' too: 'ok target  (mock)'). Now a battery error with file, line and key."""
    def edit(d):
        if block == "measures":
            d["measures"] = {"": {"kind": "word_count"}}
        else:
            d["targets"] = {"": d.pop("target")}
    path = _battery_with(tmp_path, edit)
    code, out, err = _cli(["validate", path], capsys)
    assert code == 2
    assert f"{path}:{_line_of(path, '')}: [{key}] empty {block[:-1]} name" in err and "Traceback" not in out + err


# ------------------------------------------------------------------ run --target that the battery lacks


@pytest.mark.parametrize("extra", [[], ["--dry-run"]])
def test_run_with_an_unknown_target_names_no_run_directory(tmp_path, capsys, extra, monkeypatch):
    """`fairpair run b.yaml --target nope` printed 'run directory: runs/...' and then the error (and
    --dry-run said what 'each target' would get, for none). The names are now checked first: exit 2, no
    run directory announced nor left behind, with --out or the default runs/."""
    monkeypatch.chdir(tmp_path)
    path = write_battery(tmp_path, {"kind": "mock"})
    for out_opt in ([], ["--out", tmp_path / "run"]):
        code, out, err = _cli(["run", path, "--target", "nope", *out_opt, *extra], capsys)
        assert code == 2
        assert f"{path}: unknown target(s) ['nope']; the battery has ['mock']" in err
        assert "run directory" not in out and "dry run" not in out
        assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()


# ------------------------------------------------------------------ the starter's gate and compare lines


def test_the_starters_gate_and_compare_print_points_and_p_below(tmp_path, capsys):
    """Following the README on the mock starter, `fairpair gate` printed 'crossed t ... p=<0.001' and
    `fairpair compare` the same refund gap as 'gap -0.281 -> -0.281' (a proportion) where the gate and the
    report said '-28.1 points'. The gate now writes 'p<0.001' and compare gives a rate's gap in points."""
    import shutil

    battery, run = tmp_path / "b.yaml", tmp_path / "before"
    # --name: the mock's draws follow the case ids, which hold the battery's name (b.yaml alone names it b)
    assert _cli(["init", battery, "--target", "mock", "--name", "my_audit"], capsys)[0] == 0
    assert _cli(["run", battery, "--out", run], capsys)[0] == 0
    code, out, err = _cli(["gate", run], capsys)
    assert code == 1
    assert "FAIL mock reembolso maghreb vs spain: -28.1 points (95% CI -39.8 to -16.4)" in out
    assert ("crossed t (templates random, names random; Satterthwaite df, kurtosis-corrected) p<0.001, "
            "holm-adjusted 0.00148") in out
    assert "p=<" not in out
    shutil.copytree(run, tmp_path / "after")
    code, out, err = _cli(["compare", run, tmp_path / "after"], capsys)
    assert code == 0
    assert "reembolso-by-origen maghreb vs spain: gap -28.1 -> -28.1 points, change +0.0 points" in out
    assert "palabras-by-origen maghreb vs spain: gap +0.074 -> +0.074, change +0.000" in out


def test_status_after_a_failed_preflight_asks_only_for_the_run_again(tmp_path, capsys):
    """With the target down, `fairpair status` listed `fairpair analyze RUN` and `fairpair report RUN` as left
    to do; following them analysed 0 answers into 'insufficient design' verdicts. With no answer stored it
    now names only the `run` that sends the cases (and analyses and reports them)."""
    battery, run = tmp_path / "b.yaml", tmp_path / "run"
    assert _cli(["init", battery, "--target", "ollama", "--url", f"http://127.0.0.1:{refused_port()}/v1"],
                capsys)[0] == 0
    assert _cli(["run", battery, "--out", run], capsys)[0] == 2
    code, out, err = _cli(["status", run], capsys)
    assert code == 0
    assert "0/512 answered, 1 failed, 511 not sent yet" in out
    assert f"left to do: fairpair run {battery} --out {run} (sends the cases left and retries the failed)" in out
    assert "fairpair analyze" not in out and "fairpair report" not in out


# ------------------------------------------------------------------ an edited plan offered to a run and refused
def test_a_refused_plan_edit_does_not_flag_the_plan_as_changed(tmp_path, capsys):
    """`cp -r runs/en runs/en_copy`, then `fairpair run en8.yaml --out runs/en_copy` (one `margin: 10` edited
    to 8) warned that the edits were not used and kept margin 10, yet the report said 'YES: the analysis plan
    was changed after answers were collected' (`plan_changed: true`), and still did after the original battery
    was run into the directory again. The flag now says whether the executed plan differs from the registered
    one; the refused edit stays recorded (event `plan_edit_refused`) and is reported as refused."""
    import shutil

    from fairpair.store import Store

    battery, run, copy = tmp_path / "en.yaml", tmp_path / "en_run", tmp_path / "en_copy"
    assert _cli(["init", battery, "--target", "mock"], capsys)[0] == 0
    text = battery.read_text(encoding="utf-8")
    assert text.count("margin: 10}") == 1
    edited = tmp_path / "en8.yaml"
    edited.write_text(text.replace("margin: 10}", "margin: 8}"), encoding="utf-8")
    assert _cli(["run", battery, "--out", run], capsys)[0] in (0, 1)
    shutil.copytree(run, copy)

    code, out, err = _cli(["run", edited, "--out", copy], capsys)
    assert code in (0, 1)
    assert "these edits are not used" in " ".join((out + err).split())
    assert "YES: the analysis plan was changed" not in out + err
    results = json.loads((copy / "results.json").read_text(encoding="utf-8"))
    assert [c["margin"] for c in results["comparisons"] if c["measure"] == "palabras"][0] == 10
    assert results["plan_changed"] is False and results["plan_edits_refused"] == 1
    assert results["plan_sha256_now"] == results["plan_sha256"]
    assert any("offered to this run directory 1 time(s) and refused" in n for n in results["notes"])
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["plan_changed_after_registration"] is False and manifest["plan_edits_refused"] == 1
    assert manifest["plan_sha256_now"] == manifest["plan_sha256"]

    assert _cli(["run", battery, "--out", copy], capsys)[0] in (0, 1)  # the original battery again
    code, out, err = _cli(["report", copy, "--lang", "en"], capsys)
    assert "YES: the analysis plan was changed" not in out + err
    md = next((copy / "report").glob("*.md")).read_text(encoding="utf-8")
    assert "**Plan changed after registration**: no" in md
    assert "1 battery(ies) with an edited analysis plan offered later and refused" in md
    summary = json.loads(next((copy / "report").glob("*.json")).read_text(encoding="utf-8"))
    assert summary["battery"]["plan_changed"] is False and summary["battery"]["plan_edits_refused"] == 1
    with Store.open(copy, create=False, readonly=True) as store:  # the refused edit stays recorded
        refused = store.events("plan_edit_refused")
        assert len(refused) == 1 and refused[0]["registered"] == results["plan_sha256"]
        assert refused[0]["offered"] != refused[0]["registered"]
    code, out, err = _cli(["status", copy], capsys)
    assert "events: plan_edit_refused x 1" in out


def test_analyze_of_an_unmeasured_run_says_to_measure_it(tmp_path, capsys):
    """Newcomer walk: after `fairpair run --no-measure`, `fairpair analyze` wrote every comparison as not
    measured and said nothing of what would give them a verdict (`gate` did)."""
    battery, run = tmp_path / "b.yaml", tmp_path / "r"
    assert _cli(["init", battery, "--target", "mock"], capsys)[0] == 0
    assert _cli(["run", battery, "--out", run, "--no-measure", "-q"], capsys)[0] in (0, 1)
    code, out, err = _cli(["analyze", run], capsys)
    flat = " ".join((out + err).split())
    assert code == 0
    assert f"note: 2 comparison(s) have no measured value (reembolso, palabras): run fairpair measure {run}, " \
           f"then fairpair analyze {run} again" in flat
    assert _cli(["measure", run, "-q"], capsys)[0] == 0
    code, out, err = _cli(["analyze", run], capsys)
    assert "no measured value" not in out + err


def test_a_folder_of_runs_given_as_a_run_names_the_runs_inside(tmp_path, capsys):
    """Newcomer walk: `fairpair report runs` (the folder, not `runs/demo`) said 'not a fairpair run directory'
    twice (message and hint); the hint now names the run directories inside it."""
    battery, runs = tmp_path / "b.yaml", tmp_path / "runs"
    assert _cli(["init", battery, "--target", "mock"], capsys)[0] == 0
    assert _cli(["run", battery, "--out", runs / "demo", "--no-measure", "--no-report", "-q"], capsys)[0] in (0, 1)
    code, out, err = _cli(["report", runs], capsys)
    flat = " ".join((out + err).split())
    assert code == 2
    assert f"error: {runs}: not a fairpair run directory it has no store.sqlite: give the directory that " \
           f"`fairpair run --out` wrote; run directories inside it: {runs / 'demo'}" in flat
    assert flat.count("not a fairpair run directory") == 1
