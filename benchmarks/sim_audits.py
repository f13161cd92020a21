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
  design``;
* ``guard0``: points of ``pass`` at a true difference of 0 that the
  heterogeneity guard turns into ``inconclusive`` (templates random; per
  comparison); goal <= 5 points where the template bias is normal;
* ``pm_ng``: ``pm`` without the guard (the passes at the margin it holds back);
* ``scen_ff``: audits in which some scenario whose true difference is within
  the margin gets a scenario-level ``fail`` (the secondary Holm family over a
  comparison's templates; pooled over the three truths); goal <= alpha + 1;
* ``found``: sparse-bias rows, audits (at the margin) in which a biased
  scenario was sampled and one is named (scenario-level ``fail``); goal >= 80%.
* ``tail``: plans of k comparisons, the share of comparisons whose raw
  crossed p-value is below alpha / k at a true difference of 0 (the tail that
  Holm's first step uses; issue 30 item 2: the name-pooling pretest fattened
  it to 2.4% instead of 1.67%);
* ``sp_fail``: count, continuous and 1-5 measures, the within-cell spread
  test's ``fail`` (``fairpair.stats.spread_difference``, adjusted over the
  plan) per comparison at a true mean difference of 0: its level where the
  spreads are equal (goal <= alpha + 1 point), its power where group A's
  within-cell noise is 1.25 or 1.5 times group B's; ``sp_cov``: coverage of
  its 95% interval of the log SD ratio (linear measures, where the truth is
  known: :func:`fairpair.analysis._simaudit.true_spread`); goal 93.5-96.5%.

Rows with ``templates fixed`` judge the average over the audit's own
templates (the truth is re-solved per audit so that it equals 0, the margin
or twice the margin over *these* templates). Sparse-bias rows put the whole
difference into 10% of the scenarios (20 points each on a 0-100 ``score``,
ten times the latent score; margin 2 points): their truth is the average over
the scenario population, and the templates-random t is not calibrated there
(no method bounds such a mean from 8-20 templates): coverage is shown, not a
goal; the goals are ``pm``, ``ff0`` and ``found``. The informative-failure
row (the reference group's "yes" answers lost 30%, its "no" answers 10%) has
no calibrated interval either (the answers that exist are biased): its goal is
an honest ``inconclusive``: no false ``fail`` and no ``pass`` at the margin
(the worst-case bounds of :mod:`fairpair.analysis._paired`). Judge rows: the measure is a
1-5 human score, a judge (biased 0.4 points against group A, only noisy, or fine) scores every
answer and two raters label 50-200 of them; the verdict is the corrected one
(:mod:`fairpair.analysis._corrected`; the raw verdicts beside them: ``sim_labels.py``).

Issue 30's leftovers: ``ceiling`` is a 1-5 score with ~95% fives (93-97%
over templates; margin 0.1 point, the truth below the reference: a ceiling
score can only fall), ``rare`` a yes/no measure at 1% (margin 1 point); the
skewed rows draw the compared group's template x group bias from a centred
exponential (skewness 2) instead of a normal. Spread rows (issue 32) multiply
each cell's within-cell noise by ``exp(X - var X)``, ``X`` normal template,
name and template x group effects; where group A's spread is planted on a
1-5 measure its mean moves too, so the mean's goals do not apply there.

The policy rows (issue 28) are audits in which every pair often disagrees the same way (a policy
followed ``q`` of the time: group A gets "no" and group B "yes"; truth ``-q``,
:class:`fairpair.analysis._simaudit.PolicyRow`); the label gives the share of audits in that case, where
the interval inverts an exact test over templates (:func:`fairpair.analysis._paired.sign_flip_interval`).
Only ``insuf``, ``cov95``, ``cov90`` and ``pow_fail`` (``fail`` at a truth of ``-q``, margin 5 points)
apply; the interval is exact, so conservative: the goal is ``cov95`` >= 93.5%.

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

from fairpair.analysis._simaudit import Gen, JudgeSim, PolicyRow, Row, run_policy_row, run_row

ALPHA = 0.05
INDEP = Gen("independent")
RHO5 = Gen("reps rho 0.5", rho=0.5)
RHO8 = Gen("reps rho 0.8", rho=0.8)
TGB = Gen("template x group bias", template_group=0.1, rho=0.5)
NAMES = Gen("name effects 0.05", name=0.05, rho=0.5)
NAMES_S = Gen("name effects 0.01", name=0.01, rho=0.5)
SPARSE = Gen("sparse 10% x 20 points", sparse=0.1, sparse_shift=20.0, rho=0.5)
SKEW = Gen("skewed template x group bias", template_group=0.1, skew=True, rho=0.5)
# spread effects (issue 32): templates, names and template x group multiply the within-cell noise (log-scale SDs
# 0.2 / 0.15 / 0.1), on top of name effects and template x group bias of the mean
_SP = dict(name=0.05, template_group=0.1, rho=0.5, spread_template=0.2, spread_name=0.15, spread_tg=0.1)
SPREAD = Gen("spread effects", **_SP)
SPREAD_F = Gen("spread effects, none by name", **{**_SP, "spread_name": 0.0})
SPREAD_125 = Gen("spread effects, group A x1.25", **_SP, spread_ratio=1.25)
SPREAD_15 = Gen("spread effects, group A x1.5", **_SP, spread_ratio=1.5)


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
        # templates fixed: a claim about these scenarios (issue 29 (b))
        Row(RHO5, "binary", 1, 5, 5, "random", templates_estimand="fixed"),
        Row(NAMES, "binary", 1, 5, 5, "random", templates_estimand="fixed"),
        Row(RHO5, "binary", 4, 10, 5, "random", templates_estimand="fixed"),
        Row(NAMES, "binary", 4, 5, 2, "random", templates_estimand="fixed"),
        Row(TGB, "binary", 2, 3, 5, "fixed", templates_estimand="fixed"),
        Row(TGB, "continuous", 4, 3, 5, "fixed", templates_estimand="fixed"),
        Row(RHO5, "binary", 8, 3, 5, "fixed", templates_estimand="fixed"),
        # bias that lives in a few scenarios (issue 30)
        Row(SPARSE, "score", 8, 5, 2, "random"),
        Row(SPARSE, "score", 20, 5, 2, "random"),
        Row(SPARSE, "score", 40, 5, 2, "random"),
        Row(TGB, "score", 40, 5, 2, "random"),
        # informative failures: the reference group's yes answers lost 30%, its no answers 10%
        Row(RHO5, "binary", 20, 10, 5, "random", informative=(0.3, 0.1)),
        # issue 30's leftovers: Holm with name effects (the name-pooling pretest's tail), ceiling 1-5 scores
        # (~95% fives; margin 0.1 point), rare events (1%; margin 1 point), skewed template x group bias
        Row(NAMES, "binary", 20, 10, 5, "random", comparisons=3, correction="holm"),
        Row(NAMES, "binary", 20, 5, 5, "random", comparisons=3, correction="holm"),
        Row(NAMES_S, "binary", 20, 10, 5, "random", comparisons=3, correction="holm"),
        Row(NAMES, "continuous", 20, 10, 5, "random", comparisons=3, correction="holm"),
        Row(RHO5, "ceiling", 20, 10, 5, "random"),
        Row(RHO5, "ceiling", 20, 3, 5, "fixed"),
        Row(NAMES, "ceiling", 20, 10, 5, "random"),
        Row(RHO5, "rare", 20, 10, 5, "random"),
        Row(INDEP, "rare", 20, 10, 5, "random"),
        Row(SKEW, "score", 8, 5, 2, "random"),
        Row(SKEW, "score", 20, 5, 2, "random"),
        Row(SKEW, "score", 40, 5, 2, "random"),
        Row(SKEW, "score", 20, 10, 10, "random"),
        # the within-cell spread (issue 32): level with spread effects, power against a planted ratio
        Row(SPREAD, "continuous", 20, 10, 5, "random"),
        Row(SPREAD, "continuous", 8, 5, 5, "random"),
        Row(SPREAD_F, "continuous", 20, 3, 5, "fixed"),
        Row(SPREAD, "score", 20, 5, 2, "random"),
        Row(SPREAD, "ordinal", 20, 10, 5, "random"),
        Row(SPREAD, "continuous", 20, 10, 5, "random", comparisons=3, correction="holm"),
        Row(SPREAD_125, "continuous", 20, 10, 5, "random"),
        Row(SPREAD_15, "continuous", 20, 10, 5, "random"),
        Row(SPREAD_15, "continuous", 8, 5, 5, "random"),
        Row(SPREAD_15, "score", 20, 5, 2, "random"),
        Row(SPREAD_15, "ordinal", 20, 10, 5, "random"),
        # a 1-5 judge corrected by human labels (issue 31; raw vs corrected and the power lost: sim_labels.py)
        *[Row(NAMES, "ordinal", 20, 5, 4, "random", judge=JudgeSim(label, bias, sd, labels=n))
          for label, bias, sd in (("biased -0.4 on A", -0.4, 0.5), ("noisy sd 1.0", 0.0, 1.0),
                                  ("fine sd 0.3", 0.0, 0.3))
          for n in (50, 100, 200)],
    ]


def policy_rows() -> list[PolicyRow]:
    """Audits in the sign-flip case (every pair disagreeing the same way) more or less often (issue 28)."""
    return [PolicyRow(templates=8, q=0.97), PolicyRow(templates=8, q=0.99), PolicyRow(templates=12, q=0.97)]


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
    ap.add_argument("--cutoff", type=float, default=None, help="the heterogeneity guard's level (default: fairpair's)")
    ap.add_argument("--rows", default=None, help="only rows FIRST-LAST (0-based, inclusive), e.g. 0-16, to split a run")
    args = ap.parse_args()
    if args.cutoff is not None:
        import fairpair.analysis._paired as paired

        paired.HETEROGENEITY_CUTOFF = args.cutoff
    t0 = time.perf_counter()
    import fairpair.analysis._paired as paired

    print(f"{args.audits} audits per row and truth; alpha {ALPHA}; guard level {paired.HETEROGENEITY_CUTOFF}; "
          f"load {os.getloadavg()[0]:.1f}")
    head = ("| scenario | audits | ff0 | ffm0 | ffm | pm | insuf | cov95 | cov90 | pow_fail | pow_pass | raw_rej | "
            "raw_cov | guard0 | pm_ng | scen_ff | found | tail | sp_fail | sp_cov | goals |")
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
        # names fixed with name effects: the truth is these names' difference, not 0 (templates fixed re-solves it)
        cond = row.estimand == "fixed" and row.gen.name > 0 and row.templates_estimand == "random"
        sparse = row.gen.sparse > 0 or row.informative is not None  # no calibrated interval exists: goals on verdicts
        # a planted spread ratio on a non-linear measure moves its mean: the mean's truth is not known there
        spread_only = row.gen.spread_ratio != 1.0 and row.measure not in ("continuous", "score")
        n_cov = nul.n_cov + mar.n_cov + pw.n_cov
        cov95 = nul.cov95 + mar.cov95 + pw.cov95
        cov90 = nul.cov90 + mar.cov90 + pw.cov90
        given = nul.insufficient < nul.n
        ok = True
        if row.gen.spread_ratio == 1.0 and nul.sp_n:
            ok &= nul.sp_fail / nul.sp_n <= ALPHA + 0.01
        if nul.sp_ncov:
            ok &= 0.935 <= nul.sp_cov / nul.sp_ncov <= 0.965
        if given and not spread_only:
            lim = ALPHA + 0.01
            ok &= cond or nul.fail_nomargin / nul.n <= lim
            ok &= cond or mar.fail_margin / mar.n <= ALPHA / 2 + 0.01
            ok &= cond or mar.pass_each / mar.n_each <= lim
            ok &= sparse or n_cov == 0 or 0.935 <= cov95 / n_cov <= 0.965
            ok &= sparse or row.templates_estimand == "fixed" or nul.guarded / nul.n_each <= 0.05
            scen_n = nul.n + mar.n + pw.n
            ok &= (nul.scen_false + mar.scen_false + pw.scen_false) / scen_n <= lim
            ok &= not sparse or mar.scen_found >= 0.8 * mar.scen_sampled
        all_ok &= ok
        raw_n = nul.n_raw + mar.n_raw + pw.n_raw
        raw_c = nul.raw_cov95 + mar.raw_cov95 + pw.raw_cov95
        print(f"| {row.label} | {nul.n} | {'-' if cond else _pct(nul.fail_nomargin, nul.n)} | "
              f"{'-' if cond else _pct(nul.fail_margin, nul.n)} | {'-' if cond else _pct(mar.fail_margin, mar.n)} | "
              f"{'-' if cond else _pct(mar.pass_each, mar.n_each)} | {_pct(nul.insufficient, nul.n)} | "
              f"{_pct(cov95, n_cov)} | {_pct(cov90, n_cov)} | {_pct(pw.fail_margin, pw.n)} | "
              f"{_pct(nul.pass_margin, nul.n)} | {'-' if cond else _pct(nul.raw_reject, nul.n_raw)} | "
              f"{_pct(raw_c, raw_n)} | {_pct(nul.guarded, nul.n_each)} | "
              f"{_pct(mar.pass_each + mar.guarded, mar.n_each)} | "
              f"{_pct(nul.scen_false + mar.scen_false + pw.scen_false, nul.n + mar.n + pw.n)} | "
              f"{_pct(mar.scen_found, mar.scen_sampled) if sparse else '-'} | "
              f"{_pct(nul.tail, nul.n_each) if row.comparisons > 1 else '-'} | "
              f"{_pct(nul.sp_fail, nul.sp_n)} | {_pct(nul.sp_cov, nul.sp_ncov)} | "
              f"{'ok' if ok else 'OUT'}{'' if given else ' (no verdict)'} |", flush=True)
    costs = []
    for j, prow in enumerate(policy_rows()):
        i = len(rows()) + j
        if args.only and args.only not in prow.label:
            continue
        if args.rows and not int(args.rows.split("-")[0]) <= i <= int(args.rows.split("-")[-1]):
            continue
        t1 = time.process_time()
        t = run_policy_row(prow, args.audits, seed=args.seed + i)
        ok = t.n_cov > 0 and t.cov95 / t.n_cov >= 0.935
        all_ok &= ok
        print(f"| {prow.label}; every pair disagrees the same way in {100 * t.all_eq / t.n:.0f}% | {t.n} | - | - | - | "
              f"- | {_pct(t.insufficient, t.n)} | {_pct(t.cov95, t.n_cov)} | {_pct(t.cov90, t.n_cov)} | "
              f"{_pct(t.fail, t.n)} | - | - | - | - | - | - | - | {'ok' if ok else 'OUT'} |", flush=True)
        costs.append(f"{1000 * (time.process_time() - t1) / t.n:.1f}")
    if costs:
        print(f"policy rows: {', '.join(costs)} ms of CPU per audit")
    print(f"{'all rows meet the goals' if all_ok else 'SOME ROWS MISS THE GOALS'} in {time.perf_counter() - t0:.0f} s; "
          f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
