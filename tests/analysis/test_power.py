"""Power planning for the seed's starting size, with the crossed design the analysis uses."""

from __future__ import annotations

import json
import math

import pytest
import yaml
from statsmodels.stats.power import TTestPower
from typer.testing import CliRunner

from analysis_runs import battery_dict, make_run
from fairpair.analysis.power import components_from_run, power_plan
from fairpair.battery import load_battery
from fairpair.cases import plan as make_plan
from fairpair.cli import app, main
from fairpair.stats import VarianceComponents, crossed_power


def _loaded(tmp_path, **kw):
    p = tmp_path / "seed.yaml"
    b = battery_dict(**kw)
    b["analysis"]["generalize"] = {"names": "random"}  # the group claim, the power it costs is the point here
    b["measures"] = {"refund": {"kind": "keywords", "any_of": ["reembolso completo"]}, "words": {"kind": "word_count"}}
    p.write_text(yaml.safe_dump(b, allow_unicode=True), encoding="utf-8")
    lb = load_battery(p)
    return lb, make_plan(lb), p


def test_seed_starting_size(tmp_path):
    # the seed: 20 templates, 4 groups x 3 names, 5 repetitions (1,200 conversations)
    lb, pl, _ = _loaded(tmp_path, templates=20, repetitions=5)
    assert pl.conversations == 1200
    out = power_plan(lb, pl)
    assert out["n_tests"] == 3 and out["alpha_per_test"] == pytest.approx(0.05 / 3)
    (d,) = out["designs"].values()
    assert (d["templates"], d["names_per_group"], d["repetitions"], d["names"]) == (20, 3, 5, "random")
    vc = VarianceComponents.assumed(0.1, share=0.05)
    # the minimal detectable difference has 80% power under the crossed test
    at = crossed_power(d["min_rate_difference"], vc, templates=20, names_a=3, names_b=3, repetitions=5,
                       alpha=0.05 / 3)
    assert at.power == pytest.approx(0.8, abs=0.002)
    # names fixed is the one-sample t on 20 template differences: statsmodels' TTestPower
    fixed = crossed_power(0.05, vc, templates=20, names_a=3, names_b=3, repetitions=5, alpha=0.05 / 3, names="fixed")
    sd_t = fixed.standard_error * math.sqrt(20)
    assert fixed.power == pytest.approx(TTestPower().power(0.05 / sd_t, 20, 0.05 / 3), abs=1e-10)
    assert d["min_rate_difference_names_fixed"] < d["min_rate_difference"]
    # the levers: a 4th name buys more than a 6th repetition or a 21st template when names are random
    lev = d["levers"]
    assert lev["one more name per group"]["standard_error"] < lev["one more template"]["standard_error"]
    assert lev["one more template"]["standard_error"] < lev["as planned"]["standard_error"]
    assert lev["one more repetition"]["standard_error"] < lev["as planned"]["standard_error"]
    # the primary comparison with a margin: fail and pass probabilities are reported
    (c,) = d["comparisons"].values()
    assert c["margin"] == 0.1 and 0.0 <= c["power_fail"] <= 1.0 and 0.0 <= c["power_pass_at_zero"] <= 1.0
    text = "\n".join(out["lines"])
    assert "Satterthwaite" in text and "one more name per group" in text and "P(pass)" in text
    # P(pass) is that of the verdict's rule (the hull with Hall's skewness-corrected t; checked against a
    # brute-force simulation in tests/stats/test_stats_crossed_power.py), and the plan says what it assumes
    rule = crossed_power(0.0, vc, templates=20, names_a=3, names_b=3, repetitions=5, alpha=0.05 / 3, margin=0.1,
                         equivalence_alpha=0.05)
    assert c["power_pass_at_zero"] == rule.power_pass
    assert "hull of the t and Hall's (1992) skewness-corrected t" in text and "16,384 simulated audits" in text
    assert "90% interval" in out["assumptions"]["pass_rule"]


def test_one_name_per_group_is_an_insufficient_design(tmp_path):
    lb, pl, _ = _loaded(tmp_path, templates=10, repetitions=2)
    pl.designs["counterfactual-origen"]["variants_per_group"] = 1
    out = power_plan(lb, pl)
    (d,) = out["designs"].values()
    assert "insufficient design" in d["note"] and "names" in d["note"]


def test_from_run_estimates_components_and_cli(tmp_path, capsys):
    b = battery_dict(templates=8, repetitions=3, resamples=50)
    run = make_run(tmp_path, "pilot", b)
    comps = components_from_run(run)
    vc = comps[("counterfactual-origen", "refund")]
    assert vc.templates == 8 and vc.names_a == 3 and vc.repetitions == 3.0
    assert vc.source.startswith("run ") and math.isfinite(vc.repetition)
    assert min(vc.template_group, vc.name, vc.template_name, vc.repetition) >= 0
    lb, pl, path = _loaded(tmp_path, templates=20, repetitions=5)
    out = power_plan(lb, pl, components=comps)
    (d,) = out["designs"].values()
    assert d["components"]["source"] == vc.source
    res = CliRunner().invoke(app, ["plan", str(path), "--power", "--from", str(run), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["power"]["assumptions"]["components_from_run"] is True
    with pytest.raises(SystemExit) as exc:
        main(["plan", str(path), "--from", str(run)])
    assert exc.value.code == 2 and "--power" in capsys.readouterr().err


@pytest.mark.parametrize("templates", [3, 5, 8])
def test_sign_flip_floor_is_the_exact_tests_smallest_p(templates):
    import itertools

    from fairpair.analysis.power import sign_flip_floor

    # every template's difference of one sign: count the sign assignments whose |sum| is as large (enumeration)
    diffs = [1.0] * templates
    observed = abs(sum(diffs))
    extreme = sum(abs(sum(s * d for s, d in zip(signs, diffs, strict=True))) >= observed
                  for signs in itertools.product((1, -1), repeat=templates))
    assert sign_flip_floor(templates) == extreme / 2 ** templates == 2.0 ** (1 - templates)


def test_plan_says_whether_a_fail_is_reachable(tmp_path):
    from fairpair.analysis.power import sign_flip_templates

    assert sign_flip_templates(0.05) == 6 and sign_flip_templates(0.05 / 6) == 8 and sign_flip_templates(0.05 / 7) == 9
    lb, pl, _ = _loaded(tmp_path, templates=5, repetitions=1)
    text = "\n".join(power_plan(lb, pl)["lines"])  # 3 primary tests: alpha 0.0167 per test, 5 templates: 0.0625
    assert "2^(1-5) = 0.062: not below 0.01667, such a difference can never fail; use at least 7 templates" in text
    lb, pl, _ = _loaded(tmp_path, templates=8, repetitions=1)
    (d,) = power_plan(lb, pl)["designs"].values()
    assert d["sign_flip_floor"] == 2.0 ** -7
