"""Benchmark: a fleet of 4 endpoints, one killed mid-run (``python benchmarks/bench_fleet.py``).

Each endpoint is an aiohttp OpenAI-compatible loopback server
(:func:`fairpair.testing._aio.serve_fleet`) in its own process, answering
after a fixed latency (default 0.5 s); the ``openai`` target lists the
endpoints in ``base_url`` with ``endpoint_concurrency`` C (default 8), and the
run engine's concurrency is 4 x C. In one session:

1. **3 endpoints, none killed**: N cases (default 1,200): the throughput of
   three endpoints' worth of capacity, measured;
2. **4 endpoints, one killed** (SIGKILL of its process) once a quarter of the
   cases are answered: the same N cases into a fresh store.

It prints cases/s of both, the ideal ``endpoints x C / latency`` of each,
the ratio of run 2 to run 1 (goal: >= 0.90: losing one of four endpoints
costs no more than its share), and checks the store of run 2: every case
answered, none twice, no failure stored.

Options: ``--n N`` (a multiple of 80), ``--latency S``, ``--per-endpoint C``,
``--kill-at F`` (share of answers before the kill).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import tempfile
import threading
import time
from pathlib import Path

from fairpair.battery import load_battery
from fairpair.cases import expand
from fairpair.run import RunSettings, Store, run_target
from fairpair.targets.openai import OpenAITarget
from fairpair.testing._battery import names_table, write_battery


def _serve(latency: float, conn) -> None:
    from fairpair.testing._aio import serve_fleet

    with serve_fleet(1, latency=latency, names=names_table()) as (server,):
        conn.send(server.base_url)
        conn.recv()


def _start(n: int, latency: float) -> tuple[list[mp.Process], list[str], list]:
    ctx = mp.get_context("spawn")
    procs, urls, conns = [], [], []
    for _ in range(n):
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_serve, args=(latency, child), daemon=True)
        p.start()
        procs.append(p)
        conns.append(parent)
    for c in conns:
        urls.append(c.recv())
    return procs, urls, conns


def _run(urls: list[str], battery, n_workers: int, per_endpoint: int, store_dir: Path, *,
         kill: tuple[mp.Process, float, int] | None = None) -> tuple[float, OpenAITarget, Store]:
    target = OpenAITarget({"model": "mock-1", "base_url": urls, "api_key_env": None,
                           "endpoint_concurrency": per_endpoint}, name="fleet")
    store = Store.open(store_dir)
    store.add_cases(expand(battery))
    settings = RunSettings(concurrency=n_workers, timeout=30, max_attempts=5, backoff_initial=0.05, backoff_max=1.0)
    done = [0]

    def on_done(case_id, completion, error):
        done[0] += 1

    if kill is not None:
        proc, share, total = kill

        def killer():
            while done[0] < share * total:
                time.sleep(0.005)
            proc.kill()

        threading.Thread(target=killer, daemon=True).start()

    async def go():
        try:
            return await run_target(store, "fleet", target, expand(battery), settings, on_done=on_done)
        finally:
            await target.aclose()

    t0 = time.perf_counter()
    asyncio.run(go())
    return time.perf_counter() - t0, target, store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1200)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--per-endpoint", type=int, default=8)
    ap.add_argument("--kill-at", type=float, default=0.25)
    a = ap.parse_args()
    templates, reps = 10, max(1, a.n // 80)
    n = templates * 8 * reps
    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        battery = load_battery(write_battery(tmp / "b", {"kind": "openai", "base_url": "http://127.0.0.1:1/v1",
                                                         "model": "mock-1", "api_key_env": None},
                                             templates=templates, repetitions=reps))
        procs, urls, conns = _start(4, a.latency)
        try:
            c = a.per_endpoint
            t3, _, s3 = _run(urls[:3], battery, 3 * c, c, tmp / "three")
            ok3 = s3.counts("fleet")["answered"]
            s3.close()
            t4, target, s4 = _run(urls, battery, 4 * c, c, tmp / "four", kill=(procs[2], a.kill_at, n))
            rows = s4.conn.execute("SELECT status, COUNT(*), COUNT(DISTINCT case_id) FROM responses GROUP BY status"
                                   ).fetchall()
            s4.close()
        finally:
            for conn in conns:
                try:
                    conn.send("stop")
                except (OSError, BrokenPipeError):
                    pass
            for p in procs:
                p.kill()
    rate3, rate4 = n / t3, n / t4
    ideal3 = 3 * a.per_endpoint / a.latency
    by = {s: (k, d) for s, k, d in rows}
    ok, distinct = by.get("ok", (0, 0))
    report = target.fleet_report()
    dead = report["endpoints"][2]
    print(f"{n} cases, latency {a.latency} s, {a.per_endpoint} in flight per endpoint")
    print(f"3 endpoints, none killed : {t3:7.2f} s  {rate3:7.1f} cases/s  (ideal {ideal3:.1f}: "
          f"{rate3 / ideal3:.3f}), {ok3} answered")
    print(f"4 endpoints, 1 killed at {a.kill_at:.0%}: {t4:7.2f} s  {rate4:7.1f} cases/s  (ideal before the kill "
          f"{4 * a.per_endpoint / a.latency:.1f}, after {ideal3:.1f})")
    print(f"killed endpoint: {dead['answered']} answered before it died, drained {dead['drains']} time(s), "
          f"last error: {dead['last_error']}")
    print(f"store: {ok} ok rows for {distinct} distinct cases of {n}; failed rows: {by.get('failed', (0, 0))[0]}")
    print(f"all answered, none twice: {ok == distinct == n and 'failed' not in by}")
    print(f"throughput ratio (4 with one killed) / (3 endpoints): {rate4 / rate3:.3f} (goal >= 0.90)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
