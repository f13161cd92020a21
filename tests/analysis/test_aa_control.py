"""A/A control design: validation, expansion and the whole pipeline on the mock target."""

from __future__ import annotations

import pytest
import yaml

from analysis_runs import NAMES, battery_dict, make_run
from fairpair.analysis import analyze_run
from fairpair.battery import load_battery
from fairpair.cases import expand
from fairpair.errors import FairpairError

FOUR = {g: v + [extra] for (g, v), extra in zip(NAMES.items(), ["Pilar", "Salma", "Mihaela", "Xiu"])}


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
