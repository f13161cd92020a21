"""The pytest plugin: a fairness_*.yaml battery collected as tests, run with the mock target and real measures."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import yaml

from analysis_runs import battery_dict


def _battery(bias):
    b = battery_dict(bias=bias, templates=20, repetitions=2, resamples=200)
    b["measures"] = {"refund": {"kind": "regex", "pattern": "reembolso completo"}}
    b["analysis"]["comparisons"] = [
        {"id": "refund", "measure": "refund", "attribute": "origen", "reference": "espana", "margin": 0.2}]
    return b


def _run_pytest(folder):
    """pytest in a subprocess on ``folder`` with the plugin (by its entry point, or ``-p`` when this checkout
    is not installed), runs under ``folder/runs``; returns the process and its stdout + stderr."""
    registered = any(ep.value == "fairpair.testing.pytest_plugin" for ep in entry_points(group="pytest11"))
    cmd = [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "--rootdir", str(folder),
           "--fairpair-out", str(folder / "runs"), str(folder)]
    if not registered:
        cmd[3:3] = ["-p", "fairpair.testing.pytest_plugin"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=folder, timeout=300)
    return out, out.stdout + out.stderr


def test_battery_collected_and_gated(tmp_path):
    (tmp_path / "fairness_biased.yaml").write_text(
        yaml.safe_dump(_battery({"magreb": {"refund": 0.1}}), allow_unicode=True), encoding="utf-8")
    fair = _battery({})
    fair["name"] = "mock_fair"
    (tmp_path / "fairness_fair.yaml").write_text(yaml.safe_dump(fair, allow_unicode=True), encoding="utf-8")
    (tmp_path / "other.yaml").write_text("not: a battery\n", encoding="utf-8")
    out, text = _run_pytest(tmp_path)
    assert out.returncode == 1, text
    assert "FAILED fairness_biased.yaml::refund[mock:counterfactual-origen:magreb-vs-espana]" in text
    assert "fairness comparison failed" in text
    assert text.count("PASSED fairness_fair.yaml::refund[") == 3
    # one item per target for the automatic answer-status comparisons (the mock answers every case well)
    assert "PASSED fairness_biased.yaml::answer-statuses[mock]" in text
    assert "1 failed, 7 passed" in text, text
    assert (tmp_path / "runs" / "fairness_biased" / "results.json").exists()


def test_a_ranking_battery_is_collected_with_its_verdicts(tmp_path):
    # the ranking design's verdicts are items too: 2 x 6 pairs and 4 four-fifths rows; the planted g2
    # (selection weight 0.3) is ranked below g1 and g3 (the same run as tests/analysis/test_gate_ranking.py)
    from fairpair.testing._ranking import ranking_battery

    b = ranking_battery(k=4, templates=8, names=6, repetitions=2, seed=1,
                        selection={"g1": 1.0, "g2": 0.3, "g3": 1.0, "g4": 0.6}, position=[])
    (tmp_path / "fairness_rank.yaml").write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False),
                                                 encoding="utf-8")
    out, text = _run_pytest(tmp_path)
    assert out.returncode == 1, text
    failed = sorted(line.split()[1] for line in text.splitlines() if line.startswith("FAILED "))
    assert failed == ["fairness_rank.yaml::orden:ranked_above:g1-vs-g2[mock:seleccion]",
                      "fairness_rank.yaml::orden:ranked_above:g2-vs-g3[mock:seleccion]"], text
    assert "2 failed, 14 skipped" in text, text
    # the skips give their reasons: a four-fifths row and a pair, inconclusive
    assert "inconclusive: selection rate of g2 over g3's: ratio 0.36" in text, text
    assert "inconclusive: top_pick: g1 " in text, text


def test_a_primary_comparison_without_a_verdict_fails_its_item(tmp_path):
    """Issue 28: a pre-registered comparison whose measure has no value (here a python measure that
    returns None for every answer: stored missing) is 'no verdict' (not measured), and its item fails
    instead of being skipped like an inconclusive one."""
    (tmp_path / "fp_none_measure.py").write_text("def none(text, **kw):\n    return None\n", encoding="utf-8")
    b = _battery({})
    b["measures"]["nada"] = {"kind": "python", "function": "fp_none_measure:none", "scale": "binary"}
    b["analysis"]["comparisons"].append({"id": "nada", "measure": "nada", "attribute": "origen",
                                         "reference": "espana", "margin": 0.2})
    (tmp_path / "fairness_unmeasured.yaml").write_text(yaml.safe_dump(b, allow_unicode=True), encoding="utf-8")
    out, text = _run_pytest(tmp_path)
    assert out.returncode == 1, text
    assert "FAILED fairness_unmeasured.yaml::nada[mock:counterfactual-origen:magreb-vs-espana]" in text, text
    assert "no verdict (not measured)" in text
    assert text.count("PASSED fairness_unmeasured.yaml::refund[") == 3


def test_the_old_module_path_still_loads_the_plugin(tmp_path):
    """Issue 27: the plugin moved to fairpair.testing (the top floor); a venv installed before the move names
    fairpair.analysis.pytest_plugin in its pytest11 entry point, which loads the new module by name."""
    (tmp_path / "fairness_fair.yaml").write_text(yaml.safe_dump(_battery({}), allow_unicode=True), encoding="utf-8")
    cmd = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:fairpair", "-p", "no:cacheprovider",
           "-p", "fairpair.analysis.pytest_plugin", "--rootdir", str(tmp_path), str(tmp_path)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "fairness_fair.yaml::refund[mock:counterfactual-origen:magreb-vs-espana]" in out.stdout
