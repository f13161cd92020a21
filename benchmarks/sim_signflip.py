"""Coverage of the interval when every pair disagrees the same way (the sign-flip case).

When every template shows the same non-zero difference (e.g. the chatbot follows a policy that
refuses group A and serves group B in every pair), the crossed t has no variance to estimate; the
p-value is the exact sign-flip test over templates, ``2^(1 - T)``, and the interval inverts that
test (:func:`fairpair.analysis._paired.sign_flip_interval`): the estimate alone when
``2^(1 - T) <= alpha``, else the whole range.

Each audit: ``T`` templates x 3 names x 2 repetitions (names fixed), yes/no measure; in each pair
group A gets "no" and group B "yes" with probability ``q`` (a policy followed ``q`` of the time),
else both get the same answer (yes or no, half and half); the true difference is ``-q``. Every audit
goes through ``analyze_pairs`` and ``finish`` (the code of ``fairpair analyze``). Columns:

* ``all_eq``: share of audits in the sign-flip case (every pair disagrees the same way);
* ``cov``: coverage of the 95% interval of all audits with an interval;
* ``cov_eq``: coverage within the sign-flip case alone;
* ``fail``: share of ``fail`` verdicts (margin 5 points, Holm over one comparison).

Usage: ``nice -n 10 python benchmarks/sim_signflip.py [--audits 400] [--seed 1]``
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from fairpair.analysis._paired import PairData, analyze_pairs, finish

NAMES, REPS, MARGIN, ALPHA = 3, 2, 0.05, 0.05


def one(T: int, q: float, rng: np.random.Generator) -> tuple[bool, bool | None, str]:
    """One audit: (sign-flip case, interval covers -q or None without one, verdict)."""
    n = T * NAMES * REPS
    disc = rng.random(n) < q
    same = (rng.random(n) < 0.5).astype(float)
    x = np.where(disc, 0.0, same)  # group A
    y = np.where(disc, 1.0, same)  # group B
    clusters = np.repeat(np.arange(T), NAMES * REPS)
    names = np.tile(np.repeat(np.arange(NAMES), REPS), T)
    pd = PairData(x=x, y=y, clusters=clusters, variants=names, name_a=names, name_b=names)
    pa = analyze_pairs(pd, scale="binary", alpha=ALPHA, confidence_level=1 - ALPHA, exact_threshold=25,
                       n_resamples=0, seed=0, names="fixed", secondary=False, heterogeneity=False)
    res = finish(pa, pvalue_adjusted=pa.pvalue, pvalue_margin_adjusted=pa.pvalue_beyond(MARGIN), correction="holm",
                 family_size=1, margin=MARGIN, alpha=ALPHA, id="c", target="t", measure="m", attribute="a",
                 design="d", group_a="A", group_b="B", primary=True)
    all_eq = res.se == 0 and res.estimate not in (None, 0)
    ci = res.ci
    covers = None if not ci or None in ci else (ci[0] - 1e-12 <= -q <= ci[1] + 1e-12)
    return all_eq, covers, res.verdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print(f"{'T':>3} {'q':>5} {'all_eq':>7} {'cov':>13} {'cov_eq':>13} {'fail':>6}  ({args.audits} audits a row)")
    t0 = time.time()
    for i, (T, q) in enumerate([(5, 1.0), (6, 1.0), (8, 1.0), (8, 0.99), (8, 0.97), (8, 0.9), (12, 0.97)]):
        rng = np.random.default_rng(args.seed + i)
        out = [one(T, q, rng) for _ in range(args.audits)]
        cov = [c for _, c, _ in out if c is not None]
        cov_eq = [c for e, c, _ in out if e and c is not None]

        def pct(v: list) -> str:
            if not v:
                return "-"
            p = sum(v) / len(v)
            return f"{100 * p:5.1f} ({100 * math.sqrt(p * (1 - p) / len(v)):.1f})"

        print(f"{T:>3} {q:>5} {100 * sum(e for e, _, _ in out) / len(out):6.1f}% {pct(cov):>13} {pct(cov_eq):>13} "
              f"{100 * sum(v == 'fail' for *_, v in out) / len(out):5.1f}%")
    print(f"elapsed {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
