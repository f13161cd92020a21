"""The run engine: send cases to a target concurrently, keep every answer.

asyncio with a concurrency limit, an optional rate limit (requests and tokens
per minute), a per-request timeout, and retries with exponential backoff and
full jitter (tenacity) on retryable errors (429, 5xx, timeouts, connection
errors), honouring ``Retry-After``. A case that still fails is stored as a
failure with its error: it is never dropped and never ends the run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from fairpair.cases._case import Case
from fairpair.run._store import Store
from fairpair.targets._base import ChatRequest, Completion, TargetError

__all__ = ["RunSettings", "RateLimiter", "run_target", "redact", "request_for"]


@dataclass(frozen=True)
class RunSettings:
    """How to send: ``concurrency`` parallel requests, ``timeout`` seconds per request,
    ``max_attempts`` tries per case, backoff ``backoff_initial``..``backoff_max`` seconds,
    ``rpm``/``tpm`` requests/tokens per minute (None = unlimited); ``preflight``: send one case
    first and stop on its failure; ``max_consecutive_failures``: stop after that many cases in a row
    fail with the same kind of error (0 = never; see :mod:`fairpair.run._preflight`)."""

    concurrency: int = 8
    timeout: float = 120.0
    max_attempts: int = 5
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    rpm: float | None = None
    tpm: float | None = None
    preflight: bool = True
    max_consecutive_failures: int = 5


class RateLimiter:
    """Token buckets for requests and (estimated) tokens per minute."""

    def __init__(self, rpm: float | None, tpm: float | None):
        self.rpm, self.tpm = rpm, tpm
        now = time.monotonic()
        self._req = (rpm or 0.0, now)
        self._tok = (tpm or 0.0, now)
        self._lock = asyncio.Lock()

    async def acquire(self, tokens: int) -> None:
        if not self.rpm and not self.tpm:
            return
        async with self._lock:
            while True:
                now = time.monotonic()
                wait = 0.0
                if self.rpm:
                    level, t0 = self._req
                    level = min(self.rpm, level + (now - t0) * self.rpm / 60.0)
                    self._req = (level, now)
                    if level < 1:
                        wait = max(wait, (1 - level) * 60.0 / self.rpm)
                if self.tpm:
                    level, t0 = self._tok
                    level = min(self.tpm, level + (now - t0) * self.tpm / 60.0)
                    self._tok = (level, now)
                    need = min(tokens, self.tpm)
                    if level < need:
                        wait = max(wait, (need - level) * 60.0 / self.tpm)
                if wait <= 0:
                    if self.rpm:
                        self._req = (self._req[0] - 1, now)
                    if self.tpm:
                        self._tok = (self._tok[0] - min(tokens, self.tpm), now)
                    return
                await asyncio.sleep(wait)


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace every secret value (API keys, bearer tokens) in ``text`` with ``***``."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return text


def request_for(case: Case, messages: list[dict[str, Any]], *, tools=None, tool_results=None) -> ChatRequest:
    return ChatRequest(messages=tuple(messages), context=case.context, tools=tuple(tools) if tools else None,
                       tool_results=tool_results or {}, seed=case.seed, case_id=case.id,
                       meta={"groups": case.groups, "variants": case.variants, "template": case.template,
                             "baseline": case.baseline})


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, TargetError):
        return exc.retryable
    return isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError))


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


@dataclass
class TargetRunStats:
    answered: int = 0
    failed: int = 0
    retried: int = 0
    skipped: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: dict[str, int] = field(default_factory=dict)


def _tool_results(case: Case, mapping: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tool, path in mapping.items():
        cur: Any = case.context
        for part in path.split(".") if path else ():  # "" is the whole context
            cur = cur.get(part) if isinstance(cur, dict) else None
        out[tool] = cur
    return out


async def _converse(target, case: Case, settings: RunSettings, limiter: RateLimiter, tools, tool_map,
                    ) -> tuple[Completion, list[str], int, float]:
    """Send the case's turns one after another; returns the last completion and all replies."""
    messages: list[dict[str, Any]] = list(case.messages)
    replies: list[str] = []
    attempts_total = 0
    t0 = time.monotonic()
    completion: Completion | None = None
    results = _tool_results(case, tool_map) if tool_map else {}
    for turn in case.turns:
        messages.append({"role": "user", "content": turn})
        req = request_for(case, messages, tools=tools, tool_results=results)
        est = sum(len(str(m.get("content", ""))) for m in messages) // 4
        tries = [0]
        try:
            completion = await _with_retries(target, req, settings, limiter, est, tries)
        except Exception as exc:
            exc._fairpair_attempts = max(attempts_total, tries[0])  # type: ignore[attr-defined]
            raise
        attempts_total = max(attempts_total, tries[0])  # the most tries any one turn needed
        replies.append(completion.text)
        messages.append({"role": "assistant", "content": completion.text})
    assert completion is not None
    return completion, replies, attempts_total, time.monotonic() - t0


async def _with_retries(target, req: ChatRequest, settings: RunSettings, limiter: RateLimiter, est: int,
                        tries: list[int]) -> Completion:
    """One request with retries; ``tries[0]`` counts the attempts made."""
    async for attempt in AsyncRetrying(
        retry=retry_if_exception(_retryable), stop=stop_after_attempt(settings.max_attempts),
        wait=_Wait(settings.backoff_initial, settings.backoff_max), reraise=True,
    ):
        with attempt:
            tries[0] += 1
            await limiter.acquire(est)
            async with asyncio.timeout(settings.timeout):
                return await target.generate(req)
    raise AssertionError("unreachable")  # tenacity re-raises the last error


async def run_target(store: Store, target_name: str, target, cases: Iterable[Case], settings: RunSettings, *,
                     tools: list[dict] | None = None, tool_map: dict[str, str] | None = None,
                     secrets: Iterable[str] = (), on_done: Callable[[str, Completion | None, str | None], None]
                     | None = None, breaker: Any = None) -> TargetRunStats:
    """Answer every case of ``cases`` that has no stored answer for ``target_name``.

    Streams: a bounded queue feeds ``concurrency`` workers, so memory stays flat
    however many cases there are. Each answer or final failure is committed to
    ``store`` as soon as it is known. ``breaker`` (a
    :class:`~fairpair.run._preflight.CircuitBreaker`) sees every final outcome and may raise
    :class:`~fairpair.run._preflight.CircuitOpen`, which stops every worker.
    """
    secrets = [s for s in secrets if s]
    limiter = RateLimiter(settings.rpm, settings.tpm)
    n_workers = settings.concurrency
    if getattr(target, "max_concurrency", None):
        n_workers = min(n_workers, target.max_concurrency)
    n_workers = max(1, n_workers)
    queue: asyncio.Queue[Case | None] = asyncio.Queue(maxsize=n_workers * 4)
    stats = TargetRunStats()

    answered = store.answered_ids(target_name)  # one query, not one per case

    async def producer() -> None:
        for case in cases:
            if case.id in answered:
                stats.skipped += 1
                continue
            await queue.put(case)
        for _ in range(n_workers):
            await queue.put(None)

    async def worker() -> None:
        while True:
            case = await queue.get()
            if case is None:
                return
            try:
                completion, replies, attempts, latency = await _converse(
                    target, case, settings, limiter, tools, tool_map or {})
            except Exception as exc:  # noqa: BLE001 - every failure becomes data
                err = _describe(exc)
                err = redact(err, secrets)
                attempts = getattr(exc, "_fairpair_attempts", settings.max_attempts if _retryable(exc) else 1)
                store.add_response(target=target_name, case_id=case.id, status="failed", error=err,
                                   attempts=attempts)
                stats.failed += 1
                key = err.split(":")[0][:60]
                stats.errors[key] = stats.errors.get(key, 0) + 1
                if on_done:
                    on_done(case.id, None, err)
                if breaker is not None:
                    breaker.failure(err)
                continue
            store_answer(store, target_name, case, completion, replies, attempts, latency)
            stats.answered += 1
            stats.retried += attempts > 1
            stats.prompt_tokens += completion.usage.prompt_tokens or 0
            stats.completion_tokens += completion.usage.completion_tokens or 0
            if on_done:
                on_done(case.id, completion, None)
            if breaker is not None:
                breaker.success()

    workers = [asyncio.create_task(worker()) for _ in range(n_workers)]
    prod = asyncio.create_task(producer())
    try:
        await asyncio.gather(prod, *workers)
    finally:
        for t in (prod, *workers):
            t.cancel()
    return stats


def store_answer(store: Store, target_name: str, case: Case, completion: Completion, replies: list[str],
                 attempts: int, latency: float) -> None:
    """Commit one ``ok`` answer (what :func:`_converse` returned) to ``store``."""
    calls = [{"name": c.name, "arguments": c.arguments, "id": c.id, "result": c.result}
             for c in completion.tool_calls]
    store.add_response(
        target=target_name, case_id=case.id, status="ok", text=completion.text,
        turns=replies[:-1], tool_calls=calls, prompt_tokens=completion.usage.prompt_tokens,
        completion_tokens=completion.usage.completion_tokens, latency_s=round(latency, 4),
        finish_reason=completion.finish_reason, model=completion.model,
        system_fingerprint=completion.system_fingerprint, attempts=attempts)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timeout: no answer within the request timeout"
    if isinstance(exc, TargetError):
        status = f" (HTTP {exc.status})" if exc.status else ""
        return f"{type(exc).__name__}{status}: {exc}"
    return f"{type(exc).__name__}: {exc}"
