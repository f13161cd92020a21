"""Whole-audit simulation of judge-measured verdicts corrected by human labels (issue 31).

Each audit is one of ``benchmarks/sim_audits.py``'s (templates x names crossed, repetitions nested,
name effects, correlated repetitions; :mod:`fairpair.analysis._simaudit`) on a 1-5 rubric scale:
the *human* score ``h*`` of every answer is the simulated ordinal measure, and the truth (0, the
margin 0.25, twice the margin) is a difference of human scores. On top of it:

* a **judge** scores every answer: ``f = h* + b [group A] + N(0, s^2)``; *biased*: ``b = -0.4`` (harsher
  on group A's answers, beyond the margin), ``s = 0.5``; *noisy*: ``b = 0``, ``s = 1.0``; *fine*:
  ``b = 0``, ``s = 0.3``;
* **humans** label 50, 100 or 200 answers, a sample stratified by group and template (as
  ``calibrate export`` and ``fairpair label`` draw it; inclusion probability = the stratum's labelled
  share), each answer by two raters with noise ``N(0, 0.7^2)`` each (their mean counts).

Each audit is analysed twice through the code of ``fairpair analyze``: **raw** (the judge's scores,
``analyze_pairs``) and **corrected** (:func:`fairpair.analysis._corrected.analyze_corrected`), each finished
by the verdict rule with and without the margin. Columns (Monte Carlo SE in brackets):

* ``ff0``: ``fail`` without margin at a true difference of 0 (goal: corrected <= alpha + 1 point);
* ``ffm``: ``fail`` with the margin when the truth is the margin (goal <= alpha/2 + 1);
* ``pm``: ``pass`` when the truth is the margin (goal <= alpha + 1);
* ``cov95``: coverage of the human difference by the 95% interval, pooled over the three truths
  (goal 93.5-96.5%);
* ``pow_fail``: ``fail`` at twice the margin; ``pow_pass``: ``pass`` at 0 (the power raw vs corrected).

Goals: biased judge: raw ``ff0`` above alpha, corrected within the goals; noisy and fine judges:
corrected within the goals, the loss of power against the raw verdicts reported.

Usage: ``nice -n 10 python benchmarks/sim_labels.py [--audits 1000] [--only biased]``.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import replace

import numpy as np

from fairpair.analysis._corrected import analyze_corrected
from fairpair.analysis._paired import analyze_pairs, finish
from fairpair.analysis._simaudit import MARGINS, Gen, JudgeSim, Row, _draw, _mu_for, _pairs, judge_and_labels

ALPHA = 0.05
GEN = Gen("name effects 0.05", name=0.05, rho=0.5)
DESIGN = Row(GEN, "ordinal", 20, 5, 4, "random")


JUDGES = (JudgeSim("biased (-0.4 on A)", -0.4, 0.5), JudgeSim("noisy (sd 1.0)", 0.0, 1.0),
          JudgeSim("fine (sd 0.3)", 0.0, 0.3))
LABELS = (50, 100, 200)


def one(judge: JudgeSim, delta: float, rng: np.random.Generator, margin: float) -> dict[str, dict]:
    """One audit: raw and corrected verdicts (with / without margin) and whether the 95% CI covers the truth."""
    mus = np.array([0.0, _mu_for("ordinal", delta)])  # group 1 = A, group 0 = B (reference)
    y, _truth, _tt, _b = _draw(DESIGN, mus.copy(), rng)
    f, h = judge_and_labels(judge, y, rng)
    pd = _pairs(f, 1, 0)
    hx, hy = h[1].reshape(-1), h[0].reshape(-1)
    out = {}
    ident = dict(id="sim", target="sim", measure="m", attribute="a", design="d", group_a="A", group_b="B",
                 primary=True)
    kw = dict(alpha=ALPHA, confidence_level=1 - ALPHA, exact_threshold=25, n_resamples=0, seed=0,
              heterogeneity=False, secondary=False)
    raw = analyze_pairs(pd, scale="continuous", **kw)
    for key, pa in (("raw", raw), ("corrected", analyze_corrected(pd, raw, hx, hy, scale="continuous", **kw))):
        v0 = finish(pa, pvalue_adjusted=pa.pvalue, correction="x", family_size=1, margin=None, alpha=ALPHA,
                    **ident).verdict
        v1 = finish(pa, pvalue_adjusted=pa.pvalue, correction="x", family_size=1, margin=margin, alpha=ALPHA,
                    pvalue_margin_adjusted=pa.pvalue_beyond(margin), **ident).verdict
        ci = pa.ci_alpha
        out[key] = {"fail0": v0 == "fail", "fail": v1 == "fail", "pass": v1 == "pass",
                    "cov": ci is not None and ci[0] <= delta <= ci[1], "has_ci": ci is not None}
    return out


def _pct(k: float, n: int) -> str:
    if n == 0:
        return "-"
    p = k / n
    return f"{100 * p:.1f} ({100 * math.sqrt(max(p * (1 - p), 1e-12) / n):.1f})"


def run(judge: JudgeSim, audits: int, seed: int) -> dict[str, dict[str, dict[str, int]]]:
    m = MARGINS["ordinal"]
    tot: dict = {}
    for i, (truth, delta) in enumerate((("null", 0.0), ("margin", m), ("power", 2 * m))):
        rng = np.random.default_rng([seed, i])
        for _ in range(audits):
            for key, o in one(judge, delta, rng, m).items():
                c = tot.setdefault(key, {}).setdefault(truth, dict.fromkeys(("fail0", "fail", "pass", "cov",
                                                                              "has_ci"), 0))
                for f, v in o.items():
                    c[f] += int(v)
    return tot


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=1000, help="audits per row and truth (default 1000)")
    ap.add_argument("--only", default=None, help="only judges whose label contains this")
    ap.add_argument("--labels", default=None, help="only these label counts, e.g. 50,100")
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()
    t0 = time.perf_counter()
    d = DESIGN
    print(f"{args.audits} audits per row and truth; alpha {ALPHA}; {d.templates}T x {d.names}N x {d.reps}R, "
          f"{d.gen.label}; 1-5 scale, margin {MARGINS['ordinal']}; {JUDGES[0].raters} raters, sd {JUDGES[0].rater_sd}; "
          f"load {os.getloadavg()[0]:.1f}")
    head = "| judge | labels | verdicts | ff0 | ffm | pm | cov95 | pow_fail | pow_pass | goals |"
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    ok_all = True
    counts = LABELS if args.labels is None else tuple(int(x) for x in args.labels.split(","))
    for j, judge in enumerate(JUDGES):
        if args.only and args.only not in judge.label:
            continue
        for i, n_labels in enumerate(counts):
            tot = run(replace(judge, labels=n_labels), args.audits, args.seed + 10 * j + i)
            for key in ("raw", "corrected"):
                nul, mar, pw = (tot[key][x] for x in ("null", "margin", "power"))
                n = args.audits
                n_ci = nul["has_ci"] + mar["has_ci"] + pw["has_ci"]
                cov = nul["cov"] + mar["cov"] + pw["cov"]
                if key == "corrected":
                    ok = (nul["fail0"] / n <= ALPHA + 0.01 and mar["fail"] / n <= ALPHA / 2 + 0.01
                          and mar["pass"] / n <= ALPHA + 0.01 and n_ci > 0 and 0.935 <= cov / n_ci <= 0.965)
                else:  # the biased judge's raw verdicts must exceed alpha (why the correction exists)
                    ok = nul["fail0"] / n > ALPHA if judge.bias else True
                ok_all &= ok
                print(f"| {judge.label} | {n_labels} | {key} | {_pct(nul['fail0'], n)} | {_pct(mar['fail'], n)} | "
                      f"{_pct(mar['pass'], n)} | {_pct(cov, n_ci)} | {_pct(pw['fail'], n)} | {_pct(nul['pass'], n)} | "
                      f"{'ok' if ok else 'OUT'} |", flush=True)
    took = time.perf_counter() - t0
    n_audits = 3 * args.audits * len(counts) * sum(1 for j in JUDGES if not args.only or args.only in j.label)
    print(f"{'all rows meet the goals' if ok_all else 'SOME ROWS MISS THE GOALS'} in {took:.0f} s "
          f"({1000 * took / max(n_audits, 1):.1f} ms per audit, raw and corrected); load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
