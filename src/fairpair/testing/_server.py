"""A small asyncio HTTP/1.1 server on 127.0.0.1, run in a background thread.

Standard library only (``asyncio`` streams): keep-alive connections,
``Content-Length`` bodies, one event loop in a daemon thread, so a test or a
benchmark can start it with ``with serve_openai(...) as server:`` and point a
client at ``server.base_url``. It sustains 64 concurrent keep-alive
connections with a fixed latency of 200 ms (see ``benchmarks/bench_overhead.py``).

Two handlers are provided:

* :func:`serve_openai`: an OpenAI-compatible ``POST /v1/chat/completions``
  whose answers come from :func:`fairpair.targets.mock.mock_reply`. The mock's
  planted bias works over HTTP without any side channel: the server looks for
  the names of a ``names`` table (name -> group) in the prompt text and uses
  that group, exactly as a real model only sees the prompt. Draws are seeded by
  the request's ``seed`` and a hash of the conversation, so answers are
  deterministic. Tool calls follow the OpenAI protocol (the assistant asks,
  the client answers with ``role: tool`` messages, the assistant concludes).
* :func:`serve_json`: any ``handler(Received) -> (status, json)`` function,
  for the ``http`` target's tests.

Faults (:class:`Fault`) are injected by kind and rate with a seeded RNG, or on
the first *n* attempts of each distinct request body (to test retries
deterministically).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FAULT_KINDS", "Fault", "LoopbackServer", "Received", "Reply", "serve_json", "serve_openai"]

#: Fault kinds: HTTP statuses ``401``, ``429`` (``Retry-After`` from the fault's
#: ``retry_after``/``retry_after_ms``, or none), ``500``, ``502``, ``503``;
#: ``hang`` (never answers), ``close`` (headers sent, connection closed mid-body),
#: ``truncated`` (a complete response whose JSON is cut in half), ``not_json``
#: (an HTML error page with status 200), ``empty_choices`` (valid JSON,
#: ``choices: []``), ``slow`` (the body trickles out over ``slow_s`` seconds).
FAULT_KINDS = ("401", "429", "500", "502", "503", "hang", "close", "truncated", "not_json", "empty_choices",
               "slow")

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
            429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable"}


@dataclass(frozen=True)
class Fault:
    """One kind of fault and when it strikes.

    Attributes
    ----------
    kind:
        One of :data:`FAULT_KINDS`.
    rate:
        Probability (0-1) that a request gets it (seeded RNG of the server).
    first:
        If given, only the first ``first`` attempts of each distinct request
        body get it (then ``rate`` still applies to those attempts).
    retry_after, retry_after_ms:
        ``Retry-After`` (seconds) / ``retry-after-ms`` headers sent with ``429``
        and ``503``.
    """

    kind: str
    rate: float = 1.0
    first: int | None = None
    retry_after: float | None = None
    retry_after_ms: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; known: {', '.join(FAULT_KINDS)}")
        if not 0 <= self.rate <= 1:
            raise ValueError("rate must be between 0 and 1")


@dataclass(frozen=True)
class Received:
    """A request as the server received it (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Reply:
    """What to send back. ``mode`` is ``normal`` or a fault kind that breaks the transport."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    mode: str = "normal"
    content_type: str = "application/json"

    @classmethod
    def of_json(cls, status: int, obj: Any, headers: dict[str, str] | None = None) -> Reply:
        return cls(status, json.dumps(obj, ensure_ascii=False).encode(), dict(headers or {}))


Handler = Callable[[Received], Awaitable[Reply]]


class LoopbackServer:
    """An HTTP/1.1 server on ``127.0.0.1:<random port>`` in a background thread.

    Use :meth:`start` / :meth:`stop` or the ``serve_*`` context managers.
    ``received`` lists every request (in arrival order); ``count_by_body``
    counts requests per distinct body, to check that nothing was sent twice.
    ``first_at`` / ``last_reply_at`` (``time.monotonic()``, None before the
    first request) are when the first request arrived and the last reply was
    written: the sending window as the server saw it (benchmarks reset them).
    """

    def __init__(self, handler: Handler, *, slow_s: float = 2.0, record: bool = True):
        self.handler = handler
        self.slow_s = slow_s
        self.record = record
        self.received: list[Received] = []
        self.count_by_body: Counter[str] = Counter()
        self.connections = 0
        self.max_in_flight = 0
        self.first_at: float | None = None
        self.last_reply_at: float | None = None
        self._in_flight = 0
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # ------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``.../v1``)."""
        return f"{self.url}/v1"

    @property
    def n_requests(self) -> int:
        return sum(self.count_by_body.values())

    def start(self) -> LoopbackServer:
        self._thread = threading.Thread(target=self._run, name="fairpair-loopback", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        loop = self._loop

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.sleep(0)
            loop.stop()

        asyncio.run_coroutine_threadsafe(shutdown(), loop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024, reuse_address=True))
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:  # noqa: BLE001 - reported to start()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    # ------------------------------------------------------------ HTTP
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                try:
                    method, target, _version = lines[0].split(" ", 2)
                except ValueError:
                    return
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                n = int(headers.get("content-length") or 0)
                try:
                    body = await reader.readexactly(n) if n else b""
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                req = Received(method, target, headers, body, time.monotonic())
                if self.first_at is None:
                    self.first_at = req.at
                if self.record:
                    self.received.append(req)
                self.count_by_body[hashlib.sha256(body).hexdigest()] += 1
                self._in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self._in_flight)
                try:
                    reply = await self.handler(req)
                except Exception as exc:  # noqa: BLE001 - a bug in a test handler is a 500
                    reply = Reply.of_json(500, {"error": {"message": f"handler failed: {exc!r}"}})
                finally:
                    self._in_flight -= 1
                keep = await self._send(writer, reply)
                self.last_reply_at = time.monotonic()
                if not keep or headers.get("connection", "").lower() == "close":
                    return
        except asyncio.CancelledError:
            return  # the server is stopping: end quietly (asyncio logs a cancelled handler as an error)
        finally:
            self._tasks.discard(task)  # type: ignore[arg-type]
            with contextlib.suppress(Exception):
                writer.close()

    async def _send(self, writer: asyncio.StreamWriter, reply: Reply) -> bool:
        """Write ``reply``; returns False when the connection must be closed."""
        if reply.mode == "hang":
            await asyncio.sleep(3600)
            return False
        body = reply.body
        head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}",
                f"Content-Type: {reply.content_type}", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        head_bytes = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        try:
            if reply.mode == "close":
                writer.write(head_bytes + body[: len(body) // 2])
                await writer.drain()
                return False
            if reply.mode == "slow":
                writer.write(head_bytes)
                chunks = 20
                step = max(1, len(body) // chunks)
                for i in range(0, len(body), step):
                    writer.write(body[i:i + step])
                    await writer.drain()
                    await asyncio.sleep(self.slow_s / chunks)
                return True
            writer.write(head_bytes + body)
            await writer.drain()
        except ConnectionError:
            return False
        return True


# ---------------------------------------------------------------- fault injection
class _Faults:
    def __init__(self, faults: Sequence[Fault] | Mapping[str, float] | None, seed: int):
        if isinstance(faults, Mapping):
            faults = [Fault(k, rate=v) for k, v in faults.items()]
        self.faults = list(faults or ())
        self.rng = random.Random(seed)
        self.attempts: Counter[str] = Counter()
        self.injected: Counter[str] = Counter()

    def pick(self, body: bytes) -> Fault | None:
        if not self.faults:
            return None
        key = hashlib.sha256(body).hexdigest()
        self.attempts[key] += 1
        n = self.attempts[key]
        for f in self.faults:
            if f.first is not None and n > f.first:
                continue
            if f.rate >= 1 or self.rng.random() < f.rate:
                self.injected[f.kind] += 1
                return f
        return None


def _fault_reply(f: Fault) -> Reply:
    if f.kind in ("429", "503"):
        headers = {}
        if f.retry_after is not None:
            headers["Retry-After"] = f"{f.retry_after:g}"
        if f.retry_after_ms is not None:
            headers["retry-after-ms"] = f"{f.retry_after_ms:g}"
        msg = "Rate limit reached" if f.kind == "429" else "The server is overloaded"
        return Reply.of_json(int(f.kind), {"error": {"message": msg, "type": "rate_limit"}}, headers)
    if f.kind in ("500", "502"):
        return Reply.of_json(int(f.kind), {"error": {"message": "upstream error"}})
    if f.kind == "401":
        return Reply.of_json(401, {"error": {"message": "Invalid authentication", "code": "invalid_api_key"}})
    if f.kind == "not_json":
        return Reply(200, b"<html><body>502 Bad Gateway</body></html>", content_type="text/html")
    return Reply(200, mode=f.kind)  # hang / close / slow / truncated / empty_choices: body filled in later


# ---------------------------------------------------------------- the OpenAI-compatible mock
class OpenAIMock:
    """The handler behind :func:`serve_openai` (see its docstring)."""

    def __init__(self, *, mock: Any = None, names: Mapping[str, str] | None = None, latency: float = 0.0,
                 faults: Sequence[Fault] | Mapping[str, float] | None = None, seed: int = 0,
                 api_key: str | None = None, models: Sequence[str] | None = None,
                 served_model: str | None = None, always_call_tools: bool = False):
        from fairpair.targets.mock import MockOptions

        self.options = mock if isinstance(mock, MockOptions) else MockOptions.model_validate(mock or {})
        self.names = dict(names or {})
        self._name_re = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(self.names, key=len, reverse=True))
                                   + r")\b") if self.names else None
        self.latency = latency
        self.faults = _Faults(faults, seed)
        self.api_key = api_key
        self.models = set(models) if models else None
        self.served_model = served_model
        self.always_call_tools = always_call_tools

    async def __call__(self, req: Received) -> Reply:
        """The reply to ``req``, sent ``latency`` seconds after the request arrived.

        The mock's own work (matching names, drawing the answer, encoding it)
        happens inside that time, as a remote endpoint's does, so the client
        sees a round trip of ``latency`` plus the network, not plus the mock.
        """
        reply = self._answer(req)
        if self.latency:
            await asyncio.sleep(max(0.0, req.at + self.latency - time.monotonic()))
        return reply

    def _answer(self, req: Received) -> Reply:
        if req.method != "POST" or not req.path.rstrip("/").endswith("/chat/completions"):
            return Reply.of_json(404, {"error": {"message": f"no route {req.method} {req.path}"}})
        if self.api_key is not None:
            given = req.headers.get("authorization", "").removeprefix("Bearer ").strip()
            if given != self.api_key:
                # like real providers, the message echoes (part of) the key it got
                return Reply.of_json(401, {"error": {"message": f"Incorrect API key provided: {given}.",
                                                     "type": "invalid_request_error", "code": "invalid_api_key"}})
        fault = self.faults.pick(req.body)
        if fault is not None:
            reply = _fault_reply(fault)
            if reply.mode == "normal":
                return reply
        else:
            reply = Reply()
        try:
            body = req.json()
        except ValueError:
            return Reply.of_json(400, {"error": {"message": "body is not JSON"}})
        model = body.get("model")
        if self.models is not None and model not in self.models:
            return Reply.of_json(404, {"error": {"message": f"The model `{model}` does not exist or you do not "
                                                            "have access to it.", "code": "model_not_found"}})
        payload = self.complete(body)
        if reply.mode == "empty_choices":
            payload["choices"] = []
            reply.mode = "normal"
        data = json.dumps(payload, ensure_ascii=False).encode()
        if reply.mode == "truncated":
            data = data[: len(data) // 2]
            reply.mode = "normal"
        reply.body = data
        return reply

    def request_of(self, body: dict[str, Any]):
        """The :class:`ChatRequest` the mock sees: prompt, tools, seed and the groups named in the prompt."""
        from fairpair.targets import ChatRequest

        messages = body.get("messages") or []
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=len(messages) - 1)
        convo = messages[: last_user + 1]
        text = "\n".join(str(m.get("content") or "") for m in convo)
        seed = body.get("seed")
        case_id = hashlib.sha256(json.dumps([convo, seed], sort_keys=True, ensure_ascii=False).encode()
                                 ).hexdigest()[:20]
        groups: dict[str, str] = {}
        variants: dict[str, str] = {}
        if self._name_re is not None:
            for i, m in enumerate(self._name_re.finditer(text)):
                groups.setdefault(f"name{i}", self.names[m.group(1)])
                variants.setdefault(f"name{i}", m.group(1))
        return ChatRequest(messages=tuple(convo), tools=tuple(body["tools"]) if body.get("tools") else None,
                           seed=seed, case_id=case_id, meta={"groups": groups, "variants": variants})

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        from fairpair.targets.mock import mock_reply

        request = self.request_of(body)
        c = mock_reply(self.options, request)
        messages = body.get("messages") or []
        answered_tools = bool(messages) and messages[-1].get("role") == "tool"
        calls = list(c.tool_calls)
        if self.always_call_tools and request.tools and not calls:
            from fairpair.targets import ToolCall

            calls = [ToolCall(request.tools[0]["function"]["name"], {}, id="call_0")]
        if calls and (self.always_call_tools or not answered_tools):
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"{tc.id}_{len(messages)}", "type": "function",
                 "function": {"name": tc.name, "arguments": json.dumps(tc.arguments)}} for tc in calls]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": c.text}
            finish = c.finish_reason or "stop"
        return {
            "id": "chatcmpl-" + request.case_id, "object": "chat.completion", "created": int(time.time()),
            "model": self.served_model or body.get("model") or self.options.model,
            "system_fingerprint": "fp_mock",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": c.usage.prompt_tokens, "completion_tokens": c.usage.completion_tokens,
                      "total_tokens": (c.usage.prompt_tokens or 0) + (c.usage.completion_tokens or 0)},
        }


@contextlib.contextmanager
def serve_openai(*, mock: Any = None, names: Mapping[str, str] | None = None, latency: float = 0.0,
                 faults: Sequence[Fault] | Mapping[str, float] | None = None, seed: int = 0,
                 api_key: str | None = None, models: Sequence[str] | None = None,
                 served_model: str | None = None, always_call_tools: bool = False, slow_s: float = 2.0,
                 record: bool = True) -> Iterator[LoopbackServer]:
    """Run the OpenAI-compatible mock on loopback; yields the :class:`LoopbackServer`.

    Parameters
    ----------
    mock:
        :class:`~fairpair.targets.mock.MockOptions` (or a dict of them): base
        rates, bias per group, language.
    names:
        Planted-bias table: a name seen in the prompt -> its group (the key of
        ``mock.bias``). E.g. ``{"Fatima": "magreb", "Lucía": "espana"}``.
    latency:
        Seconds added to every answer (fixed).
    faults:
        :class:`Fault` list, or ``{kind: rate}``; drawn with ``random.Random(seed)``.
    api_key:
        If given, requests must carry ``Authorization: Bearer <api_key>``;
        others get 401 with a message that echoes the key received.
    models:
        If given, other model names get 404 ``model_not_found``.
    served_model:
        The ``model`` reported in answers (default: the one requested).
    always_call_tools:
        Ask for a tool call on every turn when tools are offered (to exhaust
        the client's tool-step budget).
    slow_s:
        How long a ``slow`` fault takes to send its body.

    Examples
    --------
    >>> with serve_openai(latency=0.2, faults=[Fault("429", first=1, retry_after=0.1)]) as server:
    ...     base_url = server.base_url
    """
    handler = OpenAIMock(mock=mock, names=names, latency=latency, faults=faults, seed=seed, api_key=api_key,
                         models=models, served_model=served_model, always_call_tools=always_call_tools)
    server = LoopbackServer(handler, slow_s=slow_s, record=record)
    server.mock = handler  # type: ignore[attr-defined]
    with server:
        yield server


@contextlib.contextmanager
def serve_json(handler: Callable[[Received], Any], *, latency: float = 0.0,
               faults: Sequence[Fault] | Mapping[str, float] | None = None, seed: int = 0) -> Iterator[LoopbackServer]:
    """Serve ``handler(request) -> (status, json_obj)`` (or a :class:`Reply`) on loopback."""
    fx = _Faults(faults, seed)

    async def wrapped(req: Received) -> Reply:
        if latency:
            await asyncio.sleep(latency)
        fault = fx.pick(req.body)
        if fault is not None:
            reply = _fault_reply(fault)
            if reply.mode == "normal":
                return reply
        else:
            reply = Reply()
        out = handler(req)
        if asyncio.iscoroutine(out):
            out = await out
        if isinstance(out, Reply):
            return out
        status, obj = out
        data = json.dumps(obj, ensure_ascii=False).encode()
        if reply.mode == "truncated":
            data, reply.mode = data[: len(data) // 2], "normal"
        if reply.mode == "empty_choices":
            reply.mode = "normal"
        reply.status, reply.body = status, data
        return reply

    with LoopbackServer(wrapped) as server:
        yield server
