"""The ``anthropic`` target (and judge): Anthropic's Messages API through the official ``anthropic`` SDK.

Needs the optional extra: ``pip install 'fairpair[anthropic]'``::

    target:
      kind: anthropic
      model: claude-haiku-4-5
      api_key_env: ANTHROPIC_API_KEY   # the NAME of the variable, never the key
      max_tokens: 512                  # required by the API (default 1024)
      temperature: 0.7

Live: ``AsyncAnthropic.messages.create`` (https://docs.anthropic.com/en/api/messages) with the SDK's
own retries off (``max_retries=0``: the run engine retries, with backoff and ``Retry-After``, and
counts the attempts). A ``system`` message goes in the ``system`` parameter; the tools of a
battery (OpenAI's ``function`` definitions) are sent as Anthropic tools (``input_schema``) and
answered with the case's scripted results through the ``openai`` target's tool loop
(:func:`fairpair.targets.openai.chat_with_tools`), the replies translated both ways. Failures:
408, 409, 429, 5xx, timeouts and dropped connections are retryable; 401/403 name the key's
variable. The SDK reports no token probabilities, so a judge's ``scoring: probabilities`` or
``yes_no`` needs another judge.

Batches: Anthropic's Message Batches API
(https://docs.anthropic.com/en/docs/build-with-claude/batch-processing), for the judge's calls and
multi-turn cases (:mod:`fairpair.run._batchcalls`): ``requests`` of ``{"custom_id", "params"}``
(the exact parameters sent live), at most :data:`MAX_BATCH_REQUESTS` requests or
:data:`MAX_BATCH_BYTES` per batch; results as JSONL, one ``{"custom_id", "result": {"type":
"succeeded" | "errored" | "canceled" | "expired", ...}}`` per request. Requests with tools are
refused in batch (a tool answer needs a second request).
"""

from __future__ import annotations

import importlib
import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fairpair.errors import FairpairError
from fairpair.targets._base import ChatRequest, Completion, TargetBase, TargetError
from fairpair.targets._client import env_var_name, expand_env, header_env, redact_text

__all__ = ["AnthropicBatches", "AnthropicOptions", "AnthropicTarget", "MAX_BATCH_BYTES", "MAX_BATCH_REQUESTS",
           "openai_body", "message_params"]

_INSTALL_LINE = "pip install 'fairpair[anthropic]'"
#: Most requests in one Message Batch (Anthropic's limit).
MAX_BATCH_REQUESTS = 100_000
#: Most bytes of one Message Batch's requests (Anthropic's limit is 256 MB; a margin is kept).
MAX_BATCH_BYTES = 240 * 1024 * 1024
_RETRYABLE = {408, 409, 429}


class AnthropicOptions(BaseModel):
    """Options of the ``anthropic`` target (unknown keys are errors).

    ``model``: Anthropic's model name; ``base_url``: the API root (default
    ``https://api.anthropic.com``; a loopback server in tests); ``api_key_env``: the NAME of the
    variable holding the key; ``max_tokens`` (required by the API, default 1024), ``temperature``
    (0..1), ``top_p``; ``extra_headers`` (values may hold ``${ENV_VAR}``); ``timeout`` seconds per
    request; ``max_tool_steps``: rounds of tool answers per turn.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str = "ANTHROPIC_API_KEY"
    max_tokens: int = Field(1024, ge=1)
    temperature: float | None = Field(None, ge=0, le=1)
    top_p: float | None = Field(None, gt=0, le=1)
    extra_headers: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(120.0, gt=0)
    max_tool_steps: int = Field(5, ge=0)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str) -> str:
        env_var_name(v)  # raises on a value that is not a variable name
        return v


def _sdk():
    try:
        return importlib.import_module("anthropic")
    except ModuleNotFoundError as exc:
        if exc.name != "anthropic":
            raise
        raise FairpairError(f"the 'anthropic' target needs Anthropic's SDK: {_INSTALL_LINE}") from None


# ---------------------------------------------------------------- the two formats
def message_params(options: AnthropicOptions, messages: list[dict[str, Any]],
                   tools: tuple[dict[str, Any], ...] | None = None) -> dict[str, Any]:
    """The Messages API parameters of OpenAI-style ``messages`` (system, user, assistant with
    ``tool_calls``, tool) and OpenAI-style ``tools``; consecutive tool answers become one user turn."""
    system = "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        if role == "system":
            continue
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.get("tool_call_id"), "content": str(m.get("content"))}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            continue
        if role == "assistant" and m.get("tool_calls"):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            for c in m["tool_calls"]:
                fn = c.get("function") or {}
                args = fn.get("arguments")
                blocks.append({"type": "tool_use", "id": c.get("id"), "name": fn.get("name"),
                               "input": json.loads(args) if isinstance(args, str) and args else args or {}})
            out.append({"role": "assistant", "content": blocks})
            continue
        out.append({"role": "assistant" if role == "assistant" else "user", "content": str(m.get("content") or "")})
    params: dict[str, Any] = {"model": options.model, "max_tokens": options.max_tokens, "messages": out}
    if system:
        params["system"] = system
    for key in ("temperature", "top_p"):
        value = getattr(options, key)
        if value is not None:
            params[key] = value
    if tools:
        params["tools"] = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
                            "input_schema": t["function"].get("parameters") or {"type": "object"}}
                           for t in tools]
    return params


_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}


def openai_body(message: dict[str, Any]) -> dict[str, Any]:
    """A Messages API ``message`` (a dict) as an OpenAI chat-completion body (text, tool calls, usage,
    ``finish_reason`` mapped: ``end_turn`` -> ``stop``, ``max_tokens`` -> ``length``, ``tool_use`` ->
    ``tool_calls``)."""
    text = "".join(b.get("text", "") for b in message.get("content") or [] if b.get("type") == "text")
    calls = [{"id": b.get("id"), "type": "function",
              "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {})}}
             for b in message.get("content") or [] if b.get("type") == "tool_use"]
    usage = message.get("usage") or {}
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = calls
    stop = message.get("stop_reason")
    return {"model": message.get("model"), "choices": [{"index": 0, "message": msg,
                                                         "finish_reason": _FINISH.get(stop, stop) if stop else stop}],
            "usage": {"prompt_tokens": usage.get("input_tokens"), "completion_tokens": usage.get("output_tokens")}}


# ---------------------------------------------------------------- the target
class AnthropicTarget(TargetBase):
    """The ``anthropic`` target (see :class:`AnthropicOptions` and the module docstring)."""

    Options = AnthropicOptions
    kind = "anthropic"
    options: AnthropicOptions

    def __init__(self, options: dict[str, Any] | AnthropicOptions, *, name: str = "anthropic"):
        super().__init__(options, name=name)
        o = self.options
        self._header_env = header_env(o.extra_headers, target=name)
        key = os.environ.get(o.api_key_env)
        if not key:
            raise FairpairError(f"target '{name}': environment variable {o.api_key_env} is not set (api_key_env)",
                                hint=f"export {o.api_key_env}=...")
        self._key = key
        self._client: Any = None

    def _secrets(self) -> list[str]:
        return [self._key] + [os.environ[n] for n in self._header_env if os.environ.get(n)]

    def client(self) -> Any:
        """The SDK's ``AsyncAnthropic`` (built once; its own retries off)."""
        if self._client is None:
            o = self.options
            headers = {k: expand_env(v, where=f"extra_headers.{k}") for k, v in o.extra_headers.items()}
            self._client = _sdk().AsyncAnthropic(api_key=self._key, base_url=o.base_url, max_retries=0,
                                                 timeout=o.timeout, default_headers=headers or None)
        return self._client

    def _error(self, exc: Exception) -> TargetError:
        sdk = _sdk()
        text = redact_text(str(exc), self._secrets())
        if isinstance(exc, sdk.APIStatusError):
            status = exc.status_code
            if status in (401, 403):
                return TargetError(f"authentication failed (check the env var {self.options.api_key_env}): {text}",
                                   status=status)
            retry_after = None
            try:
                retry_after = float(exc.response.headers.get("retry-after"))
            except (TypeError, ValueError):
                pass
            return TargetError(f"HTTP {status}: {text}", status=status,
                               retryable=status in _RETRYABLE or status >= 500, retry_after=retry_after)
        return TargetError(f"{type(exc).__name__}: {text}", retryable=True)

    async def _send(self, params: dict[str, Any]) -> dict[str, Any]:
        sdk = _sdk()
        try:
            message = await self.client().messages.create(**params)
        except sdk.APIError as exc:
            raise self._error(exc) from None
        return openai_body(message.model_dump(mode="json"))

    async def generate(self, request: ChatRequest) -> Completion:
        from fairpair.targets.openai import chat_with_tools

        async def send(messages: list[dict[str, Any]]) -> dict[str, Any]:
            return await self._send(message_params(self.options, messages, request.tools))

        return await chat_with_tools(send, request, max_tool_steps=self.options.max_tool_steps)

    def preview(self, request: ChatRequest) -> dict[str, Any]:
        """The first request :meth:`generate` sends for ``request`` (the SDK's parameters)."""
        return {"method": "POST", "url": (self.options.base_url or "https://api.anthropic.com") + "/v1/messages",
                "body": message_params(self.options, [dict(m) for m in request.messages], request.tools)}

    def batch_api(self) -> AnthropicBatches:
        """Anthropic's Message Batches for this target (:mod:`fairpair.run._batchcalls`)."""
        return AnthropicBatches(self)

    def identity(self) -> dict[str, Any]:
        o = self.options
        return {"kind": "anthropic", "name": self.name, "base_url": o.base_url, "model": o.model,
                "api_key_env": o.api_key_env, "extra_header_names": sorted(o.extra_headers),
                "parameters": {"temperature": o.temperature, "top_p": o.top_p, "max_tokens": o.max_tokens,
                               "timeout": o.timeout, "max_tool_steps": o.max_tool_steps},
                "client": f"anthropic {getattr(_sdk(), '__version__', '?')}"}

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


class AnthropicBatches:
    """Message Batches of one ``anthropic`` target, in the interface of
    :class:`fairpair.run._batchcalls.OpenAIBatches` (``body``, ``line``, ``submit``, ``find``,
    ``retrieve``, ``download``, ``read``)."""

    format = "anthropic"
    #: the Messages API returns no token probabilities, in batch or live
    logprobs = False
    max_requests, max_bytes = MAX_BATCH_REQUESTS, MAX_BATCH_BYTES

    def __init__(self, target: AnthropicTarget):
        self.target = target
        self.root = target.options.base_url or "https://api.anthropic.com"

    async def __aenter__(self) -> AnthropicBatches:
        return self

    async def __aexit__(self, *exc) -> None:
        return None

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """``{"params": ...}``: the parameters :meth:`AnthropicTarget.generate` sends first.

        Raises
        ------
        FairpairError
            ``request`` offers tools (the scripted tool answers need a second request).
        """
        if request.tools:
            raise FairpairError(f"target '{self.target.name}': --batch cannot run cases with tools (a batch answers "
                                "one request per case; the scripted tool answers need a second request)",
                                hint="run this battery without --batch")
        return {"params": message_params(self.target.options, [dict(m) for m in request.messages])}

    def line(self, key: str, body: dict[str, Any]) -> bytes:
        return json.dumps({"custom_id": key, **body}, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    async def submit(self, path: Path, requests: int, metadata: dict[str, str]) -> dict[str, Any]:
        """Create a Message Batch of the requests of the JSONL file ``path`` (``POST
        /v1/messages/batches``, what ``messages.batches.create`` sends); the batch as a dict.

        The body ``{"requests": [...]}`` is streamed from the file through the SDK's client (its
        ``post`` with ``content``): the file's lines are the requests already, so they are neither
        parsed nor held in memory (``messages.batches.create`` would build and transform every
        request as Python objects: 230 requests/s and hundreds of MiB for 50,000).
        """
        async def body():
            yield b'{"requests":['
            with open(path, "rb") as fh:
                first = True
                for line in fh:
                    line = line.strip()
                    if line:
                        yield (b"" if first else b",") + line
                        first = False
            yield b"]}"

        sdk = _sdk()
        try:
            batch = await self.target.client().post(
                "/v1/messages/batches", cast_to=sdk.types.messages.MessageBatch, content=body(),
                options={"headers": {"Content-Type": "application/json"}})
        except sdk.APIError as exc:
            raise _batch_error(self.target, exc, "create batch") from None
        return _state(batch)

    async def find(self, input_name: str, *, since: str, requests: int,
                   known: frozenset[str] = frozenset()) -> dict[str, Any] | None:
        """The batch a killed session submitted but did not record: Message Batches carry no metadata,
        so the one batch of the latest page created at or after ``since`` (ISO time, less a minute of
        clock skew) with ``requests`` requests; None when there is none or more than one (the file is
        then submitted again, and an answer given twice is reported, never stored)."""
        from datetime import datetime, timedelta

        try:
            page = await self.target.client().messages.batches.list(limit=100)
        except _sdk().APIError as exc:
            raise _batch_error(self.target, exc, "list batches") from None
        t0 = datetime.fromisoformat(since) - timedelta(minutes=1)
        hits = []
        for b in page.data:
            state = _state(b)
            created = datetime.fromisoformat(str(state.get("created_at")).replace("Z", "+00:00"))
            if created >= t0 and state["request_counts"]["total"] == requests and state["id"] not in known:
                hits.append(state)
        return hits[0] if len(hits) == 1 else None

    async def retrieve(self, batch_id: str) -> tuple[str, bool, dict[str, Any]]:
        try:
            batch = await self.target.client().messages.batches.retrieve(batch_id)
        except _sdk().APIError as exc:
            raise _batch_error(self.target, exc, f"batch {batch_id}") from None
        state = _state(batch)
        return state["status"], state["status"] == "ended", state

    async def download(self, state: dict[str, Any], folder: Path) -> list[Path]:
        """The results JSONL, streamed to ``folder/<id>.results.jsonl`` (``.part`` first, then renamed)."""
        if not state.get("results_url"):
            return []
        dest = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', state['id'])}.results.jsonl"
        part = dest.with_name(dest.name + ".part")
        try:
            async with self.target.client().messages.batches.with_streaming_response.results(state["id"]) as resp:
                with open(part, "wb") as fh:
                    async for chunk in resp.iter_bytes():
                        fh.write(chunk)
        except _sdk().APIError as exc:
            raise _batch_error(self.target, exc, f"results of {state['id']}") from None
        part.replace(dest)
        return [dest]

    def read(self, line: Any, batch_id: str) -> tuple[str | None, Completion | None, str | None]:
        """``(custom_id, completion, error)`` of one results line."""
        from fairpair.targets.openai import completion_of

        if not isinstance(line, dict):
            return None, None, None
        cid = line.get("custom_id")
        result = line.get("result") or {}
        kind = result.get("type")
        if kind == "succeeded":
            try:
                return cid, completion_of(openai_body(result.get("message") or {})), None
            except TargetError as exc:
                return cid, None, f"BatchError: {exc} [batch {batch_id}]"
        if kind == "errored":
            err = (result.get("error") or {}).get("error") or result.get("error") or {}
            msg = " ".join(str(err.get(k)) for k in ("type", "message") if err.get(k)) if isinstance(err, dict) \
                else str(err)
            return cid, None, f"BatchError ({kind}): {msg or 'no message'} [batch {batch_id}]"
        return cid, None, f"BatchError ({kind or 'no result'}): no answer [batch {batch_id}]"


def _state(batch: Any) -> dict[str, Any]:
    d = batch.model_dump(mode="json") if hasattr(batch, "model_dump") else dict(batch)
    c = d.get("request_counts") or {}
    total = sum(int(v or 0) for v in c.values())
    done = int(c.get("succeeded") or 0) + int(c.get("errored") or 0)
    return {**d, "status": d.get("processing_status") or "unknown",
            "request_counts": {"total": total, "completed": done, **c}}


def _batch_error(target: AnthropicTarget, exc: Exception, what: str) -> FairpairError:
    err = target._error(exc)
    return FairpairError(f"batch API ({target.name}): {what} failed: {err}",
                         hint=f"check the key ({target.options.api_key_env}) and base_url; nothing stored is lost, "
                              "run the same command again to resume")
