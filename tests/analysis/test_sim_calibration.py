"""Slow: the analysis is calibrated (reduced version of benchmarks/sim_calibration.py)."""

from __future__ import annotations

import pytest

from fairpair.analysis._simulate import Scenario, planned_discordance, simulate
from fairpair.stats._power import mcnemar_power


@pytest.mark.slow
def test_no_bias_false_fail_rate_and_coverage():
    res = simulate(Scenario(n_resamples=300), 2000, seed=7)
    assert abs(res.reject_rate - 0.05) <= 0.01
    assert abs(res.fail_rate - 0.05) <= 0.01
    assert 0.935 <= res.coverage <= 0.965


@pytest.mark.slow
def test_power_matches_planning_and_coverage():
    s = Scenario(delta=0.08, n_resamples=300)
    planned = mcnemar_power(300, 0.08, planned_discordance(s)).power
    res = simulate(s, 2000, seed=8)
    assert abs(res.reject_rate - planned) <= 0.05
    assert 0.935 <= res.coverage <= 0.965


def test_simulated_pairs_follow_the_scenario():
    # the simulator's discordance matches the closed form it is planned with (fast sanity check)
    s = Scenario(delta=0.1, n_resamples=50)
    res = simulate(s, 200, seed=9)
    assert res.mean_discordance == pytest.approx(planned_discordance(s), abs=0.01)
