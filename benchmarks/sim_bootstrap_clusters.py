"""Coverage of the public percentile cluster-bootstrap interval by the number of clusters.

Each simulated data set has ``G`` clusters (templates) of 6 paired differences,
``d = u_g + e``, with a cluster effect ``u_g ~ N(0, 1)`` and a pair error
``e ~ N(0, 1)``; the true mean difference is 0. The nominal 95% percentile
interval of :func:`fairpair.stats.cluster_bootstrap_mean_difference` (999
resamples) is checked for covering 0. The result sets
``fairpair.stats.MIN_CLUSTERS_FOR_INTERVAL`` (below it the public functions
raise ``FewClustersWarning``).

Usage: ``python benchmarks/sim_bootstrap_clusters.py [--reps N]`` (default 600 per row).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

from fairpair.stats import FewClustersWarning, cluster_bootstrap_mean_difference


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=600)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    print("| clusters | data sets | coverage of a nominal 95% percentile interval | MC SE |")
    print("| ---: | ---: | ---: | ---: |")
    for g in (5, 8, 10, 15, 20, 30, 40):
        hits = 0
        for r in range(args.reps):
            cl = np.repeat(np.arange(g), 6)
            d = rng.normal(0.0, 1.0, g)[cl] + rng.normal(0.0, 1.0, cl.size)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FewClustersWarning)
                res = cluster_bootstrap_mean_difference(d, np.zeros_like(d), cl, n_resamples=999, seed=r)
            hits += res.ci.low <= 0.0 <= res.ci.high
        p = hits / args.reps
        print(f"| {g} | {args.reps} | {p:.3f} | {math.sqrt(p * (1 - p) / args.reps):.3f} |", flush=True)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
