"""Benchmark: a soak run of 100,000 cases with 10% injected faults loses nothing and holds memory flat.

A counterfactual battery of 50 templates x 2 groups x 4 names x 250
repetitions (100,000 cases) is run in a child process (``execute_run``, what
``fairpair run --no-measure`` does) at concurrency 64 with 2 attempts per case
and a short backoff (10-50 ms), so that about 10% x 10% = 1% of the cases end
as stored failures. Faults come from one of:

* ``--faults mock`` (default): the ``mock`` target with ``fail_rate: 0.1``
  (a retryable 503 raised in-process);
* ``--faults http``: the ``openai`` target against the loopback OpenAI mock
  (:func:`fairpair.testing.serve_openai`, in its own process, no latency)
  injecting 4% HTTP 500, 3% 429, 2% connections closed mid-body and 1%
  truncated JSON.

While it runs, the parent samples the child's resident memory (``VmRSS`` in
``/proc/PID/status``) every 0.2 s. Afterwards it checks the store with SQL:

* no lost case: answered + failed = cases, one stored row per case (a session
  stores one final outcome per case), every case has a row;
* exactly one ``ok`` answer per answered case, none for a failed one;
* the failed share is near the planted 1%;

and prints the peak RSS of the first and last quarters of the run and their
ratio (goal <= 1.10: memory flat), with throughput. Exits 1 if a check fails.

Usage: ``python benchmarks/bench_soak.py [--n 100000] [--faults mock|http] [--concurrency 64]``
(``--n`` is rounded up to a multiple of 400).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAMES = {"espana": ["Lucía", "María", "Carmen", "Laura"], "magreb": ["Fátima", "Khadija", "Naima", "Amina"]}
TEMPLATES = 50
FAULT_RATE = 0.1
HTTP_FAULTS = {"500": 0.04, "429": 0.03, "close": 0.02, "truncated": 0.01}
GOAL_FLAT = 1.10

_CHILD = """
import json, sys, time
from fairpair.battery import load_battery
from fairpair.run import RunSettings, execute_run
battery, run_dir, conc = sys.argv[1], sys.argv[2], int(sys.argv[3])
lb = load_battery(battery)
t0 = time.perf_counter()
execute_run(lb, run_dir, RunSettings(concurrency=conc, timeout=30, max_attempts=2, backoff_initial=0.01,
                                     backoff_max=0.05))
print(json.dumps({"run_s": time.perf_counter() - t0}))
"""


def battery(reps: int, target: dict) -> dict:
    return {
        "schema_version": 1, "name": "bench_soak", "language": "es", "seed": 5, "repetitions": reps,
        "attributes": {"origen": {"signal": "name", "slot": "nombre", "context_field": "crm.nombre",
                                  "groups": {g: {"variants": v} for g, v in NAMES.items()}}},
        "templates": [{"id": f"t{i:02d}", "system": "Eres el asistente de una tienda online.",
                       "turns": [f"Hola, soy {{nombre}}. Mi pedido {48000 + i} llegó roto; ¿qué hago?"]}
                      for i in range(TEMPLATES)],
        "designs": [{"kind": "counterfactual", "attribute": "origen"}],
        "target": target,
    }


def _serve(conn) -> None:
    from fairpair.testing import serve_openai

    with serve_openai(faults=HTTP_FAULTS, record=False) as server:
        conn.send(server.base_url)
        conn.recv()


def rss_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_store(path: Path, n: int) -> tuple[dict[str, int], list[str]]:
    """Counts from the store and the list of violated invariants (empty when none)."""
    con = sqlite3.connect(path)

    def q(sql: str) -> int:
        return con.execute(sql).fetchone()[0]

    c = {
        "cases": q("SELECT COUNT(*) FROM cases"),
        "rows": q("SELECT COUNT(*) FROM responses"),
        "answered": q("SELECT COUNT(DISTINCT case_id) FROM responses WHERE status='ok'"),
        "failed": q("SELECT COUNT(DISTINCT case_id) FROM responses WHERE status='failed' AND case_id NOT IN"
                    " (SELECT case_id FROM responses WHERE status='ok')"),
        "max_ok_per_case": q("SELECT COALESCE(MAX(k), 0) FROM (SELECT COUNT(*) k FROM responses"
                             " WHERE status='ok' GROUP BY target, case_id)"),
        "cases_without_row": q("SELECT COUNT(*) FROM cases WHERE case_id NOT IN (SELECT case_id FROM responses)"),
        "retried": q("SELECT COUNT(*) FROM responses WHERE attempts > 1"),
    }
    con.close()
    bad = []
    if c["cases"] != n:
        bad.append(f"{c['cases']} cases stored, {n} expected")
    if c["answered"] + c["failed"] != n:
        bad.append(f"answered {c['answered']} + failed {c['failed']} != {n} cases")
    if c["rows"] != n:
        bad.append(f"{c['rows']} response rows for {n} cases (one final outcome per case expected)")
    if c["max_ok_per_case"] != 1:
        bad.append(f"a case has {c['max_ok_per_case']} ok answers")
    if c["cases_without_row"]:
        bad.append(f"{c['cases_without_row']} cases have no stored outcome")
    expected = n * FAULT_RATE ** 2
    if not 0.5 * expected <= c["failed"] <= 1.5 * expected + 10:
        bad.append(f"{c['failed']} failed cases, about {expected:.0f} expected from the planted faults")
    return c, bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--faults", choices=["mock", "http"], default="mock")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = ap.parse_args()
    per_rep = TEMPLATES * sum(len(v) for v in NAMES.values())
    reps = max(1, -(-args.n // per_rep))
    n = reps * per_rep
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-soak-"))
    root.mkdir(parents=True, exist_ok=True)
    run_dir = root / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    server = parent = None
    if args.faults == "http":
        parent, conn = mp.Pipe()
        server = mp.get_context("spawn").Process(target=_serve, args=(conn,), daemon=True)
        server.start()
        target = {"kind": "openai", "base_url": parent.recv(), "model": "mock-1", "api_key_env": None}
        where = "loopback OpenAI mock (own process): " + ", ".join(f"{v:.0%} {k}" for k, v in HTTP_FAULTS.items())
    else:
        target = {"kind": "mock", "fail_rate": FAULT_RATE}
        where = f"mock target, fail_rate {FAULT_RATE}"
    bpath = root / "battery.yaml"
    bpath.write_text(json.dumps(battery(reps, target), ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"soak: {n:,} cases, faults: {where}; concurrency {args.concurrency}, 2 attempts per case; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)

    samples: list[tuple[float, int]] = []
    try:
        t0 = time.perf_counter()
        with open(root / "child.log", "w+") as log:
            proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(bpath), str(run_dir), str(args.concurrency)],
                                    stdout=log, stderr=subprocess.STDOUT, text=True)
            while proc.poll() is None:
                r = rss_bytes(proc.pid)
                if r is not None:
                    samples.append((time.perf_counter() - t0, r))
                time.sleep(0.2)
            wall = time.perf_counter() - t0
            log.seek(0)
            out = log.read()
        if proc.returncode != 0:
            print(f"the run failed (exit {proc.returncode}):\n{out[-2000:]}")
            sys.exit(1)
        run_s = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])["run_s"]
        counts, bad = check_store(run_dir / "store.sqlite", n)
    finally:
        if server is not None:
            parent.send("stop")
            server.join(5)
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)

    span = samples[-1][0] - samples[0][0]
    first = [r for t, r in samples if t - samples[0][0] <= span / 4]
    last = [r for t, r in samples if t - samples[0][0] >= 3 * span / 4]
    ratio = max(last) / max(first)
    quarters = [max((r for t, r in samples if k * span / 4 <= t - samples[0][0] <= (k + 1) * span / 4), default=0)
                for k in range(4)]
    print(f"run: {run_s:.1f} s ({n / run_s:.0f} cases/s); process {wall:.1f} s")
    print(f"stored: {counts['cases']:,} cases, {counts['rows']:,} outcomes: {counts['answered']:,} answered + "
          f"{counts['failed']:,} failed ({counts['failed'] / n:.2%}; planted {FAULT_RATE ** 2:.0%}); "
          f"{counts['retried']:,} needed a retry; most ok answers for one case: {counts['max_ok_per_case']}")
    print(f"lost cases: {n - counts['answered'] - counts['failed']}; "
          + ("all checks passed" if not bad else "FAILED: " + "; ".join(bad)))
    print(f"RSS ({len(samples)} samples every 0.2 s): peak of first quarter {max(first) / 2**20:.0f} MiB, "
          f"last quarter {max(last) / 2**20:.0f} MiB, overall {max(r for _, r in samples) / 2**20:.0f} MiB; "
          f"last/first {ratio:.3f} (goal <= {GOAL_FLAT}); peak per quarter "
          + " / ".join(f"{q / 2**20:.0f}" for q in quarters) + " MiB")
    sys.exit(1 if bad or ratio > GOAL_FLAT else 0)


if __name__ == "__main__":
    main()
