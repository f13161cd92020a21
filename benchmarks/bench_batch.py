"""Benchmark: 50,000 requests through the Batch API path (``python benchmarks/bench_batch.py``).

A battery of 50,000 one-turn cases (25 templates x 8 names x 250
repetitions) goes through ``fairpair.run._batch`` against the loopback Batch
API (:func:`fairpair.testing._aio.serve_batch_api`, in its own process, so
this process's memory is fairpair's alone), with the run store of a real run:

1. **write + submit**: the cases expanded and stored, the JSONL input file
   written (one file: 50,000 is the per-file limit), uploaded, the batch
   created and recorded;
2. the server answers all 50,000 (the mock's answers; 1 in 50 a 500 in the
   error file) on the first poll;
3. **poll + ingest**: the output and error files downloaded and every line
   stored (answers and failures) in one transaction.

It prints the seconds of each step, the ingest rate (lines per second, the
download included), the input file's size, the peak RSS of each step
(``VmHWM``, reset before each step through ``/proc/self/clear_refs``), and
checks the store: 49,000 answers + 1,000 failures, no case twice.

Options: ``--n N`` (a multiple of 200), ``--fail-every K``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path

from fairpair.battery import load_battery
from fairpair.cases import expand
from fairpair.run import Store
from fairpair.run._batch import batch_session
from fairpair.targets.openai import OpenAITarget
from fairpair.testing._battery import names_table, write_battery


def _serve(fail_every: int, conn) -> None:
    from fairpair.testing._aio import BatchBehaviour, serve_batch_api

    with serve_batch_api(BatchBehaviour(fail_every=fail_every), names=names_table()) as (server, api):
        conn.send(server.base_url)
        conn.recv()


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(module, name: str, spent: dict[str, float]) -> None:
    """Wrap ``module.name`` so the seconds spent in it add up in ``spent[name]``."""
    import asyncio
    import functools

    fn = getattr(module, name)
    if asyncio.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def wrapper(*args, **kw):
            t = time.perf_counter()
            try:
                return await fn(*args, **kw)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t
    else:
        @functools.wraps(fn)
        def wrapper(*args, **kw):
            t = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t
    setattr(module, name, wrapper)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--fail-every", type=int, default=50)
    a = ap.parse_args()
    import fairpair.run._batch as batch_mod

    spent: dict[str, float] = {}
    _timed(batch_mod, "ingest_batch", spent)
    _timed(batch_mod.BatchClient, "download", spent)
    reps = max(1, a.n // 200)
    n = 25 * 8 * reps
    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(a.fail_every, child), daemon=True)
    proc.start()
    base_url = parent.recv()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            block = {"kind": "openai", "base_url": base_url, "model": "mock-1", "api_key_env": None,
                     "max_tokens": 200}
            battery = load_battery(write_battery(tmp / "b", block, templates=25, repetitions=reps))
            run = tmp / "run"
            target = OpenAITarget({k: v for k, v in block.items() if k != "kind"}, name="openai")
            with Store.open(run) as store:
                clear = _reset_peak()
                t0 = time.perf_counter()
                store.add_cases(expand(battery))
                t_cases = time.perf_counter() - t0
                s1 = batch_session(store, run, {"openai": target}, lambda: expand(battery), submit=True)
                t_submit = time.perf_counter() - t0
                peak_submit = _peak_mib()
                (inp,) = (run / "batches").glob("*.input.jsonl")
                size = inp.stat().st_size
                _reset_peak()
                t1 = time.perf_counter()
                s2 = batch_session(store, run, {"openai": target}, lambda: expand(battery), submit=False)
                t_ingest = time.perf_counter() - t1
                peak_ingest = _peak_mib()
                rows = store.conn.execute("SELECT status, COUNT(*), COUNT(DISTINCT case_id) FROM responses"
                                          " GROUP BY status").fetchall()
    finally:
        parent.send("stop")
        proc.join(5)
        proc.kill()
    (ing,) = s2.ingested
    by = {s: (k, d) for s, k, d in rows}
    print(f"{n} requests in {len(s1.submitted)} batch file(s), input {size / 2**20:.1f} MiB")
    print(f"write + submit: {t_submit:7.2f} s (expand and store the cases {t_cases:.2f} s), "
          f"{n / t_submit:,.0f} requests/s; peak RSS {peak_submit:.0f} MiB" + ("" if clear else " (process peak)"))
    print(f"poll + ingest:  {t_ingest:7.2f} s (server-side answering of the batch included), "
          f"{n / t_ingest:,.0f} lines/s; peak RSS {peak_ingest:.0f} MiB")
    t_read = spent.get("ingest_batch", 0.0)
    t_down = spent.get("download", 0.0)
    print(f"  of which download {t_down:.2f} s, reading and storing the lines {t_read:.2f} s: "
          f"{n / t_read:,.0f} lines/s ingested ({n / (t_read + t_down):,.0f} with the download)")
    print(f"stored: {ing['answered']} answers, {ing['failed']} failures; store rows {by}")
    ok = by.get("ok", (0, 0))
    failed = by.get("failed", (0, 0))
    expected_failed = n // a.fail_every if a.fail_every else 0
    print(f"every case once: {ok[0] == ok[1] and failed[0] == failed[1] and ok[0] + failed[0] == n}; "
          f"failures as planted ({expected_failed}): {failed[0] == expected_failed}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
