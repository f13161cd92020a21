"""The cost of an audit before anything is sent: tokens per stage, priced live and in batch.

Stages (one row each in :class:`CostEstimate`):

``answers``
    Per target: every user turn of every case (the conversation so far resent at each turn, the earlier
    replies counted at the output estimate), rendered exactly as ``fairpair run`` sends it (the target's
    own ``system`` prompt included, the tools' definitions counted with each call).
``judge``
    Per judge measure (``judge``, ``llm_extract``, ``pairwise``): the very messages the measure sends
    (:meth:`fairpair.measures.Measure.judge_requests`, masked: a pairwise measure's two orders are two
    calls, a ``per_dimension`` tone judge one call per dimension), for every answer it measures (a pairwise
    measure: the answers that have a counterpart), every target. An answer quoted in a judge prompt is
    counted at the target's output estimate.
``embeddings``
    Per ``semantic_distance`` measure: each answer it reads embedded once (input tokens only).
``judge self-test``
    Per judge measure the built-in anchors test (tone, pairwise), unless ``judge_self_test: off``: the
    anchors' calls, sent once before judging (:func:`fairpair.measures.self_test_items`).

Output tokens are the ``max_tokens`` of the target or judge block, an upper bound (an answer may stop
sooner); a block without one is counted at :data:`DEFAULT_OUTPUT_TOKENS`, said in the output. Not
counted: retries, and a judge's correction turns after an invalid output. Repetitions differ only in their
seed, so one repetition is expanded and multiplied (as ``fairpair plan``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fairpair.battery import LoadedBattery
from fairpair.cost._prices import LoadedPrices
from fairpair.cost._tokens import APPROXIMATE, CharsPerToken, TokenCounter, counter_for

__all__ = ["StageCost", "CostEstimate", "estimate_cost", "DEFAULT_OUTPUT_TOKENS", "model_of"]

#: Output tokens per call counted for a target or judge block without ``max_tokens`` (a chatbot's answer of
#: about 380 English words; the providers' own defaults are larger or unbounded).
DEFAULT_OUTPUT_TOKENS = 512

#: Stands for an answer inside a judge prompt while it is counted (a private-use character no masker touches).
_ANSWER = "\ue000"


@dataclass(frozen=True)
class StageCost:
    """One row of the estimate.

    Attributes
    ----------
    stage:
        ``answers``, ``judge``, ``judge self-test`` or ``embeddings``.
    name:
        The target (answers) or the measure (judge, embeddings).
    model:
        The model priced (the block's ``model`` option; the embedder's name).
    calls:
        Requests (answers: user turns; judge: calls; embeddings: texts embedded).
    input_tokens, output_tokens:
        Totals over the calls (output: the upper bound described in the module notes).
    counted:
        How the input tokens were counted: a tokenizer's name, or the characters / 4 approximation.
    output_rule:
        Where the output tokens per call come from (``max_tokens 160``, or the default).
    live, batch:
        Cost in the price table's currency; None without a price (``batch``: also when the model has no
        batch price).
    """

    stage: str
    name: str
    model: str | None
    calls: int
    input_tokens: int
    output_tokens: int
    counted: str
    output_rule: str
    live: float | None = None
    batch: float | None = None

    @property
    def approximate(self) -> bool:
        return self.counted == APPROXIMATE


@dataclass(frozen=True)
class CostEstimate:
    """The estimate of one battery: rows per stage, the currency and ``confirm_above`` of the price
    table (None without one), and notes (fallbacks, models without a price)."""

    battery: str
    stages: tuple[StageCost, ...]
    currency: str | None = None
    confirm_above: float | None = None
    prices_file: str | None = None
    notes: tuple[str, ...] = ()

    def total(self, mode: str = "live") -> float | None:
        """Sum of the rows' ``live`` or ``batch`` cost; None when no row has a price. Rows without a price
        are left out (see :attr:`unpriced`)."""
        values = [getattr(s, mode) for s in self.stages if getattr(s, mode) is not None]
        return sum(values) if values else None

    def unpriced(self, mode: str = "live") -> list[StageCost]:
        """The rows without a ``mode`` price (their tokens are in the table, their cost is not in the total)."""
        return [s for s in self.stages if getattr(s, mode) is None and (s.input_tokens or s.output_tokens)]

    @property
    def input_tokens(self) -> int:
        return sum(s.input_tokens for s in self.stages)

    @property
    def output_tokens(self) -> int:
        return sum(s.output_tokens for s in self.stages)

    def as_dict(self) -> dict[str, Any]:
        return {"battery": self.battery, "currency": self.currency, "confirm_above": self.confirm_above,
                "prices": self.prices_file,
                "stages": [{**s.__dict__, "approximate": s.approximate} for s in self.stages],
                "total": {"live": self.total("live"), "batch": self.total("batch"),
                          "input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
                "unpriced": {"live": [f"{s.stage} {s.name}" for s in self.unpriced("live")],
                             "batch": [f"{s.stage} {s.name}" for s in self.unpriced("batch")]},
                "notes": list(self.notes)}


def _validated(kind: str, options: dict[str, Any]) -> Any:
    """The block's options as its plugin reads them (defaults filled in); None for a plugin that cannot be
    loaded (the battery loader has reported that already)."""
    from fairpair._plugins import PluginError, validate_options

    try:
        return validate_options("fairpair.targets", kind, options)
    except PluginError:
        return None


def model_of(kind: str, options: dict[str, Any]) -> str | None:
    """The model name a price is looked up by: the block's ``model`` option as its plugin reads it (the
    ``local`` target's default model when none is written); None for a block that names none (``http``,
    ``python``)."""
    model = getattr(_validated(kind, options), "model", None)
    return str(model) if model is not None else None


def _output(kind: str, options: dict[str, Any]) -> tuple[int, str]:
    n = getattr(_validated(kind, options), "max_tokens", None)
    if isinstance(n, int) and not isinstance(n, bool) and n > 0:
        return n, f"max_tokens {n}"
    return DEFAULT_OUTPUT_TOKENS, f"{DEFAULT_OUTPUT_TOKENS} (default: no max_tokens)"


@dataclass
class _Acc:
    calls: float = 0
    tokens: float = 0  # counted input tokens
    answers: float = 0  # answers quoted in the prompts (judge) or resent earlier replies (answers)
    outputs: float = 0  # calls whose output is counted at the block's output estimate


@dataclass
class _Block:
    """A target or the judge: its model, counter and output estimate."""

    name: str
    kind: str
    model: str | None
    counter: TokenCounter
    out: int
    out_rule: str
    system: str | None = None
    fmt: str = "yaml"
    acc: _Acc = field(default_factory=_Acc)


def estimate_cost(loaded: LoadedBattery, prices: LoadedPrices | None = None, *,
                  targets: Iterable[str] | None = None, exact: bool = True) -> CostEstimate:
    """Estimate the tokens and cost of running, measuring and embedding ``loaded``.

    Parameters
    ----------
    loaded:
        The battery (a ``--templates`` / ``--axes`` selection included).
    prices:
        The price table (:func:`fairpair.cost.load_prices`); None: tokens only.
    targets:
        Only these targets (``--target``); default: every target of the battery.
    exact:
        Use a model's own tokenizer where it ships inside an installed package (the embedded ``local``
        models, which loads them); False: characters / 4 everywhere (fast, labelled).

    Raises
    ------
    FairpairError
        A measure whose options cannot be built (as ``fairpair measure`` would).
    """
    from fairpair.battery import TargetSpec
    from fairpair.cases import expand, one_repetition
    from fairpair.measures import (
        DEFAULT_JUDGE,
        MeasureContext,
        MeasureItem,
        build_measures,
        compared_case,
        reference_attribute,
    )
    from fairpair.records import Response

    b = loaded.battery
    notes: list[str] = []
    counters: dict[tuple[str, str], TokenCounter] = {}

    def block(name: str, spec) -> _Block:
        opts = spec.options()
        key = (spec.kind, repr(sorted((k, repr(v)) for k, v in opts.items())))
        if key not in counters:
            counter, why = counter_for(spec.kind, opts) if exact else (CharsPerToken(), None)
            counters[key] = counter
            if why:
                notes.append(f"{name}: counted as characters / 4: {why}")
        out, rule = _output(spec.kind, opts)
        return _Block(name, spec.kind, model_of(spec.kind, opts), counters[key], out, rule, spec.system,
                      b.context_channels.format)

    specs = b.target_specs()
    chosen = list(targets) if targets else list(specs)
    blocks = [block(n, specs[n]) for n in chosen if n in specs]
    if not blocks:
        notes.append("no target: the answers are not counted (add 'target:' to the battery)")
    measures = build_measures(b)
    ctx = MeasureContext(battery=b)
    judged = {n: m for n, m in measures.items() if m.uses_judge}
    from fairpair.measures import Measure

    for n, m in judged.items():  # a plugin that calls the judge without saying how: said, not counted as free
        if type(m).judge_requests is Measure.judge_requests:
            notes.append(f"measure '{n}' ({type(m).__name__}) calls the judge but does not say with which "
                         "messages (Measure.judge_requests): its judge calls are not counted")
    embedded = {n: m for n, m in measures.items() if m.embedded_texts(ctx)}
    judge = block("judge", b.judge or TargetSpec.model_validate(DEFAULT_JUDGE)) if judged else None
    ref_attrs = {n: reference_attribute(b, m.options, n) for n, m in measures.items()
                 if m.pairwise and m.options.against == "reference"}
    judge_acc = {n: _Acc() for n in judged}
    embed_texts = {n: 0 for n in embedded}
    tools = b.all_tools()
    one, reps_of = one_repetition(loaded)
    try:
        for case in expand(one):
            r = reps_of.get(case.design, 1)
            _answers(case, blocks, tools, r)
            placeholder = _response(case.id, Response)
            for n, m in judged.items():
                if m.pairwise and not compared_case(case, m.options, ref_attrs.get(n)):
                    continue
                item = MeasureItem("", case, placeholder, placeholder if m.pairwise else None,
                                   case if m.pairwise else None)
                acc = judge_acc[n]
                for messages in m.judge_requests(item, ctx):
                    quoted = sum(msg["content"].count(_ANSWER) for msg in messages)
                    bare = [{**msg, "content": msg["content"].replace(_ANSWER, "")} for msg in messages]
                    assert judge is not None
                    acc.calls += r
                    acc.tokens += judge.counter.count(bare) * r
                    acc.answers += quoted * r
            for n, m in embedded.items():
                ref = ref_attrs.get(n)
                if m.options.against == "baseline" or ref in case.groups:  # compared, or the comparison point
                    embed_texts[n] += r
        self_tests = _self_tests(judged, judge, ctx) if getattr(b, "judge_self_test", "stop") != "off" else []
    finally:
        for c in counters.values():
            close = getattr(c, "close", None)
            if close is not None:
                close()

    rows: list[StageCost] = []
    for bl in blocks:
        a = bl.acc
        rows.append(StageCost("answers", bl.name, bl.model, round(a.calls), round(a.tokens + a.answers * bl.out),
                              round(a.calls * bl.out), bl.counter.label, bl.out_rule))
    n_targets = len(blocks)
    answer_out = sum(bl.out for bl in blocks)  # an answer quoted for each target: that target's estimate
    for n, acc in judge_acc.items():
        assert judge is not None
        rows.append(StageCost("judge", n, judge.model, round(acc.calls * n_targets),
                              round(acc.tokens * n_targets + acc.answers * answer_out),
                              round(acc.calls * n_targets * judge.out), judge.counter.label, judge.out_rule))
    rows += self_tests
    for n, m in embedded.items():
        rows.append(StageCost("embeddings", n, m.embedder_name(ctx), embed_texts[n] * n_targets,
                              embed_texts[n] * answer_out, 0, "answers at the targets' output estimate",
                              "none (an embedding)"))
    if prices is not None:
        rows = [_priced(s, prices) for s in rows]
        missing = sorted({s.model or f"{s.stage} {s.name} (names no model)" for s in rows if s.live is None})
        if missing:
            notes.append(f"no price in {prices.path} for: {', '.join(missing)} (their tokens are shown, their "
                         "cost is not in the totals)")
        no_batch = sorted({s.model for s in rows if s.live is not None and s.batch is None and s.model})
        if no_batch:
            notes.append(f"no batch price for: {', '.join(no_batch)} (the batch total leaves them out)")
    return CostEstimate(b.name, tuple(rows), prices.table.currency if prices else None,
                        prices.table.confirm_above if prices else None, str(prices.path) if prices else None,
                        tuple(dict.fromkeys(notes)))


def _self_tests(judged: dict[str, Any], judge: _Block | None, ctx: Any) -> list[StageCost]:
    """The rows of the judge self-test: per judge measure the anchors test, their calls, sent once."""
    from fairpair.measures import self_test_items

    rows = []
    for n, m in judged.items():
        assert judge is not None
        items = self_test_items(m, ctx)
        calls = [msgs for _, _, item in [*items.anchors, *items.shuffled] for msgs in m.judge_requests(item, ctx)]
        if calls:
            rows.append(StageCost("judge self-test", n, judge.model, len(calls),
                                  round(sum(judge.counter.count(msgs) for msgs in calls)), len(calls) * judge.out,
                                  judge.counter.label, judge.out_rule))
    return rows


def _priced(s: StageCost, prices: LoadedPrices) -> StageCost:
    from dataclasses import replace

    p = prices.price(s.model)
    if p is None:
        return s
    return replace(s, live=p.live.cost(s.input_tokens, s.output_tokens),
                   batch=p.batch.cost(s.input_tokens, s.output_tokens) if p.batch is not None else None)


def _response(case_id: str, Response) -> Any:
    return Response(target="", case_id=case_id, status="ok", text=_ANSWER, turns=[], tool_calls=[],
                    prompt_tokens=None, completion_tokens=None, latency_s=None, finish_reason=None, model=None,
                    system_fingerprint=None, error=None, attempts=1, created_at="")


def _answers(case, blocks: list[_Block], tools: list[dict], reps: int) -> None:
    """Add one case's calls (every user turn, the conversation so far resent) to each target's account."""
    from fairpair.run import with_system_prompt
    from fairpair.targets import ChatRequest

    seen: dict[tuple[int, str | None], tuple[float, int]] = {}
    for bl in blocks:
        key = (id(bl.counter), bl.system)
        if key not in seen:
            messages = list(case.messages)
            if bl.system is not None:
                req = with_system_prompt(ChatRequest(messages=tuple(messages), context=case.context), bl.system,
                                         bl.fmt)
                messages = list(req.messages)
            tokens = 0.0
            replies = 0
            for i, turn in enumerate(case.turns):
                messages.append({"role": "user", "content": turn})
                tokens += bl.counter.count(messages, tools)
                replies += i  # the earlier replies, resent with this turn
                messages.append({"role": "assistant", "content": ""})
            seen[key] = (tokens, replies)
        tokens, replies = seen[key]
        bl.acc.calls += len(case.turns) * reps
        bl.acc.tokens += tokens * reps
        bl.acc.answers += replies * reps
