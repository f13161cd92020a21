"""Single calls through provider batches (fairpair.run._batchcalls): the judge's calls (``measure --batch``),
multi-turn cases, and the ``anthropic`` target, against the loopback OpenAI Batch API and Anthropic Message
Batches (fairpair.testing._aio)."""

from __future__ import annotations

import json

import pytest

from fairpair.battery import load_battery
from fairpair.errors import FairpairError
from fairpair.measures import measure_run
from fairpair.run import RunSettings, Store, execute_run, run_status
from fairpair.testing import names_table, openai_target
from fairpair.testing._aio import BatchBehaviour, serve_anthropic_api, serve_batch_api
from run_helpers import rows

FAST = RunSettings(concurrency=4, timeout=10, max_attempts=2, backoff_initial=0.01, backoff_max=0.05)
MEASURES = {"tono": {"kind": "judge"}, "hhh": {"kind": "pairwise", "against": "baseline"},
            "palabras": {"kind": "word_count"}}


class Killed(BaseException):
    """Stands for the process being killed."""


def anthropic_block(server, model: str = "mock-1") -> dict:
    return {"kind": "anthropic", "base_url": server.base_url.removesuffix("/v1"), "model": model,
            "api_key_env": "FAKE_ANTHROPIC_KEY", "max_tokens": 200}


def write(tmp_path, target: dict, judge: dict | None = None, *, turns: int = 1, measures=MEASURES, **extra):
    """A counterfactual battery with a baseline: 2 templates x (4 names + 1 baseline) = 10 cases."""
    tpl = [{"id": f"t{i}", "system": "Eres el asistente de una tienda online.",
            "turns": [f"Hola, soy {{nombre}}. Mi pedido {48210 + i} llegó roto."] +
            ["¿Y cuándo llega el nuevo?"] * (turns - 1)} for i in range(2)]
    b = {"schema_version": 1, "name": "batchcalls", "language": "es", "seed": 5, "repetitions": 1,
         "attributes": {"origen": {"signal": "name", "slot": "nombre", "neutral": "un cliente", "groups": {
             "espana": {"variants": ["Lucía", "Carmen"]}, "magreb": {"variants": ["Fátima", "Aicha"]}}}},
         "templates": tpl, "designs": [{"kind": "counterfactual", "attribute": "origen"}, {"kind": "baseline"}],
         "target": target, "measures": measures, "judge_self_test": "off", **extra}
    if judge is not None:
        b["judge"] = judge
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "battery.yaml"
    path.write_text(json.dumps(b, ensure_ascii=False), encoding="utf-8")
    return load_battery(path)


def answered_run(tmp_path, target: dict, judge: dict, measures=None):
    """A run of :func:`write`'s battery whose 10 answers came through one batch (tone judge only by default)."""
    lb = write(tmp_path, target, judge, measures=measures or {"tono": {"kind": "judge"}})
    run = tmp_path / "run"
    execute_run(lb, run, FAST, batch=True)
    execute_run(lb, run, FAST)
    return run


def measured(run) -> list[tuple]:
    return rows(run, "SELECT target, case_id, measure, status, value FROM measurements ORDER BY id")


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", "sk-ant-loopback-0000")


@pytest.fixture(params=["openai", "anthropic"])
def provider(request):
    """``(serve, target block, judge block)`` of one batch format."""
    if request.param == "openai":
        return request.param, serve_batch_api, lambda s: openai_target(s.base_url), \
            lambda s: openai_target(s.base_url, model="judge-1")
    return request.param, serve_anthropic_api, anthropic_block, lambda s: anthropic_block(s, "judge-1")


def test_answers_then_judge_both_orders_through_batches_and_a_rerun_adds_nothing(tmp_path, provider):
    fmt, serve, target, judge = provider
    with serve(BatchBehaviour(polls_before_done=1), names=names_table()) as (server, api):
        lb = write(tmp_path, target(server), judge(server))
        run = tmp_path / "run"
        first = execute_run(lb, run, FAST, batch=True)
        assert first.batch.pending
        execute_run(lb, run, FAST)  # in progress
        execute_run(lb, run, FAST)  # ingested: 10 answers
        assert rows(run, "SELECT COUNT(*) FROM responses WHERE status='ok'") == [(10,)]
        m1 = measure_run(run, settings=FAST)  # `run --batch` carries to the judge: its calls go in one batch
        assert m1.counts["tono"].waiting == 10 and m1.counts["hhh"].waiting == 8
        # 10 tone calls and 8 x 2 pairwise calls (both orders), each distinct request once: the masked
        # prompts of two members of a matched set with the same answer are one request
        (sub,) = m1.batch.submitted
        lines = [json.loads(x) for x in (run / "batches" / sub["input_file"]).read_text().splitlines()]
        bodies = [json.dumps(x.get("body") or x.get("params"), sort_keys=True) for x in lines]
        assert sub["requests"] == len(lines) == len(set(bodies)) and 16 <= len(lines) <= 26
        pair = [b for b in bodies if "Respuesta A" in b]
        assert len(pair) >= 8 and len(pair) % 2 == 0  # both orders of every pair
        assert {r[2] for r in measured(run)} == {"palabras"}  # the judge's rows wait; word counts are stored
        m2 = measure_run(run, settings=FAST)  # still in progress
        assert m2.batch.pending and not m2.batch.submitted
        m3 = measure_run(run, settings=FAST)  # ingested and measured
        assert not m3.batch.pending and m3.batch.ingested[0]["answered"] == sub["requests"]
        assert m3.counts["tono"].ok == 10 and m3.counts["hhh"].ok == 8
        done = measured(run)
        m4 = measure_run(run, settings=FAST)
        assert measured(run) == done and not m4.batch.submitted  # nothing twice
        assert max(api.executed.values()) == 1
    manifest = json.loads((run / "manifest.json").read_text())
    assert [(b["requests"], b["status"]) for b in manifest["measurement"]["judge_batches"]] == \
        [(sub["requests"], "ingested")]
    with Store.open(run, create=False) as s:
        hhh = list(s.measurements("hhh"))
        # the scripted judge prefers answer A in both orders: AB gives the answer 1, BA gives it 0
        assert {m.value for m in hhh} == {0.5} and all(set(m.detail["orders"]) == {"AB", "BA"} for m in hhh)
        assert {m.value for m in s.measurements("tono.courtesy")} == {4}
        stages = [b["stage"] for b in s.batches(stage=None) if b["status"] != "superseded"]
    assert stages.count("measure") == 1 and stages.count("run" if fmt == "openai" else "turns") == 1


def test_per_request_errors_are_failed_measurements_and_only_batch_resends_them(tmp_path):
    with serve_batch_api(BatchBehaviour(), names=names_table()) as (server, api):
        run = answered_run(tmp_path, openai_target(server.base_url), openai_target(server.base_url, model="judge-1"))
        api.behaviour.fail_every = 4  # the judge's lines 4 and 8 fail
        measure_run(run, settings=FAST, batch=True)
        res = measure_run(run, settings=FAST)
        assert res.counts["tono"].ok == 8 and res.counts["tono"].failed == 2
        failed = rows(run, "SELECT DISTINCT case_id, error FROM measurements WHERE status='failed'")
        assert len(failed) == 2 and all("BatchError (HTTP 500)" in e for _, e in failed)
        again = measure_run(run, settings=FAST)  # without --batch the failures wait
        assert not again.batch.submitted and again.counts["tono"].waiting == 2
        api.behaviour.fail_every = 0
        resent = measure_run(run, settings=FAST, batch=True)
        assert [b["requests"] for b in resent.batch.submitted] == [2]
        final = measure_run(run, settings=FAST)
    assert final.counts["tono"].ok == 2
    assert rows(run, "SELECT COUNT(*) FROM measurements WHERE status='ok' AND measure='tono.courtesy'") == [(10,)]


def test_expired_batch_and_dropped_lines_become_failures(tmp_path, provider):
    fmt, serve, target, judge = provider
    with serve(BatchBehaviour(), names=names_table()) as (server, api):
        run = answered_run(tmp_path, target(server), judge(server))
        api.behaviour.expire_after, api.behaviour.drop_every = 6, 4
        n = measure_run(run, settings=FAST, batch=True).batch.submitted[0]["requests"]
        res = measure_run(run, settings=FAST)
    (ing,) = res.batch.ingested
    # lines 4 and 8 dropped (no line in any file), 6 answered before expiry, the rest expired
    assert n >= 8 and ing["status"] in ("expired", "ended") and ing["answered"] == 6 and ing["failed"] == n - 6
    errors = [e for (e,) in rows(run, "SELECT error FROM batch_calls WHERE status='failed'")]
    assert len(errors) == n - 6 and sum("no answer in batch" in e for e in errors) == 2
    assert all("xpired" in e for e in errors if "no answer" not in e)
    stored = {e for (e,) in rows(run, "SELECT error FROM measurements WHERE status='failed'")}
    assert stored == {f"TargetError: {e}" for e in errors}  # each call's error is its measurement's
    assert res.counts["tono"].ok + res.counts["tono"].failed == 10


def test_a_kill_between_submission_and_recording_submits_nothing_twice(tmp_path, provider, monkeypatch):
    fmt, serve, target, judge = provider
    with serve(BatchBehaviour(), names=names_table()) as (server, api):
        run = answered_run(tmp_path, target(server), judge(server))
        real = Store.add_batch

        def killed(self, **kw):
            if kw.get("stage") == "measure" and not kw["batch_id"].startswith("local-"):
                raise Killed
            return real(self, **kw)

        monkeypatch.setattr(Store, "add_batch", killed)
        with pytest.raises(Killed):
            measure_run(run, settings=FAST, batch=True)
        monkeypatch.setattr(Store, "add_batch", real)
        n_before = len(api.batches)
        assert "submitted, not yet recorded" in " ".join(run_status(run).batches_waiting)
        res = measure_run(run, settings=FAST)  # adopts the batch the provider accepted
        (ing,) = res.batch.ingested
        assert len(api.batches) == n_before and not res.batch.submitted and ing["answered"] >= 8
        assert res.counts["tono"].ok == 10
        with Store.open(run, create=False) as s:
            assert [e["adopted"] for e in s.events("batch_recovered")] == [ing["batch_id"]]
    assert max(api.executed.values()) == 1
    assert rows(run, "SELECT COUNT(*), COUNT(DISTINCT case_id) FROM measurements WHERE measure='tono.courtesy'") \
        == [(10, 10)]


def test_an_answer_given_twice_is_stored_once_and_reported(tmp_path, provider):
    fmt, serve, target, judge = provider
    with serve(BatchBehaviour(), names=names_table()) as (server, api):
        run = answered_run(tmp_path, target(server), judge(server))
        api.behaviour.duplicate_every = 3
        measure_run(run, settings=FAST, batch=True)
        res = measure_run(run, settings=FAST)
    assert res.batch.ingested[0]["duplicates"] == 3 and res.counts["tono"].ok == 10
    assert any("3 duplicate answers reported" in line for line in res.batch.lines())
    with Store.open(run, create=False) as s:
        assert s.events("batch_duplicate_answers")[0]["count"] == 3
    n, bid = res.batch.ingested[0]["answered"], res.batch.ingested[0]["batch_id"]
    assert n >= 8 and rows(run, "SELECT COUNT(*), COUNT(DISTINCT key) FROM batch_calls WHERE status='ok'"
                                " AND batch_id=?", (bid,)) == [(n, n)]


def test_multi_turn_cases_go_turn_by_turn_and_status_shows_the_wait(tmp_path, provider):
    fmt, serve, target, judge = provider
    with serve(BatchBehaviour(), names=names_table()) as (server, api):
        lb = write(tmp_path, target(server), turns=3, measures={"palabras": {"kind": "word_count"}})
        run = tmp_path / "run"
        sizes = []
        out = execute_run(lb, run, FAST, batch=True)
        sizes.append([b["requests"] for b in out.batch.submitted])
        st = run_status(run)
        assert st.batches_waiting and "one turn of each multi-turn case" in st.batches_waiting[0]
        for _ in range(3):
            out = execute_run(lb, run, FAST)
            sizes.append([b["requests"] for b in out.batch.submitted])
    assert sizes == [[10], [10], [10], []]  # turn 1, 2, 3 of every case, each in one batch
    ok = rows(run, "SELECT turns, text FROM responses WHERE status='ok'")
    assert len(ok) == 10 and all(len(json.loads(t)) == 2 and x for t, x in ok)
    assert not run_status(run).batches_waiting


def test_token_probabilities_go_only_where_the_batch_returns_them(tmp_path):
    yes_no = {"tono": {"kind": "judge", "scoring": "yes_no", "mode": "per_dimension"}}
    with serve_anthropic_api(names=names_table()) as (server, api):
        run = answered_run(tmp_path / "a", anthropic_block(server), anthropic_block(server, "judge-1"), yes_no)
        with pytest.raises(FairpairError, match="cannot return token probabilities"):
            measure_run(run, settings=FAST, batch=True)
        assert not any(b.startswith("msgbatch") and api.requests[b][0]["params"]["model"] == "judge-1"
                       for b in api.batches)
    with serve_batch_api(names=names_table()) as (server, api):
        run = answered_run(tmp_path / "o", openai_target(server.base_url),
                           openai_target(server.base_url, model="judge-1"), yes_no)
        measure_run(run, settings=FAST, batch=True)
        res = measure_run(run, settings=FAST)
    assert res.counts["tono"].ok == 10
    with Store.open(run, create=False) as s:
        assert all(0 < m.detail["p_yes"]["courtesy"] < 1 for m in s.measurements("tono.courtesy"))


def test_anthropic_target_live_and_refusals(tmp_path):
    import asyncio

    from fairpair.targets import ChatRequest
    from fairpair.targets.anthropic import AnthropicTarget

    with serve_anthropic_api(names=names_table()) as (server, api):
        block = anthropic_block(server)
        block.pop("kind")
        t = AnthropicTarget(block, name="claude")
        req = ChatRequest(messages=({"role": "system", "content": "Eres un asistente."},
                                    {"role": "user", "content": "Hola, soy Fátima. Mi pedido llegó roto."}), seed=3)

        async def go():
            try:
                return await t.generate(req)
            finally:
                await t.aclose()

        c = asyncio.run(go())
        assert c.text and c.model == "mock-1" and c.usage.prompt_tokens and c.finish_reason == "stop"
        assert api.live == 1
        with pytest.raises(FairpairError, match="cannot run cases with tools"):
            t.batch_api().body(ChatRequest(messages=req.messages, tools=({"type": "function", "function": {
                "name": "issue_refund", "parameters": {"type": "object"}}},)))
    with pytest.raises(FairpairError, match="FAKE_UNSET_KEY is not set"):
        AnthropicTarget({"model": "m", "api_key_env": "FAKE_UNSET_KEY"}, name="claude")


def test_measure_batch_refuses_a_judge_without_a_batch_api(tmp_path):
    lb = write(tmp_path, {"kind": "mock"}, {"kind": "python", "callable": "fairpair.testing:judge_reply"})
    run = tmp_path / "run"
    execute_run(lb, run, FAST)
    with pytest.raises(FairpairError, match="has no batch API"):
        measure_run(run, settings=FAST, batch=True)


def test_llm_extract_goes_through_the_judge_batch(tmp_path):
    extract = {"decision": {"kind": "llm_extract", "instructions": "¿Qué cortesía muestra la respuesta?",
                            "schema": {"type": "object", "properties": {"courtesy": {"type": "integer"}},
                                       "required": ["courtesy"]}}}
    with serve_batch_api(names=names_table()) as (server, api):
        run = answered_run(tmp_path, openai_target(server.base_url), openai_target(server.base_url, model="judge-1"),
                           extract)
        first = measure_run(run, settings=FAST, batch=True)
        assert first.counts["decision"].waiting == 10 and first.batch.submitted
        res = measure_run(run, settings=FAST)
    assert res.counts["decision"].ok == 10
    # the scripted judge answers {"courtesy": 4, ...}: the extracted field of every answer
    assert rows(run, "SELECT DISTINCT value FROM measurements WHERE measure='decision.courtesy'") == [("4",)]


def test_anthropic_translates_system_tools_and_tool_turns_both_ways():
    from fairpair.targets.anthropic import AnthropicOptions, message_params, openai_body

    tools = ({"type": "function", "function": {"name": "issue_refund", "description": "Refund an order",
                                               "parameters": {"type": "object"}}},)
    messages = [{"role": "system", "content": "Eres un asistente."}, {"role": "user", "content": "Hola"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "issue_refund", "arguments": "{\"x\": 1}"}}]},
                {"role": "tool", "tool_call_id": "t1", "content": "{\"ok\": true}"}]
    params = message_params(AnthropicOptions(model="m", max_tokens=50, temperature=0.5), messages, tools)
    assert params == {
        "model": "m", "max_tokens": 50, "temperature": 0.5, "system": "Eres un asistente.",
        "tools": [{"name": "issue_refund", "description": "Refund an order", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "Hola"},
                     {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "issue_refund",
                                                        "input": {"x": 1}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                   "content": "{\"ok\": true}"}]}]}
    body = openai_body({"model": "m", "stop_reason": "tool_use", "usage": {"input_tokens": 7, "output_tokens": 3},
                        "content": [{"type": "text", "text": "Un momento."},
                                    {"type": "tool_use", "id": "t2", "name": "issue_refund", "input": {}}]})
    assert body["choices"][0] == {"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "Un momento.", "tool_calls": [
            {"id": "t2", "type": "function", "function": {"name": "issue_refund", "arguments": "{}"}}]}}
    assert body["usage"] == {"prompt_tokens": 7, "completion_tokens": 3}


def test_cli_measure_batch_says_when_to_come_back_then_stores(tmp_path, capsys):
    from fairpair.cli import main

    def cli(*argv):
        try:
            main(list(argv))
        except SystemExit as exc:
            assert not exc.code, capsys.readouterr()
        return capsys.readouterr().out

    with serve_batch_api(names=names_table()) as (server, api):
        run = answered_run(tmp_path, openai_target(server.base_url), openai_target(server.base_url, model="judge-1"))
        first = cli("measure", str(run), "--batch", "-q")
        second = cli("measure", str(run), "-q")
    assert "submitted" in first and "come back later" in first and f"fairpair measure {run}" in first
    assert "answers stored, 0 failures stored" in second and "come back" not in second
    assert rows(run, "SELECT COUNT(*) FROM measurements WHERE measure='tono.courtesy' AND status='ok'") == [(10,)]


def test_a_target_with_its_own_system_prompt_sends_it_in_the_batch(tmp_path, provider):
    fmt, serve, target, judge = provider
    with serve(BatchBehaviour(), names=names_table()) as (server, api):
        lb = write(tmp_path, {**target(server), "system": "Eres el bot de la tienda. Sé breve."},
                   measures={"palabras": {"kind": "word_count"}})
        run = tmp_path / "run"
        out = execute_run(lb, run, FAST, batch=True)
        execute_run(lb, run, FAST)
    (sub,) = out.batch.submitted
    lines = [json.loads(x) for x in (run / "batches" / sub["input_file"]).read_text().splitlines()]
    systems = {x["body"]["messages"][0]["content"] if fmt == "openai" else x["params"]["system"] for x in lines}
    assert systems == {"Eres el bot de la tienda. Sé breve."} and len(lines) == 10
    assert rows(run, "SELECT COUNT(*) FROM responses WHERE status='ok'") == [(10,)]
