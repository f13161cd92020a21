"""Calibration of the analysis by simulation: false fails, power, interval coverage.

Simulates audits at the pairs level (see :mod:`fairpair.analysis._simulate`:
the mock target's answer model, 20 templates x 15 pairs = the seed's
starting size) and runs each through the code that writes ``results.json``.
Checks, printed with the observed values:

* no planted bias: the share of ``p < 0.05`` and of ``fail`` verdicts (no
  margin) within 1 point of 5%; with a margin of 0.10, ``fail`` at most 5%;
* planted differences: the observed power within 5 points of the planning
  estimate (Connor 1987, :func:`fairpair.stats._power.mcnemar_power`, at the
  scenario's expected discordance);
* 95% intervals cover the planted difference in 93.5-96.5% of audits.

Usage: ``python benchmarks/sim_calibration.py [--audits N]`` (default 4,000 per scenario).
"""

from __future__ import annotations

import argparse
import time

from fairpair.analysis._simulate import Scenario, planned_discordance, simulate
from fairpair.stats._power import mcnemar_power


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=4000)
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()
    n, r = args.audits, args.resamples
    ok_all = True
    t0 = time.perf_counter()

    def check(label: str, value: float, low: float, high: float) -> None:
        nonlocal ok_all
        good = low <= value <= high
        ok_all &= good
        print(f"  {label:44} {value * 100:6.2f}%   goal [{low * 100:.1f}%, {high * 100:.1f}%]  "
              f"{'ok' if good else 'OUT OF RANGE'}")

    print(f"{n} simulated audits per scenario, {r} bootstrap resamples each; 20 templates x 15 pairs")
    null = simulate(Scenario(n_resamples=r), n, seed=101)
    print("no planted bias, no margin:")
    check("p < 0.05", null.reject_rate, 0.04, 0.06)
    check("verdict fail", null.fail_rate, 0.04, 0.06)
    check("95% CI covers 0", null.coverage, 0.935, 0.965)
    marg = simulate(Scenario(margin=0.10, n_resamples=r), n, seed=102)
    print("no planted bias, margin 0.10:")
    check("verdict fail", marg.fail_rate, 0.0, 0.05)
    print(f"  {'verdict pass (power of the equivalence test)':44} {marg.pass_rate * 100:6.2f}%")
    for delta, seed in ((0.06, 103), (0.08, 104), (0.10, 105)):
        s = Scenario(delta=delta, n_resamples=r)
        psi = planned_discordance(s)
        planned = mcnemar_power(s.templates * s.per_template, delta, psi, alpha=s.alpha).power
        res = simulate(s, n, seed=seed)
        print(f"planted difference {delta:.2f} (discordance {psi:.3f}; planned power {planned * 100:.1f}%):")
        check("observed power (p < 0.05)", res.reject_rate, planned - 0.05, planned + 0.05)
        check("95% CI covers the planted difference", res.coverage, 0.935, 0.965)
    print(f"{'all checks passed' if ok_all else 'SOME CHECKS FAILED'} in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
