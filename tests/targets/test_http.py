"""The ``http`` target against small loopback JSON servers."""

from __future__ import annotations

import asyncio
import json

import pytest

from fairpair._plugins import PluginError, validate_options
from fairpair.battery import load_battery
from fairpair.errors import BatteryError, FairpairError
from fairpair.targets._base import ChatRequest, TargetError
from fairpair.targets.http import HTTPTarget
from fairpair.testing import Fault, serve_json, write_battery

CTX = {"crm": {"nombre": "Fátima", "pedidos": [{"id": 48213, "total": 89.0}]},
       "nota": "{{context}} ${HOME}"}  # looks like template text: must be sent literally


def ask(target, request):
    async def go():
        try:
            return await target.generate(request)
        finally:
            await target.aclose()

    return asyncio.run(go())


def req(**kw) -> ChatRequest:
    return ChatRequest(messages=({"role": "system", "content": "Sé amable."},
                                 {"role": "user", "content": "Hola, soy Fátima."}),
                       context=CTX, seed=99, case_id="abc123", **kw)


def echo(r):
    body = r.json()
    return 200, {"reply": {"text": f"recibido: {json.dumps(body, ensure_ascii=False)}"}, "echo": body,
                 "headers": r.headers,
                 "actions": [{"name": "transfer_to_human", "arguments": {"queue": "vip"}, "id": "a1"},
                             {"function": {"name": "issue_refund", "arguments": "{\"amount\": 89}"}}]}


def test_body_template_headers_reply_and_tool_paths(monkeypatch):
    monkeypatch.setenv("FP_BOT_TOKEN", "tok-31415926")
    body = {"session": "{{case_id}}", "seed": "{{seed}}", "history": "{{messages}}",
            "text": "{{last_user_message}}", "system": "{{ system_prompt }}",
            "customer": {"name": "{{context.crm.nombre}}", "first_order": "{{context.crm.pedidos.0.id}}"},
            "summary": "Cliente {{context.crm.nombre}} con pedidos {{context.crm.pedidos}}",
            "raw": "{{context.nota}}", "fixed": [1, True, None, "sin marcador"]}
    with serve_json(echo) as server:
        t = HTTPTarget({"url": server.url + "/api/chat", "headers": {"Authorization": "Bearer ${FP_BOT_TOKEN}"},
                        "body": body, "reply_path": "$.reply.text", "tool_calls_path": "$.actions"})
        c = ask(t, req())
        got = server.received[0]
    sent = got.json()
    assert got.method == "POST" and got.path == "/api/chat"
    assert got.headers["authorization"] == "Bearer tok-31415926"
    assert sent["session"] == "abc123" and sent["seed"] == 99
    assert sent["history"] == [{"role": "system", "content": "Sé amable."},
                               {"role": "user", "content": "Hola, soy Fátima."}]
    assert sent["text"] == "Hola, soy Fátima." and sent["system"] == "Sé amable."
    assert sent["customer"] == {"name": "Fátima", "first_order": 48213}
    assert sent["summary"] == 'Cliente Fátima con pedidos [{"id": 48213, "total": 89.0}]'
    assert sent["raw"] == "{{context}} ${HOME}"  # case values are data, never template
    assert sent["fixed"] == [1, True, None, "sin marcador"]
    assert c.text.startswith("recibido: {")
    assert [(tc.name, tc.arguments, tc.id) for tc in c.tool_calls] == [
        ("transfer_to_human", {"queue": "vip"}, "a1"), ("issue_refund", {"amount": 89}, None)]
    ident = json.dumps(t.identity())
    assert "tok-31415926" not in ident and "FP_BOT_TOKEN" in ident


def test_default_body_and_put():
    with serve_json(echo) as server:
        c = ask(HTTPTarget({"url": server.url, "method": "put", "reply_path": "$.echo.context.crm.nombre"}), req())
        assert server.received[0].method == "PUT"
    assert c.text == "Fátima"


@pytest.mark.parametrize("path", ["$.reply.[", "$..[?(@.x ==", "reply..text]"])
def test_malformed_jsonpath_is_a_battery_error(path, tmp_path):
    with pytest.raises(PluginError, match="reply_path is not a valid JSONPath"):
        validate_options("fairpair.targets", "http", {"url": "http://x", "reply_path": path})
    battery = write_battery(tmp_path, {"kind": "http", "url": "http://127.0.0.1:9/x", "reply_path": path})
    with pytest.raises(BatteryError) as ei:
        load_battery(battery)
    assert ei.value.key == "target.reply_path"


def test_unknown_placeholder_and_bad_url():
    with pytest.raises(PluginError, match=r"unknown placeholder '\{\{mesages\}\}'"):
        validate_options("fairpair.targets", "http", {"url": "http://x", "reply_path": "$.a",
                                                      "body": {"m": "{{mesages}}"}})
    with pytest.raises(PluginError, match="url must start with http"):
        validate_options("fairpair.targets", "http", {"url": "ftp://x", "reply_path": "$.a"})


def test_missing_header_env_fails_at_build(monkeypatch):
    monkeypatch.delenv("FP_NOT_SET", raising=False)
    with pytest.raises(FairpairError, match="environment variable FP_NOT_SET is not set"):
        HTTPTarget({"url": "http://x", "reply_path": "$.a", "headers": {"X-Key": "${FP_NOT_SET}"}})


def test_statuses_map_to_target_errors(monkeypatch):
    monkeypatch.setenv("FP_HDR_SECRET", "hdr-secret-2718")

    def handler(r):
        kind = r.json()["kind"]
        if kind == "401":  # a server that echoes the credentials it got
            return 401, {"error": f"bad token {r.headers.get('x-key')}"}
        return int(kind), {"error": {"message": f"status {kind}"}}

    results = {}
    with serve_json(handler) as server:
        for kind in ("400", "401", "429", "503"):
            t = HTTPTarget({"url": server.url, "reply_path": "$.a", "body": {"kind": kind},
                            "headers": {"X-Key": "${FP_HDR_SECRET}"}})
            with pytest.raises(TargetError) as ei:
                ask(t, req())
            results[kind] = ei.value
    assert not results["400"].retryable and "answered 400: status 400" in str(results["400"])
    assert not results["401"].retryable
    assert "authentication failed (check the headers' environment variables FP_HDR_SECRET)" in str(results["401"])
    assert "hdr-secret-2718" not in str(results["401"])
    assert results["429"].retryable and results["503"].retryable and results["503"].status == 503


def test_retry_after_and_broken_bodies():
    with serve_json(echo, faults=[Fault("429", retry_after=4)]) as server:
        with pytest.raises(TargetError) as ei:
            ask(HTTPTarget({"url": server.url, "reply_path": "$.reply.text"}), req())
    assert ei.value.retryable and ei.value.retry_after == 4.0
    with serve_json(echo, faults=[Fault("not_json")]) as server:
        with pytest.raises(TargetError, match="not JSON") as ei:
            ask(HTTPTarget({"url": server.url, "reply_path": "$.reply.text"}), req())
    assert ei.value.retryable


def test_reply_path_without_match_and_missing_context():
    with serve_json(lambda r: (200, {"answer": "hola"})) as server:
        with pytest.raises(TargetError, match=r"reply_path \$.reply.text matched nothing") as ei:
            ask(HTTPTarget({"url": server.url, "reply_path": "$.reply.text"}), req())
        assert not ei.value.retryable
        with pytest.raises(TargetError, match=r"\{\{context.crm.email\}\}: the case has no such context field"):
            ask(HTTPTarget({"url": server.url, "reply_path": "$.answer",
                            "body": {"e": "{{context.crm.email}}"}}), req())
        assert server.n_requests == 1  # the second case failed before sending anything
