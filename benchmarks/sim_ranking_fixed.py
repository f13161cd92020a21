"""Simulation: the ranking verdicts with ``generalize: {templates: fixed}`` (one posting, or these postings).

Whole ranking audits from :func:`fairpair.analysis._simranking.simulate_ranking_frame` (a
Plackett-Luce answer per request, the groups' order a Latin square over slots), every request its
own name set (as in a published hiring audit: ``variant`` = the request), no template x group
effect (so "these postings" and "postings like these" share one truth), through
:func:`fairpair.analysis.analyze_ranking` with ``templates="fixed"``. Printed per design: the
family-wise share of audits with a false ``fail`` among the pairs of equal groups (Holm over all
pairs), the per-pair false-fail share, the coverage of the 95% interval of every pair's top-pick
difference against the planted value (:func:`~fairpair.analysis._simranking.true_values`), and the
share of planted-difference pairs that fail (power). Goals: false fails <= 5%, coverage 93.5-96.5%.

Usage: ``nice -n 10 python benchmarks/sim_ranking_fixed.py [--audits 300]``
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

from fairpair.analysis import analyze_ranking
from fairpair.analysis._simranking import RankingScenario, simulate_ranking_frame, true_values


def run(sc: RankingScenario, audits: int, seed: int) -> dict[str, float]:
    truth = true_values(sc)["group_rate"]
    worth = np.asarray(sc.group_worth)
    null_pairs = fw = fails = covered = total = power_hits = power_n = null_n = 0
    for i in range(audits):
        frame = simulate_ranking_frame(sc, np.random.default_rng(seed + i))
        frame["variant"] = frame["case_id"]
        res = analyze_ranking(frame, templates="fixed", secondary=False)
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
        null_pairs += 1
    return {"fw_false_fail": fw / audits, "pair_false_fail": fails / max(null_n, 1),
            "coverage": covered / max(total, 1), "power": power_hits / max(power_n, 1), "n_cov": total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=300)
    args = ap.parse_args()
    designs = [
        ("1 posting x 400 requests, no bias", RankingScenario(k=4, templates=1, names=400, reps=1, sd_name=0.3,
                                                               sd_template_group=0.0, sd_template_name=0.0)),
        ("1 posting x 400 requests, g1 +0.5", RankingScenario(k=4, templates=1, names=400, reps=1, sd_name=0.3,
                                                               group_worth=(0.5, 0, 0, 0), sd_template_group=0.0,
                                                               sd_template_name=0.0)),
        ("4 postings x 100 requests, g1 +0.5", RankingScenario(k=4, templates=4, names=100, reps=1, sd_name=0.3,
                                                                group_worth=(0.5, 0, 0, 0), sd_template_group=0.0,
                                                                sd_template_name=0.0)),
    ]
    print(f"{args.audits} audits per design; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start")
    print(f"{'design':38s} {'FW false fail':>13s} {'pair false fail':>15s} {'coverage':>9s} {'power':>6s} {'s':>5s}")
    for name, sc in designs:
        t0 = time.perf_counter()
        r = run(sc, args.audits, seed=1000)
        se_fw = math.sqrt(max(r["fw_false_fail"] * (1 - r["fw_false_fail"]), 1e-12) / args.audits)
        se_cov = math.sqrt(max(r["coverage"] * (1 - r["coverage"]), 1e-12) / max(r["n_cov"], 1))
        print(f"{name:38s} {r['fw_false_fail']:8.3f} ({se_fw:.3f}) {r['pair_false_fail']:15.3f} "
              f"{r['coverage']:6.3f} ({se_cov:.3f}) {r['power']:6.3f} {time.perf_counter() - t0:5.0f}")
    print(f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
