"""The model-call service and the worker pool shared by the run engine and the measure stage."""

from __future__ import annotations

import asyncio
import bisect
import math
import time

import pytest

from fairpair._calls import CallOutcome, ModelCaller, RateLimiter, describe_error, worker_pool
from fairpair.run import RunSettings
from fairpair.targets import ChatRequest, Completion, TargetError

REQ = ChatRequest(messages=({"role": "user", "content": "hola"},), case_id="c1")


class Scripted:
    """Raises the scripted errors in turn, then answers; counts calls and the most in flight."""

    def __init__(self, errors=(), *, delay=0.0, max_concurrency=None):
        self.errors = list(errors)
        self.delay = delay
        self.max_concurrency = max_concurrency
        self.calls = 0
        self.in_flight = self.most_in_flight = 0
        self.at: list[float] = []

    async def generate(self, request):
        self.calls += 1
        self.at.append(time.monotonic())
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.errors:
                raise self.errors.pop(0)
            return Completion(text=f"ok {self.calls}")
        finally:
            self.in_flight -= 1


def call(caller, request=REQ) -> CallOutcome:
    return asyncio.run(caller.call(request))


def fast(target, **kw) -> ModelCaller:
    return ModelCaller(target, **{"timeout": 5, "max_attempts": 3, "backoff_initial": 0.001, "backoff_max": 0.01,
                                  **kw})


def test_attempts_are_a_returned_value():
    t = Scripted([TargetError("busy", retryable=True, status=503)])
    out = call(fast(t))
    assert out.ok and out.completion.text == "ok 2" and out.attempts == 2 and out.error is None
    assert out.result() is out.completion


def test_a_call_that_keeps_failing_returns_its_last_error_and_all_attempts():
    errors = [TargetError(f"busy {i}", retryable=True, status=503) for i in range(5)]
    out = call(fast(Scripted(errors)))
    assert not out.ok and out.completion is None and out.attempts == 3
    assert str(out.error) == "busy 2"
    with pytest.raises(TargetError, match="busy 2"):
        out.result()


def test_a_non_retryable_error_is_tried_once():
    out = call(fast(Scripted([TargetError("bad key", status=401), TargetError("never")])))
    assert out.attempts == 1 and str(out.error) == "bad key"
    assert describe_error(out.error) == "TargetError (HTTP 401): bad key"
    out = call(fast(Scripted([ValueError("a bug in a plugin")])))
    assert out.attempts == 1 and describe_error(out.error) == "ValueError: a bug in a plugin"


def test_retry_after_is_honoured_over_a_shorter_backoff():
    t = Scripted([TargetError("slow down", retryable=True, status=429, retry_after=0.3)])
    out = call(fast(t))
    assert out.attempts == 2
    assert 0.3 <= t.at[1] - t.at[0] < 1.5


def test_each_attempt_is_cut_at_the_timeout_and_retried():
    t = Scripted(delay=1.0)
    t0 = time.monotonic()
    out = call(fast(t, timeout=0.1, max_attempts=2))
    assert out.attempts == 2 and isinstance(out.error, TimeoutError)
    assert describe_error(out.error) == "timeout: no answer within the request timeout"
    assert time.monotonic() - t0 < 0.9


def test_calls_in_flight_are_capped_by_the_caller_and_by_the_target():
    async def many(caller, n=12):
        return await asyncio.gather(*(caller.call(REQ) for _ in range(n)))

    t = Scripted(delay=0.02)
    outs = asyncio.run(many(fast(t, max_in_flight=3)))
    assert all(o.ok for o in outs) and t.most_in_flight == 3
    t = Scripted(delay=0.02, max_concurrency=2)
    asyncio.run(many(fast(t, max_in_flight=8)))
    assert t.most_in_flight == 2


class FakeClock:
    """A clock that moves only when the limiter sleeps: the test takes no real time."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    async def sleep(self, seconds):
        self.now += seconds
        await asyncio.sleep(0)


def starts_under(rpm=None, tpm=None, tokens=(0,), n=400, workers=50):
    """The fake-clock seconds (from the first) at which ``n`` requests start, ``workers`` waiting at once."""
    clock = FakeClock()
    limiter = RateLimiter(rpm, tpm, clock=clock, sleep=clock.sleep)
    at: list[float] = []

    async def one(i):
        await limiter.acquire(tokens[i % len(tokens)])
        at.append(clock())

    async def main():
        await worker_pool(range(n), one, workers=workers)

    asyncio.run(main())
    return [t - at[0] for t in at]


def most_in_window(at, seconds):
    """The most starts in any half-open window ``[a, a + seconds)`` (less 1 ns of float rounding: the gaps
    of 0.1 s add up to 0.99999... s)."""
    return max(bisect.bisect_left(at, t + seconds - 1e-9) - i for i, t in enumerate(at))


@pytest.mark.parametrize("rpm", [60, 300, 600, 45.5])
def test_no_window_holds_more_than_rpm_starts(rpm):
    """`--rpm 60` answered 75 requests in its first 15 s and `--rpm 300` sent 397 in 19 s: the bucket
    started full, so the first minute carried twice the limit. From the first request on, no window of T
    seconds holds more than ceil(rpm * T / 60) starts: one second's worth a second, rpm a minute."""
    at = starts_under(rpm=rpm)
    for seconds in (1, 15, 19, 60):
        assert at.count(0.0) == 1  # no burst at the start
        first = sum(1 for t in at if t < seconds - 1e-9)
        assert first <= math.ceil(rpm * seconds / 60) and most_in_window(at, seconds) <= math.ceil(rpm * seconds / 60)
    # and no slower than the limit: 400 starts take (400 - 1) * 60 / rpm seconds
    assert at[-1] == pytest.approx(399 * 60 / rpm)


def test_tokens_per_minute_space_the_requests_by_their_size():
    """tpm=6000 is 100 estimated tokens a second: after a 300-token request the next waits 3 s, after a
    100-token one 1 s; a minute holds at most tpm tokens plus one request's."""
    tokens = (300, 100, 50, 100_000)  # the last is over tpm and counts as tpm (a 60 s pause after it)
    at = starts_under(tpm=6000, tokens=tokens, n=8, workers=1)
    assert at == pytest.approx([0, 3, 4, 4.5, 64.5, 67.5, 68.5, 69])


def test_requests_per_minute_are_limited_in_real_time():
    """The caller itself, on the real clock: rpm=600 is one start every 0.1 s, the first at once."""
    t = Scripted()
    caller = fast(t, rpm=600, max_in_flight=None)

    async def many_at_once():
        await asyncio.gather(*(caller.call(REQ) for _ in range(5)))

    t0 = time.monotonic()
    asyncio.run(many_at_once())
    at = [s - t0 for s in t.at]
    assert at[0] < 0.05 and all(b - a >= 0.099 for a, b in zip(at, at[1:], strict=False))
    assert 0.39 <= time.monotonic() - t0 < 1.5  # 5 starts at 10/s


def test_from_settings_reads_the_run_settings():
    s = RunSettings(concurrency=4, timeout=7.5, max_attempts=2, backoff_initial=0.1, backoff_max=0.2, rpm=60)
    c = ModelCaller.from_settings(Scripted(), s, max_in_flight=4)
    assert (c.timeout, c.max_attempts, c.limiter.rpm, c.limiter.tpm) == (7.5, 2, 60, None)


# ---------------------------------------------------------------- the worker pool


def test_pool_handles_every_item_with_bounded_workers_and_buffer():
    seen, state = [], {"in": 0, "most": 0, "read": 0}

    def items():
        for i in range(50):
            state["read"] += 1
            yield i

    async def handle(i):
        state["in"] += 1
        state["most"] = max(state["most"], state["in"])
        # items read ahead of those handled never exceed the buffer plus the workers
        assert state["read"] - len(seen) <= 4 + 3 + 1
        await asyncio.sleep(0.001)
        seen.append(i)
        state["in"] -= 1

    asyncio.run(worker_pool(items(), handle, workers=3, buffer=4))
    assert sorted(seen) == list(range(50)) and state["most"] == 3


def test_pool_reads_an_async_source_and_stops_on_the_first_error():
    seen = []

    async def source():
        for i in range(100):
            await asyncio.sleep(0)
            yield i

    async def handle(i):
        if i == 10:
            raise RuntimeError("disk full")
        seen.append(i)
        await asyncio.sleep(0.001)

    with pytest.raises(RuntimeError, match="disk full"):
        asyncio.run(worker_pool(source(), handle, workers=4))
    assert len(seen) < 30  # the rest was cancelled, not handled
