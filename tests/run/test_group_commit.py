"""Answers committed in groups (``GroupCommit``): by size, by delay, at the end, never twice."""

from __future__ import annotations

import asyncio

import pytest

from fairpair.errors import FairpairError
from fairpair.run._engine import GroupCommit
from fairpair.store import Store


def _ok(writer, case_id: str) -> None:
    writer.add_response(target="t", case_id=case_id, status="ok", text=f"answer {case_id}")


def _stored(store: Store) -> list[str]:
    return sorted(r.case_id for r in store.responses("t"))


def test_rows_wait_for_the_delay_then_commit_together(tmp_path):
    store = Store.open(tmp_path / "run")

    async def go():
        w = GroupCommit(store, max_rows=64, max_delay=0.05)
        _ok(w, "a")
        _ok(w, "b")
        before = _stored(store)
        await asyncio.sleep(0.15)
        return before

    before = asyncio.run(go())
    assert before == []
    assert _stored(store) == ["a", "b"]


def test_a_full_group_commits_at_once(tmp_path):
    store = Store.open(tmp_path / "run")

    async def go():
        w = GroupCommit(store, max_rows=3, max_delay=60)
        for c in "abc":
            _ok(w, c)
        full = _stored(store)
        _ok(w, "d")
        after_one = _stored(store)
        w.flush()
        return full, after_one

    full, after_one = asyncio.run(go())
    assert full == ["a", "b", "c"]
    assert after_one == ["a", "b", "c"]
    assert _stored(store) == ["a", "b", "c", "d"]


def test_a_duplicate_ok_answer_is_refused_without_losing_the_group(tmp_path):
    store = Store.open(tmp_path / "run")
    store.add_response(target="t", case_id="a", status="ok", text="first")

    async def go():
        w = GroupCommit(store, max_rows=64, max_delay=60)
        _ok(w, "a")  # a second ok answer to "a": refused by the store's unique index
        _ok(w, "b")
        w.flush()

    asyncio.run(go())
    assert _stored(store) == ["a", "b"]
    assert store.answer("t", "a").text == "first"


def test_a_write_refused_in_the_timer_is_raised_to_the_sender(tmp_path, monkeypatch):
    store = Store.open(tmp_path / "run")

    def refuse(**_kw):
        raise FairpairError("cannot write the run store: the disk is full")

    async def go():
        w = GroupCommit(store, max_rows=64, max_delay=0.01)
        _ok(w, "a")
        monkeypatch.setattr(store, "add_response", refuse)
        await asyncio.sleep(0.05)  # the timer's flush fails here, in a loop callback
        with pytest.raises(FairpairError, match="disk is full"):
            _ok(w, "b")

    asyncio.run(go())
