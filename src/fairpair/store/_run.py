"""The run directory as one object: :class:`Run`.

A run directory holds ``store.sqlite`` (cases, answers, measurements, events,
and the battery recorded at the start; see :mod:`fairpair.store._sqlite`),
``manifest.json`` (provenance), ``results.json`` (the analysis, written by
``fairpair analyze``) and ``.fairpair.lock`` (held by the one process that
writes). Every stage opens it here, the way inspect_ai's ``log`` and
simonw/llm's ``logs.db`` own their files::

    with Run.open(run_dir, "w") as run:      # lock + store + recorded battery
        loaded = run.battery()
        run.store.add_measurement(...)
        run.write_manifest({"measurement": ...})

    with Run.open(run_dir) as run:           # read-only, no lock
        res = run.results()                  # typed Results, or None
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal, TextIO

from fairpair._files import atomic_write_text
from fairpair.errors import FairpairError, validation_summary
from fairpair.records import RESULTS_SCHEMA, Case, Measurement, Response, Results, RunManifest
from fairpair.store._sqlite import STORE_NAME, Store

__all__ = ["PLAN_EDIT_REFUSED", "Run", "RunLock", "executed_plan_sha256", "plan_changed", "plan_edits_refused",
           "plan_hash", "record_battery", "read_results", "results_current",
           "write_manifest", "write_results", "LOCK_NAME", "MANIFEST_NAME", "RESULTS_NAME", "RESULTS_SCHEMA"]

LOCK_NAME = ".fairpair.lock"
MANIFEST_NAME = "manifest.json"
RESULTS_NAME = "results.json"


class RunLock:
    """An exclusive, non-blocking lock on a run directory (``fcntl.flock``).

    Raises
    ------
    FairpairError
        Another process holds the lock (its pid is named), or the directory cannot be used.
    """

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_NAME
        self.fh: TextIO | None = None

    def __enter__(self) -> RunLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(self.path, "a+")
        except OSError as exc:
            raise FairpairError(f"cannot use the run directory: {exc.strerror}", file=self.path.parent) from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise FairpairError(f"this run directory is in use by {holder}; wait for it to finish "
                                "(two processes must not write one run)", file=self.path.parent) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"fairpair pid {os.getpid()}")
        fh.flush()
        self.fh = fh
        return self

    def __exit__(self, *exc) -> None:
        if self.fh:
            fcntl.flock(self.fh.fileno(), fcntl.LOCK_UN)
            self.fh.close()

    @staticmethod
    def holder(run_dir: Path) -> str | None:
        """Who holds ``run_dir``'s lock (``"fairpair pid N"``), or ``None``: no other process is writing
        it. Reads only: a directory without a lock file, or one that cannot be read, is not in use."""
        path = Path(run_dir) / LOCK_NAME
        try:
            fh = open(path)
        except OSError:
            return None
        with fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                who = fh.read().strip() or "another process"
                return None if who == f"fairpair pid {os.getpid()}" else who
            except OSError:
                return None
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return None


PLAN_EDIT_REFUSED = "plan_edit_refused"
"""Event kind: a battery whose analysis plan differs from the registered one was offered to an existing run
directory and refused (the registered plan stays the executed one); payload ``registered``, ``offered``."""
_LEGACY_PLAN_EDIT = "plan_changed"  # the same record, as written by fairpair <= this fix (payload: registered, now)


def _plan_sha256(analysis: Any, measures: dict[str, Any]) -> str:
    blob = json.dumps({"analysis": analysis, "measures": measures},
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def plan_hash(loaded: Any) -> str:
    """sha256 (hex) of the pre-registered analysis plan and the measures it relies on
    (``loaded``: a :class:`~fairpair.battery.LoadedBattery`)."""
    b = loaded.battery
    return _plan_sha256(b.analysis.model_dump(mode="json"),
                        {k: v.model_dump(mode="json") for k, v in b.measures.items()})


def executed_plan_sha256(store: Store) -> str | None:
    """sha256 (as :func:`plan_hash`) of the analysis plan a run directory executes: the one of the battery
    recorded in its store (read as stored, so a later fairpair's new defaults do not change it); None when
    no battery is recorded."""
    battery = store.get_meta("battery")
    if not isinstance(battery, dict):
        return None
    return _plan_sha256(battery.get("analysis"), battery.get("measures") or {})


def plan_edits_refused(store: Store) -> list[dict[str, Any]]:
    """The events recording an edited analysis plan offered to this run directory and refused (oldest
    first; those written before the kind was named :data:`PLAN_EDIT_REFUSED` included)."""
    return sorted(store.events(_LEGACY_PLAN_EDIT) + store.events(PLAN_EDIT_REFUSED), key=lambda e: e["at"])


def plan_changed(store: Store) -> bool:
    """True exactly when the analysis plan executed (:func:`executed_plan_sha256`) differs from the one
    registered before the first answer (meta ``plan_sha256``); a refused edit does not count."""
    registered, executed = store.get_meta("plan_sha256"), executed_plan_sha256(store)
    return registered is not None and executed is not None and executed != registered


def record_battery(store: Store, loaded: Any) -> dict[str, Any]:
    """Record ``loaded`` (and its plan's hash, :func:`plan_hash`) in a new store, or note in an
    existing one's events that an edited plan was offered and refused (:data:`PLAN_EDIT_REFUSED`) or
    that the battery changed since (nothing is overwritten: the recorded battery and plan stay the ones used).

    Returns the manifest notes (``plan_changed_after_registration``, ``plan_edits_refused``).

    Raises
    ------
    FairpairError
        The store belongs to a battery of another name.
    """
    b = loaded.battery
    existing = store.get_meta("battery")
    if existing is not None and existing.get("name") != b.name:
        raise FairpairError(f"this run directory belongs to battery '{existing.get('name')}', not '{b.name}'; "
                            "use another --out", file=store.path.parent)
    new_plan = plan_hash(loaded)
    if store.set_meta_once("battery", b.model_dump(mode="json")):
        store.set_meta_once("battery_path", str(loaded.path))
        store.set_meta_once("battery_sha256", loaded.sha256)
        store.set_meta_once("plan_sha256", new_plan)
        store.event("plan_registered", {"plan_sha256": new_plan, "battery_sha256": loaded.sha256})
    else:
        old_plan = store.get_meta("plan_sha256")
        if old_plan != new_plan:
            store.event(PLAN_EDIT_REFUSED, {"registered": old_plan, "offered": new_plan})
        if store.get_meta("battery_sha256") != loaded.sha256:
            store.event("battery_changed", {"registered": store.get_meta("battery_sha256"), "now": loaded.sha256})
    return {"plan_changed_after_registration": plan_changed(store),
            "plan_edits_refused": len(plan_edits_refused(store))}


def _valid_key(key: str, value: Any) -> bool:
    try:
        RunManifest.model_validate({key: value})
    except ValueError:
        return False
    return True


def write_manifest(run_dir: Path, store: Store, extra: dict[str, Any]) -> dict[str, Any]:
    """Write ``manifest.json`` atomically (temp file + rename), ``extra`` (keys of
    :class:`~fairpair.records.RunManifest`, checked against it) merged over the one there
    (:meth:`RunManifest.merged <fairpair.records.RunManifest.merged>`: each key ``extra`` sets replaces
    the file's; a key of the wrong type in the file is dropped, the others kept); never holds a secret.
    Returns the manifest written (its JSON object).

    Raises
    ------
    FairpairError
        The file cannot be written (the answers stored so far are kept).
    """
    update = RunManifest.model_validate(extra)  # a stage writes RunManifest's types (a ValidationError is a bug)
    path = Path(run_dir) / MANIFEST_NAME
    old = RunManifest()
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # unreadable: rewritten from what this stage knows
            data = {}
        try:
            old = RunManifest.model_validate(data)
        except ValueError:  # a key of the wrong type (a damaged file): every other key is kept
            old = RunManifest.model_validate({k: v for k, v in data.items() if _valid_key(k, v)}) \
                if isinstance(data, dict) else RunManifest()
    merged = old.merged(update)
    merged.counts = {t: store.counts(t) for t in merged.targets}
    merged.plan_changed_after_registration = plan_changed(store)
    merged.plan_edits_refused = len(plan_edits_refused(store))
    merged.plan_sha256_now = executed_plan_sha256(store) or merged.plan_sha256_now
    usage = store.token_usage()
    if usage or merged.tokens:  # the answers' provider-reported usage, recounted from the store at each write
        merged.tokens = {**(merged.tokens or {}), "answers": usage}
    changed = sorted({e["target"] for e in store.events("target_changed")})
    if changed:  # answers of these targets were produced under other options than those recorded now
        merged.targets_changed_after_answers = changed
    m = merged.to_dict()
    try:
        # a lone surrogate (e.g. from a model's answer quoted in a judge prompt) is written as a
        # JSON \uXXXX escape, so the file stays valid UTF-8 and valid JSON
        atomic_write_text(path, json.dumps(m, indent=2, ensure_ascii=False, sort_keys=True, default=str) + "\n",
                          errors="backslashreplace")
    except OSError as exc:
        raise FairpairError(f"cannot write the manifest: {exc.strerror}", file=path,
                            hint="the answers stored so far are kept; fix the cause and run again") from None
    return m


def write_results(run_dir: Path, text: str) -> None:
    """Write ``RUN/results.json`` atomically; an earlier, different file is kept under
    ``results.previous/`` (nothing stored is lost).

    Raises
    ------
    FairpairError
        The file cannot be written.
    """
    path = Path(run_dir) / RESULTS_NAME
    try:
        if path.exists() and path.read_bytes() != text.encode("utf-8"):  # bytes: a damaged file is kept too
            keep = path.parent / "results.previous"
            keep.mkdir(exist_ok=True)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            shutil.copy2(path, keep / f"results-{stamp}.json")
        atomic_write_text(path, text)
    except OSError as exc:
        raise FairpairError(f"cannot write results.json: {exc.strerror}", file=Path(run_dir)) from None


def read_results(run_dir: Path) -> Results:
    """``RUN/results.json`` as the typed :class:`~fairpair.records.Results`.

    Raises
    ------
    FairpairError
        There is no results.json (run ``fairpair analyze`` first), or it is unreadable or does not
        validate (its problems listed).
    """
    path = Path(run_dir) / RESULTS_NAME
    try:
        return Results.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise FairpairError("no results.json; run `fairpair analyze` first", file=run_dir) from None
    except (ValueError, OSError) as exc:
        raise FairpairError(f"unreadable results.json: {validation_summary(exc)}", file=path,
                            line=exc.lineno if isinstance(exc, json.JSONDecodeError) else None,
                            hint=_reanalyze_hint(Path(run_dir))) from None


def results_current(run_dir: Path) -> bool:
    """True when ``RUN/results.json`` exists and is at least as new as the store (``store.sqlite``
    and its WAL): no answer or measurement was stored after the analysis that wrote it."""
    run_dir = Path(run_dir)
    res_path = run_dir / RESULTS_NAME
    store_files = [p for p in (run_dir / STORE_NAME, run_dir / f"{STORE_NAME}-wal") if p.exists()]
    return res_path.exists() and all(res_path.stat().st_mtime >= p.stat().st_mtime for p in store_files)


def _read_json(path: Path, what: str, hint: str | None = None) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        line = exc.lineno if isinstance(exc, json.JSONDecodeError) else None
        raise FairpairError(f"cannot read the {what}: {exc}", file=path, line=line, hint=hint) from None
    if not isinstance(data, dict):
        raise FairpairError(f"the {what} is not a JSON object", file=path, hint=hint)
    return data


def _reanalyze_hint(run_dir: Path) -> str:
    """How to replace a results.json that is cut short or damaged: it is derived, the store is not touched."""
    return f"`fairpair analyze {run_dir}` writes it again from the run's store (no answer is lost)"


class Run:
    """A run directory, opened once for a stage: the store, the lock, the manifest, the recorded
    battery and ``results.json``. Open with :meth:`open`; use as a context manager.

    Attributes
    ----------
    path : Path
        The run directory.
    store : Store
        Its SQLite tables (:class:`~fairpair.store.Store`: typed, append-only reads and writes).
        With ``"r"`` the database is opened at the first use of ``store`` (a reader that finds
        ``results.json`` unreadable stops before touching it); with ``"w"`` at :meth:`open`.
    mode : ``"r"`` or ``"w"``
        ``"w"`` holds the directory's :class:`RunLock` until :meth:`close`.
    """

    #: Turns the battery recorded in a store into a :class:`~fairpair.battery.LoadedBattery`
    #: (:func:`fairpair.battery.loaded_from_store`, set when :mod:`fairpair.battery` is imported):
    #: the store keeps the battery as data and imports nothing of the floors above it.
    battery_reader: ClassVar[Callable[[Store], Any] | None] = None

    def __init__(self, path: Path, store: Store | None, mode: Literal["r", "w"], lock: RunLock | None = None,
                 *, migrate: bool = False, lenient_text: bool = False):
        self.path = Path(path)
        self._store = store
        self.mode = mode
        self._lock = lock
        self._migrate, self._lenient = migrate, lenient_text
        self._loaded: Any = None
        self._results: Results | None = None
        self._written: Results | None = None  # the Results this object wrote (results.json's content)
        self._scales: dict[str, str] | None = None

    @classmethod
    def open(cls, path: Path | str, mode: Literal["r", "w"] = "r", *, create: bool = False,
             migrate: bool = False, lenient_text: bool = False) -> Run:
        """Open the run directory ``path``.

        Parameters
        ----------
        mode : ``"r"`` (default) or ``"w"``
            ``"r"``: the store read-only, no lock (several readers may share a run).
            ``"w"``: the directory's lock first (a second writer is refused), then the store,
            migrated to this fairpair's schema.
        create : bool
            With ``"w"``: create the directory and an empty store if absent (``fairpair run``,
            ``import-answers``); else a missing directory is an error.
        migrate : bool
            With ``"r"``: a store written by an older fairpair is migrated first (append-only
            schema steps; the one write a reader makes) instead of refused.
        lenient_text : bool
            Text that is not UTF-8 reads as U+FFFD (see :meth:`Store.open`).

        Raises
        ------
        FairpairError
            The directory is not found or not a run directory, is in use by another writer
            (``"w"``), or its store cannot be read (damaged, newer schema, read-only directory).
        """
        path = Path(path)
        if mode not in ("r", "w"):
            raise ValueError(f"mode must be 'r' or 'w', not {mode!r}")
        if not create and not path.exists():
            raise FairpairError("run directory not found", file=path)
        if mode == "r":
            return cls(path, None, mode, migrate=migrate, lenient_text=lenient_text)
        lock = RunLock(path)
        lock.__enter__()
        try:
            store = Store.open(path, create=create, lenient_text=lenient_text)
        except BaseException:
            lock.__exit__(None, None, None)
            raise
        return cls(path, store, mode, lock)

    @classmethod
    @contextmanager
    def opened(cls, ref: Run | str | os.PathLike[str], mode: Literal["r", "w"] = "r", *, create: bool = False,
               migrate: bool = False, lenient_text: bool = False) -> Iterator[Run]:
        """``ref`` itself when it is a :class:`Run` already open (a stage of a loop that opened the run
        once; it stays open), else the directory ``ref`` opened as :meth:`open` does, closed at the end.

        Raises
        ------
        FairpairError
            As :meth:`open`; or ``mode`` is ``"w"`` and ``ref`` is a run opened read-only.
        """
        if isinstance(ref, Run):
            if mode == "w" and ref.mode != "w":
                raise FairpairError("this stage writes the run; open it with Run.open(path, \"w\")", file=ref.path)
            yield ref
            return
        with cls.open(Path(ref), mode, create=create, migrate=migrate, lenient_text=lenient_text) as run:
            yield run

    @property
    def store(self) -> Store:
        if self._store is None:
            try:
                self._store = Store.open(self.path, create=False, readonly=True, lenient_text=self._lenient)
            except FairpairError as exc:
                if not self._migrate or "needs migrating" not in exc.message:
                    raise
                self._store = Store.open(self.path, create=False, lenient_text=self._lenient)
        return self._store

    def close(self) -> None:
        """Close the store, then release the lock (``"w"``)."""
        try:
            if self._store is not None:
                self._store.close()
                self._store = None
        finally:
            if self._lock is not None:
                self._lock.__exit__(None, None, None)
                self._lock = None

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------ the recorded battery
    def battery(self, reader: Callable[[Store], Any] | None = None) -> Any:
        """The :class:`~fairpair.battery.LoadedBattery` recorded at the start of the run, read once by
        ``reader`` (:func:`fairpair.battery.loaded_from_store`; call :func:`fairpair.battery.recorded_battery`,
        which passes it: the store keeps the battery as data and imports nothing of the floors above it).
        Without ``reader``, the one :mod:`fairpair.battery` registered when it was imported
        (:attr:`battery_reader`).

        Raises
        ------
        FairpairError
            No battery is recorded (a store made by another tool, or emptied), or no reader is given
            and :mod:`fairpair.battery` is not imported.
        """
        if self._loaded is None:
            reader = reader or Run.battery_reader
            if reader is None:
                raise FairpairError("cannot read the recorded battery: fairpair.battery is not imported",
                                    file=self.path, hint="use fairpair.battery.recorded_battery(run)")
            self._loaded = reader(self.store)
        return self._loaded

    def record_battery(self, loaded: Any) -> dict[str, Any]:
        """Record the battery (mode ``"w"``), see :func:`record_battery`; later calls of
        :meth:`battery` return the one recorded first."""
        return record_battery(self.store, loaded)

    # ------------------------------------------------------------ manifest and results
    def manifest(self) -> dict[str, Any]:
        """``manifest.json`` as a dict; ``{}`` when absent.

        Raises
        ------
        FairpairError
            The file is unreadable or not a JSON object.
        """
        return _read_json(self.path / MANIFEST_NAME, "run manifest") or {}

    def run_manifest(self) -> RunManifest:
        """``manifest.json`` as the typed :class:`~fairpair.records.RunManifest` (empty when absent).

        Raises
        ------
        FairpairError
            The file is unreadable, not a JSON object, or a key of the wrong type (its problems listed).
        """
        try:
            return RunManifest.model_validate(self.manifest())
        except ValueError as exc:
            raise FairpairError(f"the run manifest is malformed: {validation_summary(exc)}",
                                file=self.path / MANIFEST_NAME) from None

    def write_manifest(self, extra: dict[str, Any]) -> dict[str, Any]:
        """Merge ``extra`` into ``manifest.json`` (see :func:`write_manifest`); returns the manifest."""
        return write_manifest(self.path, self.store, extra)

    def results_json(self, *, validate: bool = True) -> dict[str, Any] | None:
        """``results.json`` as its JSON object, checked against :class:`~fairpair.records.Results`
        (``validate``; else only read); None when the analysis has not run.

        Raises
        ------
        FairpairError
            The file is unreadable or not a JSON object; with ``validate``, of another schema than
            ``fairpair.results/2`` or malformed (its problems listed).
        """
        path = self.path / RESULTS_NAME
        data = _read_json(path, "analysis results", _reanalyze_hint(self.path))
        if data is None or not validate:
            return data
        schema = data.get("schema")
        if schema != RESULTS_SCHEMA:
            raise FairpairError(f"results.json has schema {schema!r}; this fairpair reads {RESULTS_SCHEMA!r}",
                                file=path, key="schema",
                                hint="rerun `fairpair analyze` with this version of fairpair")
        self._results = self._validate(data, path)
        return data

    def results(self) -> Results | None:
        """``results.json`` as the typed :class:`~fairpair.records.Results` (its comparisons
        :class:`~fairpair.records.ComparisonResult` records); None when the analysis has not run.
        The record :meth:`write_results` wrote through this object is returned as it is (the file is
        not read back in the process that wrote it).

        Raises
        ------
        FairpairError
            As :meth:`results_json`.
        """
        if self._written is not None:
            return self._written
        if self.results_json() is None:
            return None
        return self._results

    @staticmethod
    def _validate(data: dict[str, Any], path: Path) -> Results:
        try:  # read as data: a malformed file is refused here, with its problems
            return Results.model_validate(data)
        except ValueError as exc:
            raise FairpairError(f"results.json is malformed: {validation_summary(exc)}", file=path,
                                hint=_reanalyze_hint(path.parent)) from None

    def write_results(self, results: Results) -> None:
        """Write ``results.json`` from a :class:`~fairpair.records.Results` (see :func:`write_results`);
        :meth:`results` returns it from then on. A store this object writes is checkpointed first, so
        that closing it later does not make the file look older than the store (:func:`results_current`)."""
        if self._store is not None and not self._store.readonly:
            self._store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        write_results(self.path, results.to_json() + "\n")
        self._written = results

    # ------------------------------------------------------------ typed reads
    def cases(self) -> Iterator[Case]:
        """Every stored :class:`~fairpair.records.Case`, in the order of the expansion."""
        return self.store.iter_cases()

    def case(self, case_id: str) -> Case | None:
        """The stored :class:`~fairpair.records.Case` ``case_id``, or None."""
        return self.store.case(case_id)

    def responses(self, target: str | None = None, *, status: str | None = "ok") -> Iterator[Response]:
        """Stored :class:`Response` rows (``status=None``: failures too), in the order stored."""
        return self.store.responses(target, status=status)

    def measurements(self, measure: str | None = None, *, status: str | None = "ok") -> Iterator[Measurement]:
        """Stored :class:`Measurement` rows, each with the ``scale`` stored when it was measured (None
        for a row stored before fairpair recorded it)."""
        return self.store.measurements(measure, status=status)

    def scale(self, measure: str) -> str | None:
        """The scale stored with a measure row name's rows (``tone``, ``judge.warmth``), or None when
        none is stored (see :meth:`Store.measure_scales`)."""
        if self._scales is None:
            self._scales = self.store.measure_scales()
        return self._scales.get(measure)
