"""User-facing errors.

Every failure that fairpair understands (bad battery, bad labels file, a run
directory from another version, a target that cannot be reached before the run
starts) is raised as a :class:`FairpairError`. The command line prints its
message, without a traceback, and exits with code 2.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FairpairError", "BatteryError", "validation_summary"]


class FairpairError(Exception):
    """An error meant for the user: printed as one message, exit code 2.

    Parameters
    ----------
    message:
        What is wrong and, where possible, how to fix it.
    file, line, key:
        Where the problem is: the file path, its 1-based line number and the
        dotted key path inside the file (e.g. ``attributes.origin.groups``).
    hint:
        An optional extra line such as a "did you mean" suggestion.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.key = key
        self.hint = hint
        super().__init__(self.format())

    def format(self) -> str:
        """``file:line: [key] message`` and the hint on a second line; every part through
        :func:`fairpair._text.visible` (a message may quote what a target answered)."""
        from fairpair._text import visible

        where = ""
        if self.file:
            where = visible(self.file)
            if self.line:
                where += f":{self.line}"
            where += ": "
        key = f"[{visible(self.key)}] " if self.key else ""
        text = f"{where}{key}{visible(self.message)}"
        if self.hint:
            text += f"\n  {visible(self.hint)}"
        return text


class BatteryError(FairpairError):
    """A battery file that cannot be loaded or fails validation."""


def validation_summary(exc: Exception, *, first: int = 3) -> str:
    """A pydantic ``ValidationError`` in one line: its count and the ``first`` errors as
    ``key.path: message`` (other exceptions: ``str(exc)``)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    try:
        errs = errors()
    except Exception:  # noqa: BLE001
        return str(exc)
    parts = [f"{'.'.join(str(x) for x in e.get('loc', ())) or '(top)'}: {e.get('msg', '')}" for e in errs[:first]]
    more = f" (and {len(errs) - first} more)" if len(errs) > first else ""
    return f"{len(errs)} problem{'s' if len(errs) != 1 else ''}: " + "; ".join(parts) + more
