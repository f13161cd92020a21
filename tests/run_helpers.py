"""Helpers shared by the tests: a run directory's store read straight with sqlite3 (not through
fairpair), a loopback port where nothing listens, and the command line run in-process."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path


def rows(run_dir: Path, sql: str, args: tuple = ()) -> list[tuple]:
    """The rows of ``sql`` on ``run_dir/store.sqlite``, read with sqlite3 alone."""
    con = sqlite3.connect(Path(run_dir) / "store.sqlite")
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def refused_port() -> int:
    """A loopback port that was free a moment ago: nothing listens there, a connection is refused."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run_cli(argv, capsys, *, collapse: bool = True) -> tuple[int, str, str]:
    """``fairpair ARGV`` in-process: (exit code, stdout as printed, stderr with its whitespace collapsed
    to single spaces, so a message wrapped by rich reads as one line; as printed with ``collapse=False``).

    Only what this command prints is returned: what ``capsys`` held before is dropped. The exit code is
    the interpreter's: 0 when main returns or exits with None, 1 for a non-integer exit value."""
    from fairpair.cli import main

    capsys.readouterr()
    try:
        main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = capsys.readouterr()
    return code, out.out, " ".join(out.err.split()) if collapse else out.err
