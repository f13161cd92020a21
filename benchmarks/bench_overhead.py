"""Benchmark: the run engine's overhead over HTTP (``python benchmarks/bench_overhead.py``).

The mock target is served over HTTP on loopback (:func:`fairpair.testing.serve_openai`)
with a fixed latency of 200 ms per answer; fairpair's engine sends N cases
(default 3,200) with the ``openai`` target at concurrency 64 and stores every
answer in a fresh run store. With no overhead at all the run would take
``N * latency / concurrency`` seconds (64 / 0.2 s = 320 cases/s); the script
prints cases/s, that ideal, and their ratio (goal: >= 0.95), and the engine's
CPU time per case (goal: <= 1.0 ms).

In the same run, the same requests (the bodies the ``openai`` target sent) are
then sent with bare aiohttp (one ``ClientSession``, ``concurrency`` workers,
the answer decoded, nothing stored): the ceiling of a Python client on this
machine at this moment. The ratio fairpair / aiohttp separates the engine's
overhead from the machine's load.

By default the server runs in a child process, as a real endpoint would (on
its own CPU); ``--same-process`` runs it in a thread of this process instead,
sharing the interpreter lock with the engine.

Options: ``--n N`` cases (a multiple of 16), ``--concurrency C``,
``--latency S``, ``--same-process``, ``--profile``, ``--no-bare`` (skip the
bare aiohttp run).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path

from fairpair.battery import load_battery
from fairpair.cases import expand
from fairpair.run import RunSettings, Store, run_target
from fairpair.targets.openai import OpenAITarget
from fairpair.testing import serve_openai
from fairpair.testing._battery import names_table, write_battery


def _serve(latency: float, conn) -> None:
    with serve_openai(latency=latency, names=names_table(), record=False) as server:
        conn.send(server.base_url)
        conn.recv()  # until the parent says stop


async def _bare_aiohttp(url: str, bodies: list[dict], concurrency: int) -> int:
    """Send ``bodies`` with bare aiohttp, ``concurrency`` at a time; returns the answers with text."""
    import aiohttp

    ok = 0
    queue: asyncio.Queue = asyncio.Queue()
    for b in bodies:
        queue.put_nowait(b)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def work() -> None:
            nonlocal ok
            while not queue.empty():
                body = queue.get_nowait()
                async with session.post(url, json=body) as resp:
                    data = await resp.json()
                ok += bool(data["choices"][0]["message"]["content"])

        await asyncio.gather(*(work() for _ in range(concurrency)))
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=3200)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--same-process", action="store_true")
    ap.add_argument("--profile", action="store_true", help="print the engine's 25 costliest functions")
    ap.add_argument("--no-bare", action="store_true", help="skip the bare aiohttp run")
    args = ap.parse_args()
    reps = max(1, args.n // 16)  # the battery has 2 templates x 8 names

    with tempfile.TemporaryDirectory() as tmp:
        if args.same_process:
            ctx = serve_openai(latency=args.latency, names=names_table(), record=False)
            base_url = ctx.__enter__().base_url
            child = None
        else:
            parent, conn = mp.Pipe()
            child = mp.get_context("spawn").Process(target=_serve, args=(args.latency, conn), daemon=True)
            child.start()
            base_url = parent.recv()
        try:
            path = write_battery(tmp, {"kind": "openai", "base_url": base_url, "model": "mock-1",
                                       "api_key_env": None}, repetitions=reps)
            lb = load_battery(path)
            cases = list(expand(lb))
            store = Store.open(Path(tmp) / "run")
            store.add_cases(cases)
            target = OpenAITarget(lb.battery.target.options(), name="openai")
            settings = RunSettings(concurrency=args.concurrency, timeout=30)

            async def go():
                try:
                    return await run_target(store, "openai", target, cases, settings)
                finally:
                    await target.aclose()

            prof = None
            if args.profile:
                import cProfile

                prof = cProfile.Profile()
                prof.enable()
            t0, c0 = time.perf_counter(), time.process_time()
            stats = asyncio.run(go())
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
            if prof is not None:
                import pstats

                prof.disable()
                pstats.Stats(prof).sort_stats("tottime").print_stats(25)
            store.close()
            bare = None
            if not args.no_bare:
                from fairpair.run._engine import request_for

                bodies = [target._payload(request_for(c, [*c.messages, {"role": "user", "content": c.turns[0]}]),
                                          [*c.messages, {"role": "user", "content": c.turns[0]}]) for c in cases]
                b0, bc0 = time.perf_counter(), time.process_time()
                bare_ok = asyncio.run(_bare_aiohttp(target.options.endpoint(), bodies, args.concurrency))
                bare = (bare_ok, time.perf_counter() - b0, time.process_time() - bc0)
        finally:
            if child is not None:
                parent.send("stop")
                child.join(5)
            else:
                ctx.__exit__(None, None, None)

    n = len(cases)
    rate = n / elapsed
    ideal = args.concurrency / args.latency
    print(f"cases: {n} answered {stats.answered} failed {stats.failed}; concurrency {args.concurrency}, "
          f"latency {args.latency * 1000:.0f} ms, server {'in-process' if args.same_process else 'child process'}")
    print(f"elapsed: {elapsed:.2f} s (ideal {n / ideal:.2f} s); engine CPU {cpu * 1000 / n:.2f} ms per case "
          f"({cpu / elapsed:.0%} of one core)")
    print(f"throughput: {rate:.1f} cases/s; ideal {ideal:.1f} cases/s; ratio {rate / ideal:.3f} (goal >= 0.95)")
    if bare is not None:
        bare_ok, bare_s, bare_cpu = bare
        print(f"bare aiohttp, same requests: {bare_ok} answered in {bare_s:.2f} s = {n / bare_s:.1f} cases/s, "
              f"ratio {n / bare_s / ideal:.3f} of the ideal, CPU {bare_cpu * 1000 / n:.2f} ms per request")
        print(f"fairpair / bare aiohttp: {bare_s / elapsed:.3f} of its rate; CPU per case {cpu / bare_cpu:.2f}x; "
              f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
