"""The target protocol: one verb, ``generate``.

A target is the system under test (or a judge). The run engine hands it a
:class:`ChatRequest` and receives a :class:`Completion`. Failures that may go
away on retry (429, 5xx, timeouts, dropped connections) are raised as
:class:`TargetError` with ``retryable=True`` and, when the server sent one, the
``Retry-After`` delay in seconds; everything else is ``retryable=False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["ChatRequest", "Completion", "ToolCall", "Target", "TargetError", "Usage"]


@dataclass(frozen=True)
class ToolCall:
    """One function call made by the model: ``name`` and decoded ``arguments``."""

    name: str
    arguments: dict[str, Any]
    id: str | None = None
    result: Any = None  # what the scripted tool answered, when the engine answered it


@dataclass(frozen=True)
class Usage:
    """Token counts reported by the server (``None`` when not reported)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True)
class ChatRequest:
    """What a target receives for one case.

    Attributes
    ----------
    messages:
        OpenAI-style chat messages, ``[{"role": "system"|"user"|"assistant", "content": str}]``.
    context:
        The case's context fields (e.g. a CRM record), as production would pass them.
    tools:
        OpenAI-style tool (function) definitions, or ``None``.
    tool_results:
        Scripted tool answers keyed by tool name, taken from the case's context.
    seed:
        Per-case seed (includes the repetition index), or ``None``.
    case_id:
        The case's content hash, for logging and mock determinism.
    """

    messages: tuple[dict[str, Any], ...]
    context: dict[str, Any] = field(default_factory=dict)
    tools: tuple[dict[str, Any], ...] | None = None
    tool_results: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    case_id: str = ""
    meta: dict[str, Any] = field(default_factory=dict)  # group, variant, template... (mock bias only)


@dataclass(frozen=True)
class Completion:
    """A target's final answer to one case."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    finish_reason: str | None = None
    model: str | None = None
    system_fingerprint: str | None = None


class TargetError(Exception):
    """A failed generation. ``retryable`` tells the engine whether to try again."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


@runtime_checkable
class Target(Protocol):
    """A system that answers chat requests.

    Implementations are constructed from their battery options
    (``Target(options: dict, *, name: str)``), may hold connections, and are
    closed with ``aclose()``. ``identity()`` returns what the manifest records
    (kind, model, base URL, parameters), never a secret. ``max_concurrency``
    caps parallel calls (``1`` for an embedded single-sequence model).
    """

    name: str
    max_concurrency: int | None

    async def generate(self, request: ChatRequest) -> Completion: ...

    def identity(self) -> dict[str, Any]: ...

    async def aclose(self) -> None: ...
