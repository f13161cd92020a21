"""A rich progress bar for runs: rate, ETA, tokens and errors."""

from __future__ import annotations

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
           "CountingTarget"]


class RunProgress:
    def __init__(self, console: Console | None = None, *, enabled: bool = True):
        self.enabled = enabled
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
            TextColumn("{task.fields[rate]}/s"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            TextColumn("tokens {task.fields[tokens]:,}"), TextColumn("[red]errors {task.fields[errors]}"),
            console=console, transient=False, disable=not enabled)
        self.task: TaskID | None = None
        self.tokens = 0
        self.errors = 0

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        self.progress.__exit__(*exc)

    def start_target(self, name: str, *, total: int, todo: int) -> None:
        self.tokens = self.errors = 0
        self.task = self.progress.add_task(name, total=total, completed=total - todo, rate="-", tokens=0, errors=0)

    def case_done(self, case_id: str, completion, error) -> None:
        if self.task is None:
            return
        if error:
            self.errors += 1
        elif completion is not None:
            self.tokens += (completion.usage.completion_tokens or 0)
        t = self.progress.tasks[self.task]
        speed = t.speed
        self.progress.update(self.task, advance=1, tokens=self.tokens, errors=self.errors,
                             rate=f"{speed:.1f}" if speed else "-")

    def end_target(self, name: str) -> None:
        self.task = None


# ---------------------------------------------------------------- the later stages
import asyncio  # noqa: E402
import contextlib  # noqa: E402
import contextvars  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from typing import TypeGuard  # noqa: E402

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


def stage_bar(console: Console | None) -> Progress:
    """A bar for a counted stage: done/total, %, rate per second, elapsed, ETA and an extra field."""
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
        TextColumn("{task.fields[rate]}/s"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        TextColumn("{task.fields[extra]}"),
        console=console, transient=False, disable=not shows_progress(console))


async def poll_progress(console: Console | None, description: str, total: int,
                        done: Callable[[], int], extra: Callable[[], str] = lambda: "",
                        every: float = 0.25) -> None:
    """Draw a bar for ``done()`` of ``total`` until cancelled (run it as a task beside the work).

    Reads the counters only, so the workers need no hook; nothing is drawn when
    :func:`shows_progress` is False.
    """
    if not shows_progress(console) or total <= 0:
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


@contextlib.contextmanager
def stage_status(console: Console | None, text: str) -> Iterator[None]:
    """A spinner with the elapsed time for an uncounted stage (analysis, report); then one line saying
    how long it took. Silent under ``-q`` and off a terminal."""
    if not shows_progress(console):
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
