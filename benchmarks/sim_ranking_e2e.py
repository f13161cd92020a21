"""Whole ranking audits against the mock, 20 seeds: are the planted biases recovered? (issue 17)

Each seed runs the real pipeline (expand -> run against the ``mock`` target
in its ranking mode -> the ``ranking`` measure parsing the answers ->
``analyze_run``) on a ranking battery: k = 4 groups, one candidate per group
in each prompt, 8 templates x 6 names per group x 8 repetitions (384
prompts; the groups placed by a Williams Latin square, 2 passes over its 4
orders), 3% unparsed answers (refusals), mixed answer styles. Planted:
selection weights g1 1.0, g2 0.45, g3 1.0, g4 0.6 and slot weights 1.8, 1,
1, 1 (Plackett-Luce). The truth is exact (:func:`fairpair.testing._ranking.true_rates`).

A seed recovers both biases when (a) every group's selection-rate interval
and every slot's top-pick interval holds its true value, the 8 intervals at
the simultaneous level 1 - 0.05/8 (Bonferroni, so that the 8 together cover
with at least 95%), and (b) the omnibus test of equal selection rates and
the F test of equal slots both reject at 0.05. Done when: at least 19 of 20.

Run: ``nice -n 10 python benchmarks/sim_ranking_e2e.py [--seeds 20]``.
(``benchmarks/sim_ranking.py`` is the frame-level simulation of the statistics.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import yaml

from fairpair.analysis import analyze_run
from fairpair.battery import load_battery
from fairpair.measures import measure_run
from fairpair.run import RunSettings, execute_run
from fairpair.testing._ranking import ranking_battery, recovery

SELECTION = {"g1": 1.0, "g2": 0.45, "g3": 1.0, "g4": 0.6}
POSITION = [1.8, 1.0, 1.0, 1.0]


def one(seed: int, tmp: Path):
    b = ranking_battery(k=4, templates=8, names=6, repetitions=8, seed=seed, selection=SELECTION,
                        position=POSITION, confidence_level=1 - 0.05 / 8, unparsed=0.03)
    p = tmp / f"rk{seed}.yaml"
    p.write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False), encoding="utf-8")
    run = tmp / f"run{seed}"
    execute_run(load_battery(p), run, RunSettings(concurrency=16))
    measure_run(run)
    r = analyze_run(run).rankings[0]
    return recovery(r, b), r


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args()
    t0 = time.time()
    ok = 0
    counts = {"selection_covered": 0, "position_covered": 0, "selection_detected": 0, "position_detected": 0}
    with tempfile.TemporaryDirectory() as d:
        for seed in range(1, args.seeds + 1):
            rec, r = one(seed, Path(d))
            ok += rec.recovered
            for k in counts:
                counts[k] += getattr(rec, k)
            rates = " ".join(f"{s['group']}={s['rate']:.3f}" for s in r["selection"])
            slots = " ".join(f"{s['top_rate']:.3f}" for s in r["position"]["slots"])
            print(f"seed {seed:2d}: recovered={rec.recovered} unparsed={rec.n_unparsed} rates {rates} | "
                  f"top by slot {slots}", flush=True)
    n = args.seeds
    print(f"recovered in {ok}/{n} seeds (goal >= {n - n // 20}); " +
          ", ".join(f"{k} {v}/{n}" for k, v in counts.items()) + f"; {time.time() - t0:.0f} s")
    return 0 if ok >= n - n // 20 else 1


if __name__ == "__main__":
    sys.exit(main())
