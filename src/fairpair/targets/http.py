"""The ``http`` target: your own deployed chatbot, called over HTTP.

The battery says where to send, what body to send and where the reply is in
the answer::

    target:
      kind: http
      url: https://bot.example.com/api/chat
      headers: {Authorization: "Bearer ${BOT_TOKEN}"}
      body:
        session: "{{case_id}}"
        messages: "{{messages}}"
        customer: {name: "{{context.crm.nombre}}"}
        text: "{{last_user_message}}"
      reply_path: $.reply.text
      tool_calls_path: $.actions

Body template. ``body`` is any JSON structure; a string that is exactly one
placeholder is replaced by the value itself (``"{{messages}}"`` becomes the
list of messages), and a placeholder inside a longer string is replaced by the
value's text (``"Cliente: {{context.crm.nombre}}"``). Placeholders:
``messages``, ``last_user_message``, ``system_prompt``, ``context`` and
``context.<dotted.path>``, ``seed``, ``case_id``. Substitution is one pass
over the battery's template only: values from the case are inserted as data,
never read as template text, so a name such as ``"{{context}}"`` or
``"${HOME}"`` in a case is sent literally. Unknown placeholders are battery
errors; a ``context.`` path that a case lacks fails that case.

Headers. Values may contain ``${ENV_VAR}``: expanded from the environment
at call time and never stored (the manifest records header names only; the
values of the variables are redacted from every stored error).

Replies are read with JSONPath (`jsonpath-ng <https://github.com/h2non/jsonpath-ng>`_);
a malformed path is a battery error. ``tool_calls_path`` may point at a list of
``{name, arguments}`` or OpenAI-style ``{function: {name, arguments}}`` objects.

This module also holds the HTTP plumbing shared with the ``openai`` target:
environment expansion, ``Retry-After`` parsing and the mapping of transport
failures and status codes onto :class:`~fairpair.targets._base.TargetError`.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import re
import time
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from fairpair.errors import FairpairError
from fairpair.targets._base import ChatRequest, Completion, TargetError, ToolCall

__all__ = ["HTTPOptions", "HTTPTarget", "expand_env", "env_names", "parse_retry_after", "status_error",
           "transport_error", "ClientPool"]

_ENV_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[^{}\s.]+)*)\s*\}\}")
_PLACEHOLDERS = ("messages", "last_user_message", "system_prompt", "context", "seed", "case_id")
#: statuses worth retrying (the OpenAI SDK's list): timeout, conflict, rate limit, server errors
RETRYABLE_STATUS = frozenset({408, 409, 429})


# ---------------------------------------------------------------- shared plumbing
def env_names(text: str) -> list[str]:
    """Names of the ``${VAR}`` references in ``text``."""
    return _ENV_RE.findall(text)


def expand_env(text: str, *, where: str) -> str:
    """Replace every ``${VAR}`` in ``text`` with its environment value.

    Raises
    ------
    TargetError
        (not retryable) a variable is not set; the message names it, never a value.
    """
    def sub(m: re.Match) -> str:
        value = os.environ.get(m.group(1))
        if value is None:
            raise TargetError(f"{where}: environment variable {m.group(1)} is not set")
        return value

    return _ENV_RE.sub(sub, text)


def prepared_request(method: str, url: str, body: Any, headers: dict[str, str], *,
                     secrets: list[str]) -> dict[str, Any]:
    """The request httpx would put on the wire for ``body`` (``--dry-run``), secrets as ``***``.

    Returns ``{"method", "url", "headers", "body"}``; ``body`` is the exact
    bytes (httpx's JSON encoding), ``headers`` include httpx's defaults.
    """
    with httpx.Client(trust_env=False) as client:
        req = client.build_request(method, url, json=body, headers=headers)
    return {"method": req.method, "url": redact_text(str(req.url), secrets),
            "headers": {k: redact_text(v, secrets) for k, v in req.headers.items()},
            "body": req.content}


def check_env(names: list[str], *, target: str, where: str) -> None:
    """Fail at build time (FairpairError) when a referenced environment variable is unset."""
    missing = [n for n in names if n not in os.environ]
    if missing:
        raise FairpairError(f"target '{target}': environment variable {', '.join(missing)} is not set "
                            f"(used by {where})", hint=f"export {missing[0]}=... before running")


def parse_retry_after(headers: httpx.Headers | dict[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (milliseconds, OpenAI/Azure) or ``Retry-After``
    (seconds or an HTTP date, RFC 9110 section 10.2.3); ``None`` when absent or unreadable."""
    h = {k.lower(): v for k, v in headers.items()}
    ms = h.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = h.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def redact_text(text: str, secrets: list[str]) -> str:
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return text


def _server_message(resp: httpx.Response, limit: int = 300) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:limit].strip()
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail") or json.dumps(err, ensure_ascii=False)
        else:
            msg = str(err)
        return str(msg)[:limit]
    return json.dumps(data, ensure_ascii=False)[:limit]


def status_error(resp: httpx.Response, *, secrets: list[str], auth_hint: str, what: str = "") -> TargetError:
    """The TargetError for a non-2xx answer: 408/409/429/5xx retryable (with Retry-After)."""
    status = resp.status_code
    msg = redact_text(_server_message(resp), secrets)
    detail = f": {msg}" if msg else ""
    if status in (401, 403):
        return TargetError(f"authentication failed ({auth_hint}){detail}", status=status)
    if status in RETRYABLE_STATUS or status >= 500:
        return TargetError(f"server answered {status}{detail}", retryable=True, status=status,
                           retry_after=parse_retry_after(resp.headers))
    return TargetError(f"{what or 'server'} answered {status}{detail}", status=status)


def transport_error(exc: httpx.HTTPError, *, timeout: float | None, secrets: list[str]) -> TargetError:
    """A retryable TargetError for a timeout or a failed/dropped connection."""
    if isinstance(exc, httpx.TimeoutException):
        return TargetError(f"timeout: no answer within {timeout:g} s" if timeout else "timeout", retryable=True)
    text = redact_text(str(exc) or type(exc).__name__, secrets)
    return TargetError(f"connection error: {type(exc).__name__}: {text}", retryable=True)


class _Conn:
    __slots__ = ("reader", "writer", "h11")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        import h11

        self.reader, self.writer = reader, writer
        self.h11 = h11.Connection(h11.CLIENT)

    def close(self) -> None:
        try:
            self.writer.close()
        except Exception:  # noqa: BLE001 - already gone
            pass


class StreamsTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 for ``httpx`` over plain ``asyncio`` streams and ``h11``, with a keep-alive pool.

    Why: at 64 concurrent requests with 200 ms of server latency, httpx's
    default transport (httpcore on anyio) reached 15-50 % of the ideal
    throughput in ``benchmarks/bench_overhead.py`` with multi-second stalls,
    while the same requests over asyncio streams reach > 95 %. httpx still
    builds requests and responses; only the I/O is done here. No proxies, no
    HTTP/2; TLS with certifi's CA bundle when installed.
    """

    def __init__(self, *, max_idle: int = 1024):
        self.max_idle = max_idle
        self._idle: dict[tuple[str, str, int], list[_Conn]] = {}
        self._ssl = None

    def _ssl_context(self):
        if self._ssl is None:
            import ssl

            try:
                import certifi

                self._ssl = ssl.create_default_context(cafile=certifi.where())
            except ImportError:  # pragma: no cover - certifi comes with httpx
                self._ssl = ssl.create_default_context()
        return self._ssl

    async def _open(self, key: tuple[str, str, int], request: httpx.Request, timeout: float | None) -> _Conn:
        scheme, host, port = key
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=self._ssl_context() if scheme == "https" else None,
                    server_hostname=host if scheme == "https" else None, limit=2**20)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port} timed out", request=request) from None
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {exc.strerror or exc}",
                                     request=request) from None
        return _Conn(reader, writer)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import h11

        url = request.url
        key = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        t = request.extensions.get("timeout") or {}
        read_timeout = t.get("read")
        body = b"".join([part async for part in request.stream])  # type: ignore[union-attr]
        headers = [(k, v) for k, v in request.headers.raw]
        if not any(k.lower() == b"content-length" for k, _ in headers) and body:
            headers.append((b"Content-Length", str(len(body)).encode()))
        for attempt in range(2):
            pool = self._idle.get(key)
            reused = bool(pool)
            conn = pool.pop() if pool else await self._open(key, request, t.get("connect"))
            got_bytes = False
            try:
                async with asyncio.timeout(read_timeout):
                    c = conn.h11
                    conn.writer.write(c.send(h11.Request(method=request.method, target=url.raw_path,
                                                         headers=headers))
                                      + c.send(h11.Data(data=body)) + c.send(h11.EndOfMessage()))
                    await conn.writer.drain()
                    status, resp_headers, chunks = 0, [], []
                    while True:
                        event = c.next_event()
                        if event is h11.NEED_DATA:
                            data = await conn.reader.read(65536)
                            got_bytes = got_bytes or bool(data)
                            c.receive_data(data)
                            continue
                        if isinstance(event, h11.Response):
                            status, resp_headers = event.status_code, event.headers
                        elif isinstance(event, h11.Data):
                            chunks.append(bytes(event.data))
                        elif isinstance(event, h11.EndOfMessage):
                            break
                        elif isinstance(event, h11.ConnectionClosed):
                            raise h11.RemoteProtocolError("connection closed before the response ended")
            except TimeoutError:
                conn.close()
                raise httpx.ReadTimeout(f"no complete answer within {read_timeout} s", request=request) from None
            except (h11.ProtocolError, OSError) as exc:
                conn.close()
                if reused and not got_bytes and attempt == 0:
                    continue  # a kept-alive connection the server had closed: once more on a new one
                cls = httpx.RemoteProtocolError if isinstance(exc, h11.ProtocolError) else httpx.ReadError
                raise cls(f"{type(exc).__name__}: {exc}", request=request) from None
            except BaseException:
                conn.close()
                raise
            if c.our_state is h11.DONE and c.their_state is h11.DONE and \
                    sum(len(v) for v in self._idle.values()) < self.max_idle:
                c.start_next_cycle()
                self._idle.setdefault(key, []).append(conn)
            else:
                conn.close()
            return httpx.Response(status, headers=resp_headers, content=b"".join(chunks),
                                  extensions={"http_version": b"HTTP/1.1"}, request=request)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()


class ClientPool:
    """One ``httpx.AsyncClient`` per event loop (the engine may use several loops in turn).

    The client's transport is :class:`StreamsTransport`: keep-alive connections
    without a cap (the engine's concurrency is the cap), so concurrency 64
    reuses 64 connections instead of reconnecting.
    """

    def __init__(self, *, timeout: float):
        self.timeout = timeout
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]] = {}

    def get(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is None or entry[0] is not loop:
            client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), transport=StreamsTransport(),
                                       follow_redirects=False, trust_env=False)
            self._clients[id(loop)] = (loop, client)
            return client
        return entry[1]

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        for key, (lp, client) in list(self._clients.items()):
            if lp is loop:
                await client.aclose()
            del self._clients[key]  # clients of closed loops die with their loop


# ---------------------------------------------------------------- body templates
def _template_placeholders(obj: Any) -> list[str]:
    out: list[str] = []
    if isinstance(obj, dict):
        for v in obj.values():
            out += _template_placeholders(v)
    elif isinstance(obj, list):
        for v in obj:
            out += _template_placeholders(v)
    elif isinstance(obj, str):
        out += _PLACEHOLDER_RE.findall(obj)
    return out


def body_context_paths(body: Any) -> list[str]:
    """Context paths a body template sends: ``""`` for ``{{context}}``, ``"crm.nombre"`` for
    ``{{context.crm.nombre}}`` (``None`` is the default body, which sends the whole context)."""
    if body is None:
        return [""]
    out = []
    for name in _template_placeholders(body):
        if name == "context":
            out.append("")
        elif name.startswith("context."):
            out.append(name[len("context."):])
    return out


class _Missing(Exception):
    pass


def _lookup(name: str, request: ChatRequest) -> Any:
    messages = list(request.messages)
    if name == "messages":
        return messages
    if name == "last_user_message":
        return next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
    if name == "system_prompt":
        return next((m.get("content") for m in messages if m.get("role") == "system"), "")
    if name == "seed":
        return request.seed
    if name == "case_id":
        return request.case_id
    head, _, rest = name.partition(".")
    assert head == "context"
    cur: Any = request.context
    for part in rest.split(".") if rest else ():
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise _Missing(name)
    return cur


def render_body(template: Any, request: ChatRequest) -> Any:
    """Fill ``template`` for ``request`` (one pass; case values are data, never re-read as template)."""
    if isinstance(template, dict):
        return {k: render_body(v, request) for k, v in template.items()}
    if isinstance(template, list):
        return [render_body(v, request) for v in template]
    if isinstance(template, str):
        whole = _PLACEHOLDER_RE.fullmatch(template.strip())
        if whole:
            return _lookup(whole.group(1), request)

        def sub(m: re.Match) -> str:
            v = _lookup(m.group(1), request)
            return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)

        return _PLACEHOLDER_RE.sub(sub, template)
    return template


def _parse_path(value: str, key: str):
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
    from jsonpath_ng.ext import parse

    try:
        return parse(value)
    except (JsonPathLexerError, JsonPathParserError, Exception) as exc:  # jsonpath-ng raises bare Exception too
        raise ValueError(f"{key} is not a valid JSONPath ({exc}); e.g. $.reply.text") from None


# ---------------------------------------------------------------- the target
class HTTPOptions(BaseModel):
    """Options of the ``http`` target (unknown keys are errors).

    Attributes
    ----------
    url:
        Endpoint to call (``http://`` or ``https://``).
    method:
        ``POST`` (default) or ``PUT``.
    headers:
        Header name -> value; values may contain ``${ENV_VAR}`` (expanded at
        call time, never stored).
    body:
        JSON template (see the module docstring). Default:
        ``{"messages": "{{messages}}", "context": "{{context}}"}``.
    reply_path:
        JSONPath of the reply text in the answer, e.g. ``$.reply.text``.
    tool_calls_path:
        Optional JSONPath of the list of tool calls in the answer.
    timeout:
        Seconds per request (> 0).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    method: Literal["POST", "PUT"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = Field(default_factory=lambda: {"messages": "{{messages}}", "context": "{{context}}"})
    reply_path: str
    tool_calls_path: str | None = None
    timeout: float = Field(120.0, gt=0)

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not re.match(r"^https?://[^\s/]+", v):
            raise ValueError(f"url must start with http:// or https:// (got {v!r})")
        return v

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @field_validator("reply_path", "tool_calls_path")
    @classmethod
    def _jsonpath(cls, v: str | None, info) -> str | None:
        if v is not None:
            _parse_path(v, info.field_name)
        return v

    @field_validator("body")
    @classmethod
    def _body(cls, v: Any) -> Any:
        for name in _template_placeholders(v):
            head = name.split(".", 1)[0]
            if name not in _PLACEHOLDERS and head != "context":
                raise ValueError(f"unknown placeholder '{{{{{name}}}}}' in body; known: "
                                 + ", ".join("{{" + p + "}}" for p in _PLACEHOLDERS) + ", {{context.<path>}}")
        return v


def _decode_tool_calls(value: Any) -> tuple[ToolCall, ...]:
    if value is None:
        return ()
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise TargetError(f"tool_calls_path matched a {type(value).__name__}, expected a list of calls")
    out = []
    for item in value:
        if not isinstance(item, dict):
            raise TargetError("tool_calls_path: each tool call must be an object with a name")
        fn = item.get("function") if isinstance(item.get("function"), dict) else item
        name = fn.get("name")
        if not isinstance(name, str):
            raise TargetError("tool_calls_path: a tool call has no 'name'")
        args = fn.get("arguments", fn.get("args", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                args = {"_raw": args}
        out.append(ToolCall(name, args if isinstance(args, dict) else {"_value": args}, id=item.get("id")))
    return tuple(out)


class HTTPTarget:
    """The ``http`` target (see :class:`HTTPOptions` and the module docstring)."""

    Options = HTTPOptions
    max_concurrency: int | None = None

    def __init__(self, options: dict[str, Any] | HTTPOptions, *, name: str = "http"):
        self.options = options if isinstance(options, HTTPOptions) else HTTPOptions.model_validate(options)
        self.name = name
        self._env = sorted({n for v in self.options.headers.values() for n in env_names(v)}
                           | set(env_names(self.options.url)))
        check_env(self._env, target=name, where="headers/url")
        self._reply = _parse_path(self.options.reply_path, "reply_path")
        self._tools = _parse_path(self.options.tool_calls_path, "tool_calls_path") \
            if self.options.tool_calls_path else None
        self._pool = ClientPool(timeout=self.options.timeout)

    def _secrets(self) -> list[str]:
        return [os.environ[n] for n in self._env if os.environ.get(n)]

    def preview(self, request: ChatRequest) -> dict[str, Any]:
        """The exact request :meth:`generate` sends for ``request`` (secrets as ``***``)."""
        o = self.options
        try:
            body = render_body(o.body, request)
        except _Missing as exc:
            raise TargetError(f"body placeholder {{{{{exc.args[0]}}}}}: the case has no such context field") from None
        headers = {k: expand_env(v, where=f"header {k}") for k, v in o.headers.items()}
        return prepared_request(o.method, expand_env(o.url, where="url"), body, headers, secrets=self._secrets())

    async def generate(self, request: ChatRequest) -> Completion:
        o = self.options
        try:
            body = render_body(o.body, request)
        except _Missing as exc:
            raise TargetError(f"body placeholder {{{{{exc.args[0]}}}}}: the case has no such context field") from None
        headers = {k: expand_env(v, where=f"header {k}") for k, v in o.headers.items()}
        url = expand_env(o.url, where="url")
        secrets = self._secrets()
        try:
            resp = await self._pool.get().request(o.method, url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise transport_error(exc, timeout=o.timeout, secrets=secrets) from None
        if not 200 <= resp.status_code < 300:
            hint = ("check the headers' environment variables " + ", ".join(self._env)) if self._env \
                else "check the headers"
            raise status_error(resp, secrets=secrets, auth_hint=hint)
        try:
            data = resp.json()
        except ValueError:
            raise TargetError(f"the answer is not JSON (status {resp.status_code}, "
                              f"{len(resp.content)} bytes)", retryable=True) from None
        found = [m.value for m in self._reply.find(data)]
        if not found:
            snippet = redact_text(json.dumps(data, ensure_ascii=False)[:200], secrets)
            raise TargetError(f"reply_path {o.reply_path} matched nothing in the answer: {snippet}")
        text = found[0]
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False)
        calls: tuple[ToolCall, ...] = ()
        if self._tools is not None:
            tfound = [m.value for m in self._tools.find(data)]
            if tfound:
                calls = _decode_tool_calls(tfound[0] if len(tfound) == 1 else tfound)
        return Completion(text=text, tool_calls=calls, finish_reason="stop")

    def identity(self) -> dict[str, Any]:
        o = self.options
        return {"kind": "http", "url": o.url, "method": o.method, "header_names": sorted(o.headers),
                "env": self._env, "body": o.body, "reply_path": o.reply_path,
                "tool_calls_path": o.tool_calls_path, "timeout": o.timeout}

    async def aclose(self) -> None:
        await self._pool.aclose()
