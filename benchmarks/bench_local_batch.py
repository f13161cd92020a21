"""Batched decoding of the ``local`` target (llama.cpp continuous batching) against one sequence at a time.

On the same prompts and seeds, times

* ``sequential``: a :class:`LocalTarget` with ``parallel: 1``, cases one after another;
* ``batched``: ``parallel: N``, N cases in flight at once (the run engine's ``max_concurrency``),
  decoded together in one llama.cpp context;
* ``batched+cache`` (``--cache-prompt``): the same with ``cache_prompt: true`` (a slot reuses the
  key/value cache of the prefix its next prompt shares: the battery's system prompt);

and prints the throughput of each (completion tokens per wall-clock second, prompt processing
included), the ratios of the batched runs to the sequential one (goal on 2 cores: >= 2.0), how
many answers are the same text as the ``sequential`` one (same seed and messages: batch
invariance), and the projection for ``--project`` answers (default 1,200, the answers of
``examples/tienda_online/battery.yaml``) from each sample's seconds per answer. The prompts are
the shop battery's own (``--battery``): its cases' system prompts and first turns. The load
average is printed before and after each mode: the ratios are read under the same load.

Usage::

    nice -n 10 python benchmarks/bench_local_batch.py [--battery examples/tienda_online/battery.yaml]
        [--n 60] [--sample blocks|spread] [--block 12] [--parallel 4] [--max-tokens 160] [--cache-prompt]
        [--skip-sequential] [--skip-batched]
        [--mode 'p8c:parallel=8,cache_prompt=true' --mode 'p4c-ub256:parallel=4,cache_prompt=true,n_ubatch=256' ...]

The sample (``--sample blocks``, the default) is runs of ``--block`` consecutive cases in the
run engine's order, so a slot's cached prefix is what it is in a whole run (the template's system
prompt and CRM record up to the name); ``--sample spread`` takes every k-th case (a different
template each time: only the system prompt is shared). Each mode also prints the share of CPU
time the hypervisor gave to other guests meanwhile (``st`` in vmstat): on a shared virtual
machine an idle load average does not mean idle cores.

``--mode`` adds modes of any :class:`~fairpair.targets.local.LocalOptions` (``parallel``,
``cache_prompt``, ``n_batch``, ``n_ubatch``, ``n_threads``, ``n_threads_batch``, ``kv_unified``,
``max_tokens``...), each timed and compared with the same sequential run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path


def load_requests(battery: Path, n: int, *, sample: str = "blocks", block: int = 12):
    """``n`` of the battery's cases as the run engine sends them.

    ``sample="blocks"``: runs of ``block`` consecutive cases (the engine's order: a template's
    names and repetitions one after another) starting at evenly spaced points, so that the
    prompt cache sees what it sees in a whole run (consecutive cases share the template's CRM
    record up to the name); ``"spread"``: every ``len(cases) // n``-th case (every case a
    different template and name: the cache reuses the system prompt only).
    """
    from fairpair.battery import load_battery
    from fairpair.cases import expand
    from fairpair.targets._base import ChatRequest

    lb = load_battery(battery)
    cases = list(expand(lb))
    if sample == "spread":
        step = max(1, len(cases) // n)
        picked = cases[::step][:n]
    else:
        runs = max(1, -(-n // block))
        starts = [i * (len(cases) // runs) for i in range(runs)]
        picked = [c for s in starts for c in cases[s:s + block]][:n]
    # the first turn of each case, after its system prompt, as the run engine sends it
    return lb, [ChatRequest(messages=(*c.messages, {"role": "user", "content": c.turns[0]}), seed=c.seed,
                            case_id=c.id) for c in picked]


def _cpu_times() -> list[int]:
    """The machine's ``cpu`` line of /proc/stat (jiffies: user nice system idle iowait irq softirq steal ...)."""
    try:
        with open("/proc/stat") as fh:
            return [int(x) for x in fh.readline().split()[1:]]
    except OSError:  # not Linux
        return []


def _steal_share(before: list[int], after: list[int]) -> float:
    """Share of the machine's CPU time that the hypervisor gave to other guests between two readings
    (the ``st`` column of vmstat): a virtual machine can be "idle" by its load average and still
    get only part of its cores."""
    if len(before) < 8 or len(after) < 8:
        return float("nan")
    delta = [a - b for a, b in zip(after, before, strict=True)]
    total = sum(delta[:8])
    return delta[7] / total if total else float("nan")


async def run_all(target, requests, concurrency: int):
    sem = asyncio.Semaphore(concurrency)

    async def one(req):
        async with sem:
            return await target.generate(req)

    t0 = time.perf_counter()
    outs = await asyncio.gather(*(one(r) for r in requests))
    return outs, time.perf_counter() - t0


def parse_mode(spec: str, *, default_parallel: int) -> tuple[str, dict]:
    """``'LABEL:key=value,...'`` -> (label, options); values are ints, ``true``/``false`` or text."""
    label, _, body = spec.partition(":")
    over: dict = {}
    for item in filter(None, body.split(",")):
        key, _, value = item.partition("=")
        low = value.strip().lower()
        over[key.strip()] = (True if low == "true" else False if low == "false"
                             else int(low) if low.lstrip("-").isdigit() else value.strip())
    over.setdefault("parallel", default_parallel)
    return label.strip(), over


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--battery", default="examples/tienda_online/battery.yaml")
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--threads", type=int, default=None, help="n_threads (default: the cores this process may use)")
    ap.add_argument("--cache-prompt", action="store_true", help="also time batched+cache")
    ap.add_argument("--skip-sequential", action="store_true")
    ap.add_argument("--skip-batched", action="store_true", help="no plain batched mode (only --cache-prompt/--mode)")
    ap.add_argument("--mode", action="append", default=[], metavar="LABEL:KEY=VALUE,...",
                    help="an extra mode of LocalTarget options, e.g. 'p8c:parallel=8,cache_prompt=true,n_ubatch=256' "
                         "(repeatable; timed after the others, in the order given)")
    ap.add_argument("--project", type=int, default=1200)
    ap.add_argument("--sample", choices=("blocks", "spread"), default="blocks",
                    help="blocks: runs of --block consecutive cases in the engine's order (default); "
                         "spread: every k-th case")
    ap.add_argument("--block", type=int, default=12)
    args = ap.parse_args()

    from fairpair.targets.local import LocalTarget

    lb, requests = load_requests(Path(args.battery), args.n, sample=args.sample, block=args.block)
    spec = lb.battery.target
    base = {**spec.model_dump(exclude_unset=True), "model": args.model, "max_tokens": args.max_tokens}
    if args.threads:
        base["n_threads"] = args.threads
    # the battery's sampling options; the batching is each mode's own (the battery may set it)
    base = {k: v for k, v in base.items() if k in LocalTarget.Options.model_fields
            and k not in ("parallel", "cache_prompt")}
    print(f"{len(requests)} prompts from {args.battery}; options {base}; load {os.getloadavg()}", flush=True)
    modes = []
    if not args.skip_sequential:
        modes.append(("sequential", {"parallel": 1, "cache_prompt": False}))
    if not args.skip_batched:
        modes.append(("batched", {"parallel": args.parallel, "cache_prompt": False}))
    if args.cache_prompt:
        modes.append(("batched+cache", {"parallel": args.parallel, "cache_prompt": True}))
    for spec in args.mode:
        modes.append(parse_mode(spec, default_parallel=args.parallel))
    results = {}
    for label, over in modes:
        target = LocalTarget({**base, **over}, name=label)
        asyncio.run(target.load())
        asyncio.run(target.generate(requests[-1]))  # warm-up (the last prompt: the cache, if any, starts cold)
        load0 = os.getloadavg()[0]
        cpu0 = _cpu_times()
        outs, wall = asyncio.run(run_all(target, requests, over["parallel"]))
        steal = _steal_share(cpu0, _cpu_times())
        toks = sum(o.usage.completion_tokens or 0 for o in outs)
        results[label] = (outs, wall, toks)
        print(f"{label:15s} {over}: {toks} tokens in {wall:.1f} s = {toks / wall:.2f} tokens/s, "
              f"{wall / len(outs):.2f} s/answer, projection for {args.project} answers "
              f"{wall / len(outs) * args.project / 60:.1f} min (load {load0:.1f} -> {os.getloadavg()[0]:.1f}, "
              f"CPU stolen by the hypervisor {steal:.0%})",
              flush=True)
        target.close()
    rate = {label: toks / wall for label, (_, wall, toks) in results.items()}
    for label in rate:
        if label != "sequential" and "sequential" in rate:
            print(f"ratio {label}/sequential (tokens/s): {rate[label] / rate['sequential']:.2f} (goal >= 2.0); "
                  f"answers/s {results['sequential'][1] / results[label][1]:.2f}")
    if "sequential" in results:
        ref = [o.text for o in results["sequential"][0]]
        for label, (outs, _, _) in results.items():
            if label != "sequential":
                same = sum(a == o.text for a, o in zip(ref, outs, strict=True))
                first = [next((j for j in range(min(len(a), len(o.text))) if a[j] != o.text[j]),
                              min(len(a), len(o.text))) for a, o in zip(ref, outs, strict=True) if a != o.text]
                print(f"identical texts {label} vs sequential (same seed and messages): {same}/{len(outs)}; "
                      f"the others first differ at character {first}")
    print(f"load at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
