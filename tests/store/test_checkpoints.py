"""``Store.checkpoints_in_background``: the run engine's commits seldom run a WAL checkpoint (and
its sync) themselves; a thread copies the WAL meanwhile, the WAL stays bounded under a steady
stream of commits, and nothing committed is lost."""

from __future__ import annotations

import dataclasses
import time

from fairpair.store import Store

PAGE = 4096
N = 3000  # answers in the stream


def _answer(store: Store, i: int) -> None:
    store.add_response(target="t", case_id=f"c{i}", status="ok", text="palabra " * 150, turns=[],
                       tool_calls=[], prompt_tokens=3, completion_tokens=150, latency_s=0.2,
                       finish_reason="stop", model="m", attempts=1)


def _autocheckpoint(store: Store) -> int:
    return store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]


def test_the_wal_stays_bounded_and_the_thread_copies_it(tmp_path):
    store = Store.open(tmp_path / "run")
    wal = tmp_path / "run" / "store.sqlite-wal"
    assert _autocheckpoint(store) == 1000  # SQLite's default, the store's everywhere else
    with store.checkpoints_in_background(interval=0.05, bound=2000) as count:
        assert _autocheckpoint(store) == 2000
        for i in range(N):  # about 14,000 WAL pages (4.7 an answer) in one steady stream
            _answer(store, i)
        deadline = time.monotonic() + 60  # the thread runs every 50 ms; generous for a loaded machine
        while count.runs < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        high_water = wal.stat().st_size
    assert count.runs >= 1
    assert dataclasses.astuple(count) == (count.runs,)  # what it counts is what is read (no unread field)
    assert _autocheckpoint(store) == 1000
    # the commits passing 2,000 pages restarted the WAL: the file never held the 14,000 pages of the
    # stream (the control below). The bound is soft: while the thread holds the checkpoint, the
    # committing connection's own checkpoint is refused (busy) and the WAL grows until a later commit
    # checkpoints; half the stream leaves room for that on a loaded machine.
    assert high_water < 7000 * PAGE
    assert len(list(store.responses("t"))) == N
    store.close()
    with Store.open(tmp_path / "run", readonly=True) as again:
        assert again.integrity_ok() and len(again.answered_ids("t")) == N


def test_without_checkpoints_the_same_writes_grow_the_wal(tmp_path):
    """The control for the test above: with automatic checkpoints off and no thread, the WAL
    holds every page written (so the bound above is the block's work)."""
    store = Store.open(tmp_path / "run")
    store.conn.execute("PRAGMA wal_autocheckpoint=0")
    for i in range(N):
        _answer(store, i)
    assert (tmp_path / "run" / "store.sqlite-wal").stat().st_size > 12_000 * PAGE
    store.close()


def test_a_read_only_store_runs_the_block_unchanged(tmp_path):
    Store.open(tmp_path / "run").close()
    with Store.open(tmp_path / "run", readonly=True) as store:
        with store.checkpoints_in_background() as count:
            assert list(store.responses("t")) == []
        assert count.runs == 0
