"""End to end: a two-party run counts out-of-role answers against the usable share, per group
(scripted chatbots through the ``python`` target), and the design's ``roles`` are checked."""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml
from typer.testing import CliRunner

from fairpair.analysis import analyze_run
from fairpair.battery import load_battery
from fairpair.errors import BatteryError

AGES = ["young", "middle-aged", "old"]

BOT = textwrap.dedent('''
    import re
    def _sub(messages):
        m = re.search(r"Alex is an? ([\\w-]+) person", messages[-1]["content"])
        return m.group(1) if m else None
    def swaps_for_old(messages, context):
        """Blake answers Alex, except when Alex is old: then it writes both parties' lines."""
        if _sub(messages) == "old":
            return '"Hello, Alex."\\n\\nAlex: "Hello, Blake, am I ready?"\\n\\nBlake: "Not yet."'
        return '"Alex, your routing project was strong; I think you are close to ready."'
''')


def _battery(tmp_path, roles=None, turn="Alex asks Blake about the promotion. Alex is {sub_persona} who is a "
                                        "junior analyst. Blake is {res_persona} who is {res_trait}. You are "
                                        "Blake. Respond to Alex as Blake."):
    (tmp_path / "bots_roles.py").write_text(BOT, encoding="utf-8")
    design = {"kind": "two_party", "axes": ["age"]}
    if roles is not None:
        design["roles"] = roles
    b = {
        "schema_version": 1, "name": "roles_test", "language": "en", "seed": 5,
        "attributes": {"age": {"signal": "identity", "groups": {a.replace("-", "_"): {"variants": [f"{a} person"]}
                                                                 for a in AGES}}},
        "templates": [{"id": f"s{i}-{power}", "slots": {"res_trait": "the manager" if power == "disparity"
                                                         else "a colleague"},
                       "meta": {"scene": f"s{i}", "power": power}, "turns": [turn],
                       "baseline_turns": [turn.replace("{sub_persona} who is ", "").replace(
                           "{res_persona} who is ", "")]}
                      for i in range(3) for power in ("disparity", "equal")],
        "designs": [design],
        "target": {"kind": "python", "callable": "bots_roles:swaps_for_old", "path": "."},
    }
    path = tmp_path / "battery.yaml"
    path.write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def test_a_target_that_leaves_its_role_for_one_identity_shows_it_by_group(tmp_path):
    from fairpair.cli import app

    path = _battery(tmp_path)
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(run_dir), "--no-measure", "--quiet"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    # 6 templates x (9 SUB x RES pairs + 1 baseline) = 60 answers; Alex is old in 3 of the 9 pairs: 18 answers
    assert "target python: 60/60 answered" in out
    assert "target python: 70% usable answers (18 out_of_role)" in out
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["answer_statuses"]["python"]["counts"] == {"out_of_role": 18, "ok": 42}
    assert manifest["answer_statuses"]["python"]["usable_share"] == pytest.approx(0.7)

    res = analyze_run(run_dir)
    st = res.answer_statuses["python"]
    assert st.counts == {"out_of_role": 18, "ok": 42} and st.n == 60
    # by the SUB party's identity: every answer to an old Alex left the role, none of the others did
    assert st.by_group["sub"]["old"] == {"out_of_role": 1.0, "ok": 0.0}
    assert st.by_group["sub"]["young"] == {"out_of_role": 0.0, "ok": 1.0}
    assert st.by_group["sub"]["middle_aged"] == {"out_of_role": 0.0, "ok": 1.0}
    # by the RES party's identity the rate is the same for all three (each RES meets one old SUB)
    for g in ("young", "middle_aged", "old"):
        assert st.by_group["res"][g]["out_of_role"] == pytest.approx(1 / 3)
    assert st.examples and st.examples[0][1] == "out_of_role"


def test_the_report_shows_the_out_of_role_rate_per_group(tmp_path):
    from fairpair.cli import app
    from fairpair.report._data import load_report_data
    from fairpair.report._render import build_view

    path = _battery(tmp_path)
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(run_dir), "--no-measure", "--quiet"])
    assert result.exit_code == 0, result.output
    analyze_run(run_dir)
    view = build_view(load_report_data(run_dir, language="en"), with_figures=False)
    (row,) = view["answer_statuses"]
    assert row.startswith("python: 70% usable (18 out-of-role); by group: ")
    assert "old 100% out-of-role" in row and "young 0%" in row


def test_roles_null_turns_the_check_off(tmp_path):
    from fairpair.cli import app

    path = _battery(tmp_path, roles=None)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["designs"][0]["roles"] = None
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    lb = load_battery(path)
    assert lb.battery.speakers() == {}
    assert lb.battery.designs[0].summary(lb.battery).startswith("two-party roles: off (roles: null)")
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "run"), "--no-measure", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "target python: 100% usable answers" in " ".join(result.output.split())


def test_default_roles_are_off_where_the_templates_do_not_name_them(tmp_path):
    path = _battery(tmp_path, turn="Scene: {sub_persona} talks to {res_persona}, who is {res_trait}.")
    lb = load_battery(path)
    assert lb.battery.speakers() == {}
    assert "the templates do not name both 'Alex' and 'Blake'" in lb.battery.designs[0].summary(lb.battery)


def test_explicit_roles_the_templates_do_not_name_are_an_error(tmp_path):
    path = _battery(tmp_path, roles={"sub": "Alex", "res": "Robin"})
    with pytest.raises(BatteryError) as e:
        load_battery(path)
    msg = str(e.value)
    assert "two_party roles: template 's0-disparity' never names 'Robin' (5 more such)" in msg
    assert "battery.yaml" in msg and "roles" in msg


def test_explicit_roles_are_used_and_must_differ(tmp_path):
    turn = "Ana asks Robin. Ana is {sub_persona}. Robin is {res_persona} who is {res_trait}. Respond as Robin."
    lb = load_battery(_battery(tmp_path, roles={"sub": "Ana", "res": "Robin"}, turn=turn))
    assert lb.battery.speakers() == {"two_party": ("Robin", "Ana")}
    with pytest.raises(BatteryError, match="sub and res are both 'Ana'"):
        load_battery(_battery(tmp_path, roles={"sub": "Ana", "res": "Ana"}, turn=turn))


def test_validate_prints_the_roles_line(tmp_path):
    from fairpair.cli import app

    result = CliRunner().invoke(app, ["validate", str(_battery(tmp_path))])
    assert result.exit_code == 0, result.output
    assert ("two-party roles: Blake (RES) answers Alex (SUB); out-of-role answers are counted"
            in " ".join(result.output.split()))
