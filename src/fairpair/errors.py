"""User-facing errors.

Every failure that fairpair understands (bad battery, bad labels file, a run
directory from another version, a target that cannot be reached before the run
starts) is raised as a :class:`FairpairError`. The command line prints its
message, without a traceback, and exits with code 2.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FairpairError", "BatteryError"]


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
        where = ""
        if self.file:
            where = self.file
            if self.line:
                where += f":{self.line}"
            where += ": "
        key = f"[{self.key}] " if self.key else ""
        text = f"{where}{key}{self.message}"
        if self.hint:
            text += f"\n  {self.hint}"
        return text


class BatteryError(FairpairError):
    """A battery file that cannot be loaded or fails validation."""
