"""The run store: one SQLite database per run, append-only, resumable.

Every answer is committed as soon as it arrives (WAL journal; with
``synchronous=NORMAL`` a committed transaction survives a crash of the process,
kill -9 included; SQLite docs, "Write-Ahead Logging", section 2.3). Rows are
never updated or deleted: a case that failed and later succeeded has both rows,
and a partial unique index allows at most one successful answer per
(target, case) and one successful measurement per (target, case, measure), so a
resumed run cannot duplicate one. Schema changes are named, append-only
migrations (the ``simonw/llm`` pattern, ``llm/migrations.py``): each one a function in
:data:`MIGRATIONS`, applied once and recorded by its name in the ``migrations`` table, so two
branches that each add one cannot collide. Stores written before migrations had names (meta
``schema_version`` 1 to 3, the count of numbered migrations applied) are read as having the
first that many named ones applied. Rows are read by column name into the records of
:mod:`fairpair.records`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fairpair.errors import FairpairError
from fairpair.records import (
    AnswerToMeasure,
    Case,
    HumanLabel,
    LabelSample,
    Measurement,
    MeasurementColumns,
    Response,
    SampledAnswer,
    case_from_json,
    case_json,
)

__all__ = ["Store", "Response", "Measurement", "MeasurementColumns", "AnswerToMeasure", "STORE_NAME", "STORE_FORMAT",
           "SCHEMA_VERSION", "MIGRATIONS", "damaged_store_error"]

STORE_NAME = "store.sqlite"
#: Identifies a fairpair run store; a store with another value is refused.
STORE_FORMAT = "fairpair-run-store"
#: SQLite's default ``wal_autocheckpoint`` (pages), restored after :meth:`Store.checkpoints_in_background`.
WAL_AUTOCHECKPOINT = 1000
#: The columns a :class:`Response` is read from (by name, see :func:`_response`).
_RESPONSE_COLS = ("target, case_id, status, text, turns, tool_calls, prompt_tokens, completion_tokens, latency_s,"
                  " finish_reason, model, system_fingerprint, error, attempts, created_at, text_json")
#: ``meta.schema_version`` of a store whose migrations are recorded by name; an older fairpair
#: (which knew only the numbered ones, 1 to 3) refuses it as newer than it understands.
SCHEMA_VERSION = 4
#: The numbered migrations of the stores written before migrations had names: a store with
#: ``schema_version`` n (<= 3) has the first n of :data:`MIGRATIONS` applied.
_NUMBERED = 3

Migration = Callable[[sqlite3.Connection], None]
#: Every migration, in the order a new store applies them; recorded by function name once applied.
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    """Register ``fn`` (its name recorded in the ``migrations`` table once it ran) as the next migration.

    Add a migration by appending a function here; never rename, edit or remove one that has
    been released: a store records the names it has applied.
    """
    MIGRATIONS.append(fn)
    return fn


def _script(conn: sqlite3.Connection, sql: str) -> None:
    for stmt in _split_sql(sql):
        conn.execute(stmt)


@migration
def m001_initial(conn: sqlite3.Connection) -> None:
    """The initial schema: meta, cases, responses, measurements, events."""
    _script(conn, """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE cases (case_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, data TEXT NOT NULL);
    CREATE TABLE responses (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        target TEXT NOT NULL,
        case_id TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
        text TEXT,
        turns TEXT,
        tool_calls TEXT,
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        latency_s REAL,
        finish_reason TEXT,
        model TEXT,
        system_fingerprint TEXT,
        error TEXT,
        attempts INTEGER NOT NULL DEFAULT 1,
        created_at TEXT NOT NULL
    );
    CREATE UNIQUE INDEX responses_one_ok ON responses(target, case_id) WHERE status = 'ok';
    CREATE INDEX responses_case ON responses(target, case_id);
    CREATE TABLE measurements (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        target TEXT NOT NULL,
        case_id TEXT NOT NULL,
        measure TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'missing')),
        value TEXT,
        detail TEXT,
        error TEXT,
        created_at TEXT NOT NULL
    );
    CREATE UNIQUE INDEX measurements_one_done ON measurements(target, case_id, measure)
        WHERE status IN ('ok', 'missing');
    CREATE INDEX measurements_case ON measurements(target, case_id, measure);
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL
    );
    """)


@migration
def m002_answer_text_json(conn: sqlite3.Connection) -> None:
    """The exact text of an answer that is not valid Unicode (lone surrogates, which UTF-8 cannot
    hold), as ASCII JSON; ``text`` then holds it with U+FFFD in their place."""
    _script(conn, """
    ALTER TABLE responses ADD COLUMN text_json TEXT;
    """)


@migration
def m003_batches(conn: sqlite3.Connection) -> None:
    """Provider batch jobs (``fairpair run --batch``): the batches submitted, the cases each one
    carries, and every status seen, appended (the last row of a batch is its state)."""
    _script(conn, """
    CREATE TABLE batches (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        target TEXT NOT NULL,
        batch_id TEXT NOT NULL UNIQUE,
        input_file_id TEXT NOT NULL,
        requests INTEGER NOT NULL,
        base_url TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE batch_cases (batch_id TEXT NOT NULL, case_id TEXT NOT NULL);
    CREATE INDEX batch_cases_batch ON batch_cases(batch_id);
    CREATE TABLE batch_states (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        batch_id TEXT NOT NULL,
        status TEXT NOT NULL,
        data TEXT NOT NULL,
        at TEXT NOT NULL
    );
    CREATE INDEX batch_states_batch ON batch_states(batch_id);
    """)


@migration
def m004_measurement_scale(conn: sqlite3.Connection) -> None:
    """The scale of each measurement (``binary``, ``count``, ``continuous``, ``ordinal``,
    ``categorical``), written with the row when it is measured; NULL for rows stored before."""
    conn.execute("ALTER TABLE measurements ADD COLUMN scale TEXT")


@migration
def m005_human_labels(conn: sqlite3.Connection) -> None:
    """Human labels of judge-measured answers (``fairpair label``, ``calibrate score`` files) and the
    labelling samples they were drawn for (issue "Human labels").

    ``label_samples``: one drawn sample per (measure row, name), with the seed and design that
    reproduce it and the frame (answers per stratum) it was drawn from; ``label_sample_answers``
    its answers with stratum, inclusion probability and draw order. ``labels``: every label or
    skip (``value`` NULL) a rater gave, appended; ``label_withdrawals``: an undo, appended (the
    withdrawn row stays stored).
    """
    _script(conn, """
    CREATE TABLE label_samples (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        measure TEXT NOT NULL,
        name TEXT NOT NULL,
        seed INTEGER NOT NULL,
        design TEXT NOT NULL,
        mixing REAL NOT NULL,
        frame TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (measure, name)
    );
    CREATE TABLE label_sample_answers (
        sample_id INTEGER NOT NULL REFERENCES label_samples(id),
        target TEXT NOT NULL,
        case_id TEXT NOT NULL,
        stratum TEXT NOT NULL,
        probability REAL NOT NULL CHECK (probability > 0 AND probability <= 1),
        draw_order INTEGER NOT NULL,
        uncertainty REAL,
        UNIQUE (sample_id, target, case_id),
        UNIQUE (sample_id, draw_order)
    );
    CREATE TABLE labels (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        target TEXT NOT NULL,
        case_id TEXT NOT NULL,
        measure TEXT NOT NULL,
        rater TEXT NOT NULL,
        value REAL,
        source TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX labels_measure ON labels(measure, rater);
    CREATE TABLE label_withdrawals (
        label_id INTEGER PRIMARY KEY REFERENCES labels(id),
        created_at TEXT NOT NULL
    );
    """)


@migration
def m006_measure_batches(conn: sqlite3.Connection) -> None:
    """Batches of single model calls (``fairpair measure --batch``: the judge's calls; ``run --batch``
    with several turns: one turn of every case): each batch's ``stage`` (``run``: one answer per case,
    ``turns``: one call per case and turn, ``measure``: the judge's calls; ``batch_cases.case_id``
    then holds the request's key), and ``batch_calls``: every answer or per-request error of those
    batches, keyed by the request's content hash (one ``ok`` row per key)."""
    _script(conn, """
    ALTER TABLE batches ADD COLUMN stage TEXT NOT NULL DEFAULT 'run';
    CREATE TABLE batch_calls (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        batch_id TEXT NOT NULL,
        key TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
        completion TEXT,
        error TEXT,
        created_at TEXT NOT NULL
    );
    CREATE UNIQUE INDEX batch_calls_one_ok ON batch_calls(key) WHERE status = 'ok';
    CREATE INDEX batch_calls_key ON batch_calls(key);
    """)


#: The store file opened last in this process (names the file when SQLite reports damage later).
_last_opened: list[Path] = []


def damaged_store_error(exc: BaseException) -> FairpairError | None:
    """A :class:`FairpairError` for SQLite's report of a damaged database file, else ``None``.

    SQLite finds damage only when it reads the damaged page, which may be long
    after :meth:`Store.open`; the message names the store opened last and how to
    recover it. Nothing is changed or deleted.
    """
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    text = str(exc)
    if not any(k in text for k in ("malformed", "not a database", "corrupt")):
        return None
    path = _last_opened[-1] if _last_opened else None
    rec = f"sqlite3 {path} .recover | sqlite3 recovered.sqlite" if path else "sqlite3 store.sqlite .recover"
    return FairpairError(f"the run store is damaged ({text}); the file is left as it is "
                         "(fairpair never repairs or deletes a store)", file=path,
                         hint=f"recover what it holds with `{rec}` (SQLite's .recover), or start a new run "
                              "with another --out")


def _decode_lenient(b: bytes) -> str:
    """SQLite text as str; bytes that are not UTF-8 become U+FFFD."""
    return b.decode("utf-8", errors="replace")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _valid_text(s: str) -> bool:
    """True when ``s`` can be stored as UTF-8 (no lone surrogates)."""
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(s: str | None) -> str | None:
    """``s`` as storable UTF-8 text: lone surrogates (invalid in UTF-8) become U+FFFD."""
    if s is None or not isinstance(s, str) or _valid_text(s):
        return s
    return s.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _json(obj: Any, **kw: Any) -> str:
    """JSON for a TEXT column: UTF-8 where possible, ASCII escapes when a string holds a lone
    surrogate (so it reads back exactly)."""
    if not obj and isinstance(obj, list):
        return "[]"  # most answers: no earlier turns, no tool calls
    out = json.dumps(obj, ensure_ascii=False, **kw)
    return out if _valid_text(out) else json.dumps(obj, ensure_ascii=True, **kw)


@contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Turn SQLite's write failures (disk full, read-only file, I/O error, lock timeout) into a
    :class:`FairpairError`: what was committed before stays in the store."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        raise _write_error(exc, path) from None


def _write_error(exc: sqlite3.Error, path: Path) -> FairpairError:
    msg = str(exc)
    hint = "everything committed before this is kept; fix the cause and run the same command again to resume"
    if "full" in msg:
        return FairpairError(f"cannot write the run store: the disk is full ({msg})", file=path,
                             hint="free some space; " + hint)
    if "readonly" in msg or "read-only" in msg:
        return FairpairError(f"cannot write the run store ({msg}); is the directory read-only?", file=path,
                             hint=hint)
    if "locked" in msg:
        return FairpairError(f"cannot write the run store: it stays locked by another process ({msg})",
                             file=path, hint=hint)
    return FairpairError(f"cannot write the run store ({msg})", file=path, hint=hint)


def _response(r: sqlite3.Row) -> Response:
    """A :class:`Response` from a row holding the columns of :data:`_RESPONSE_COLS`, read by name."""
    tj = r["text_json"]
    return Response(target=r["target"], case_id=r["case_id"], status=r["status"],
                    text=r["text"] if tj is None else json.loads(tj), turns=json.loads(r["turns"] or "[]"),
                    tool_calls=json.loads(r["tool_calls"] or "[]"), prompt_tokens=r["prompt_tokens"],
                    completion_tokens=r["completion_tokens"], latency_s=r["latency_s"],
                    finish_reason=r["finish_reason"], model=r["model"], system_fingerprint=r["system_fingerprint"],
                    error=r["error"], attempts=r["attempts"], created_at=r["created_at"])


class Store:
    """A run's SQLite store. Open with :meth:`open`; use as a context manager.

    Raises
    ------
    FairpairError
        The file is not a fairpair store, was written by a newer fairpair, is
        corrupt, or the directory is read-only.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path, *, readonly: bool = False):
        self.conn = conn
        self.path = path
        self.readonly = readonly
        self._scales: dict[str, str] = {}
        #: Named migrations not applied to a store opened read-only (a writer applies them).
        self.pending: frozenset[str] = frozenset()

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        """A cursor over ``sql`` whose rows are read by column name (:class:`sqlite3.Row`)."""
        cur = self.conn.cursor()
        cur.row_factory = sqlite3.Row
        return cur.execute(sql, args)

    # ------------------------------------------------------------ opening
    @classmethod
    def open(cls, run_dir: Path, *, create: bool = True, readonly: bool = False,
             lenient_text: bool = False) -> Store:
        """Open (``create``: or create) ``run_dir``'s store, migrating it unless ``readonly``.

        ``lenient_text``: text that is not UTF-8 (a store written by another tool) reads as
        U+FFFD instead of raising (the report and the export quote such text; the analysis
        does not read it).
        """
        run_dir = Path(run_dir)
        path = run_dir / STORE_NAME
        if not path.exists():
            if not create:
                hint = None
                if run_dir.is_dir():  # e.g. runs/ for runs/demo: name the run directories inside it
                    try:
                        inside = sorted(str(p.parent) for p in run_dir.glob(f"*/{STORE_NAME}"))
                    except OSError:
                        inside = []
                    hint = ("it has no store.sqlite: give the directory that `fairpair run --out` wrote"
                            + (f"; run directories inside it: {', '.join(inside[:5])}"
                               + (f" and {len(inside) - 5} more" if len(inside) > 5 else "") if inside else ""))
                raise FairpairError("not a fairpair run directory", file=run_dir, hint=hint)
            try:
                run_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise FairpairError(f"cannot create the run directory: {exc.strerror}", file=run_dir) from None
        _last_opened[:] = [path]
        try:
            if readonly:
                conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None,
                                       check_same_thread=False)
            else:
                conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            if lenient_text:
                conn.text_factory = _decode_lenient
            store = cls(conn, path, readonly=readonly)
            store._migrate(readonly=readonly)
        except sqlite3.DatabaseError as exc:
            msg = str(exc)
            damaged = damaged_store_error(exc) if "malformed" in msg else None
            if damaged is not None:  # a damaged page met while reading the applied migrations
                raise damaged from None
            if "readonly" in msg or "unable to open" in msg:
                raise FairpairError(f"cannot write the run store ({msg}); is the directory read-only?",
                                    file=path) from None
            raise FairpairError(f"not a readable fairpair store ({msg})", file=path) from None
        return store

    def _migrate(self, *, readonly: bool) -> None:
        """Apply the migrations of :data:`MIGRATIONS` this store has not recorded, each in its own
        transaction with its name. Read-only: a store whose named migrations are pending is read as it
        is (:attr:`pending` names them), one that lacks a numbered one (``schema_version`` < 3) is refused."""
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            if readonly:
                raise FairpairError("empty store", file=self.path)
            version, applied = 0, []
        else:
            if "meta" not in tables:
                raise FairpairError("not a fairpair run store (no meta table)", file=self.path)
            row = self.conn.execute("SELECT value FROM meta WHERE key='format'").fetchone()
            if row is None or row[0] != STORE_FORMAT:
                raise FairpairError("not a fairpair run store", file=self.path)
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            try:
                version = int(row[0])
            except (TypeError, ValueError):
                raise FairpairError("not a fairpair run store (its schema_version is missing or unreadable: "
                                    f"{None if row is None else row[0]!r})", file=self.path) from None
            if version > SCHEMA_VERSION:
                raise FairpairError(
                    f"this run store has schema version {version}, newer than this fairpair understands "
                    f"({SCHEMA_VERSION}); upgrade fairpair", file=self.path)
            if "migrations" in tables:
                applied = [r[0] for r in self.conn.execute("SELECT name FROM migrations ORDER BY rowid")]
            else:  # written before migrations had names: the first ``version`` numbered ones
                applied = [m.__name__ for m in MIGRATIONS[:min(version, _NUMBERED)]]
        known = {m.__name__ for m in MIGRATIONS}
        unknown = [n for n in applied if n not in known]
        if unknown:
            raise FairpairError(f"this run store has migrations newer than this fairpair understands "
                                f"({', '.join(unknown)}); upgrade fairpair", file=self.path)
        todo = [m for m in MIGRATIONS if m.__name__ not in set(applied)]
        if not todo and version == SCHEMA_VERSION:
            return
        if readonly:
            if version < _NUMBERED:
                raise FairpairError(f"run store schema {version} needs migrating; open it writable once",
                                    file=self.path)
            # a reader reads a store whose named migrations are pending as it is (what they add reads
            # as absent: see :meth:`measurements`); the next writer applies them
            self.pending = frozenset(m.__name__ for m in todo)
            return
        record = [] if "migrations" in tables else applied  # a numbered store's names, recorded once
        steps: list[Callable[[sqlite3.Connection], None] | None] = list(todo) or [None]
        for fn in steps:
            with self.transaction():
                if fn is not None:
                    fn(self.conn)
                self.conn.execute("CREATE TABLE IF NOT EXISTS migrations "
                                  "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
                now = _now()
                self.conn.executemany("INSERT OR IGNORE INTO migrations VALUES (?, ?)",
                                      [(n, now) for n in (*record, *([fn.__name__] if fn is not None else []))])
                record = []
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('format', ?)", (STORE_FORMAT,))
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def applied_migrations(self) -> list[str]:
        """The names of the migrations this store has applied, in the order applied (a store of
        before named migrations, opened read-only: its numbered ones)."""
        if self.pending and "m001_initial" not in self.pending and not self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='migrations'").fetchone():
            return [m.__name__ for m in MIGRATIONS if m.__name__ not in self.pending]
        return [r[0] for r in self.conn.execute("SELECT name FROM migrations ORDER BY rowid")]

    @contextmanager
    def checkpoints_in_background(self, interval: float = 0.5,
                                  bound: int = 10 * WAL_AUTOCHECKPOINT) -> Iterator[CheckpointCount]:
        """While the block runs, a thread of its own copies the WAL into the database, so that
        this connection's commits seldom do.

        By default SQLite checkpoints from the commit that takes the WAL past 1,000 pages
        (``wal_autocheckpoint``; SQLite docs, "Write-Ahead Logging", section 6), and that
        commit then copies the pages and syncs the database file: measured on 3,200 answers,
        30 ms for one commit in 250 and half of the store's wall time per answer (0.22 ms
        against 0.10 ms without). In the run engine that commit stalls every request in
        flight. Here a daemon thread, on a connection of its own, runs ``PRAGMA
        wal_checkpoint(PASSIVE)`` every ``interval`` seconds (> 0): it never blocks the writer
        and releases the interpreter lock while it copies and syncs. Under a steady stream of
        commits a passive checkpoint never ends with nothing new behind it, so the WAL would
        never restart from its beginning; this connection's automatic checkpoint is therefore
        raised to ``bound`` pages (default 10,000, 40 MiB at 4 KiB a page), where the commit
        that passes it checkpoints the few pages the thread has not copied yet and the WAL
        restarts: the WAL stays near ``bound`` pages (a soft bound: while the thread holds the
        checkpoint, that commit's own is refused and a later commit's takes over), and a commit
        in about 2,000 (4.7 pages an answer) pays a short checkpoint. SQLite's default is restored on exit, after
        a last passive checkpoint. Commits are as durable as before: a committed transaction
        is in the WAL whether or not it was checkpointed. A read-only store, or a transaction
        open on this connection, runs the block unchanged. Yields a :class:`CheckpointCount`
        of the thread's checkpoints.
        """
        count = CheckpointCount()
        if self.readonly or self.conn.in_transaction:
            yield count
            return
        stop = threading.Event()

        def checkpoint() -> None:
            try:
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=1)
            except sqlite3.Error:
                return  # the commits then checkpoint at ``bound``
            try:
                while not stop.wait(interval):
                    try:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    except sqlite3.Error:
                        continue  # busy or closed under us: the next round, or the commit at ``bound``, catches up
                    count.runs += 1
            finally:
                conn.close()

        self.conn.execute(f"PRAGMA wal_autocheckpoint={int(bound)}")
        worker = threading.Thread(target=checkpoint, name="fairpair-checkpoint", daemon=True)
        worker.start()
        try:
            yield count
        finally:
            stop.set()
            worker.join()
            self.conn.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT}")
            try:
                self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error:
                pass  # a reader holds the WAL: SQLite's automatic checkpoints take it from here

    def transaction(self):
        return _Tx(self.conn, self.path)

    def _write_one(self, sql: str, args: Sequence[Any]) -> None:
        """Run one writing statement, committed on its own (SQLite's autocommit: the statement is
        its own transaction, waiting up to the connection's busy timeout for the lock), or as
        part of the transaction already open on this connection. A refused write raises
        :class:`FairpairError` (see :class:`_Tx`); constraint errors propagate."""
        if self.conn.in_transaction:
            self.conn.execute(sql, args)
            return
        try:
            self.conn.execute(sql, args)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.OperationalError as exc:
            raise _write_error(exc, self.path) from None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ meta and events
    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set_meta_once(self, key: str, value: Any) -> bool:
        """Set ``key`` only if absent (append-only); returns True if it was set now."""
        with _writing(self.path):
            cur = self.conn.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)",
                                    (key, _json(value, sort_keys=True)))
        return cur.rowcount == 1

    def event(self, kind: str, data: dict[str, Any]) -> None:
        with _writing(self.path):
            self.conn.execute("INSERT INTO events (at, kind, data) VALUES (?, ?, ?)",
                              (_now(), kind, _json(data, sort_keys=True, default=str)))

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        q = "SELECT at, kind, data FROM events" + (" WHERE kind=?" if kind else "") + " ORDER BY id"
        rows = self.conn.execute(q, (kind,) if kind else ())
        return [{"at": a, "kind": k, **json.loads(d)} for a, k, d in rows]

    # ------------------------------------------------------------ cases
    def add_cases(self, cases: Iterable[Case], batch: int = 2000) -> int:
        """Insert cases not yet stored (by id). Returns how many are stored in all."""
        seq = self.conn.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM cases").fetchone()[0]
        buf: list[tuple[str, int, str]] = []
        for c in cases:
            buf.append((c.id, seq, case_json(c)))
            seq += 1
            if len(buf) >= batch:
                self._insert_cases(buf)
                buf = []
        if buf:
            self._insert_cases(buf)
        return self.conn.execute("SELECT COUNT(*) FROM cases").fetchone()[0]

    def _insert_cases(self, rows: list[tuple[str, int, str]]) -> None:
        with self.transaction():
            self.conn.executemany("INSERT OR IGNORE INTO cases VALUES (?, ?, ?)", rows)

    def iter_cases(self) -> Iterator[Case]:
        """Every stored :class:`~fairpair.records.Case`, in the order of the expansion."""
        for (data,) in self.conn.execute("SELECT data FROM cases ORDER BY seq"):
            yield case_from_json(data)

    def case(self, case_id: str) -> Case | None:
        """The stored :class:`~fairpair.records.Case` ``case_id``, or None."""
        row = self.conn.execute("SELECT data FROM cases WHERE case_id=?", (case_id,)).fetchone()
        return case_from_json(row[0]) if row else None

    def n_cases(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM cases").fetchone()[0]

    # ------------------------------------------------------------ responses
    def has_answer(self, target: str, case_id: str) -> bool:
        return self.conn.execute(
            "SELECT 1 FROM responses WHERE target=? AND case_id=? AND status='ok'", (target, case_id)
        ).fetchone() is not None

    def answered_ids(self, target: str) -> set[str]:
        return {r[0] for r in self.conn.execute(
            "SELECT case_id FROM responses WHERE target=? AND status='ok'", (target,))}

    def add_response(self, *, target: str, case_id: str, status: str, text: str | None = None,
                     turns: list[str] | None = None, tool_calls: list[dict] | None = None,
                     prompt_tokens: int | None = None, completion_tokens: int | None = None,
                     latency_s: float | None = None, finish_reason: str | None = None,
                     model: str | None = None, system_fingerprint: str | None = None,
                     error: str | None = None, attempts: int = 1, created_at: str | None = None) -> bool:
        """:meth:`add_answer` of the :class:`Response` these fields make (``created_at``: default now)."""
        return self.add_answer(Response(
            target=target, case_id=case_id, status=status, text=text, turns=turns or [], tool_calls=tool_calls or [],
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, latency_s=latency_s,
            finish_reason=finish_reason, model=model, system_fingerprint=system_fingerprint, error=error,
            attempts=attempts, created_at=created_at or _now()))

    def add_answer(self, answer: Response) -> bool:
        """Append one answer or failure, committed at once (or with the transaction open on this connection).
        Returns False if an ok answer existed.

        ``created_at`` (ISO 8601) is when the answer was produced (for answers imported from
        elsewhere, ``fairpair import-answers``, not when it was stored). ``text`` is kept exactly,
        NUL characters and lone surrogates included (the latter in ``text_json``; see migration
        ``m002_answer_text_json``). Other strings from the target (model, finish reason, error)
        are stored with lone surrogates replaced by U+FFFD.
        """
        text, text_json = answer.text, None
        if isinstance(text, str) and not _valid_text(text):
            text_json, text = json.dumps(text), _text(text)
        try:
            self._write_one(
                    "INSERT INTO responses (target, case_id, status, text, turns, tool_calls, prompt_tokens,"
                    " completion_tokens, latency_s, finish_reason, model, system_fingerprint, error, attempts,"
                    " created_at, text_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (answer.target, answer.case_id, answer.status, text, _json(answer.turns),
                     _json(answer.tool_calls, default=str), answer.prompt_tokens, answer.completion_tokens,
                     answer.latency_s, _text(answer.finish_reason), _text(answer.model),
                     _text(answer.system_fingerprint), _text(answer.error), answer.attempts, answer.created_at,
                     text_json))
        except sqlite3.IntegrityError:
            return False
        return True

    def responses(self, target: str | None = None, *, status: str | None = "ok") -> Iterator[Response]:
        where, args = _where(target=target, status=status)
        for r in self._rows(f"SELECT {_RESPONSE_COLS} FROM responses{where} ORDER BY id", args):
            yield _response(r)

    def responses_after(self, after: int = 0, *, limit: int = 5000) -> list[tuple[int, Response]]:
        """``(row id, response)`` of at most ``limit`` response rows stored after row ``after``, failures
        included, in the order stored; read at once (no statement left open, so a writer on this
        connection may call it between two answers)."""
        return [(r["id"], _response(r)) for r in self._rows(
            f"SELECT {_RESPONSE_COLS}, id FROM responses WHERE id > ? ORDER BY id LIMIT ?", (after, limit))]

    def answer(self, target: str, case_id: str) -> Response | None:
        """The ``ok`` answer of ``target`` to ``case_id`` (index ``responses_one_ok``); None if absent."""
        r = self._rows(f"SELECT {_RESPONSE_COLS} FROM responses WHERE target=? AND case_id=?"
                              " AND status='ok'", (target, case_id)).fetchone()
        return None if r is None else _response(r)

    def answers_to_measure(self, measures: Sequence[str], *, after: int = 0,
                           limit: int = 2000) -> list[AnswerToMeasure]:
        """One chunk of the ``ok`` answers, in the order they were stored, with their cases.

        Returns at most ``limit`` answers whose row id is above ``after`` (pass
        the last chunk's last ``id`` to read the next; an empty list ends), each
        with its case's stored JSON (None when the case is not stored) and
        ``done``: every row of ``measures`` is stored ``ok`` or ``missing`` for it
        (then its text and case are not read). One complete query per chunk, so
        the caller may write between chunks; memory is bounded by ``limit``.
        """
        names = list(measures)
        marks = ",".join("?" * len(names))
        done = (f"(SELECT COUNT(*) FROM measurements m WHERE m.target=r.target AND m.case_id=r.case_id"
                f" AND m.measure IN ({marks}) AND m.status IN ('ok','missing')) >= {len(names)}") \
            if names else "1"
        cols = ", ".join(f"r.{c.strip()} AS {c.strip()}" for c in _RESPONSE_COLS.split(","))
        rows = self._rows(
            f"SELECT r.id AS id, d.done AS done, CASE WHEN d.done THEN NULL ELSE c.data END AS case_json, {cols}"
            f" FROM (SELECT id, {done} AS done FROM responses r WHERE r.status='ok' AND r.id > ?"
            f"       ORDER BY r.id LIMIT ?) d"
            f" JOIN responses r ON r.id = d.id LEFT JOIN cases c ON c.case_id = r.case_id ORDER BY r.id",
            (*names, after, limit)).fetchall()
        return [AnswerToMeasure(r["id"], bool(r["done"]), r["case_json"], _response(r)) for r in rows]

    def case_fields(self, *paths: str, baseline_only: bool = False) -> Iterator[tuple[Any, ...]]:
        """``(rowid, seq, value of each JSON path)`` for every stored case (``$.block``...), in rowid
        order, read 20,000 at a time with SQLite's ``json_extract``; only baseline cases with
        ``baseline_only``. Do not write to the store while iterating."""
        sel = ", ".join(["rowid", "seq", *("json_extract(data, ?)" for _ in paths)])
        where = " WHERE json_extract(data, '$.baseline') = 1" if baseline_only else ""
        cur = self.conn.execute(f"SELECT {sel} FROM cases{where} ORDER BY rowid", paths)
        while rows := cur.fetchmany(20_000):
            yield from rows

    def cases_at(self, rowids: Iterable[int]) -> dict[int, Case]:
        """rowid -> :class:`~fairpair.records.Case` for the given case row ids (those stored)."""
        ids = sorted({int(i) for i in rowids})
        out: dict[int, Case] = {}
        for k in range(0, len(ids), 500):
            part = ids[k:k + 500]
            for rid, data in self.conn.execute(
                    f"SELECT rowid, data FROM cases WHERE rowid IN ({','.join('?' * len(part))})", part):
                out[rid] = case_from_json(data)
        return out

    def answer_versions(self, target: str) -> dict[tuple[str | None, str | None], int]:
        """``(model, system_fingerprint)`` -> number of ``ok`` answers of ``target`` (a fleet's version check)."""
        return {(m, fp): n for m, fp, n in sorted(self.served_models(target), key=lambda r: -r[2])}

    # ------------------------------------------------------------ provider batch jobs (migration m003_batches)
    def add_batch(self, *, target: str, batch_id: str, input_file_id: str, base_url: str,
                  case_ids: Sequence[str], state: dict[str, Any], stage: str = "run") -> None:
        """Record a submitted batch, the cases (or request keys) it carries and its first state, in one
        transaction; ``stage``: ``run``, ``turns`` or ``measure`` (migration m006)."""
        with self.transaction():
            self.conn.execute("INSERT INTO batches (target, batch_id, input_file_id, requests, base_url, created_at,"
                              " stage) VALUES (?,?,?,?,?,?,?)", (target, batch_id, input_file_id, len(case_ids),
                                                                 base_url, _now(), stage))
            self.conn.executemany("INSERT INTO batch_cases VALUES (?, ?)", ((batch_id, c) for c in case_ids))
            self.add_batch_state(batch_id, str(state.get("status") or "submitted"), state)

    def add_batch_state(self, batch_id: str, status: str, data: dict[str, Any]) -> None:
        """Append a state of a batch (``validating``, ``in_progress``, ``completed``... ``ingested``)."""
        with self.transaction():
            self.conn.execute("INSERT INTO batch_states (batch_id, status, data, at) VALUES (?,?,?,?)",
                              (batch_id, status, _json(data, sort_keys=True, default=str), _now()))

    def batches(self, target: str | None = None, *, stage: str | None = "run") -> list[dict[str, Any]]:
        """Every recorded batch of ``stage`` (``None``: all stages; oldest first) with its last state:
        ``{target, batch_id, input_file_id, requests, base_url, created_at, status, state, stage}``
        (``state``: the provider's last batch object)."""
        old = "m006_measure_batches" in self.pending  # read as it is: every batch of before is a run's
        if old and stage not in (None, "run"):
            return []
        where, args = _where(target=target, stage=None if old else stage)
        rows = self.conn.execute(
            "SELECT b.target, b.batch_id, b.input_file_id, b.requests, b.base_url, b.created_at, s.status, s.data,"
            f" {_q('run') if old else 'b.stage'} FROM batches b"
            " JOIN batch_states s ON s.id = (SELECT MAX(id) FROM batch_states t"
            f" WHERE t.batch_id = b.batch_id){where.replace('target', 'b.target').replace('stage', 'b.stage')}"
            " ORDER BY b.id", args).fetchall()
        return [{"target": r[0], "batch_id": r[1], "input_file_id": r[2], "requests": r[3], "base_url": r[4],
                 "created_at": r[5], "status": r[6], "state": json.loads(r[7]), "stage": r[8]} for r in rows]

    def batch_case_ids(self, batch_id: str) -> Iterator[str]:
        """The case ids a batch carries, in the order written."""
        for (c,) in self.conn.execute("SELECT case_id FROM batch_cases WHERE batch_id=? ORDER BY rowid",
                                      (batch_id,)):
            yield c

    def cases_in_open_batches(self, target: str, *, stage: str = "run") -> set[str]:
        """Case ids (request keys, for the ``turns`` and ``measure`` stages) of ``target`` carried by a
        batch of ``stage`` not yet ingested (not to be sent again)."""
        if "m006_measure_batches" in self.pending:  # a store read as it is: written before stages existed
            return set() if stage != "run" else {r[0] for r in self.conn.execute(
                "SELECT c.case_id FROM batch_cases c JOIN batches b ON b.batch_id = c.batch_id WHERE b.target=?"
                " AND NOT EXISTS (SELECT 1 FROM batch_states s WHERE s.batch_id = b.batch_id"
                " AND s.status = 'ingested')", (target,))}
        return {r[0] for r in self.conn.execute(
            "SELECT c.case_id FROM batch_cases c JOIN batches b ON b.batch_id = c.batch_id WHERE b.target=?"
            " AND b.stage=? AND NOT EXISTS (SELECT 1 FROM batch_states s WHERE s.batch_id = b.batch_id"
            " AND s.status IN ('ingested', 'superseded'))", (target, stage))}

    # ------------------------------------------------------------ single calls of batches (migration m006)
    def add_batch_call(self, *, batch_id: str, key: str, status: str, completion: dict[str, Any] | None = None,
                       error: str | None = None) -> bool:
        """Store the answer (``ok``, with its ``completion`` as a JSON object) or per-request error
        (``failed``) of one request of a batch; False (nothing stored) for a second ``ok`` of ``key``:
        the store keeps one answer per request, however many times a provider answered it."""
        with _writing(self.path):
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO batch_calls (batch_id, key, status, completion, error, created_at)"
                " VALUES (?,?,?,?,?,?)", (batch_id, key, status, None if completion is None else
                                          _json(completion, sort_keys=True), error, _now()))
        return cur.rowcount == 1

    def batch_call(self, key: str) -> dict[str, Any] | None:
        """The stored outcome of request ``key``: its ``ok`` row, else its last failure, else None;
        ``{batch_id, status, completion, error}``."""
        if "m006_measure_batches" in self.pending:
            return None
        row = self.conn.execute(
            "SELECT batch_id, status, completion, error FROM batch_calls WHERE key=?"
            " ORDER BY status = 'ok' DESC, id DESC LIMIT 1", (key,)).fetchone()
        if row is None:
            return None
        return {"batch_id": row[0], "status": row[1], "completion": json.loads(row[2]) if row[2] else None,
                "error": row[3]}

    def batch_call_counts(self, batch_id: str) -> dict[str, int]:
        """``{"ok": n, "failed": n}`` of the calls stored from one batch."""
        out = {"ok": 0, "failed": 0}
        for status, n in self.conn.execute("SELECT status, COUNT(*) FROM batch_calls WHERE batch_id=?"
                                           " GROUP BY status", (batch_id,)):
            out[status] = n
        return out

    def targets(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT DISTINCT target FROM responses ORDER BY target")]

    def counts(self, target: str | None = None) -> dict[str, int]:
        """cases / answered / failed (no answer, at least one failure) / retried, per the cases table.

        ``cases``: the cases ``target`` owes an outcome for, every case of the run; in an imported run
        (each row names its target, two models answering different requests) the cases that target
        stored, so nothing is "left to send" there."""
        args: tuple = ()
        tcond = ""
        if target is not None:
            tcond, args = " AND target=?", (target,)
        answered = self.conn.execute(
            f"SELECT COUNT(DISTINCT case_id) FROM responses WHERE status='ok'{tcond}", args).fetchone()[0]
        failed = self.conn.execute(
            f"SELECT COUNT(DISTINCT case_id) FROM responses r WHERE status='failed'{tcond} AND NOT EXISTS"
            f" (SELECT 1 FROM responses o WHERE o.target=r.target AND o.case_id=r.case_id AND o.status='ok')",
            args).fetchone()[0]
        retried = self.conn.execute(
            f"SELECT COUNT(*) FROM responses WHERE attempts > 1{tcond}", args).fetchone()[0]
        if target is not None and self.get_meta("import") is not None:
            cases = self.conn.execute("SELECT COUNT(DISTINCT case_id) FROM responses WHERE target=?",
                                      (target,)).fetchone()[0]
        else:
            cases = self.n_cases()
        return {"cases": cases, "answered": answered, "failed": failed, "retried": retried}

    def token_usage(self) -> dict[str, dict[str, int]]:
        """target -> the tokens of its stored ``ok`` answers, as the provider reported them: ``calls``
        (answers), ``input_tokens`` and ``output_tokens`` (sums over the answers that carry them) and
        ``without_usage`` (answers whose provider reported no usage)."""
        return {r[0]: {"calls": r[1], "input_tokens": r[2] or 0, "output_tokens": r[3] or 0, "without_usage": r[4]}
                for r in self.conn.execute(
                    "SELECT target, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(prompt_tokens IS NULL"
                    " AND completion_tokens IS NULL) FROM responses WHERE status='ok' GROUP BY target ORDER BY target")}

    def failure_messages(self, target: str) -> list[str]:
        """The last stored error of each case of ``target`` that has failures and no ``ok`` answer,
        in the order the cases failed."""
        return [r[0] or "" for r in self.conn.execute(
            "SELECT error FROM responses r WHERE target=? AND status='failed' AND id = (SELECT MAX(id) FROM"
            " responses f WHERE f.target=r.target AND f.case_id=r.case_id AND f.status='failed') AND NOT EXISTS"
            " (SELECT 1 FROM responses o WHERE o.target=r.target AND o.case_id=r.case_id AND o.status='ok')"
            " ORDER BY id", (target,))]

    # ------------------------------------------------------------ measurements
    def has_measurement(self, target: str, case_id: str, measure: str) -> bool:
        return self.conn.execute(
            "SELECT 1 FROM measurements WHERE target=? AND case_id=? AND measure=? AND status IN ('ok','missing')",
            (target, case_id, measure)).fetchone() is not None

    def measured_keys(self, measure: str) -> set[tuple[str, str]]:
        return {(t, c) for t, c in self.conn.execute(
            "SELECT target, case_id FROM measurements WHERE measure=? AND status IN ('ok','missing')",
            (measure,))}

    def declare_scales(self, scales: dict[str, str]) -> None:
        """Measure row name -> scale (:data:`fairpair.records.Scale`) for the rows this store object
        writes from now on (:meth:`add_measurement` stores it with each row); the measure stage
        declares its measures' scales before it measures."""
        self._scales.update(scales)

    def add_measurement(self, *, target: str, case_id: str, measure: str, status: str, value: Any = None,
                        detail: dict[str, Any] | None = None, error: str | None = None,
                        scale: str | None = None) -> bool:
        """Append one measurement row (``scale``: the measure's scale, default the one declared by
        :meth:`declare_scales`, else NULL); returns False when an ``ok`` or ``missing`` row of
        (target, case, measure) is stored already."""
        try:
            with self.transaction():
                self.conn.execute(
                    "INSERT INTO measurements (target, case_id, measure, status, value, detail, error, created_at,"
                    " scale) VALUES (?,?,?,?,?,?,?,?,?)",
                    (target, case_id, measure, status,
                     None if value is None else _json(value),
                     None if detail is None else _json(detail, default=str),
                     _text(error), _now(), scale if scale is not None else self._scales.get(measure)))
        except sqlite3.IntegrityError:
            return False
        return True

    def measurements(self, measure: str | None = None, *, status: str | None = "ok") -> Iterator[Measurement]:
        where, args = _where(measure=measure, status=status)
        scale = "NULL AS scale" if "m004_measurement_scale" in self.pending else "scale"
        q = (f"SELECT target, case_id, measure, status, value, detail, error, {scale}"
             f" FROM measurements{where} ORDER BY id")
        for r in self._rows(q, args):
            v, d = r["value"], r["detail"]
            yield Measurement(target=r["target"], case_id=r["case_id"], measure=r["measure"], status=r["status"],
                              value=None if v is None else json.loads(v), detail=None if d is None else json.loads(d),
                              error=r["error"], scale=r["scale"])

    def measure_scales(self) -> dict[str, str]:
        """Measure row name -> the scale stored with its rows (rows stored before the scale was
        recorded, NULL, are left out; the last stored wins)."""
        if "m004_measurement_scale" in self.pending:
            return {}
        return {m: sc for m, sc, _ in self.conn.execute(  # SQLite: the bare column comes from the MAX(id) row
            "SELECT measure, scale, MAX(id) FROM measurements WHERE scale IS NOT NULL GROUP BY measure")}

    def measurement_counts(self) -> dict[str, dict[str, int]]:
        """measure -> status (``ok`` / ``missing`` / ``failed``) -> number of (target, case) keys, a key
        counted once under its best status (``ok`` or ``missing`` over ``failed``)."""
        out: dict[str, dict[str, int]] = {}
        rows = self.conn.execute(
            "SELECT measure, best, COUNT(*) FROM (SELECT measure, target, case_id, MIN(CASE status WHEN 'ok'"
            " THEN 0 WHEN 'missing' THEN 1 ELSE 2 END) AS best FROM measurements GROUP BY measure, target,"
            " case_id) GROUP BY measure, best")
        for m, best, n in rows:
            out.setdefault(m, {})[("ok", "missing", "failed")[best]] = n
        return out


    # ------------------------------------------------------------ human labels (migration m005_human_labels)
    def add_label_sample(self, sample: LabelSample) -> LabelSample:
        """Store a drawn labelling sample (:class:`~fairpair.records.LabelSample`) in one transaction
        and return the one stored under its (``measure``, ``name``).

        A sample is drawn once: when (``measure``, ``name``) is stored already, nothing is written and
        the stored sample is returned (so every rater, and every resumed page, labels the same draw).

        Raises
        ------
        ValueError
            An answer's probability outside (0, 1], or two answers with one key or one draw order.
        """
        with self.transaction():
            stored = self.label_sample(sample.measure, sample.name)
            if stored is not None:
                return stored
            bad = next((a for a in sample.answers if not 0.0 < a.probability <= 1.0), None)
            if bad is not None:
                raise ValueError(f"inclusion probability {bad.probability!r} of {bad.target}/{bad.case_id} "
                                 "is not in (0, 1]")
            cur = self.conn.execute(
                "INSERT INTO label_samples (measure, name, seed, design, mixing, frame, created_at)"
                " VALUES (?,?,?,?,?,?,?)", (sample.measure, sample.name, int(sample.seed), sample.design,
                                           float(sample.mixing), _json(sample.frame, sort_keys=True),
                                           sample.created_at or _now()))
            try:
                self.conn.executemany(
                    "INSERT INTO label_sample_answers (sample_id, target, case_id, stratum, probability,"
                    " draw_order, uncertainty) VALUES (?,?,?,?,?,?,?)",
                    [(cur.lastrowid, a.target, a.case_id, a.stratum, float(a.probability), int(a.order),
                      a.uncertainty) for a in sample.answers])
            except sqlite3.IntegrityError as exc:
                raise ValueError(f"the sample repeats an answer or a draw order ({exc})") from None
        stored = self.label_sample(sample.measure, sample.name)
        assert stored is not None
        return stored

    def label_samples(self, measure: str | None = None) -> list[LabelSample]:
        """Every stored labelling sample (of ``measure``, when given), oldest first."""
        if "m005_human_labels" in self.pending:
            return []
        where, args = _where(measure=measure)
        heads = self._rows(f"SELECT * FROM label_samples{where} ORDER BY id", args).fetchall()
        out = []
        for h in heads:
            answers = tuple(SampledAnswer(target=r["target"], case_id=r["case_id"], stratum=r["stratum"],
                                          probability=r["probability"], order=r["draw_order"],
                                          uncertainty=r["uncertainty"])
                            for r in self._rows("SELECT * FROM label_sample_answers WHERE sample_id=?"
                                                " ORDER BY draw_order", (h["id"],)))
            out.append(LabelSample(measure=h["measure"], seed=h["seed"], design=h["design"], mixing=h["mixing"],
                                   frame=json.loads(h["frame"]), answers=answers, created_at=h["created_at"],
                                   name=h["name"]))
        return out

    def label_sample(self, measure: str, name: str = "page") -> LabelSample | None:
        """The labelling sample of ``measure`` stored under ``name`` (``page``: the one ``fairpair
        label`` draws and shows), or None when none is stored."""
        return next((s for s in self.label_samples(measure) if s.name == name), None)

    def add_label(self, *, target: str, case_id: str, measure: str, rater: str, value: float | None,
                  source: str = "page", created_at: str | None = None) -> HumanLabel:
        """Append one rater's label of one answer, committed at once (or with the transaction open on
        this connection), and return it with its row id.

        ``value`` is on the measure's scale (a rubric level, or 0/1 for a yes/no measure); ``None``
        stores a *skip* (the rater saw the answer and passed: it counts for resuming and undo,
        never as a label). A rater's later label of the same answer supersedes the earlier one
        in :meth:`labels`; nothing stored is changed.

        Raises
        ------
        ValueError
            ``rater`` or ``measure`` empty, or ``value`` not a finite number.
        """
        rater = (rater or "").strip()
        if not rater or not measure:
            raise ValueError("a label needs a rater's name and a measure")
        if value is not None:
            value = float(value)
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError(f"label value {value!r} is not a finite number")
        at = created_at or _now()
        with self.transaction():
            cur = self.conn.execute(
                "INSERT INTO labels (target, case_id, measure, rater, value, source, created_at)"
                " VALUES (?,?,?,?,?,?,?)", (target, case_id, measure, _text(rater), value, source, at))
        return HumanLabel(id=int(cur.lastrowid or 0), target=target, case_id=case_id, measure=measure,
                          rater=rater, value=value, source=source, created_at=at)  # type: ignore[arg-type]

    def withdraw_label(self, label_id: int) -> bool:
        """Withdraw a label or skip (an undo) by appending a withdrawal; the label's row stays stored.
        Returns False when it was withdrawn already.

        Raises
        ------
        ValueError
            No label has this id.
        """
        with self.transaction():
            if self.conn.execute("SELECT 1 FROM labels WHERE id=?", (int(label_id),)).fetchone() is None:
                raise ValueError(f"no label has id {label_id}")
            cur = self.conn.execute("INSERT OR IGNORE INTO label_withdrawals VALUES (?, ?)", (int(label_id), _now()))
        return cur.rowcount == 1

    def _label_rows(self, sql_filter: str, args: Sequence[Any]) -> list[HumanLabel]:
        if "m005_human_labels" in self.pending:
            return []
        rows = self._rows(
            "SELECT id, target, case_id, measure, rater, value, source, created_at FROM labels l"
            " WHERE NOT EXISTS (SELECT 1 FROM label_withdrawals w WHERE w.label_id = l.id)"
            f"{sql_filter} ORDER BY id", args)
        return [HumanLabel(id=r["id"], target=r["target"], case_id=r["case_id"], measure=r["measure"],
                           rater=r["rater"], value=r["value"], source=r["source"], created_at=r["created_at"])
                for r in rows]

    def labels(self, measure: str | None = None, *, rater: str | None = None) -> list[HumanLabel]:
        """The current human labels (of ``measure`` / ``rater`` when given), in the order given.

        Current: not withdrawn, and the latest non-withdrawn action of its rater on its answer and
        measure (a rater who relabels an answer counts once, with the later value; one whose latest
        action is a skip counts not at all). Several raters of one answer each give a label
        (:func:`fairpair.records.mean_label` averages them). Labels of the page (``source``
        ``page``) and of imported ``calibrate`` files (``file``) alike; a store written before
        labels existed, opened read-only, has none.
        """
        flt = (" AND id = (SELECT MAX(m.id) FROM labels m WHERE m.target=l.target AND m.case_id=l.case_id"
               " AND m.measure=l.measure AND m.rater=l.rater AND NOT EXISTS"
               " (SELECT 1 FROM label_withdrawals w WHERE w.label_id = m.id)) AND value IS NOT NULL")
        args: list[Any] = []
        for col, v in (("measure", measure), ("rater", rater)):
            if v is not None:
                flt += f" AND {col}=?"
                args.append(v)
        return self._label_rows(flt, args)

    def label_actions(self, measure: str, rater: str) -> list[HumanLabel]:
        """Every non-withdrawn label and skip (``value`` None) of ``rater`` on ``measure``, in the order
        given: the page's resume point (answers acted on) and its undo stack (the last one)."""
        return self._label_rows(" AND measure=? AND rater=?", (measure, rater))

    def label_raters(self, measure: str | None = None) -> list[str]:
        """The names of the raters with a stored label or skip (of ``measure``), in order of first action."""
        if "m005_human_labels" in self.pending:
            return []
        where, args = _where(measure=measure)
        return [r[0] for r in self.conn.execute(f"SELECT rater FROM labels{where} GROUP BY rater ORDER BY MIN(id)",
                                                args)]

    # ------------------------------------------------------------ bulk reads (analysis, report, export)
    def case_rows(self, *, ordered: bool = True) -> Iterator[tuple[str, int, str]]:
        """``(case_id, seq, stored JSON)`` of every case, in ``seq`` order (storage order when not
        ``ordered``): the fast path for a million cases, parsed by the caller with ``json.loads``."""
        yield from self.conn.execute("SELECT case_id, seq, data FROM cases" + (" ORDER BY seq" if ordered else ""))

    def answered_keys(self) -> Iterator[tuple[str, str]]:
        """``(target, case_id)`` of every ``ok`` answer, in storage order."""
        yield from self.conn.execute("SELECT target, case_id FROM responses WHERE status='ok'")

    def failed_case_counts(self) -> dict[str, int]:
        """target -> cases with at least one failure and no ``ok`` answer (targets with none left out)."""
        return dict(self.conn.execute(
            "SELECT target, COUNT(DISTINCT case_id) FROM responses r WHERE status='failed' AND NOT EXISTS "
            "(SELECT 1 FROM responses o WHERE o.target=r.target AND o.case_id=r.case_id AND o.status='ok') "
            "GROUP BY target").fetchall())

    def answer_status_rows(self) -> Iterator[tuple[str, str, str, str | None, str | None, int]]:
        """``(target, case_id, status, text, finish_reason, has_tool_calls)`` of every response row,
        failures included, in the order stored; ``text`` exactly as the target gave it (lone
        surrogates included, read from ``text_json``), ``has_tool_calls`` 1 or 0."""
        for row in self.conn.execute(
                "SELECT target, case_id, status, text, finish_reason, tool_calls IS NOT NULL AND tool_calls != '[]',"
                " text_json FROM responses ORDER BY id"):
            if row[6] is None:
                yield row[:6]
            else:  # lone surrogates: the exact text is kept as JSON (migration m002_answer_text_json)
                yield (*row[:3], json.loads(row[6]), *row[4:6])

    def ok_values(self, measures: Sequence[str]) -> Iterator[tuple[str, str, str, Any]]:
        """``(target, case_id, measure, value)`` of every ``ok`` row of ``measures`` (value decoded
        from JSON; rows with a null value left out)."""
        names = list(measures)
        if not names:
            return
        marks = ",".join("?" * len(names))
        for target, cid, measure, value in self.conn.execute(
                f"SELECT target, case_id, measure, value FROM measurements WHERE status='ok' AND measure IN ({marks})",
                names):
            if value is not None:
                yield target, cid, measure, json.loads(value)

    def measurement_columns(self, *, chunk: int = 100_000) -> MeasurementColumns:
        """Every measurement row of a stored case as :class:`MeasurementColumns`, in one scan.

        SQLite converts the JSON literals (``true``/``false``/numbers) and numpy places them, read
        ``chunk`` rows at a time (a million answers x 2 measures as Python rows would take GiBs).
        """
        import numpy as np

        cur = self.conn.execute(
            "SELECT m.target || char(0) || m.measure, c.seq, CASE m.status WHEN 'ok' THEN 0 WHEN 'missing' THEN 1 "
            "ELSE 2 END, CASE WHEN m.status != 'ok' OR m.value IS NULL THEN NULL WHEN m.value IN ('true', 'false') "
            "THEN m.value = 'true' WHEN substr(m.value, 1, 1) IN ('{', '[', '\"', 'n') THEN NULL "
            "ELSE CAST(m.value AS REAL) END, CASE WHEN m.value IN ('true', 'false') THEN 1 "
            "WHEN substr(m.value, 1, 1) = '{' THEN 3 WHEN substr(m.value, 1, 1) IN ('[', '\"', 'n') THEN 0 ELSE 2 END, "
            "CASE WHEN substr(m.value, 1, 1) = '{' OR m.detail IS NOT NULL THEN 1 ELSE 0 END, m.id "
            "FROM measurements m JOIN cases c ON c.case_id = m.case_id")
        key_code: dict[str, int] = {}
        code_parts: list[Any] = []
        num_parts: list[Any] = []
        while rows := cur.fetchmany(chunk):
            code_parts.append(np.fromiter((key_code.setdefault(r[0], len(key_code)) for r in rows), dtype=np.intp,
                                          count=len(rows)))
            num_parts.append(np.array([r[1:] for r in rows], dtype=float))
            del rows
        if not key_code:
            empty = np.zeros(0)
            return MeasurementColumns([], np.zeros(0, dtype=np.intp), empty, empty, empty, empty, empty, empty)
        ukeys = sorted(key_code)
        remap = np.empty(len(ukeys), dtype=np.intp)
        remap[[key_code[k] for k in ukeys]] = np.arange(len(ukeys))
        kcode = remap[np.concatenate(code_parts)]
        num = np.concatenate(num_parts)
        del code_parts, num_parts
        keys = [tuple(str(k).split("\x00", 1)) for k in ukeys]
        return MeasurementColumns(keys, kcode, *(num[:, j] for j in range(6)))  # type: ignore[arg-type]

    def measurement_rows(self, ids: Iterable[int]) -> Iterator[tuple[str, str, str, str, Any, Any]]:
        """``(target, case_id, measure, status, value, detail)`` of the rows with these ids (value and
        detail decoded from JSON, None where null)."""
        q = ("SELECT target, case_id, measure, status, value, detail FROM measurements WHERE id IN "
             "(SELECT value FROM json_each(?))")
        for target, cid, measure, st, raw, detail in self.conn.execute(q, (json.dumps([int(i) for i in ids]),)):
            yield (target, cid, measure, st, None if raw is None else json.loads(raw),
                   None if detail is None else json.loads(detail))

    def served_models(self, target: str) -> list[tuple[str | None, str | None, int]]:
        """``(model, system_fingerprint, answers)`` of ``target``'s ``ok`` answers, per pair the target
        reported, in the order of the pairs (see :meth:`answer_versions` for most answers first)."""
        return self.conn.execute(
            "SELECT model, system_fingerprint, COUNT(*) FROM responses WHERE target=? AND status='ok' "
            "GROUP BY model, system_fingerprint", (target,)).fetchall()

    def unanswered_errors(self, target: str) -> list[str | None]:
        """The error of every failed row of ``target`` whose case has no ``ok`` answer (every attempt
        that was stored, not one per case; see :meth:`failure_messages`)."""
        return [r[0] for r in self.conn.execute(
            "SELECT error FROM responses r WHERE target=? AND status='failed' AND NOT EXISTS "
            "(SELECT 1 FROM responses o WHERE o.target=r.target AND o.case_id=r.case_id AND o.status='ok')",
            (target,))]

    def measurement_row_counts(self) -> dict[str, dict[str, int]]:
        """measure -> ``{"ok", "missing", "failed"}`` -> stored rows; a failed row counts only when
        its (target, case, measure) has no ``ok`` or ``missing`` row (unlike :meth:`measurement_counts`,
        every failed attempt of such a key counts)."""
        out: dict[str, dict[str, int]] = {}
        q = ("SELECT measure, status, COUNT(*) FROM measurements m WHERE status IN ('ok','missing') OR NOT EXISTS "
             "(SELECT 1 FROM measurements o WHERE o.target=m.target AND o.case_id=m.case_id AND o.measure=m.measure "
             "AND o.status IN ('ok','missing')) GROUP BY measure, status")
        for measure, status, cnt in self.conn.execute(q):
            out.setdefault(measure, {"ok": 0, "missing": 0, "failed": 0})[status] = cnt
        return out

    def latest_value(self, target: str, case_id: str, measure: str) -> Any:
        """The value of the last ``ok`` row of ``measure`` for (``target``, ``case_id``), decoded; None
        when there is none or it is null."""
        row = self.conn.execute(
            "SELECT value FROM measurements WHERE target=? AND case_id=? AND measure=? AND status='ok' "
            "ORDER BY id DESC LIMIT 1", (target, case_id, measure)).fetchone()
        return None if row is None or row[0] is None else json.loads(row[0])

    def latest_detail(self, target: str, case_id: str, measure: str) -> Any:
        """The ``detail`` of the last ``ok`` row of ``measure`` for (``target``, ``case_id``), decoded;
        None when there is none or it is null (a ranking's parsed order: ``order``, ``ranks``, ``top``)."""
        row = self.conn.execute(
            "SELECT detail FROM measurements WHERE target=? AND case_id=? AND measure=? AND status='ok' "
            "ORDER BY id DESC LIMIT 1", (target, case_id, measure)).fetchone()
        return None if row is None or row[0] is None else json.loads(row[0])

    def answer_text(self, target: str, case_id: str) -> str | None:
        """The ``text`` column of ``target``'s ``ok`` answer to ``case_id`` (lone surrogates as U+FFFD,
        see migration m002_answer_text_json; ``""`` for an answer without text); None when there is no ``ok`` answer."""
        row = self.conn.execute("SELECT text FROM responses WHERE target=? AND case_id=? AND status='ok' "
                                "ORDER BY id LIMIT 1", (target, case_id)).fetchone()
        return None if row is None else (row[0] or "")

    def integrity_ok(self) -> bool:
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@dataclass
class CheckpointCount:
    """What :meth:`Store.checkpoints_in_background`'s thread did: ``runs``, its passive checkpoints
    (the tests read it; nothing else is counted, since nothing reads more)."""

    runs: int = 0


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT, retried briefly if another writer holds the lock.

    A write that SQLite refuses (disk full, read-only, I/O error) raises
    :class:`FairpairError` after the transaction is rolled back; earlier
    commits are untouched. Opened inside a transaction already open on the
    same connection, it joins it (commit or rollback is the outer one's): an
    import writes a whole run in one transaction with the ordinary methods.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn = conn
        self.path = path
        self.nested = False

    def __enter__(self):
        if self.conn.in_transaction:
            self.nested = True
            return self
        for attempt in range(50):
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                return self
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 49:
                    raise _write_error(exc, self.path) from None
                time.sleep(0.05)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.nested:
            return False
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
            except sqlite3.OperationalError as err:
                self._rollback()
                raise _write_error(err, self.path) from None
            return False
        self._rollback()
        if isinstance(exc, sqlite3.OperationalError):
            raise _write_error(exc, self.path) from None
        return False

    def _rollback(self) -> None:
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # SQLite may already have rolled back (e.g. after SQLITE_FULL)


def _q(text: str) -> str:
    """``text`` as an SQL string literal (our own constants only)."""
    return "'" + text.replace("'", "''") + "'"


def _where(**filters: str | None) -> tuple[str, list[str]]:
    """`` WHERE col=? AND ...`` for the filters that are not None (column names are ours, never input)."""
    cols = [k for k, v in filters.items() if v is not None]
    clause = " WHERE " + " AND ".join(f"{k}=?" for k in cols) if cols else ""
    return clause, [v for v in filters.values() if v is not None]


def _split_sql(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
