"""Benchmark: fairpair's ``RateLimiter`` against aiolimiter's ``AsyncLimiter`` (``benchmarks/bench_ratelimit.py``).

The project's rule keeps a home-made scheduler only where no maintained one does
the same job at the same speed. ``--rpm``/``--tpm`` promise that no window of a
minute holds more than the limit, from the first request on
(:class:`fairpair._calls.RateLimiter`). This script drives, with the same
workloads, on the real clock:

* ``fairpair``: ``RateLimiter(rpm, tpm)``;
* ``aiolimiter``: ``AsyncLimiter(max_rate, time_period)`` as its README and
  docs configure it for "max_rate per time_period" (requests:
  ``AsyncLimiter(N, W)``; tokens: ``AsyncLimiter(TOK, W)`` and
  ``acquire(min(tokens, TOK))``, since it refuses an amount above
  ``max_rate``; both limits: the requests' limiter, then the tokens');
* ``aio-noburst``: its documented way to disable bursts,
  ``AsyncLimiter(1, W / N)``; ``acquire(amount)`` refuses amounts above
  ``max_rate = 1``, so for tokens it gets the smallest bucket that accepts every
  request of the workload, ``AsyncLimiter(L, L * W / TOK)`` with ``L`` the
  largest request (fairpair does not know ``L`` before the run: this is the most
  favourable configuration, not one fairpair could use as is).

Time is scaled by choosing the window, not by patching a clock (aiolimiter reads
``loop.time()`` and takes no clock): a limit of ``N`` requests per 60 s is run as
``N`` per ``--window`` seconds (default 50 per 1 s, which is also
``RateLimiter(rpm=3000)`` in real time: 20 ms between starts, a real API
tier), and ``TOK`` tokens per window (default 20,000 per 1 s, tpm 1.2 M).
Every start is stamped with ``time.monotonic()`` when ``acquire`` returns.

Workloads (``--workers`` tasks, default 64, all waiting at once, as the run
engine's workers do): ``steady`` (``--requests`` requests, no token limit);
``pauses`` (3 bursts of ``2 * N`` requests, the limiter idle ``1.5 * window``
between them, as after a preflight or a backoff); ``tokens`` (request sizes
drawn uniformly from 100-2,000 tokens, seeded, only the token limit);
``both`` (sizes 50-1,000, both limits: each binds on some requests).

Columns, per workload and limiter:

* ``worst/limit``: the most starts (or tokens) in any half-open window
  ``[t, t + window)``, over the limit; fairpair promises <= 1 for requests and
  <= (TOK + largest request) / TOK for tokens (``bound`` column);
* ``first/limit``: the same for the first window from the first start;
* ``rate/ideal``: the least time the promise allows for the starts made
  (``(n - 1) * window / N``; for tokens the sum, over every start but the last,
  of ``max(window / N, tokens * window / TOK)``; per burst for ``pauses``) over
  the time taken: 1 is the full allowed rate, above 1 is faster than the
  promise allows (a burst), below 1 is time lost;
* ``CPU us/acq``: ``time.process_time`` of the whole workload per acquire
  (waiting included: timers, futures, wake-ups);
* ``max wait s``: the longest any request waited in ``acquire``.

The ideal is fairpair's spacing; a limiter whose bucket holds one request
(``aio-noburst`` on tokens, two limiters on ``both``) may start a request
sooner within the same bound, so its ``rate/ideal`` may pass 1 without a
window over ``bound``. A paced start costs at least one timer wake-up, printed
last (``sleep(gap)``: one task sleeping ``window / N`` between starts).

Then the CPU of an unbounded acquire (limits of 10^9 per window) followed by
``await asyncio.sleep(0)``, against the floor, a bare ``asyncio.sleep(0)`` loop,
with the same number of tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from fairpair._calls import RateLimiter

try:
    from aiolimiter import AsyncLimiter
except ImportError:  # pragma: no cover - the benchmark's peer, not a dependency
    sys.exit("bench_ratelimit.py needs aiolimiter: pip install aiolimiter")

Acquire = Callable[[int], Awaitable[None]]


@dataclass(frozen=True)
class Limits:
    """A scaled limit: ``requests`` and/or ``tokens`` per ``window`` seconds (None = no limit)."""

    window: float
    requests: float | None
    tokens: float | None
    largest: int  # the workload's largest request, in tokens


def fairpair_limiter(lim: Limits) -> Acquire:
    """fairpair's limiter at the same rate: rpm = N * 60 / window, tpm = TOK * 60 / window."""
    scale = 60.0 / lim.window
    rl = RateLimiter(lim.requests * scale if lim.requests else None, lim.tokens * scale if lim.tokens else None)
    return rl.acquire


def _in_turn(req: AsyncLimiter | None, tok: AsyncLimiter | None) -> Acquire:
    """Acquire from the request limiter, then ``n`` tokens (at most its bucket) from the token limiter."""

    async def acquire(n: int) -> None:
        if req is not None:
            await req.acquire()
        if tok is not None:
            await tok.acquire(min(n, tok.max_rate))

    return acquire


def aiolimiter_limiter(lim: Limits) -> Acquire:
    """aiolimiter as documented for "max_rate per time_period" (bursts of max_rate allowed)."""
    req = AsyncLimiter(lim.requests, lim.window) if lim.requests else None
    tok = AsyncLimiter(lim.tokens, lim.window) if lim.tokens else None

    return _in_turn(req, tok)


def aio_noburst_limiter(lim: Limits) -> Acquire:
    """aiolimiter without bursts: AsyncLimiter(1, window / N); tokens in a bucket of the largest request."""
    req = AsyncLimiter(1, lim.window / lim.requests) if lim.requests else None
    tok = AsyncLimiter(lim.largest, lim.largest * lim.window / lim.tokens) if lim.tokens else None

    return _in_turn(req, tok)


LIMITERS: dict[str, Callable[[Limits], Acquire]] = {
    "fairpair": fairpair_limiter, "aiolimiter": aiolimiter_limiter, "aio-noburst": aio_noburst_limiter}


@dataclass
class Trace:
    starts: list[float]  # monotonic seconds, in start order
    tokens: list[int]  # the started requests' tokens, in start order
    waits: list[float]
    phases: list[int]  # index of the first start of each burst
    cpu: float


async def drive(make: Callable[[Limits], Acquire], lim: Limits, sizes: list[int], workers: int,
                phases: int = 1, idle: float = 0.0) -> Trace:
    """``workers`` tasks take the requests of ``sizes`` in order and start each once ``acquire`` lets it."""
    acquire = make(lim)
    tr = Trace([], [], [], [], 0.0)
    c0 = time.process_time()
    per = -(-len(sizes) // phases)
    for k in range(phases):
        if k:
            await asyncio.sleep(idle)
        tr.phases.append(len(tr.starts))
        todo = iter(sizes[k * per:(k + 1) * per])

        async def worker(todo: Iterator[int]) -> None:
            for n in todo:  # the tasks share one iterator: each request is taken once
                t = time.monotonic()
                await acquire(n)
                s = time.monotonic()
                tr.starts.append(s)
                tr.tokens.append(n)
                tr.waits.append(s - t)

        await asyncio.gather(*(worker(todo) for _ in range(workers)))
    tr.cpu = time.process_time() - c0
    return tr


def most_in_window(starts: list[float], weights: list[int] | None, window: float, only_first: bool = False) -> float:
    """The most starts (or, with ``weights``, tokens) in any half-open window ``[t, t + window)`` (1 ns slack)."""
    prefix = [0]
    for w in weights or [1] * len(starts):
        prefix.append(prefix[-1] + w)
    best = 0
    for i, t in enumerate(starts[:1] if only_first else starts):
        j = bisect.bisect_left(starts, t + window - 1e-9)
        best = max(best, prefix[j] - prefix[i])
    return best


def ideal_time(tr: Trace, lim: Limits) -> tuple[float, float]:
    """(least time the promise allows, time taken) for the starts of each burst, summed over the bursts."""
    least = taken = 0.0
    bounds = [*tr.phases, len(tr.starts)]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        for n in tr.tokens[a:b - 1]:
            gap = lim.window / lim.requests if lim.requests else 0.0
            if lim.tokens:
                gap = max(gap, min(n, lim.tokens) * lim.window / lim.tokens)
            least += gap
        taken += tr.starts[b - 1] - tr.starts[a]
    return least, taken


def row(name: str, tr: Trace, lim: Limits) -> dict[str, float | str]:
    by_tokens = lim.tokens is not None and lim.requests is None
    limit = lim.tokens if by_tokens else lim.requests
    assert limit
    weights = tr.tokens if by_tokens else None
    worst = most_in_window(tr.starts, weights, lim.window) / limit
    first = most_in_window(tr.starts, weights, lim.window, only_first=True) / limit
    bound = (lim.tokens + lim.largest) / lim.tokens if by_tokens and lim.tokens else 1.0
    least, taken = ideal_time(tr, lim)
    out: dict[str, float | str] = {
        "limiter": name, "worst": worst, "first": first, "bound": bound, "rate": least / taken if taken else 0.0,
        "cpu_us": tr.cpu / len(tr.starts) * 1e6, "max_wait": max(tr.waits), "n": len(tr.starts)}
    if lim.tokens and lim.requests:  # both limits: the tokens' window too
        out["tok_worst"] = most_in_window(tr.starts, tr.tokens, lim.window) / lim.tokens
        out["tok_bound"] = (lim.tokens + lim.largest) / lim.tokens
    return out


async def cpu_loop(make: Callable[[Limits], Acquire] | None, n: int, workers: int) -> float:
    """CPU seconds per iteration of ``acquire`` (limits never reached) + ``sleep(0)``, or of ``sleep(0)`` alone."""
    acquire = make(Limits(1.0, 1e9, 1e9, 1000)) if make else None
    todo = iter(range(n))

    async def worker() -> None:
        for _ in todo:
            if acquire is not None:
                await acquire(500)
            await asyncio.sleep(0)

    c0 = time.process_time()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return (time.process_time() - c0) / n


async def timer_floor(gap: float, n: int) -> float:
    """CPU seconds per wake of one task sleeping ``gap`` seconds ``n`` times: a paced start's floor."""
    c0 = time.process_time()
    for _ in range(n):
        await asyncio.sleep(gap)
    return (time.process_time() - c0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--window", type=float, default=1.0, help="seconds that stand for the limits' minute")
    ap.add_argument("--per-window", type=float, default=50, help="requests per window (N)")
    ap.add_argument("--tokens-per-window", type=float, default=20_000, help="tokens per window (TOK)")
    ap.add_argument("--requests", type=int, default=300, help="requests of steady and both (tokens: half)")
    ap.add_argument("--workers", type=int, default=64, help="tasks waiting in acquire at once")
    ap.add_argument("--cpu-n", type=int, default=20_000, help="iterations of the CPU loops")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each workload (limiters interleaved)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", action="append", choices=["steady", "pauses", "tokens", "both"],
                    help="run only these workloads (repeatable)")
    a = ap.parse_args()

    rng = random.Random(a.seed)
    w, n_req, tok = a.window, a.per_window, a.tokens_per_window
    tok_sizes = [rng.randint(100, 2000) for _ in range(a.requests // 2)]
    both_sizes = [rng.randint(50, 1000) for _ in range(a.requests)]
    workloads = {
        "steady": (Limits(w, n_req, None, 0), [0] * a.requests, 1),
        "pauses": (Limits(w, n_req, None, 0), [0] * (3 * 2 * int(n_req)), 3),
        "tokens": (Limits(w, None, tok, max(tok_sizes)), tok_sizes, 1),
        "both": (Limits(w, n_req, tok, max(both_sizes)), both_sizes, 1),
    }
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; "
          f"python {sys.version.split()[0]}; window {w:g} s, {n_req:g} requests / {tok:g} tokens per window, "
          f"{a.workers} tasks, seed {a.seed}")
    t_all = time.perf_counter()
    for wl, (lim, sizes, phases) in workloads.items():
        if a.only and wl not in a.only:
            continue
        print(f"\n{wl}: {len(sizes)} requests"
              + (f" in {phases} bursts, idle {1.5 * w:g} s between" if phases > 1 else "")
              + (f", {min(sizes)}-{max(sizes)} tokens each" if lim.tokens else "")
              + (f"; limits {lim.requests or '-'} requests, {lim.tokens or '-'} tokens per {w:g} s"))
        hdr = f"  {'limiter':12} {'worst/limit':>11} {'bound':>6} {'first/limit':>11} {'rate/ideal':>10} " \
              f"{'CPU us/acq':>10} {'max wait s':>10}"
        if lim.tokens and lim.requests:
            hdr += f" {'tok worst/limit':>15} {'tok bound':>9}"
        print(hdr)
        for r in range(a.repeat):
            names = list(LIMITERS)
            names = names[r % len(names):] + names[:r % len(names)]
            for name in names:
                tr = asyncio.run(drive(LIMITERS[name], lim, sizes, a.workers, phases, 1.5 * w))
                x = row(name, tr, lim)
                line = (f"  {name:12} {x['worst']:11.3f} {x['bound']:6.3f} {x['first']:11.3f} {x['rate']:10.3f} "
                        f"{x['cpu_us']:10.1f} {x['max_wait']:10.2f}")
                if "tok_worst" in x:
                    line += f" {x['tok_worst']:15.3f} {x['tok_bound']:9.3f}"
                over = x["worst"] > x["bound"] + 1e-9 or x.get("tok_worst", 0.0) > x.get("tok_bound", 9.0) + 1e-9
                print(line + ("  OVER the limit" if over else ""))
                if phases > 1:
                    bursts = [*tr.phases, len(tr.starts)]
                    firsts = [most_in_window(tr.starts[i:j], None, w, only_first=True) / n_req
                              for i, j in zip(bursts[:-1], bursts[1:], strict=True)]
                    print(f"  {'':12} first window of each burst / limit: {', '.join(f'{f:.2f}' for f in firsts)}")
    print(f"\nCPU per iteration, {a.cpu_n} iterations over {a.workers} tasks, limits never reached "
          f"(acquire + sleep(0)); the floor is sleep(0) alone")
    for _ in range(a.repeat):
        floor = asyncio.run(cpu_loop(None, a.cpu_n, a.workers))
        print(f"  {'sleep(0)':12} {floor * 1e6:7.2f} us")
        for name, make in LIMITERS.items():
            c = asyncio.run(cpu_loop(make, a.cpu_n, a.workers))
            print(f"  {name:12} {c * 1e6:7.2f} us  ({c / floor:.2f}x the floor, acquire alone "
                  f"{(c - floor) * 1e6:.2f} us)")
    gap = w / n_req
    print(f"\nCPU per start of the least a paced start costs, one task sleeping {gap * 1000:g} ms "
          f"(window / N) {a.requests // 2} times")
    for _ in range(a.repeat):
        print(f"  {'sleep(gap)':12} {asyncio.run(timer_floor(gap, a.requests // 2)) * 1e6:7.1f} us")
    print(f"\n{time.perf_counter() - t_all:.0f} s in all; load average now "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
