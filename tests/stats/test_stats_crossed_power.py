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
    rejects = np.mean(np.abs(est / se) > crit)
    fails = np.mean((est - crit * se > margin) | (est + crit * se < -margin))
    plan = crossed_power(delta, VC, templates=t, names_a=n, names_b=n, repetitions=r, margin=margin)
    for planned, simulated in ((plan.power, rejects), (plan.power_fail, fails)):
        mc_se = math.sqrt(max(simulated * (1 - simulated), 0.01 * 0.99) / reps)
        # 3 Monte Carlo SE of the simulation plus the planner's own draws (< 0.005)
        assert abs(planned - simulated) <= 3 * mc_se + 0.005


def _cells(rng, reps, delta, vc, t, n, r):
    """Whole tables of cell means (reps, T, group, name) of the crossed normal model."""
    shape = (reps, t, 2, n)
    m = (rng.normal(0, math.sqrt(vc.template_group / 2), (reps, t, 2, 1))
         + rng.normal(0, math.sqrt(vc.name), (reps, 1, 2, n)) + rng.normal(0, math.sqrt(vc.template_name), shape)
         + rng.normal(0, math.sqrt(vc.repetition / r), shape))
    m[:, :, 0, :] += delta
    return m


def _hull_rule(m, names, level, pool=0.25):
    """The pass rule's interval from cell-mean tables, written from the papers, independently of fairpair.

    The crossed moment estimator with the "sometimes pool" preliminary F test (Bancroft 1944), the
    Satterthwaite df, then the hull of the t interval and Hall's (1992) skewness-corrected t, Hall's
    transformation g(x) = x + l (x^2/3 + 1/6) + l^2 x^3 / 27 inverted by bisection (not by its closed form).
    Returns (estimate, se, df, skewness, low, high).
    """
    reps, t, _, n = m.shape
    d_t = m[:, :, 0, :].mean(-1) - m[:, :, 1, :].mean(-1)
    est = d_t.mean(1)
    s_t = d_t.var(1, ddof=1)
    v = s_t / t
    pieces = [(s_t / t, t - 1)]
    if names == "random":
        s_n, ms = [], []
        for g in (0, 1):
            mg = m[:, :, g, :]
            s_n.append(mg.mean(1).var(1, ddof=1))
            res = mg - mg.mean(1, keepdims=True) - mg.mean(2, keepdims=True) + mg.mean((1, 2), keepdims=True)
            ms.append((res**2).sum((1, 2)) / ((t - 1) * (n - 1)))
        f = (t * (s_n[0] + s_n[1]) / 2) / ((ms[0] + ms[1]) / 2)
        pooled = stats.f.sf(f, 2 * (n - 1), 2 * (t - 1) * (n - 1)) > pool
        for g in (0, 1):
            val = (s_n[g] - ms[g] / t) / n
            pos = (val > 0) & ~pooled
            v = v + np.where(pos, val, 0.0)
            pieces += [(np.where(pos, s_n[g] / n, 0.0), n - 1), (np.where(pos, ms[g] / (n * t), 0.0),
                                                                 (t - 1) * (n - 1))]
    df = v**2 / sum(k**2 / dfi for k, dfi in pieces)
    se = np.sqrt(v)
    lam = stats.kstat(d_t, 3, axis=1) / t**2 / se**3
    q = stats.t.ppf(0.5 + level / 2, df)

    def g_inv(z):
        lo, hi = np.full(reps, -100.0), np.full(reps, 100.0)
        for _ in range(80):
            mid = (lo + hi) / 2
            below = mid + lam * (mid**2 / 3 + 1 / 6) + lam**2 * mid**3 / 27 < z
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return (lo + hi) / 2

    low = np.minimum(est - q * se, est - se * g_inv(q))
    high = np.maximum(est + q * se, est - se * g_inv(-q))
    return est, se, df, lam, low, high


def test_hull_rule_reference_is_the_analysis_interval():
    # the reference above computes what the analysis computes: estimate, SE, df, skewness, pass interval
    from fairpair.stats import crossed_from_cells

    m = _cells(np.random.default_rng(3), 6, 0.02, VC, 10, 4, 2)
    for names in ("fixed", "random"):
        ref = _hull_rule(m, names, 0.90)
        for i in range(m.shape[0]):
            cr = crossed_from_cells(m[i, :, 0, :], m[i, :, 1, :], names=names)
            ci = cr.equivalence_interval(0.90)
            got = (cr.estimate, cr.se, cr.df, cr.skewness, ci.low, ci.high)
            assert got == pytest.approx(tuple(x[i] for x in ref), rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("names, t, n, r, delta, margin", [
    ("fixed", 20, 3, 5, 0.0, 0.12),    # the design where the hull's price was measured (20 x 3 names fixed)
    ("fixed", 6, 3, 2, 0.03, 0.4),     # few templates: the estimated skewness is the noisiest
    ("random", 20, 4, 5, 0.0, 0.15),
    ("random", 8, 10, 1, 0.05, 0.25),
])
def test_power_pass_follows_the_verdicts_hull_rule(names, t, n, r, delta, margin):
    # brute force: whole tables of cell means through the pass rule's interval, counted. Names fixed: the
    # truth is the difference with these names, so no name effect is drawn from audit to audit.
    reps = 6000
    vc = VC if names == "random" else VarianceComponents(VC.template_group, 0.0, VC.template_name, VC.repetition)
    est, se, df, lam, low, high = _hull_rule(_cells(np.random.default_rng(20261201), reps, delta, vc, t, n, r),
                                             names, 0.90)
    passes = np.mean((low > -margin) & (high < margin))
    ct = stats.t.isf(0.05, df)
    symmetric = np.mean((est - ct * se > -margin) & (est + ct * se < margin))
    plan = crossed_power(delta, VC, templates=t, names_a=n, names_b=n, repetitions=r, margin=margin,
                         names=names)
    mc_se = math.sqrt(max(passes * (1 - passes), 0.01 * 0.99) / reps)
    # 3 Monte Carlo SE of the brute force plus the planner's own draws (< 0.005)
    assert abs(plan.power_pass - passes) <= 3 * mc_se + 0.005
    assert 0.1 < passes < symmetric < 0.95  # informative rows; the hull only makes a pass rarer


def test_power_pass_is_deterministic_and_below_the_symmetric_t():
    a = crossed_power(0.0, VC, templates=20, names_a=3, names_b=3, repetitions=5, margin=0.12, names="fixed")
    b = crossed_power(0.0, VC, templates=20, names_a=3, names_b=3, repetitions=5, margin=0.12, names="fixed")
    assert a.power_pass == b.power_pass
    # the symmetric t interval's pass probability (names fixed: exact, over the chi-square of S_T^2)
    df, se = a.df, a.standard_error
    ct = stats.t.isf(0.05, df)
    u = np.linspace(1e-6, stats.chi2.isf(1e-12, df), 200001)
    s = se * np.sqrt(u / df)
    inside = np.clip(stats.norm.cdf((0.12 - ct * s) / se) - stats.norm.cdf((-0.12 + ct * s) / se), 0, None)
    symmetric = np.trapezoid(inside * stats.chi2.pdf(u, df), u)
    assert a.power_pass < symmetric - 0.005


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
