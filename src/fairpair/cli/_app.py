"""The typer application and the two consoles every command prints to."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

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
