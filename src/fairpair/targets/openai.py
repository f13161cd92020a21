"""The ``openai`` target: any OpenAI-compatible ``/chat/completions`` endpoint.

OpenAI itself, Azure-style gateways, vLLM, llama.cpp server, Ollama, LM
Studio... anything that speaks the Chat Completions protocol
(https://platform.openai.com/docs/api-reference/chat/create)::

    target:
      kind: openai
      base_url: https://api.openai.com/v1
      model: gpt-4o-mini
      api_key_env: OPENAI_API_KEY      # the NAME of the variable, never the key
      temperature: 0.7
      max_tokens: 300

The client is aiohttp (:mod:`fairpair.targets._client`: keep-alive, TLS,
proxies from the environment), not the ``openai`` SDK: the protocol is one
JSON POST, the run engine already retries (with backoff and ``Retry-After``)
and counts the attempts, the SDK's own retries and its httpx transport would
have to be switched off, and it measured slower (issue #15: 260 against
aiohttp's 298 answers/s at 64 in flight on loopback), and every failure is
reported our way:

* 408, 409, 429 and 5xx, timeouts, refused or dropped connections, bodies that
  are not JSON or have no ``choices``: retryable, with the server's
  ``retry-after-ms`` / ``Retry-After`` delay;
* 401/403: "authentication failed (check the env var NAME)", not retried;
* 404: "model not found", not retried; other 4xx: the server's message, not retried.

Tools. With ``request.tools`` the tool definitions are sent; when the model
calls tools, every call is recorded (name, decoded arguments, id) and answered
with the case's scripted result, ``request.tool_results[name]`` JSON-encoded
(a tool that was not offered gets ``{"error": "unknown tool '<name>'"}``, an
offered tool without a scripted result gets ``{"ok": true}``), until the
model answers in text. After ``max_tool_steps`` rounds of tool answers the
loop stops with ``finish_reason = "tool_steps_exhausted"``.

Seeds. The case's seed (shared by the members of a matched set) is sent as
``seed``, mixed with ``seed`` from the options when given (the ``local``
target's rule); ``send_seed: false`` for servers that reject the parameter.

The API key is read from the environment when the target is built, sent only
in the ``Authorization`` header, and never written to the manifest, errors or
logs.

Other providers. The organisation and project headers of OpenAI go in
``extra_headers`` (``OpenAI-Organization: "${OPENAI_ORG_ID}"``). Azure OpenAI
takes its key in an ``api-key`` header and the API version in the query
string, both of which ``base_url`` and ``extra_headers`` carry::

    target:
      kind: openai
      base_url: https://RESOURCE.openai.azure.com/openai/deployments/DEPLOYMENT?api-version=2024-10-21
      model: gpt-4o-mini
      api_key_env: null
      extra_headers: {api-key: "${AZURE_OPENAI_API_KEY}"}

(``/chat/completions`` is added to the path; the query string is kept.)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fairpair.errors import FairpairError
from fairpair.targets._base import ChatRequest, Completion, TargetBase, TargetError, ToolCall, Usage, first_top_logprobs
from fairpair.targets._client import (
    ClientPool,
    Reply,
    check_header_values,
    env_var_name,
    expand_env,
    header_env,
    prepared_request,
    redact_text,
    status_error,
)
from fairpair.targets._fleet import Fleet

__all__ = ["OpenAIOptions", "OpenAITarget", "chat_with_tools", "completion_of", "parse_choice"]

_SEED_SPACE = 2**31 - 1


def _aiohttp_version() -> str | None:
    try:
        return version("aiohttp")
    except PackageNotFoundError:  # pragma: no cover - aiohttp is a dependency
        return None


class OpenAIOptions(BaseModel):
    """Options of the ``openai`` target (unknown keys are errors).

    Attributes
    ----------
    model:
        Model name as the server knows it (required).
    base_url:
        Root of the API, ending before ``/chat/completions``
        (default ``https://api.openai.com/v1``); a query string is kept
        (Azure's ``?api-version=...``). A list of two or more roots is a fleet
        of servers of one model (:mod:`fairpair.targets._fleet`): requests are
        spread over them, a failing one is drained and its requests sent to the
        others, and the model versions they answer with are compared.
    endpoint_concurrency:
        With a list of ``base_url``: most requests in flight per endpoint
        (>= 1; default: no cap beyond the run's ``--concurrency``).
    api_key_env:
        Name of the environment variable that holds the API key (default
        ``OPENAI_API_KEY``); ``null`` for servers without authentication.
    temperature, top_p, max_tokens:
        Sampling parameters; omitted from the request when not set.
    seed:
        Base seed mixed with each case's seed (see the module docstring).
    send_seed:
        Send a ``seed`` at all (default true).
    extra_headers:
        Extra request headers; values may contain ``${ENV_VAR}``.
    timeout:
        Seconds per HTTP request (> 0).
    max_tool_steps:
        Most rounds of tool answers per turn (default 5).
    choices_constraint:
        How a request with ``choices`` (a judge's constrained answer: score
        digits, yes/no) is sent. ``logprobs`` (default): ``logprobs: true``
        and ``top_logprobs: 20`` (OpenAI's maximum), and the first answer
        token's candidates are read into
        :attr:`~fairpair.targets.Completion.top_logprobs` (OpenAI, vLLM,
        llama.cpp server; the answer itself is not constrained, which the
        probabilities do not need); ``grammar``: the same plus a GBNF
        ``grammar`` restricting the answer to the choices (the llama.cpp
        server's own field, https://github.com/ggml-org/llama.cpp/tree/master/tools/server;
        OpenAI rejects it); ``off``: nothing is sent, no probabilities are
        read (a measure that needs them stops with a clear error). A JSON
        schema is not offered: its answer starts with ``"``, so its first
        token's probabilities say nothing about the choice.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    base_url: str | list[str] = "https://api.openai.com/v1"
    endpoint_concurrency: int | None = Field(None, ge=1)
    api_key_env: str | None = "OPENAI_API_KEY"
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    seed: int | None = None
    send_seed: bool = True
    extra_headers: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(120.0, gt=0)
    max_tool_steps: int = Field(5, ge=0)
    choices_constraint: Literal["logprobs", "grammar", "off"] = "logprobs"

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str | list[str]) -> str | list[str]:
        urls = v if isinstance(v, list) else [v]
        if not urls:
            raise ValueError("base_url: give one URL, or a list of two or more (a fleet)")
        for u in urls:
            if not re.match(r"^https?://[^\s/]+", u):
                raise ValueError(f"base_url must start with http:// or https:// (got {u!r})")
        urls = [u.rstrip("/") for u in urls]
        dup = sorted({u for u in urls if urls.count(u) > 1})
        if dup:
            raise ValueError(f"base_url lists {dup[0]!r} twice; each endpoint of a fleet once")
        if isinstance(v, list):
            return urls if len(urls) > 1 else urls[0]  # a one-item list is one server
        return urls[0]

    @model_validator(mode="after")
    def _fleet_options(self) -> OpenAIOptions:
        if self.endpoint_concurrency is not None and not isinstance(self.base_url, list):
            raise ValueError("endpoint_concurrency applies to a fleet: give base_url as a list of two or more "
                             "URLs, or use --concurrency for one server")
        return self

    @property
    def base_urls(self) -> list[str]:
        """Every root URL: one, or the fleet's in the order given."""
        return list(self.base_url) if isinstance(self.base_url, list) else [self.base_url]

    def endpoint(self, base_url: str | None = None) -> str:
        """``base_url`` (default: the first) + ``/chat/completions``, its query string (if any) kept at the end."""
        parts = urlsplit(base_url or self.base_urls[0])
        return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/chat/completions"))

    @field_validator("extra_headers")
    @classmethod
    def _no_literal_secret(cls, v: dict[str, str]) -> dict[str, str]:
        check_header_values(v, option="extra_headers")
        return v

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        return env_var_name(v, example="OPENAI_API_KEY")


def parse_choice(data: Any) -> tuple[dict[str, Any], str | None]:
    """The first choice's ``message`` and ``finish_reason`` of a chat completion body.

    Raises
    ------
    TargetError
        (retryable) the body has no choices or no message.
    """
    if not isinstance(data, dict):
        raise TargetError("malformed response: not a JSON object", retryable=True)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise TargetError("malformed response: no choices", retryable=True)
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise TargetError("malformed response: the choice has no message", retryable=True)
    return message, first.get("finish_reason")


def completion_of(data: Any) -> Completion:
    """The :class:`Completion` of one chat-completion body (a batch output line's ``response.body``).

    Tool calls the model asked for are kept (``finish_reason`` as the server said); nothing answers them.
    ``top_logprobs``: the first token's candidates when the body has them (:func:`first_top_logprobs`).

    Raises
    ------
    TargetError
        The body has no choices or no message (as :func:`parse_choice`).
    """
    message, finish = parse_choice(data)
    usage = data.get("usage") or {}
    calls = tuple(ToolCall((c.get("function") or {}).get("name", ""),
                           _decode_arguments((c.get("function") or {}).get("arguments")), id=c.get("id"))
                  for c in message.get("tool_calls") or [])
    return Completion(text=_message_text(message), tool_calls=calls,
                      usage=Usage(usage.get("prompt_tokens"), usage.get("completion_tokens")) if usage else Usage(),
                      finish_reason=finish, model=data.get("model"), system_fingerprint=data.get("system_fingerprint"),
                      top_logprobs=first_top_logprobs(data["choices"][0]))


#: first-token candidates asked for a request with ``choices`` (OpenAI's maximum ``top_logprobs``)
TOP_LOGPROBS = 20


def _message_text(message: dict[str, Any]) -> str:
    text = message.get("content") or ""
    if not isinstance(text, str):  # content parts
        text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
    return text


def _decode_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str) or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"_raw": raw}  # the model wrote invalid JSON: keep it as written
    return value if isinstance(value, dict) else {"_value": value}


def _tool_answer(name: str, request: ChatRequest) -> Any:
    offered = {t.get("function", {}).get("name") for t in (request.tools or ())}
    if name in request.tool_results:
        return request.tool_results[name]
    if name in offered:
        return {"ok": True}
    return {"error": f"unknown tool '{name}'"}


async def chat_with_tools(send, request: ChatRequest, *, max_tool_steps: int) -> Completion:
    """Run one turn: call ``send(messages) -> (body: dict)`` until the model answers in text.

    ``send`` posts the messages (with ``request.tools``) and returns the
    decoded chat-completion body. Shared by the ``openai`` and ``litellm``
    targets so both answer tool calls the same way.
    """
    messages: list[dict[str, Any]] = [dict(m) for m in request.messages]
    calls: list[ToolCall] = []
    prompt = completion = 0
    seen_usage = False
    steps = 0
    while True:
        data = await send(messages)
        message, finish = parse_choice(data)
        usage = data.get("usage") or {}
        if usage:
            seen_usage = True
            prompt += int(usage.get("prompt_tokens") or 0)
            completion += int(usage.get("completion_tokens") or 0)
        raw_calls = message.get("tool_calls") or []
        text = _message_text(message)
        if raw_calls and steps >= max_tool_steps:
            calls += [ToolCall((c.get("function") or {}).get("name", ""),
                               _decode_arguments((c.get("function") or {}).get("arguments")), id=c.get("id"))
                      for c in raw_calls]
            finish = "tool_steps_exhausted"
        if not raw_calls or finish == "tool_steps_exhausted":
            return Completion(
                text=text, tool_calls=tuple(calls),
                usage=Usage(prompt if seen_usage else None, completion if seen_usage else None),
                finish_reason=finish, model=data.get("model"), system_fingerprint=data.get("system_fingerprint"),
                top_logprobs=first_top_logprobs(data["choices"][0]) if request.choices else None)
        steps += 1
        messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": raw_calls})
        for c in raw_calls:
            fn = c.get("function") or {}
            name = fn.get("name", "")
            result = _tool_answer(name, request)
            calls.append(ToolCall(name, _decode_arguments(fn.get("arguments")), id=c.get("id"), result=result))
            messages.append({"role": "tool", "tool_call_id": c.get("id"),
                             "content": json.dumps(result, ensure_ascii=False, default=str)})


class OpenAITarget(TargetBase):
    """The ``openai`` target (see :class:`OpenAIOptions` and the module docstring)."""

    Options = OpenAIOptions
    kind = "openai"
    options: OpenAIOptions

    def __init__(self, options: dict[str, Any] | OpenAIOptions, *, name: str = "openai"):
        super().__init__(options, name=name)
        o = self.options
        self._header_env = header_env(o.extra_headers, target=name)
        self._key: str | None = None
        if o.api_key_env is not None:
            key = os.environ.get(o.api_key_env)
            if not key:
                raise FairpairError(f"target '{name}': environment variable {o.api_key_env} is not set "
                                    "(api_key_env)", hint=f"export {o.api_key_env}=... or set api_key_env: null "
                                    "for a server without authentication")
            self._key = key
        self._url = o.endpoint()
        self._pool = ClientPool(timeout=o.timeout)
        self.fleet: Fleet | None = None
        if len(o.base_urls) > 1:
            self.fleet = Fleet([(u, o.endpoint(u)) for u in o.base_urls], per_endpoint=o.endpoint_concurrency)
            if o.endpoint_concurrency:
                self.max_concurrency = o.endpoint_concurrency * len(o.base_urls)

    def _secrets(self) -> list[str]:
        out = [os.environ[n] for n in self._header_env if os.environ.get(n)]
        return out + ([self._key] if self._key else [])

    def seed_for(self, request: ChatRequest) -> int | None:
        """The ``seed`` sent: the case's, mixed with ``options.seed`` through SHA-256 when both are set."""
        base, own = self.options.seed, request.seed
        if base is None or own is None:
            return own if base is None else base
        digest = hashlib.sha256(f"{base}:{own}".encode()).digest()
        return int.from_bytes(digest[:8], "big") % _SEED_SPACE

    def _payload(self, request: ChatRequest, messages: list[dict[str, Any]]) -> dict[str, Any]:
        o = self.options
        body: dict[str, Any] = {"model": o.model, "messages": messages}
        for key in ("temperature", "top_p", "max_tokens"):
            value = getattr(o, key)
            if value is not None:
                body[key] = value
        if o.send_seed:
            seed = self.seed_for(request)
            if seed is not None:
                body["seed"] = seed
        if request.tools:
            body["tools"] = list(request.tools)
        if request.choices and o.choices_constraint != "off":
            body |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
            if o.choices_constraint == "grammar":
                body["grammar"] = "root ::= " + " | ".join(json.dumps(c, ensure_ascii=False) for c in request.choices)
        return body

    def preview(self, request: ChatRequest) -> dict[str, Any]:
        """The exact first request :meth:`generate` sends for ``request`` (secrets as ``***``)."""
        o = self.options
        headers = {k: expand_env(v, where=f"extra_headers.{k}") for k, v in o.extra_headers.items()}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return prepared_request("POST", self._url, self._payload(request, [dict(m) for m in request.messages]),
                                headers, secrets=self._secrets())

    async def generate(self, request: ChatRequest) -> Completion:
        o = self.options
        headers = {k: expand_env(v, where=f"extra_headers.{k}") for k, v in o.extra_headers.items()}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        secrets = self._secrets()

        async def post(url: str, base_url: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
            resp = await self._pool.request("POST", url, json_body=self._payload(request, messages),
                                            headers=headers, secrets=secrets)
            if resp.status == 404:
                raise self._not_found(resp, secrets, base_url=base_url, url=url)
            if not resp.ok:
                raise status_error(resp, secrets=secrets, auth_hint=f"check the env var {o.api_key_env}"
                                   if o.api_key_env else "the server wants an API key: set api_key_env")
            try:
                return resp.json()
            except ValueError:
                raise TargetError(f"malformed response: not JSON ({len(resp.body)} bytes, "
                                  f"status {resp.status})", retryable=True) from None

        async def send(messages: list[dict[str, Any]]) -> dict[str, Any]:
            if self.fleet is None:
                return await post(self._url, o.base_urls[0], messages)
            return await self._fleet_send(post, messages)

        return await chat_with_tools(send, request, max_tool_steps=o.max_tool_steps)

    async def _fleet_send(self, post, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """Send to the fleet's chosen endpoint; on the endpoint's own failure (connection, 5xx) send the
        same messages to another one at once, until every endpoint has failed this request."""
        fleet = self.fleet
        assert fleet is not None
        tried: set[int] = set()
        while True:
            i, ep = await fleet.acquire(tried)
            try:
                data = await post(ep.url, ep.base_url, messages)
            except TargetError as exc:
                kind = await fleet.release(ep, error=exc, answered=exc.status is not None and exc.status < 500)
                if kind is None or len(tried) + 1 >= len(fleet.endpoints):
                    raise
                tried.add(i)
                continue
            except BaseException:  # cancelled (the engine's timeout): the slot is given back, nothing learnt
                ep.in_flight -= 1
                ep.probing = False
                raise
            await fleet.release(ep, answered=True, model=data.get("model") if isinstance(data, dict) else None,
                                system_fingerprint=data.get("system_fingerprint") if isinstance(data, dict)
                                else None)
            return data

    async def probe_fleet(self, request: ChatRequest) -> list[dict[str, Any]]:
        """Send ``request``'s first call to every endpoint of the fleet (the preflight's check).

        Returns one ``{"base_url", "model", "system_fingerprint", "error"}`` per
        endpoint; an endpoint that fails is drained (it is probed again later).
        The answers are compared, not stored. ``[]`` for a single server.
        """
        fleet = self.fleet
        if fleet is None:
            return []
        o = self.options
        headers = {k: expand_env(v, where=f"extra_headers.{k}") for k, v in o.extra_headers.items()}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        secrets = self._secrets()
        body = self._payload(request, [dict(m) for m in request.messages])
        body.pop("tools", None)  # a text answer is enough to read the version

        async def one(ep) -> dict[str, Any]:
            ep.in_flight += 1
            out: dict[str, Any] = {"base_url": ep.base_url, "model": None, "system_fingerprint": None,
                                   "error": None}
            try:
                resp = await self._pool.request("POST", ep.url, json_body=body, headers=headers, secrets=secrets)
                if not resp.ok:
                    raise status_error(resp, secrets=secrets, auth_hint="check api_key_env")
                data = resp.json()
                out["model"], out["system_fingerprint"] = data.get("model"), data.get("system_fingerprint")
                await fleet.release(ep, answered=True, model=out["model"],
                                         system_fingerprint=out["system_fingerprint"])
            except (TargetError, ValueError, AttributeError) as exc:
                out["error"] = redact_text(str(exc), secrets)
                err = exc if isinstance(exc, TargetError) else TargetError(str(exc))
                await fleet.release(ep, error=err, answered=err.status is not None and err.status < 500)
            return out

        import asyncio

        return list(await asyncio.gather(*(one(ep) for ep in fleet.endpoints)))

    # ------------------------------------------------------------ provider batch APIs (fairpair.run._batch)
    def batch_request(self, request: ChatRequest, *, keep_choices: bool = False) -> dict[str, Any]:
        """The ``{"method", "url", "body"}`` of ``request`` in a Batch API input line: the exact body
        :meth:`generate` would post first, ``url`` the chat-completions path (``/v1/chat/completions``).

        ``keep_choices``: the caller stores the whole completion, first-token probabilities included
        (the judge's batches, :mod:`fairpair.run._batchcalls`), so a request with ``choices`` goes
        with ``logprobs`` as it does live.

        Raises
        ------
        FairpairError
            ``request`` offers tools: a batch answers one request per case and cannot answer tool calls;
            or it has ``choices`` (a judge's constrained answer) without ``keep_choices``: the batch's
            answers are stored as text, so the first-token probabilities of yes/no or probability
            scoring would be lost.
        """
        if request.choices and not keep_choices:
            raise FairpairError(f"target '{self.name}': --batch cannot send a request with choices (a judge's "
                                "constrained answer): the batch's answers are stored as text, without the "
                                "first-token probabilities that yes/no and probability scoring read",
                                hint="the judge runs in `fairpair measure`, through its target's own requests")
        if request.tools:
            raise FairpairError(f"target '{self.name}': --batch cannot run cases with tools (a batch answers one "
                                "request per case; the scripted tool answers need a second request)",
                                hint="run this battery without --batch")
        path = urlsplit(self._url).path or "/v1/chat/completions"
        return {"method": "POST", "url": path, "body": self._payload(request, [dict(m) for m in request.messages])}

    def batch_headers(self) -> dict[str, str]:
        """The headers of the Batch API's calls (``Authorization`` and ``extra_headers``); secrets included."""
        headers = {k: expand_env(v, where=f"extra_headers.{k}") for k, v in self.options.extra_headers.items()}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    def fleet_report(self) -> dict[str, Any] | None:
        """The fleet's endpoints, counts, versions and ``mixed`` (``None`` for a single server)."""
        return None if self.fleet is None else self.fleet.report()

    def _not_found(self, resp: Reply, secrets: list[str], *, base_url: str | None = None,
                   url: str | None = None) -> TargetError:
        try:
            err = resp.json().get("error") or {}
        except (ValueError, AttributeError):
            err = {}
        message = redact_text(str(err.get("message") or "") if isinstance(err, dict) else str(err), secrets)
        code = err.get("code") if isinstance(err, dict) else None
        if code == "model_not_found" or "model" in message.lower():
            return TargetError(f"model not found: '{self.options.model}' at {base_url or self.options.base_urls[0]}"
                               + (f" ({message})" if message else ""), status=404)
        return TargetError(f"not found: {url or self._url} (check base_url)" + (f" ({message})" if message else ""),
                           status=404)

    def identity(self) -> dict[str, Any]:
        o = self.options
        return {"kind": "openai", "name": self.name, "base_url": o.base_url, "model": o.model,
                "api_key_env": o.api_key_env, "extra_header_names": sorted(o.extra_headers),
                "parameters": {"temperature": o.temperature, "top_p": o.top_p, "max_tokens": o.max_tokens,
                               "seed": o.seed, "send_seed": o.send_seed, "timeout": o.timeout,
                               "max_tool_steps": o.max_tool_steps},
                "client": f"aiohttp {_aiohttp_version()}",
                **({"fleet": {"endpoints": len(o.base_urls), "endpoint_concurrency": o.endpoint_concurrency}}
                   if self.fleet is not None else {})}

    async def aclose(self) -> None:
        await self._pool.aclose()
