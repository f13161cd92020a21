"""Progress of the stages: a rich bar on a terminal (rate, ETA, tokens and errors); off one (CI logs,
``nohup``, a pipe), plain lines on stderr at each stage's start and end and at most every
:data:`PLAIN_EVERY` seconds between, e.g. ``run (target mock): 120/480 answers (25%), 3 failed, 1m10s
elapsed``; nothing under ``-q``."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeGuard

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["RunProgress", "progress_enabled", "quiet", "shows_progress", "stage_bar", "poll_progress", "stage_status",
           "CountingTarget", "PLAIN_EVERY", "PLAIN_SILENT", "PlainLines", "plain_progress", "plain_stage"]

#: Seconds between two plain progress lines off a terminal (stage starts and ends are always said).
PLAIN_EVERY = 10.0
#: Seconds after which the run stage repeats its plain line when no answer came back meanwhile (a slow or
#: stalled target), so a log never looks hung for longer.
PLAIN_SILENT = 30.0


def _clock_text(seconds: float) -> str:
    """``45s``, ``1m10s``, ``2h05m``: an elapsed time as a log line shows it."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class PlainLines:
    """Progress as plain lines (no ANSI codes) on stderr, for output that is not a terminal.

    ``label``: what is counted, e.g. ``run (target mock)``; ``total``: how many there are (answers);
    ``unit``: the word after the count. :meth:`say` writes ``LABEL: DONE/TOTAL UNIT (P%), F failed, EXTRA,
    ELAPSED elapsed`` when forced (a start or an end) or when :data:`PLAIN_EVERY` seconds (read at each
    call) have passed since the last line; ``clock``: seconds (monotonic), for tests.
    """

    def __init__(self, label: str, total: int, *, unit: str = "", clock: Callable[[], float] = time.monotonic):
        self.label = "".join(ch if ch.isprintable() else "?" for ch in label)  # no escape reaches the log raw
        self.total, self.unit, self.clock = total, unit, clock
        self.t0 = self.last = clock()
        self._lock = threading.Lock()  # the run's heartbeat thread says lines too

    def say(self, done: int, *, failed: int | None = None, extra: str = "", force: bool = False,
            every: float | None = None) -> bool:
        """Write one line if ``force`` or ``every`` seconds (default :data:`PLAIN_EVERY`) have passed since the
        last one; True when a line was written."""
        with self._lock:
            return self._say(done, failed, extra, force, PLAIN_EVERY if every is None else every)

    def _say(self, done: int, failed: int | None, extra: str, force: bool, every: float) -> bool:
        now = self.clock()
        if not force and now - self.last < every:
            return False
        self.last = now
        pct = f" ({done / self.total:.0%})" if self.total > 0 else ""
        parts = [f"{self.label}: {done:,}/{self.total:,}" + (f" {self.unit}" if self.unit else "") + pct]
        if failed is not None:
            parts.append(f"{failed:,} failed")
        if extra:
            parts.append("".join(ch if ch.isprintable() else "?" for ch in extra))
        parts.append(f"{_clock_text(now - self.t0)} elapsed")
        stream = sys.stderr
        try:
            stream.write(", ".join(parts) + "\n")
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr: progress is not worth a crash
            return False
        return True


class RunProgress:
    """The run stage's progress: a rich bar on ``console`` when ``enabled``; else, with ``plain``,
    :class:`PlainLines` on stderr per target (``run (target NAME): N/TOTAL answers (P%), F failed, T elapsed``),
    repeated by a heartbeat thread every :data:`PLAIN_SILENT` seconds in which no answer came back."""

    def __init__(self, console: Console | None = None, *, enabled: bool = True, plain: bool = False):
        self.enabled = enabled
        self.plain = plain and not enabled
        self.lines: PlainLines | None = None
        self.done = 0
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
            TextColumn("{task.fields[rate]}/s"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            TextColumn("tokens {task.fields[tokens]:,}"), TextColumn("[red]errors {task.fields[errors]}"),
            console=console, transient=False, disable=not enabled)
        self.task: TaskID | None = None
        self.tokens = 0
        self.errors = 0
        self._stop: threading.Event | None = None

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        self._stop_heartbeat()
        self.progress.__exit__(*exc)

    def _heartbeat(self, lines: PlainLines, stop: threading.Event) -> None:
        while not stop.wait(PLAIN_SILENT):
            lines.say(self.done, failed=self.errors, every=PLAIN_SILENT)

    def _stop_heartbeat(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None

    def start_target(self, name: str, *, total: int, todo: int) -> None:
        self.tokens = self.errors = 0
        self.done = total - todo
        if self.plain:
            self.lines = PlainLines(f"run (target {name})", total, unit="answers")
            self.lines.say(self.done, failed=0, force=True)
            self._stop_heartbeat()
            self._stop = threading.Event()
            threading.Thread(target=self._heartbeat, args=(self.lines, self._stop), daemon=True,
                             name="fairpair-progress").start()
        self.task = self.progress.add_task(name, total=total, completed=total - todo, rate="-", tokens=0, errors=0)

    def case_done(self, case_id: str, completion, error) -> None:
        if self.task is None:
            return
        if error:
            self.errors += 1
        elif completion is not None:
            self.tokens += (completion.usage.completion_tokens or 0)
        self.done += 1
        if self.lines is not None:
            self.lines.say(self.done, failed=self.errors)
        t = self.progress.tasks[self.task]
        speed = t.speed
        self.progress.update(self.task, advance=1, tokens=self.tokens, errors=self.errors,
                             rate=f"{speed:.1f}" if speed else "-")

    def end_target(self, name: str) -> None:
        self._stop_heartbeat()
        if self.lines is not None and self.task is not None:
            self.lines.say(self.done, failed=self.errors, force=True)
        self.lines = None
        self.task = None


# ---------------------------------------------------------------- the later stages
#: False under ``-q``: no progress display in this context (set by :func:`progress_enabled`).
_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("fairpair_progress", default=True)


@contextlib.contextmanager
def progress_enabled(enabled: bool) -> Iterator[None]:
    """Turn the later stages' progress displays on or off (``-q``) inside the block."""
    token = _ENABLED.set(enabled)
    try:
        yield
    finally:
        _ENABLED.reset(token)


def quiet() -> bool:
    """True inside ``progress_enabled(False)`` (``-q``): the stages leave out their running commentary
    ("measuring X...") and the verdicts' sentences; tables, warnings and errors stay."""
    return not _ENABLED.get()


def shows_progress(console: Console | None) -> TypeGuard[Console]:
    """True when a progress display should be drawn: a console on a terminal, and not ``-q``."""
    return console is not None and _ENABLED.get() and console.is_terminal


def plain_progress(console: Console | None) -> TypeGuard[Console]:
    """True when progress goes out as :class:`PlainLines` on stderr: a console of the process's own output
    (stdout or stderr, as the CLI's; not a console a caller pointed at a file or buffer) that is not on a
    terminal (so no bar is drawn), and not ``-q``."""
    return (console is not None and _ENABLED.get() and not console.is_terminal
            and console.file in (sys.stdout, sys.stderr))


def stage_bar(console: Console | None) -> Progress:
    """A bar for a counted stage: done/total, %, rate per second, elapsed, ETA and an extra field."""
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
        TextColumn("{task.fields[rate]}/s"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        TextColumn("{task.fields[extra]}"),
        console=console, transient=False, disable=not shows_progress(console))


async def poll_progress(console: Console | None, description: str, total: int,
                        done: Callable[[], int], extra: Callable[[], str] = lambda: "",
                        every: float = 0.25, *, unit: str = "", failed: Callable[[], int] | None = None) -> None:
    """Draw a bar for ``done()`` of ``total`` until cancelled (run it as a task beside the work).

    Reads the counters only, so the workers need no hook; off a terminal (:func:`plain_progress`), plain
    lines on stderr instead: one at the start, one at most every :data:`PLAIN_EVERY` s and one when
    cancelled (``DESCRIPTION: N/TOTAL UNIT (P%), F failed, EXTRA, T elapsed``; ``failed()`` gives F). Nothing
    under ``-q`` or when ``total`` is 0.
    """
    if total <= 0:
        return
    if not shows_progress(console):
        if plain_progress(console):
            await _poll_plain(description, total, done, extra, every, unit, failed)
        return
    with stage_bar(console) as bar:
        task = bar.add_task(description, total=total, rate="-", extra="")
        try:
            while True:
                n = done()
                speed = bar.tasks[task].speed
                bar.update(task, completed=n, rate=f"{speed:.1f}" if speed else "-", extra=extra())
                await asyncio.sleep(every)
        except asyncio.CancelledError:
            bar.update(task, completed=done(), extra=extra())
            raise


async def _poll_plain(description: str, total: int, done: Callable[[], int], extra: Callable[[], str],
                      every: float, unit: str, failed: Callable[[], int] | None) -> None:
    lines = PlainLines(description, total, unit=unit)

    def say(force: bool) -> None:
        lines.say(done(), failed=failed() if failed is not None else None, extra=extra(), force=force)

    say(True)
    try:
        while True:
            await asyncio.sleep(min(every, PLAIN_EVERY))
            say(False)
    except asyncio.CancelledError:
        say(True)
        raise


@contextlib.contextmanager
def plain_stage(console: Console | None, text: str) -> Iterator[None]:
    """Off a terminal (:func:`plain_progress`): a plain line on stderr when an uncounted stage starts
    (``TEXT: started``) and one when it ends (``TEXT: done in 1.2 s``); nothing otherwise."""
    if not plain_progress(console):
        yield
        return
    label = "".join(ch if ch.isprintable() else "?" for ch in text.rstrip(". "))
    t0 = time.monotonic()
    try:
        print(f"{label}: started", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    yield
    try:
        print(f"{label}: done in {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


@contextlib.contextmanager
def stage_status(console: Console | None, text: str) -> Iterator[None]:
    """A spinner with the elapsed time for an uncounted stage (analysis, report); then one line saying
    how long it took. Off a terminal, :func:`plain_stage`'s lines on stderr; silent under ``-q``."""
    if not shows_progress(console):
        with plain_stage(console, text):
            yield
        return
    t0 = time.monotonic()
    with console.status(text):
        yield
    console.print(f"{text.rstrip('.')}: done in {time.monotonic() - t0:.1f} s")


class CountingTarget:
    """Wraps a target (the judge) and counts its ``generate`` calls, for the progress display."""

    def __init__(self, inner):
        self._inner = inner
        self.calls = 0

    async def generate(self, request):
        self.calls += 1
        return await self._inner.generate(request)

    def __getattr__(self, name):
        return getattr(self._inner, name)
