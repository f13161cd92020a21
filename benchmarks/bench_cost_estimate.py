"""Cost before sending (issue 33): ``fairpair plan --cost`` of the second seed's full study, from its scene table.

The study: Tan & Lee (2025)'s 100 published scenes x 112 conditions = 11,200 conversations for each of 5
models, the pairwise judge in both orders (111,000 calls) and all-mpnet-base-v2 embeddings
(``examples/persona_power/tan_lee_study.yaml`` over the battery ``fairpair import-scenes`` writes from
``scenarios.xlsx``), priced with ``examples/prices.yaml``. Goal: its live and batch cost printed in under
10 s. Measured three ways: the two commands a user runs (``import-scenes``, then ``plan --cost``), each its
own process, wall seconds; and the estimate alone in this process, wall and CPU seconds. Then the shop
battery (``examples/tienda_online/battery.yaml``), whose embedded target's tokens are counted with its own
tokenizer when the ``[local]`` extra is installed.

Usage: ``python benchmarks/bench_cost_estimate.py [--scenes PATH/scenarios.xlsx]`` (default: the project's
shared copy, ``../shared/data/tan-lee-2025/scenarios.xlsx`` beside the checkout).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from fairpair.battery import load_battery  # noqa: E402
from fairpair.cost import estimate_cost, load_prices  # noqa: E402

PRICES = ROOT / "examples" / "prices.yaml"
STUDY = ROOT / "examples" / "persona_power" / "tan_lee_study.yaml"
SHOP = ROOT / "examples" / "tienda_online" / "battery.yaml"
GOAL_S = 10.0


def _scenes_default() -> Path | None:
    for base in (ROOT.parent, ROOT.parent.parent):  # /work/main/../shared, or a worktree's /work/wt/x/../../shared
        p = base / "shared" / "data" / "tan-lee-2025" / "scenarios.xlsx"
        if p.is_file():
            return p
    return None


def _cli(*args: str) -> tuple[float, float, str]:
    """Run ``fairpair ARGS`` in its own process: (wall seconds, CPU seconds of the process, its output)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "160"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "fairpair.cli", *args], capture_output=True, text=True, env=env,
                         check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.monotonic() - t, cpu, out.stdout + out.stderr


def _summary(est) -> str:
    return (f"{sum(s.calls for s in est.stages if s.stage == 'answers'):,} answers, "
            f"{sum(s.calls for s in est.stages if s.stage == 'judge'):,} judge calls, "
            f"{sum(s.calls for s in est.stages if s.stage == 'embeddings'):,} embeddings; "
            f"{est.input_tokens:,} input tokens, at most {est.output_tokens:,} output; "
            f"live {est.total('live'):,.2f} {est.currency}, batch {est.total('batch'):,.2f} {est.currency}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", type=Path, default=_scenes_default(), help="the study's scenarios.xlsx")
    args = ap.parse_args()
    if args.scenes is None or not args.scenes.is_file():
        sys.exit("give --scenes PATH/scenarios.xlsx (the published scene table, ../shared/data/tan-lee-2025/)")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-cost-"))
    shutil.copy(STUDY, tmp / STUDY.name)
    t_import, c_import, _ = _cli("import-scenes", str(args.scenes), "-o", str(tmp / "tan_lee_scenes.yaml"))
    t_plan, c_plan, out = _cli("plan", str(tmp / STUDY.name), "--cost", "--prices", str(PRICES))
    total_line = next(line for line in out.splitlines() if line.startswith("total:"))
    print(f"study, the user's two commands: import-scenes {t_import:.2f} s wall ({c_import:.2f} s CPU) + plan "
          f"--cost {t_plan:.2f} s wall ({c_plan:.2f} s CPU) = {t_import + t_plan:.2f} s wall, "
          f"{c_import + c_plan:.2f} s CPU (goal < {GOAL_S:g} s; on a loaded machine read the CPU seconds)")
    print(f"  plan printed: {total_line}")

    prices = load_prices(PRICES)
    w, c = time.monotonic(), time.process_time()
    lb = load_battery(tmp / STUDY.name)
    est = estimate_cost(lb, prices)
    wall, cpu = time.monotonic() - w, time.process_time() - c
    print(f"study, in process (load + estimate): {wall:.2f} s wall, {cpu:.2f} s CPU; {_summary(est)}")
    for s in est.stages:
        print(f"  {s.stage:10} {s.name:12} {s.model or '':36} {s.calls:>9,} calls {s.input_tokens:>12,} in "
              f"{s.output_tokens:>12,} out  live {s.live or 0:>8.2f}  batch {s.batch or 0:>8.2f}")

    w, c = time.monotonic(), time.process_time()
    shop = estimate_cost(load_battery(SHOP), prices)
    wall, cpu = time.monotonic() - w, time.process_time() - c
    print(f"shop battery: {wall:.2f} s wall, {cpu:.2f} s CPU; {_summary(shop)}")
    for s in shop.stages:
        print(f"  {s.stage:10} {s.name:12} {s.model or '':24} {s.calls:>7,} calls {s.input_tokens:>10,} in "
              f"{s.output_tokens:>10,} out  counted: {s.counted}")
    for n in shop.notes:
        print(f"  note: {n}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
