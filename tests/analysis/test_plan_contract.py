"""A plan is a contract (issue 28, item 1): no pre-registered comparison vanishes.

What can never be compared is refused at validation (tests/battery/test_bad_batteries.py: only
the reference group, an attribute no design varies, an undeclared measure, alpha out of range, a
margin of 0 on a measure that ties). What validates but ends without a verdict -- here a primary
comparison whose declared measure was never stored -- is in ``results.json`` with verdict
``no verdict`` and its reason (``not measured``, from :class:`fairpair.records.Reason`), and the gate
refuses to answer (exit 2, "nothing to gate for COMPARISON: REASON"), with or without
``--on-insufficient``, writing no JUnit file.
"""

from __future__ import annotations

import json

import pytest
import yaml

from analysis_runs import RunSettings, Store, battery_dict, execute_run, load_battery, make_run
from fairpair.analysis import analyze_run, gate_exit_code
from fairpair.cli import main
from fairpair.errors import FairpairError
from fairpair.records import REASON_VERDICT, Reason

COMPS = [
    {"id": "refund", "measure": "refund", "attribute": "origen", "reference": "espana", "margin": 0.1},
    {"id": "escalation", "measure": "escalate", "attribute": "origen", "reference": "espana", "margin": 0.1},
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("contract")
    b = battery_dict(templates=10, repetitions=1, resamples=50, comparisons=COMPS)
    return make_run(tmp, "r", b, skip=lambda case_id, measure: measure == "escalate")  # stored 'missing'


@pytest.fixture(scope="module")
def unstored(tmp_path_factory):
    """The same plan, with 'escalate' never stored at all (as when its measure stage never ran)."""
    tmp = tmp_path_factory.mktemp("contract2")
    bpath = tmp / "b.yaml"
    bpath.write_text(yaml.safe_dump(battery_dict(templates=10, repetitions=1, resamples=50, comparisons=COMPS),
                                    allow_unicode=True), encoding="utf-8")
    run = tmp / "r"
    execute_run(load_battery(bpath), run, RunSettings(concurrency=16))
    with Store.open(run) as s:
        for r in s.responses():
            s.add_measurement(target=r.target, case_id=r.case_id, measure="refund", status="ok",
                              value="reembolso completo" in r.text)
    return run


def test_every_planned_comparison_is_in_results_json(unstored):
    res = analyze_run(unstored)
    ids = {c.id for c in res.comparisons}
    assert ids >= {"refund", "escalation"}
    esc = [c for c in res.comparisons if c.id == "escalation"]
    assert len(esc) == 3  # magreb, rumania, china against espana: listed, none dropped
    for c in esc:
        assert c.verdict == "no verdict" and c.reasons[0] == Reason.NOT_MEASURED.value
        assert REASON_VERDICT[Reason(c.reasons[0])] is None and c.n_pairs == 0
    data = json.loads((unstored / "results.json").read_text(encoding="utf-8"))
    rows = [c for c in data["comparisons"] if c["id"] == "escalation"]
    assert len(rows) == 3 and {(c["verdict"], c["reasons"][0]) for c in rows} == {("no verdict", "not measured")}


def test_the_gate_refuses_a_primary_comparison_without_a_verdict(unstored, tmp_path, capsys):
    for kw in ({}, {"on_insufficient": True}, {"on_inconclusive": True}):
        with pytest.raises(FairpairError, match=r"nothing to gate for escalation \[mock: \w+ vs espana\]: "
                                                r"not measured \(and 2 more\)"):
            gate_exit_code(unstored, junit=tmp_path / "j.xml", **kw)
    assert not (tmp_path / "j.xml").exists()
    with pytest.raises(SystemExit) as exc:
        main(["gate", str(unstored), "--on-insufficient"])
    out = capsys.readouterr()
    assert exc.value.code == 2
    flat = " ".join((out.out + out.err).split())
    assert "nothing to gate for escalation" in flat and "not measured" in flat and "fairpair measure" in flat


def test_measurements_stored_missing_are_not_a_silent_pass(run):
    """Every 'escalate' measurement stored as missing (the measure did not apply): the comparison is
    listed; it is never pass, and the gate does not pass on it silently."""
    res = analyze_run(run)
    esc = [c for c in res.comparisons if c.id == "escalation"]
    assert len(esc) == 3 and all(c.verdict in ("no verdict", "insufficient design") and c.reasons for c in esc)
    with pytest.raises(FairpairError, match="nothing to gate"):
        gate_exit_code(run)
