"""A published hiring audit's size and beyond: import, analyze and report from the command line.

Two parts, each printing the time, the peak memory and the ratio between sizes:

1. the statistics: ``crossed_mean`` of a selection rate over single-name sets (every request draws
   its own names, as in the published audits: a name set per request, 4 templates) at 400 ... 6,400
   sets, and ``analyze_ranking`` (8 groups) at 1,000 ... 16,000 requests, in this process;
2. the auditor's path on a sample of the published layout (``examples/hiring_audit/make_sample.py``,
   8 candidates per request, 4 jobs x 2 models): ``convert.py``, then ``fairpair import-answers``
   (which measures, analyses and reports) and ``fairpair report``, as child processes, at 8,000,
   32,000 and 128,000 requests: wall time, CPU time (user + system) and the children's peak
   resident memory.

The machine's load average is printed before and after each step: on a shared machine the wall
time depends on it, the CPU time much less.

    python benchmarks/bench_ranking_scale.py [--sizes 8000 32000 128000] [--skip-cli] [--skip-stats]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "hiring_audit"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"hiring_{name}", EXAMPLE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _timed(f):
    """``(result, seconds, peak bytes)``: timed on its own, then run again under tracemalloc for the memory
    (tracing slows the allocations down, so it does not time)."""
    t0 = time.perf_counter()
    out = f()
    dt = time.perf_counter() - t0
    tracemalloc.start()
    f()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, dt, peak


def stats_part() -> None:
    from fairpair.analysis import analyze_ranking
    from fairpair.stats import crossed_mean

    rng = np.random.default_rng(0)
    print(f"\n1. statistics (load {_load()})")
    print(f"{'sets':>8} {'crossed_mean s':>15} {'peak MB':>8} {'ratio':>6}")
    prev = None
    for n in (400, 800, 1600, 3200, 6400):
        x = (rng.random(n) < 0.2).astype(float)
        t = rng.integers(0, 4, n)
        name = np.arange(n)  # one name set per request
        _, dt, peak = _timed(lambda x=x, t=t, name=name: crossed_mean(x, t, name, names="random"))
        print(f"{n:>8} {dt:15.3f} {peak / 2**20:8.1f} {'' if prev is None else f'{dt / prev:6.2f}'}")
        prev = dt
    print(f"{'requests':>8} {'analyze_ranking s':>18} {'peak MB':>8} {'ratio':>6}")
    gen = _module("make_sample")
    prev = None
    for per_cell in (125, 250, 500, 1000, 2000):
        frame = _frame(gen, per_cell)
        _, dt, peak = _timed(lambda frame=frame: analyze_ranking(frame[frame.target == "gpt-4"],
                                                                 groups=list(gen.NAMES)))
        n = 4 * per_cell
        print(f"{n:>8} {dt:18.3f} {peak / 2**20:8.1f} {'' if prev is None else f'{dt / prev:6.2f}'}")
        prev = dt


def _frame(gen, per_cell: int):
    """The analysis frame of a simulated sample (the truth's orders, no parsing): one row per candidate."""
    import pandas as pd

    rng = np.random.default_rng(per_cell)
    rows = []
    groups = list(gen.NAMES)
    for job in gen.JOBS:
        for i in range(per_cell):
            order = list(rng.permutation(groups))
            names = [gen.NAMES[g][rng.integers(len(gen.NAMES[g]))] for g in order]
            w = np.array([gen.WEIGHTS["gpt-4"][g] * (gen.FIRST_SLOT if j == 0 else 1.0) for j, g in enumerate(order)])
            ranked = []
            left = list(range(8))
            while left:
                p = w[left] / w[left].sum()
                pick = left[int(rng.choice(len(left), p=p))]
                ranked.append(pick)
                left.remove(pick)
            rank = {slot: r + 1 for r, slot in enumerate(ranked)}
            for slot, (g, nm) in enumerate(zip(order, names, strict=True)):
                rows.append({"target": "gpt-4", "case_id": f"{job}/{i}", "template": job, "repetition": 0,
                             "group": g, "variant": nm, "slot": slot + 1, "rank": float(rank[slot]),
                             "top": float(rank[slot] == 1)})
    return pd.DataFrame(rows)


def _child(cmd: list[str]) -> tuple[float, float, float]:
    """Run ``cmd``; its wall time, CPU time (user + system) and the peak RSS of the children so far (MB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024


def cli_part(sizes: list[int]) -> None:
    gen, conv = _module("make_sample"), _module("convert")
    print(f"\n2. the auditor's path from the command line (os.cpu_count() = {os.cpu_count()})")
    print(f"{'requests':>8} {'step':14} {'wall s':>7} {'cpu s':>7} {'peak MB':>8} {'load before':>17} "
          f"{'load after':>17}")
    prev = None
    fairpair = [sys.executable, "-m", "fairpair.cli"] if not _has_cli() else ["fairpair"]
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            records, _truth = gen.generate(n // 8, seed=1)
            pub = tmp / "published.jsonl"
            import json

            pub.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
            rows = tmp / "rows.jsonl"
            conv.convert(pub, rows)
            total_wall = total_cpu = 0.0
            for step, cmd in (("import-answers", [*fairpair, "import-answers", str(rows), "--battery",
                                                  str(EXAMPLE / "import.yaml"), "--out", str(tmp / "run")]),
                              ("report", [*fairpair, "report", str(tmp / "run")])):
                load0 = _load()
                wall, cpu, peak = _child(cmd)
                total_wall += wall
                total_cpu += cpu
                print(f"{n:>8} {step:14} {wall:7.1f} {cpu:7.1f} {peak:8.0f} {load0:>17} {_load():>17}")
            ratio = "" if prev is None else f"  (x{total_wall / prev[0]:.2f} wall, x{total_cpu / prev[1]:.2f} cpu)"
            print(f"{n:>8} {'total':14} {total_wall:7.1f} {total_cpu:7.1f}{ratio}")
            prev = (total_wall, total_cpu)


def _has_cli() -> bool:
    from shutil import which

    return which("fairpair") is not None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[8000, 32000, 128000])
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument("--skip-stats", action="store_true")
    args = ap.parse_args()
    if not args.skip_stats:
        stats_part()
    if not args.skip_cli:
        cli_part(args.sizes)


if __name__ == "__main__":
    main()
