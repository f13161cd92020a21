"""Equivalence verdicts, TOST (vs statsmodels) and power planning (vs statsmodels / simulation)."""

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import ttost_paired

from fairpair.stats import (
    design_effect,
    equivalence_verdict,
    mcnemar,
    mcnemar_power,
    mcnemar_table,
    min_detectable_effect,
    min_detectable_risk_difference,
    paired_power,
    paired_t,
    pairs_needed,
    significant,
    tost_paired,
    verdict,
)


@pytest.mark.parametrize(
    "eq, diff, decision, sig",
    [
        ((-0.01, 0.02), (-0.015, 0.025), "pass", False),  # inside the margin
        ((0.01, 0.03), (0.005, 0.035), "pass", True),  # real but small difference
        ((0.06, 0.09), (0.055, 0.095), "fail", True),  # beyond the margin
        ((-0.12, -0.07), (-0.13, -0.06), "fail", True),  # beyond, the other way
        ((0.04, 0.08), (0.03, 0.09), "inconclusive", True),  # straddles +m
        ((-0.1, 0.1), (-0.12, 0.12), "inconclusive", False),  # too wide
        ((0.051, 0.07), (0.049, 0.08), "inconclusive", True),  # 90% outside, 95% not: not a fail
        ((-0.05, 0.01), (-0.06, 0.02), "inconclusive", False),  # touching -m is not inside
    ],
)
def test_verdict_rules(eq, diff, decision, sig):
    v = verdict(eq, diff, 0.05)
    assert v.decision == decision
    assert v.significant is sig
    assert v.bounds == (-0.05, 0.05)


def test_verdict_nan_and_errors():
    v = verdict((np.nan, np.nan), (np.nan, np.nan), 0.05)
    assert v.decision == "inconclusive" and v.note == "confidence interval undefined"
    with pytest.raises(ValueError, match="positive"):
        verdict((0, 1), (0, 1), 0)
    with pytest.raises(ValueError, match="low > high"):
        verdict((1, 0), (0, 1), 0.5)
    with pytest.raises(ValueError, match="low < high"):
        verdict((0, 1), (0, 1), (1, -1))


def test_equivalence_verdict_uses_both_levels():
    res = mcnemar_table([[4000, 120], [100, 3000]])
    v = equivalence_verdict(res, 0.02)
    assert v.equivalence_ci == res.confidence_interval(0.90)
    assert v.difference_ci == res.confidence_interval(0.95)
    assert v.decision == "pass"  # rd = 20/7220 ~ 0.003, tight CI
    v = equivalence_verdict(mcnemar_table([[100, 60], [10, 100]]), 0.05)
    assert v.decision == "fail" and v.significant  # rd = 50/270 ~ 0.185
    wald = equivalence_verdict(res, 0.02, method="wald")
    assert wald.equivalence_ci.method == "wald"
    with pytest.raises(ValueError, match="alpha"):
        equivalence_verdict(res, 0.02, alpha=0.6)


def test_significant_flag():
    assert significant(0.049) and not significant(0.051) and not significant(np.nan)
    assert significant(0.009, alpha=0.01)


@pytest.mark.parametrize("seed", range(20))
def test_tost_matches_statsmodels(seed):
    rng = np.random.default_rng(5000 + seed)
    n = int(rng.integers(5, 300))
    x = rng.normal(0, 1, n)
    y = x + rng.normal(rng.normal(0, 0.2), 0.5, n)
    margin = float(rng.uniform(0.05, 0.5))
    res = tost_paired(x, y, margin)
    p, (t1, p1, df1), (t2, p2, df2) = ttost_paired(x, y, -margin, margin)
    assert res.pvalue == pytest.approx(p, abs=1e-10)
    assert (res.statistic_lower, res.pvalue_lower) == pytest.approx((t1, p1), abs=1e-10)
    assert (res.statistic_upper, res.pvalue_upper) == pytest.approx((t2, p2), abs=1e-10)
    assert res.df == df1
    # TOST at alpha <=> the (1 - 2 alpha) interval inside the margin
    assert (res.verdict.decision == "pass") == (res.pvalue < 0.05)
    assert tuple(res.confidence_interval()) == pytest.approx(tuple(paired_t(x, y).confidence_interval(0.9)), abs=1e-10)


def test_tost_asymmetric_bounds_and_degenerate():
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, 50)
    y = x - 0.1 + rng.normal(0, 0.3, 50)
    res = tost_paired(x, y, (-0.05, 0.3))
    p, _, _ = ttost_paired(x, y, -0.05, 0.3)
    assert res.pvalue == pytest.approx(p, abs=1e-12) and res.bounds == (-0.05, 0.3)
    deg = tost_paired([1.0, 2.0], [1.0, 2.0], 0.1)
    assert np.isnan(deg.pvalue) and deg.verdict.decision == "inconclusive"


# ------------------------------------------------------------------ power


@pytest.mark.parametrize("d, n", [(0.2, 50), (0.5, 20), (0.1, 800), (0.35, 64.5), (-0.3, 40)])
def test_paired_t_power_matches_statsmodels(d, n):
    res = paired_power(n, d)
    assert res.power == pytest.approx(TTestPower().power(effect_size=d, nobs=n, alpha=0.05), abs=1e-10)
    assert res.design_effect == 1.0


@pytest.mark.parametrize("d, power", [(0.2, 0.8), (0.5, 0.9), (0.1, 0.8), (0.3, 0.95)])
def test_pairs_needed_t_matches_statsmodels(d, power):
    res = pairs_needed(d, test="t", power=power)
    ref = TTestPower().solve_power(effect_size=d, power=power, alpha=0.05)
    assert res.n_pairs == math.ceil(ref)
    assert res.power >= power
    assert paired_power(res.n_pairs - 1, d).power < power


@pytest.mark.parametrize("n, power", [(100, 0.8), (1000, 0.9)])
def test_min_detectable_effect_t_matches_statsmodels(n, power):
    res = min_detectable_effect(n, test="t", power=power)
    ref = TTestPower().solve_power(nobs=n, power=power, alpha=0.05)
    # statsmodels' solver stops at ~1e-5 relative; ours solves the power equation to 1e-10
    assert res.effect == pytest.approx(ref, rel=2e-5)
    assert TTestPower().power(effect_size=res.effect, nobs=n, alpha=0.05) == pytest.approx(power, abs=1e-10)


def test_wilcoxon_uses_are():
    t = pairs_needed(0.3, test="t")
    w = pairs_needed(0.3, test="wilcoxon")
    assert w.n_pairs > t.n_pairs
    assert w.n_pairs == pytest.approx(t.n_pairs * math.pi / 3, abs=2)
    assert paired_power(100, 0.3, test="wilcoxon").power == pytest.approx(
        TTestPower().power(0.3, 100 * 3 / math.pi, 0.05), abs=1e-10
    )


def test_connor_formula_closed_form():
    # psi = 0.2, delta = 0.05, alpha = 0.05, power = 0.8
    za, zb = stats.norm.ppf(0.975), stats.norm.ppf(0.8)
    n = (za * math.sqrt(0.2) + zb * math.sqrt(0.2 - 0.05**2)) ** 2 / 0.05**2
    res = pairs_needed(0.05, discordance=0.2)
    # the exact power of the test the analysis runs is within a point of Connor's approximation here
    assert abs(res.n_pairs - math.ceil(n)) <= 0.01 * n
    assert res.power >= 0.8 > mcnemar_power(res.n_pairs - 1, 0.05, 0.2).power
    assert mcnemar_power(n, 0.05, 0.2).power == pytest.approx(0.8, abs=0.01)
    mde = min_detectable_risk_difference(n, 0.2)
    assert mde.effect == pytest.approx(0.05, abs=5e-4)


def test_design_effect_scales_pairs():
    assert design_effect(20, 0.05) == pytest.approx(1.95)
    assert design_effect() == 1.0
    base = pairs_needed(0.05, discordance=0.2)
    clustered = pairs_needed(0.05, discordance=0.2, cluster_size=20, icc=0.05)
    assert clustered.design_effect == pytest.approx(1.95)
    assert clustered.n_pairs == pytest.approx(base.n_pairs * 1.95, abs=2)
    assert mcnemar_power(1000, 0.05, 0.2, cluster_size=11, icc=0.1).effective_n_pairs == pytest.approx(500)
    with pytest.raises(ValueError, match="icc"):
        design_effect(5, 1.5)


@pytest.mark.slow
@pytest.mark.parametrize("n, delta, psi", [(300, 0.06, 0.2), (800, 0.03, 0.15)])
def test_mcnemar_power_against_simulation(n, delta, psi):
    rng = np.random.default_rng(42)
    p10, p01 = (psi + delta) / 2, (psi - delta) / 2
    reps, rejections = 2000, 0
    for _ in range(reps):
        cells = rng.multinomial(n, [p10, p01, 1 - psi])
        x = np.repeat([1, 0, 1], cells)
        y = np.repeat([0, 1, 1], cells)
        rejections += mcnemar(x, y, exact=False, correction=False).pvalue < 0.05
    simulated = rejections / reps
    assert mcnemar_power(n, delta, psi).power == pytest.approx(simulated, abs=0.035)


def test_power_errors():
    with pytest.raises(ValueError, match="discordance"):
        pairs_needed(0.05)
    with pytest.raises(ValueError, match="must not exceed"):
        mcnemar_power(100, 0.3, 0.2)
    with pytest.raises(ValueError, match="'mcnemar', 't', 'wilcoxon'"):
        pairs_needed(0.2, test="z")
    with pytest.raises(ValueError, match="non-zero"):
        pairs_needed(0.0, test="t")
    unreachable = min_detectable_risk_difference(10, 0.01)
    assert np.isnan(unreachable.effect) and "not reachable" in unreachable.note
