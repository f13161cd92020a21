"""Prediction-powered group differences and the Rogan-Gladen correction (issue 31).

Reference values are written out by hand from the published formulas (PPI: Angelopoulos et al.
2023, PPI++: arXiv 2311.01453; Rogan & Gladen 1978; Lee et al. 2025's delta-method variance), and the
intervals are checked against a Monte Carlo of their own model (fixed seeds).
"""

from __future__ import annotations

import numpy as np
import pytest

from fairpair.stats import (
    crossed_difference,
    ppi_difference,
    ppi_tuning,
    ppi_values,
    rogan_gladen,
    rogan_gladen_difference,
    stratum_inclusion,
)


def _design(t: int = 6, k: int = 3, r: int = 2):
    """Every template x name cell, ``r`` answers each; names a0.. in group A, b0.. in group B."""
    tt, gg, kk, _ = np.meshgrid(np.arange(t), [0, 1], np.arange(k), np.arange(r), indexing="ij")
    tt, gg, kk = tt.ravel(), gg.ravel(), kk.ravel()
    group = np.where(gg == 0, "A", "B")
    name = np.char.add(group, kk.astype(str))
    return tt, name, group


def test_lambda_one_is_the_classical_ppi_estimate_by_hand():
    """Uniform sample within each group: each group's PPI mean is mean_N(f) + mean_n(h - f) (Angelopoulos
    et al. 2023, eq. for the mean), and the balanced crossed estimate is their difference."""
    rng = np.random.default_rng(1)
    tt, name, group = _design()
    n = tt.size
    h_all = rng.normal(3.0, 1.0, n) + (group == "A") * 0.5
    f = h_all + rng.normal(0.0, 0.5, n) - (group == "A") * 0.4
    lab = np.zeros(n, bool)
    lab[rng.choice(np.nonzero(group == "A")[0], 9, replace=False)] = True
    lab[rng.choice(np.nonzero(group == "B")[0], 13, replace=False)] = True
    h = np.where(lab, h_all, np.nan)
    pi = stratum_inclusion(lab, group)
    assert pi[group == "A"][0] == pytest.approx(9 / 36) and pi[group == "B"][0] == pytest.approx(13 / 36)
    r = ppi_difference(f, h, tt, name, group, inclusion=pi, lam=1.0, groups=("A", "B"))
    by_hand = [f[group == g].mean() + (h - f)[lab & (group == g)].mean() for g in ("A", "B")]
    assert r.estimate == pytest.approx(by_hand[0] - by_hand[1], abs=1e-12)
    assert r.lam == 1.0 and r.n_labelled == 22
    # the uniform default (pi = 22 / 72 for all): Horvitz-Thompson with one weight
    u = ppi_difference(f, h, tt, name, group, lam=1.0, groups=("A", "B"))
    ht = [f[group == g].mean() + (h - f)[lab & (group == g)].sum() / 36 * 72 / 22 for g in ("A", "B")]
    assert u.estimate == pytest.approx(ht[0] - ht[1], abs=1e-12)
    # the judge's error by group, on the labelled answers
    assert r.judge_error["A"] == pytest.approx((f - h)[lab & (group == "A")].mean())


def test_lambda_zero_uses_the_labels_alone():
    rng = np.random.default_rng(2)
    tt, name, group = _design()
    f = rng.normal(size=tt.size)
    h = np.where(rng.random(tt.size) < 0.5, rng.normal(size=tt.size), np.nan)
    y = ppi_values(f, h, lam=0.0, inclusion=np.full(tt.size, 0.5))
    assert np.allclose(y, np.where(np.isnan(h), 0.0, h / 0.5))


def test_every_answer_labelled_gives_the_plain_estimate():
    rng = np.random.default_rng(3)
    tt, name, group = _design()
    h = rng.normal(size=tt.size) + (group == "A")
    plain = crossed_difference(h, tt, name, group, groups=("A", "B"))
    perfect = ppi_difference(h, h, tt, name, group, groups=("A", "B"))  # a perfect judge
    assert perfect.estimate == pytest.approx(plain.estimate, abs=1e-12)
    assert perfect.se == pytest.approx(plain.se, abs=1e-12)
    assert perfect.raw.estimate == pytest.approx(plain.estimate, abs=1e-12)
    biased = h + rng.normal(size=tt.size) - 0.7 * (group == "A")
    for lam in (0.0, 0.3, 1.0):  # pi = 1: the labels, whatever lambda
        r = ppi_difference(biased, h, tt, name, group, lam=lam, groups=("A", "B"))
        assert r.estimate == pytest.approx(plain.estimate, abs=1e-12)
        assert r.confidence_interval(0.95).low == pytest.approx(plain.confidence_interval(0.95).low, abs=1e-12)


def test_power_tuning_is_ppi_plus_plus_for_a_mean():
    """lambda = Cov(h, f) / ((1 + n/N) Var(f)) on the labelled answers (arXiv 2311.01453, Example 6.1)."""
    f = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 2.0, 3.0, 4.0])
    h = np.array([1.5, 1.5, 3.5, np.nan, np.nan, np.nan, np.nan, np.nan])
    fl, hl = f[:3], h[:3]
    cov = ((fl - fl.mean()) * (hl - hl.mean())).sum()
    var = ((fl - fl.mean()) ** 2).sum()
    assert ppi_tuning(f, h) == pytest.approx(cov / ((1 + 3 / 8) * var))
    assert ppi_tuning(f, np.where(np.isnan(h), np.nan, -h)) == 0.0  # clipped at 0
    assert ppi_tuning(f, np.full(8, np.nan)) == 0.0


def test_bad_input_is_refused():
    tt, name, group = _design()
    f = np.zeros(tt.size)
    with pytest.raises(ValueError, match="lam must be in"):
        ppi_values(f, f, lam=1.5)
    with pytest.raises(ValueError, match="inclusion probability"):
        ppi_values(f, f, inclusion=np.zeros(tt.size))
    with pytest.raises(ValueError, match="one value per answer"):
        ppi_difference(f, f[:3], tt, name, group)


def test_ppi_interval_covers_in_a_monte_carlo_of_crossed_audits():
    """Templates and names random, a judge biased against group A, 30% labelled: 95% coverage of the
    human difference (2000 audits; Monte Carlo SE 0.5 points)."""
    rng = np.random.default_rng(4)
    t, k, r = 16, 4, 3
    tt, name, group = _design(t, k, r)
    is_a = group == "A"
    ni = np.unique(name, return_inverse=True)[1]
    hits = 0
    reps = 2000
    for _ in range(reps):
        h = (rng.normal(0, 0.6, t)[tt] + rng.normal(0, 0.3, 2 * k)[ni] + rng.normal(0, 0.3, (t, 2 * k))[tt, ni]
             + rng.normal(0, 0.8, tt.size))
        f = h - 0.5 * is_a + rng.normal(0, 0.5, tt.size)
        lab = rng.random(tt.size) < 0.3
        res = ppi_difference(f, np.where(lab, h, np.nan), tt, name, group, groups=("A", "B"), pool=None)
        ci = res.confidence_interval(0.95)
        hits += ci.low <= 0.0 <= ci.high
    assert 0.935 <= hits / reps <= 0.97


def test_rogan_gladen_worked_example():
    """p = 0.20 observed, sensitivity 0.90, specificity 0.95: theta = (0.20 + 0.95 - 1) / 0.85 = 0.17647;
    Var = [p(1-p)/n + theta^2 q1(1-q1)/m1 + (1-theta)^2 q0(1-q0)/m0] / J^2 (Lee et al. 2025)."""
    r = rogan_gladen(0.20, 1000, 0.90, 0.95, 100, 200)
    theta = 0.15 / 0.85
    assert r.estimate == pytest.approx(0.176470588235, abs=1e-12)
    var = (0.2 * 0.8 / 1000 + theta ** 2 * 0.09 / 100 + (1 - theta) ** 2 * 0.0475 / 200) / 0.85 ** 2
    assert r.se == pytest.approx(np.sqrt(var), rel=1e-12)
    lo, hi = r.confidence_interval(0.95)
    assert lo == pytest.approx(theta - 1.959963984540054 * np.sqrt(var), rel=1e-9)
    assert rogan_gladen(0.2, 100, 0.4, 0.5, 10, 10).note.startswith("the judge is no better than chance")


def test_rogan_gladen_interval_covers_with_the_calibration_sample():
    """Monte Carlo of the whole procedure (test sample and calibration sample redrawn): 95% coverage,
    while an interval that ignores the calibration sample covers less."""
    rng = np.random.default_rng(5)
    theta, q1, q0, n, m1, m0, reps = 0.3, 0.85, 0.90, 2000, 150, 150, 4000
    p_true = theta * q1 + (1 - theta) * (1 - q0)
    p = rng.binomial(n, p_true, reps) / n
    s1 = rng.binomial(m1, q1, reps) / m1
    s0 = rng.binomial(m0, q0, reps) / m0
    hit = naive = 0
    for i in range(reps):
        r = rogan_gladen(p[i], n, s1[i], s0[i], m1, m0)
        lo, hi = r.confidence_interval(0.95)
        hit += lo <= theta <= hi
        se0 = np.sqrt(p[i] * (1 - p[i]) / n) / (s1[i] + s0[i] - 1)
        naive += abs(r.estimate - theta) <= 1.96 * se0
    assert 0.935 <= hit / reps <= 0.965
    assert naive / reps < 0.85


def test_rogan_gladen_difference_by_group():
    rng = np.random.default_rng(6)
    tt, name, group = _design(10, 3, 4)
    is_a = group == "A"
    truth = (rng.random(tt.size) < 0.4).astype(float)
    # a perfect judge: the corrected difference is the crossed risk difference, with its SE
    r = rogan_gladen_difference(truth, truth, tt, name, group, groups=("A", "B"))
    plain = crossed_difference(truth, tt, name, group, groups=("A", "B"))
    assert r.estimate == pytest.approx(plain.estimate, abs=1e-12)
    assert r.se == pytest.approx(plain.se, abs=1e-12)
    # a judge that misses 30% of group A's yes answers: each group's sensitivity / specificity by hand
    judge = np.where(is_a & (truth == 1) & (rng.random(tt.size) < 0.3), 0.0, truth)
    judge = np.where((truth == 0) & (rng.random(tt.size) < 0.1), 1.0, judge)
    lab = rng.random(tt.size) < 0.5
    r = rogan_gladen_difference(judge, np.where(lab, truth, np.nan), tt, name, group, groups=("A", "B"))
    raw = crossed_difference(judge, tt, name, group, groups=("A", "B"))
    want = []
    for g, mean in (("A", raw.mean_a), ("B", raw.mean_b)):
        m = lab & (group == g)
        q1 = judge[m & (truth == 1)].mean()
        q0 = 1 - judge[m & (truth == 0)].mean()
        assert r.by_group[g].sensitivity == pytest.approx(q1) and r.by_group[g].specificity == pytest.approx(q0)
        want.append((mean + q0 - 1) / (q0 + q1 - 1))
    assert r.estimate == pytest.approx(want[0] - want[1], abs=1e-12)
    assert r.se > plain.se * 0.5 and np.isfinite(r.df)
    with pytest.raises(ValueError, match="0/1"):
        rogan_gladen_difference(judge + 0.5, truth, tt, name, group)


def test_labels_needed_by_hand_and_by_monte_carlo():
    """n = 4 s^2 / ((h/z)^2 - se^2 + 4 s^2 / N); with that many labels (half per group, lambda = 1) the
    PPI difference's SD over a Monte Carlo is h / z."""
    from fairpair.stats import labels_needed

    z = 1.959963984540054
    assert labels_needed(0.2, 0.8) == pytest.approx(4 * 0.64 / (0.2 / z) ** 2)
    assert labels_needed(0.2, 0.8, se_judge=0.05, n_answers=2000) == pytest.approx(
        4 * 0.64 / ((0.2 / z) ** 2 - 0.05 ** 2 + 4 * 0.64 / 2000))
    assert labels_needed(0.1, 0.8, se_judge=0.06) == float("inf")
    with pytest.raises(ValueError):
        labels_needed(0.0, 0.8)
    rng = np.random.default_rng(7)
    big_n, s, h = 2000, 0.8, 0.25
    n = int(round(labels_needed(h, s, n_answers=big_n)))
    group = np.repeat([0, 1], big_n // 2)
    f = rng.normal(size=big_n)  # the judge's scores fixed; the residuals and the sample vary
    est = []
    for _ in range(3000):
        resid = rng.normal(0, s, big_n)
        lab = np.zeros(big_n, bool)
        for g in (0, 1):
            lab[rng.choice(np.nonzero(group == g)[0], n // 2, replace=False)] = True
        y = ppi_values(f, np.where(lab, f + resid, np.nan), lam=1.0, inclusion=np.full(big_n, n / big_n))
        est.append(y[group == 0].mean() - y[group == 1].mean() - (resid[group == 0].mean() - resid[group == 1].mean()))
    assert np.std(est) == pytest.approx(h / z, rel=0.05)


def test_crossfit_lambda_comes_from_the_other_fold():
    from fairpair.stats import ppi_crossfit

    rng = np.random.default_rng(8)
    tt, name, group = _design(8, 3, 2)
    f = rng.normal(size=tt.size)
    h = np.where(rng.random(tt.size) < 0.4, f + rng.normal(0, 0.5, tt.size), np.nan)
    pi = np.full(tt.size, 0.4)
    lam = ppi_crossfit(f, h, group, tt % 2, inclusion=pi)
    for k in (0, 1):
        other = tt % 2 != k
        assert np.all(lam[tt % 2 == k] == ppi_tuning(f[other], h[other], group[other], inclusion=pi[other]))
    assert np.all(ppi_crossfit(f, h, group, np.zeros(tt.size, int), inclusion=pi) == ppi_tuning(f, h, group,
                                                                                                    inclusion=pi))
