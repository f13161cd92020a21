"""Benchmark: the judge's calls on the Ray engine against in-process (``python benchmarks/bench_ray_measures.py``).

Needs Ray (``pip install 'fairpair[ray]'``). A run of ``--n`` answers is
made first (the ``mock`` target, in-process, not timed); then its ``tone``
judge measure (one judge call per answer) is measured with a latency-bound
scripted judge (:class:`fairpair.testing.ScriptedJudge`, ``--latency``
seconds per call, 200 ms by default, as an endpoint is) at a total
concurrency of ``--concurrency`` (16): first in-process, then on a local Ray
(``--cpus`` logical CPUs, default 4) with 1, 2 and 4 judge actors, each on a
fresh copy of the run. With no overhead the rate is ``concurrency / latency``
(80 judge calls/s).

Printed per engine: judge calls/s from the moment the judge is ready (for
Ray: its actors up; their start is printed apart, in the wall time), the
rate per unit of concurrency, the ratio Ray / in-process (goal: >= 0.90, the
engine adds no bottleneck), the driver's CPU per judge call (masking,
prompts, parsing, commits, and for Ray the dispatch of the calls in
chunks). Every result is committed to the run's store by
the driver, as in ``fairpair measure``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from fairpair.battery import load_battery
from fairpair.measures import measure_run
from fairpair.run import RunSettings, execute_run
from fairpair.testing import ScriptedJudge, write_battery


def _make_run(tmp: Path, n: int) -> Path:
    templates = max(1, round(n / 8 / 10))
    path = write_battery(tmp / "b", {"kind": "mock", "refund": 0.5}, templates=templates,
                         repetitions=-(-n // (templates * 8)))
    import yaml

    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["measures"] = {"tone": {"kind": "judge"}}
    doc["judge_self_test"] = "off"
    doc.pop("analysis", None)
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    run = tmp / "run"
    execute_run(load_battery(path), run, RunSettings(concurrency=64, preflight=False))
    return run


def _measure(run: Path, settings: RunSettings, latency: float) -> dict:
    pools: list = []
    ready: list[tuple[float, float]] = []

    def on_pool(handles) -> None:
        pools.append(handles)
        ready.append((time.perf_counter(), time.process_time()))

    judge = ScriptedJudge(latency=latency)
    t0, c0 = time.perf_counter(), time.process_time()
    res = measure_run(run, judge=judge, settings=settings, ray_pool=on_pool)
    t1, c1 = time.perf_counter(), time.process_time()
    if ready:
        t0, c0 = ready[0]
    return {"wall": t1 - t0, "cpu": c1 - c0, "ok": res.counts["tone"].ok, "failed": res.counts["tone"].failed,
            "calls": judge.calls}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=640)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--actors", default="1,2,4")
    ap.add_argument("--cpus", type=int, default=4)
    a = ap.parse_args()

    import ray

    src = str(Path(__file__).resolve().parents[1] / "src")
    ray.init(num_cpus=a.cpus, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": src}})
    ideal = a.concurrency / a.latency
    base = RunSettings(concurrency=a.concurrency, timeout=30, max_attempts=2)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        run = _make_run(tmp, a.n)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; ray {ray.__version__}; "
              f"{a.n} answers, judge latency {a.latency * 1000:.0f} ms, total concurrency {a.concurrency}; "
              f"ideal {ideal:.1f} judge calls/s")
        warm = tmp / "warm"
        shutil.copytree(run, warm)  # Ray's first worker start is not the engine's cost
        _measure(warm, RunSettings(**{**base.__dict__, "engine": "ray", "actors": 1}), 0.0)
        fresh = tmp / "inprocess"
        shutil.copytree(run, fresh)
        r = _measure(fresh, base, a.latency)
        calls_per_answer = r["calls"] / max(1, r["ok"])
        ref = r["calls"] / r["wall"]
        print(f"in-process        : {ref:7.1f} judge calls/s ({ref / ideal:.2f} of ideal; "
              f"{ref / a.concurrency:.2f} per unit of concurrency); {r['ok']} answers measured, {r['failed']} "
              f"failed; driver CPU {r['cpu'] / r['calls'] * 1000:.2f} ms per judge call")
        for k in (int(x) for x in a.actors.split(",")):
            fresh = tmp / f"ray{k}"
            shutil.copytree(run, fresh)
            t_start = time.perf_counter()
            r = _measure(fresh, RunSettings(**{**base.__dict__, "engine": "ray", "actors": k}), a.latency)
            total = time.perf_counter() - t_start
            calls = r["ok"] * calls_per_answer
            rate = calls / r["wall"]
            print(f"ray, {k} actor(s)  : {rate:7.1f} judge calls/s ({rate / ideal:.2f} of ideal; "
                  f"{rate / a.concurrency:.2f} per unit of concurrency); ray / in-process = {rate / ref:.3f} "
                  f"(goal >= 0.90); {r['ok']} measured, {r['failed']} failed; driver CPU "
                  f"{r['cpu'] / calls * 1000:.2f} ms per judge call; {total:.1f} s wall incl. starting the actors")
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    ray.shutdown()


if __name__ == "__main__":
    main()
