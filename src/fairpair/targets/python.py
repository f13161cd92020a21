"""The ``python`` target: a function of yours answers each case.

For a chatbot that lives in Python (a LangChain chain, a rules engine, a
wrapper around an in-house client)::

    target:
      kind: python
      callable: mybot.audit:answer     # module:function
      path: ../src                     # optional, added to sys.path (relative to the battery)

The function receives ``(messages: list[dict], context: dict)``, the chat so
far (OpenAI-style) and the case's context fields, and returns the reply
``str`` or a dict ``{"text": str, "tool_calls": [{"name", "arguments"}, ...], "finish_reason": str}``
(``text`` may be None with a ``finish_reason`` such as ``content_filter`` or ``length``, as an
API's ``content: null``; the answer's status is then ``filtered``/``empty``).
It may be ``async def``; a plain function runs in a worker thread so the
engine can keep several cases in flight (set ``max_concurrency: 1`` if it is
not thread-safe).

A module or function that cannot be found is a battery error before anything
is sent. An exception raised by the function fails that case only: it is
stored with its type and message, and the run goes on.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fairpair.errors import FairpairError
from fairpair.targets._base import ChatRequest, Completion, TargetBase, TargetError, ToolCall

__all__ = ["PythonOptions", "PythonTarget"]


class PythonOptions(BaseModel):
    """Options of the ``python`` target (unknown keys are errors).

    Attributes
    ----------
    callable:
        ``"package.module:function"`` (attribute paths such as ``mod:Bot.answer`` work).
    path:
        A directory added to the front of ``sys.path`` before importing;
        relative paths are taken from the battery file's directory.
    max_concurrency:
        Most calls in flight at once (default: the run's concurrency).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    callable: str
    path: str | None = None
    max_concurrency: int | None = Field(None, ge=1)

    @field_validator("callable")
    @classmethod
    def _ref(cls, v: str) -> str:
        from fairpair._plugins import check_reference

        try:
            return check_reference(v)
        except ValueError as exc:
            raise ValueError(f"callable {exc}") from None


def _resolve(ref: str, path: str | None, base_dir: Path | None, target: str):
    from fairpair._plugins import ReferenceProblem, load_reference

    directory = None
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_absolute():
            p = (base_dir or Path.cwd()) / p
        directory = p.resolve()
        if not directory.is_dir():
            raise FairpairError(f"target '{target}': path {directory} is not a directory", key="path")
    try:
        return load_reference(ref, path=directory)
    except ReferenceProblem as exc:
        raise FairpairError(f"target '{target}': {exc.message}", key="callable", hint=exc.hint) from None


def _completion(value: Any, ref: str) -> Completion:
    if isinstance(value, str):
        return Completion(text=value, finish_reason="stop")
    fr = value.get("finish_reason") if isinstance(value, dict) else None
    if fr is not None and not isinstance(fr, str):
        raise TargetError(f"{ref} returned a non-string finish_reason: {fr!r}"[:300])
    if isinstance(value, dict) and (isinstance(value.get("text"), str) or (value.get("text") is None and fr)):
        calls = []
        for c in value.get("tool_calls") or []:
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                raise TargetError(f"{ref} returned a tool call without a 'name': {c!r}"[:300])
            args = c.get("arguments") or {}
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    args = {"_raw": args}
            calls.append(ToolCall(c["name"], args if isinstance(args, dict) else {"_value": args}, id=c.get("id"),
                                  result=c.get("result")))
        return Completion(text=value["text"] or "", tool_calls=tuple(calls), finish_reason=fr or "stop")
    raise TargetError(f"{ref} returned {type(value).__name__}; expected a str or a dict with 'text' "
                      "(and optional 'tool_calls')")


class PythonTarget(TargetBase):
    """The ``python`` target (see :class:`PythonOptions` and the module docstring)."""

    Options = PythonOptions
    kind = "python"
    options: PythonOptions

    def __init__(self, options: dict[str, Any] | PythonOptions, *, name: str = "python",
                 base_dir: str | Path | None = None):
        super().__init__(options, name=name)
        self.max_concurrency = self.options.max_concurrency
        self._fn = _resolve(self.options.callable, self.options.path, Path(base_dir) if base_dir else None, name)
        # a callable object with an ``async def __call__`` is awaited too
        self._async = inspect.iscoroutinefunction(self._fn) or inspect.iscoroutinefunction(self._fn.__call__)

    async def generate(self, request: ChatRequest) -> Completion:
        messages = [dict(m) for m in request.messages]
        context = json.loads(json.dumps(request.context))  # a private copy: the function may mutate it
        ref = self.options.callable
        try:
            if self._async:
                value = await self._fn(messages, context)
            else:
                value = await asyncio.to_thread(self._fn, messages, context)
        except TargetError:
            raise
        except (ConnectionError, TimeoutError) as exc:  # the function's own backend hiccuped: worth a retry
            raise TargetError(f"{ref} raised {type(exc).__name__}: {exc}", retryable=True) from None
        except Exception as exc:  # noqa: BLE001 - the case fails, the run goes on
            raise TargetError(f"{ref} raised {type(exc).__name__}: {exc}") from None
        return _completion(value, ref)

    def identity(self) -> dict[str, Any]:
        fn = self._fn
        source = getattr(inspect.getmodule(fn), "__file__", None)
        return {"kind": "python", "name": self.name, "callable": self.options.callable, "path": self.options.path,
                "file": source, "max_concurrency": self.options.max_concurrency}
