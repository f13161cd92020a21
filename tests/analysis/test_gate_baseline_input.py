"""``gate --baseline`` given a run it cannot compare with: an error (exit 2) naming the baseline, or a
warning for what the comparison left out; never a regression check that silently checks nothing."""

from __future__ import annotations

import pytest
from tests.run_helpers import run_cli

from analysis_runs import battery_dict
from fairpair.battery import load_battery
from fairpair.run import RunSettings, execute_run
from fairpair.store import Store


@pytest.fixture(scope="module")
def baselines(tmp_path_factory):
    """Runs of the battery of ``runs``: one never measured, one with 'refund' measured and not 'words'."""
    import yaml

    tmp = tmp_path_factory.mktemp("baselines")
    bpath = tmp / "b.yaml"
    bpath.write_text(yaml.safe_dump(battery_dict(templates=10, repetitions=1), allow_unicode=True), encoding="utf-8")
    out = {}
    for name in ("unmeasured", "refund_only"):
        out[name] = tmp / name
        execute_run(load_battery(bpath), out[name], RunSettings(concurrency=16))
    with Store.open(out["refund_only"]) as s:
        for r in s.responses():
            s.add_measurement(target=r.target, case_id=r.case_id, measure="refund", status="ok",
                              value="reembolso completo" in r.text)
    return out


def test_a_baseline_that_was_never_measured_is_an_error(runs, baselines, capsys):
    """Before: exit 1 or 0 from the run's own verdicts, no WORSE line possible and nothing said."""
    code, out, err = run_cli(["gate", runs["biased"], "--baseline", baselines["unmeasured"]], capsys)
    assert code == 2, out + err
    assert f"{baselines['unmeasured']}: --baseline: no primary comparison could be compared" in err
    assert "refund: not measured in both runs" in err and "words: not measured in both runs" in err
    assert f"fairpair measure {baselines['unmeasured']}" in err and "Traceback" not in err


def test_the_run_itself_as_its_baseline_is_an_error(runs, capsys):
    code, out, err = run_cli(["gate", runs["biased"], "--baseline", f"{runs['biased']}/"], capsys)
    assert code == 2, out + err
    assert "--baseline is the run being gated" in err


def test_what_the_baseline_comparison_left_out_is_a_warning(runs, baselines, capsys):
    code, out, err = run_cli(["gate", runs["biased"], "--baseline", baselines["refund_only"]], capsys)
    assert code == 1  # the biased run's own refund comparison fails
    flat = " ".join(out.split())
    assert f"warning: --baseline {baselines['refund_only']}: words: not measured in both runs" in flat
    assert "gate: failed" in flat


def test_a_baseline_of_another_battery_names_each_run_with_its_battery(runs, tmp_path, capsys):
    """Before: 'RUN: the runs come from different batteries ('otra' and 'mock_audit')', naming the gated
    run only, in an order that did not say which was which."""
    import yaml

    bpath = tmp_path / "otra.yaml"
    bpath.write_text(yaml.safe_dump(battery_dict(templates=4, repetitions=1, name="otra")), encoding="utf-8")
    execute_run(load_battery(bpath), tmp_path / "otra", RunSettings(concurrency=16))
    code, _, err = run_cli(["gate", runs["biased"], "--baseline", tmp_path / "otra"], capsys)
    assert code == 2
    assert f"{tmp_path / 'otra'} is 'otra', {runs['biased']} is 'mock_audit'" in err
