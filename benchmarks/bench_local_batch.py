"""Batched decoding of the ``local`` target (llama.cpp continuous batching) against one sequence at a time.

On the same prompts and seeds, times

* ``sequential``: a :class:`LocalTarget` with ``parallel: 1``, cases awaited one after another;
* ``batched``: a :class:`LocalTarget` with ``parallel: N``, N cases in flight at once (the run
  engine's ``max_concurrency``), decoded together in one llama.cpp context;

and prints the throughput of each (completion tokens per wall-clock second, prompt processing
included), their ratio (goal on 2 cores: >= 2.0), how many answers are identical between the two
(same seed and messages), and the projection for ``--project`` answers (default 1,200, the
answers of ``examples/tienda_online/battery.yaml``) from the batched sample's seconds per answer.
The prompts are the shop battery's own (``--battery``): its cases' system prompts and first turns.

Usage::

    python benchmarks/bench_local_batch.py [--battery examples/tienda_online/battery.yaml] [--n 24]
        [--parallel 4] [--max-tokens 160] [--cache-prompt] [--skip-sequential]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path


def load_requests(battery: Path, n: int):
    from fairpair.battery import load_battery
    from fairpair.cases import expand
    from fairpair.targets._base import ChatRequest

    lb = load_battery(battery)
    cases = list(expand(lb))
    step = max(1, len(cases) // n)
    picked = cases[::step][:n]
    # the first turn of each case, after its system prompt, as the run engine sends it
    return lb, [ChatRequest(messages=(*c.messages, {"role": "user", "content": c.turns[0]}), seed=c.seed,
                            case_id=c.id) for c in picked]


async def run_all(target, requests, concurrency: int):
    sem = asyncio.Semaphore(concurrency)

    async def one(req):
        async with sem:
            return await target.generate(req)

    t0 = time.perf_counter()
    outs = await asyncio.gather(*(one(r) for r in requests))
    return outs, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--battery", default="examples/tienda_online/battery.yaml")
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--cache-prompt", action="store_true")
    ap.add_argument("--skip-sequential", action="store_true")
    ap.add_argument("--project", type=int, default=1200)
    args = ap.parse_args()

    from fairpair.targets.local import LocalTarget

    lb, requests = load_requests(Path(args.battery), args.n)
    spec = lb.battery.target
    base = {**spec.model_dump(exclude_unset=True), "model": args.model, "max_tokens": args.max_tokens,
            "cache_prompt": args.cache_prompt}
    base = {k: v for k, v in base.items() if k in LocalTarget.Options.model_fields}
    print(f"{len(requests)} prompts from {args.battery}; options {base}; load {os.getloadavg()}")
    results = {}
    for label, parallel in ((("sequential", 1),) if not args.skip_sequential else ()) + (("batched", args.parallel),):
        target = LocalTarget({**base, "parallel": parallel}, name=label)
        asyncio.run(target.load())
        asyncio.run(target.generate(requests[0]))  # warm-up
        load0 = os.getloadavg()[0]
        outs, wall = asyncio.run(run_all(target, requests, parallel))
        toks = sum(o.usage.completion_tokens or 0 for o in outs)
        results[label] = (outs, wall, toks)
        print(f"{label:10s} parallel={parallel}: {toks} tokens in {wall:.1f} s = {toks / wall:.2f} tokens/s, "
              f"{wall / len(outs):.2f} s/answer (load {load0:.1f} -> {os.getloadavg()[0]:.1f})")
        target.close()
    b_outs, b_wall, b_toks = results["batched"]
    if "sequential" in results:
        s_outs, s_wall, s_toks = results["sequential"]
        same = sum(a.text == b.text for a, b in zip(s_outs, b_outs))
        print(f"ratio batched/sequential (tokens/s): {(b_toks / b_wall) / (s_toks / s_wall):.2f} (goal >= 2.0); "
              f"answers/s ratio {(len(b_outs) / b_wall) / (len(s_outs) / s_wall):.2f}")
        print(f"identical texts (same seed and messages, batched vs alone): {same}/{len(b_outs)}")
    print(f"projection for {args.project} answers at the batched rate: "
          f"{b_wall / len(b_outs) * args.project / 60:.1f} min (load {os.getloadavg()})")


if __name__ == "__main__":
    main()
