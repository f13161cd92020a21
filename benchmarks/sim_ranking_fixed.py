"""Simulation: the ranking verdicts with ``generalize: {templates: fixed}`` (one posting, or these postings).

Whole ranking audits from :func:`fairpair.analysis._simranking.simulate_ranking_frame` (a
Plackett-Luce answer per request, the groups' order a Latin square over slots), every request its
own name set (as in a published hiring audit: ``variant`` = the request), no template x group
effect (so "these postings" and "postings like these" share one truth), through
:func:`fairpair.analysis.analyze_ranking` with ``templates="fixed"``.

Printed per design, two tables:

* pairs (top pick): the family-wise share of audits with a false ``fail`` among the pairs of equal
  groups (Holm over all pairs), the per-pair false-fail share, the coverage of the 95% interval of
  every pair's top-pick difference against the planted value
  (:func:`~fairpair.analysis._simranking.true_values`), and the share of planted-difference pairs
  that fail (power);
* four-fifths ratios (the stratified ratio of :func:`fairpair.stats.ratio_to_best`): the share of
  audits where a group whose true ratio to the most selected group is at least 0.8 fails (the
  boundary designs plant one group at exactly 0.8: its fail share is the test's level), the
  coverage of the 95% interval of every group's ratio, and the share of groups planted below 0.7
  that fail (power). The ratio to the best takes the most selected group from the data, so its
  interval is Hsu's (1984) constrained one (Bonferroni over the candidates for the best, capped at
  1): conservative by design. The stratified log-ratio interval it is built from is checked on
  its own: ``pairwise coverage`` is that of :func:`fairpair.stats.selection_ratio`'s 95% interval
  of every group's rate over g1's (a reference fixed in advance) against the planted ratio;
* all groups and slots (``--tests``): the share of audits where the stratified Hotelling F
  (:func:`fairpair.stats.stratified_k_test`) rejects equal top-pick rates over the groups (its level
  in the designs without bias, power in the others) and over the slots (no design plants a slot
  effect: its level), the same for the slots' mean ranks, the coverage of every slot's 95% top-pick
  rate interval, and the share of four-fifths rows whose verdict interval reads as the verdict
  (above 0.8 exactly when pass, below exactly when fail; must be 1).

Goals: false fails <= 5%, coverage 93.5-96.5%.

Since 2026-12-04 the frames keep the simulated names (``variant``), so the analysis sees a name that recurs
over requests (``name_draw="random"`` rows, and the name positions shared by the 4-posting rows) as the random
factor it is (:mod:`fairpair.stats._sharednames`). Rows 10-13 (2026-12-05) are null designs with names drawn
per request and strong name effects, for ``--tests``: the test over all groups counts the shared names, the
slots need not; rows whose label starts "T random" are analysed with ``templates="random"`` instead
(the multiway F of :func:`fairpair.stats._ranking.multiway_k_test`, the slots on the template means).

Usage: ``nice -n 10 python benchmarks/sim_ranking_fixed.py [--audits 300] [--only 6 7] [--tests]``
"""

from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import replace

import numpy as np

from fairpair.analysis import analyze_ranking
from fairpair.analysis._simranking import RankingScenario, audit_outcomes, simulate_ranking_frame, true_values
from fairpair.stats import selection_ratio
from fairpair.stats._sharednames import name_clusters


def worth_for_ratio(sc: RankingScenario, group: int, ratio: float) -> RankingScenario:
    """``sc`` with ``group``'s log-worth moved so that its true top-pick ratio to the best is ``ratio``."""
    lo, hi = -3.0, 0.0
    for _ in range(20):  # bisection on the Monte Carlo truth (common random numbers: monotone in the worth)
        mid = (lo + hi) / 2
        w = list(sc.group_worth)
        w[group] = mid
        r = true_values(replace(sc, group_worth=tuple(w)), draws=200_000)["ratio"][group]
        lo, hi = (mid, hi) if r < ratio else (lo, mid)
    w = list(sc.group_worth)
    w[group] = (lo + hi) / 2
    return replace(sc, group_worth=tuple(w))


def run(sc: RankingScenario, audits: int, seed: int, templates: str = "fixed") -> dict[str, float]:
    tv = true_values(sc)
    truth, true_ratio = tv["group_rate"], tv["ratio"]
    worth = np.asarray(sc.group_worth)
    fw = fails = covered = total = power_hits = power_n = null_n = 0
    r_fw = r_cov = r_total = r_pow = r_pow_n = r_boundary = r_boundary_n = 0
    boundary = [g for g in range(sc.k) if abs(true_ratio[g] - 0.8) < 0.005]
    p_cov = p_total = 0
    tests = {"groups": 0, "slots_top": 0, "slots_rank": 0}
    slot_hits: list[float] = []
    agree = rows_n = 0
    for i in range(audits):
        frame = simulate_ranking_frame(sc, np.random.default_rng(seed + i))
        res = analyze_ranking(frame, templates=templates, secondary=False)
        any_false = False
        for c in res.pairs:
            if c.measure != "top_pick":
                continue
            a, b = (int(g[1:]) - 1 for g in (c.group_a, c.group_b))
            if c.ci and None not in c.ci:
                total += 1
                covered += c.ci[0] <= truth[a] - truth[b] <= c.ci[1]
            if worth[a] == worth[b]:
                null_n += 1
                if c.verdict == "fail":
                    fails += 1
                    any_false = True
            else:
                power_n += 1
                power_hits += c.verdict == "fail"
        fw += any_false
        ratio_false = False
        for r in res.ratios:
            g = int(r.group[1:]) - 1
            if r.ci is not None and None not in r.ci:
                r_total += 1
                r_cov += r.ci[0] - 1e-12 <= true_ratio[g] <= r.ci[1] + 1e-12
            if true_ratio[g] >= 0.8 - 0.005 and r.verdict == "fail":
                ratio_false = True
            if g in boundary:
                r_boundary_n += 1
                r_boundary += r.verdict == "fail"
            if true_ratio[g] < 0.7:
                r_pow_n += 1
                r_pow += r.verdict == "fail"
        r_fw += ratio_false
        out = audit_outcomes(res, tv)
        tests["groups"] += bool(out["omnibus"])
        tests["slots_top"] += bool(out["position_top"])
        tests["slots_rank"] += bool(out["position_rank"])
        slot_hits += [h for h in out["slot_rate"] if not math.isnan(h)]
        for r in res.ratios:
            if r.verdict_ci is not None and None not in r.verdict_ci:
                rows_n += 1
                lo, hi = r.verdict_ci
                agree += (r.verdict == "pass") == (lo > 0.8) and (r.verdict == "fail") == (hi < 0.8)
        wide = frame.pivot(index="case_id", columns="group", values="top")
        tmpl = frame.drop_duplicates("case_id").set_index("case_id").loc[wide.index, "template"].to_numpy()
        variants = frame.pivot(index="case_id", columns="group", values="variant").loc[wide.index]
        names = name_clusters(tmpl, np.column_stack([np.unique(variants[c], return_inverse=True)[1]
                                                     for c in variants.columns]))
        for g in range(1, sc.k):
            sr = selection_ratio(wide.to_numpy(), tmpl, names, columns=(g, 0), templates=templates)
            ci = sr.confidence_interval(0.95)
            if np.isfinite(ci.low):
                p_total += 1
                p_cov += ci.low <= truth[g] / truth[0] <= ci.high
    return {"fw_false_fail": fw / audits, "pair_false_fail": fails / max(null_n, 1),
            "coverage": covered / max(total, 1), "power": power_hits / max(power_n, 1), "n_cov": total,
            "ratio_false_fail": r_fw / audits, "ratio_coverage": r_cov / max(r_total, 1), "ratio_n_cov": r_total,
            "ratio_boundary": r_boundary / r_boundary_n if r_boundary_n else math.nan,
            "ratio_power": r_pow / r_pow_n if r_pow_n else math.nan,
            "pairwise_coverage": p_cov / max(p_total, 1), "pairwise_n": p_total,
            **{f"test_{k}": v / audits for k, v in tests.items()},
            "slot_coverage": float(np.mean(slot_hits)) if slot_hits else math.nan, "slot_n": len(slot_hits),
            "verdict_ci_agrees": agree / max(rows_n, 1)}


def designs() -> list[tuple[str, RankingScenario]]:
    flat = dict(sd_name=0.3, sd_template_group=0.0, sd_template_name=0.0, reps=1)
    one = RankingScenario(k=4, templates=1, names=400, **flat)
    four = RankingScenario(k=4, templates=4, names=100, **flat)
    eight = RankingScenario(k=8, templates=1, names=1000, group_worth=(0.0,) * 8, slot_worth=(0.0,) * 8, **flat)
    return [
        ("1 posting x 400 requests, no bias", one),
        ("1 posting x 400 requests, g1 +0.5", replace(one, group_worth=(0.5, 0, 0, 0))),
        ("4 postings x 100 requests, no bias", four),
        ("4 postings x 100 requests, g1 +0.5", replace(four, group_worth=(0.5, 0, 0, 0))),
        ("1 posting x 1000, g2 at ratio 0.8", worth_for_ratio(replace(one, names=1000), 1, 0.8)),
        ("4 postings x 250, g2 at ratio 0.8", worth_for_ratio(replace(four, names=250), 1, 0.8)),
        ("8 groups, 1 x 1000, g2 0.8, g3 0.6", worth_for_ratio(worth_for_ratio(eight, 1, 0.8), 2, 0.6)),
        # names reused: each group's name drawn per request from 100 names (each in about 10 requests, in
        # different company), as a published audit's lists: the names are a random factor shared by requests
        ("1 x 1000, names drawn from 100, g2 at 0.8",
         worth_for_ratio(replace(one, names=100, reps=10, name_draw="random"), 1, 0.8)),
        ("1 x 1000, names drawn from 20 (sd 0.5), null",
         replace(one, names=20, reps=50, name_draw="random", sd_name=0.5)),
        ("8 groups, 1 x 1000, names drawn from 25, g2 0.8",
         worth_for_ratio(replace(eight, names=25, reps=40, name_draw="random"), 1, 0.8)),
        # names drawn per request with strong name effects and no bias at all, for the all-group and slot tests
        # (``--tests``): templates fixed, and (rows marked "T random") analysed with templates random
        ("4 x 250, names drawn from 10 (sd 0.6), null", replace(four, names=10, reps=25, name_draw="random",
                                                                sd_name=0.6)),
        ("3 groups, 1 x 600, names from 8 (sd 0.6), null",
         RankingScenario(k=3, templates=1, names=8, reps=75, name_draw="random", sd_name=0.6,
                         group_worth=(0.0,) * 3, slot_worth=(0.0,) * 3, sd_template_group=0.0,
                         sd_template_name=0.0)),
        ("T random: 10 x 96, names from 8 (sd 0.6), null",
         replace(four, templates=10, names=8, reps=12, name_draw="random", sd_name=0.6)),
        ("T random: 10 x 100, names from 20 (sd 0.5), null",
         replace(four, templates=10, names=20, reps=5, name_draw="random", sd_name=0.5)),
    ]


def estimand(label: str) -> str:
    """The templates estimand a design is analysed with: rows labelled "T random" random, the others fixed."""
    return "random" if label.startswith("T random") else "fixed"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=300)
    ap.add_argument("--only", type=int, nargs="*", help="run only these designs (0-based indices)")
    ap.add_argument("--tests", action="store_true", help="print the all-groups / slots table instead")
    args = ap.parse_args()
    if args.tests:
        return main_tests(args)
    print(f"{args.audits} audits per design; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start")
    print(f"{'design':38s} {'FW false fail':>13s} {'pair false fail':>15s} {'coverage':>14s} {'power':>6s} | "
          f"{'ratio false fail':>16s} {'at 0.8':>6s} {'ratio coverage':>14s} {'power':>6s} "
          f"{'pairwise coverage':>17s} {'s':>5s}")
    for i, (name, sc) in enumerate(designs()):
        if args.only and i not in args.only:
            continue
        t0 = time.perf_counter()
        r = run(sc, args.audits, seed=1000, templates=estimand(name))

        def se(p: float, n: int) -> float:
            return math.sqrt(max(p * (1 - p), 1e-12) / max(n, 1))

        print(f"{name:38s} {r['fw_false_fail']:6.3f} ({se(r['fw_false_fail'], args.audits):.3f}) "
              f"{r['pair_false_fail']:15.3f} {r['coverage']:6.3f} ({se(r['coverage'], r['n_cov']):.3f}) "
              f"{r['power']:6.3f} | {r['ratio_false_fail']:8.3f} ({se(r['ratio_false_fail'], args.audits):.3f}) "
              f"{r['ratio_boundary']:6.3f} {r['ratio_coverage']:6.3f} ({se(r['ratio_coverage'], r['ratio_n_cov']):.3f})"
              f" {r['ratio_power']:6.3f} {r['pairwise_coverage']:9.3f}"
              f" ({se(r['pairwise_coverage'], r['pairwise_n']):.3f})"
              f" {time.perf_counter() - t0:5.0f}", flush=True)
    print(f"load {os.getloadavg()[0]:.1f} at the end")


def main_tests(args: argparse.Namespace) -> None:
    print(f"{args.audits} audits per design; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start")
    print(f"{'design':38s} {'groups F p<.05':>14s} {'slots F p<.05':>13s} {'slot ranks':>10s} "
          f"{'slot coverage':>16s} {'verdict CI agrees':>17s} {'s':>5s}")
    for i, (name, sc) in enumerate(designs()):
        if args.only and i not in args.only:
            continue
        t0 = time.perf_counter()
        r = run(sc, args.audits, seed=1000, templates=estimand(name))
        se = math.sqrt(max(r["slot_coverage"] * (1 - r["slot_coverage"]), 1e-12) / max(r["slot_n"], 1))
        print(f"{name:38s} {r['test_groups']:14.3f} {r['test_slots_top']:13.3f} {r['test_slots_rank']:10.3f} "
              f"{r['slot_coverage']:8.3f} ({se:.3f}) {r['verdict_ci_agrees']:17.3f} {time.perf_counter() - t0:5.0f}",
              flush=True)
    print(f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
