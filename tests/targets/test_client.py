"""The aiohttp client of the ``openai`` and ``http`` targets: keep-alive, proxies and TLS from the environment."""

from __future__ import annotations

import asyncio
import gc
import shutil
import ssl
import subprocess
import warnings

import pytest
from aiohttp import web

from fairpair.targets import ChatRequest, _client
from fairpair.targets.http import HTTPTarget
from fairpair.targets.openai import OpenAITarget
from fairpair.testing import serve_json, serve_openai

REQ = ChatRequest(messages=({"role": "user", "content": "Hola, soy Lucía."},), seed=3)


def test_connections_are_kept_alive_and_reused():
    with serve_openai(latency=0.02) as server:
        t = OpenAITarget({"model": "mock-1", "base_url": server.base_url, "api_key_env": None})

        async def go():
            for _ in range(10):  # one after another: one connection
                await t.generate(REQ)
            await asyncio.gather(*(t.generate(REQ) for _ in range(8)))  # 8 at once: at most 8
            await asyncio.gather(*(t.generate(REQ) for _ in range(8)))  # again: the same 8
            await t.aclose()

        asyncio.run(go())
        assert server.n_requests == 26
        assert server.connections <= 8


def test_a_target_used_under_several_event_loops_leaves_no_unclosed_session():
    # the run engine answers in one asyncio.run and closes the target in another
    with serve_openai() as server:
        t = OpenAITarget({"model": "mock-1", "base_url": server.base_url, "api_key_env": None})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert asyncio.run(t.generate(REQ)).text
            assert asyncio.run(t.generate(REQ)).text
            asyncio.run(t.aclose())
            gc.collect()
    assert not [w for w in caught if "Unclosed" in str(w.message)]
    assert t._pool._sessions == {}


def test_the_first_requests_sent_together_read_the_route_once_without_a_thread_hop(monkeypatch):
    # the run engine's first wave: 64 requests at once; one read of proxies/netrc for the origin, on the
    # loop (a thread hop each cost ~50 ms of the first wave at 64 in flight), the answers all correct
    calls, hops = [], []
    real_route, real_to_thread = _client._env_route, asyncio.to_thread
    monkeypatch.setattr(_client, "_env_route", lambda url: calls.append(str(url)) or real_route(url))
    monkeypatch.setattr(asyncio, "to_thread", lambda fn, *a, **k: hops.append(fn) or real_to_thread(fn, *a, **k))
    with serve_openai(latency=0.05) as server:
        t = OpenAITarget({"model": "mock-1", "base_url": server.base_url, "api_key_env": None})

        async def go():
            try:
                return await asyncio.gather(*(t.generate(REQ) for _ in range(64)))
            finally:
                await t.aclose()

        answers = asyncio.run(go())
        assert server.n_requests == 64
    assert len(answers) == 64 and all(a.text for a in answers)
    assert calls == [server.base_url + "/chat/completions"]
    assert hops == []


def test_proxies_come_from_the_environment(monkeypatch):
    def proxy(r):  # a forward proxy receives the absolute URL
        return 200, {"reply": {"text": f"via proxy {r.method} {r.path}"}}

    with serve_json(proxy) as server:
        monkeypatch.setenv("HTTP_PROXY", server.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        t = HTTPTarget({"url": "http://bot.example.invalid/api/chat", "reply_path": "$.reply.text"})

        async def go():
            try:
                return await t.generate(REQ)
            finally:
                await t.aclose()

        assert asyncio.run(go()).text == "via proxy POST http://bot.example.invalid/api/chat"
        monkeypatch.setenv("NO_PROXY", "bot.example.invalid")  # ... and NO_PROXY is honoured
        t = HTTPTarget({"url": "http://bot.example.invalid/api/chat", "reply_path": "$.reply.text",
                        "timeout": 5})
        err = None
        try:
            asyncio.run(go())
        except Exception as exc:  # noqa: BLE001 - the name does not resolve without the proxy
            err = exc
        assert err is not None and "connection error" in str(err)


def test_netrc_credentials_for_a_host_without_authorization(tmp_path, monkeypatch):
    (tmp_path / "netrc").write_text("machine 127.0.0.1 login bot password s3cret-netrc\n", encoding="ascii")
    (tmp_path / "netrc").chmod(0o600)
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    monkeypatch.setenv("FP_MINE", "mine")
    with serve_json(lambda r: (200, {"a": r.headers.get("authorization", "none")})) as server:
        async def go(t):
            try:
                return (await t.generate(REQ)).text
            finally:
                await t.aclose()

        plain = asyncio.run(go(HTTPTarget({"url": server.url, "reply_path": "$.a"})))
        own = asyncio.run(go(HTTPTarget({"url": server.url, "reply_path": "$.a",
                                         "headers": {"Authorization": "Bearer ${FP_MINE}"}})))
    assert plain == "Basic Ym90OnMzY3JldC1uZXRyYw=="  # base64 of bot:s3cret-netrc
    assert own == "Bearer mine"  # a header of the battery's own wins


def test_tls_trusts_certifi_or_ssl_cert_file(tmp_path, monkeypatch):
    import certifi

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    _client._ssl_context.cache_clear()
    try:
        ctx = _client._ssl_context()
        assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
        assert len(ctx.get_ca_certs()) > 50  # certifi's bundle
        bundle = open(certifi.where(), encoding="ascii").read()
        first = bundle[bundle.index("-----BEGIN CERTIFICATE-----"):bundle.index("-----END CERTIFICATE-----") + 25]
        (tmp_path / "ca.pem").write_text(first + "\n", encoding="ascii")
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
        _client._ssl_context.cache_clear()
        ctx = _client._ssl_context()
        assert ctx.verify_mode == ssl.CERT_REQUIRED and len(ctx.get_ca_certs()) == 1  # the user's CA alone
    finally:
        _client._ssl_context.cache_clear()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_https_is_verified_with_our_tls_context_and_http_needs_none(tmp_path, monkeypatch):
    from yarl import URL

    from fairpair.targets import TargetError
    from fairpair.testing._aio import AioServer

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)

    class TLSServer(AioServer):
        async def _listen(self) -> None:
            self._site = web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=server_tls)
            await self._site.start()
            self.port = self._site._server.sockets[0].getsockname()[1]

    async def ok(request):
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/v1/x", ok)
    assert _client._env_route(URL("http://127.0.0.1:1/v1")).tls is None  # plain http reads no CA bundle
    try:
        with TLSServer(app) as server:
            url = f"https://127.0.0.1:{server.port}/v1/x"

            async def send():
                pool = _client.ClientPool(timeout=10)
                try:
                    return await pool.request("POST", url, json_body={}, headers={}, secrets=[])
                finally:
                    await pool.aclose()

            monkeypatch.delenv("SSL_CERT_FILE", raising=False)
            monkeypatch.delenv("SSL_CERT_DIR", raising=False)
            _client._ssl_context.cache_clear()
            with pytest.raises(TargetError):  # certifi's bundle does not trust a self-signed certificate
                asyncio.run(send())
            # SSL_CERT_FILE names it: our context (read after the change; aiohttp's own was made at import) trusts it
            monkeypatch.setenv("SSL_CERT_FILE", str(cert))
            _client._ssl_context.cache_clear()
            assert asyncio.run(send()).status == 200
    finally:
        _client._ssl_context.cache_clear()


def test_requests_carry_json_and_our_user_agent():
    with serve_json(lambda r: (200, {"a": r.headers.get("user-agent")})) as server:
        t = HTTPTarget({"url": server.url, "reply_path": "$.a", "body": {"name": "{{context.n}}"}})

        async def go():
            try:
                return await t.generate(ChatRequest(messages=REQ.messages, context={"n": "Fátima"}))
            finally:
                await t.aclose()

        c = asyncio.run(go())
        got = server.received[0]
    assert c.text.startswith("fairpair/")
    assert got.headers["content-type"] == "application/json"
    assert got.body == '{"name":"Fátima"}'.encode()


@pytest.mark.parametrize("base_url, endpoint", [
    ("https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"),
    ("https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21",
     "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"),
])
def test_openai_endpoint_keeps_the_query_string(base_url, endpoint):
    assert OpenAITarget.Options(model="m", base_url=base_url).endpoint() == endpoint
