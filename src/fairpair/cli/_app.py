"""The typer application and the two consoles every command prints to."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

app = typer.Typer(
    name="fairpair",
    help="Counterfactual, paired audits of LLM chatbots for unequal treatment.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)


class _SafeConsole(Console):
    """A rich console whose ``print`` passes every ``str`` through :func:`fairpair._text.visible`
    first (markup stays markup): no control or escape character of a target's or an answer's text
    reaches the terminal raw, whichever command or stage prints it."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: A003 - rich's name
        from fairpair._text import visible

        super().print(*(visible(o) if isinstance(o, str) else o for o in objects), **kwargs)


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
