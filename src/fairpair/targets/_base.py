"""The target protocol: one verb, ``generate``.

A target is the system under test (or a judge). The run engine hands it a
:class:`ChatRequest` and receives a :class:`Completion`. Failures that may go
away on retry (429, 5xx, timeouts, dropped connections) are raised as
:class:`TargetError` with ``retryable=True`` and, when the server sent one, the
``Retry-After`` delay in seconds; everything else is ``retryable=False``.

A target plugin subclasses :class:`TargetBase` and declares its options as a
pydantic ``Options`` model that forbids unknown keys; the base validates them
(the same check the battery loader runs, with the same "did you mean") and
refuses, when the class is defined, a subclass that declares none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ValidationError

__all__ = ["ChatRequest", "Completion", "ToolCall", "Target", "TargetBase", "TargetError", "Usage",
           "first_top_logprobs"]


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

    Frozen; new fields are added with defaults, so a target written against
    an older ``ChatRequest`` keeps working (read the fields you need, ignore
    the others).

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
    meta:
        The case's groups, variants, template and baseline flag; only the
        ``mock`` target reads it (to plant its bias), a real target must not.
    choices:
        ``None`` (free text, the default) or the only answers allowed, each one
        token (a judge's score levels, ``("1", "2", "3", "4", "5")``). A target
        that can constrain decoding (``local``: a llama.cpp grammar; ``openai``
        with ``choices_constraint: grammar``: the llama.cpp server's) answers
        one of them, and a target that can report probabilities (those two, and
        ``openai`` with its default ``logprobs``) gives the model's
        log-probabilities of the first answer token in
        :attr:`Completion.top_logprobs`; a target that cannot leaves
        ``top_logprobs`` unset, and the caller must say so.
    """

    messages: tuple[dict[str, Any], ...]
    context: dict[str, Any] = field(default_factory=dict)
    tools: tuple[dict[str, Any], ...] | None = None
    tool_results: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    case_id: str = ""
    meta: dict[str, Any] = field(default_factory=dict)  # group, variant, template... (mock bias only)
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Completion:
    """A target's final answer to one case.

    ``top_logprobs``: for a request with ``choices``, the model's most likely
    first answer tokens and their natural-log probabilities before the
    constraint (token text -> log p, at most 20), as the target reported them;
    ``None`` when not reported.
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    finish_reason: str | None = None
    model: str | None = None
    system_fingerprint: str | None = None
    top_logprobs: dict[str, float] | None = None


def first_top_logprobs(choice: Any) -> dict[str, float] | None:
    """token -> natural log p of the first answer token's candidates in a chat-completion choice
    (``choice["logprobs"]["content"][0]["top_logprobs"]``, the OpenAI shape that vLLM and the
    llama.cpp server also send), or None when the server sent none: :attr:`Completion.top_logprobs`
    of the ``openai`` and ``local`` targets."""
    try:
        first = choice["logprobs"]["content"][0]
        return {str(c["token"]): float(c["logprob"]) for c in first["top_logprobs"]}
    except (KeyError, IndexError, TypeError, ValueError):
        return None


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


class TargetBase:
    """Base class of target plugins: validated options, a name, nothing to close.

    A subclass sets ``Options`` (a pydantic model with ``extra="forbid"``),
    ``kind`` (its entry-point name, the default ``name``) and implements
    ``generate`` and ``identity``; it may set ``max_concurrency``::

        class EchoOptions(BaseModel):
            model_config = ConfigDict(extra="forbid", frozen=True)
            prefix: str = ""

        class EchoTarget(TargetBase):
            Options = EchoOptions
            kind = "echo"

            async def generate(self, request):
                return Completion(text=self.options.prefix + request.messages[-1]["content"])

            def identity(self):
                return {"kind": self.kind, "prefix": self.options.prefix}

    Defining a subclass without such a model raises
    :class:`~fairpair._plugins.PluginError` at once (pass ``abstract=True``
    in the class statement for an intermediate base of your own).

    Parameters
    ----------
    options:
        The battery's options (a mapping, ``None`` for none) or an ``Options`` instance.
    name:
        The target's name in the run (default: ``kind``).

    Raises
    ------
    FairpairError
        The options do not validate; ``key`` is ``options.<key>`` and the hint
        a "did you mean" for a misspelt key.
    """

    Options: ClassVar[type[BaseModel]]
    kind: ClassVar[str] = ""
    max_concurrency: int | None = None

    def __init_subclass__(cls, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not abstract:
            from fairpair._plugins import check_options_model

            check_options_model(cls)

    def __init__(self, options: Mapping[str, Any] | BaseModel | None = None, *, name: str | None = None) -> None:
        self.options = self.parse_options(options)
        self.name = name or self.kind or type(self).__name__

    @classmethod
    def parse_options(cls, options: Mapping[str, Any] | BaseModel | None) -> Any:
        """``options`` validated as ``cls.Options`` (an instance is returned as is).

        Raises
        ------
        FairpairError
            As the class docstring says.
        """
        if isinstance(options, cls.Options):
            return options
        try:
            return cls.Options.model_validate(dict(options or {}))
        except ValidationError as exc:
            from fairpair._plugins import options_problem
            from fairpair.errors import FairpairError

            problem = options_problem(cls.Options, cls.kind or cls.__name__, exc)
            key = ".".join(str(part) for part in problem.key_path)
            raise FairpairError(f"invalid {cls.kind or cls.__name__} target options: {problem}",
                                key=f"options.{key}" if key else "options", hint=problem.hint) from None

    async def generate(self, request: ChatRequest) -> Completion:  # pragma: no cover - abstract
        raise NotImplementedError

    def identity(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    async def aclose(self) -> None:
        """Release connections or models (nothing by default)."""
        return None
