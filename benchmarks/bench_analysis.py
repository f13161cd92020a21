"""Benchmark: the whole analysis of a 56,000-answer study from a store.

Study: 5 targets x 11,200 answers (4 origin groups x 5 names x 28 templates x
20 repetitions: a design that gives verdicts with names and templates random),
4 measures (two yes/no, a count, a continuous score), all pairs of groups (6
comparisons per measure and target: 120 comparisons of 2,800 pairs each, plus
20 omnibus tests), Holm over the family, per-variant heterogeneity, and each
comparison's breakdown by scenario (28 per-template differences, the
scenario-level Holm family, the heterogeneity guard).

The store is built directly with SQL (cases from the real expansion, answers
and measurements synthetic with a planted gap), then ``analyze_run`` runs in
a fresh process pinned to 2 cores; wall time and peak memory (ru_maxrss) of
that process are printed against the goals (10 s, 1 GiB).

Usage: ``python benchmarks/bench_analysis.py [--keep DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

GOAL_S = 10.0
GOAL_MEM = 1 << 30
TARGETS = [f"model{i}" for i in range(5)]
NAMES = {"espana": ["Lucía", "María", "Carmen", "Elena", "Pilar"],
         "magreb": ["Fátima", "Aicha", "Khadija", "Salma", "Nadia"],
         "rumania": ["Ioana", "Andreea", "Mihaela", "Roxana", "Irina"], "china": ["Wei", "Li", "Mei", "Xiu", "Lan"]}
TEMPLATES = 28


def battery() -> dict:
    return {
        "schema_version": 1, "name": "bench_analysis", "language": "es", "seed": 1, "repetitions": 20,
        "attributes": {"origen": {"signal": "name", "slot": "nombre", "neutral": "un cliente",
                                  "groups": {g: {"variants": v} for g, v in NAMES.items()}}},
        "templates": [{"id": f"t{i:02d}", "turns": [f"Hola, soy {{nombre}}. Caso {i}."]} for i in range(TEMPLATES)],
        "designs": [{"kind": "counterfactual", "attribute": "origen"}],
        "targets": {t: {"kind": "mock"} for t in TARGETS},
        "measures": {"refund": {"kind": "regex", "pattern": "reembolso"},
                     "escalate": {"kind": "regex", "pattern": "agente"},
                     "words": {"kind": "word_count"},
                     "tone": {"kind": "python", "function": "statistics:mean", "scale": "continuous"}},
        "analysis": {"bootstrap_resamples": 2000, "comparisons": [
            {"id": m, "measure": m, "attribute": "origen", "margin": mg}
            for m, mg in (("refund", 0.03), ("escalate", 0.03), ("words", 5), ("tone", 0.2))]},
    }


def build_store(run_dir: Path) -> int:
    from fairpair.battery import load_battery
    from fairpair.cases import expand
    from fairpair.run._runner import plan_hash
    from fairpair.store import Store

    run_dir.parent.mkdir(parents=True, exist_ok=True)
    bpath = run_dir.parent / "bench_analysis.yaml"
    bpath.write_text(yaml.safe_dump(battery(), allow_unicode=True), encoding="utf-8")
    lb = load_battery(bpath)
    store = Store.open(run_dir)
    store.set_meta_once("battery", lb.battery.model_dump(mode="json"))
    store.set_meta_once("battery_sha256", lb.sha256)
    store.set_meta_once("plan_sha256", plan_hash(lb))
    cases = list(expand(lb))
    store.add_cases(cases)
    rng = np.random.default_rng(0)
    now = "2026-01-01T00:00:00+00:00"
    n = 0
    for t in TARGETS:
        shared = {}
        resp, meas = [], []
        for c in cases:
            u = shared.setdefault(c.matched_set, rng.random(4))
            own = rng.random(4)
            mix = np.where(rng.random(4) < 0.6, u, own)
            magreb = c.groups["origen"] == "magreb"
            vals = {"refund": bool(mix[0] < (0.62 if magreb else 0.7)), "escalate": bool(mix[1] < 0.3),
                    "words": int(60 + 20 * (mix[2] - 0.5) - (5 if magreb else 0)),
                    "tone": float(3.5 + mix[3] - (0.2 if magreb else 0))}
            resp.append((t, c.id, "ok", "respuesta", "[]", "[]", 10, 50, 0.1, "stop", "mock-1", "mock", None, 1, now))
            for m, v in vals.items():
                meas.append((t, c.id, m, "ok", json.dumps(v), None, None, now))
            n += 1
        with store.transaction():
            store.conn.executemany(
                "INSERT INTO responses (target, case_id, status, text, turns, tool_calls, prompt_tokens,"
                " completion_tokens, latency_s, finish_reason, model, system_fingerprint, error, attempts,"
                " created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", resp)
            store.conn.executemany(
                "INSERT INTO measurements (target, case_id, measure, status, value, detail, error, created_at)"
                " VALUES (?,?,?,?,?,?,?,?)", meas)
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return n


_CHILD = """
import sys, time, resource
t0 = time.perf_counter()
from fairpair.analysis import analyze_run
res = analyze_run(sys.argv[1])
dt = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_SELF)
verdicts = sum(c.verdict != "insufficient design" for c in res.comparisons)
scen = sum(len(c.scenarios.rows) for c in res.comparisons if c.scenarios is not None)
print(dt, ru.ru_maxrss * 1024, len(res.comparisons), len(res.omnibus), ru.ru_utime + ru.ru_stime, verdicts, scen)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build the store here and keep it")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-analysis-"))
    run_dir = root / "run"
    if not (run_dir / "store.sqlite").exists():
        t0 = time.perf_counter()
        n = build_store(run_dir)
        print(f"built a store of {n:,} answers in {time.perf_counter() - t0:.1f} s: {run_dir}")
    env = dict(os.environ, OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2", MKL_NUM_THREADS="2")
    cmd = [sys.executable, "-c", _CHILD, str(run_dir)]
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:2]
        cmd = ["taskset", "-c", ",".join(map(str, cpus)), *cmd]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout.split()
    wall, rss, n_cmp, n_omni, cpu = float(out[0]), int(out[1]), int(out[2]), int(out[3]), float(out[4])
    n_verdicts, n_scen = int(out[5]), int(out[6])
    print(f"analysis: {n_cmp} comparisons ({n_verdicts} with a verdict, not 'insufficient design') + {n_omni} "
          f"omnibus tests; {n_scen} per-scenario differences")
    print(f"CPU time: {cpu:.2f} s (goal < {GOAL_S:.0f} s of CPU with the scenario breakdown; ratio {cpu / GOAL_S:.2f})")
    print(f"wall time: {wall:.2f} s (goal < {GOAL_S:.0f} s; ratio {wall / GOAL_S:.2f})")
    print(f"CPU time (user + sys, whole process incl. imports): {cpu:.2f} s; load average now "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall time suffers when the machine is shared)")
    print(f"peak memory: {rss / 2**20:.0f} MiB (goal < 1024 MiB; ratio {rss / GOAL_MEM:.2f})")


if __name__ == "__main__":
    main()
