"""The typer application and the two consoles every command prints to."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, ConsoleDimensions

app = typer.Typer(
    name="fairpair",
    help="Counterfactual, paired audits of LLM chatbots for unequal treatment.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)


#: Columns of a console whose stream is not a terminal (``fairpair report RUN | less``, a file, CI logs)
#: when ``$COLUMNS`` is unset: rich's fallback, 80, wraps the tables into cells of a few words each.
#: A table wider than this is printed as wide as it needs (see ``_SafeConsole.print``).
PIPED_WIDTH = 160


class _SafeConsole(Console):
    """A rich console whose ``print`` passes every ``str`` through :func:`fairpair._text.visible`
    first (markup stays markup): no control or escape character of a target's or an answer's text
    reaches the terminal raw, whichever command or stage prints it.

    When its stream is not a terminal and neither ``$COLUMNS`` nor a width was given, it is at least
    :data:`PIPED_WIDTH` columns wide and a table is printed at its natural width, one line per row; on a
    terminal, or with ``COLUMNS=N``, rich's width stands."""

    def _piped(self) -> bool:
        """True when lines are not bounded by a terminal: the stream is not one, and no width was set
        (``width=``, ``console.width = N`` or ``$COLUMNS``, which rich reads)."""
        if self._width is not None or self._environ.get("COLUMNS", "").strip().isdigit():
            return False
        isatty = getattr(self.file, "isatty", None)
        try:
            return not (isatty is not None and isatty())
        except ValueError:  # a closed stream
            return True

    @property
    def size(self) -> ConsoleDimensions:
        size = Console.size.fget(self)  # type: ignore[attr-defined]
        if self._piped() and size.width < PIPED_WIDTH:
            return ConsoleDimensions(PIPED_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: A003 - rich's name
        from rich.table import Table

        from fairpair._text import visible

        objects = tuple(visible(o) if isinstance(o, str) else o for o in objects)
        widest = 0
        if self._piped() and "width" not in kwargs:
            from rich.measure import Measurement

            widest = max((Measurement.get(self, self.options.update_width(10_000), o).maximum
                          for o in objects if isinstance(o, Table)), default=0)
        if widest <= self.width:
            super().print(*objects, **kwargs)
            return
        self._width = widest  # a table wider than PIPED_WIDTH: as wide as it needs, this once
        try:
            super().print(*objects, **kwargs)
        finally:
            self._width = None


console = _SafeConsole(highlight=False)
err_console = _SafeConsole(stderr=True, highlight=False)

#: The run directory of the ``run`` command in progress (for the Ctrl-C resume hint).
current_run: list[Path] = []


def _version(value: bool) -> None:
    if value:
        from fairpair import __version__

        console.print(f"fairpair {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Counterfactual, paired audits of LLM chatbots for unequal treatment."""
