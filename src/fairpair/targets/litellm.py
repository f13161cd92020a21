"""The ``litellm`` target: any provider LiteLLM supports (Anthropic, Bedrock, Vertex, ...).

Needs the optional extra: ``pip install 'fairpair[litellm]'``. A thin layer
over ``litellm.acompletion`` (https://docs.litellm.ai/docs/completion/input):
LiteLLM's own retries are off (``num_retries=0``; the run engine retries), its
answers are OpenAI-shaped, so tool calls go through the same loop as the
``openai`` target (:func:`fairpair.targets.openai.chat_with_tools`)::

    target:
      kind: litellm
      model: anthropic/claude-3-5-haiku-latest
      api_key_env: ANTHROPIC_API_KEY
"""

from __future__ import annotations

import hashlib
import importlib
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fairpair.errors import FairpairError
from fairpair.targets._base import ChatRequest, Completion, TargetBase, TargetError
from fairpair.targets._client import env_var_name
from fairpair.targets.http import RETRYABLE_STATUS, parse_retry_after, redact_text
from fairpair.targets.openai import chat_with_tools

__all__ = ["LiteLLMOptions", "LiteLLMTarget"]

_INSTALL_LINE = "pip install 'fairpair[litellm]'"


class LiteLLMOptions(BaseModel):
    """Options of the ``litellm`` target (unknown keys are errors).

    ``model`` is LiteLLM's ``provider/model`` name; ``api_key_env`` the NAME of
    the variable with the key (``null``: let LiteLLM read its usual
    variables); ``base_url`` an optional API base; ``temperature``, ``top_p``,
    ``max_tokens``, ``seed`` as in the ``openai`` target; ``timeout`` seconds;
    ``max_tool_steps`` rounds of tool answers per turn.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    api_key_env: str | None = None
    base_url: str | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    seed: int | None = None
    timeout: float = Field(120.0, gt=0)
    max_tool_steps: int = Field(5, ge=0)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        return env_var_name(v)


def _import_litellm():
    try:
        return importlib.import_module("litellm")
    except ModuleNotFoundError as exc:
        if exc.name != "litellm":
            raise
        raise FairpairError(f"the 'litellm' target needs LiteLLM: {_INSTALL_LINE}") from None


class LiteLLMTarget(TargetBase):
    """The ``litellm`` target (see :class:`LiteLLMOptions`)."""

    Options = LiteLLMOptions
    kind = "litellm"
    options: LiteLLMOptions

    def __init__(self, options: dict[str, Any] | LiteLLMOptions, *, name: str = "litellm"):
        super().__init__(options, name=name)
        self._litellm = _import_litellm()
        self._key = None
        if self.options.api_key_env:
            self._key = os.environ.get(self.options.api_key_env)
            if not self._key:
                raise FairpairError(f"target '{name}': environment variable {self.options.api_key_env} is not "
                                    "set (api_key_env)")

    def _error(self, exc: Exception) -> TargetError:
        status = getattr(exc, "status_code", None)
        secrets = [self._key] if self._key else []
        msg = redact_text(str(exc), secrets)[:300]
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None) or {}
        kind = type(exc).__name__
        if status in (401, 403):
            where = f"the env var {self.options.api_key_env}" if self.options.api_key_env else "the provider's key"
            return TargetError(f"authentication failed (check {where}): {msg}", status=status)
        if status == 404:
            return TargetError(f"model not found: '{self.options.model}': {msg}", status=404)
        if "Timeout" in kind or "Connection" in kind or status in RETRYABLE_STATUS or (status or 0) >= 500:
            return TargetError(f"{kind}: {msg}", retryable=True, status=status,
                               retry_after=parse_retry_after(headers) if headers else None)
        return TargetError(f"{kind}: {msg}", status=status)

    async def generate(self, request: ChatRequest) -> Completion:
        o = self.options
        kwargs: dict[str, Any] = {"model": o.model, "timeout": o.timeout, "num_retries": 0}
        for key in ("temperature", "top_p", "max_tokens"):
            if getattr(o, key) is not None:
                kwargs[key] = getattr(o, key)
        seed = request.seed if o.seed is None else (
            o.seed if request.seed is None else
            int.from_bytes(hashlib.sha256(f"{o.seed}:{request.seed}".encode()).digest()[:8], "big") % (2**31 - 1))
        if seed is not None:
            kwargs["seed"] = seed
        if self._key:
            kwargs["api_key"] = self._key
        if o.base_url:
            kwargs["api_base"] = o.base_url
        if request.tools:
            kwargs["tools"] = list(request.tools)

        async def send(messages: list[dict[str, Any]]) -> dict[str, Any]:
            try:
                resp = await self._litellm.acompletion(messages=messages, **kwargs)
            except Exception as exc:  # noqa: BLE001 - mapped onto TargetError
                raise self._error(exc) from None
            return resp.model_dump() if hasattr(resp, "model_dump") else dict(resp)

        return await chat_with_tools(send, request, max_tool_steps=o.max_tool_steps)

    def identity(self) -> dict[str, Any]:
        o = self.options
        version = getattr(self._litellm, "__version__", None)
        return {"kind": "litellm", "name": self.name, "model": o.model, "api_key_env": o.api_key_env,
                "base_url": o.base_url, "backend_version": version,
                "parameters": {"temperature": o.temperature, "top_p": o.top_p, "max_tokens": o.max_tokens,
                               "seed": o.seed, "timeout": o.timeout, "max_tool_steps": o.max_tool_steps}}
