"""Tan & Lee's persona dispersion with and without the noise correction, by simulation.

Each simulated study has one axis of 3 SUB x 3 RES identities (9 cells), ``S``
scenes crossed with every cell, a scene effect (SD 0.05) and answer noise
(SD 0.1, or 0.2 under one condition): ``value = 0.3 + scene + cell + noise``.

Rows:

* **bias** -- no cell effects, or cell effects of SD 0.02: the mean raw SD
  (``fairpair.stats.dispersion``, ddof=1) and the mean noise-corrected SD
  (``fairpair.stats.corrected_dispersion``) against the true cell SD, with
  the coverage of their 95% scene-bootstrap intervals (299 resamples);
* **size** -- two power conditions over the same (matched) scenes, the same
  cell effects (none) under both, answer noise 0.1 vs 0.2: the share of
  matched-scene permutation tests (199 swaps) with p < 0.05, raw vs
  corrected (5% is the goal).

Usage: ``python benchmarks/sim_dispersion.py [--studies N]`` (default 400 per row).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from fairpair.stats import (
    cell_means,
    corrected_dispersion,
    dispersion,
    dispersion_bootstrap,
    dispersion_permutation_test,
)

SUBS = ["a", "b", "c"]
RES = ["x", "y", "z"]


def study(rng, scenes, cell_sd, noise, conditions=("none",)):
    cells = [(s, r) for s in SUBS for r in RES]
    eff = rng.normal(0.0, cell_sd, len(cells)) if cell_sd > 0 else np.zeros(len(cells))
    true_sd = float(np.std(eff, ddof=1)) if cell_sd > 0 else 0.0
    cols = {k: [] for k in ("scene", "axis", "sub", "res", "condition", "value")}
    for cond in conditions:
        sd = noise[cond] if isinstance(noise, dict) else noise
        for s in range(scenes):
            u = rng.normal(0.0, 0.05)
            vals = 0.3 + u + eff + rng.normal(0.0, sd, len(cells))
            for (a, b), v in zip(cells, vals, strict=True):
                cols["scene"].append(f"s{s}")
                cols["axis"].append("race")
                cols["sub"].append(a)
                cols["res"].append(b)
                cols["condition"].append(cond)
                cols["value"].append(float(v))
    return {k: np.array(v, dtype=object if k != "value" else float) for k, v in cols.items()}, true_sd


def mc(p, n):
    return math.sqrt(max(p * (1 - p), 1e-12) / n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=400)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.studies
    t0 = time.perf_counter()
    print("| scenes | cell SD (true) | studies | mean raw SD | mean corrected SD | raw CI covers "
          "| corrected CI covers |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for cell_sd in (0.0, 0.02):
        for scenes in (5, 10, 20, 80):
            raw, cor, cov_r, cov_c, truth = [], [], 0, 0, []
            for k in range(n):
                data, true_sd = study(rng, scenes, cell_sd, 0.1)
                truth.append(true_sd)
                raw.append(dispersion(cell_means(data), ddof=1).statistic)
                cor.append(corrected_dispersion(data).statistic)
                br = dispersion_bootstrap(data, ddof=1, n_resamples=299, seed=k)
                bc = dispersion_bootstrap(data, ddof=1, n_resamples=299, seed=k, corrected=True)
                cov_r += br.ci.low <= true_sd <= br.ci.high
                cov_c += bc.ci.low <= true_sd <= bc.ci.high
            print(f"| {scenes} | {cell_sd:.2f} ({np.mean(truth):.3f}) | {n} | {np.mean(raw):.4f} "
                  f"| {np.mean(cor):.4f} | {cov_r / n:.2f} | {cov_c / n:.2f} |", flush=True)
    print()
    print("| scenes | noise SD by condition | studies | raw test rejects (MC SE) | corrected test rejects (MC SE) |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for scenes in (5, 20, 80):
        rr = rc = 0
        for k in range(n):
            data, _ = study(rng, scenes, 0.0, {"power": 0.2, "none": 0.1}, conditions=("power", "none"))
            kw = dict(ddof=1, conditions=("power", "none"), n_resamples=199, seed=k)
            rr += dispersion_permutation_test(data, **kw).pvalue < 0.05
            rc += dispersion_permutation_test(data, corrected=True, **kw).pvalue < 0.05
        print(f"| {scenes} | 0.2 vs 0.1 | {n} | {rr / n:.3f} ({mc(rr / n, n):.3f}) "
              f"| {rc / n:.3f} ({mc(rc / n, n):.3f}) |", flush=True)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
