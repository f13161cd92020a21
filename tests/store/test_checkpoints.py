"""``Store.checkpoints_in_background``: the run engine's commits never run a WAL checkpoint (and
its sync) themselves; a thread does, so the WAL stays small, and nothing committed is lost."""

from __future__ import annotations

import time

from fairpair.store import Store


def _answer(store: Store, i: int) -> None:
    store.add_response(target="t", case_id=f"c{i}", status="ok", text="palabra " * 150, turns=[],
                       tool_calls=[], prompt_tokens=3, completion_tokens=150, latency_s=0.2,
                       finish_reason="stop", model="m", attempts=1)


def _autocheckpoint(store: Store) -> int:
    return store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]


def test_the_thread_checkpoints_and_the_commits_do_not(tmp_path):
    store = Store.open(tmp_path / "run")
    wal = tmp_path / "run" / "store.sqlite-wal"
    assert _autocheckpoint(store) == 1000  # SQLite's default, the store's everywhere else
    with store.checkpoints_in_background(interval=0.02):
        assert _autocheckpoint(store) == 0
        for i in range(3000):  # about 14,000 WAL pages (4.7 per answer) if nothing checkpointed
            _answer(store, i)
            if i % 100 == 99:
                time.sleep(0.03)  # let the checkpoint thread in between bursts, as network waits do
    assert _autocheckpoint(store) == 1000
    # the WAL was restarted after the thread's checkpoints: its file stays far below 14,000 pages
    assert wal.stat().st_size < 3000 * 4096
    assert len(list(store.responses("t"))) == 3000
    store.close()
    with Store.open(tmp_path / "run", readonly=True) as again:
        assert again.integrity_ok() and len(again.answered_ids("t")) == 3000


def test_without_the_thread_the_same_writes_grow_the_wal_unchecked(tmp_path):
    """The control for the test above: with automatic checkpoints off and no thread, the WAL
    holds every page written (so the bound above is the thread's work)."""
    store = Store.open(tmp_path / "run")
    store.conn.execute("PRAGMA wal_autocheckpoint=0")
    for i in range(3000):
        _answer(store, i)
    assert (tmp_path / "run" / "store.sqlite-wal").stat().st_size > 10_000 * 4096
    store.close()


def test_a_read_only_store_runs_the_block_unchanged(tmp_path):
    Store.open(tmp_path / "run").close()
    with Store.open(tmp_path / "run", readonly=True) as store:
        with store.checkpoints_in_background():
            assert list(store.responses("t")) == []
