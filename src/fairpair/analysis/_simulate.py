"""Pairs-level simulation of audits, for calibrating the analysis (size, power, coverage).

Each simulated audit draws the matched pairs of one two-group comparison the
way the mock target answers (common random numbers: with probability
``correlation`` a case uses the matched set's shared uniform draw, otherwise
its own, independently for each member), with a template-level base rate
``p_t ~ Uniform(rate_low, rate_high)`` for group B and ``p_t - delta`` for
group A, so the true risk difference is exactly ``-delta``. The pairs go
through :func:`fairpair.analysis._paired.analyze_pairs` and
:func:`~fairpair.analysis._paired.finish`: the very code that writes
``results.json``.

Kept for power planning; the calibration of the verdicts is ``benchmarks/sim_audits.py``
(:mod:`fairpair.analysis._simaudit`). Each variant pair stands for one name per group, so the
pairs are analysed with names fixed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairpair.analysis._paired import PairData, analyze_pairs, finish

__all__ = ["Scenario", "SimSummary", "simulate", "planned_discordance"]


@dataclass(frozen=True)
class Scenario:
    """A simulated design: ``templates`` clusters of ``per_template`` pairs, a planted ``delta``."""

    templates: int = 20
    per_template: int = 15  # 3 variant pairs x 5 repetitions: the seed's starting size
    delta: float = 0.0
    rate_low: float = 0.6
    rate_high: float = 0.8
    correlation: float = 0.6
    margin: float | None = None
    alpha: float = 0.05
    n_resamples: int = 1000


@dataclass(frozen=True)
class SimSummary:
    """Rates over ``n_audits`` simulated audits of one scenario."""

    n_audits: int
    reject_rate: float  # share with p < alpha (the pre-registered test)
    fail_rate: float  # share with verdict "fail"
    pass_rate: float
    coverage: float  # share of (1 - alpha) bootstrap CIs containing the true difference -delta
    mean_discordance: float


def planned_discordance(s: Scenario, n_grid: int = 2001) -> float:
    """Expected share of discordant pairs under the scenario (for power planning)."""
    p = np.linspace(s.rate_low, s.rate_high, n_grid)
    pa, pb = np.clip(p - s.delta, 0, 1), p
    both_shared = s.correlation**2
    disc = both_shared * np.abs(pa - pb) + (1 - both_shared) * (pa * (1 - pb) + pb * (1 - pa))
    return float(disc.mean())


def _draw(s: Scenario, rng: np.random.Generator) -> PairData:
    n = s.templates * s.per_template
    cl = np.repeat(np.arange(s.templates), s.per_template)
    pt = rng.uniform(s.rate_low, s.rate_high, s.templates)[cl]
    shared = rng.random(n)
    ua = np.where(rng.random(n) < s.correlation, shared, rng.random(n))
    ub = np.where(rng.random(n) < s.correlation, shared, rng.random(n))
    x = (ua < pt - s.delta).astype(float)
    y = (ub < pt).astype(float)
    return PairData(x, y, cl, np.zeros(n, dtype=np.intp), ("v",))


def simulate(s: Scenario, n_audits: int, *, seed: int = 0) -> SimSummary:
    """Run ``n_audits`` audits of scenario ``s``; deterministic for a given ``seed``."""
    rng = np.random.default_rng(seed)
    rej = fail = ok = cover = 0
    disc = 0.0
    for k in range(n_audits):
        pd = _draw(s, rng)
        pa = analyze_pairs(pd, scale="binary", alpha=s.alpha, confidence_level=1 - s.alpha, exact_threshold=25,
                           n_resamples=s.n_resamples, seed=k, heterogeneity=False, names="fixed")
        res = finish(pa, pvalue_adjusted=pa.pvalue, correction="none", family_size=1, margin=s.margin,
                     alpha=s.alpha, id="sim", target="sim", measure="m", attribute="a", design="d", group_a="A",
                     group_b="B", primary=True)
        rej += res.pvalue is not None and res.pvalue < s.alpha
        fail += res.verdict == "fail"
        ok += res.verdict == "pass"
        lo, hi = pa.ci_alpha if pa.ci_alpha is not None else (np.nan, np.nan)
        cover += lo <= -s.delta <= hi
        assert res.binary is not None  # a binary measure always has its discordant counts
        disc += (res.binary.b + res.binary.c) / res.n_pairs
    return SimSummary(n_audits, rej / n_audits, fail / n_audits, ok / n_audits, float(cover) / n_audits,
                      float(disc) / n_audits)
