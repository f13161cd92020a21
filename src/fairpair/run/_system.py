"""A target's own system prompt (``targets: {name: {kind: ..., system_file: ...}}``).

The same model under two system prompts is two systems: a battery lists
both as targets, each with its prompt, and one run answers every case with
each (the production prompt and a changed one, compared in one report and by
``fairpair compare RUN RUN --target-before A --target-after B``).

The cases are the same for every target (their ids, seeds and matched sets
do not depend on the target); :class:`SystemPrompted` replaces the system
message of each request (the template's, rendered) with the target's prompt
filled from the case's context (``{crm}``, ``{crm.nombre}``, written as the
battery's ``context_channels.format``), or puts it first when the template
has none. The manifest records the prompt's SHA-256 and text in the target's
identity, so a resumed run whose prompt changed says so (``target_changed``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from fairpair.cases import fill_slots
from fairpair.targets import ChatRequest, Completion

__all__ = ["SystemPrompted", "with_system_prompt"]


def with_system_prompt(request: ChatRequest, system: str, fmt: str = "yaml") -> ChatRequest:
    """``request`` with its first system message replaced by ``system`` filled from ``request.context``
    (inserted first when it has none)."""
    text = fill_slots(system, {}, request.context, fmt)
    messages = list(request.messages)
    at = next((i for i, m in enumerate(messages) if m.get("role") == "system"), None)
    if at is None:
        messages.insert(0, {"role": "system", "content": text})
    else:
        messages[at] = {**messages[at], "content": text}
    return ChatRequest(messages=tuple(messages), context=request.context, tools=request.tools,
                       tool_results=request.tool_results, seed=request.seed, case_id=request.case_id,
                       meta=request.meta, choices=request.choices)


class SystemPrompted:
    """A target that answers with its own system prompt: every request goes to ``inner`` with the
    system message replaced (see the module notes). Everything else (``load``, ``aclose``,
    ``max_concurrency``, a fleet's probe...) is the inner target's."""

    def __init__(self, inner: Any, system: str, fmt: str = "yaml") -> None:
        self._inner = inner
        self.system = system
        self.fmt = fmt

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_inner":
            raise AttributeError(name)
        if name == "probe_fleet":  # it takes a request: the inner one would skip the prompt
            raise AttributeError(f"a target with its own system prompt has no {name}")
        found = getattr(self._inner, name)
        if name in ("render_prompt", "preview", "batch_request"):  # the request as this target sends it
            return lambda request, **kw: found(self.request(request), **kw)
        if name == "batch_api":  # a provider batch's requests, with this target's system prompt
            return lambda: _PromptedBatches(found(), self)
        return found

    def request(self, request: ChatRequest) -> ChatRequest:
        """``request`` as this target sends it (its system prompt in place of the template's)."""
        return with_system_prompt(request, self.system, self.fmt)

    async def generate(self, request: ChatRequest) -> Completion:
        return await self._inner.generate(self.request(request))

    def identity(self) -> dict[str, Any]:
        ident = dict(self._inner.identity())
        ident["system_prompt"] = {"sha256": hashlib.sha256(self.system.encode("utf-8")).hexdigest(),
                                  "text": self.system}
        return ident


class _PromptedBatches:
    """A batch API (:mod:`fairpair.run._batchcalls`) whose requests carry a :class:`SystemPrompted`
    target's system prompt; everything else is the inner API's."""

    def __init__(self, api: Any, outer: SystemPrompted) -> None:
        self._api, self._outer = api, outer

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_api", "_outer"):
            raise AttributeError(name)
        return getattr(self._api, name)

    async def __aenter__(self) -> _PromptedBatches:
        await self._api.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._api.__aexit__(*exc)

    def body(self, request: ChatRequest) -> dict[str, Any]:
        return self._api.body(self._outer.request(request))
