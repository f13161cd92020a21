"""Whole-audit simulation of the ranking design: Plackett-Luce answers under crossed dependence.

Each simulated audit has ``templates`` templates, ``k`` groups with
``names`` names each (the same names in every template), and, in every
template, one matched set per (name index, Latin-square row, repetition):
group g's candidate is its ``n``-th name, the groups' order is row ``j`` of
the cyclic Latin square (group g in slot ``(g + j) mod k``), and each such
prompt is asked ``reps`` times (nested repetitions). The answer is a
ranking drawn from a Plackett-Luce model (Plackett 1975; Luce 1959) with
log-worth::

    log w = beta_g + gamma_s + b_n + u_{t,g} + c_{t,n}

group worth ``beta`` (the planted selection bias), slot worth ``gamma``
(the planted position bias), a name effect ``b`` shared across templates,
a template x group effect ``u`` and a template x name effect ``c`` shared
by the repetitions of one prompt (so repetitions are correlated). Drawn
with the Gumbel-max trick: the ranking orders ``log w + Gumbel noise``.
An answer is left unparsed with probability ``unparsed``.

The planted truth of the names-random estimand (an audit's population:
new templates, new names) is computed by Monte Carlo over the random
effects (:func:`true_values`). Used by ``benchmarks/sim_ranking.py`` and
its test.

References
----------
Plackett, R. L. (1975). The analysis of permutations. *Applied Statistics*,
24, 193-202. Luce, R. D. (1959). *Individual Choice Behavior*. Wiley.
Gumbel, E. J. (1954). Statistical theory of extreme values. NBS Applied
Mathematics Series 33 (the Gumbel-max trick).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["RankingScenario", "simulate_ranking_frame", "true_values"]


@dataclass(frozen=True)
class RankingScenario:
    """One simulated ranking audit's design and effects (log-worth units; see the module notes)."""

    k: int = 4
    templates: int = 10
    names: int = 5
    reps: int = 1
    group_worth: tuple = field(default_factory=lambda: (0.0, 0.0, 0.0, 0.0))
    slot_worth: tuple = field(default_factory=lambda: (0.0, 0.0, 0.0, 0.0))
    sd_name: float = 0.3
    sd_template_group: float = 0.3
    sd_template_name: float = 0.3
    unparsed: float = 0.0

    def groups(self) -> list[str]:
        return [f"g{i + 1}" for i in range(self.k)]


def _rank_from_scores(scores: np.ndarray) -> np.ndarray:
    """Ranks (1 = highest score) along the last axis."""
    order = np.argsort(-scores, axis=-1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, scores.shape[-1] + 1)[None, :].repeat(scores.shape[0], 0), axis=-1)
    return ranks


def simulate_ranking_frame(sc: RankingScenario, rng: np.random.Generator):
    """One audit's frame: one row per (case_id, group), columns of :data:`~fairpair.analysis._ranking.REQUIRED_COLUMNS`."""
    import pandas as pd

    k, t, n, r = sc.k, sc.templates, sc.names, sc.reps
    beta = np.asarray(sc.group_worth, dtype=float)
    gamma = np.asarray(sc.slot_worth, dtype=float)
    b = rng.normal(0.0, sc.sd_name, size=(k, n))
    u = rng.normal(0.0, sc.sd_template_group, size=(t, k))
    c = rng.normal(0.0, sc.sd_template_name, size=(t, k, n))
    ti, ni, ji, ri = (a.ravel() for a in np.meshgrid(np.arange(t), np.arange(n), np.arange(k), np.arange(r),
                                                      indexing="ij"))
    m = ti.size
    g = np.arange(k)[None, :].repeat(m, 0)  # (m, k) group of column
    slot = (g + ji[:, None]) % k  # 0-based slot of each group
    logw = (beta[None, :] + gamma[slot] + b[g, ni[:, None]] + u[ti][:, :] + c[ti[:, None], g, ni[:, None]])
    scores = logw + rng.gumbel(size=logw.shape)
    rank = _rank_from_scores(scores).astype(float)
    top = (rank == 1).astype(float)
    bad = rng.random(m) < sc.unparsed
    rank[bad] = np.nan
    top[bad] = np.nan
    case = np.array([f"t{a}-n{bb}-j{cc}-r{dd}" for a, bb, cc, dd in zip(ti, ni, ji, ri)])
    groups = np.array(sc.groups())
    return pd.DataFrame({
        "target": "sim", "case_id": case.repeat(k), "template": np.char.add("t", ti.astype(str)).repeat(k),
        "repetition": ri.repeat(k), "group": np.tile(groups, m),
        "variant": np.char.add(np.tile(groups, m), np.char.add("-name", ni.repeat(k).astype(str))),
        "slot": (slot + 1).ravel(), "rank": rank.ravel(), "top": top.ravel()})


def true_values(sc: RankingScenario, *, draws: int = 400_000, seed: int = 12345) -> dict[str, np.ndarray]:
    """Planted population values (names random): per-group and per-slot top-pick rates and mean ranks.

    Monte Carlo over fresh template, name and answer draws, the groups'
    order uniform over the Latin square's rows. Returns arrays
    ``group_rate``, ``group_rank`` (shape (k,)), ``slot_rate``,
    ``slot_rank`` (shape (k,), slot 1 first) and ``ratio`` (group rate
    over the highest group rate).
    """
    rng = np.random.default_rng(seed)
    k = sc.k
    beta = np.asarray(sc.group_worth, dtype=float)
    gamma = np.asarray(sc.slot_worth, dtype=float)
    sd = np.sqrt(sc.sd_name ** 2 + sc.sd_template_group ** 2 + sc.sd_template_name ** 2)
    j = rng.integers(0, k, size=draws)
    slot = (np.arange(k)[None, :] + j[:, None]) % k
    logw = beta[None, :] + gamma[slot] + rng.normal(0.0, sd, size=(draws, k))
    rank = _rank_from_scores(logw + rng.gumbel(size=logw.shape)).astype(float)
    top = rank == 1
    group_rate = top.mean(axis=0)
    slot_rate = np.array([top[slot == s].mean() for s in range(k)])
    slot_rank = np.array([rank[slot == s].mean() for s in range(k)])
    return {"group_rate": group_rate, "group_rank": rank.mean(axis=0), "slot_rate": slot_rate,
            "slot_rank": slot_rank, "ratio": group_rate / group_rate.max()}
