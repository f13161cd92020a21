"""Whole-audit simulation of the ranking design: Plackett-Luce answers under crossed dependence.

Each simulated audit has ``templates`` templates, ``k`` groups with
``names`` names each (the same names in every template) and, as the
``ranking`` design expands, one matched set per (template ``t``, repetition
``r``, name position ``p``): group g's candidate is its ``p``-th name and
the groups' order is row ``(t + r + p) mod k`` of the cyclic Latin square
(group g in slot ``(g + j) mod k``), so over the repetitions every
template and name position goes through the orders. The answer is a
ranking drawn from a Plackett-Luce model (Plackett 1975; Luce 1959) with
log-worth::

    log w = beta_g + gamma_s + b_n + u_{t,g} + c_{t,n}

group worth ``beta`` (the planted selection bias), slot worth ``gamma``
(the planted position bias), a name effect ``b`` shared across templates,
a template x group effect ``u`` and a template x name effect ``c`` shared
shared by every set of one template and name position (so its
repetitions are correlated). Drawn
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
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from fairpair.analysis._ranking import RankingAnalysis

__all__ = ["RankingScenario", "simulate_ranking_frame", "true_values", "run_scenario", "audit_outcomes", "REJECT_KEYS",
           "COVER_KEYS"]


@dataclass(frozen=True)
class RankingScenario:
    """One simulated ranking audit's design and effects (log-worth units; see the module notes)."""

    k: int = 4
    templates: int = 10
    names: int = 5
    reps: int = 4
    group_worth: tuple = field(default_factory=lambda: (0.0, 0.0, 0.0, 0.0))
    slot_worth: tuple = field(default_factory=lambda: (0.0, 0.0, 0.0, 0.0))
    sd_name: float = 0.3
    sd_template_group: float = 0.3
    sd_template_name: float = 0.3
    unparsed: float = 0.0
    #: ``"position"``: name position p holds name p of every group (the ``ranking`` design, names repeat
    #: together); ``"random"``: each group's name drawn per request from its ``names`` names (a published
    #: audit's lists: a name recurs in sets with other names).
    name_draw: str = "position"

    def groups(self) -> list[str]:
        return [f"g{i + 1}" for i in range(self.k)]


def _rank_from_scores(scores: np.ndarray) -> np.ndarray:
    """Ranks (1 = highest score) along the last axis."""
    order = np.argsort(-scores, axis=-1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, scores.shape[-1] + 1)[None, :].repeat(scores.shape[0], 0), axis=-1)
    return ranks


def simulate_ranking_frame(sc: RankingScenario, rng: np.random.Generator):
    """One audit's frame: one row per (case_id, group), columns of
    :data:`~fairpair.analysis._ranking.REQUIRED_COLUMNS`."""
    import pandas as pd

    k, t, n, r = sc.k, sc.templates, sc.names, sc.reps
    beta = np.asarray(sc.group_worth, dtype=float)
    gamma = np.asarray(sc.slot_worth, dtype=float)
    b = rng.normal(0.0, sc.sd_name, size=(k, n))
    u = rng.normal(0.0, sc.sd_template_group, size=(t, k))
    c = rng.normal(0.0, sc.sd_template_name, size=(t, k, n))
    ti, ri, ni = (a.ravel() for a in np.meshgrid(np.arange(t), np.arange(r), np.arange(n), indexing="ij"))
    ji = (ti + ri + ni) % k  # the order of (template, repetition, name position), as the ranking design
    m = ti.size
    g = np.arange(k)[None, :].repeat(m, 0)  # (m, k) group of column
    slot = (g + ji[:, None]) % k  # 0-based slot of each group
    nk = ni[:, None].repeat(k, 1) if sc.name_draw == "position" else rng.integers(0, n, size=(m, k))
    logw = (beta[None, :] + gamma[slot] + b[g, nk] + u[ti][:, :] + c[ti[:, None], g, nk])
    scores = logw + rng.gumbel(size=logw.shape)
    rank = _rank_from_scores(scores).astype(float)
    top = (rank == 1).astype(float)
    bad = rng.random(m) < sc.unparsed
    rank[bad] = np.nan
    top[bad] = np.nan
    case = np.array([f"t{a}-r{dd}-p{bb}" for a, bb, dd in zip(ti, ni, ri, strict=True)])
    groups = np.array(sc.groups())
    return pd.DataFrame({
        "target": "sim", "case_id": case.repeat(k), "template": np.char.add("t", ti.astype(str)).repeat(k),
        "repetition": ri.repeat(k), "group": np.tile(groups, m),
        "variant": np.char.add(np.tile(groups, m), np.char.add("-name", nk.ravel().astype(str))),
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
    above = np.array([[np.mean(rank[:, a] < rank[:, b]) - np.mean(rank[:, b] < rank[:, a]) for b in range(k)]
                      for a in range(k)])
    return {"group_rate": group_rate, "group_rank": rank.mean(axis=0), "slot_rate": slot_rate,
            "slot_rank": slot_rank, "ratio": group_rate / group_rate.max(), "above": above}


#: Statistics tallied by :func:`run_scenario`: rejection (p < alpha or verdict fail) shares.
REJECT_KEYS = ("omnibus", "cochran", "friedman", "position_top", "position_rank", "pair_top_fail",
               "pair_above_fail", "ratio_fail")
COVER_KEYS = ("group_rate", "group_rank", "slot_rate", "slot_rank", "ratio", "pair_top", "pair_above")


def _inside(ci, value) -> float:
    if ci is None or ci[0] is None or ci[1] is None:
        return np.nan
    return float(ci[0] - 1e-12 <= value <= ci[1] + 1e-12)


def audit_outcomes(ra: RankingAnalysis, truth: dict[str, np.ndarray], alpha: float = 0.05) -> dict[str, float | list]:
    """Rejections and interval hits of one :class:`~fairpair.analysis._ranking.RankingAnalysis` against the truth."""
    groups = list(ra.groups)
    gi = {g: int(g[1:]) - 1 for g in groups}
    p = lambda t: (t is not None and t.pvalue is not None and t.pvalue < alpha)  # noqa: E731
    out: dict[str, float | list] = {
        "omnibus": p(ra.omnibus), "cochran": p(ra.cochran), "friedman": p(ra.friedman),
        "position_top": p(ra.position.top_test), "position_rank": p(ra.position.rank_test),
        "pair_top_fail": any(c.verdict == "fail" for c in ra.pairs if c.measure == "top_pick"),
        "pair_above_fail": any(c.verdict == "fail" for c in ra.pairs if c.measure == "ranked_above"),
        "ratio_fail": any(r.verdict == "fail" for r in ra.ratios),
        "insufficient": any(c.verdict == "insufficient design" for c in ra.pairs),
    }
    out["group_rate"] = [_inside(s.rate_ci, truth["group_rate"][gi[s.group]]) for s in ra.selection]
    out["group_rank"] = [_inside(s.mean_rank_ci, truth["group_rank"][gi[s.group]]) for s in ra.selection]
    out["slot_rate"] = [_inside(s.top_rate_ci, truth["slot_rate"][s.slot - 1]) for s in ra.position.slots]
    out["slot_rank"] = [_inside(s.mean_rank_ci, truth["slot_rank"][s.slot - 1]) for s in ra.position.slots]
    out["ratio"] = [_inside(r.ci, truth["ratio"][gi[r.group]]) for r in ra.ratios]
    gr = truth["group_rate"]
    out["pair_top"] = [_inside(c.ci, gr[gi[c.group_a]] - gr[gi[c.group_b]]) for c in ra.pairs
                       if c.measure == "top_pick"]
    out["pair_above"] = [_inside(c.ci, truth["above"][gi[c.group_a], gi[c.group_b]]) for c in ra.pairs
                         if c.measure == "ranked_above"]
    return out


def run_scenario(sc: RankingScenario, audits: int, seed: int, *, names: str = "random", alpha: float = 0.05,
                 truth: dict[str, np.ndarray] | None = None) -> dict[str, object]:
    """``audits`` simulated audits of ``sc`` through :func:`~fairpair.analysis.analyze_ranking`.

    Returns the shares of rejections (:data:`REJECT_KEYS`, plus
    ``insufficient``), the mean coverage of each interval family
    (:data:`COVER_KEYS`), per-value hit counts (``hits``: key -> list, one
    count per group or slot) and ``joint_rates`` / ``joint_slots`` (audits
    where every group rate / slot rate is inside its interval).
    """
    from fairpair.analysis._ranking import analyze_ranking

    truth = truth if truth is not None else true_values(sc)
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(audits):
        frame = simulate_ranking_frame(sc, rng)
        ra = analyze_ranking(frame, names=names, alpha=alpha, secondary=False)
        rows.append(audit_outcomes(ra, truth, alpha))
    res: dict[str, object] = {"audits": audits}
    for key in (*REJECT_KEYS, "insufficient"):
        res[key] = float(np.mean([bool(r[key]) for r in rows]))
    hits = {}
    for key in COVER_KEYS:
        arr = np.array([r[key] for r in rows], dtype=float)
        res[key] = float(np.nanmean(arr)) if np.isfinite(arr).any() else float("nan")
        hits[key] = [int(np.nansum(arr[:, j])) for j in range(arr.shape[1])] if arr.ndim == 2 else []
    res["hits"] = hits
    res["joint_rates"] = int(sum(all(v == 1.0 for v in h) for r in rows if isinstance(h := r["group_rate"], list)))
    res["joint_slots"] = int(sum(all(v == 1.0 for v in h) for r in rows if isinstance(h := r["slot_rate"], list)))
    return res
