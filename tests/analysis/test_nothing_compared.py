"""``compare`` of two runs that compare nothing, and ``gate --junit`` on a run with nothing to gate:
exit 2 with the reason, never a "passed" (exit 0 with only notes, a JUnit file of passing tests)."""

from __future__ import annotations

import pytest
from tests.analysis.analysis_runs import battery_dict, make_run
from tests.run_helpers import run_cli

from fairpair.battery import load_battery
from fairpair.run import RunSettings, execute_run


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Runs of a 4-template battery: one measured (every primary comparison 'insufficient design'),
    one never measured."""
    import yaml

    tmp = tmp_path_factory.mktemp("nothing")
    battery = battery_dict(templates=4, repetitions=1)
    out = {"measured": make_run(tmp, "measured", battery)}
    bpath = tmp / "b.yaml"
    bpath.write_text(yaml.safe_dump(battery, allow_unicode=True), encoding="utf-8")
    out["unmeasured"] = tmp / "unmeasured"
    execute_run(load_battery(bpath), out["unmeasured"], RunSettings(concurrency=16))
    return out


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_compare_with_a_run_never_measured_is_an_error(small, capsys, json_flag):
    """Before: exit 0, printing only 'note: refund: not measured in both runs' and the like."""
    code, out, err = run_cli(["compare", small["unmeasured"], small["measured"], *json_flag], capsys)
    assert code == 2, out + err
    assert out == ""
    assert (f"compare: no comparison could be compared between {small['unmeasured']} and {small['measured']} "
            "(refund: not measured in both runs") in err
    assert "fairpair measure" in err and "Traceback" not in err


def test_compare_of_measured_runs_still_compares(small, capsys, tmp_path):
    import shutil

    copy = tmp_path / "measured-copy"  # a run compared with itself is refused (issue 28); a copy is another run
    shutil.copytree(small["measured"], copy)
    code, out, err = run_cli(["compare", small["measured"], small["measured"]], capsys)
    assert code == 2 and "both arguments are the same run" in err
    code, out, err = run_cli(["compare", small["measured"], copy, "--json"], capsys)
    assert code == 0, err
    import json

    rows = json.loads(out)["rows"]
    assert [(r["id"], r["n_sets"], r["direction"]) for r in rows] == [("refund", 12, "no clear change")] * 3 + \
        [("words", 12, "no clear change")] * 3


def test_gate_junit_is_not_written_when_the_gate_has_nothing_to_gate(small, tmp_path, capsys):
    """Before: the XML (every test case passing or skipped) was written, then the gate exited 2."""
    xml = tmp_path / "fairness.xml"
    code, out, err = run_cli(["gate", small["measured"], "--junit", xml], capsys)
    assert code == 2, out + err
    assert "nothing to gate: the design cannot support a verdict for any primary comparison" in err
    assert not xml.exists()
    code, out, err = run_cli(["gate", small["measured"], "--junit", xml, "--on-insufficient"], capsys)
    assert code == 1, out + err  # a verdict: the XML is written, its insufficient designs failing
    assert xml.exists() and "<failure" in xml.read_text(encoding="utf-8")
