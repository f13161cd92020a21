"""Coverage of the interval when every pair disagrees the same way (the sign-flip case).

When every template shows the same non-zero difference (e.g. the chatbot follows a policy that
refuses group A and serves group B in every pair), the crossed t has no variance to estimate; the
p-value is the exact sign-flip test over templates, ``2^(1 - T)``, and the interval inverts an exact
test over templates (:func:`fairpair.analysis._paired.sign_flip_interval`: at a true difference
``delta``, all ``T`` templates at the bound ``lo`` has probability at most ``((hi - delta) / (hi - lo))^T``;
the sign-flip test's own inversion is the estimate alone, which covers almost nothing). The audits are
:class:`fairpair.analysis._simaudit.PolicyRow`'s; ``benchmarks/sim_audits.py`` shows one row of them.

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

from fairpair.analysis._simaudit import PolicyRow, run_policy_row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print(f"{'T':>3} {'q':>5} {'all_eq':>7} {'cov':>13} {'cov_eq':>13} {'fail':>6}  ({args.audits} audits a row)")
    t0 = time.time()
    for i, (T, q) in enumerate([(5, 1.0), (6, 1.0), (8, 1.0), (8, 0.99), (8, 0.97), (8, 0.9), (12, 0.97)]):
        t = run_policy_row(PolicyRow(templates=T, q=q), args.audits, seed=args.seed + i)

        def pct(k: int, n: int) -> str:
            if not n:
                return "-"
            p = k / n
            return f"{100 * p:5.1f} ({100 * math.sqrt(p * (1 - p) / n):.1f})"

        print(f"{T:>3} {q:>5} {100 * t.all_eq / t.n:6.1f}% {pct(t.cov95, t.n_cov):>13} "
              f"{pct(t.cov95_eq, t.n_cov_eq):>13} {100 * t.fail / t.n:5.1f}%")
    print(f"elapsed {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
