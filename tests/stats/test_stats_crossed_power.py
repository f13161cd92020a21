"""Power of the crossed-design test and McNemar's exact-hybrid power, against statsmodels and simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.power import TTestPower

from fairpair.stats import (
    VarianceComponents,
    crossed_power,
    crossed_variance,
    estimate_variance_components,
    mcnemar_power,
)

VC = VarianceComponents(template_group=0.010, name=0.004, template_name=0.010, repetition=0.20)


@pytest.mark.parametrize("effect, t, n, r", [(0.05, 20, 3, 5), (0.1, 8, 2, 1), (-0.03, 40, 5, 3)])
def test_names_fixed_is_the_one_sample_t_on_templates(effect, t, n, r):
    # names fixed: D is the mean of T template differences, its variance estimate S_T^2 / T:
    # statsmodels' one-sample t power at d = effect / sd(D_t) on T observations must match exactly.
    res = crossed_power(effect, VC, templates=t, names_a=n, names_b=n, repetitions=r, names="fixed")
    sd_t = res.standard_error * math.sqrt(t)
    ref = TTestPower().power(abs(effect) / sd_t, t, 0.05, alternative="two-sided")
    assert res.df == t - 1
    assert res.power == pytest.approx(ref, abs=1e-10)


def test_variance_formula_and_design_levers():
    var, df, terms = crossed_variance(VC, templates=20, names_a=3, names_b=3, repetitions=5)
    h = 2 / 3
    cell = 0.010 + 0.20 / 5
    assert var == pytest.approx(0.010 / 20 + 0.004 * h + cell * h / 20)
    assert set(terms) == {"templates", "names", "cells"}
    assert 2 < df < 20
    # a 4th name per group shrinks the name term; a 6th repetition only the repetition part of the cells
    base = crossed_power(0.1, VC, templates=20, names_a=3, names_b=3, repetitions=5)
    rep = crossed_power(0.1, VC, templates=20, names_a=3, names_b=3, repetitions=6)
    name = crossed_power(0.1, VC, templates=20, names_a=4, names_b=4, repetitions=5)
    tmpl = crossed_power(0.1, VC, templates=21, names_a=3, names_b=3, repetitions=5)
    assert min(name.power, tmpl.power, rep.power) > base.power
    assert rep.variance_terms["names"] == base.variance_terms["names"]
    assert rep.variance_terms["templates"] == base.variance_terms["templates"]
    assert name.variance_terms["names"] < base.variance_terms["names"]


def _simulate_audits(rng, reps, delta, vc, t, n, r):
    """Answers of the crossed model and the moment-estimator t test, written independently of fairpair."""
    shape = (reps, t, 2, n)
    tg = rng.normal(0, math.sqrt(vc.template_group / 2), (reps, t, 2, 1))
    b = rng.normal(0, math.sqrt(vc.name), (reps, 1, 2, n))
    ab = rng.normal(0, math.sqrt(vc.template_name), shape)
    e = rng.normal(0, math.sqrt(vc.repetition / r), shape)  # the cell mean of r repetitions
    m = tg + b + ab + e
    m[:, :, 0, :] += delta
    d_t = m[:, :, 0, :].mean(-1) - m[:, :, 1, :].mean(-1)
    est = d_t.mean(1)
    s_t = d_t.var(1, ddof=1)
    v = s_t / t
    pieces = [(s_t / t, t - 1)]
    for g in (0, 1):
        mg = m[:, :, g, :]
        s_n = mg.mean(1).var(1, ddof=1)
        res = mg - mg.mean(1, keepdims=True) - mg.mean(2, keepdims=True) + mg.mean((1, 2), keepdims=True)
        ms = (res**2).sum((1, 2)) / ((t - 1) * (n - 1))
        val = (s_n - ms / t) / n  # a negative name-variance estimate is set to 0, its terms dropped
        pos = val > 0
        v = v + np.where(pos, val, 0.0)
        pieces += [(np.where(pos, s_n / n, 0.0), n - 1), (np.where(pos, ms / (n * t), 0.0), (t - 1) * (n - 1))]
    df = v**2 / sum(k**2 / dfi for k, dfi in pieces)
    se = np.sqrt(v)
    return est, se, df


@pytest.mark.parametrize("delta, margin", [(0.0, 0.15), (0.12, 0.03), (0.2, 0.05)])
def test_crossed_power_against_simulation(delta, margin):
    rng = np.random.default_rng(20261201)
    reps, t, n, r = 4000, 20, 4, 5
    est, se, df = _simulate_audits(rng, reps, delta, VC, t, n, r)
    crit = stats.t.isf(0.025, df)
    ct = stats.t.isf(0.05, df)
    rejects = np.mean(np.abs(est / se) > crit)
    fails = np.mean((est - crit * se > margin) | (est + crit * se < -margin))
    passes = np.mean((est - ct * se > -margin) & (est + ct * se < margin))
    plan = crossed_power(delta, VC, templates=t, names_a=n, names_b=n, repetitions=r, margin=margin)
    for planned, simulated in ((plan.power, rejects), (plan.power_fail, fails), (plan.power_pass, passes)):
        mc_se = math.sqrt(max(simulated * (1 - simulated), 0.01 * 0.99) / reps)
        # 3 Monte Carlo SE of the simulation plus the planner's own draws (< 0.005)
        assert abs(planned - simulated) <= 3 * mc_se + 0.005


def test_estimate_variance_components_recovers_the_simulated_ones():
    rng = np.random.default_rng(5)
    t, n, r = 60, 6, 4
    tg = rng.normal(0, math.sqrt(VC.template_group / 2), (t, 2, 1))
    b = rng.normal(0, math.sqrt(VC.name), (1, 2, n))
    ab = rng.normal(0, math.sqrt(VC.template_name), (t, 2, n))
    y = (tg + b + ab)[..., None] + rng.normal(0, math.sqrt(VC.repetition), (t, 2, n, r))
    ti, gi, ni, _ = np.indices(y.shape)
    names = np.char.add(np.where(gi == 0, "a", "b"), ni.astype(str))
    est = estimate_variance_components(y.ravel(), ti.ravel(), names.ravel(), (gi == 0).ravel())
    assert (est.templates, est.names_a, est.names_b, est.repetitions) == (60, 6, 6, 4.0)
    assert est.repetition == pytest.approx(VC.repetition, rel=0.08)
    assert est.template_name == pytest.approx(VC.template_name, abs=0.008)
    # the cell mean square is recovered exactly as the pooled two-way interaction of the cell means
    m = y.mean(-1)
    ms = []
    for g in (0, 1):
        mg = m[:, g, :]
        res = mg - mg.mean(0) - mg.mean(1, keepdims=True) + mg.mean()
        ms.append((res**2).sum() / ((t - 1) * (n - 1)))
    assert est.cell(r) == pytest.approx(np.mean(ms), rel=1e-10)
    with pytest.raises(ValueError, match="at least 2 per group"):
        estimate_variance_components([1.0, 2.0, 3.0, 4.0], [0, 0, 1, 1], ["a", "b", "a", "b"], [1, 0, 1, 0])


def test_mcnemar_power_at_zero_effect_is_the_size_of_the_test():
    # two-sided: about alpha, not Connor's one-tailed alpha / 2
    assert mcnemar_power(5000, 0.0, 0.2).power == pytest.approx(0.05, abs=0.002)
    small = mcnemar_power(60, 0.0, 0.2).power  # 12 discordant pairs expected: the conservative exact test
    assert 0.005 < small < 0.05


@pytest.mark.parametrize("n, delta, psi", [(60, 0.15, 0.2), (40, 0.2, 0.3), (150, 0.1, 0.2)])
def test_mcnemar_power_matches_simulation_of_the_analysis_test(n, delta, psi):
    # below 25 discordant pairs the analysis uses the exact binomial test: simulate exactly that
    rng = np.random.default_rng(11)
    p10, p01 = (psi + delta) / 2, (psi - delta) / 2
    reps, hits = 3000, 0
    for _ in range(reps):
        a, b, c, d = rng.multinomial(n, [0.5 * (1 - psi), p10, p01, 0.5 * (1 - psi)])
        exact = b + c < 25
        if b + c == 0:
            continue
        hits += sm_mcnemar([[a, b], [c, d]], exact=exact, correction=False).pvalue < 0.05
    sim = hits / reps
    planned = mcnemar_power(n, delta, psi).power
    assert abs(planned - sim) <= 3 * math.sqrt(sim * (1 - sim) / reps) + 0.005
