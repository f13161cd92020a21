"""Helpers of the tests that read a run directory: its store read straight with sqlite3 (not through
fairpair), and a loopback port where nothing listens."""

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
