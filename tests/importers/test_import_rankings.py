"""Rankings imported from a published hiring audit's layout: converter, import, parse and the counts."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from fairpair.analysis import analyze_run
from fairpair.errors import FairpairError
from fairpair.importers import import_answers
from fairpair.measures import measure_run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hiring_audit"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"hiring_{name}", EXAMPLE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    """A sample of the published shape (8 groups, 4 jobs, 2 models), converted, imported, measured, analysed."""
    tmp = tmp_path_factory.mktemp("hiring")
    records, truth = _module("make_sample").generate(per_cell=30, seed=5)
    pub = tmp / "published.jsonl"
    pub.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    rows = tmp / "rows.jsonl"
    written, extra = _module("convert").convert(pub, rows)
    run = tmp / "run"
    res = import_answers(rows, EXAMPLE / "import.yaml", run)
    measure_run(run)
    results = analyze_run(run)
    return records, truth, written, extra, res, run, results


def test_the_sample_has_the_hard_cases(audit):
    records = audit[0]
    texts = "\n".join(r["response"] for r in records)
    assert "Heather Yoder" in texts or "Alejandra" in texts  # a gender-flipped first name
    assert "\u2019" in texts  # O’Connell with a curly apostrophe
    assert "The top candidates are:" in texts and "After reviewing" in texts and "I'm sorry" in texts
    assert any(r["extra_sample"] for r in records)


def test_import_makes_one_case_per_request(audit):
    records, truth, written, extra, res, _run, _results = audit
    assert written == 8 * 30 and extra == sum(r["extra_sample"] for r in records)
    assert (res.cases, res.answers, res.targets) == (written, written, ["gpt-3.5-turbo", "gpt-4"])
    assert res.designs["ranking-race_gender"]["kind"] == "ranking"


def test_top_pick_counts_equal_the_generators(audit):
    """fairpair's per-job table of top picks equals the simulated truth, for every model, job and group."""
    _records, truth, *_rest, results = audit
    sections = {s["target"]: s for s in results.rankings}
    assert sorted(sections) == ["gpt-3.5-turbo", "gpt-4"]
    for model, jobs in truth.items():
        sec = sections[model]
        assert sec["n_sets"] == sum(j["requests"] for j in jobs.values())  # only this model's requests
        got = {t["template"]: t for t in sec["by_template"]}
        assert sorted(got) == sorted(jobs)
        for job, want in jobs.items():
            assert got[job]["top"] == want["top"], (model, job)
            assert got[job]["n_parsed"] == want["read"]
        # the overall counts are the sums
        sel = {g["group"]: g for g in sec["selection"]}
        for group in sel:
            assert sel[group]["n_top"] == sum(j["top"][group] for j in jobs.values())


def test_renamed_candidates_are_flagged(audit):
    from fairpair.store import Run

    run = audit[5]
    with Run.open(run) as r:
        details = [m.detail for m in r.store.measurements("order")]
    renamed = [p for d in details for p in d["picks"] if p["renamed"]]
    assert renamed and all(p["match"] in ("word", "fuzzy") for p in renamed)
    assert {"heather yoder", "alejandra"} & {p["said"].split(" garcia")[0] for p in renamed} or \
        any(p["said"].startswith(("heather", "alejandra", "javiera", "luisa")) for p in renamed)
    assert any(d["parse"] == "partial" for d in details)


def test_a_given_order_is_stored_without_parsing(tmp_path):
    rows = tmp_path / "rows.jsonl"
    cands = [{"name": n, "group": g} for n, g in [("Ann Lee", "W_W"), ("Bo Kim", "A_M"), ("Cy Diaz", "H_M")]]
    rows.write_text("".join(json.dumps({"set": f"s{i}", "template": "job", "ranking": {"candidates": cands,
                                                                                      "order": [2, "Cy Diaz"]},
                                        "answer": "see order"}) + "\n" for i in range(3)), encoding="utf-8")
    battery = tmp_path / "b.yaml"
    battery.write_text((EXAMPLE / "import.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    res = import_answers(rows, battery, tmp_path / "run")
    assert res.measurements == 3
    from fairpair.store import Run

    with Run.open(tmp_path / "run") as r:
        d = [m.detail for m in r.store.measurements("order")]
    assert d[0]["top"] == "A_M" and d[0]["ranks"] == {"A_M": 1, "H_M": 2, "W_W": 3} and d[0]["parse"] == "imported"


def test_a_ranking_row_needs_a_ranking_measure(tmp_path):
    rows = tmp_path / "rows.jsonl"
    cands = [{"name": "Ann Lee", "group": "W_W"}, {"name": "Bo Kim", "group": "A_M"}]
    rows.write_text(json.dumps({"set": "s1", "template": "job", "ranking": {"candidates": cands},
                                "answer": "Bo Kim"}) + "\n", encoding="utf-8")
    battery = tmp_path / "b.yaml"
    battery.write_text((EXAMPLE / "import.yaml").read_text(encoding="utf-8").replace(
        "  order: {kind: ranking}", "  words: {kind: word_count}"), encoding="utf-8")
    with pytest.raises(FairpairError, match="no measure of kind 'ranking'"):
        import_answers(rows, battery, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_two_candidates_of_one_group_are_refused(tmp_path):
    rows = tmp_path / "rows.jsonl"
    cands = [{"name": "Ann Lee", "group": "W_W"}, {"name": "Bo Kim", "group": "W_W"}]
    rows.write_text(json.dumps({"set": "s1", "template": "job", "ranking": {"candidates": cands},
                                "answer": "Bo Kim"}) + "\n", encoding="utf-8")
    with pytest.raises(FairpairError, match="two candidates of group 'W_W'"):
        import_answers(rows, EXAMPLE / "import.yaml", tmp_path / "run")


def test_the_report_reads_the_statuses_the_analysis_recorded(audit):
    """The answer statuses are computed once: results.json records the non-ok ones by case and the report's
    read of the run rebuilds the same statuses from them (issue 29: the report re-ran language detection)."""
    import numpy as np

    from fairpair.analysis import load_run_data
    from fairpair.store import Run

    run, results = audit[5], audit[6]
    blocks = results.answer_statuses
    assert all(b.cases is not None for b in blocks.values())
    assert sum(len(v) for b in blocks.values() for v in b.cases.values()) >= 1  # the refusals
    with Run.open(run) as r:
        computed = load_run_data(r.store, keep_details=False, language="en", statuses=True)
        recorded = load_run_data(r.store, keep_details=False, language="en", statuses=True,
                                 known_statuses=dict(blocks))
    assert computed.statuses.keys() == recorded.statuses.keys()
    for t in computed.statuses:
        assert np.array_equal(computed.statuses[t], recorded.statuses[t])


def test_ranking_rows_import_from_csv_too(tmp_path):
    """The ``ranking`` column holds the JSON object; no prompt column is needed."""
    import csv

    path = tmp_path / "rows.csv"
    cands = [{"name": "Ann Lee", "group": "W_W"}, {"name": "Bo Kim", "group": "A_M"}, {"name": "Cy Diaz",
                                                                                       "group": "H_M"}]
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["set", "template", "ranking", "answer"])
        w.writeheader()
        for i in range(3):
            w.writerow({"set": f"s{i}", "template": "job", "ranking": json.dumps({"candidates": cands}),
                        "answer": "1. Cy Diaz\n2. Ann Lee\n3. Bo Kim"})
    res = import_answers(path, EXAMPLE / "import.yaml", tmp_path / "run")
    assert (res.cases, res.answers) == (3, 3)
    measure_run(tmp_path / "run")
    from fairpair.store import Run

    with Run.open(tmp_path / "run") as r:
        tops = [m.value for m in r.store.measurements("order")]
    assert tops == ["H_M"] * 3


def test_two_models_in_one_import_are_complete(audit):
    """Each imported row names its model: each model's cases are its own rows, so the run is complete
    (no 'run incomplete' headline, nothing 'not sent yet') and each model counts only its requests."""
    from fairpair.run import run_status

    *_rest, run, results = audit
    assert results.incomplete is None
    per_model = {t: c.cases for t, c in results.counts.items()}
    assert sum(per_model.values()) == audit[2] and set(per_model) == {"gpt-3.5-turbo", "gpt-4"}
    st = run_status(run)
    assert all(t.left == 0 and t.cases == t.answered + t.failed for t in st.targets)
    assert not any(cmd.startswith("fairpair run") for cmd in st.todo)


def test_the_imported_audit_gets_verdicts_about_these_postings(audit):
    """The example battery claims these postings (templates fixed): every pair and every four-fifths ratio of
    both models has a verdict, none `insufficient design`, and the report says what the audit is."""
    from fairpair.report import write_report

    *_rest, run, results = audit
    for sec in results.rankings:
        assert sec["templates"] == "fixed" and "these scenarios" in sec["estimand"]
        verdicts = [p["verdict"] for p in sec["pairs"]] + [r["verdict"] for r in sec["ratios"]]
        assert verdicts and set(verdicts) <= {"fail", "pass", "inconclusive"}, set(verdicts)
    write_report(run)
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# Ranking audit: hiring\\_audit")
    assert "these 4 template(s) (templates fixed" in md and "the stratified t over these templates" in md


def test_the_all_group_tests_and_position_effect_honour_templates_fixed(audit):
    """With `templates: fixed` the tests over all groups and slots and the slot intervals are about these
    postings too (a stratified Hotelling F, stratified means), not a quasi-F over 4 random templates, and
    each four-fifths row shows the interval its verdict reads (never a 95% interval below 0.8 beside
    `inconclusive`)."""
    from fairpair.analysis._ranking import FOUR_FIFTHS

    *_rest, results = audit
    for sec in results.rankings:
        tests = [sec["omnibus"], sec["position"]["top_test"], sec["position"]["rank_test"]]
        assert all(t["test"].startswith("stratified Hotelling F") for t in tests), tests
        for s in sec["position"]["slots"]:
            lo, hi = s["top_rate_ci"]
            assert hi - lo < 0.2, s  # 4 random templates gave intervals as wide as 0.0% to 87.4%
        for r in sec["ratios"]:
            lo, hi = r["verdict_ci"]
            assert (r["verdict"] == "fail") == (hi < FOUR_FIFTHS) and (r["verdict"] == "pass") == (lo > FOUR_FIFTHS)
            assert lo == pytest.approx(r["lower_one_sided"])


def test_the_markdown_report_reads_numbers_and_p_values_as_written(audit):
    """report.md is read raw as often as rendered: no "0\\.04", no "p = &lt; 0.001"."""
    import re

    from fairpair.report import write_report

    *_rest, run, _results = audit
    write_report(run)
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert not re.search(r"\d\\\.", md) and "&lt;" not in md and "= <" not in md
    assert re.search(r"p [=<] 0\.\d", md) and re.search(r"\| 0\.\d\d …", md)
