"""Calling models: one service for the run engine and the judge, one bounded worker pool.

:class:`ModelCaller` sends one :class:`~fairpair.targets.ChatRequest` to a
target the way every stage does: at most ``max_in_flight`` at once, within the
rate limits (requests and estimated tokens per minute, spaced evenly from the
first request on: :class:`RateLimiter`),
each attempt cut at ``timeout`` seconds, retryable failures (429, 5xx,
timeouts, dropped connections: :func:`is_retryable`) tried again up to
``max_attempts`` times with exponential backoff and full jitter (tenacity's
``wait_exponential_jitter``, after AWS's "Exponential Backoff And Jitter",
2015), waiting at least the server's ``Retry-After``. It never raises for a
failed call: it returns a :class:`CallOutcome` with the completion or the last
error, and the number of attempts made.

:func:`worker_pool` runs ``workers`` coroutines over a stream of items fed
through a bounded queue, so memory stays flat however many items there are
(the run engine's cases, the measure stage's answers).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from fairpair.targets import ChatRequest, Completion, TargetError

__all__ = ["CallDeferred", "CallOutcome", "Caller", "ModelCaller", "RateLimiter", "describe_error", "is_retryable",
           "worker_pool"]

T = TypeVar("T")


class RateLimiter:
    """Spaces the starts of requests so that no 60 s holds more than ``rpm`` of them.

    ``rpm`` (requests per minute) and ``tpm`` (estimated prompt tokens per
    minute) are rates above 0, or ``None``/0 for no limit. The limiter is the
    virtual-scheduling form of the generic cell rate algorithm (GCRA, ITU-T
    I.371; a token bucket holding one request, with no initial burst): the first
    request starts at once and each later one no sooner than ``60 / rpm``
    seconds after the previous start, and no sooner than ``60 * n / tpm``
    seconds after it when the previous request carried ``n`` estimated tokens
    (``n`` capped at ``tpm``). Hence, in any window ``[a, a + T)`` of ``T``
    seconds (60 included), at most ``ceil(rpm * T / 60)`` requests start -- at most ``rpm``
    a minute and ``ceil(rpm / 60)`` a second, from the first second on -- and at
    most ``tpm * T / 60`` estimated tokens plus one request's (a request over
    ``tpm`` counts as ``tpm``). Every attempt
    (retries included) takes its turn. ``clock`` (seconds, monotonic) and
    ``sleep`` are injectable for tests.

    Home-made because the maintained peer does not keep that promise (aiolimiter
    1.3.0 against this limiter, ``benchmarks/bench_ratelimit.py``; figures in
    ``benchmarks/HISTORY.md``, "2026-12-05 01:04-01:09 UTC: --rpm/--tpm's
    limiter against aiolimiter"): ``AsyncLimiter(rpm, 60)``, as its docs set
    "N per period", is a leaky bucket that starts ``rpm`` requests at once, so
    the first window, and the first after any idle window, held 1.98x the
    request limit and 1.99x the token limit (this limiter: 1.00x, and tokens
    within the one request over). Its documented burst-free form,
    ``AsyncLimiter(1, 60 / rpm)``, keeps the request limit at the same rate
    (0.980-0.985 of the allowed rate; this limiter 0.981-0.986) but cannot
    carry a token limit (``acquire(amount)`` refuses amounts above 1); with a
    second ``AsyncLimiter`` for ``tpm`` sized to the largest request (a size
    not known before a run), the pair put 51 starts in a window of 50 in 1 run
    of 5, and the largest requests waited twice as long (7.3-7.4 s against
    3.6-3.8 s: it wakes the smallest waiting amount first). CPU: 1.2 us per
    acquire above an ``asyncio.sleep(0)`` here, 2.0-2.2 us for aiolimiter.
    """

    def __init__(self, rpm: float | None, tpm: float | None, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep):
        self.rpm, self.tpm = rpm, tpm
        self._clock, self._sleep = clock, sleep
        self._next = float("-inf")  # the earliest start of the next request (clock seconds)
        self._lock = asyncio.Lock()

    async def acquire(self, tokens: int) -> None:
        """Wait until the next request of about ``tokens`` tokens may start, then take its turn."""
        if not self.rpm and not self.tpm:
            return
        async with self._lock:
            while (wait := self._next - self._clock()) > 0:
                await self._sleep(wait)
            gap = 60.0 / self.rpm if self.rpm else 0.0
            if self.tpm:
                gap = max(gap, min(tokens, self.tpm) * 60.0 / self.tpm)
            self._next = self._clock() + gap


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed call is worth another attempt: a retryable TargetError, a timeout, a lost connection."""
    if isinstance(exc, TargetError):
        return exc.retryable
    return isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError))


def describe_error(exc: BaseException) -> str:
    """The stored text of a failure: ``"<Type> (HTTP <status>): <message>"`` or ``"timeout: ..."``."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timeout: no answer within the request timeout"
    if isinstance(exc, TargetError):
        status = f" (HTTP {exc.status})" if exc.status else ""
        return f"{type(exc).__name__}{status}: {exc}"
    return f"{type(exc).__name__}: {exc}"


class _Wait:
    """Exponential backoff with jitter; a server's Retry-After wins when longer."""

    def __init__(self, initial: float, maximum: float):
        self.exp = wait_exponential_jitter(multiplier=initial, max=maximum)
        self.maximum = maximum

    def __call__(self, retry_state) -> float:
        base = self.exp(retry_state)
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        ra = getattr(exc, "retry_after", None)
        if ra is not None:
            return min(max(base, float(ra)), max(self.maximum, float(ra)))
        return base


class CallDeferred(Exception):
    """A call that went into (or waits for) a provider batch (:mod:`fairpair.run._batchcalls`): its
    answer comes in a later session, so the caller stores nothing for it now (neither an answer nor a
    failure) and moves on."""


@dataclass(frozen=True)
class CallOutcome:
    """What one call came to: the ``completion`` (``None`` on failure) or the last ``error``,
    and ``attempts``, the tries made (>= 1)."""

    completion: Completion | None
    attempts: int
    error: Exception | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def result(self) -> Completion:
        """The completion; re-raises the last error of a failed call."""
        if self.error is not None:
            raise self.error
        assert self.completion is not None
        return self.completion


class Caller(Protocol):
    """What sends one request: :class:`ModelCaller` (live) or a provider batch's caller
    (:class:`fairpair.run._batchcalls.BatchCalls`, which may raise :class:`CallDeferred`)."""

    async def call(self, request: ChatRequest) -> CallOutcome: ...


def estimate_tokens(request: ChatRequest) -> int:
    """Rough prompt size for the token bucket: characters of the messages' contents / 4."""
    return sum(len(str(m.get("content") or "")) for m in request.messages) // 4


class ModelCaller:
    """Send requests to one target with retries, timeout, rate limits and a cap on calls in flight.

    Parameters
    ----------
    target:
        Any :class:`~fairpair.targets.Target`.
    timeout:
        Seconds per attempt (> 0).
    max_attempts:
        Tries per request (>= 1), the first included.
    backoff_initial, backoff_max:
        Seconds: the exponential backoff's first step and its ceiling (a
        longer ``Retry-After`` from the server is still honoured).
    rpm, tpm:
        Requests and estimated tokens per minute (``None`` = unlimited); no
        window of 60 s holds more than ``rpm`` request starts (:class:`RateLimiter`).
    max_in_flight:
        Most calls at once (``None``: the caller's own workers bound them);
        capped by the target's ``max_concurrency``.
    """

    def __init__(self, target: Any, *, timeout: float = 120.0, max_attempts: int = 5, backoff_initial: float = 0.5,
                 backoff_max: float = 30.0, rpm: float | None = None, tpm: float | None = None,
                 max_in_flight: int | None = None) -> None:
        self.target = target
        self.timeout = timeout
        self.max_attempts = max(1, max_attempts)
        self.limiter = RateLimiter(rpm, tpm)
        self._wait = _Wait(backoff_initial, backoff_max)
        cap = getattr(target, "max_concurrency", None)
        if max_in_flight is not None and cap:
            max_in_flight = min(max_in_flight, cap)
        self._slots = asyncio.Semaphore(max(1, max_in_flight)) if max_in_flight is not None else None

    @classmethod
    def from_settings(cls, target: Any, settings: Any, *, max_in_flight: int | None = None) -> ModelCaller:
        """A caller configured by :class:`~fairpair.run.RunSettings` (timeout, attempts, backoff, rpm, tpm)."""
        return cls(target, timeout=settings.timeout, max_attempts=settings.max_attempts,
                   backoff_initial=settings.backoff_initial, backoff_max=settings.backoff_max,
                   rpm=settings.rpm, tpm=settings.tpm, max_in_flight=max_in_flight)

    async def call(self, request: ChatRequest) -> CallOutcome:
        """Answer ``request``; never raises for a failed call (cancellation still propagates)."""
        if self._slots is None:
            return await self._call(request)
        async with self._slots:
            return await self._call(request)

    async def _attempt(self, request: ChatRequest, tokens: int) -> Completion:
        await self.limiter.acquire(tokens)
        async with asyncio.timeout(self.timeout):
            return await self.target.generate(request)

    async def _call(self, request: ChatRequest) -> CallOutcome:
        tokens = estimate_tokens(request) if self.limiter.tpm else 0
        # The first attempt runs outside tenacity: most calls succeed at once, and building
        # tenacity's retry state for each of them costs more CPU than the rest of the call's
        # bookkeeping. A retryable failure enters the tenacity loop as its first attempt.
        try:
            return CallOutcome(await self._attempt(request, tokens), 1)
        except Exception as exc:  # noqa: BLE001 - a failed call is an outcome, not an exception
            if self.max_attempts == 1 or not is_retryable(exc):
                return CallOutcome(None, 1, exc)
            first: Exception | None = exc
        attempts = 1
        try:
            async for attempt in AsyncRetrying(retry=retry_if_exception(is_retryable),
                                               stop=stop_after_attempt(self.max_attempts), wait=self._wait,
                                               reraise=True):
                with attempt:
                    if first is not None:  # tenacity sees the first attempt's failure and waits
                        failed, first = first, None
                        raise failed
                    attempts += 1
                    completion = await self._attempt(request, tokens)
        except Exception as exc:  # noqa: BLE001 - a failed call is an outcome, not an exception
            return CallOutcome(None, attempts, exc)
        return CallOutcome(completion, attempts)


async def worker_pool(items: Iterable[T] | AsyncIterable[T], handle: Callable[[T], Awaitable[None]], *,
                      workers: int, buffer: int | None = None) -> None:
    """Call ``handle(item)`` for every item, ``workers`` at a time, reading ``items`` lazily.

    A producer feeds a queue of at most ``buffer`` items (default
    ``4 * workers``) to ``workers`` consumers, so at most ``workers`` handlers
    run at once and at most ``buffer + workers`` items are held, however long
    ``items`` is. An exception raised by ``handle`` or by the iteration of
    ``items`` stops the pool: the other tasks are cancelled and the exception
    propagates. Items are started in the order they come; they may finish in
    any order.
    """
    workers = max(1, workers)
    queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=buffer or 4 * workers)
    done = object()

    async def produce() -> None:
        if isinstance(items, AsyncIterable):
            async for item in items:
                await queue.put(item)
        else:
            for item in items:
                await queue.put(item)
        for _ in range(workers):
            await queue.put(done)

    async def work() -> None:
        while (item := await queue.get()) is not done:
            await handle(item)

    tasks = [asyncio.ensure_future(produce()), *(asyncio.ensure_future(work()) for _ in range(workers))]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
