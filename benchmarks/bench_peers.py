"""Benchmark: fairpair against the tools a user would otherwise pick, same workload, same server.

Workload: the 1,200 conversations of ``examples/tienda_online/battery.yaml``
(20 templates x 4 origin groups x 3 names x 5 repetitions), sent to the mock
target served over HTTP on loopback (:func:`fairpair.testing.serve_openai`,
in its own process) with a fixed latency (default 200 ms), at the same
concurrency (default 64), with the same sampling parameters (temperature 0.7,
at most 160 tokens). Each tool runs in its own process:

* **fairpair**: ``execute_run`` (what ``fairpair run --no-measure`` does:
  expand, store the cases, send the preflight case alone, answer each case
  with the ``openai`` target, commit every answer to the run store, write the
  manifest with the answer statuses). Its clock starts after the battery is
  loaded and the target's module (and so aiohttp) is imported, as every
  other row's client is imported before its clock; the process column has
  the imports.
* **inspect_ai** (UK AISI): a ``Task`` whose dataset is the same rendered
  conversations (from the expansion), solver ``generate()``, no scorer,
  model ``openai-api/loopback/mock-1`` (its OpenAI-compatible provider) with
  ``max_connections`` = the concurrency; it writes its usual ``.eval`` log.
* **fp-engine**: fairpair's engine alone in the peers' scope: the battery
  expanded and its cases stored before the clock starts, then ``run_target``
  (the engine ``run`` uses) with the ``openai`` target, every answer committed,
  no preflight case. Its cases are the expanded list in memory (``run`` reads
  them back from its store, about 0.03 ms a case, inside its clock).
* **aiohttp** (bare): the same rendered conversations posted with one
  ``aiohttp.ClientSession`` by ``concurrency`` workers, each answer decoded,
  nothing stored: the ceiling of a Python client on this machine at this
  moment, run in the same session as the others so that fairpair's ratio to
  it is read under the same load.
* **LangFair** (CVS Health): ``ResponseGenerator.generate_responses`` with a
  langchain ``ChatOpenAI`` on the loopback server built as LangFair's docs do
  (``max_calls_per_min`` unlimited; the openai SDK's own HTTP client and
  transport, none handed in). LangFair takes one
  system prompt for all prompts and one user string per prompt, while the
  battery's system prompt differs per case (its CRM record and the customer's
  name): each case's system prompt and any earlier exchange are written into
  its user string (same bytes to send, one message instead of two or four).

Peers live in their own virtual environments (their dependencies are many):
``--inspect-python`` / ``--langfair-python`` name their interpreters; a peer
whose interpreter is not given is skipped with a note. Install them with, e.g.::

    python3 -m venv /tmp/peers/inspect && /tmp/peers/inspect/bin/pip install inspect-ai openai
    python3 -m venv /tmp/peers/langfair && /tmp/peers/langfair/bin/pip install langfair langchain-openai

Printed per tool: the requests the server received, answers obtained, the
time of the sending call (``core``) and of the whole process (imports,
set-up, logs: what a user waits for), cases per second of each, the CPU time
of the sending call per request (``core ms``) and of the whole process, and
fairpair's ratio to each peer (goal: >= 1 against the fastest, both ways).
The ideal: ``n`` requests, at most ``c`` in flight, each taking the latency ``L``
at least, cannot finish before ``ceil(n / c) * L`` (whole waves: 1,200 / 64 =
18.75, so 19 waves of 200 ms = 3.80 s); every ``/ideal`` ratio printed is that
least time over the time measured (1.0 = no time lost at all). The rate bound
``c / L`` (``n * L / c`` = 3.75 s, as if a wave could be cut) is printed beside
it (``/(c/L)``) so the two can be compared. fairpair's whole call sends its
preflight case alone first, as it must, so its own least time is
``L + ceil((n - 1) / c) * L`` (4.00 s here: 0.950 of the ideal), printed too.
fairpair's goals against the ideal: >= 0.95 of it and <= 1.0 ms of CPU per request.

Usage: ``python benchmarks/bench_peers.py --inspect-python /tmp/peers/inspect/bin/python
--langfair-python /tmp/peers/langfair/bin/python [--n 1200] [--concurrency 64] [--latency 0.2]
[--repeat R]`` (``--repeat``: run the sequence of tools R times, interleaved, to see the noise).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BATTERY = ROOT / "examples" / "tienda_online" / "battery.yaml"
MODEL = "mock-1"
TEMPERATURE, MAX_TOKENS = 0.7, 160


def _serve(latency: float, conn) -> None:
    from fairpair.testing import serve_openai

    with serve_openai(latency=latency, record=False) as server:
        conn.send(server.base_url)
        while True:
            msg = conn.recv()
            if msg == "count":  # requests so far, the most in flight at once and the sending window
                conn.send((server.n_requests, server.max_in_flight, server.first_at, server.last_reply_at))
                server.max_in_flight = 0
                server.first_at = server.last_reply_at = None
            else:
                return


_FAIRPAIR = """
import json, sys, time
t0 = time.perf_counter()
from fairpair.battery import load_battery
from fairpair.run import RunSettings, Store, execute_run
import fairpair.targets.openai  # the target's HTTP client (aiohttp), imported before the clock as every row's is
battery, run_dir, conc, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lb = load_battery(battery)
t1, c1 = time.perf_counter(), time.process_time()
execute_run(lb, run_dir, RunSettings(concurrency=conc, timeout=60))
t2, c2 = time.perf_counter(), time.process_time()
with Store.open(run_dir, create=False) as s:
    c = s.counts()
print(json.dumps({"core_s": t2 - t1, "core_cpu_s": c2 - c1, "answered": c["answered"], "failed": c["failed"]}))
"""

_FAIRPAIR_ENGINE = """
import asyncio, json, sys, time
t0 = time.perf_counter()
from pathlib import Path
from fairpair.battery import load_battery
from fairpair.cases import expand
from fairpair.run import RunSettings, Store, run_target
from fairpair.targets.openai import OpenAITarget
battery, run_dir, conc = sys.argv[1], sys.argv[2], int(sys.argv[3])
lb = load_battery(battery)
cases = list(expand(lb))  # the same scope as the peers: the conversations are rendered before the clock
store = Store.open(Path(run_dir))
store.add_cases(cases)
target = OpenAITarget(lb.battery.target.options(), name="openai")
async def go():
    try:
        return await run_target(store, "openai", target, cases, RunSettings(concurrency=conc, timeout=60),
                                tools=lb.battery.all_tools() or None, tool_map=lb.battery.all_tool_results() or None)
    finally:
        await target.aclose()
t1, c1 = time.perf_counter(), time.process_time()
stats = asyncio.run(go())
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"core_s": t2 - t1, "core_cpu_s": c2 - c1, "answered": stats.answered, "failed": stats.failed}))
"""

_AIOHTTP = """
import asyncio, json, sys, time
t0 = time.perf_counter()
import aiohttp
prompts, base_url, conc = sys.argv[1], sys.argv[2], int(sys.argv[3])
model, temperature, max_tokens = json.loads(sys.argv[4])
rows = [json.loads(l) for l in open(prompts, encoding="utf-8")]
bodies = [{"model": model, "messages": r["messages"], "temperature": temperature, "max_tokens": max_tokens,
           "seed": r["seed"]} for r in rows]
async def main():
    ok = 0
    queue = asyncio.Queue()
    for b in bodies:
        queue.put_nowait(b)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def work():
            nonlocal ok
            while not queue.empty():
                body = queue.get_nowait()
                async with session.post(base_url + "/chat/completions", json=body) as resp:
                    data = await resp.json()
                ok += bool(data["choices"][0]["message"]["content"])
        await asyncio.gather(*(work() for _ in range(conc)))
    return ok
t1, c1 = time.perf_counter(), time.process_time()
ok = asyncio.run(main())
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"core_s": t2 - t1, "core_cpu_s": c2 - c1, "answered": ok, "failed": len(rows) - ok}))
"""

_INSPECT = """
import json, os, sys, time
t0 = time.perf_counter()
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser
from inspect_ai.solver import generate
prompts, base_url, conc, log_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
os.environ["LOOPBACK_BASE_URL"] = base_url
os.environ["LOOPBACK_API_KEY"] = "none"
kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
rows = [json.loads(l) for l in open(prompts, encoding="utf-8")]
samples = [Sample(id=r["id"], input=[kinds[m["role"]](content=m["content"]) for m in r["messages"]])
           for r in rows]
task = Task(dataset=MemoryDataset(samples), solver=generate(), name="tienda_online")
t1, c1 = time.perf_counter(), time.process_time()
model, temperature, max_tokens = json.loads(sys.argv[5])
logs = eval(task, model=f"openai-api/loopback/{model}", max_connections=conc, max_samples=conc,
            temperature=temperature, max_tokens=max_tokens, log_dir=log_dir, display="none", log_level="error")
t2, c2 = time.perf_counter(), time.process_time()
ok = sum(1 for s in (logs[0].samples or []) if s.error is None and s.output and s.output.completion)
print(json.dumps({"core_s": t2 - t1, "core_cpu_s": c2 - c1, "answered": ok, "failed": len(rows) - ok,
                  "status": logs[0].status}))
"""

_LANGFAIR = """
import asyncio, json, sys, time
t0 = time.perf_counter()
from langchain_openai import ChatOpenAI
from langfair.generator import ResponseGenerator
prompts, base_url, conc = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [json.loads(l) for l in open(prompts, encoding="utf-8")]
# LangFair takes one system prompt for all prompts and one user string per prompt; the battery's
# system prompt differs per case (its CRM record and the customer's name), so each case's system
# prompt, and any earlier exchange, is written into its user string, with an empty system prompt.
system = ""
def flat(msgs):
    names = {"system": "Sistema", "user": "Cliente", "assistant": "Asistente"}
    return "\\n\\n".join(f"{names[m['role']]}: {m['content']}" for m in msgs)
model, temperature, max_tokens = json.loads(sys.argv[4])
# As LangFair's own docs build it: a plain ChatOpenAI, whose openai SDK brings its own HTTP client and
# transport (an httpx.AsyncClient handed in here ran on another transport than the SDK's and cost
# about 5x the time and 7x the CPU per request: a crippled harness, not LangFair).
llm = ChatOpenAI(model=model, base_url=base_url, api_key="none", temperature=temperature, max_tokens=max_tokens,
                 max_retries=2)
gen = ResponseGenerator(langchain_llm=llm, max_calls_per_min=None)
texts = [flat(r["messages"]) for r in rows]
t1, c1 = time.perf_counter(), time.process_time()
out = asyncio.run(gen.generate_responses(prompts=texts, system_prompt=system, count=1))
t2, c2 = time.perf_counter(), time.process_time()
resp = out["data"]["response"]
ok = sum(1 for r in resp if isinstance(r, str) and r and r != "Unable to get response")
print(json.dumps({"core_s": t2 - t1, "core_cpu_s": c2 - c1, "answered": ok, "failed": len(rows) - ok}))
"""


def prepare(work: Path, base_url: str, n: int) -> tuple[Path, Path, int]:
    """Write the loopback battery (openai target) and the rendered conversations; returns their paths."""
    from fairpair.battery import load_battery
    from fairpair.cases import expand

    data = yaml.safe_load(BATTERY.read_text(encoding="utf-8"))
    data["target"] = {"kind": "openai", "base_url": base_url, "model": MODEL, "api_key_env": None,
                      "temperature": TEMPERATURE, "max_tokens": MAX_TOKENS}
    for f in BATTERY.parent.glob("*.md"):
        shutil.copy(f, work / f.name)
    bpath = work / "battery.yaml"
    bpath.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    cases = list(expand(load_battery(bpath)))
    if n < len(cases):  # a smaller run: whole repetitions first, so every template is represented
        cases = sorted(cases, key=lambda c: (c.repetition, c.template))[:n]
        data["repetitions"] = max(c.repetition for c in cases) + 1
        bpath.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
        cases = list(expand(load_battery(bpath)))
    ppath = work / "prompts.jsonl"
    with open(ppath, "w", encoding="utf-8") as fh:
        for c in cases:
            msgs = [*c.messages, {"role": "user", "content": c.turns[0]}]
            fh.write(json.dumps({"id": c.id, "seed": c.seed, "messages": msgs}, ensure_ascii=False) + "\n")
    return bpath, ppath, len(cases)


def run_child(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, dict | str]:
    """Run one tool's process; returns (wall s, CPU s of the process and its children, result or error)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env)
        _pid, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    cpu = ru.ru_utime + ru.ru_stime
    if os.waitstatus_to_exitcode(status) != 0:
        return wall, cpu, (stderr or stdout).strip()[-1500:]
    last = [line for line in stdout.splitlines() if line.startswith("{")]
    return wall, cpu, json.loads(last[-1]) if last else f"no result line in: {stdout[-500:]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1200, 
                    help="cases, rounded up to whole repetitions (240 each; default all 1,200)")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--inspect-python", help="python of a virtual environment with inspect-ai installed")
    ap.add_argument("--langfair-python", help="python of a virtual environment with langfair, langchain-openai")
    ap.add_argument("--only", choices=["fairpair", "fp-engine", "aiohttp", "inspect_ai", "langfair"], action="append",
                    help="run only these tools (repeatable)")
    ap.add_argument("--repeat", type=int, default=1, help="run the tools this many times, interleaved")
    args = ap.parse_args()

    parent, conn = mp.Pipe()
    server = mp.get_context("spawn").Process(target=_serve, args=(args.latency, conn), daemon=True)
    server.start()
    base_url = parent.recv()
    work = Path(tempfile.mkdtemp(prefix="bench-peers-"))
    results: dict[str, list[tuple[float, dict]]] = {}
    notes: list[str] = []
    try:
        bpath, ppath, n = prepare(work, base_url, args.n)
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        params = json.dumps([MODEL, TEMPERATURE, MAX_TOKENS])
        tools: list[tuple[str, list[str] | None]] = [
            ("fairpair", [sys.executable, "-c", _FAIRPAIR, str(bpath), str(work / "run"), str(args.concurrency),
                          str(n)]),
            ("fp-engine", [sys.executable, "-c", _FAIRPAIR_ENGINE, str(bpath), str(work / "run-engine"),
                           str(args.concurrency)]),
            ("aiohttp", [sys.executable, "-c", _AIOHTTP, str(ppath), base_url, str(args.concurrency), params]),
            ("inspect_ai", [args.inspect_python, "-c", _INSPECT, str(ppath), base_url, str(args.concurrency),
                            str(work / "inspect-logs"), params] if args.inspect_python else None),
            ("langfair", [args.langfair_python, "-c", _LANGFAIR, str(ppath), base_url, str(args.concurrency), params]
             if args.langfair_python else None),
        ]
        print(f"workload: {n} conversations of {BATTERY.relative_to(ROOT)}; server: loopback mock in its own "
              f"process, latency {args.latency * 1000:.0f} ms; concurrency {args.concurrency}; "
              f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
        for rep in range(max(1, args.repeat)):
            for name, cmd in tools:
                if args.only and name not in args.only:
                    continue
                if cmd is None:
                    if rep == 0:
                        notes.append(f"{name}: skipped (no --{name.split('_')[0]}-python given)")
                    continue
                if not Path(cmd[0]).exists():
                    if rep == 0:
                        notes.append(f"{name}: skipped ({cmd[0]} does not exist)")
                    continue
                if name in ("fairpair", "fp-engine"):  # a fresh run each time, never a resume
                    shutil.rmtree(work / "run", ignore_errors=True)
                    shutil.rmtree(work / "run-engine", ignore_errors=True)
                parent.send("count")
                before, *_ = parent.recv()
                wall, cpu, out = run_child(cmd, env)
                parent.send("count")
                sent, in_flight, first_at, last_at = parent.recv()
                sent -= before
                if isinstance(out, str):
                    notes.append(f"{name}: FAILED after {wall:.1f} s:\n{out}")
                    continue
                window = (last_at - first_at) if first_at is not None and last_at is not None else float("nan")
                out.update(requests=sent, in_flight=in_flight, cpu_s=cpu, load=os.getloadavg()[0], window_s=window)
                results.setdefault(name, []).append((wall, out))
    finally:
        parent.send("stop")
        server.join(5)
        shutil.rmtree(work, ignore_errors=True)

    waves = math.ceil(n / args.concurrency)
    ideal_s = waves * args.latency  # the least possible time: whole waves of c requests, each taking L
    bound_s = n * args.latency / args.concurrency  # the rate bound c / L, as if a wave could be cut
    with_preflight_s = args.latency + math.ceil(max(0, n - 1) / args.concurrency) * args.latency
    print(f"ideal: ceil({n} / {args.concurrency}) = {waves} waves x {args.latency * 1000:.0f} ms = {ideal_s:.2f} s "
          f"({n / ideal_s:.1f} cases/s), the denominator of every /ideal ratio; the rate bound c / L = "
          f"{args.concurrency / args.latency:.0f} cases/s ({bound_s:.2f} s) in the /(c/L) column; fairpair's whole "
          f"call, its preflight case sent alone first: at least {with_preflight_s:.2f} s "
          f"({ideal_s / with_preflight_s:.3f} of the ideal)")
    print(f"{'tool':11s} {'requests':>8s} {'answered':>8s} {'in flight':>9s} {'core s':>7s} {'cases/s':>8s} "
          f"{'/ideal':>6s} {'/(c/L)':>6s} {'core ms':>7s} {'window s':>8s} {'/ideal':>6s} {'process s':>9s} "
          f"{'cases/s':>8s} {'CPU s':>6s} {'load':>5s}")
    for name, runs in results.items():
        for wall, out in runs:
            core, win = out["core_s"], out["window_s"]
            print(f"{name:11s} {out['requests']:8d} {out['answered']:8d} {out['in_flight']:9d} {core:7.2f} "
                  f"{n / core:8.1f} {ideal_s / core:6.3f} {bound_s / core:6.3f} {out['core_cpu_s'] * 1000 / n:7.2f} "
                  f"{win:8.2f} {ideal_s / win:6.3f} {wall:9.2f} {n / wall:8.1f} {out['cpu_s']:6.1f} "
                  f"{out['load']:5.1f}")
    for note in notes:
        print(note)

    def best(name: str) -> tuple[float, dict]:  # the least disturbed of the repeats
        return min(results[name], key=lambda r: r[1]["core_s"])

    if "fairpair" in results:
        fw, fo = best("fairpair")
        print(f"fairpair: whole call (execute_run: expanding and storing the cases, the preflight case sent alone "
              f"first, the manifest and the answer statuses) {fo['core_s']:.2f} s = {ideal_s / fo['core_s']:.3f} of "
              f"the ideal {ideal_s:.2f} s (goal >= 0.95; {bound_s / fo['core_s']:.3f} of the rate bound; "
              f"{with_preflight_s / fo['core_s']:.3f} of its own least time with the preflight), "
              f"{fo['core_cpu_s'] * 1000 / n:.2f} ms CPU per request (goal <= 1.0); its sending window "
              f"{fo['window_s']:.2f} s = {ideal_s / fo['window_s']:.3f} of the ideal")
        if "fp-engine" in results:
            _ew, eo = best("fp-engine")
            print(f"fairpair's engine (run_target on the expanded, stored cases, no preflight: the peers' scope): "
                  f"{eo['core_s']:.2f} s = {ideal_s / eo['core_s']:.3f} of the ideal (goal >= 0.95; "
                  f"{bound_s / eo['core_s']:.3f} of the rate bound), "
                  f"{eo['core_cpu_s'] * 1000 / n:.2f} ms CPU per request (goal <= 1.0)")
        if "aiohttp" in results:  # run by run (a failed run is left out, so the lists can differ in length)
            for (_fw, fo_i), (_aw, ao) in zip(results["fairpair"], results["aiohttp"], strict=False):
                print(f"fairpair / bare aiohttp, run by run: {ao['core_s'] / fo_i['core_s']:.3f} of its rate, "
                      f"{fo_i['core_cpu_s'] / ao['core_cpu_s']:.2f}x its CPU per request")
            for (_ew, eo_i), (_aw, ao) in zip(results.get("fp-engine", []), results["aiohttp"], strict=False):
                print(f"fp-engine / bare aiohttp, run by run: {ao['core_s'] / eo_i['core_s']:.3f} of its rate, "
                      f"{eo_i['core_cpu_s'] / ao['core_cpu_s']:.2f}x its CPU per request")
        peers = [k for k in results if k not in ("fairpair", "fp-engine", "aiohttp")]
        if "aiohttp" in results:  # the tell of a crippled harness: a peer's CPU per request far above bare aiohttp's
            base_cpu = min(ao["core_cpu_s"] for _aw, ao in results["aiohttp"]) / n
            for name in peers:
                cpu = best(name)[1]["core_cpu_s"] / n
                flag = "  <- check the harness (over 10x)" if cpu > 10 * base_cpu else ""
                print(f"{name}: {cpu * 1000:.2f} ms CPU per request = {cpu / base_cpu:.1f}x bare aiohttp's "
                      f"{base_cpu * 1000:.2f} ms" + flag)
        for name in peers:
            wall, out = best(name)
            print(f"fairpair / {name}: {out['core_s'] / fo['core_s']:.2f}x on the sending call, "
                  f"{wall / fw:.2f}x on the whole process (goal >= 1)")
        if peers:
            fastest = min(peers, key=lambda k: best(k)[1]["core_s"])
            ratio = best(fastest)[1]["core_s"] / fo["core_s"]
            print(f"fairpair vs the fastest peer ({fastest}): {ratio:.2f}x (goal >= 1)")


if __name__ == "__main__":
    main()
