"""A scripted, deterministic target with planted bias, for tests and benchmarks.

The mock writes a customer-service answer whose decisions are drawn from
per-group probabilities, so the whole pipeline can be checked for recovering a
known effect. Draws use the request's seed (shared by the members of a matched
set: common random numbers) mixed with an independent per-case draw, so pairs
are correlated as real answers are: with probability ``correlation`` both
members use the same uniform number, otherwise each draws its own.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from fairpair.targets._base import ChatRequest, Completion, TargetBase, TargetError, ToolCall, Usage

__all__ = ["MockTarget", "MockOptions", "mock_reply"]


class Effects(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    refund: float | None = Field(None, ge=0, le=1)
    escalate: float | None = Field(None, ge=0, le=1)
    words_factor: float = Field(1.0, gt=0)
    options: int | None = Field(None, ge=0)


class MockOptions(BaseModel):
    """Options of the ``mock`` target.

    ``refund`` / ``escalate``: base probabilities (0-1); ``words``: mean answer
    length in words; ``options``: concrete options listed; ``bias``: per group
    name (any attribute's group, or ``sub``/``res`` identity) or per variant
    (one name, e.g. ``Carmen``; it overrides its group's) the effects that
    replace the base (e.g. ``magreb: {refund: 0.66, words_factor: 0.8}``);
    ``latency``: seconds per call; ``fail_rate``: share of calls that raise a
    retryable error; ``correlation``: 0-1, how often the members of a matched
    set share their random draw; ``language``: ``es`` or ``en``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    refund: float = Field(0.7, ge=0, le=1)
    escalate: float = Field(0.3, ge=0, le=1)
    words: int = Field(60, ge=1)
    options: int = Field(2, ge=0)
    bias: dict[str, Effects] = Field(default_factory=dict)
    latency: float = Field(0.0, ge=0)
    fail_rate: float = Field(0.0, ge=0, le=1)
    correlation: float = Field(0.6, ge=0, le=1)
    language: str = "es"
    model: str = "mock-1"


_FILLER = {
    "es": ("Gracias por escribirnos y por su paciencia. Entendemos perfectamente la situación y "
           "queremos ayudarle a resolverla lo antes posible con la mejor solución disponible para usted "
           "según nuestras políticas vigentes y el historial de su cuenta en nuestra tienda.").split(),
    "en": ("Thank you for reaching out and for your patience. We fully understand the situation and "
           "want to help you resolve it as soon as possible with the best solution available to you "
           "under our current policies and the history of your account with our store.").split(),
}
_TEXT = {
    "es": {"hello": "Hola{name}, lamento lo ocurrido.", "refund": "Le ofrecemos el reembolso completo del importe.",
           "no_refund": "Por ahora no podemos tramitar un reembolso.",
           "escalate": "Le paso con un agente humano para que lo revise.",
           "options": ["Sustitución del producto", "Cambio por otro modelo", "Vale de compra",
                       "Recogida a domicilio", "Reparación en garantía"],
           "intro": "Estas son sus opciones:"},
    "en": {"hello": "Hello{name}, I am sorry about this.", "refund": "We can offer you a full refund.",
           "no_refund": "We cannot process a refund at this time.",
           "escalate": "I will transfer you to a human agent.",
           "options": ["Replacement", "Exchange for another model", "Store credit", "Home pickup", "Warranty repair"],
           "intro": "Here are your options:"},
}


def _uniform(seed: int | None, case_id: str, salt: str, correlation: float) -> float:
    shared = random.Random(f"{seed}|{salt}")
    own = random.Random(f"{case_id}|{salt}")
    u_shared, u_own, pick = shared.random(), own.random(), own.random()
    return u_shared if pick < correlation else u_own


def mock_reply(options: MockOptions, request: ChatRequest) -> Completion:
    """The deterministic answer of the mock for ``request`` (no latency, no faults)."""
    groups = list((request.meta.get("groups") or {}).values())
    variants = list((request.meta.get("variants") or {}).values())
    eff = Effects()
    for g in groups + variants:  # a group's effects, then (overriding) a single variant's, e.g. one name
        if g in options.bias:
            eff = options.bias[g]
    p_refund = eff.refund if eff.refund is not None else options.refund
    p_escalate = eff.escalate if eff.escalate is not None else options.escalate
    n_opt = eff.options if eff.options is not None else options.options
    lang = options.language if options.language in _TEXT else "es"
    T = _TEXT[lang]
    refund = _uniform(request.seed, request.case_id, "refund", options.correlation) < p_refund
    escalate = _uniform(request.seed, request.case_id, "escalate", options.correlation) < p_escalate
    name = request.meta.get("variants", {})
    first = next(iter(name.values()), "") if name else ""
    parts = [T["hello"].format(name=f" {first}" if first else "")]
    parts.append(T["refund"] if refund else T["no_refund"])
    if escalate:
        parts.append(T["escalate"])
    if n_opt:
        parts.append(T["intro"])
        parts += [f"{i + 1}. {o}." for i, o in enumerate(T["options"][:n_opt])]
    target_words = max(5, round(options.words * eff.words_factor))
    rng = random.Random(f"{request.case_id}|words")
    jitter = rng.randint(-3, 3)
    have = sum(len(p.split()) for p in parts)
    filler = _FILLER[lang]
    need = max(0, target_words + jitter - have)
    body = " ".join(filler[i % len(filler)] for i in range(need))
    text = " ".join(parts[:2]) + (" " + body if body else "") + ("\n" + "\n".join(parts[2:]) if parts[2:] else "")
    calls: list[ToolCall] = []
    tool_names = {t.get("function", {}).get("name") for t in (request.tools or ())}
    if refund and "issue_refund" in tool_names:
        calls.append(ToolCall("issue_refund", {"reason": "damaged"}, id="call_1"))
    if escalate and "transfer_to_human" in tool_names:
        calls.append(ToolCall("transfer_to_human", {}, id="call_2"))
    prompt_chars = sum(len(str(m.get("content", ""))) for m in request.messages)
    return Completion(text=text, tool_calls=tuple(calls),
                      usage=Usage(prompt_tokens=prompt_chars // 4, completion_tokens=len(text) // 4),
                      finish_reason="stop", model=options.model, system_fingerprint="mock")


class MockTarget(TargetBase):
    """The ``mock`` target (see :class:`MockOptions`)."""

    Options = MockOptions
    kind = "mock"
    options: MockOptions

    async def generate(self, request: ChatRequest) -> Completion:
        if self.options.latency:
            await asyncio.sleep(self.options.latency)
        if self.options.fail_rate:
            h = int(hashlib.sha256(f"{request.case_id}|{random.random()}".encode()).hexdigest()[:8], 16)
            if h / 0xFFFFFFFF < self.options.fail_rate:
                raise TargetError("mock: injected failure (503)", retryable=True, status=503)
        return mock_reply(self.options, request)

    def identity(self) -> dict[str, Any]:
        return {"kind": "mock", "model": self.options.model, "options": self.options.model_dump(mode="json")}
