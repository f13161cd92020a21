"""Level and power of the scenario-level family on bounded measures: the score test against the pooled t.

One comparison per audit, 20 templates x 10 names per group x 5 repetitions, names random (a name effect
and a template x name effect on the latent scale, SD 0.3 each), and one template in which group A is
treated worse:

* ``rare``: yes/no at 1%; in the biased template group A's rate is ``--rare-rate`` (default 10%); margin
  1 point;
* ``ceiling``: a 1-5 score with ~95% fives (a latent normal cut at -3.5, -3, -2.5, -1.645); in the biased
  template group A's latent mean is ``--ceiling-shift`` lower (default 1.0: ~74% fives, about -0.3
  point); margin 0.1 point.

Each scenario's verdict is that of :func:`fairpair.analysis._paired.finish`'s scenario block (Holm over
the 20 templates against 0 and against the margin, ``decide`` on the 95% / 90% intervals), once with the
score test (``bounds``, what ``fairpair analyze`` uses on these measures) and once with the t (no
``bounds``, as before). Columns: ``fair_fail``, audits in which a template without bias fails (goal <= 6%);
``found``, audits in which the biased template fails (its power).

Usage: ``nice -n 10 python benchmarks/sim_scenarios_bounded.py [--audits 500]``
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
from scipy import special

from fairpair.analysis._verdict import decide
from fairpair.stats import adjust, scenario_differences_from_cells

T, K, R = 20, 10, 5
CUTS = np.array([-3.5, -3.0, -2.5, -1.645])


def cells(kind: str, rng: np.random.Generator, args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    """Template x name cell means of groups A and B; template 0 carries the bias."""
    out = []
    for g in range(2):
        lat = rng.normal(0, 0.3, (1, K, 1)) + rng.normal(0, 0.3, (T, K, 1))
        if kind == "rare":
            base = special.logit(0.01)
            shift = np.zeros((T, 1, 1))
            if g == 0:
                shift[0] = special.logit(args.rare_rate) - base
            y = (rng.random((T, K, R)) < special.expit(base + shift + lat)).astype(float)
        else:
            eta = lat + rng.normal(0, 1.0, (T, K, R))
            if g == 0:
                eta[0] -= args.ceiling_shift
            y = 1.0 + (eta[..., None] > CUTS).sum(-1)
        out.append(y.mean(-1))
    return out[0], out[1]


def verdicts(a: np.ndarray, b: np.ndarray, bounds: tuple[float, float] | None, margin: float,
             alpha: float = 0.05) -> list[str]:
    sd = scenario_differences_from_cells(a, b, names="random", bounds=bounds)
    a0, am = adjust(sd.pvalues, "holm"), adjust(sd.pvalues_beyond(margin), "holm")
    ci, eq = sd.confidence_intervals(1 - alpha), sd.confidence_intervals(1 - 2 * alpha)
    if bounds is not None:
        w = bounds[1] - bounds[0]
        ci, eq = np.clip(ci, -w, w), np.clip(eq, -w, w)
    return [decide(tuple(ci[i]), tuple(eq[i]), float(a0[i]), margin, alpha, pvalue_margin_adjusted=float(am[i]))[0]
            for i in range(sd.n_templates)]


def _pct(k: int, n: int) -> str:
    p = k / n
    return f"{100 * p:.1f} ({100 * math.sqrt(max(p * (1 - p), 1e-12) / n):.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=500)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--rare-rate", type=float, default=0.10)
    ap.add_argument("--ceiling-shift", type=float, default=1.0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(f"{args.audits} audits a row; {T}T x {K}N x {R}R, names random; load {os.getloadavg()[0]:.1f}")
    print("| measure | biased template | test | fair_fail | found |")
    print("| --- | --- | --- | --- | --- |")
    for kind, margin, bounds, what in (("rare", 0.01, (0.0, 1.0), f"A at {args.rare_rate:.0%} vs 1%"),
                                       ("ceiling", 0.1, (1.0, 5.0), f"A's latent -{args.ceiling_shift:g}")):
        rng = np.random.default_rng(args.seed)
        tally = {"score": [0, 0], "t": [0, 0]}
        for _ in range(args.audits):
            a, b = cells(kind, rng, args)
            for test, bd in (("score", bounds), ("t", None)):
                v = verdicts(a, b, bd, margin)
                tally[test][0] += "fail" in v[1:]
                tally[test][1] += v[0] == "fail"
        for test, (ff, found) in tally.items():
            print(f"| {kind} | {what} | {test} | {_pct(ff, args.audits)} | {_pct(found, args.audits)} |", flush=True)
    print(f"{time.perf_counter() - t0:.0f} s; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
