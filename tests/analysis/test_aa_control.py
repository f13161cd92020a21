"""A/A control design: validation, expansion and the whole pipeline on the mock target."""

from __future__ import annotations

import pytest
import yaml

from analysis_runs import NAMES, battery_dict, make_run
from fairpair.analysis import analyze_run
from fairpair.battery import load_battery
from fairpair.cases import expand
from fairpair.errors import FairpairError

FOUR = {g: v + [extra] for (g, v), extra in zip(NAMES.items(), ["Pilar", "Salma", "Mihaela", "Xiu"], strict=True)}


def _battery(bias=None, aa=None, templates=20):
    b = battery_dict(templates=templates, repetitions=2, bias=bias, resamples=200, correlation=0.3)
    for g, v in FOUR.items():
        b["attributes"]["origen"]["groups"][g]["variants"] = v
    b["designs"].append(aa or {"kind": "aa_control", "attribute": "origen", "group": "espana"})
    return b


def _write(tmp_path, b, name="aa.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return p


def test_expansion_splits_the_group_in_halves(tmp_path):
    lb = load_battery(_write(tmp_path, _battery(templates=2)))
    cases = [c for c in expand(lb) if c.design_kind == "aa_control"]
    assert len(cases) == 2 * 2 * 2 * 2  # templates x repetitions x positions x pseudo-groups
    by_group = {}
    for c in cases:
        by_group.setdefault(c.groups["origen"], set()).add(c.variants["origen"])
    assert by_group == {"espana~1": {"Lucía", "María"}, "espana~2": {"Carmen", "Pilar"}}
    sets = {}
    for c in cases:
        sets.setdefault(c.matched_set, []).append(c.variants["origen"])
    assert sorted(map(tuple, map(sorted, sets.values())))[0] in (("Carmen", "Lucía"), ("María", "Pilar"))


@pytest.mark.parametrize("design, message, key", [
    ({"kind": "aa_control", "attribute": "origen", "group": "espanya"}, "unknown group 'espanya'", "group"),
    ({"kind": "aa_control", "attribute": "orgen", "group": "espana"}, "unknown attribute 'orgen'", "attribute"),
])
def test_validation_names_file_line_and_key(tmp_path, design, message, key):
    p = _write(tmp_path, _battery(aa=design, templates=2))
    with pytest.raises(FairpairError) as exc:
        load_battery(p)
    text = exc.value.format()
    assert message in text and "aa.yaml" in text and key in text
    lines = p.read_text(encoding="utf-8").splitlines()
    line = next(i for i, s in enumerate(lines, 1) if s.strip().startswith(f"{key}:") and "aa_control" in
                "\n".join(lines[max(0, i - 4):i]))
    assert f":{line}" in text


def test_too_few_variants_to_split(tmp_path):
    b = _battery(templates=2)
    b["attributes"]["origen"]["groups"]["espana"]["variants"] = ["Lucía"]
    b["designs"][0]["groups"] = ["magreb", "rumania", "china"]
    with pytest.raises(FairpairError) as exc:
        load_battery(_write(tmp_path, b))
    assert "needs at least 2 to split" in exc.value.format() and "group" in exc.value.format()


def test_unbiased_mock_gives_no_aa_fail(tmp_path):
    run = make_run(tmp_path, "aa_null", _battery())
    res = analyze_run(run)
    assert {c.measure for c in res.aa_controls} == {"refund", "words"}
    for c in res.aa_controls:
        assert (c.group_a, c.group_b) == ("espana~1", "espana~2") and c.verdict != "fail"
        assert c.n_pairs == 20 * 2 * 2
    assert res.aa_flag is None
    # the A/A rows are controls, not real comparisons: the plan's family is unchanged
    assert all("~" not in c.group_a for c in res.comparisons)


def test_a_name_specific_quirk_trips_the_flag(tmp_path):
    # Carmen (second half of espana) gets far fewer refunds: the halves of one group differ
    run = make_run(tmp_path, "aa_quirk", _battery(bias={"Carmen": {"refund": 0.05}}))
    res = analyze_run(run)
    refund = next(c for c in res.aa_controls if c.measure == "refund")
    assert refund.verdict == "fail" and refund.estimate > 0.2
    assert res.aa_flag and "refund differs between two halves of the same group" in res.aa_flag


def test_report_shows_the_noise_floor_and_the_flag(tmp_path):
    from fairpair.report import write_report

    run = make_run(tmp_path, "aa_report", _battery(bias={"Carmen": {"refund": 0.05}}, templates=12))
    analyze_run(run)
    paths = write_report(run, language="en", out=tmp_path / "report")
    md = next(p for p in (paths.values() if isinstance(paths, dict) else paths) if str(p).endswith(".md"))
    text = open(md, encoding="utf-8").read().replace("\\", "")  # Markdown escapes
    assert "A/A control: the audit's noise floor" in text and "espana~1 / espana~2" in text
    assert "A/A control failed" in text


# -- split: seeds (issue 11 item 5: the same variants repeated with fresh repetition seeds) --

SEEDS = {"kind": "aa_control", "attribute": "origen", "group": "espana", "split": "seeds"}


def test_seeds_split_repeats_the_same_variants_with_fresh_seeds(tmp_path):
    lb = load_battery(_write(tmp_path, _battery(aa=SEEDS, templates=2)))
    all_cases = list(expand(lb))
    cases = [c for c in all_cases if c.design_kind == "aa_control"]
    assert len(cases) == 2 * 2 * 4 * 2  # templates x repetitions x all 4 variants x two copies
    by_group = {}
    for c in cases:
        by_group.setdefault(c.groups["origen"], []).append(c)
    assert set(by_group) == {"espana~seed1", "espana~seed2"}
    assert {c.variants["origen"] for c in by_group["espana~seed1"]} == set(FOUR["espana"])
    assert {c.variants["origen"] for c in by_group["espana~seed2"]} == set(FOUR["espana"])
    sets = {}
    for c in cases:
        sets.setdefault(c.matched_set, []).append(c)
    assert len(sets) == 2 * 2 * 4
    cf_seeds = {(c.template, c.repetition): c.seed for c in all_cases if c.design_kind == "counterfactual"}
    for pair in sets.values():
        one, two = sorted(pair, key=lambda c: c.groups["origen"])
        # paired by template x repetition x variant: same text, same variant, different seed
        assert (one.template, one.repetition, one.variants, one.turns) == (two.template, two.repetition,
                                                                             two.variants, two.turns)
        assert one.seed == cf_seeds[(one.template, one.repetition)]  # the usual common random numbers
        assert two.seed != one.seed and two.seed not in cf_seeds.values()
        assert one.id != two.id
    assert len({c.id for c in all_cases}) == len(all_cases)
    # fresh seeds differ between templates and repetitions too
    assert len({c.seed for c in by_group["espana~seed2"]}) == 2 * 2


def test_seeds_split_default_is_names_and_other_case_ids_unchanged(tmp_path):
    names = load_battery(_write(tmp_path, _battery(templates=2), "n.yaml"))
    explicit = load_battery(_write(tmp_path, _battery(aa={**SEEDS, "split": "names"}, templates=2), "e.yaml"))
    assert [c.id for c in expand(names)] == [c.id for c in expand(explicit)]
    seeds = load_battery(_write(tmp_path, _battery(aa=SEEDS, templates=2), "s.yaml"))

    def cf(lb):
        return [c.id for c in expand(lb) if c.design_kind == "counterfactual"]

    assert cf(seeds) == cf(names)


def test_seeds_split_needs_no_second_variant(tmp_path):
    b = _battery(aa=SEEDS, templates=2)
    b["attributes"]["origen"]["groups"]["espana"]["variants"] = ["Lucía"]
    b["designs"][0]["groups"] = ["magreb", "rumania", "china"]
    for c in b["analysis"]["comparisons"]:  # 'espana' is not varied by the counterfactual design now
        c["reference"] = "magreb"
    cases = [c for c in expand(load_battery(_write(tmp_path, b))) if c.design_kind == "aa_control"]
    assert len(cases) == 2 * 2 * 1 * 2 and {c.variants["origen"] for c in cases} == {"Lucía"}


def test_bad_split_names_file_line_and_key(tmp_path):
    p = _write(tmp_path, _battery(aa={**SEEDS, "split": "halves"}, templates=2))
    with pytest.raises(FairpairError) as exc:
        load_battery(p)
    text = exc.value.format()
    lines = p.read_text(encoding="utf-8").splitlines()
    line = next(i for i, s in enumerate(lines, 1) if s.strip().startswith("split:"))
    assert "aa.yaml" in text and "split" in text and f":{line}" in text and "halves" in text


def test_seeds_split_in_results_and_report_beside_the_real_comparisons(tmp_path):
    import json

    from fairpair.report import write_report

    # Carmen's quirk is a name effect: the names split catches it, the seeds split (same names) must not
    b = _battery(bias={"Carmen": {"refund": 0.05}}, templates=20)
    b["designs"].append(SEEDS)
    run = make_run(tmp_path, "aa_seeds", b)
    res = analyze_run(run)
    stored = json.loads((run / "results.json").read_text(encoding="utf-8"))
    by_id = {c["id"]: c for c in stored["aa_controls"]}
    assert {"aa-refund-espana", "aa-refund-espana-seeds", "aa-words-espana-seeds"} <= set(by_id)
    seeds = by_id["aa-refund-espana-seeds"]
    assert (seeds["group_a"], seeds["group_b"]) == ("espana~seed1", "espana~seed2")
    assert seeds["n_pairs"] == 20 * 2 * 4 and seeds["verdict"] != "fail"
    assert seeds["design"] == "aa_control-origen-espana-seeds" and seeds["names"] == "fixed"
    assert by_id["aa-refund-espana"]["verdict"] == "fail"
    assert [c.id for c in res.aa_controls] == [c["id"] for c in stored["aa_controls"]]
    assert all("~" not in c.group_a for c in res.comparisons)
    paths = write_report(run, language="en", out=tmp_path / "report")
    md = next(p for p in (paths.values() if isinstance(paths, dict) else paths) if str(p).endswith(".md"))
    text = open(md, encoding="utf-8").read().replace("\\", "")
    assert "espana~seed1 / espana~seed2" in text and "espana~1 / espana~2" in text
    # beside the real comparisons: the same report lists the plan's comparisons of origen
    assert "magreb" in text
