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
import asyncio, sys, time, os
from fairpair.targets.local import LocalTarget
from fairpair.targets import ChatRequest
def cpu():
    """/proc/stat's cpu line in jiffies (user nice system idle iowait irq softirq steal ...)."""
    return [int(x) for x in open('/proc/stat').readline().split()[1:]]
P=int(sys.argv[1]); N=int(sys.argv[2])
t = LocalTarget({"temperature": 0.7, "max_tokens": 128, "parallel": P, "cache_prompt": True, "repeat_penalty": 1.1})
asyncio.run(t.load())
msgs=({"role":"user","content":"Escribe una carta larga de disculpa a un cliente por un pedido roto."},)
asyncio.run(t.generate(ChatRequest(messages=msgs, seed=99, case_id="w")))
async def go():
    sem=asyncio.Semaphore(P)
    async def one(i):
        async with sem:
            return await t.generate(ChatRequest(messages=msgs, seed=i, case_id=str(i)))
    return await asyncio.gather(*(one(i) for i in range(N)))
c0=cpu(); t0=time.perf_counter(); outs=asyncio.run(go()); w=time.perf_counter()-t0; c1=cpu()
d=[b-a for a,b in zip(c0,c1)]
toks=sum(o.usage.completion_tokens for o in outs)
print(f"parallel {P}: {toks} tokens in {w:.1f} s = {toks/w:.1f} tokens/s aggregate; steal {d[7]/sum(d[:8]):.0%}; load {os.getloadavg()[0]:.1f}")
t.close()
