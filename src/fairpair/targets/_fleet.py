"""A fleet of OpenAI-compatible endpoints behind one target: spread, health, and one model version.

A vLLM or TGI deployment often serves one model from several processes, one
per GPU or per node (``vllm serve MODEL --port 8001``, ``--port 8002``...), each
behind its own URL. The ``openai`` target takes them as a list::

    target:
      kind: openai
      base_url: [http://gpu0:8000/v1, http://gpu1:8000/v1, http://gpu2:8000/v1]
      endpoint_concurrency: 32      # most requests in flight per endpoint (optional)
      model: Qwen/Qwen2.5-7B-Instruct
      api_key_env: null

:class:`Fleet` decides where each request goes:

* **spread**: to the healthy endpoint with the fewest requests in flight (ties
  in turn), at most ``endpoint_concurrency`` per endpoint; a request waits
  while every healthy endpoint is full;
* **health**: a connection error (refused, reset, dropped, timed out) drains
  an endpoint at once, a 5xx answer after :data:`DRAIN_AFTER_5XX` in a row.
  The request is then sent again at once to another endpoint (not counted as
  a try by the run engine); when every endpoint is drained it fails with a
  retryable error, so the engine backs off as for one server. A drained
  endpoint is probed again after a cool-down (1 s, doubled after each failed
  probe up to 30 s, the circuit breaker's half-open state, Nygard,
  *Release It!*, 2007): one real request goes to it, and its success puts the
  endpoint back;
* **one model version**: every answer's ``model`` and ``system_fingerprint``
  are counted per endpoint. A fleet that answered with more than one
  ``(model, system_fingerprint)`` is ``mixed``: the members of a
  counterfactual pair may have been answered by two model versions, so the
  pair is not paired. The run warns, records an event ``fleet_mixed`` and
  ``fleets.<target>.mixed: true`` in the manifest; the preflight sends its
  first request to every endpoint to find it before the battery is sent.

All counters live in one event loop at a time (the run engine's); nothing
here blocks.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from fairpair.targets._base import TargetError

__all__ = ["COOLDOWN_INITIAL", "COOLDOWN_MAX", "DRAIN_AFTER_5XX", "Endpoint", "Fleet", "endpoint_failure"]

#: Seconds a drained endpoint waits before its first re-probe (doubled after each failed probe).
COOLDOWN_INITIAL = 1.0
#: The longest wait between two probes of a drained endpoint, in seconds.
COOLDOWN_MAX = 30.0
#: 5xx answers in a row that drain an endpoint (a connection error drains it at once).
DRAIN_AFTER_5XX = 3


def endpoint_failure(exc: BaseException | None, status: int | None = None) -> str | None:
    """Whether a failure is the endpoint's own: ``"connection"``, ``"5xx"`` or ``None``.

    ``exc`` is the :class:`TargetError` the client raised (transport errors
    carry no status); ``status`` an HTTP status received. 429 and 4xx are the
    request's or the account's, not the endpoint's health.
    """
    if status is not None:
        return "5xx" if status >= 500 else None
    if isinstance(exc, TargetError):
        if exc.status is None and exc.retryable and str(exc).startswith(("connection error", "timeout")):
            return "connection"  # what transport_error raises; a malformed body is not the endpoint's health
        if exc.status is not None and exc.status >= 500:
            return "5xx"
    if isinstance(exc, (TimeoutError, ConnectionError, OSError)):
        return "connection"
    return None


@dataclass
class Endpoint:
    """One URL of a fleet and what it did: requests in flight, answers, failures, drains, versions served."""

    base_url: str
    url: str  # the chat-completions URL
    in_flight: int = 0
    answered: int = 0
    failed: int = 0
    drains: int = 0
    consecutive_5xx: int = 0
    drained_until: float | None = None  # monotonic seconds; None = healthy
    probing: bool = False
    cooldown: float = COOLDOWN_INITIAL
    last_error: str | None = None
    served: Counter = field(default_factory=Counter)  # (model, system_fingerprint) -> answers

    @property
    def healthy(self) -> bool:
        return self.drained_until is None

    def report(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "answered": self.answered, "failed": self.failed,
                "drains": self.drains, "healthy": self.healthy, "last_error": self.last_error,
                "served": [{"model": m, "system_fingerprint": fp, "answers": n}
                           for (m, fp), n in sorted(self.served.items(), key=lambda kv: str(kv[0]))]}


class Fleet:
    """Chooses an endpoint per request and keeps each one's health (see the module docstring).

    Parameters
    ----------
    endpoints:
        ``[(base_url, chat_completions_url), ...]``, two or more.
    per_endpoint:
        Most requests in flight per endpoint (``None``: no cap beyond the run's concurrency).
    cooldown, cooldown_max:
        Seconds before a drained endpoint's first probe, and the ceiling of the doubling.
    """

    def __init__(self, endpoints: list[tuple[str, str]], *, per_endpoint: int | None = None,
                 cooldown: float = COOLDOWN_INITIAL, cooldown_max: float = COOLDOWN_MAX):
        self.endpoints = [Endpoint(b, u, cooldown=cooldown) for b, u in endpoints]
        self.per_endpoint = per_endpoint
        self.cooldown_initial = cooldown
        self.cooldown_max = cooldown_max
        self._turn = 0
        self._conds: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Condition]] = {}
        self.events: list[dict[str, Any]] = []  # drains and recoveries, in order (for the run's events)

    # ------------------------------------------------------------ choosing
    def _cond(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        entry = self._conds.get(id(loop))
        if entry is None or entry[0] is not loop:
            self._conds = {k: v for k, v in self._conds.items() if not v[0].is_closed()}
            entry = self._conds[id(loop)] = (loop, asyncio.Condition())
        return entry[1]

    def _free(self, ep: Endpoint) -> bool:
        return self.per_endpoint is None or ep.in_flight < self.per_endpoint

    def _pick(self, exclude: AbstractSet[int]) -> Endpoint | None | float:
        """An endpoint to use now, ``None`` to wait for a free slot, or the seconds until a probe is due
        (every endpoint drained or tried)."""
        now = time.monotonic()
        n = len(self.endpoints)
        healthy = [i for i in range(n) if i not in exclude and self.endpoints[i].healthy]
        # a drained endpoint whose cool-down is over gets the next request, alone, as its probe
        due = [i for i in range(n) if i not in exclude and not self.endpoints[i].healthy
               and not self.endpoints[i].probing and (self.endpoints[i].drained_until or 0.0) <= now]
        if due:
            ep = self.endpoints[due[0]]
            ep.probing = True
            return ep
        free = [i for i in healthy if self._free(self.endpoints[i])]
        if free:
            least = min(self.endpoints[i].in_flight for i in free)
            order = [(self._turn + k) % n for k in range(n)]
            i = next(i for i in order if i in free and self.endpoints[i].in_flight == least)
            self._turn = (i + 1) % n
            return self.endpoints[i]
        if healthy:
            return None  # healthy ones are full: wait for a slot
        waits = [(self.endpoints[i].drained_until or now) - now for i in range(n) if i not in exclude
                 and not self.endpoints[i].healthy and not self.endpoints[i].probing]
        return max(0.0, min(waits)) if waits else self.cooldown_initial

    async def acquire(self, exclude: AbstractSet[int] = frozenset()) -> tuple[int, Endpoint]:
        """The endpoint for the next request (its slot taken): ``(index, endpoint)``.

        Raises
        ------
        TargetError
            (retryable, ``retry_after`` = seconds until the next probe is due)
            every endpoint not in ``exclude`` is drained; the message gives the
            last errors.
        """
        cond = self._cond()
        async with cond:
            while True:
                got = self._pick(set(exclude))
                if isinstance(got, Endpoint):
                    got.in_flight += 1
                    return self.endpoints.index(got), got
                if got is None:
                    await cond.wait()
                    continue
                last = "; ".join(f"{e.base_url}: {e.last_error}" for e in self.endpoints if e.last_error)
                raise TargetError(f"connection error: every endpoint of the fleet is drained or failed this "
                                  f"request ({last or 'no answer'})", retryable=True, retry_after=got)

    async def release(self, ep: Endpoint, *, error: BaseException | None = None, status: int | None = None,
                      model: str | None = None, system_fingerprint: str | None = None,
                      answered: bool = False) -> str | None:
        """Give the slot back and record the outcome; returns the endpoint failure kind (or ``None``).

        ``answered``: the endpoint answered (any non-5xx status); ``model`` and
        ``system_fingerprint``: what a successful answer reported.
        """
        kind = endpoint_failure(error, status)
        ep.in_flight -= 1
        was_probe, ep.probing = ep.probing, False
        if kind is None:
            if answered:
                ep.consecutive_5xx = 0
                if model is not None or system_fingerprint is not None:
                    ep.served[(model, system_fingerprint)] += 1
                ep.answered += 1
                if not ep.healthy:
                    ep.drained_until, ep.cooldown = None, self.cooldown_initial
                    self.events.append({"event": "recovered", "base_url": ep.base_url, "at": time.time()})
        else:
            ep.failed += 1
            ep.last_error = str(error) if error is not None else f"server answered {status}"
            if kind == "5xx":
                ep.consecutive_5xx += 1
            if kind == "connection" or ep.consecutive_5xx >= DRAIN_AFTER_5XX or was_probe:
                self._drain(ep, probe_failed=was_probe)
        cond = self._cond()
        async with cond:
            cond.notify_all()
        return kind

    def _drain(self, ep: Endpoint, *, probe_failed: bool) -> None:
        if probe_failed:
            ep.cooldown = min(self.cooldown_max, ep.cooldown * 2)
        elif ep.healthy:
            ep.drains += 1
            ep.cooldown = self.cooldown_initial
            self.events.append({"event": "drained", "base_url": ep.base_url, "error": ep.last_error,
                                "at": time.time()})
        ep.consecutive_5xx = 0
        ep.drained_until = time.monotonic() + ep.cooldown

    # ------------------------------------------------------------ versions
    def versions(self) -> list[tuple[str | None, str | None]]:
        """The distinct ``(model, system_fingerprint)`` the fleet answered with, sorted."""
        seen = {v for ep in self.endpoints for v in ep.served}
        return sorted(seen, key=str)

    @property
    def mixed(self) -> bool:
        """More than one ``(model, system_fingerprint)`` answered: the pairs may span model versions."""
        return len(self.versions()) > 1

    def report(self) -> dict[str, Any]:
        """What the manifest records: each endpoint's counts and versions, ``mixed``, drains and recoveries."""
        return {"endpoints": [ep.report() for ep in self.endpoints], "per_endpoint": self.per_endpoint,
                "versions": [{"model": m, "system_fingerprint": fp} for m, fp in self.versions()],
                "mixed": self.mixed, "events": list(self.events)}

    def warning(self) -> str | None:
        """The warning for a mixed fleet (``None`` when it is not mixed)."""
        if not self.mixed:
            return None
        by = "; ".join(f"{ep.base_url}: " + ", ".join(f"{m} / {fp}" for m, fp in ep.served) for ep in self.endpoints
                       if ep.served)
        return ("the fleet answered with more than one model version (model / system_fingerprint): " + by
                + ". Pairs answered by two versions are not paired comparisons; serve one version "
                  "everywhere and run again into a new --out")
