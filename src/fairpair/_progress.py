"""A rich progress bar for runs: rate, ETA, tokens and errors."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, \
    TimeElapsedColumn, TimeRemainingColumn


class RunProgress:
    def __init__(self, console: Console | None = None, *, enabled: bool = True):
        self.enabled = enabled
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
            TextColumn("{task.fields[rate]}/s"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            TextColumn("tokens {task.fields[tokens]:,}"), TextColumn("[red]errors {task.fields[errors]}"),
            console=console, transient=False, disable=not enabled)
        self.task = None
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
