"""Files written whole or not at all: a temporary file beside the target, renamed over it.

A write that fails half way (a full disk, a read-only folder, Ctrl-C) leaves the earlier file
as it was and no temporary file behind: :func:`atomic_path` removes its temporary file on any
error before re-raising (a full disk used to leave 0-byte ``.tmp`` files, issue 28).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "atomic_write_text"]


@contextlib.contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path (``.NAME.PID.tmp`` in ``path``'s folder) to write; on success it is
    renamed over ``path`` (``os.replace``: atomic on POSIX and Windows), on any error it is removed
    and the error re-raised."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def atomic_write_text(path: Path | str, text: str, *, errors: str = "strict") -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_path`."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", errors=errors)
