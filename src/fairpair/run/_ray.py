"""The Ray engine: ``fairpair run BATTERY --engine ray [--address auto|ray://host:10001]``.

Cases are sharded over a pool of Ray actors. Each actor builds and holds its
own target from the battery's target block (:func:`fairpair.run._runner.build_target`,
as the in-process engine does; the embedded model is loaded once per actor,
an HTTP target keeps its own connection pool) and answers cases through the
same model-call service as the in-process engine
(:class:`fairpair._calls.ModelCaller`: retries, timeout, rate limits), several
at a time (an async actor with ``max_concurrency``). The driver keeps a
bounded number of calls in flight, Ray's documented pattern for limiting
pending tasks with :func:`ray.wait`, and is the store's single writer: each
answer is committed as it arrives through the in-process engine's own
:func:`~fairpair.run._engine.record_outcome`.

Failures
--------
* A target error (timeout, 5xx, refusal of the key) is retried inside the
  actor and, when it persists, stored as a failure, as in-process.
* A worker that dies (its process killed, its node lost): Ray restarts the
  actor (``max_restarts=-1``) and sends again every case that actor had not
  answered (``max_task_retries=max_attempts``: Ray's at-least-once actor
  tasks). Each case has one pending result in the driver, and the driver
  stores a case id once, so no case is stored twice. A case whose worker
  dies more than ``max_attempts`` times (a case that crashes it) is stored as
  a failure (``worker died``).
* The driver killed: every answer committed so far is kept; ``fairpair run``
  again on the same ``--out`` resumes by case key (only unanswered cases are
  sent). The actors are owned by the driver's job and end with it.

Measures
--------
``fairpair measure --engine ray`` (and the measure stage of ``fairpair run
--engine ray``) sends the judge's calls and the embeddings to the same kind of
pool: :class:`RayTarget` stands in for the judge on the driver, where the
measure stage keeps everything else (reading answers, masking, prompts,
parsing, the leak check, retries, and the store, written by the driver
alone; resume by measurement key as in-process), and ships the calls to
:class:`TargetWorker` actors in chunks; :class:`RayEmbedder` ships the texts
of a chunk to :class:`EmbedWorker` actors. A worker that dies is restarted
and its chunk sent again (``max_task_retries``); a call whose worker died
every time fails (stored as a failed measurement, tried again by the next
``fairpair measure``).

Ray is an optional dependency (``pip install 'fairpair[ray]'``), imported
only when this engine is used. See https://docs.ray.io/en/latest/ray-core/patterns/limit-pending-tasks.html
(limiting pending tasks) and .../fault-tolerance/actors.html (actor restarts).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from fairpair.cases import Case
from fairpair.errors import FairpairError
from fairpair.run._engine import RunSettings, TargetRunStats, record_outcome, unanswered
from fairpair.run._store import Store

__all__ = ["RAY_INSTALL", "require_ray", "ray_session", "run_target_ray", "CaseWorker", "TargetWorker",
           "RayTarget", "EmbedWorker", "RayEmbedder"]

#: The line that installs the engine's dependency.
RAY_INSTALL = "pip install 'fairpair[ray]'"
WORKER_DIED = "worker died: the Ray actor answering this case was lost"
#: Most cases per Ray task (see :func:`run_target_ray`).
CHUNK = 8
#: Seconds a measure pool's actors may take to start (and load their judge or embedder).
START_TIMEOUT = 600.0


def require_ray() -> Any:
    """Import and return :mod:`ray`; a :class:`FairpairError` (exit 2) naming the install line if it is missing."""
    try:
        import ray
    except ImportError:
        raise FairpairError("the Ray engine (--engine ray) needs Ray, which is not installed",
                            key="--engine", hint=f"install it: {RAY_INSTALL}") from None
    return ray


class _TargetActor:
    """What every actor holding a target has: its process id (the tests kill it) and closing."""

    target: Any

    def pid(self) -> int:
        """The worker's process id (the tests kill it)."""
        return os.getpid()

    async def close(self) -> None:
        try:
            await self.target.aclose()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass


class CaseWorker(_TargetActor):
    """One actor of the pool: holds a target and answers cases, ``max_concurrency`` at a time.

    Built in the actor's process from the battery's target block, so nothing
    but the spec travels to the worker. ``answer(case)`` returns plain data:
    ``(case_id, completion | None, error | None, attempts, replies, latency_s)``;
    ``answer_many(cases)`` a list of them, ``slots`` calls at a time.
    """

    def __init__(self, name: str, spec: Any, base_dir: str | None, language: str | None, settings: RunSettings,
                 tools: list[dict] | None, tool_map: dict[str, str] | None, slots: int = 1,
                 context_format: str = "yaml") -> None:
        from fairpair.run._runner import build_target

        self._slots = asyncio.Semaphore(max(1, slots))  # calls in flight in this actor

        self.target = build_target(name, spec, base_dir=Path(base_dir) if base_dir else None, language=language,
                                   context_format=context_format)
        self.settings, self.tools, self.tool_map = settings, tools, tool_map or {}
        self._caller: Any = None
        self._ready: asyncio.Lock | None = None

    async def _caller_ready(self) -> Any:
        if self._ready is None:
            self._ready = asyncio.Lock()
        async with self._ready:  # load the target once, however many calls arrive together
            if self._caller is None:
                from fairpair._calls import ModelCaller

                if hasattr(self.target, "load"):
                    await self.target.load()
                self._caller = ModelCaller.from_settings(self.target, self.settings)
        return self._caller

    async def answer(self, case: Case) -> tuple[str, Any, str | None, int, list[str], float]:
        from fairpair._calls import describe_error
        from fairpair.run._engine import answer_case

        try:
            caller = await self._caller_ready()
        except Exception as exc:  # noqa: BLE001 - a target that cannot start: the case fails as data
            return case.id, None, describe_error(exc), 1, [], 0.0
        outcome, replies, latency = await answer_case(caller, case, self.tools, self.tool_map)
        error = describe_error(outcome.error) if outcome.error is not None else None
        return case.id, outcome.completion, error, outcome.attempts, replies, latency

    async def answer_many(self, cases: list[Case]) -> list[tuple[str, Any, str | None, int, list[str], float]]:
        """:meth:`answer` for a chunk of cases, at most ``slots`` calls at once in this actor.

        One Ray task per chunk instead of per case: Ray's cost per task is paid once per chunk."""
        async def one(case: Case):
            async with self._slots:
                return await self.answer(case)

        return list(await asyncio.gather(*(one(c) for c in cases)))

    async def preflight(self, case: Case) -> tuple[str, Any, str | None, int, list[str], float]:
        """:func:`fairpair.run._preflight.preflight` of ``case`` in this actor (few tries, short backoff):
        the same tuple as :meth:`answer`; the error unredacted (the driver redacts it)."""
        from fairpair._calls import describe_error
        from fairpair.run._preflight import PreflightError, preflight

        try:
            await self._caller_ready()
        except Exception as exc:  # noqa: BLE001 - a target that cannot start fails its first case
            return case.id, None, describe_error(exc), 1, [], 0.0
        try:
            completion, replies, attempts, latency = await preflight(
                self.target, case, self.settings, tools=self.tools, tool_map=self.tool_map)
        except PreflightError as exc:
            return case.id, None, exc.error, exc.attempts, [], 0.0
        return case.id, completion, None, attempts, replies, latency



class ray_session:  # noqa: N801 - used as a context manager, like open()
    """Connect to Ray for one run: ``address`` None starts a local instance (this machine's CPUs),
    ``"auto"`` joins the running cluster, ``"ray://host:10001"`` goes through Ray Client.

    An already initialised Ray (a test's ``ray.init(num_cpus=2)``) is used as it is and left running.
    """

    def __init__(self, address: str | None = None) -> None:
        self.address = address
        self._started = False

    def __enter__(self) -> Any:
        ray = require_ray()
        if not ray.is_initialized():
            src = str(Path(__file__).resolve().parents[2])  # the tree that holds this fairpair
            env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH"))
                                                              if p)}} if self.address is None else None
            try:
                ray.init(address=self.address, runtime_env=env, include_dashboard=False, log_to_driver=False,
                         configure_logging=False)
            except Exception as exc:  # noqa: BLE001 - an unreachable cluster is the user's to fix
                raise FairpairError(f"cannot connect to Ray at {self.address or 'a new local instance'}: "
                                    f"{type(exc).__name__}: {exc}", key="--address") from None
            self._started = True
        return ray

    def __exit__(self, *exc: Any) -> None:
        if self._started:
            import ray

            ray.shutdown()


def _cause(exc: Exception) -> str:
    """The innermost ``SomeError: message`` line of a Ray error's remote traceback."""
    lines = [ln.strip() for ln in str(exc).splitlines()]
    found = [ln for ln in lines if re.match(r"[\w.]*(Error|Exception): ", ln)]
    return re.sub(r"^[\w.]*\.", "", found[-1]) if found else (lines[0] if lines else repr(exc))


def _pool_size(ray: Any, settings: RunSettings) -> int:
    if settings.actors:
        return settings.actors
    cpus = int(ray.available_resources().get("CPU", 1)) or 1
    return max(1, min(cpus, settings.concurrency))


def _preflight_on_pool(ray: Any, pool: list[Any], store: Store, name: str, cases: Iterable[Case],
                       answered: set[str], secrets: list[str]) -> Iterable[Case]:
    """Send the first case without an answer alone to the first actor; store its answer (it is not sent
    again) or its failure, then raise :class:`~fairpair.run._preflight.PreflightError`. Returns the cases
    to go on with (the same stream, the first case put back in front)."""
    from fairpair.run._engine import store_answer
    from fairpair.run._preflight import preflight_error

    it = iter(cases)
    skipped: list[Case] = []
    first = None
    for case in it:
        skipped.append(case)
        if case.id not in answered:
            first = case
            break
    if first is None:
        return skipped
    try:
        _, completion, error, attempts, replies, latency = ray.get(pool[0].preflight.remote(first))
    except ray.exceptions.RayError as exc:
        completion, error, attempts, replies, latency = None, f"{WORKER_DIED} ({_cause(exc)[:200]})", 1, [], 0.0
    if completion is None:
        pe = preflight_error(name, error or "unknown error", attempts, secrets)
        store.add_response(target=name, case_id=first.id, status="failed", error=pe.error, attempts=attempts)
        store.event("preflight_failed", {"target": name, "case": first.id, "error": pe.error})
        raise pe
    store_answer(store, name, first, completion, replies, attempts, latency)
    answered.add(first.id)
    return itertools.chain(skipped, it)


def run_target_ray(store: Store, target_name: str, spec: Any, cases: Iterable[Case], settings: RunSettings, *,
                   base_dir: Path | None = None, language: str | None = None, tools: list[dict] | None = None,
                   tool_map: dict[str, str] | None = None, secrets: Iterable[str] = (),
                   on_done: Callable[[str, Any, str | None], None] | None = None, breaker: Any = None,
                   max_concurrency: int | None = None,
                   on_pool: Callable[[list[Any]], None] | None = None, preflight: bool = False,
                   context_format: str = "yaml") -> TargetRunStats:
    """Answer every case of ``cases`` without a stored answer for ``target_name`` on a Ray actor pool.

    ``settings.actors`` actors (default: the cluster's free CPUs, at most
    ``settings.concurrency``) share ``settings.concurrency`` calls in flight
    (``ceil(concurrency / actors)`` each; the target's ``max_concurrency``
    holds for the pool as a whole). Cases go in chunks of up to
    :data:`CHUNK` (at most half an actor's calls) per Ray task, twice an
    actor's calls submitted, so the chunks' answers stream back chunk by chunk and the rate limits (``rpm``/``tpm``
    divided by the number of actors). Ray must be initialised (see
    :class:`ray_session`). ``on_pool`` receives the actor handles once they are
    created (the tests kill one). ``preflight``: send the first unanswered
    case alone, on the pool, and stop on its failure (as the in-process
    preflight; for targets the driver does not load, such as the embedded
    model). Returns the same :class:`TargetRunStats` as the in-process engine.

    Raises
    ------
    FairpairError
        Ray is not installed, or the workers cannot build the target (fairpair or
        the target's extra missing on a node); nothing is sent then.
    fairpair.run._preflight.CircuitOpen
        ``breaker`` opened (the same error many times in a row); the pool is stopped.
    fairpair.run._preflight.PreflightError
        ``preflight`` and the first case failed (stored as a failure); nothing else was sent.
    """
    ray = require_ray()
    secrets = [s for s in secrets if s]
    stats = TargetRunStats()
    n_actors = _pool_size(ray, settings)
    per_actor = max(1, math.ceil(settings.concurrency / n_actors))
    if max_concurrency:  # the target's own limit holds for the whole pool
        n_actors = min(n_actors, max_concurrency)
        per_actor = max(1, min(per_actor, max_concurrency // n_actors))
    actor_settings = replace(settings, rpm=settings.rpm / n_actors if settings.rpm else None,
                             tpm=settings.tpm / n_actors if settings.tpm else None)
    # Cases travel in chunks (one Ray task per chunk; Ray's per-task cost is several times the engine's
    # per-call cost), twice the actor's slots submitted so that a slot never waits for the driver.
    chunk = max(1, min(CHUNK, per_actor // 2))
    tasks_per_actor = math.ceil(2 * per_actor / chunk)
    # A dead worker is restarted, and the chunks it had not answered are sent again (to the new worker)
    # up to max_attempts times; only the one result per case reaches the store.
    worker_cls = ray.remote(CaseWorker).options(max_concurrency=tasks_per_actor + 2, max_restarts=-1,
                                                max_task_retries=settings.max_attempts,
                                                num_cpus=settings.actor_cpus)
    pool = [worker_cls.remote(target_name, spec, str(base_dir) if base_dir else None, language, actor_settings,
                              tools, tool_map, per_actor, context_format) for _ in range(n_actors)]
    try:  # every actor up, its target built, before a case is sent
        ray.get([a.pid.remote() for a in pool])
    except ray.exceptions.RayError as exc:
        for a in pool:
            ray.kill(a)
        raise FairpairError(f"target '{target_name}': the Ray workers cannot start it: {_cause(exc)[:300]}",
                            key="--engine", hint="every node needs fairpair (the same version) and the "
                            "target's extras installed; nothing was sent") from None
    if on_pool:
        on_pool(pool)
    answered = store.answered_ids(target_name)
    if preflight:
        cases = _preflight_on_pool(ray, pool, store, target_name, cases, answered, secrets)

    pending = unanswered(cases, answered, stats)
    in_flight: dict[Any, tuple[list[Case], int]] = {}
    load = [0] * n_actors  # chunks in flight per actor

    def fill() -> None:
        while len(in_flight) < n_actors * tasks_per_actor:
            batch = list(itertools.islice(pending, chunk))
            if not batch:
                return
            i = min(range(n_actors), key=load.__getitem__)
            in_flight[pool[i].answer_many.remote(batch)] = (batch, i)
            load[i] += 1

    try:
        fill()
        while in_flight:
            refs = list(in_flight)
            ready, rest = ray.wait(refs, num_returns=1)
            if rest:  # everything else already done, in the same pass
                ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            for ref in ready:
                batch, i = in_flight.pop(ref)
                load[i] -= 1
                try:
                    results = ray.get(ref)
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                        ray.exceptions.ObjectLostError) as exc:
                    # Ray re-sent the chunk max_attempts times, each time to a restarted worker
                    results = [(c.id, None, f"{WORKER_DIED} ({type(exc).__name__})", settings.max_attempts + 1,
                                [], 0.0) for c in batch]
                for case, result in zip(batch, results, strict=True):
                    case_id, completion, error, attempts, replies, latency = result
                    if case_id in answered:  # never twice in the store
                        continue
                    answered.add(case_id)
                    record_outcome(store, target_name, case, completion, error, attempts, replies, latency, stats,
                                   secrets=secrets, on_done=on_done, breaker=breaker)
            fill()
    finally:
        for ref in in_flight:
            try:
                ray.cancel(ref)
            except Exception:  # noqa: BLE001 - the actor is killed below anyway
                pass
        closing = [a.close.remote() for a in pool]
        try:
            ray.wait(closing, num_returns=len(closing), timeout=10)
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
        for a in pool:
            ray.kill(a)
    return stats


# ---------------------------------------------------------------- measures: the judge and the embedder


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if Ray can send it back to the driver, else a RuntimeError with its text."""
    from fairpair._calls import describe_error

    try:
        import ray.cloudpickle as cp

        cp.loads(cp.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - an exception that does not travel becomes its text
        return RuntimeError(describe_error(exc))


class TargetWorker(_TargetActor):
    """One actor of a judge pool: holds a target and answers :class:`~fairpair.targets.ChatRequest` chunks.

    The target is built in the actor from its battery block (``spec``, with
    ``base_dir`` and ``language``) or, when ``target`` is given (a target
    instance, e.g. a test's scripted judge), shipped as it is. ``generate_many``
    returns one ``(completion, None)`` or ``(None, exception)`` per request,
    in order; retries, timeouts and rate limits are the driver's
    (:class:`fairpair._calls.ModelCaller`).
    """

    def __init__(self, name: str, spec: Any, base_dir: str | None, language: str | None, target: Any = None) -> None:
        if target is None:
            from fairpair.run._runner import build_target

            target = build_target(name, spec, base_dir=Path(base_dir) if base_dir else None, language=language)
        self.target = target
        self._loaded = False

    async def ready(self) -> dict[str, Any]:
        """Load the target (the embedded model: once per actor); its pid and ``max_concurrency``."""
        if not self._loaded:
            if hasattr(self.target, "load"):
                await self.target.load()
            self._loaded = True
        return {"pid": os.getpid(), "max_concurrency": getattr(self.target, "max_concurrency", None)}

    async def generate_many(self, requests: list[Any]) -> list[tuple[Any, BaseException | None]]:
        async def one(request: Any) -> tuple[Any, BaseException | None]:
            try:
                return await self.target.generate(request), None
            except Exception as exc:  # noqa: BLE001 - the driver's caller decides (retry or fail)
                return None, _portable(exc)

        return list(await asyncio.gather(*(one(r) for r in requests)))



def _actor_count(ray: Any, settings: RunSettings) -> int:
    return settings.actors or max(1, min(int(ray.available_resources().get("CPU", 1)) or 1, settings.concurrency))


def _start_pool(ray: Any, cls: type, what: str, n: int, args: tuple, options: dict[str, Any]) -> tuple[list, list]:
    """``n`` actors of ``cls``, each up (its ``ready()`` answered) before anything is sent.

    Raises FairpairError naming the cause when the workers cannot start ``what``."""
    remote = ray.remote(cls).options(max_restarts=-1, **options)
    pool = [remote.remote(*args) for _ in range(n)]
    try:
        infos = ray.get([a.ready.remote() for a in pool], timeout=START_TIMEOUT)
    except ray.exceptions.RayError as exc:
        for a in pool:
            ray.kill(a)
        if isinstance(exc, ray.exceptions.GetTimeoutError):
            raise FairpairError(f"{what}: {n} Ray worker(s) of {options.get('num_cpus', 1)} CPU(s) each did not "
                                f"start within {START_TIMEOUT:.0f} s", key="--actors",
                                hint="the cluster may lack the free CPUs: fewer --actors, or a larger cluster; "
                                     "nothing was sent") from None
        raise FairpairError(f"{what}: the Ray workers cannot start it: {_cause(exc)[:300]}", key="--engine",
                            hint="every node needs fairpair (the same version) and the extras installed; "
                                 "nothing was sent") from None
    return pool, infos


class RayTarget:
    """The driver's stand-in for a target whose calls run on a pool of :class:`TargetWorker` actors.

    Implements the target protocol (``generate``, ``identity``, ``aclose``,
    ``max_concurrency``), so the measure stage's
    :class:`~fairpair._calls.ModelCaller` uses it as it uses the judge
    in-process. Calls made in the same turn of the event loop are sent
    together, spread over the actors (up to :data:`CHUNK` per Ray task, each
    to the actor with the fewest calls in flight, within the inner target's
    ``max_concurrency`` per actor): under load every task carries a chunk,
    with no added wait.

    ``identity``: the inner target's, computed on the driver (no model is
    loaded for it). ``settings``: ``actors`` (default: the free CPUs, at most
    ``concurrency``), ``actor_cpus``, ``max_attempts`` (times Ray re-sends a
    chunk whose worker died). ``on_pool`` receives the actor handles (the
    tests kill one).

    Raises
    ------
    FairpairError
        The workers cannot build or load the target (nothing is sent).
    """

    def __init__(self, name: str, spec: Any, identity: dict[str, Any], settings: RunSettings, *,
                 base_dir: Path | None = None, language: str | None = None, target: Any = None,
                 on_pool: Callable[[list[Any]], None] | None = None) -> None:
        self.ray = ray = require_ray()
        self.name = name
        self._identity = identity
        n = _actor_count(ray, settings)
        self.pool, infos = _start_pool(
            ray, TargetWorker, f"judge '{name}'" if name == "judge" else f"target '{name}'", n,
            (name, spec, str(base_dir) if base_dir else None, language, target),
            {"max_concurrency": max(2, settings.concurrency) + 2, "max_task_retries": settings.max_attempts,
             "num_cpus": settings.actor_cpus})
        self.pids = [i["pid"] for i in infos]
        self._cap = infos[0]["max_concurrency"]  # per actor; None: unlimited
        self.max_concurrency = self._cap * n if self._cap else None
        self._load = [0] * n
        self._pending: list[tuple[Any, asyncio.Future]] = []
        self._scheduled = False
        self._tasks: set[asyncio.Task] = set()
        self.chunks = 0  # Ray tasks sent (the benchmark prints calls per task)
        if on_pool:
            on_pool(self.pool)

    def identity(self) -> dict[str, Any]:
        return self._identity

    async def generate(self, request: Any) -> Any:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._pending.append((request, fut))
        if not self._scheduled:  # once per turn of the loop: the calls made in this turn go together
            self._scheduled = True
            loop.call_soon(self._dispatch)
        return await fut

    def _dispatch(self) -> None:
        self._scheduled = False
        self._pending = [(r, f) for r, f in self._pending if not f.done()]  # timed out or cancelled meanwhile
        size = min(CHUNK, math.ceil(len(self._pending) / len(self.pool)))  # spread over the actors
        while self._pending:
            i = min(range(len(self.pool)), key=self._load.__getitem__)
            room = size if not self._cap else min(size, self._cap - self._load[i])
            if room <= 0:  # every actor full (the caller's cap makes this rare): again when one returns
                return
            batch, self._pending = self._pending[:room], self._pending[room:]
            self._load[i] += len(batch)
            self.chunks += 1
            ref = self.pool[i].generate_many.remote([r for r, _ in batch])
            task = asyncio.ensure_future(self._collect(ref, batch, i))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _collect(self, ref: Any, batch: list[tuple[Any, asyncio.Future]], i: int) -> None:
        from fairpair.targets import TargetError

        ray = self.ray
        try:
            results = await ref
        except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                ray.exceptions.ObjectLostError) as exc:  # re-sent max_attempts times already
            err = TargetError(f"{WORKER_DIED} ({type(exc).__name__})", retryable=False)
            results = [(None, err)] * len(batch)
        except Exception as exc:  # noqa: BLE001 - anything else Ray raised: the calls fail, the run goes on
            results = [(None, RuntimeError(_cause(exc)))] * len(batch)
        finally:
            self._load[i] -= len(batch)
        for (_, fut), (completion, error) in zip(batch, results, strict=True):
            if fut.done():
                continue
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(completion)
        if self._pending and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._dispatch)

    async def aclose(self) -> None:
        ray = self.ray
        for t in list(self._tasks):
            t.cancel()
        closing = [a.close.remote() for a in self.pool]
        try:
            await asyncio.wait_for(asyncio.gather(*closing, return_exceptions=True), 10)
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
        for a in self.pool:
            ray.kill(a)
        self.pool = []


class EmbedWorker:
    """One actor of an embedding pool: ``factory(name, language=...)`` builds its embedder (in the actor)."""

    def __init__(self, factory: Callable[..., Any], name: str | None, language: str) -> None:
        self.embedder = factory(name, language=language)

    def ready(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "identity": self.embedder.identity(), "name": self.embedder.name}

    def embed(self, texts: list[str]) -> Any:
        return self.embedder.embed(texts)

    def pid(self) -> int:
        return os.getpid()


class RayEmbedder:
    """The driver's stand-in for an embedder whose work runs on a pool of :class:`EmbedWorker` actors.

    ``embed(texts)`` splits the texts into one slice per actor and returns the
    vectors in order (``ndarray (n, dim) float32``, as the embedder's).
    ``factory`` is :func:`fairpair.measures.embed.get_embedder` (shipped by
    reference: each node loads the embedder from its own install). A slice
    whose worker died is sent again by Ray (``max_task_retries``).

    Raises
    ------
    FairpairError
        The workers cannot build the embedder (its package missing on a node).
    """

    def __init__(self, factory: Callable[..., Any], embedder: str | None, language: str, settings: RunSettings, *,
                 on_pool: Callable[[list[Any]], None] | None = None) -> None:
        self.ray = ray = require_ray()
        n = _actor_count(ray, settings)
        self.pool, infos = _start_pool(ray, EmbedWorker, f"embedder '{embedder or language}'", n,
                                       (factory, embedder, language),
                                       {"max_task_retries": settings.max_attempts, "num_cpus": settings.actor_cpus})
        self.name = infos[0]["name"]
        self._identity = infos[0]["identity"]
        if on_pool:
            on_pool(self.pool)

    def identity(self) -> dict[str, Any]:
        return self._identity

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        texts = list(texts)
        n = len(self.pool)
        size = max(1, math.ceil(len(texts) / n))
        parts = [texts[i:i + size] for i in range(0, len(texts), size)] or [[]]
        refs = [self.pool[k % n].embed.remote(p) for k, p in enumerate(parts)]
        return np.concatenate([np.asarray(v, dtype=np.float32) for v in self.ray.get(refs)], axis=0)

    def close(self) -> None:
        for a in self.pool:
            self.ray.kill(a)
        self.pool = []
