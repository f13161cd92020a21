"""Fail fast on a broken target: a preflight before the run, a circuit breaker during it.

* :func:`preflight` sends one case (the first one still to answer) before the
  battery is sent, with at most :data:`PREFLIGHT_ATTEMPTS` tries and a backoff capped
  at :data:`PREFLIGHT_BACKOFF_MAX` seconds (connection refused: about 2 s). A target
  that is unreachable (connection refused, unknown host), that rejects the key
  (HTTP 401/403) or answers in a shape it cannot parse (a wrong ``reply_path``)
  raises :class:`PreflightError` (exit code 2) with the error: nothing else is
  sent. On a fresh run :class:`EarlyPreflight` sends it while
  the run expands and stores the other cases (its wait overlaps that work);
  the battery is still sent only after its answer is stored.
* For a fleet (an ``openai`` target with several ``base_url``), after the
  preflight case is answered its first request is sent to every endpoint
  (``probe_fleet``): an unreachable endpoint is drained, and the ``model`` /
  ``system_fingerprint`` each one answers with are recorded (event
  ``fleet_probe``) and compared (:mod:`fairpair.targets._fleet`).
* :class:`CircuitBreaker` counts consecutive final failures of one kind during
  the run; after ``limit`` of them it raises :class:`CircuitOpen`, so a target
  that breaks mid-run (a key revoked, a server gone) stops the run with its
  error instead of storing thousands of failures.
* :func:`summarize_errors` groups failure messages by kind (the text before the
  first ``:``, e.g. ``ConnectError`` or ``TargetError (HTTP 401)``) with a count
  and one example each: the end-of-run summary and ``fairpair status``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fairpair.errors import FairpairError

__all__ = ["PREFLIGHT_ATTEMPTS", "PREFLIGHT_BACKOFF_MAX", "PreflightError", "CircuitOpen", "CircuitBreaker",
           "ErrorKind", "error_kind", "summarize_errors", "preflight", "preflight_into_store", "EarlyPreflight",
           "format_error_summary", "TargetCheck", "check_targets"]

#: The longest wait between two tries of the preflight request, in seconds (a Retry-After still wins).
PREFLIGHT_BACKOFF_MAX = 1.0
#: The most tries of the preflight request (fewer when the run's --max-attempts is lower).
PREFLIGHT_ATTEMPTS = 3


class PreflightError(FairpairError):
    """The target failed its one-case preflight; the battery was not sent (exit code 2).

    ``error`` is the failure as stored (secrets redacted)."""

    error: str = ""
    attempts: int = 1


class CircuitOpen(FairpairError):
    """``limit`` consecutive cases failed with the same kind of error; the run stopped (exit code 2)."""


_PYTHON_RAISED = re.compile(r"TargetError: ([\w.]+:[\w.]+ raised \w+)")  # fairpair.targets.python's failures


def error_kind(error: str) -> str:
    """The kind of a stored failure message: its text before the first ``:`` (for the generic
    ``TargetError``, before the second), at most 60 characters.

    A ``python`` target's failure keeps its ``module:function`` and the exception's type:

    >>> error_kind("ConnectError: cannot connect to 127.0.0.1:9")
    'ConnectError'
    >>> error_kind("TargetError: bot:answer raised RuntimeError: backend down")
    'TargetError: bot:answer raised RuntimeError'
    """
    fn = _PYTHON_RAISED.match(error or "")
    if fn:
        return f"TargetError: {fn.group(1)}"[:60]
    parts = (error or "").split(":")
    kind = parts[0].strip()
    if kind == "TargetError" and len(parts) > 1:  # the generic wrapper: its first clause says which failure
        kind += ": " + parts[1].strip()
    return kind[:60] or "unknown error"


@dataclass(frozen=True)
class ErrorKind:
    """One kind of failure: ``kind``, how many cases (``count``) and one ``example`` message."""

    kind: str
    count: int
    example: str


def summarize_errors(errors: Iterable[str], *, top: int = 3) -> list[ErrorKind]:
    """The ``top`` most frequent kinds of ``errors`` (failure messages), most frequent first,
    ties in order of first appearance; each with its count and its first message as example."""
    counts: dict[str, int] = {}
    examples: dict[str, str] = {}
    for e in errors:
        k = error_kind(e)
        counts[k] = counts.get(k, 0) + 1
        examples.setdefault(k, e)
    order = sorted(counts, key=lambda k: -counts[k])  # stable: ties keep first appearance
    return [ErrorKind(k, counts[k], examples[k]) for k in order[:top]]


def format_error_summary(kinds: list[ErrorKind], *, total_kinds: int | None = None,
                         width: int = 300) -> list[str]:
    """One line per kind: ``  12 x ConnectError, e.g. ConnectError: cannot connect to ...``."""
    from fairpair._text import one_line

    lines = []
    for k in kinds:  # the example quotes what the target sent: shown with visible escapes
        lines.append(f"{k.count:>6} x {one_line(k.kind)}, e.g. {one_line(k.example, width + 3)}")
    if total_kinds is not None and total_kinds > len(kinds):
        lines.append(f"       ... and {total_kinds - len(kinds)} other kinds (fairpair status RUN)")
    return lines


class CircuitBreaker:
    """Stops a run after ``limit`` consecutive final failures of the same kind (``limit`` >= 1).

    :meth:`failure` raises :class:`CircuitOpen` when the limit is reached;
    :meth:`success` resets the count. A failure of another kind starts a new count.
    """

    def __init__(self, limit: int, *, target: str = ""):
        if limit < 1:
            raise ValueError("limit must be >= 1")
        self.limit = limit
        self.target = target
        self.kind: str | None = None
        self.count = 0

    def success(self) -> None:
        self.kind, self.count = None, 0

    def failure(self, error: str) -> None:
        k = error_kind(error)
        self.count = self.count + 1 if k == self.kind else 1
        self.kind = k
        if self.count >= self.limit:
            raise CircuitOpen(
                f"target '{self.target}': {self.count} cases in a row failed with the same error, so the run "
                f"stopped: {error}",
                hint="the answers stored so far are kept; fix the target (URL, key, reply_path) and run the "
                     "same command again to resume, or raise --max-consecutive-failures (0 = never stop)")


def _classify(error: str) -> str:
    low = error.lower()
    if "http 401" in low or "http 403" in low or "unauthori" in low or "api key" in low or "forbidden" in low:
        return "the target rejected the credentials (check the key and api_key_env / headers)"
    if ("connect" in low or "name or service" in low or "nodename" in low or "resolve" in low
            or "refused" in low or "unreachable" in low):
        return "the target is unreachable (check url / base_url, and that the server is running)"
    if "timeout" in low:
        return "the target did not answer within the request timeout (check the server, or raise --timeout)"
    if "reply_path" in low or "json" in low or "parse" in low or "shape" in low or "no choices" in low:
        return "the target's reply could not be read (check reply_path / the server's answer format)"
    return "the target failed on the first case"


#: The end of a failed preflight's hint in ``fairpair run``, and in ``fairpair check`` (where the first
#: would send the user to the command they just ran).
RUN_NEXT = "`fairpair check BATTERY` tries one case; --no-preflight skips this check"
CHECK_NEXT = "`fairpair run BATTERY --dry-run` prints the exact request, sending nothing"


async def preflight(target: Any, case: Any, settings: Any, *, tools=None, tool_map=None,
                    secrets: Iterable[str] = (), name: str = "",
                    next_step: str = RUN_NEXT) -> tuple[Any, list[str], int, float]:
    """Send ``case`` to ``target`` (at most :data:`PREFLIGHT_ATTEMPTS` tries, backoff capped at
    :data:`PREFLIGHT_BACKOFF_MAX`); ``next_step`` ends the hint of a failure (:func:`preflight_error`).

    Returns ``(completion, replies, attempts, latency_s)``: the answer, every turn's reply, the
    most tries a turn needed (:class:`fairpair._calls.ModelCaller` counts them), the seconds taken.

    Raises
    ------
    PreflightError
        Any failure: the error (secrets redacted), what it most likely means, and how to skip.
    """
    from fairpair._calls import ModelCaller, describe_error
    from fairpair.run._engine import _converse

    quick = dataclasses.replace(settings, max_attempts=min(settings.max_attempts, PREFLIGHT_ATTEMPTS),
                                backoff_max=min(settings.backoff_max, PREFLIGHT_BACKOFF_MAX))
    try:
        outcome, replies, latency = await _converse(ModelCaller.from_settings(target, quick), case, tools,
                                                    tool_map or {})
        error, attempts = outcome.error, outcome.attempts
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - every failure of the first case is reported
        outcome, error, attempts = None, exc, 1
    if error is None:
        assert outcome is not None and outcome.completion is not None
        return outcome.completion, replies, attempts, latency
    raise preflight_error(name, describe_error(error), attempts, secrets, next_step=next_step)


def preflight_error(name: str, error: str, attempts: int, secrets: Iterable[str] = (), *,
                    next_step: str = RUN_NEXT) -> PreflightError:
    """The :class:`PreflightError` of target ``name`` whose first case failed with ``error`` (the stored
    text, redacted here) after ``attempts`` tries: what it most likely means, then ``next_step``
    (:data:`RUN_NEXT`: how to try one case and how to skip the check; :data:`CHECK_NEXT`)."""
    from fairpair.run._engine import redact

    err = redact(error, [s for s in secrets if s])
    pe = PreflightError(f"target '{name}': the first case failed, so nothing else was sent: {err}",
                        hint=f"{_classify(err)}; {next_step}")
    pe.error = err
    pe.attempts = attempts
    return pe


def preflight_into_store(store: Any, name: str, target: Any, cases: Iterable[Any], settings: Any, *,
                         tools=None, tool_map=None, secrets: Iterable[str] = ()) -> bool:
    """Preflight ``target`` with the first of ``cases`` that ``store`` has no answer for.

    The answer is stored as that case's answer (it is not sent again); a failure is
    stored as a failure (data) and then raised. Returns False when every case was
    already answered (nothing sent).

    Raises
    ------
    PreflightError
        As :func:`preflight`.
    """
    answered = store.answered_ids(name)
    case = next((c for c in cases if c.id not in answered), None)
    if case is None:
        return False
    try:
        sent = asyncio.run(preflight(target, case, settings, tools=tools, tool_map=tool_map, secrets=secrets,
                                     name=name))
    except PreflightError as exc:
        _record_preflight(store, name, target, case, None, exc)
        raise
    _record_preflight(store, name, target, case, sent, None)
    return True


def _record_preflight(store: Any, name: str, target: Any, case: Any, sent: tuple[Any, list[str], int, float] | None,
                      failure: PreflightError | None) -> None:
    """Store the preflight's outcome: its answer (``sent``, what :func:`preflight` returned) as the case's
    answer, then a fleet's probe of every endpoint; or ``failure`` as a failed row and a ``preflight_failed``
    event (the caller raises it)."""
    from fairpair.run._engine import store_answer

    if failure is not None:
        store.add_response(target=name, case_id=case.id, status="failed", error=failure.error,
                           attempts=failure.attempts)
        store.event("preflight_failed", {"target": name, "case": case.id, "error": failure.error})
        return
    assert sent is not None
    completion, replies, attempts, latency = sent
    store_answer(store, name, case, completion, replies, attempts, latency)
    probe = getattr(target, "probe_fleet", None)
    if probe is not None:  # a fleet: every endpoint answers the same first request; versions compared
        from fairpair.run._engine import request_for

        first = [*case.messages, *({"role": "user", "content": t} for t in case.turns[:1])]
        found = asyncio.run(probe(request_for(case, first)))
        if found:
            store.event("fleet_probe", {"target": name, "endpoints": found})


class EarlyPreflight:
    """The preflight case of a fresh run, sent while the run stores its cases and writes its manifest.

    :func:`preflight` runs under ``asyncio.run`` in a thread of its own (the target's client keeps one
    session per event loop, as for the engine's loops), so the 200 ms or so of its answer overlap the
    expansion instead of adding to it. Nothing is stored from that thread and no other case is sent
    before :meth:`into_store`, in the caller's thread, has stored its answer; a failure is stored and
    raised there, exactly as :func:`preflight_into_store` does. :meth:`cancel` (on any error of the
    caller) cancels the request and waits for the thread.

    Only for targets without ``load`` (an embedded model answers in the thread that loaded it).
    """

    def __init__(self, name: str, target: Any, case: Any, settings: Any, *, tools=None,
                 tool_map=None, secrets: Iterable[str] = ()):
        import concurrent.futures
        import threading

        self.name, self.target, self.case = name, target, case
        self._future: concurrent.futures.Future = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._started = threading.Event()
        secrets = list(secrets)

        async def body():
            self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
            self._started.set()
            return await preflight(target, case, settings, tools=tools, tool_map=tool_map, secrets=secrets,
                                   name=name)

        def main() -> None:
            try:
                self._future.set_result(asyncio.run(body()))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread by into_store
                self._future.set_exception(exc)
            finally:
                self._started.set()

        self._thread = threading.Thread(target=main, name=f"fairpair-preflight-{name}", daemon=True)
        self._thread.start()

    def into_store(self, store: Any) -> bool:
        """Wait for the answer and store it (or store the failure and raise :class:`PreflightError`).
        Returns True (a case was sent), as :func:`preflight_into_store`."""
        try:
            sent = self._future.result()
        except PreflightError as exc:
            self._thread.join()
            _record_preflight(store, self.name, self.target, self.case, None, exc)
            raise
        except BaseException:
            self.cancel()
            raise
        self._thread.join()
        _record_preflight(store, self.name, self.target, self.case, sent, None)
        return True

    def cancel(self) -> None:
        """Cancel the request if it is still in flight and wait for the thread to end (nothing is stored)."""
        self._started.wait()
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not self._future.done():
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # its loop has just closed
                pass
        self._thread.join()


@dataclass(frozen=True)
class TargetCheck:
    """One target's answer to the first case (``fairpair check``): ``seconds`` of wall time, ``text`` the answer."""

    name: str
    kind: str
    case_id: str
    seconds: float
    text: str


def check_targets(loaded: Any, *, only_targets: Iterable[str] | None = None, timeout: float = 60.0):
    """Send the battery's first case to each target, as the run's preflight does; store nothing.

    Yields one :class:`TargetCheck` per target that answered, in the battery's order.

    Raises
    ------
    FairpairError
        The battery declares no target or expands to no case, an unknown target in ``only_targets``;
        :class:`PreflightError` (exit 2) when a target is unreachable, rejects the key or answers in a
        shape it cannot read.
    """
    import time

    from fairpair.cases import expand
    from fairpair.run._engine import RunSettings
    from fairpair.run._runner import build_target, select_targets, target_secrets

    b = loaded.battery
    specs = select_targets(loaded, only_targets)
    case = next(iter(expand(loaded)), None)
    if case is None:
        raise FairpairError("the battery expands to no case", file=loaded.path)
    settings = RunSettings(concurrency=1, timeout=timeout)
    for name, spec in specs.items():
        t = build_target(name, spec, base_dir=loaded.path.parent, language=b.language,
                         context_format=b.context_channels.format)
        try:
            if hasattr(t, "load"):
                asyncio.run(t.load())
            t0 = time.monotonic()
            completion, _, _, _ = asyncio.run(preflight(
                t, case, settings, tools=b.all_tools() or None, tool_map=b.all_tool_results() or None,
                secrets=target_secrets(spec.options()), name=name, next_step=CHECK_NEXT))
        finally:
            try:
                asyncio.run(t.aclose())
            except Exception:  # noqa: BLE001
                pass
        yield TargetCheck(name, spec.kind, case.id, time.monotonic() - t0, completion.text)
