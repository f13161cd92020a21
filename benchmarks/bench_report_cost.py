"""The report costs what it needs (issue 14, point 10): a run with 1,200 signal values and no measures.

Before: ``report`` compiled a masking pattern over every signal value (about 15 s of CPU and 725 MiB)
although it quotes no evidence. Prints the CPU seconds of ``load_report_data`` + ``write_report``;
goal: under 2 s.

Usage: ``python benchmarks/bench_report_cost.py [--names 600]``
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fairpair.battery import load_battery  # noqa: E402
from fairpair.report._data import load_report_data  # noqa: E402
from fairpair.report._render import write_report  # noqa: E402
from fairpair.run import RunSettings, execute_run  # noqa: E402
from fairpair.testing import write_battery  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--names", type=int, default=600, help="names per group (two groups)")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-report-"))
    names = {"a": [f"Nombrea{i:04d}" for i in range(args.names)], "b": [f"Nombreb{i:04d}" for i in range(args.names)]}
    b = write_battery(root, {"kind": "mock"}, templates=1, names=names)
    data = json.loads(b.read_text(encoding="utf-8"))
    b.write_text(json.dumps(data), encoding="utf-8")
    execute_run(load_battery(b), root / "run", RunSettings(concurrency=32))
    t0 = time.process_time()
    w0 = time.monotonic()
    rd = load_report_data(root / "run")
    write_report(root / "run", data=rd)
    cpu = time.process_time() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{2 * args.names} signal values, {rd.n_cases} cases, no measures: report {cpu:.2f} s CPU "
          f"({time.monotonic() - w0:.2f} s wall), peak RSS {peak:.0f} MiB; goal < 2 s CPU: "
          f"{'met' if cpu < 2 else 'NOT met'}")


if __name__ == "__main__":
    main()
