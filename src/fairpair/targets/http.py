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

The HTTP client (aiohttp: keep-alive, TLS, proxies from the environment)
and the mapping of failures and statuses onto
:class:`~fairpair.targets.TargetError` are shared with the ``openai`` target
(:mod:`fairpair.targets._client`, re-exported here).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fairpair.targets._base import ChatRequest, Completion, TargetBase, TargetError, ToolCall
from fairpair.targets._client import (
    RETRYABLE_STATUS,
    ClientPool,
    Reply,
    check_env,
    check_header_values,
    env_names,
    expand_env,
    parse_retry_after,
    prepared_request,
    redact_text,
    status_error,
    transport_error,
)

__all__ = ["HTTPOptions", "HTTPTarget", "ClientPool", "RETRYABLE_STATUS", "Reply", "check_env", "env_names",
           "expand_env", "parse_retry_after", "prepared_request", "redact_text", "render_body", "status_error",
           "transport_error", "body_context_paths"]

_PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[^{}\s.]+)*)\s*\}\}")
_PLACEHOLDERS = ("messages", "last_user_message", "system_prompt", "context", "seed", "case_id")


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

    @field_validator("headers")
    @classmethod
    def _no_literal_secret(cls, v: dict[str, str]) -> dict[str, str]:
        check_header_values(v, option="headers")
        return v

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
        inner = item.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else item
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


class HTTPTarget(TargetBase):
    """The ``http`` target (see :class:`HTTPOptions` and the module docstring)."""

    Options = HTTPOptions
    kind = "http"
    options: HTTPOptions

    def __init__(self, options: dict[str, Any] | HTTPOptions, *, name: str = "http"):
        super().__init__(options, name=name)
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
        resp = await self._pool.request(o.method, url, json_body=body, headers=headers, secrets=secrets)
        if not resp.ok:
            hint = ("check the headers' environment variables " + ", ".join(self._env)) if self._env \
                else "check the headers"
            raise status_error(resp, secrets=secrets, auth_hint=hint)
        try:
            data = resp.json()
        except ValueError:
            raise TargetError(f"the answer is not JSON (status {resp.status}, "
                              f"{len(resp.body)} bytes)", retryable=True) from None
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
