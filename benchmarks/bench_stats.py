"""Benchmark: the whole paired analysis of a synthetic 56,000-answer study.

5 models x 11,200 answers = 5 x 5,600 matched pairs (group A / group B), in
200 templates of 28 pairs (7 name variants x 4 repetitions). Per model:
McNemar on a binary outcome (refusal), Wilcoxon signed-rank with the
Hodges-Lehmann estimate and CI and the paired t view on a continuous
outcome, cluster-bootstrap CIs (2,000 resamples, clusters = templates) for
the risk difference and the mean difference; then Holm and BH over the 10
p-values, and verdicts.

Goals: < 10 s wall time on 2 cores, peak RSS < 1 GiB.

Run:  python benchmarks/bench_stats.py
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "2")
if hasattr(os, "sched_setaffinity"):
    try:
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:2]))
    except OSError:
        pass

import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

GOAL_SECONDS = 10.0
GOAL_RSS_BYTES = 1 << 30
N_MODELS, N_TEMPLATES, PAIRS_PER_TEMPLATE = 5, 200, 28
N_RESAMPLES = 2000


def synthetic_study(seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    models = []
    template = np.repeat(np.arange(N_TEMPLATES), PAIRS_PER_TEMPLATE)
    n = template.size
    for m in range(N_MODELS):
        t_effect = rng.normal(0, 1, N_TEMPLATES)[template]
        gap = rng.normal(0.02 * m, 0.05, N_TEMPLATES)[template]
        logit_a = -1.5 + t_effect + gap
        logit_b = -1.5 + t_effect - gap
        refusal_a = (rng.random(n) < 1 / (1 + np.exp(-logit_a))).astype(float)
        refusal_b = (rng.random(n) < 1 / (1 + np.exp(-logit_b))).astype(float)
        score_a = np.round(5 + t_effect + gap + rng.normal(0, 1, n), 1)
        score_b = np.round(5 + t_effect - gap + rng.normal(0, 1, n), 1)
        miss = rng.random(n) < 0.01  # failed calls
        refusal_a[miss] = np.nan
        models.append(dict(refusal_a=refusal_a, refusal_b=refusal_b, score_a=score_a, score_b=score_b,
                           template=template))
    return models


def analyse(models: list[dict[str, np.ndarray]]) -> dict:
    from fairpair import stats as fs

    out = []
    for m in models:
        mc = fs.mcnemar(m["refusal_a"], m["refusal_b"])
        wx = fs.wilcoxon(m["score_a"], m["score_b"])
        wx_ci = wx.confidence_interval()
        pt = fs.paired_t(m["score_a"], m["score_b"])
        rd = fs.cluster_bootstrap_risk_difference(m["refusal_a"], m["refusal_b"], m["template"],
                                                  n_resamples=N_RESAMPLES, seed=0)
        md = fs.cluster_bootstrap_mean_difference(m["score_a"], m["score_b"], m["template"],
                                                  n_resamples=N_RESAMPLES, seed=0)
        out.append(dict(mcnemar=mc, wilcoxon=wx, hl_ci=wx_ci, t=pt, rd=rd, md=md,
                        verdict_rd=fs.equivalence_verdict(rd, 0.02), verdict_md=fs.equivalence_verdict(md, 0.1)))
    p = np.array([[r["mcnemar"].pvalue, r["wilcoxon"].pvalue] for r in out])
    return dict(per_model=out, holm=fs.holm(p), bh=fs.benjamini_hochberg(p))


def main() -> int:
    models = synthetic_study()
    n_answers = sum(2 * m["refusal_a"].size for m in models)
    start = time.perf_counter()
    result = analyse(models)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    for i, r in enumerate(result["per_model"]):
        print(
            f"model {i}: McNemar p={r['mcnemar'].pvalue:.3g} RD={r['mcnemar'].risk_difference:+.4f} "
            f"boot CI=({r['rd'].ci.low:+.4f}, {r['rd'].ci.high:+.4f}) [{r['verdict_rd'].decision}] | "
            f"Wilcoxon p={r['wilcoxon'].pvalue:.3g} HL={r['wilcoxon'].hodges_lehmann:+.3f} "
            f"boot CI=({r['md'].ci.low:+.3f}, {r['md'].ci.high:+.3f}) [{r['verdict_md'].decision}]"
        )
    print(f"Holm-adjusted p: {np.round(result['holm'].ravel(), 4).tolist()}")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "n/a"
    print(f"answers: {n_answers}, bootstrap resamples per CI: {N_RESAMPLES}, cores: {cores}")
    print(f"seconds: {seconds:.2f} (goal < {GOAL_SECONDS:.0f}; ratio {seconds / GOAL_SECONDS:.3f})")
    print(f"peak RSS: {peak / 2**20:.0f} MiB (goal < 1024 MiB; ratio {peak / GOAL_RSS_BYTES:.3f})")
    ok = seconds < GOAL_SECONDS and peak < GOAL_RSS_BYTES
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
