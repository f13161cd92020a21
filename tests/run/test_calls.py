"""The model-call service and the worker pool shared by the run engine and the measure stage."""

from __future__ import annotations

import asyncio
import time

import pytest

from fairpair._calls import CallOutcome, ModelCaller, describe_error, worker_pool
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


def test_requests_per_minute_are_limited():
    t = Scripted()
    caller = fast(t, rpm=600, max_in_flight=None)  # 10 a second; the bucket starts full (600)

    async def drain():
        caller.limiter._req = (0.0, time.monotonic())  # an empty bucket: every call waits its turn
        for _ in range(3):
            await caller.call(REQ)

    t0 = time.monotonic()
    asyncio.run(drain())
    assert 0.25 <= time.monotonic() - t0 < 1.5  # 3 calls at 10/s


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
