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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fairpair.targets._base import ChatRequest, Completion, TargetBase, TargetError, ToolCall, Usage

__all__ = ["MockTarget", "MockOptions", "RankingEffects", "mock_reply", "mock_ranking"]


class Effects(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    refund: float | None = Field(None, ge=0, le=1)
    escalate: float | None = Field(None, ge=0, le=1)
    words_factor: float = Field(1.0, gt=0)
    options: int | None = Field(None, ge=0)


class RankingEffects(BaseModel):
    """The mock's ranking mode: a Plackett-Luce draw of the candidates named in the prompt.

    ``selection``: weight per group (or per variant, overriding its group;
    default 1); ``position``: weight per slot, first slot first (default 1
    each; a list shorter than k leaves the rest at 1). A candidate's weight
    is its selection weight times its slot's; the ranking is drawn by
    Plackett-Luce (Luce 1959; Plackett 1975): the first place with
    probability proportional to the weights, the second among the rest, and
    so on. ``style``: how the ranked list is written (``numbered``
    ``1. Name`` lines, ``arrows`` ``A > B > C``, ``commas``, ``prose``, or
    ``mixed``: one of them per case); ``unparsed``: share of answers that
    refuse to rank (no candidate named), 0-1.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    selection: dict[str, float] = Field(default_factory=dict)
    position: list[float] = Field(default_factory=list)
    style: Literal["numbered", "arrows", "commas", "prose", "mixed"] = "numbered"
    unparsed: float = Field(0.0, ge=0, le=1)

    @model_validator(mode="after")
    def _positive(self) -> RankingEffects:
        bad = [k for k, w in self.selection.items() if not w > 0] + [str(i + 1) for i, w in enumerate(self.position)
                                                                      if not w > 0]
        if bad:
            raise ValueError(f"ranking weights must be > 0 (got a weight <= 0 for {', '.join(bad)})")
        return self


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

    ``ranking`` (:class:`RankingEffects`) switches on the ranking mode: a
    request whose prompt names two or more of its case's variants (the
    candidates of a ``ranking`` design, in ``meta.variants``) is answered
    with a ranked list of those names, drawn by Plackett-Luce from per-group
    weights (a planted **selection bias**) times per-slot weights (a planted
    **position bias**; the slot is the order in which the names first appear
    in the last user turn), with the request's seed and case id. Other
    requests get the customer-service answer.

    A request with ``choices`` (a judge's constrained answer, e.g. the tone
    judge's ``scoring: yes_no``) is answered with its likeliest choice and
    the choices' first-token log-probabilities, drawn from a hash of the
    messages: deterministic, unrelated to the answer judged (a mock judge
    fails the judge self-test).
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
    ranking: RankingEffects | None = None


_FILLER = {
    "es": ("Gracias por escribirnos y por su paciencia. Entendemos perfectamente la situación y "
           "queremos ayudarle a resolverla lo antes posible con la mejor solución disponible para usted "
           "según nuestras políticas vigentes y el historial de su cuenta en nuestra tienda.").split(),
    "en": ("Thank you for reaching out and for your patience. We fully understand the situation and "
           "want to help you resolve it as soon as possible with the best solution available to you "
           "under our current policies and the history of your account with our store.").split(),
}
_TEXT: dict[str, dict[str, Any]] = {
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


_RANK_TEXT = {
    "es": {"intro": "Tras revisar los perfiles, este es mi orden de preferencia:", "prose_first":
           "Mi primera opción es {0}", "then": "seguido de {0}", "last": "y en último lugar {0}",
           "refuse": "No puedo ordenar a personas candidatas con esta información; recomiendo una "
                     "evaluación estructurada."},
    "en": {"intro": "After reviewing the profiles, this is my ranking:", "prose_first": "My first choice is {0}",
           "then": "followed by {0}", "last": "and last {0}",
           "refuse": "I cannot rank candidates with this information; I recommend a structured assessment."},
}


def _candidates(request: ChatRequest) -> list[tuple[str, str]]:
    """(group, variant) of the case's variants named in the last user turn, in order of first mention."""
    groups = request.meta.get("groups") or {}
    variants = request.meta.get("variants") or {}
    users = [m for m in request.messages if m.get("role") == "user"]
    text = str(users[-1].get("content", "")) if users else ""
    found = []
    for key, v in variants.items():
        at = text.find(v) if v else -1
        if at >= 0:
            found.append((at, str(groups.get(key, key)), v))
    return [(g, v) for _, g, v in sorted(found)]


def mock_ranking(options: MockOptions, request: ChatRequest) -> str | None:
    """The ranking mode's answer (see :class:`RankingEffects`), or None when the request is no ranking."""
    rk = options.ranking
    if rk is None:
        return None
    cands = _candidates(request)
    if len(cands) < 2:
        return None
    lang = options.language if options.language in _RANK_TEXT else "es"
    T = _RANK_TEXT[lang]
    rng = random.Random(f"{request.seed}|{request.case_id}|ranking")
    if rng.random() < rk.unparsed:
        return T["refuse"]
    weights = []
    for slot, (g, v) in enumerate(cands):
        w = rk.selection.get(v, rk.selection.get(g, 1.0))
        weights.append(w * (rk.position[slot] if slot < len(rk.position) else 1.0))
    left = list(range(len(cands)))
    order = []
    while left:  # Plackett-Luce: each place drawn among the remaining, proportional to the weights
        total = sum(weights[i] for i in left)
        u, acc = rng.random() * total, 0.0
        pick = left[-1]
        for i in left:
            acc += weights[i]
            if u < acc:
                pick = i
                break
        order.append(pick)
        left.remove(pick)
    names = [cands[i][1] for i in order]
    style = rk.style
    if style == "mixed":
        style = ("numbered", "arrows", "commas", "prose")[rng.randrange(4)]
    if style == "numbered":
        return T["intro"] + "\n" + "\n".join(f"{i + 1}. {n}" for i, n in enumerate(names))
    if style == "arrows":
        return T["intro"] + " " + " > ".join(names)
    if style == "commas":
        return T["intro"] + " " + ", ".join(names) + "."
    parts = [T["prose_first"].format(names[0])] + [T["then"].format(n) for n in names[1:-1]]
    return ", ".join(parts) + ", " + T["last"].format(names[-1]) + "."


def _choice_reply(options: MockOptions, request: ChatRequest) -> Completion:
    """A request with ``choices`` (a judge's constrained answer): the first-token log-probabilities
    of the choices are a softmax of scores drawn from SHA-256 of the messages and the choice (the
    same request, the same probabilities), and the answer is the likeliest choice."""
    import math

    key = _messages_key(request.messages)
    scores = {c: int(hashlib.sha256(f"{key}|{c}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF * 4
              for c in request.choices or ()}
    top = max(scores.values())
    log_z = top + math.log(sum(math.exp(s - top) for s in scores.values()))
    best = max(scores, key=lambda c: scores[c])
    prompt_chars = sum(len(str(m.get("content", ""))) for m in request.messages)
    return Completion(text=best, usage=Usage(prompt_tokens=prompt_chars // 4, completion_tokens=1),
                      finish_reason="stop", model=options.model, system_fingerprint="mock",
                      top_logprobs={c: s - log_z for c, s in scores.items()})


def _messages_key(messages) -> str:
    import json

    return json.dumps(list(messages), sort_keys=True, ensure_ascii=False, default=str)


def mock_reply(options: MockOptions, request: ChatRequest) -> Completion:
    """The deterministic answer of the mock for ``request`` (no latency, no faults)."""
    if request.choices:
        return _choice_reply(options, request)
    ranked = mock_ranking(options, request)
    if ranked is not None:
        prompt_chars = sum(len(str(m.get("content", ""))) for m in request.messages)
        return Completion(text=ranked, tool_calls=(),
                          usage=Usage(prompt_tokens=prompt_chars // 4, completion_tokens=len(ranked) // 4),
                          finish_reason="stop", model=options.model, system_fingerprint="mock")
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
