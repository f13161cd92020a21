"""``fairpair run``: expand a battery, send it to its targets, keep everything.

A run directory holds ``store.sqlite`` (cases, answers, measurements, events)
and ``manifest.json`` (provenance). Running again on the same directory
resumes: only cases without a stored answer are sent. A lock file stops a
second process from using the same directory at the same time.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import platform
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from fairpair import __version__

# moved to fairpair.store; importable from here as before
from fairpair.battery import (
    LoadedBattery,
    loaded_from_store,  # noqa: F401
)
from fairpair.cases import Case, Expansion, expand
from fairpair.errors import FairpairError
from fairpair.run._engine import RunSettings, run_target
from fairpair.run._preflight import CircuitBreaker, CircuitOpen, EarlyPreflight, preflight_into_store
from fairpair.store import LOCK_NAME, MANIFEST_NAME, Run, RunLock, Store, plan_hash, write_manifest  # noqa: F401

__all__ = ["RunLock", "plan_hash", "default_run_dir", "execute_run", "write_manifest", "build_target",
           "target_secrets", "package_versions", "open_run", "select_targets"]

#: The engines ``fairpair run --engine`` accepts.
ENGINES = ("inprocess", "ray")
#: A fresh run of at most this many cases keeps the cases it expanded and stored, and sends them (about
#: 6 KiB each in memory for the shop example: 60 MiB at most); a larger one expands its battery again as
#: it sends (about 0.15 ms a case), so that memory stays flat however many cases there are.
CASES_KEPT = 10_000


def default_run_dir(loaded: LoadedBattery) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{loaded.battery.name}-{stamp}"


def package_versions() -> dict[str, str]:
    out = {"fairpair": __version__, "python": platform.python_version()}
    for pkg in ("aiohttp", "pydantic", "numpy", "scipy", "statsmodels", "pandas", "xllamacpp",
                "sentence-transformers", "torch"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _git_rev(path: Path) -> str | None:
    try:
        rev = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain"], capture_output=True,
                               text=True, timeout=5).stdout.strip()
        return rev.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def target_secrets(options: dict[str, Any]) -> list[str]:
    """Values of environment variables a target's options refer to (to redact them everywhere)."""
    names: list[str] = []

    def walk(o: Any, key: str = "") -> None:
        if isinstance(o, dict):
            for k, v in o.items():
                walk(v, k)
        elif isinstance(o, list):
            for v in o:
                walk(v, key)
        elif isinstance(o, str):
            if key.endswith("_env"):
                names.append(o)
            import re

            names.extend(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", o))

    walk(options)
    return [os.environ[n] for n in names if os.environ.get(n)]


def build_target(name: str, spec, *, base_dir: Path | None = None, language: str | None = None,
                 context_format: str = "yaml") -> Any:
    """Instantiate a target plugin from its battery spec (raises FairpairError if it can't).

    ``base_dir`` (the battery's directory) is passed to plugins whose
    constructor takes it, to resolve relative paths in their options.
    ``language`` (the battery's) is the ``mock``'s language when its block
    gives none, so an English battery gets English mock answers. A spec
    with its own ``system`` prompt is wrapped in
    :class:`~fairpair.run._system.SystemPrompted`, which fills it from each
    case's context written as ``context_format`` (the battery's
    ``context_channels.format``).
    """
    if spec.system is not None:
        from fairpair.run._system import SystemPrompted

        inner = build_target(name, spec.model_copy(update={"system": None}), base_dir=base_dir, language=language)
        return SystemPrompted(inner, spec.system, context_format)
    if language and spec.kind == "mock" and "language" not in spec.options():
        spec = type(spec).model_validate({**spec.model_dump(), "language": language})
    import inspect

    from fairpair._plugins import PluginError, load_plugin

    try:
        cls = load_plugin("fairpair.targets", spec.kind)
    except PluginError as exc:
        raise FairpairError(f"target '{name}': {exc}") from None
    if base_dir is not None and "base_dir" in inspect.signature(cls).parameters:
        return cls(spec.options(), name=name, base_dir=base_dir)
    return cls(spec.options(), name=name)


@contextmanager
def open_run(run_dir: Path, *, readonly: bool = False) -> Iterator[Store]:
    """An existing run directory's store: the tables of :meth:`fairpair.store.Run.open` for callers that
    want only those (``readonly``, no lock; else writable, holding the directory's lock)."""
    with Run.open(run_dir, "r" if readonly else "w") as run:
        yield run.store


@dataclass
class RunOutcome:
    run_dir: Path
    manifest: dict[str, Any]
    cases_added: int = 0  # cases a resumed run added because the battery changed
    warnings: list[str] = field(default_factory=list)  # said loudly at the end of the run (a mixed fleet...)
    batch: Any = None  # fairpair.run._batch.BatchSummary when a target runs through a provider's batch API


def select_targets(loaded: LoadedBattery, only_targets: Iterable[str] | None = None) -> dict[str, Any]:
    """The battery's targets by name (its :class:`~fairpair.battery.TargetSpec` blocks), only those in
    ``only_targets`` (``--target``) when given, in the battery's order.

    Raises
    ------
    FairpairError
        The battery declares no target, or ``only_targets`` names one it does not have.
    """
    specs = loaded.battery.target_specs()
    if not specs:
        raise FairpairError("the battery declares no 'target'; add a target block", file=loaded.path)
    only = list(only_targets or ())
    if only:
        unknown = [t for t in only if t not in specs]
        if unknown:
            raise FairpairError(f"unknown target(s) {unknown}; the battery has {list(specs)}", file=loaded.path)
        specs = {k: v for k, v in specs.items() if k in only}
    return specs


def execute_run(loaded: LoadedBattery, run_dir: Path | Run, settings: RunSettings, *,
                only_targets: list[str] | None = None, progress: Any = None, retry_failed: bool = True,
                batch: bool = False, ray_pool: Any = None) -> RunOutcome:
    """Expand, store the cases, send them to each target, write the manifest.

    ``run_dir``: the run directory (created if absent), or that run already open for writing
    (:class:`fairpair.store.Run`, mode ``"w"``; it stays open).

    ``batch``: send the cases through the provider's batch API instead
    (:mod:`fairpair.run._batch`); a target with batches recorded in the store
    is polled and ingested, never sent to directly, with or without it.
    ``settings.engine`` ``"ray"`` answers on a Ray actor pool (:mod:`fairpair.run._ray`; ``ray_pool``,
    a callable given the actor handles, is for tests); the store is written here either way.

    Raises
    ------
    FairpairError
        no or unknown target, unknown engine, Ray missing or unreachable, a target that cannot start
        (a judge that is the same system as a target is refused before this is called, by the stage
        loop: :func:`fairpair.pipeline.run` calls :func:`fairpair.measures.check_self_judging`).
    """
    specs = select_targets(loaded, only_targets)
    if settings.engine not in ENGINES:
        raise FairpairError(f"unknown engine {settings.engine!r}; use one of {', '.join(ENGINES)}", key="--engine")
    if batch:  # refused before the run directory is made: nothing is left behind
        from fairpair.run._batch import refuse_batch

        refuse_batch(specs, loaded.battery.all_tools())
    ray_session = None
    if settings.engine == "ray":
        from fairpair.run._ray import ray_session as _session

        ray_session = _session(settings.address)
        ray_session.__enter__()  # fails here, exit 2, when Ray is missing or the cluster unreachable
    try:
        return _execute(loaded, run_dir, settings, specs, progress, batch, ray_pool)
    finally:
        if ray_session is not None:
            ray_session.__exit__(None, None, None)


def _execute(loaded: LoadedBattery, run_ref: Path | Run, settings: RunSettings, specs: dict[str, Any],
             progress: Any, batch: bool, ray_pool: Any) -> RunOutcome:
    b = loaded.battery
    with Run.opened(run_ref, "w", create=True) as run:
        run_dir = run.path
        store = run.store
        notes = run.record_battery(loaded)
        edited = _edits_not_used(store, loaded, run_dir)
        exp = Expansion(b.name, loaded.sha256)
        before = store.n_cases()
        # A fresh run sends its first target's preflight case while the other cases are expanded and
        # stored, and, up to CASES_KEPT cases, sends the cases of that one expansion (a larger run expands
        # the battery again as it sends, so that memory stays flat; a resumed run sends its battery's
        # expansion, as before).
        fresh = before == 0 and not store.targets()
        cases = expand(loaded, exp)
        head = list(itertools.islice(cases, 1)) if fresh else []
        kept: list[Case] | None = [] if fresh else None

        def keep(it: Iterable[Case]) -> Iterator[Case]:
            nonlocal kept
            for case in it:
                if kept is not None:
                    kept.append(case)
                    if len(kept) > CASES_KEPT:
                        kept = None
                yield case

        def store_cases() -> tuple[int, int]:
            total = store.add_cases(keep(itertools.chain(head, cases)))
            added = total - before if before else 0  # a resumed run whose battery now expands to more cases
            if added:
                store.event("cases_added", {"before": before, "added": added})
            return total, added

        total: int | None = None
        if not fresh:
            total, added = store_cases()
        on_ray = settings.engine == "ray"
        try:
            targets = {name: build_target(name, spec, base_dir=loaded.path.parent, language=b.language,
                                          context_format=b.context_channels.format)
                       for name, spec in specs.items()}
            for t in targets.values():  # fail once, before the run, if a backend cannot start
                if hasattr(t, "load") and not on_ray:  # on Ray the actors load it (preflight on the pool)
                    asyncio.run(t.load())
        except Exception:
            if total is None:  # a target that cannot start: the cases are stored all the same
                store_cases()
            raise
        secrets = [s for spec in specs.values() for s in target_secrets(spec.options())]
        early: EarlyPreflight | None = None
        try:
            if fresh and head and settings.preflight and not batch:
                first_name, first = next(iter(targets.items()))
                if not hasattr(first, "load"):  # an embedded model answers in the thread that loaded it
                    early = EarlyPreflight(first_name, first, head[0], settings, tools=b.all_tools() or None,
                                           tool_map=b.all_tool_results() or None, secrets=secrets)
            if total is None:
                total, added = store_cases()
            started = datetime.now(UTC).isoformat(timespec="seconds")
            identities = {name: t.identity() for name, t in targets.items()}
            for name, ident in identities.items():  # a resumed run whose target changed says so
                if not store.set_meta_once(f"target.{name}", ident) and store.get_meta(f"target.{name}") != \
                        json.loads(json.dumps(ident, sort_keys=True, default=str)):
                    store.event("target_changed", {"target": name, "now": ident})
            base = {"fairpair_version": __version__, "battery": b.name, "battery_sha256": loaded.sha256,
                    "battery_path": str(loaded.path), "selection": loaded.selection,
                    "plan_sha256": store.get_meta("plan_sha256"),
                    "plan_sha256_now": plan_hash(loaded), "expansion": exp.manifest(), "targets": identities,
                    "settings": settings.__dict__, "packages": package_versions(),
                    "git_revision": {"battery": _git_rev(loaded.path.parent),
                                     "fairpair": _git_rev(Path(__file__).parent)},
                    "started_at": started, "finished_at": None, **notes}
            run.write_manifest(base)
            store.event("run_started", {"targets": list(targets), "cases": total})
        except BaseException:
            if early is not None:  # nothing of it is stored
                early.cancel()
            raise

        def to_send() -> Iterable[Case]:
            # a run resumed with an edited battery keeps the recorded one (``edited``'s warning): every stored
            # case is sent, also those the edited battery no longer expands to (fewer repetitions, templates or
            # names), which would otherwise stay unanswered however often the run is resumed
            if kept is not None:
                return iter(kept)
            return store.iter_cases() if edited else expand(loaded)

        from fairpair._answer_status import StatusTally

        # the manifest's answer statuses, counted from the run's last requests on
        tally = StatusTally(b.language, b.speakers())

        stats = {}
        batch_summary = None
        try:
            from fairpair.run._batch import batch_session, batch_target_names

            batch_names = batch_target_names(store, targets, requested=batch)
            if batch:  # the measure stage sends the judge's calls through batches too (when the judge has an API)
                store.set_meta_once("batch.measures", True)
            if batch_names:  # through the provider's batch API: submit and/or poll and ingest
                batch_summary = batch_session(store, run_dir, {n: targets[n] for n in batch_names},
                                              to_send, submit=batch, secrets=secrets,
                                              tools=b.all_tools() or None, templates=b.templates)
                base["batches"] = _batch_manifest(store, batch_names)
            for name, target in targets.items():
                if name in batch_names:
                    continue
                # one case first: a broken target stops here, exit 2; a target the driver does not load (the
                # embedded model on Ray) is tried on the actors' pool instead, by run_target_ray
                if early is not None and early.name == name:
                    sent = early
                    early = None
                    sent.into_store(store)
                elif settings.preflight and not (on_ray and hasattr(target, "load")):
                    preflight_into_store(store, name, target, to_send(), settings, tools=b.all_tools() or None,
                                         tool_map=b.all_tool_results() or None, secrets=secrets)
                todo = total - len(store.answered_ids(name))
                if progress:
                    progress.start_target(name, total=total, todo=todo)
                cb = progress.case_done if progress else None
                if settings.engine == "ray":
                    stats[name] = _run_one_ray(store, name, target, specs[name], loaded, to_send(), settings,
                                               secrets, cb, ray_pool=ray_pool)
                else:
                    stats[name] = asyncio.run(_run_one(store, name, target, loaded, to_send(), settings, secrets,
                                                       cb, tally))
                if progress:
                    progress.end_target(name)
        finally:
            if early is not None:  # never reached its target (an error before it)
                early.cancel()
            for t in targets.values():
                try:
                    asyncio.run(t.aclose())
                except Exception:  # noqa: BLE001
                    pass
        finished = datetime.now(UTC).isoformat(timespec="seconds")
        store.event("run_finished", {n: s.__dict__ for n, s in stats.items()})
        fleets, warnings = _fleet_reports(store, targets)
        warnings = edited + warnings
        if fleets:
            base["fleets"] = fleets
        tally.read(store)  # the rows not counted during the run
        statuses = {n: sm.to_json() for n, sm in tally.summary().items()}
        manifest = run.write_manifest({**base, "finished_at": finished,
                                       "last_session": {n: s.__dict__ for n, s in stats.items()},
                                       "answer_statuses": statuses})
    return RunOutcome(Path(run_dir), manifest, added, warnings, batch_summary)


def _edits_not_used(store: Store, loaded: LoadedBattery, run_dir: Path) -> list[str]:
    """The warning for a run resumed with an edited battery: the run keeps the battery recorded when it
    started (its measures, judge and analysis plan read that one), so the edits (the top-level keys that
    differ, named) do nothing there; empty when the battery is the one recorded."""
    if store.get_meta("battery_sha256") in (None, loaded.sha256):
        return []
    recorded = store.get_meta("battery") or {}
    now = json.loads(json.dumps(loaded.battery.model_dump(mode="json"), default=str))
    keys = sorted(k for k in set(recorded) | set(now) if recorded.get(k) != now.get(k))
    return [f"the battery differs from the one recorded when {run_dir} was started (changed: "
            f"{', '.join(keys) or 'its text'}): this run directory keeps the recorded battery, so its measures, "
            "judge and analysis plan are the recorded ones and these edits are not used (new templates, names "
            "or repetitions only add cases); run the edited battery into a new --out"]


def _batch_manifest(store: Store, names: list[str]) -> dict[str, Any]:
    """The manifest's ``batches``: per target, each batch's id, input file, size, last status and stage
    (``run``: whole cases; ``turns``: one turn of each case, :mod:`fairpair.run._batchcalls`)."""
    out: dict[str, Any] = {}
    for rec in store.batches(stage=None):
        if rec["target"] in names and rec["stage"] in ("run", "turns") and rec["status"] != "superseded":
            out.setdefault(rec["target"], []).append(
                {"batch_id": rec["batch_id"], "input_file_id": rec["input_file_id"], "requests": rec["requests"],
                 "base_url": rec["base_url"], "submitted_at": rec["created_at"], "status": rec["status"],
                 "stage": rec["stage"]})
    return out


def _fleet_reports(store: Store, targets: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The manifest's ``fleets`` (one entry per target with several endpoints) and the warnings to print.

    ``mixed`` covers the whole run: this session's answers (per endpoint) and
    every stored answer of the target (``model`` / ``system_fingerprint`` are
    stored with each answer), so a version change between two sessions of a
    resumed run is caught too. A mixed fleet is also an event ``fleet_mixed``.
    """
    from fairpair.targets import Fleet

    fleets: dict[str, Any] = {}
    warnings: list[str] = []
    for name, t in targets.items():
        report = getattr(t, "fleet_report", None)
        fleet = getattr(t, "fleet", None)
        if report is None or not isinstance(fleet, Fleet):
            continue
        r = report()
        stored = store.answer_versions(name)
        r["stored_versions"] = [{"model": m, "system_fingerprint": fp, "answers": n} for (m, fp), n in stored.items()]
        r["mixed"] = bool(r["mixed"] or len(stored) > 1)
        store.event("fleet", {"target": name, **r})
        if r["mixed"]:
            store.event("fleet_mixed", {"target": name, "versions": r["stored_versions"]})
            text = fleet.warning() or ("the stored answers come from more than one model version (model / "
                                       "system_fingerprint): " + ", ".join(f"{m} / {fp} ({n})" for (m, fp), n in
                                                                           stored.items()))
            warnings.append(f"target '{name}': {text}")
        fleets[name] = r
    return fleets, warnings


#: Answer statuses counted per turn of the event loop while the run's last requests are in flight
#: (about 0.1 ms each): small enough that a reply waits little for them.
STATUS_SLICE = 8


async def _run_one(store, name, target, loaded, cases, settings, secrets, cb, tally=None):
    """:func:`run_target` of ``name`` on ``cases``. With ``tally`` (a
    :class:`~fairpair.measures.status.StatusTally`), once every case is queued the answers already
    stored are counted between the replies of the last requests, :data:`STATUS_SLICE` at a time,
    instead of all of them after the run."""
    b = loaded.battery
    breaker = CircuitBreaker(settings.max_consecutive_failures, target=name) \
        if settings.max_consecutive_failures > 0 else None
    all_queued = asyncio.Event()

    def source() -> Iterator[Case]:
        yield from cases
        all_queued.set()

    async def count_statuses() -> None:
        await all_queued.wait()
        while True:
            await asyncio.sleep(0 if tally.read(store, limit=STATUS_SLICE) else 0.01)

    counting = asyncio.create_task(count_statuses()) if tally is not None else None
    try:
        return await run_target(store, name, target, source(), settings, tools=b.all_tools() or None,
                                tool_map=b.all_tool_results() or None, secrets=secrets, on_done=cb, breaker=breaker)
    except CircuitOpen as exc:
        store.event("circuit_open", {"target": name, "kind": breaker.kind, "count": breaker.count,
                                     "error": exc.message})
        raise
    finally:
        if counting is not None:
            counting.cancel()
            try:
                await counting
            except asyncio.CancelledError:
                pass


def _run_one_ray(store, name, target, spec, loaded, cases, settings, secrets, cb, *, ray_pool=None):
    from fairpair.run._ray import run_target_ray

    b = loaded.battery
    breaker = CircuitBreaker(settings.max_consecutive_failures, target=name) \
        if settings.max_consecutive_failures > 0 else None
    try:
        return run_target_ray(store, name, spec, cases, settings, base_dir=loaded.path.parent,
                              language=b.language, tools=b.all_tools() or None,
                              tool_map=b.all_tool_results() or None, secrets=secrets, on_done=cb, breaker=breaker,
                              max_concurrency=getattr(target, "max_concurrency", None), on_pool=ray_pool,
                              preflight=settings.preflight and hasattr(target, "load"),
                              context_format=b.context_channels.format)
    except CircuitOpen as exc:
        store.event("circuit_open", {"target": name, "kind": breaker.kind, "count": breaker.count,
                                     "error": exc.message})
        raise
