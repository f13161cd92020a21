"""Whole-audit simulation of ``fairpair discover``'s words pass: its level on a fair system and its
power for a planted phrase, through the code of the command (``make_split``,
``distinguishing_phrases``, ``analyze_pairs``, ``confirm``: :mod:`fairpair.analysis._discover`).

Each audit has ``templates`` templates, ``names`` names per group and ``reps`` repetitions per
template x name cell (the pairs of :mod:`fairpair.cases`: group A's k-th name against group B's k-th
name in the same template and repetition), as the simulation table's rows
(``benchmarks/sim_audits.py``). No model runs: each answer's count of each of ``vocab`` phrases is
drawn directly, ``Poisson(exp(base_w + a_tw + g_tgw + b_nw + e))``, with a phrase's base rate
``base_w`` (log-uniform, 0.02 to 2 a answer), template effects ``a`` (sd 1: a template has its own
words), template x group effects ``g`` (sd ``--txg``, averaging zero over templates: no difference
in the population of templates), name effects ``b`` (sd ``--name``: a name's quirks, shared across
templates) and answer noise ``e`` (sd 0.3); the words pass reads whether an answer uses a phrase.

* ``fair`` rows: no phrase differs between the groups in the population of templates and names;
  ``any`` is the share of audits in which some discovered axis is confirmed (goal: at most
  alpha + 2 Monte Carlo SE);
* ``planted`` rows: one extra phrase is used in ``p_a`` of group A's answers and ``p_b`` of group
  B's (its template and name effects as the others'); ``found`` is the share of audits in which it
  is discovered on the exploration part and confirmed on the confirmation part (goal >= 80%),
  ``any`` also counts other confirmed axes. Rows marked ``no goal`` show the power of a smaller
  difference or a smaller design.

The words pass confirms the phrases whose crossed test on the exploration part is below 5% (at most
3, :func:`fairpair.analysis._discover.screen`); ``--no-screen`` confirms the three largest z-scores
instead.

Usage: ``nice -n 10 python benchmarks/sim_discover.py [--audits 1000] [--only fair]``; ``--cost`` times 20
audits of each row first and prints the seconds per audit.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import dataclass

import numpy as np

from fairpair.analysis._discover import AxisTest, confirm, distinguishing_phrases, make_split, screen
from fairpair.analysis._paired import PairData, analyze_pairs

ALPHA = 0.05


@dataclass(frozen=True)
class Row:
    label: str
    templates: int
    names: int
    reps: int
    p_a: float | None = None  # the planted phrase's share of group A's answers (None: a fair system)
    p_b: float | None = None
    vocab: int = 300
    txg: float = 0.3
    name: float = 0.3
    goal: bool = True  # a planted row without a goal shows the power of a smaller difference or design


ROWS = [
    Row("fair, 20 templates x 10 names x 5 reps", 20, 10, 5),
    Row("fair, 16 templates x 10 names x 1 rep", 16, 10, 1),
    Row("fair, template x group and name effects sd 0.6, 20 x 10 x 5", 20, 10, 5, txg=0.6, name=0.6),
    Row("planted 40% vs 10%, 20 x 10 x 5", 20, 10, 5, 0.40, 0.10),
    Row("planted 30% vs 10%, 40 x 10 x 5", 40, 10, 5, 0.30, 0.10),
    Row("planted 30% vs 15%, 20 x 10 x 5", 20, 10, 5, 0.30, 0.15, goal=False),
    Row("planted 60% vs 10%, 16 x 10 x 1 (the demo's design)", 16, 10, 1, 0.60, 0.10, goal=False),
]


def _logit_rate(p: float) -> float:
    """log Poisson rate whose P(count > 0) is ``p``."""
    return math.log(-math.log(1.0 - p))


def simulate(row: Row, rng: np.random.Generator) -> tuple[np.ndarray, int | None]:
    """Counts (2 groups, templates, names, reps, vocab) and the planted phrase's column (or None)."""
    t, k, r = row.templates, row.names, row.reps
    v = row.vocab + (1 if row.p_a is not None else 0)
    base = rng.uniform(math.log(0.02), math.log(2.0), v)
    if row.p_a is not None:
        base[-1] = 0.0
    a = rng.normal(0, 1.0, (1, t, 1, 1, v))
    g = rng.normal(0, row.txg, (2, t, 1, 1, v))
    b = rng.normal(0, row.name, (2, 1, k, 1, v))
    eta = base + a + g + b + rng.normal(0, 0.3, (2, t, k, r, v))
    if row.p_a is not None:  # the planted phrase: its group rates solved on the log scale, effects as the others'
        eta[0, ..., -1] += _logit_rate(row.p_a)
        eta[1, ..., -1] += _logit_rate(row.p_b)
    return rng.poisson(np.exp(eta)), (v - 1 if row.p_a is not None else None)


#: the crossed screen of the words pass on the exploration part (``--no-screen``: the three largest z-scores)
SCREEN = True


def _analysis(pa: np.ndarray, pb: np.ndarray, tt: np.ndarray, kk: np.ndarray, j: int, k: int):
    """The crossed analysis of phrase ``j`` over the pairs of one part (as ``fairpair discover``'s)."""
    pd = PairData(pa[:, j].astype(float), pb[:, j].astype(float), tt.astype(np.intp), kk.astype(np.intp),
                  ("v",) * k, name_a=kk.astype(np.intp), name_b=kk.astype(np.intp))
    return analyze_pairs(pd, scale="binary", alpha=ALPHA, confidence_level=0.95, exact_threshold=25,
                         n_resamples=0, seed=0, heterogeneity=False, names="random", secondary=False)


def audit(row: Row, rng: np.random.Generator, seed: int) -> tuple[bool, bool]:
    """One audit: (some axis confirmed, the planted phrase discovered and confirmed)."""
    counts, planted = simulate(row, rng)
    present = counts > 0
    t, k, r, v = row.templates, row.names, row.reps, present.shape[-1]
    templates = [f"t{i}" for i in range(t)]
    split = make_split(templates, [(f"a{j}", f"b{j}") for j in range(k)], names="random", seed=seed)
    parts = {}
    for part in ("explore", "confirm"):
        ts = np.array([int(x[1:]) for x in split.templates[part]])
        ns = np.array(sorted({int(x[1:]) for x in split.names_of[part]}))
        pa = present[0][np.ix_(ts, ns)].reshape(-1, v)
        pb = present[1][np.ix_(ts, ns)].reshape(-1, v)
        tt, kk, _ = np.meshgrid(ts, ns, np.arange(r), indexing="ij")
        parts[part] = (pa, pb, tt.reshape(-1), kk.reshape(-1))
    pa, pb, et, _ = parts["explore"]
    vocab = [f"w{j}" for j in range(v)]
    cands = distinguishing_phrases(pa, pb, vocab, strata=et)
    if SCREEN:
        _, _, et, ek = parts["explore"]
        cands = [c for c, _ in screen(cands, [_analysis(pa, pb, et, ek, int(c.phrase[1:]), k) for c in cands])]
    else:
        cands = cands[:3]
    if not cands:
        return False, False
    ca, cb, tt, kk = parts["confirm"]
    tests = []
    for c in cands:
        pa_ = _analysis(ca, cb, tt, kk, int(c.phrase[1:]), k)
        ident = dict(id=c.phrase, target="sim", measure=c.phrase, attribute="g", design="d", group_a="A",
                     group_b="B", primary=False)
        tests.append(AxisTest(pa_, 1 if c.zscore > 0 else -1, ident))
    done = confirm(tests, alpha=ALPHA)
    found = planted is not None and any(ok and c.phrase == f"w{planted}"
                                        for c, (_, ok) in zip(cands, done, strict=True))
    return any(ok for _, ok in done), found


def _pct(x: int, n: int) -> str:
    p = x / n
    return f"{100 * p:.1f} ({100 * math.sqrt(max(p * (1 - p), 1e-12) / n):.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=1000, help="audits per row (default 1000)")
    ap.add_argument("--only", default=None, help="only rows whose label contains this")
    ap.add_argument("--seed", type=int, default=32)
    ap.add_argument("--cost", action="store_true", help="time 20 audits of each row and stop")
    ap.add_argument("--no-screen", action="store_true", help="confirm the three largest z-scores, no crossed screen")
    args = ap.parse_args()
    global SCREEN
    SCREEN = not args.no_screen
    rows = [r for r in ROWS if not args.only or args.only in r.label]
    if args.cost:
        for i, row in enumerate(rows):
            rng = np.random.default_rng(args.seed + i)
            t0 = time.process_time()
            for s in range(20):
                audit(row, rng, s)
            print(f"{row.label}: {(time.process_time() - t0) / 20:.3f} s of CPU per audit")
        return
    t0 = time.perf_counter()
    print(f"{args.audits} audits per row; alpha {ALPHA}; load {os.getloadavg()[0]:.1f}")
    print("| scenario | audits | any confirmed | planted found and confirmed | goal |")
    print("| --- | --- | --- | --- | --- |")
    all_ok = True
    for i, row in enumerate(ROWS):
        if row not in rows:
            continue
        rng = np.random.default_rng(args.seed + i)
        n_any = n_found = 0
        for s in range(args.audits):
            a, f = audit(row, rng, s)
            n_any += a
            n_found += f
        n = args.audits
        if row.p_a is None:
            se = math.sqrt(ALPHA * (1 - ALPHA) / n)
            ok = n_any / n <= ALPHA + 2 * se
        else:
            ok = n_found / n >= 0.8 or not row.goal
        all_ok &= ok
        print(f"| {row.label} | {n} | {_pct(n_any, n)} | {'-' if row.p_a is None else _pct(n_found, n)} | "
              f"{('ok' if ok else 'OUT') if row.goal else 'no goal'} |", flush=True)
    print(f"{'all rows meet the goals' if all_ok else 'SOME ROWS MISS THE GOALS'} in {time.perf_counter() - t0:.0f} s; "
          f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
