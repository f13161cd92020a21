"""Power planning for the seed's starting size, checked against the closed forms."""

from __future__ import annotations

import math

import pytest
import yaml
from scipy.stats import norm

from analysis_runs import battery_dict
from fairpair.analysis.power import power_plan
from fairpair.battery import load_battery
from fairpair.cases import plan as make_plan


def _connor_power(delta, psi, n, alpha):
    z = norm.isf(alpha / 2)
    return norm.cdf((abs(delta) * math.sqrt(n) - z * math.sqrt(psi)) / math.sqrt(psi - delta**2))


def test_seed_starting_size(tmp_path):
    # the seed: 20 templates, 4 groups x 3 names, 5 repetitions (1,200 conversations)
    b = battery_dict(templates=20, repetitions=5)
    p = tmp_path / "seed.yaml"
    p.write_text(yaml.safe_dump(b, allow_unicode=True), encoding="utf-8")
    lb = load_battery(p)
    pl = make_plan(lb)
    assert pl.conversations == 1200
    out = power_plan(lb, pl)
    assert out["n_tests"] == 3 and out["alpha_per_test"] == pytest.approx(0.05 / 3)
    (d,) = out["designs"].values()
    assert d["pairs"] == 300 and d["pairs_per_template"] == 15
    de = 1 + 14 * 0.05
    assert d["design_effect"] == pytest.approx(de)
    # at the minimal detectable difference Connor's power is 80% on the effective pairs
    assert _connor_power(d["min_rate_difference"], 0.2, 300 / de, 0.05 / 3) == pytest.approx(0.8, abs=1e-6)
    assert 0.08 < d["min_rate_difference"] < 0.14
    # 5 points: out of reach by repeating 20 templates (effective pairs < 20 / 0.05 = 400 needed ~970)
    assert d["repetitions_needed"] is None and d["templates_needed"] > 20
    t = d["templates_needed"]
    n_t = t * 15
    assert _connor_power(0.05, 0.2, n_t / de, 0.05 / 3) >= 0.8 > _connor_power(0.05, 0.2, (n_t - 15) / de, 0.05 / 3)
    text = "\n".join(out["lines"])
    assert "10." in text or "11." in text or "12." in text
    assert "discordance 0.20" in text and "out of reach" in text
