"""A tiny, seeded run of benchmarks/sim_audits.py's simulation (the full table lives in benchmarks/HISTORY.md)."""

from __future__ import annotations

import numpy as np
import pytest

from fairpair.analysis._simaudit import MARGINS, Gen, Row, run_row, true_mean


def test_true_means_are_exact():
    # binary: P(eta > cut) with eta ~ N(0, 1) is the base rate 0.7; continuous: the latent mean itself
    assert np.isclose(true_mean("binary", 0.0), 0.7) and true_mean("continuous", 0.3) == 0.3


def test_small_simulation_is_deterministic_and_calibrated():
    row = Row(Gen("reps rho 0.5", rho=0.5), "binary", templates=20, names=5, reps=3, estimand="random")
    a = run_row(row, 60, seed=3)
    b = run_row(row, 60, seed=3)
    assert a["null"] == b["null"] and a["power"] == b["power"]
    nul, pw = a["null"], a["power"]
    assert nul.insufficient == 0 and nul.fail_nomargin <= 8  # 60 audits at alpha 0.05: at most 8 by chance
    cov = (nul.cov95 + a["margin"].cov95 + pw.cov95) / (nul.n_cov + a["margin"].n_cov + pw.n_cov)
    assert 0.85 <= cov <= 1.0
    assert pw.fail_margin > nul.fail_margin  # twice the margin is found more often than nothing
    assert MARGINS["binary"] == 0.10


def test_small_designs_get_insufficient_design():
    row = Row(Gen("independent"), "binary", templates=3, names=3, reps=1, estimand="fixed")
    out = run_row(row, 10, seed=0)
    assert out["null"].insufficient == 10 and out["null"].fail_nomargin == 0 and out["null"].pass_margin == 0


def test_new_measure_kinds_and_the_true_spread():
    from scipy import integrate, stats

    from fairpair.analysis._simaudit import true_spread

    # ceiling: P(5) = 0.95 at mu = 0 (the last cut is the 5% quantile); rare: P(yes) = 0.01
    assert np.isclose(stats.norm.sf(-1.6448536269514729), 0.95) and np.isclose(true_mean("rare", 0.0), 0.01)
    assert 4.9 < true_mean("ceiling", 0.0) < 4.95
    # without spread effects: log(sqrt(ms + noise r^2) / sqrt(ms + noise)), in closed form
    g = Gen("x", spread_ratio=1.5)
    noise = 1 - g.template - g.matched_set
    assert np.isclose(true_spread(g), np.log(np.sqrt(0.1 + 2.25 * noise) / np.sqrt(0.1 + noise)))
    # with them: the expectation over X ~ N(0, v) by adaptive quadrature (scipy), not Gauss-Hermite
    g = Gen("x", rho=0.5, spread_template=0.2, spread_name=0.15, spread_tg=0.1, spread_ratio=1.25)
    v = 0.2 ** 2 + 0.15 ** 2 + 0.1 ** 2
    noise = (1 - g.template - g.matched_set) * 0.5

    def mean_sd(m):
        def f(x):
            return np.sqrt(0.1 + noise * m ** 2 * np.exp(2 * x - 2 * v)) * stats.norm.pdf(x, 0, np.sqrt(v))

        return integrate.quad(f, -12 * np.sqrt(v), 12 * np.sqrt(v))[0]

    assert np.isclose(true_spread(g), np.log(mean_sd(1.25) / mean_sd(1.0)), rtol=1e-9)


def test_the_spread_test_finds_a_planted_ratio_and_keeps_quiet_without_one():
    base = dict(name=0.05, template_group=0.1, rho=0.5, spread_template=0.2, spread_name=0.15, spread_tg=0.1)
    fair = run_row(Row(Gen("s", **base), "continuous", 20, 10, 5, "random"), 40, seed=5)["null"]
    wide = run_row(Row(Gen("s", **base, spread_ratio=1.5), "continuous", 20, 10, 5, "random"), 40, seed=5)["null"]
    assert fair.sp_n == wide.sp_n == 40
    assert fair.sp_fail <= 6 and wide.sp_fail >= 34  # 5% and ~98% (benchmarks/HISTORY.md)
    assert fair.sp_cov >= 34 and wide.sp_ncov == 40


def test_policy_row_all_pairs_disagree_the_same_way():
    """Issue 28: 40+ pairs that all disagree the same way (a policy followed every time). The 95%
    interval is [-1, h], h the true difference at which all 8 templates sit at -1 with probability
    alpha/2 = 0.025: a template's difference d in [-1, 1] with mean h has P(d = -1) <= (1 - h) / 2
    (Markov), so ((1 - h) / 2)^8 = 0.025; the 90% one solves ((1 - h) / 2)^8 = 0.05. Both cover -1."""
    from fairpair.analysis._simaudit import PolicyRow, policy_audit, run_policy_row

    row = PolicyRow(templates=8, q=1.0)
    all_eq, c95, c90, verdict = policy_audit(row, np.random.default_rng(0))
    assert all_eq and c95 and c90 and verdict == "fail"  # -100 points, far beyond the 5-point margin
    from fairpair.analysis._paired import PairData, analyze_pairs

    x, y = np.zeros(48), np.ones(48)
    clusters, names = np.repeat(np.arange(8), 6), np.tile(np.arange(3).repeat(2), 8)
    pa = analyze_pairs(PairData(x=x, y=y, clusters=clusters, variants=names, name_a=names, name_b=names),
                       scale="binary", alpha=0.05, confidence_level=0.95, exact_threshold=25, n_resamples=0,
                       seed=0, names="fixed", secondary=False, heterogeneity=False)
    low, high = pa.fields["ci"]
    assert low == -1.0 and ((1 - high) / 2) ** 8 == pytest.approx(0.025)
    eq_low, eq_high = pa.fields["equivalence_ci"]  # not the crossed t's zero width
    assert eq_low == -1.0 and ((1 - eq_high) / 2) ** 8 == pytest.approx(0.05)
    t = run_policy_row(PolicyRow(templates=8, q=0.99), 40, seed=2)
    assert t == run_policy_row(PolicyRow(templates=8, q=0.99), 40, seed=2)
    assert t.all_eq > 10 and t.cov95 == t.n_cov == 40 and t.fail == 40
