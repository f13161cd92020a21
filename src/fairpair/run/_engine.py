"""The run engine: send cases to a target concurrently, keep every answer.

asyncio with a concurrency limit (:func:`fairpair._calls.worker_pool`, the
measure stage's pool too) and one model-call service
(:class:`fairpair._calls.ModelCaller`, the judge's too): an optional rate
limit (requests and tokens per minute), a per-request timeout, and retries
with exponential backoff and full jitter (tenacity) on retryable errors (429,
5xx, timeouts, connection errors), honouring ``Retry-After``. A case that
still fails is stored as a failure with its error and the attempts made: it is
never dropped and never ends the run.

Each answer is committed on its own as it arrives (one autocommitted INSERT),
so a ``kill -9`` loses nothing that was answered: only the requests in flight
are sent again by the next run. The WAL checkpoints (a sync of the database
file every few hundred answers) run on a thread of their own meanwhile
(:meth:`~fairpair.store.Store.checkpoints_in_background`). (Committing in groups a few milliseconds apart
halves the store's cost per answer, but lets a kill lose the answers of those
milliseconds; the crash tests hold the engine to the stronger rule.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from fairpair._calls import Caller, CallOutcome, ModelCaller, RateLimiter, describe_error, worker_pool
from fairpair.cases import Case
from fairpair.store import Store
from fairpair.targets import ChatRequest, Completion, Usage

__all__ = ["RunSettings", "RateLimiter", "run_target", "redact", "request_for"]


@dataclass(frozen=True)
class RunSettings:
    """How to send: ``concurrency`` parallel requests, ``timeout`` seconds per request,
    ``max_attempts`` tries per case, backoff ``backoff_initial``..``backoff_max`` seconds,
    ``rpm``/``tpm`` requests/tokens per minute (None = unlimited); ``preflight``: send one case
    first and stop on its failure; ``max_consecutive_failures``: stop after that many cases in a row
    fail with the same kind of error (0 = never; see :mod:`fairpair.run._preflight`); ``engine``:
    ``inprocess`` (asyncio in this process) or ``ray`` (an actor pool, :mod:`fairpair.run._ray`) with
    ``address`` (None: a local Ray; ``auto``; ``ray://host:10001``), ``actors`` (default: the free
    CPUs) and ``actor_cpus`` (CPUs each actor reserves; below 1 for targets that mostly wait)."""

    concurrency: int = 8
    timeout: float = 120.0
    max_attempts: int = 5
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    rpm: float | None = None
    tpm: float | None = None
    preflight: bool = True
    max_consecutive_failures: int = 5
    engine: str = "inprocess"
    address: str | None = None
    actors: int | None = None
    actor_cpus: float = 1.0


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


async def _converse(caller: Caller, case: Case, tools, tool_map) -> tuple[CallOutcome, list[str], float]:
    """Send the case's turns one after another.

    Returns the outcome of the last call made (the last turn's, or the turn
    that failed), every reply, and the seconds taken. The outcome's
    ``attempts`` is the most tries any one turn needed; its completion's
    ``usage`` is the sum over the turns (every turn resends the conversation,
    and the manifest records the tokens used).
    """
    messages: list[dict[str, Any]] = list(case.messages)
    replies: list[str] = []
    most = 0
    t0 = time.monotonic()
    outcome: CallOutcome | None = None
    results = _tool_results(case, tool_map) if tool_map else {}
    used: list[Usage] = []
    for turn in case.turns:
        messages.append({"role": "user", "content": turn})
        outcome = await caller.call(request_for(case, messages, tools=tools, tool_results=results))
        most = max(most, outcome.attempts)
        if outcome.completion is None:
            break
        used.append(outcome.completion.usage)
        replies.append(outcome.completion.text)
        messages.append({"role": "assistant", "content": outcome.completion.text})
    assert outcome is not None
    if outcome.attempts != most:
        outcome = replace(outcome, attempts=most)
    if len(used) > 1 and outcome.completion is not None:
        outcome = replace(outcome, completion=replace(outcome.completion, usage=_summed(used)))
    return outcome, replies, time.monotonic() - t0


def _summed(usages: list[Usage]) -> Usage:
    """The turns' usage added up; a count none of the turns reported stays None."""
    def add(values: list[int | None]) -> int | None:
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    return Usage(add([u.prompt_tokens for u in usages]), add([u.completion_tokens for u in usages]))


async def run_target(store: Store, target_name: str, target, cases: Iterable[Case], settings: RunSettings, *,
                     tools: list[dict] | None = None, tool_map: dict[str, str] | None = None,
                     secrets: Iterable[str] = (), on_done: Callable[[str, Completion | None, str | None], None]
                     | None = None, breaker: Any = None) -> TargetRunStats:
    """Answer every case of ``cases`` that has no stored answer for ``target_name``.

    Streams: :func:`~fairpair._calls.worker_pool` feeds ``concurrency``
    workers (at most the target's ``max_concurrency``) from a bounded queue,
    so memory stays flat however many cases there are; each call goes through
    one :class:`~fairpair._calls.ModelCaller` (retries, timeout, rate limits).
    Each answer or final failure is committed to ``store`` as soon as it is
    known. ``breaker`` (a :class:`~fairpair.run._preflight.CircuitBreaker`)
    sees every final outcome and may raise
    :class:`~fairpair.run._preflight.CircuitOpen`, which stops every worker.
    """
    secrets = [s for s in secrets if s]
    caller = ModelCaller.from_settings(target, settings)
    n_workers = settings.concurrency
    if getattr(target, "max_concurrency", None):
        n_workers = min(n_workers, target.max_concurrency)
    n_workers = max(1, n_workers)
    stats = TargetRunStats()

    answered = store.answered_ids(target_name)  # one query, not one per case

    async def answer(case: Case) -> None:
        outcome, replies, latency = await answer_case(caller, case, tools, tool_map or {})
        error = describe_error(outcome.error) if outcome.error is not None else None
        record_outcome(store, target_name, case, outcome.completion, error, outcome.attempts, replies, latency,
                       stats, secrets=secrets, on_done=on_done, breaker=breaker)

    with store.checkpoints_in_background():  # no commit of an answer stalls the requests in flight
        await worker_pool(unanswered(cases, answered, stats), answer, workers=n_workers, buffer=n_workers * 4)
    return stats


def unanswered(cases: Iterable[Case], answered: set[str], stats: TargetRunStats) -> Iterator[Case]:
    """The cases of ``cases`` whose id is not in ``answered`` (the target's stored ``ok`` answers), in
    order, lazily; each one skipped is counted in ``stats.skipped``. The one resume rule of every engine."""
    for case in cases:
        if case.id in answered:
            stats.skipped += 1
        else:
            yield case


async def answer_case(caller: ModelCaller, case: Case, tools, tool_map) -> tuple[CallOutcome, list[str], float]:
    """:func:`_converse`, with any exception of ours turned into a failed outcome (every failure is data)."""
    try:
        return await _converse(caller, case, tools, tool_map)
    except Exception as exc:  # noqa: BLE001 - every failure becomes data, even one of ours
        return CallOutcome(None, 1, exc), [], 0.0


def record_outcome(store: Store, target_name: str, case: Case, completion: Completion | None, error: str | None,
                   attempts: int, replies: list[str], latency: float, stats: TargetRunStats, *,
                   secrets: Iterable[str] = (), on_done: Callable[[str, Completion | None, str | None], None]
                   | None = None, breaker: Any = None) -> None:
    """Commit one case's final outcome to ``store`` (an answer, or a failure with ``error``), count it in
    ``stats``, tell ``on_done`` and ``breaker``. The one writer of answers, for every engine."""
    if completion is None:
        err = redact(error or "unknown error", secrets)
        store.add_response(target=target_name, case_id=case.id, status="failed", error=err, attempts=attempts)
        stats.failed += 1
        key = err.split(":")[0][:60]
        stats.errors[key] = stats.errors.get(key, 0) + 1
        if on_done:
            on_done(case.id, None, err)
        if breaker is not None:
            breaker.failure(err)
        return
    store_answer(store, target_name, case, completion, replies, attempts, latency)
    stats.answered += 1
    stats.retried += attempts > 1
    stats.prompt_tokens += completion.usage.prompt_tokens or 0
    stats.completion_tokens += completion.usage.completion_tokens or 0
    if on_done:
        on_done(case.id, completion, None)
    if breaker is not None:
        breaker.success()


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
