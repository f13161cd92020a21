"""Whole-audit simulation of the verdicts under the audit's real dependence (successor of sim_calibration.py).

Each row simulates ``--audits`` audits of one generator and design (see
:mod:`fairpair.analysis._simaudit`: templates x names crossed, repetitions
nested, template x group bias, name effects, correlated repetitions;
binary, count, 1-5 ordinal and continuous measures) at three truths -- no
difference, a difference equal to the margin, twice the margin -- and runs
each audit through the code of ``fairpair analyze`` (``analyze_pairs``,
Holm / BH over the plan, ``finish``). One table:

* ``ff0``: false ``fail`` with no margin (true difference 0; family-wise
  for a plan of several comparisons); goal <= alpha + 1 point;
* ``ffm0``: ``fail`` with the margin when the truth is 0;
* ``ffm``: ``fail`` when the truth equals the margin; goal <= alpha/2 + 1;
* ``pm``: ``pass`` when the truth equals the margin, per comparison (for a
  plan, a pass is a claim about one comparison; the report's overall
  "every comparison passes" needs all of them); goal <= alpha + 1;
* ``insuf``: share of ``insufficient design`` verdicts;
* ``cov95`` / ``cov90``: coverage of the 95% / 90% intervals (pooled over
  the three truths, audits with a verdict); goal 93.5-96.5%;
* ``pow_fail``: ``fail`` at twice the margin; ``pow_pass``: ``pass`` at 0;
* ``raw_rej`` / ``raw_cov``: the crossed t's rejection rate at 0 and 95%
  coverage *ignoring* the design rule: why small designs get ``insufficient
  design``.

Monte Carlo standard errors in parentheses. For names fixed with name
effects, the truth is the difference between *these* names (not 0): false
fail is then not defined and shown as ``-``.

Usage: ``nice -n 10 python benchmarks/sim_audits.py [--audits 2000] [--only SUBSTRING] [--rows FIRST-LAST]``
(each row has its own seed, ``--seed + index``, so a run split with ``--rows`` gives the same figures).
"""

from __future__ import annotations

import argparse
import math
import os
import time

from fairpair.analysis._simaudit import Gen, Row, run_row

ALPHA = 0.05
INDEP = Gen("independent")
RHO5 = Gen("reps rho 0.5", rho=0.5)
RHO8 = Gen("reps rho 0.8", rho=0.8)
TGB = Gen("template x group bias", template_group=0.1, rho=0.5)
NAMES = Gen("name effects 0.05", name=0.05, rho=0.5)
NAMES_S = Gen("name effects 0.01", name=0.01, rho=0.5)


def rows() -> list[Row]:
    return [
        Row(INDEP, "binary", 20, 3, 5, "fixed"),
        Row(INDEP, "binary", 20, 10, 5, "random"),
        Row(RHO5, "binary", 20, 3, 5, "fixed"),
        Row(RHO8, "binary", 20, 3, 5, "fixed"),
        Row(RHO5, "binary", 20, 10, 5, "random"),
        Row(RHO8, "binary", 20, 10, 5, "random"),
        Row(RHO8, "continuous", 20, 10, 5, "random"),
        Row(TGB, "continuous", 20, 3, 5, "fixed"),
        Row(TGB, "continuous", 20, 10, 5, "random"),
        Row(NAMES, "binary", 20, 3, 5, "fixed"),
        Row(NAMES, "binary", 20, 3, 5, "random"),
        Row(NAMES, "binary", 20, 5, 5, "random"),
        Row(NAMES, "binary", 20, 10, 5, "random"),
        Row(NAMES, "continuous", 20, 10, 5, "random"),
        Row(NAMES_S, "binary", 20, 10, 5, "random"),
        Row(NAMES_S, "binary", 8, 5, 5, "random"),
        Row(RHO5, "binary", 3, 3, 5, "fixed"),
        Row(RHO5, "binary", 5, 3, 5, "fixed"),
        Row(RHO5, "binary", 8, 3, 5, "fixed"),
        Row(RHO5, "binary", 3, 10, 5, "random"),
        Row(RHO5, "binary", 5, 10, 5, "random"),
        Row(RHO5, "binary", 8, 5, 5, "random"),
        Row(RHO5, "binary", 8, 10, 5, "random"),
        Row(RHO5, "count", 20, 10, 5, "random"),
        Row(RHO5, "count", 8, 3, 5, "fixed"),
        Row(RHO5, "ordinal", 20, 10, 5, "random"),
        Row(RHO5, "ordinal", 20, 3, 5, "fixed"),
        Row(RHO5, "binary", 20, 10, 5, "random", missing=0.15),
        Row(RHO5, "binary", 20, 5, 1, "random", missing=0.15),
        Row(RHO5, "binary", 20, 10, 5, "random", comparisons=3, correction="holm"),
        Row(RHO5, "binary", 20, 10, 5, "random", comparisons=3, correction="bh"),
        Row(RHO5, "binary", 20, 3, 5, "fixed", comparisons=3, correction="holm"),
        Row(INDEP, "binary", 3, 3, 1, "fixed"),
        Row(INDEP, "binary", 3, 3, 1, "random"),
    ]


def _pct(k: int, n: int) -> str:
    if n == 0:
        return "-"
    p = k / n
    return f"{100 * p:.1f} ({100 * math.sqrt(max(p * (1 - p), 1e-12) / n):.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=2000, help="audits per row and truth (default 2000)")
    ap.add_argument("--only", default=None, help="only rows whose label contains this")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--rows", default=None, help="only rows FIRST-LAST (0-based, inclusive), e.g. 0-16, to split a run")
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(f"{args.audits} audits per row and truth; alpha {ALPHA}; load {os.getloadavg()[0]:.1f}")
    head = ("| scenario | audits | ff0 | ffm0 | ffm | pm | insuf | cov95 | cov90 | pow_fail | pow_pass | raw_rej | "
            "raw_cov | goals |")
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    all_ok = True
    for i, row in enumerate(rows()):
        if args.only and args.only not in row.label:
            continue
        if args.rows and not int(args.rows.split("-")[0]) <= i <= int(args.rows.split("-")[-1]):
            continue
        out = run_row(row, args.audits, seed=args.seed + i)
        nul, mar, pw = out["null"], out["margin"], out["power"]
        cond = row.estimand == "fixed" and row.gen.name > 0  # the truth is these names' difference, not 0
        n_cov = nul.n_cov + mar.n_cov + pw.n_cov
        cov95 = nul.cov95 + mar.cov95 + pw.cov95
        cov90 = nul.cov90 + mar.cov90 + pw.cov90
        given = nul.insufficient < nul.n
        ok = True
        if given:
            lim = ALPHA + 0.01
            ok &= cond or nul.fail_nomargin / nul.n <= lim
            ok &= cond or mar.fail_margin / mar.n <= ALPHA / 2 + 0.01
            ok &= cond or mar.pass_each / mar.n_each <= lim
            ok &= n_cov == 0 or 0.935 <= cov95 / n_cov <= 0.965
        all_ok &= ok
        raw_n = nul.n_raw + mar.n_raw + pw.n_raw
        raw_c = nul.raw_cov95 + mar.raw_cov95 + pw.raw_cov95
        print(f"| {row.label} | {nul.n} | {'-' if cond else _pct(nul.fail_nomargin, nul.n)} | "
              f"{'-' if cond else _pct(nul.fail_margin, nul.n)} | {'-' if cond else _pct(mar.fail_margin, mar.n)} | "
              f"{'-' if cond else _pct(mar.pass_each, mar.n_each)} | {_pct(nul.insufficient, nul.n)} | "
              f"{_pct(cov95, n_cov)} | {_pct(cov90, n_cov)} | {_pct(pw.fail_margin, pw.n)} | "
              f"{_pct(nul.pass_margin, nul.n)} | {'-' if cond else _pct(nul.raw_reject, nul.n_raw)} | "
              f"{_pct(raw_c, raw_n)} | {'ok' if ok else 'OUT'}{'' if given else ' (no verdict)'} |", flush=True)
    print(f"{'all rows meet the goals' if all_ok else 'SOME ROWS MISS THE GOALS'} in {time.perf_counter() - t0:.0f} s; "
          f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
