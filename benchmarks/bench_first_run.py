"""Time the README's first command: ``fairpair run examples/tienda_online/demo.yaml --out DIR``.

Runs it on a fresh ``--out`` directory (the model already installed by the
``[local]`` extra) and prints the wall time, the CPU time of the whole process
tree (user + system of the child and its descendants, from
``resource.getrusage(RUSAGE_CHILDREN)``), the peak RSS, the load average
before and after, and the verdicts of ``results.json``. The goal (issue 34):
under 5 minutes wall on an idle 2-core machine and at most 300 s of CPU. On
a shared machine the CPU figure is the one to trust: the wall time grows with
the other jobs, the CPU time much less.

Usage::

    python benchmarks/bench_first_run.py            # a temporary run directory, removed afterwards
    python benchmarks/bench_first_run.py --keep runs/bench_demo
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "tienda_online" / "demo.yaml"
WALL_GOAL_S = 300.0
CPU_GOAL_S = 300.0


def _fairpair() -> list[str]:
    exe = shutil.which("fairpair")
    return [exe] if exe else [sys.executable, "-m", "fairpair"]


def verdicts(run_dir: Path) -> list[str]:
    """``target measure group_a vs group_b: verdict`` for every comparison of the run's results.json."""
    path = run_dir / "results.json"
    if not path.is_file():
        return [f"no results.json in {run_dir}"]
    data = json.loads(path.read_text(encoding="utf-8"))
    def num(v):
        return "n/a" if v is None else f"{v:.3g}"

    return [f"{c['target']} {c['measure']} {c['group_a']} vs {c['group_b']}: {c['verdict']} (difference "
            f"{num(c.get('estimate'))}, CI {' to '.join(num(v) for v in c.get('ci') or ()) or 'n/a'})"
            for c in data.get("comparisons", [])]


def answer_statuses(run_dir: Path) -> Counter:
    """Answer statuses of the run (from its manifest), summed over the targets."""
    path = run_dir / "manifest.json"
    out: Counter = Counter()
    if path.is_file():
        for per in (json.loads(path.read_text(encoding="utf-8")).get("answer_statuses") or {}).values():
            out.update({k: v for k, v in (per.get("counts") or {}).items() if isinstance(v, int)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", type=Path, default=None, help="run directory to create and keep (must not exist)")
    args = ap.parse_args(argv)
    tmp = None
    if args.keep is not None:
        if args.keep.exists():
            ap.error(f"{args.keep} exists: the benchmark times a fresh run")
        out = args.keep
    else:
        tmp = tempfile.mkdtemp(prefix="fp-first-run-")
        out = Path(tmp) / "demo"
    cmd = [*_fairpair(), "run", str(DEMO.relative_to(ROOT)), "--out", str(out)]
    load_before = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_after = os.getloadavg()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"command: {' '.join(cmd)}")
    print(f"exit code: {proc.returncode}")
    print(f"wall: {wall:.1f} s (goal < {WALL_GOAL_S:.0f} s on an idle 2-core machine)")
    print(f"CPU (user + sys, process tree): {cpu:.1f} s (goal <= {CPU_GOAL_S:.0f} s)")
    print(f"peak RSS: {after.ru_maxrss / 1024:.0f} MiB")
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*load_before))
    print("load average after:  {:.2f} {:.2f} {:.2f}".format(*load_after))
    print(f"cores: {os.cpu_count()}")
    statuses = answer_statuses(out)
    if statuses:
        total = sum(statuses.values())
        print(f"answers: {total}; " + ", ".join(f"{k} {v}" for k, v in statuses.most_common())
              + f"; usable (ok) {statuses.get('ok', 0) / total:.0%}")
    for line in verdicts(out):
        print(line)
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n", file=sys.stderr)
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
