"""Whole-audit simulation of the ranking design's statistics (issue 17), frame level.

Each row simulates ``--audits`` audits of one scenario with
:mod:`fairpair.analysis._simranking` (Plackett-Luce answers with a group
worth -- the planted selection bias --, a slot worth -- the planted position
bias --, name, template x group and template x name random effects shared by
the repetitions of a prompt; k candidates, the sets expanded as the
``ranking`` design does: one per template x repetition x name position, the
order rotating over a cyclic Latin square) and runs each through
:func:`fairpair.analysis.analyze_ranking` (names random, alpha 0.05).
The planted values are the names-random population values (Monte Carlo,
400,000 sets). Columns:

* rejection shares (level with no bias, power with it): ``omni`` (the
  crossed quasi-F of equal selection rates), ``cochran`` and ``friedman``
  (over the sets, treating them as independent: secondary), ``pos`` (the
  crossed test of equal top-pick rates by slot), ``pairF`` (any pairwise
  top-pick ``fail`` after Holm), ``aboveF`` (any ranked-above ``fail``),
  ``ratioF`` (any four-fifths ``fail``);
* coverage of the 95% intervals (mean over the groups / slots / pairs):
  ``cov_rate`` (selection rates), ``cov_slot`` (top-pick rate by slot),
  ``cov_srank`` (mean rank by slot), ``cov_ratio`` (ratio to the most
  selected group), ``cov_pair`` (top-pick differences), ``cov_above``
  (ranked-above preferences);
* the issue's criterion on the first 20 audits (seeds) of each row:
  ``rate19`` / ``slot19`` the smallest number of those 20 in which a planted
  selection rate / slot rate lies inside its interval (goal >= 19).

Monte Carlo standard error of a share p over n audits: sqrt(p(1-p)/n)
(about 1.5 points at 95% and 200 audits).

Usage: ``nice -n 10 python benchmarks/sim_ranking.py [--audits 200] [--only SUBSTRING] [--seed 17]``
"""

from __future__ import annotations

import argparse
import os
import time

from fairpair.analysis._simranking import RankingScenario, run_scenario, true_values

ROWS = [
    ("no bias, k=4, 10 templates x 5 names x 4 reps", RankingScenario()),
    ("no bias, strong name effects (sd 0.6)", RankingScenario(sd_name=0.6, sd_template_name=0.4)),
    ("no bias, k=3, 8 templates x 6 names x 3 reps", RankingScenario(k=3, templates=8, names=6, reps=3,
                                                                      group_worth=(0, 0, 0), slot_worth=(0, 0, 0))),
    ("selection bias (worth 0.6)", RankingScenario(group_worth=(0.6, 0.0, 0.0, 0.0))),
    ("position bias (slot worth 0.5, 0.2)", RankingScenario(slot_worth=(0.5, 0.2, 0.0, 0.0))),
    ("both biases, 10% unparsed", RankingScenario(group_worth=(0.6, 0.0, 0.0, 0.0), slot_worth=(0.5, 0.2, 0.0, 0.0),
                                                  unparsed=0.1)),
    ("both biases, 20 templates x 8 names x 4 reps", RankingScenario(group_worth=(0.6, 0.0, 0.0, 0.0),
                                                                     slot_worth=(0.5, 0.2, 0.0, 0.0), templates=20,
                                                                     names=8)),
    # a published audit's lists: each group's name drawn per request from 8, so a name recurs in sets with
    # other names (the names a random factor beyond the name sets)
    ("no bias, names drawn per request (8 a group, sd 0.6)", RankingScenario(names=8, sd_name=0.6,
                                                                             name_draw="random")),
    ("selection bias, names drawn per request (8 a group, sd 0.6)",
     RankingScenario(names=8, sd_name=0.6, group_worth=(0.6, 0.0, 0.0, 0.0), name_draw="random")),
]

COLS = ("omnibus", "cochran", "friedman", "position_top", "pair_top_fail", "pair_above_fail", "ratio_fail",
        "group_rate", "slot_rate", "slot_rank", "ratio", "pair_top", "pair_above")
HEAD = ("omni", "cochran", "friedman", "pos", "pairF", "aboveF", "ratioF", "cov_rate", "cov_slot", "cov_srank",
        "cov_ratio", "cov_pair", "cov_above")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=200, help="audits per row (default 200; the first 20 also give "
                                                           "the 19-of-20 criterion)")
    ap.add_argument("--only", default=None, help="only rows whose label contains this")
    ap.add_argument("--seed", type=int, default=17)
    args = ap.parse_args()
    t0 = time.perf_counter()
    load = os.getloadavg()[0]
    print(f"# sim_ranking.py --audits {args.audits} --seed {args.seed}; load {load:.1f}")
    print("| scenario | " + " | ".join(HEAD) + " | rate19 | slot19 |")
    print("|" + "---|" * (len(HEAD) + 3))
    for i, (label, sc) in enumerate(ROWS):
        if args.only and args.only not in label:
            continue
        truth = true_values(sc)
        first = run_scenario(sc, min(20, args.audits), seed=args.seed + 1000 * i, truth=truth)
        rest = (run_scenario(sc, args.audits - 20, seed=args.seed + 1000 * i + 1, truth=truth)
                if args.audits > 20 else None)
        n = args.audits
        cells = []
        for key in COLS:
            v = first[key] * first["audits"] + (rest[key] * rest["audits"] if rest else 0.0)
            cells.append(f"{100 * v / n:.1f}")
        r19 = min(first["hits"]["group_rate"])
        s19 = min(first["hits"]["slot_rate"])
        print(f"| {label} | " + " | ".join(cells) + f" | {r19} | {s19} |", flush=True)
    print(f"# {time.perf_counter() - t0:.0f} s wall, load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
