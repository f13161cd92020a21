"""The entry point ``fairpair = "fairpair.cli:main"``: runs the app and turns known errors into exit 2.

Every failure fairpair understands is a :class:`~fairpair.errors.FairpairError`:
printed as one message with file, line and key, exit code 2, no traceback.
Set ``FAIRPAIR_DEBUG=1`` to see tracebacks of unexpected errors.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.markup import escape

from fairpair.cli._app import app, current_run, err_console
from fairpair.errors import FairpairError


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning known errors into exit code 2 without a traceback."""
    try:
        code = app(args=argv, standalone_mode=False)
        if code == 130:  # typer's click returns 130 for Ctrl-C outside standalone mode
            _interrupted()
        if isinstance(code, int) and code:  # typer.Exit(n) is returned, not raised, outside standalone mode
            sys.exit(code)
    except FairpairError as exc:
        err_console.print(f"[red]error:[/red] {escape(exc.format())}", soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _interrupted()
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001
        clicks = _click_exceptions()
        if isinstance(exc, tuple(m.ClickException for m in clicks if hasattr(m, "ClickException"))):
            usage: Any = exc  # a ClickException of click's or of typer's copy: which one is known at run time
            usage.show()  # usage errors and bad option values: click's message, exit 2
            sys.exit(usage.exit_code)
        if isinstance(exc, tuple(m.Abort for m in clicks if hasattr(m, "Abort"))):
            if isinstance(exc.__cause__, KeyboardInterrupt):  # click turns Ctrl-C into Abort
                _interrupted()
            sys.exit(1)
        understood = _understood(exc)
        if understood is not None:  # e.g. a damaged store found mid-command: one message, exit 2
            err_console.print(f"[red]error:[/red] {escape(understood.format())}", soft_wrap=True)
            sys.exit(understood.exit_code)
        if os.environ.get("FAIRPAIR_DEBUG"):
            raise
        err_console.print(f"[red]internal error:[/red] {escape(type(exc).__name__)}: {escape(str(exc))}\n"
                          "  this is a bug in fairpair; rerun with FAIRPAIR_DEBUG=1 for the traceback")
        sys.exit(1)


def _interrupted() -> None:
    """Ctrl-C: say that nothing is lost and how to resume; exit 130 (128 + SIGINT)."""
    if current_run:
        err_console.print(f"interrupted: every answer stored so far is kept in {escape(str(current_run[-1]))}; "
                          f"run the same command again (with --out {escape(str(current_run[-1]))}) to resume",
                          soft_wrap=True)
    else:
        err_console.print("interrupted: everything stored so far is kept; run the same command again to resume")
    sys.exit(130)


def _understood(exc: BaseException) -> FairpairError | None:
    """An unexpected exception that fairpair nevertheless understands, as a FairpairError."""
    from fairpair.run import damaged_store_error

    return damaged_store_error(exc)


def _click_exceptions() -> list:
    """click's exception modules: click's own and the copy typer >= 0.20 vendors (``typer._click``)."""
    mods = []
    try:  # click itself is not a dependency: typer >= 0.20 vendors its own copy
        import click
    except ImportError:
        pass
    else:
        mods.append(click.exceptions)
    try:
        from typer import exceptions as typer_exceptions  # Abort, Exit
        from typer._click import exceptions as vendored
    except ImportError:
        pass
    else:
        mods += [vendored, typer_exceptions]
    return mods
