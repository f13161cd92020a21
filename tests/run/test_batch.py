"""``fairpair run --batch`` against the loopback Batch API (fairpair.testing._aio.serve_batch_api)."""

from __future__ import annotations

import json
import shutil

import pytest

from fairpair.battery import load_battery
from fairpair.errors import FairpairError
from fairpair.run import RunSettings, Store, execute_run
from fairpair.run._batch import custom_id, parse_custom_id
from fairpair.testing import names_table, openai_target, write_battery
from fairpair.testing._aio import BatchBehaviour, serve_batch_api
from run_helpers import rows

FAST = RunSettings(concurrency=4, timeout=10, max_attempts=2, backoff_initial=0.01, backoff_max=0.05)


def openai_block(server, **kw):
    return openai_target(server.base_url, **kw)


def test_custom_id_round_trip():
    assert parse_custom_id(custom_id("gpt:4o", "ab12")) == ("gpt:4o", "ab12")
    assert parse_custom_id("nocolon") is None and parse_custom_id(None) is None


def test_submit_then_poll_then_ingest_with_per_request_errors(tmp_path):
    with serve_batch_api(BatchBehaviour(polls_before_done=1, fail_every=7), names=names_table()) as (server, api):
        lb = load_battery(write_battery(tmp_path, openai_block(server, temperature=0.5), repetitions=2))  # 32
        run = tmp_path / "run"
        first = execute_run(lb, run, FAST, batch=True)
        assert first.batch.pending and len(first.batch.submitted) == 1
        assert first.batch.submitted[0]["requests"] == 32
        assert rows(run, "SELECT COUNT(*) FROM responses") == [(0,)]  # nothing answered yet, nothing sent
        # the input file: one line per case, the target's exact body, custom_id = target:case
        (inp,) = (run / "batches").glob("*.input.jsonl")
        lines = [json.loads(x) for x in inp.read_text().splitlines()]
        with Store.open(run, create=False) as store:
            ids = [c.id for c in store.iter_cases()]
        assert [ln["custom_id"] for ln in lines] == [f"openai:{i}" for i in ids]
        assert {ln["url"] for ln in lines} == {"/v1/chat/completions"} and {ln["method"] for ln in lines} == {"POST"}
        assert lines[0]["body"]["model"] == "mock-1" and lines[0]["body"]["temperature"] == 0.5
        assert lines[0]["body"]["messages"][-1]["role"] == "user"
        bid = first.batch.submitted[0]["batch_id"]
        assert first.manifest["batches"]["openai"][0]["batch_id"] == bid
        # second run: the batch is still in progress (one poll before done)
        second = execute_run(lb, run, FAST)
        assert second.batch.pending and second.batch.open[0]["status"] == "in_progress"
        # third run (maybe another machine: a copy of the run directory): ingested
        moved = tmp_path / "elsewhere"
        shutil.copytree(run, moved)
        third = execute_run(lb, moved, FAST)
        assert not third.batch.pending
        (ing,) = third.batch.ingested
    assert ing["answered"] == 28 and ing["failed"] == 4 and ing["skipped"] == 0  # lines 7, 14, 21, 28 failed
    ok = rows(moved, "SELECT case_id, text, model, system_fingerprint, prompt_tokens FROM responses WHERE status='ok'")
    failed = rows(moved, "SELECT case_id, error FROM responses WHERE status='failed'")
    assert len(ok) == 28 and all(t and m == "mock-1" and fp == "fp_mock" and pt for _, t, m, fp, pt in ok)
    assert {c for c, _ in failed} == {ids[k - 1] for k in (7, 14, 21, 28)}
    assert all(e.startswith("BatchError (HTTP 500): The server had an error") and bid in e for _, e in failed)
    assert sorted(api.executed.values()) == [1] * 28
    states = [s for (s,) in rows(moved, "SELECT status FROM batch_states WHERE batch_id=? ORDER BY id", (bid,))]
    assert states == ["validating", "in_progress", "completed", "ingested"]
    # recorded before the provider was asked (the intent), then superseded by the batch
    intent = [s for (s,) in rows(moved, "SELECT status FROM batch_states WHERE batch_id LIKE 'local-%' ORDER BY id")]
    assert intent == ["submitting", "superseded"]
    assert third.manifest["counts"]["openai"]["answered"] == 28
    assert third.manifest["batches"]["openai"][0]["status"] == "ingested"


def test_resubmit_only_failures_and_never_duplicate(tmp_path):
    with serve_batch_api(BatchBehaviour(fail_every=5)) as (server, api):
        lb = load_battery(write_battery(tmp_path, openai_block(server), repetitions=2))  # 32 cases
        run = tmp_path / "run"
        execute_run(lb, run, FAST, batch=True)
        execute_run(lb, run, FAST, batch=True)  # ingests the first, resubmits its 6 failures
        again = execute_run(lb, run, FAST)  # ingests the second (its lines 5: one fails again)
        execute_run(lb, run, FAST)  # nothing open: nothing done, nothing duplicated
    assert [b["requests"] for b in again.manifest["batches"]["openai"]] == [32, 6]
    ok = rows(run, "SELECT case_id, COUNT(*) FROM responses WHERE status='ok' GROUP BY case_id")
    assert len(ok) == 31 and {n for _, n in ok} == {1}
    assert rows(run, "SELECT COUNT(*) FROM responses WHERE status='failed'") == [(7,)]
    assert max(api.executed.values()) == 1  # no request was answered twice by the provider


def test_expired_batch_partial_results_and_dropped_lines_become_failures(tmp_path):
    with serve_batch_api(BatchBehaviour(expire_after=20, drop_every=9)) as (server, api):
        lb = load_battery(write_battery(tmp_path, openai_block(server), repetitions=2))  # 32
        run = tmp_path / "run"
        execute_run(lb, run, FAST, batch=True)
        out = execute_run(lb, run, FAST)
    (ing,) = out.batch.ingested
    assert ing["status"] == "expired"
    # lines 9, 18, 27 are dropped; 20 answered before expiry; 32 - 3 - 20 = 9 expired in the error file
    assert ing["answered"] == 20 and ing["failed"] == 12
    errors = [e for (e,) in rows(run, "SELECT error FROM responses WHERE status='failed'")]
    assert sum("batch_expired" in e for e in errors) == 9
    assert sum(e.startswith("BatchError: no answer in batch") and "expired" in e for e in errors) == 3


def test_ingest_is_one_transaction_and_a_rerun_after_a_crash_is_exact(tmp_path, monkeypatch):
    import fairpair.run._batch as batch_mod

    with serve_batch_api() as (server, api):
        lb = load_battery(write_battery(tmp_path, openai_block(server), repetitions=1))  # 16
        run = tmp_path / "run"
        execute_run(lb, run, FAST, batch=True)
        real = batch_mod.completion_of if hasattr(batch_mod, "completion_of") else None
        from fairpair.targets import openai as openai_mod

        calls = {"n": 0}
        original = openai_mod.completion_of

        def crash_on_tenth(body):
            calls["n"] += 1
            if calls["n"] == 10:
                raise KeyboardInterrupt
            return original(body)

        monkeypatch.setattr(openai_mod, "completion_of", crash_on_tenth)
        with pytest.raises(KeyboardInterrupt):
            execute_run(lb, run, FAST)
        assert rows(run, "SELECT COUNT(*) FROM responses") == [(0,)]  # rolled back: nothing half-read
        monkeypatch.setattr(openai_mod, "completion_of", original)
        out = execute_run(lb, run, FAST)
        assert real is None
    assert out.batch.ingested[0]["answered"] == 16
    assert rows(run, "SELECT COUNT(*), COUNT(DISTINCT case_id) FROM responses") == [(16, 16)]


def test_a_failed_batch_validation_fails_every_case(tmp_path, monkeypatch):
    import fairpair.testing._aio as aio

    monkeypatch.setattr(aio, "MAX_BATCH_REQUESTS", 10)
    with serve_batch_api() as (server, api):
        lb = load_battery(write_battery(tmp_path, openai_block(server), repetitions=1))  # 16
        run = tmp_path / "run"
        execute_run(lb, run, FAST, batch=True)
        out = execute_run(lb, run, FAST)
    assert out.batch.ingested[0]["status"] == "failed" and out.batch.ingested[0]["failed"] == 16
    with Store.open(run, create=False) as store:
        assert store.events("batch_failed")[0]["errors"]["data"][0]["code"] == "too_many_requests"


def test_files_are_split_at_the_request_limit(tmp_path):
    from fairpair.cases._expand import expand
    from fairpair.run._batch import batch_session
    from fairpair.run._runner import build_target

    with serve_batch_api() as (server, api):
        lb = load_battery(write_battery(tmp_path, openai_block(server), repetitions=2))  # 32
        run = tmp_path / "run"
        with Store.open(run) as store:
            store.add_cases(expand(lb))
            t = build_target("openai", lb.battery.target)
            s = batch_session(store, run, {"openai": t}, lambda: expand(lb), submit=True, max_requests=10)
            again = batch_session(store, run, {"openai": t}, lambda: expand(lb), submit=True, max_requests=10)
            assert [b["requests"] for b in s.submitted] == [10, 10, 10, 2]
            assert again.submitted == [] and len(again.ingested) == 4  # nothing sent twice
            assert store.counts("openai")["answered"] == 32


def test_batch_refuses_targets_without_a_batch_api_and_tools(tmp_path):
    lb = load_battery(write_battery(tmp_path / "m", {"kind": "mock"}))
    with pytest.raises(FairpairError, match="has no batch API"):
        execute_run(lb, tmp_path / "run", FAST, batch=True)
    with serve_batch_api() as (server, api):
        tools = load_battery(write_battery(tmp_path / "tools", openai_block(server), tools=True))
        with pytest.raises(FairpairError, match="tools"):
            execute_run(tools, tmp_path / "run3", FAST, batch=True)
        assert api.files == {}  # nothing was uploaded


def test_cli_batch_says_when_to_come_back_then_ingests_and_reports(tmp_path, capsys):
    from fairpair.cli import main

    with serve_batch_api(BatchBehaviour(fail_every=8), names=names_table()) as (server, api):
        battery = write_battery(tmp_path, openai_block(server), repetitions=1)
        args = ["run", str(battery), "--out", str(tmp_path / "run"), "--yes", "-q"]

        def cli(*extra):
            try:
                main([*args, *extra])
            except SystemExit as exc:
                assert not exc.code, capsys.readouterr()
            return capsys.readouterr().out

        first = cli("--batch")
        second = cli()
    assert "submitted 16 requests in 1 batch(es)" in first and "come back later" in first
    assert "fairpair run" in first and "report" not in first.lower().split("come back")[0]
    assert "14 answers stored, 2 failures stored" in second
    assert "14/16 answered, 2 failed" in second
    assert "2 case(s) have no answer" in second and "--batch` submits them again" in second
    assert (tmp_path / "run" / "report.html").exists() or any((tmp_path / "run").glob("report*"))


def test_a_kill_between_creating_the_batch_and_recording_it_sends_no_case_twice(tmp_path, monkeypatch):
    class Killed(BaseException):
        pass

    with serve_batch_api() as (server, api):
        lb = load_battery(write_battery(tmp_path, openai_block(server), repetitions=2))  # 32
        run = tmp_path / "run"
        real = Store.add_batch

        def killed(self, **kw):
            if not kw["batch_id"].startswith("local-"):  # the provider has the batch; the store not yet
                raise Killed
            return real(self, **kw)

        monkeypatch.setattr(Store, "add_batch", killed)
        with pytest.raises(Killed):
            execute_run(lb, run, FAST, batch=True)
        monkeypatch.setattr(Store, "add_batch", real)
        assert len(api.batches) == 1
        again = execute_run(lb, run, FAST, batch=True)  # adopts it: --batch sends nothing new
        assert len(api.batches) == 1 and again.batch.submitted == []
        assert again.batch.ingested[0]["answered"] == 32
    assert max(api.executed.values()) == 1
    assert rows(run, "SELECT COUNT(*), COUNT(DISTINCT case_id) FROM responses WHERE status='ok'") == [(32, 32)]
    with Store.open(run, create=False) as store:
        (ev,) = store.events("batch_recovered")
    assert ev["adopted"] == again.batch.ingested[0]["batch_id"]
