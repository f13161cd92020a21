"""aiohttp loopback servers for fleets and batch APIs (tests and benchmarks; 127.0.0.1 only).

* :class:`AioServer` runs an ``aiohttp.web`` application in a background
  thread with its own event loop; :meth:`AioServer.kill` makes it die as a
  crashed server does (the listening socket closed, every open connection
  aborted, requests in progress never answered), :meth:`AioServer.revive`
  brings it back on the same port.
* :func:`serve_fleet` starts ``n`` OpenAI-compatible chat servers answering
  like the ``mock`` target (:class:`~fairpair.testing._server.OpenAIMock`),
  each with its own served ``model`` and ``system_fingerprint``, and counts the
  requests each one answered.
* :func:`serve_batch_api` implements the OpenAI Batch API
  (https://platform.openai.com/docs/api-reference/batch): ``POST /v1/files``
  (multipart, ``purpose=batch``), ``POST /v1/batches``, ``GET
  /v1/batches/{id}``, ``GET /v1/files/{id}/content``; the requests of a batch
  are answered by the same mock, with per-request failures, expiry and
  validation failures on demand (:class:`BatchBehaviour`); ``GET /v1/batches``
  lists them (newest first, with their ``metadata``).
* :func:`serve_anthropic_api` implements Anthropic's Messages API
  (``POST /v1/messages``) and Message Batches
  (https://docs.anthropic.com/en/api/creating-message-batches): ``POST
  /v1/messages/batches``, ``GET /v1/messages/batches[/{id}[/results]]``, with
  the same behaviours.

Both answer a request whose ``model`` starts with ``judge`` as the scripted
judge does (:func:`fairpair.testing.judge_reply`: tone scores, or ``{"winner":
"A"}`` for a pairwise prompt), with first-token ``logprobs`` when asked, and
every other request as the ``mock`` target.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from fairpair.testing._server import OpenAIMock

__all__ = ["AioServer", "AnthropicApi", "BatchApi", "BatchBehaviour", "FleetServer", "MAX_BATCH_REQUESTS",
           "answer_body", "serve_anthropic_api", "serve_batch_api", "serve_fleet"]

#: The most requests in one batch input file (OpenAI's limit).
MAX_BATCH_REQUESTS = 50_000


class AioServer:
    """An ``aiohttp.web.Application`` on 127.0.0.1 in a daemon thread (``with`` starts and stops it)."""

    def __init__(self, app: web.Application, *, port: int = 0):
        self.app = app
        self.port = port
        self.dead = False
        self._transports: set[Any] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._ready = threading.Event()
        app.middlewares.append(self._track)

    @web.middleware
    async def _track(self, request: web.Request, handler):
        if self.dead:
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError
        if request.transport is not None:
            self._transports.add(request.transport)
        resp = await handler(request)
        if self.dead:  # died while the request was in progress: no answer
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError
        return resp

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> AioServer:
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, daemon=True, name="fairpair-aio-server").start()
        self._call(self._setup())
        return self

    def _call(self, coro, timeout: float = 30.0) -> Any:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _setup(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=0.1, handle_signals=False)
        await self._runner.setup()
        await self._listen()

    async def _listen(self) -> None:
        assert self._runner is not None
        self._site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await self._site.start()
        self.port = self._site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def kill(self) -> None:
        """Die now: stop listening, abort every connection; requests in progress get no answer."""
        async def die() -> None:
            self.dead = True
            if self._site is not None:
                await self._site.stop()
                self._site = None
            for t in list(self._transports):
                t.abort()
            self._transports.clear()

        self._call(die())

    def revive(self) -> None:
        """Listen again on the same port and answer normally."""
        async def back() -> None:
            self.dead = False
            await self._listen()

        self._call(back())

    def stop(self) -> None:
        if self._loop is None:
            return
        with contextlib.suppress(Exception):
            self._call(self._runner.cleanup(), timeout=10)  # type: ignore[union-attr]
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._loop = None

    def __enter__(self) -> AioServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# ---------------------------------------------------------------- a fleet of chat servers
@dataclass
class FleetServer:
    """One chat server of a fleet: its :class:`AioServer`, the ``model`` / ``system_fingerprint`` it reports,
    and ``answered``: a Counter of the requests it answered (key: sha256 of the request body's messages
    and seed), for "none twice" checks."""

    server: AioServer
    model: str | None
    system_fingerprint: str | None
    answered: Counter = field(default_factory=Counter)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def kill(self) -> None:
        self.server.kill()

    def revive(self) -> None:
        self.server.revive()


def request_key(body: dict[str, Any]) -> str:
    """What identifies one request to the mock: its messages and seed (sha256, 16 hex digits)."""
    blob = json.dumps([body.get("messages"), body.get("seed")], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _chat_app(mock: OpenAIMock, fs_holder: list[FleetServer], latency: float) -> web.Application:
    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        if latency:
            await asyncio.sleep(latency)
        fs = fs_holder[0]
        payload = mock.complete(body)
        if fs.model is not None:
            payload["model"] = fs.model
        payload["system_fingerprint"] = fs.system_fingerprint
        fs.answered[request_key(body)] += 1
        return web.json_response(payload)

    async def models(request: web.Request) -> web.Response:
        fs = fs_holder[0]
        return web.json_response({"object": "list", "data": [{"id": fs.model or "mock", "object": "model"}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    return app


@contextlib.contextmanager
def serve_fleet(n: int, *, latency: float = 0.0, mock: Any = None, names: dict[str, str] | None = None,
                models: Sequence[str | None] | None = None,
                fingerprints: Sequence[str | None] | None = None) -> Iterator[list[FleetServer]]:
    """``n`` OpenAI-compatible chat servers on loopback (aiohttp); yields their :class:`FleetServer` list.

    ``latency``: seconds before each answer; ``models`` / ``fingerprints``: per
    server, the ``model`` and ``system_fingerprint`` it reports (default: the
    model asked for, ``fp_mock``).
    """
    models = list(models) if models is not None else [None] * n
    fingerprints = list(fingerprints) if fingerprints is not None else ["fp_mock"] * n
    out: list[FleetServer] = []
    try:
        for i in range(n):
            holder: list[FleetServer] = []
            server = AioServer(_chat_app(OpenAIMock(mock=mock, names=names), holder, latency))
            holder.append(FleetServer(server, models[i], fingerprints[i]))
            server.start()
            out.append(holder[0])
        yield out
    finally:
        for fs in out:
            fs.server.stop()


# ---------------------------------------------------------------- the Batch API
@dataclass
class BatchBehaviour:
    """How the loopback Batch API treats batches.

    Attributes
    ----------
    polls_before_done:
        ``GET /v1/batches/{id}`` answers ``in_progress`` this many times before the batch ends.
    fail_every:
        Every ``fail_every``-th request (in file order, 1-based) gets a 500 in the error file (0: none).
    expire_after:
        The batch ends ``expired`` after this many requests were answered; the
        rest go to the error file with code ``batch_expired`` (``None``: all answered).
    drop_every:
        Every ``drop_every``-th request has no line in either file (a provider bug; 0: none).
    duplicate_every:
        Every ``duplicate_every``-th answer is written twice (0: none).
    """

    polls_before_done: int = 0
    fail_every: int = 0
    expire_after: int | None = None
    drop_every: int = 0
    #: every ``duplicate_every``-th answer is written twice (a provider bug; 0: none)
    duplicate_every: int = 0


class BatchApi:
    """The state of the loopback Batch API: ``files`` (id -> bytes), ``batches`` (id -> batch object), and
    ``executed``: a Counter of the ``custom_id`` values it answered (over all batches)."""

    def __init__(self, behaviour: BatchBehaviour, mock: OpenAIMock):
        self.behaviour = behaviour
        self.mock = mock
        self.files: dict[str, bytes] = {}
        self.file_meta: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.polls: Counter = Counter()
        self.executed: Counter = Counter()
        self._ids = itertools.count(1)

    def _id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids):06d}"

    def app(self) -> web.Application:
        app = web.Application(client_max_size=512 * 1024 * 1024)
        app.router.add_post("/v1/files", self.upload)
        app.router.add_get("/v1/files/{id}/content", self.content)
        app.router.add_post("/v1/batches", self.create)
        app.router.add_get("/v1/batches", self.listing)
        app.router.add_get("/v1/batches/{id}", self.retrieve)
        return app

    async def listing(self, request: web.Request) -> web.Response:
        limit = int(request.query.get("limit", 20))
        data = list(reversed(self.batches.values()))[:limit]
        return web.json_response({"object": "list", "data": data, "has_more": len(self.batches) > limit})

    @staticmethod
    def _error(status: int, message: str) -> web.Response:
        return web.json_response({"error": {"message": message, "type": "invalid_request_error"}}, status=status)

    async def upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        purpose = form.get("purpose")
        part = form.get("file")
        if purpose != "batch":
            return self._error(400, f"purpose must be 'batch' (got {purpose!r})")
        if not isinstance(part, web.FileField):
            return self._error(400, "no file")
        data = part.file.read()
        fid = self._id("file")
        self.files[fid] = data
        self.file_meta[fid] = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                               "filename": part.filename, "purpose": "batch"}
        return web.json_response(self.file_meta[fid])

    async def content(self, request: web.Request) -> web.Response:
        fid = request.match_info["id"]
        if fid not in self.files:
            return self._error(404, f"no file {fid}")
        return web.Response(body=self.files[fid], content_type="application/jsonl")

    async def create(self, request: web.Request) -> web.Response:
        body = await request.json()
        fid = body.get("input_file_id")
        if fid not in self.files:
            return self._error(404, f"no file {fid}")
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return self._error(400, "endpoint must be /v1/chat/completions and completion_window 24h")
        bid = self._id("batch")
        self.batches[bid] = {
            "id": bid, "object": "batch", "endpoint": body["endpoint"], "errors": None, "input_file_id": fid,
            "completion_window": "24h", "status": "validating", "output_file_id": None, "error_file_id": None,
            "created_at": int(time.time()), "completed_at": None, "expired_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0}, "metadata": body.get("metadata")}
        return web.json_response(self.batches[bid])

    async def retrieve(self, request: web.Request) -> web.Response:
        bid = request.match_info["id"]
        batch = self.batches.get(bid)
        if batch is None:
            return self._error(404, f"no batch {bid}")
        if batch["status"] in ("validating", "in_progress"):
            self.polls[bid] += 1
            if self.polls[bid] > self.behaviour.polls_before_done:
                self._execute(batch)
            else:
                batch["status"] = "in_progress"
        return web.json_response(batch)

    def _execute(self, batch: dict[str, Any]) -> None:
        b = self.behaviour
        lines = self.files[batch["input_file_id"]].splitlines()
        if len(lines) > MAX_BATCH_REQUESTS:
            batch.update(status="failed", errors={"object": "list", "data": [
                {"code": "too_many_requests", "message": f"{len(lines)} requests; at most {MAX_BATCH_REQUESTS}"}]})
            return
        out: list[bytes] = []
        err: list[bytes] = []
        seen: set[str] = set()
        done = failed = 0
        for k, raw in enumerate(lines, start=1):
            req = json.loads(raw)
            cid = req["custom_id"]
            if cid in seen:
                batch.update(status="failed", errors={"object": "list", "data": [
                    {"code": "duplicate_custom_id", "message": f"custom_id {cid} appears twice", "line": k}]})
                return
            seen.add(cid)
            rid = f"req-{k}"
            if b.drop_every and k % b.drop_every == 0:
                continue
            if b.expire_after is not None and done + failed >= b.expire_after:
                err.append(_line({"id": rid, "custom_id": cid, "response": None,
                                  "error": {"code": "batch_expired", "message": "This request could not be executed "
                                            "before the completion window expired."}}))
                failed += 1
                continue
            if b.fail_every and k % b.fail_every == 0:
                err.append(_line({"id": rid, "custom_id": cid, "response": {
                    "status_code": 500, "request_id": rid,
                    "body": {"error": {"message": "The server had an error processing your request.",
                                       "type": "server_error"}}}, "error": None}))
                failed += 1
                continue
            self.executed[cid] += 1
            out.append(_line({"id": rid, "custom_id": cid, "response": {
                "status_code": 200, "request_id": rid, "body": answer_body(self.mock, req["body"])}, "error": None}))
            if b.duplicate_every and k % b.duplicate_every == 0:
                out.append(out[-1])
            done += 1
        now = int(time.time())
        expired = b.expire_after is not None and failed and any(b"batch_expired" in e for e in err)
        batch.update(status="expired" if expired else "completed", completed_at=now,
                     request_counts={"total": len(lines), "completed": done, "failed": failed})
        if out:
            fid = self._id("file")
            self.files[fid] = b"".join(out)
            batch["output_file_id"] = fid
        if err:
            fid = self._id("file")
            self.files[fid] = b"".join(err)
            batch["error_file_id"] = fid


def _line(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"


@contextlib.contextmanager
def serve_batch_api(behaviour: BatchBehaviour | None = None, *, mock: Any = None,
                    names: dict[str, str] | None = None, port: int = 0) -> Iterator[tuple[AioServer, BatchApi]]:
    """The loopback Batch API (aiohttp) on 127.0.0.1:``port`` (0: a free one); yields ``(server, api)``:
    ``server.base_url`` ends in ``/v1``."""
    api = BatchApi(behaviour or BatchBehaviour(), OpenAIMock(mock=mock, names=names))
    with AioServer(api.app(), port=port) as server:
        yield server, api


# ---------------------------------------------------------------- answers: the mock, or the scripted judge
#: first-token candidates of a judge answer with ``logprobs`` (token -> natural log p)
_JUDGE_LOGPROBS = {"1": -4.0, "2": -3.0, "3": -2.0, "4": -0.4, "5": -1.6, "Sí": -0.3, "Yes": -0.3, "No": -1.4}


def answer_body(mock: OpenAIMock, body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completion body answering ``body``: the scripted judge's for a ``judge*`` model (first-token
    ``logprobs`` when asked), else the mock's."""
    if not str(body.get("model") or "").startswith("judge"):
        return mock.complete(body)
    from fairpair.testing._judge import judge_reply

    messages = body.get("messages") or []
    text = judge_reply(messages)
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if body.get("logprobs"):
        top = [{"token": t, "logprob": lp} for t, lp in _JUDGE_LOGPROBS.items()]
        choice["logprobs"] = {"content": [{"token": "4", "logprob": -0.4, "top_logprobs": top}]}
    prompt = sum(len(str(m.get("content") or "")) for m in messages) // 4
    return {"id": "chatcmpl-judge", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model"), "system_fingerprint": "fp_judge", "choices": [choice],
            "usage": {"prompt_tokens": prompt, "completion_tokens": len(text) // 4,
                      "total_tokens": prompt + len(text) // 4}}


# ---------------------------------------------------------------- Anthropic's Messages API and Message Batches
def _openai_of(params: dict[str, Any]) -> dict[str, Any]:
    """Anthropic ``params`` as the OpenAI body the mock reads (system first, blocks joined as text)."""
    def text(content: Any) -> str:
        if isinstance(content, str):
            return content
        return "".join(str(b.get("text") or b.get("content") or "") for b in content or [] if isinstance(b, dict))

    messages = ([{"role": "system", "content": text(params["system"])}] if params.get("system") else []) + [
        {"role": m.get("role"), "content": text(m.get("content"))} for m in params.get("messages") or []]
    return {"model": params.get("model"), "messages": messages}


def _message_of(body: dict[str, Any], rid: str) -> dict[str, Any]:
    """An OpenAI completion body as an Anthropic ``message``."""
    choice = body["choices"][0]
    usage = body.get("usage") or {}
    return {"id": f"msg_{rid}", "type": "message", "role": "assistant", "model": body.get("model"),
            "content": [{"type": "text", "text": choice["message"].get("content") or ""}],
            "stop_reason": "max_tokens" if choice.get("finish_reason") == "length" else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": usage.get("prompt_tokens") or 0, "output_tokens": usage.get("completion_tokens")
                      or 0}}


class AnthropicApi:
    """The state of the loopback Anthropic API: ``batches`` (id -> batch object), ``results`` (id -> JSONL
    bytes), ``executed`` (a Counter of the ``custom_id`` values answered), ``live`` (messages answered)."""

    MAX_REQUESTS = 100_000

    def __init__(self, behaviour: BatchBehaviour, mock: OpenAIMock):
        self.behaviour = behaviour
        self.mock = mock
        self.batches: dict[str, dict[str, Any]] = {}
        self.requests: dict[str, list[dict[str, Any]]] = {}
        self.results: dict[str, bytes] = {}
        self.polls: Counter = Counter()
        self.executed: Counter = Counter()
        self.live = 0
        self._ids = itertools.count(1)
        self.base_url = ""

    def app(self) -> web.Application:
        app = web.Application(client_max_size=512 * 1024 * 1024)
        app.router.add_post("/v1/messages", self.message)
        app.router.add_post("/v1/messages/batches", self.create)
        app.router.add_get("/v1/messages/batches", self.listing)
        app.router.add_get("/v1/messages/batches/{id}", self.retrieve)
        app.router.add_get("/v1/messages/batches/{id}/results", self.result_file)
        return app

    @staticmethod
    def _error(status: int, kind: str, message: str) -> web.Response:
        return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)

    async def message(self, request: web.Request) -> web.Response:
        params = await request.json()
        self.live += 1
        return web.json_response(_message_of(answer_body(self.mock, _openai_of(params)), f"live{self.live}"))

    async def create(self, request: web.Request) -> web.Response:
        body = await request.json()
        reqs = body.get("requests")
        if not isinstance(reqs, list) or not reqs:
            return self._error(400, "invalid_request_error", "requests: a non-empty list")
        if len(reqs) > self.MAX_REQUESTS:
            return self._error(400, "invalid_request_error", f"{len(reqs)} requests; at most {self.MAX_REQUESTS}")
        ids = [r.get("custom_id") for r in reqs]
        if len(set(ids)) != len(ids):
            return self._error(400, "invalid_request_error", "custom_id values must be unique within a batch")
        bid = f"msgbatch_{next(self._ids):06d}"
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.requests[bid] = reqs
        self.batches[bid] = {
            "id": bid, "type": "message_batch", "processing_status": "in_progress",
            "request_counts": {"processing": len(reqs), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
            "created_at": now, "expires_at": now, "ended_at": None, "archived_at": None,
            "cancel_initiated_at": None, "results_url": None}
        return web.json_response(self.batches[bid])

    async def listing(self, request: web.Request) -> web.Response:
        data = list(reversed(self.batches.values()))
        return web.json_response({"data": data, "has_more": False, "first_id": None, "last_id": None})

    async def retrieve(self, request: web.Request) -> web.Response:
        bid = request.match_info["id"]
        batch = self.batches.get(bid)
        if batch is None:
            return self._error(404, "not_found_error", f"no batch {bid}")
        if batch["processing_status"] == "in_progress":
            self.polls[bid] += 1
            if self.polls[bid] > self.behaviour.polls_before_done:
                self._execute(bid, str(request.url.origin()))
        return web.json_response(batch)

    async def result_file(self, request: web.Request) -> web.Response:
        bid = request.match_info["id"]
        if bid not in self.results:
            return self._error(404, "not_found_error", f"no results for {bid}")
        return web.Response(body=self.results[bid], content_type="application/binary")

    def _execute(self, bid: str, origin: str) -> None:
        b = self.behaviour
        out: list[bytes] = []
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for k, req in enumerate(self.requests[bid], start=1):
            cid = req["custom_id"]
            if b.drop_every and k % b.drop_every == 0:
                continue
            if b.expire_after is not None and counts["succeeded"] + counts["errored"] >= b.expire_after:
                out.append(_line({"custom_id": cid, "result": {"type": "expired"}}))
                counts["expired"] += 1
                continue
            if b.fail_every and k % b.fail_every == 0:
                out.append(_line({"custom_id": cid, "result": {"type": "errored", "error": {
                    "type": "error", "error": {"type": "api_error", "message": "Internal server error"}}}}))
                counts["errored"] += 1
                continue
            self.executed[cid] += 1
            out.append(_line({"custom_id": cid, "result": {"type": "succeeded", "message": _message_of(
                answer_body(self.mock, _openai_of(req["params"])), f"{bid}_{k}")}}))
            if b.duplicate_every and k % b.duplicate_every == 0:
                out.append(out[-1])
            counts["succeeded"] += 1
        self.results[bid] = b"".join(out)
        self.batches[bid].update(processing_status="ended", request_counts=counts,
                                 ended_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                 results_url=f"{origin}/v1/messages/batches/{bid}/results")


@contextlib.contextmanager
def serve_anthropic_api(behaviour: BatchBehaviour | None = None, *, mock: Any = None,
                        names: dict[str, str] | None = None, port: int = 0) -> Iterator[tuple[AioServer, AnthropicApi]]:
    """The loopback Anthropic API (aiohttp) on 127.0.0.1:``port`` (0: a free one); yields ``(server, api)``:
    the target's ``base_url`` is ``server.base_url`` without its ``/v1`` (the SDK adds it)."""
    api = AnthropicApi(behaviour or BatchBehaviour(), OpenAIMock(mock=mock, names=names))
    with AioServer(api.app(), port=port) as server:
        yield server, api
