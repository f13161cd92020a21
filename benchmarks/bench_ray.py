"""Benchmark: the Ray engine against the in-process engine (``python benchmarks/bench_ray.py``).

Needs Ray (``pip install 'fairpair[ray]'``). A local Ray is started with
``--cpus`` logical CPUs (default 4, so four actors fit; the target only waits).

Throughput (steady: cases/s between the first and the last answer, so the
actors' start, printed in the wall time, is left out): the ``mock`` target with a fixed latency of 200 ms per answer
(latency-bound, as an endpoint is); ``--n`` cases at a total concurrency of
``--concurrency`` (default 16), first on the in-process engine, then on the
Ray engine with 1, 2 and 4 actors sharing the same total concurrency. With no
overhead the rate is ``concurrency / latency`` (16 / 0.2 s = 80 cases/s). The
script prints cases/s, the ideal, each rate per unit of concurrency, and the
ratio Ray / in-process (goal: >= 0.90: the engine adds no bottleneck).

Driver memory: ``--memory-n`` cases (default 20,000) through the Ray engine
with a target that answers at once (the worst case for the driver: results
arrive as fast as Ray delivers them), 2 actors, concurrency 64; the driver's
resident memory is sampled every tenth of the run and printed, with its
growth per 10,000 cases.

Every answer is committed to a fresh run store, as in ``fairpair run``.
Options: ``--n``, ``--concurrency``, ``--latency``, ``--actors 1,2,4``,
``--memory-n`` (0 skips), ``--cpus``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from fairpair.battery import load_battery
from fairpair.cases import expand
from fairpair.run import RunSettings, Store, run_target
from fairpair.run._ray import run_target_ray
from fairpair.run._runner import build_target
from fairpair.testing._battery import write_battery


def _rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _battery(tmp: Path, n: int, latency: float):
    templates = max(1, round(n / 8 / 10))
    reps = max(1, -(-n // (templates * 8)))
    lb = load_battery(write_battery(tmp, {"kind": "mock", "latency": latency, "refund": 0.5},
                                    templates=templates, repetitions=reps))
    return lb, list(itertools.islice(expand(lb), n))


def _inprocess(tmp: Path, lb, cases, settings: RunSettings) -> tuple[float, int, float]:
    store = Store.open(tmp)
    store.add_cases(cases)
    spec = lb.battery.target_specs()["mock"]
    target = build_target("mock", spec, base_dir=lb.path.parent, language=lb.battery.language)
    t0 = time.perf_counter()
    times: list[float] = []
    stats = asyncio.run(run_target(store, "mock", target, cases, settings,
                                   on_done=lambda *_: times.append(time.perf_counter())))
    wall = time.perf_counter() - t0
    store.close()
    return wall, stats.answered, _steady(times)


def _steady(times: list[float]) -> float:
    """Cases/s between the first and the last answer (start-up left out)."""
    return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and times[-1] > times[0] else float("nan")


def _ray(tmp: Path, lb, cases, settings: RunSettings, on_done=None, n: int | None = None
         ) -> tuple[float, int, float]:
    """``cases`` a list, or (``n`` given) None: the battery's first ``n`` cases, expanded lazily twice."""
    store = Store.open(tmp)
    store.add_cases(cases if n is None else itertools.islice(expand(lb), n))
    if n is not None:
        cases = itertools.islice(expand(lb), n)
    spec = lb.battery.target_specs()["mock"]
    t0 = time.perf_counter()
    times: list[float] = []

    def done(*args) -> None:
        times.append(time.perf_counter())
        if on_done:
            on_done(*args)

    stats = run_target_ray(store, "mock", spec, iter(cases), settings, base_dir=lb.path.parent,
                           language=lb.battery.language, on_done=done)
    wall = time.perf_counter() - t0
    store.close()
    return wall, stats.answered, _steady(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=960)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--actors", default="1,2,4")
    ap.add_argument("--memory-n", type=int, default=20_000)
    ap.add_argument("--cpus", type=int, default=4)
    a = ap.parse_args()

    import ray

    src = str(Path(__file__).resolve().parents[1] / "src")
    ray.init(num_cpus=a.cpus, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": src}})
    base = RunSettings(concurrency=a.concurrency, timeout=30, max_attempts=2, preflight=False,
                       max_consecutive_failures=0, engine="ray")
    ideal = a.concurrency / a.latency
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; ray {ray.__version__}; "
          f"{a.n} cases, latency {a.latency * 1000:.0f} ms, total concurrency {a.concurrency}; "
          f"ideal {ideal:.1f} cases/s")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        lb, cases = _battery(tmp / "b", a.n, a.latency)
        # warm Ray's workers (their first start is not the engine's cost)
        _ray(tmp / "warm", lb, cases[:32], replace(base, actors=max(int(x) for x in a.actors.split(","))))
        wall, done, ref = _inprocess(tmp / "inprocess", lb, cases, base)
        print(f"in-process        : {ref:7.1f} cases/s steady ({ref / ideal:.2f} of ideal; "
              f"{ref / a.concurrency:.2f} per unit of concurrency); {done} answered in {wall:.1f} s wall")
        for k in (int(x) for x in a.actors.split(",")):
            wall, done, rate = _ray(tmp / f"ray{k}", lb, cases, replace(base, actors=k))
            print(f"ray, {k} actor(s)  : {rate:7.1f} cases/s steady ({rate / ideal:.2f} of ideal; "
                  f"{rate / a.concurrency:.2f} per unit of concurrency); {done} answered in {wall:.1f} s wall "
                  f"(incl. starting the actors); ray / in-process = {rate / ref:.3f} (goal >= 0.90)")
        print(f"load average {os.getloadavg()[0]:.1f} after the throughput runs")
        if a.memory_n:
            templates = max(1, round(a.memory_n / 8 / 10))
            lbm = load_battery(write_battery(tmp / "m", {"kind": "mock", "latency": 0.0, "refund": 0.5},
                                             templates=templates, repetitions=-(-a.memory_n // (templates * 8))))
            samples: list[tuple[int, float]] = []
            step = max(1, a.memory_n // 10)
            count = [0]

            def on_done(case_id, completion, error) -> None:
                count[0] += 1
                if count[0] % step == 0:
                    samples.append((count[0], _rss_mib()))

            rss0 = _rss_mib()
            wall, done, _ = _ray(tmp / "mem", lbm, None, replace(base, concurrency=64, actors=2), on_done,
                              n=a.memory_n)
            print(f"driver memory, {done} cases through the Ray engine in {wall:.1f} s ({done / wall:.0f} cases/s): "
                  f"RSS before {rss0:.0f} MiB; " + ", ".join(f"{n}: {r:.0f}" for n, r in samples) + " MiB")
            if len(samples) >= 2:
                (n1, r1), (n2, r2) = samples[0], samples[-1]
                print(f"driver RSS growth {(r2 - r1) / max(1, n2 - n1) * 10_000:.1f} MiB per 10,000 cases "
                      f"(from case {n1} to {n2})")
            print(f"load average {os.getloadavg()[0]:.1f} at the end")
    ray.shutdown()


if __name__ == "__main__":
    main()
