"""The embedded model's decode ceiling: completion tokens per second with P slots when the prompt costs nothing.

The same short prompt is sent N times (one warm-up first), so after the first request every slot
reuses the cached prompt and the wall time is decoding alone (128 tokens each, the 0.5B model at
temperature 0.7 with the shop battery's repeat penalty). Prints the aggregate tokens per second,
the share of CPU time stolen by the hypervisor meanwhile and the load average. Dividing a battery's
completion tokens by this rate is a lower bound on its time: no prompt cache or batch size setting
can beat it.

Usage::

    python benchmarks/bench_decode_ceiling.py P N      # e.g. 1 4, then 4 8
"""
from __future__ import annotations

import asyncio
import os
import sys

from bench_local_batch import _cpu_times, _steal_share, run_all

from fairpair.targets import ChatRequest
from fairpair.targets.local import LocalTarget

PROMPT = ({"role": "user", "content": "Escribe una carta larga de disculpa a un cliente por un pedido roto."},)


def main() -> None:
    parallel, n = int(sys.argv[1]), int(sys.argv[2])
    target = LocalTarget({"temperature": 0.7, "max_tokens": 128, "parallel": parallel, "cache_prompt": True,
                          "repeat_penalty": 1.1})
    asyncio.run(target.load())
    asyncio.run(target.generate(ChatRequest(messages=PROMPT, seed=99, case_id="w")))  # warm-up: the prompt cached
    requests = [ChatRequest(messages=PROMPT, seed=i, case_id=str(i)) for i in range(n)]
    cpu0 = _cpu_times()
    outs, wall = asyncio.run(run_all(target, requests, parallel))
    steal = _steal_share(cpu0, _cpu_times())
    toks = sum(o.usage.completion_tokens or 0 for o in outs)
    print(f"parallel {parallel}: {toks} tokens in {wall:.1f} s = {toks / wall:.1f} tokens/s aggregate; "
          f"steal {steal:.0%}; load {os.getloadavg()[0]:.1f}")
    target.close()


if __name__ == "__main__":
    main()
