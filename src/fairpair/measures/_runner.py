"""``fairpair measure``: turn every stored answer into the battery's measurements.

For each measure of the battery's ``measures:`` block, each target and each
stored ``ok`` answer, the measure's result is committed to the run store's
``measurements`` table as soon as it is known (append-only). A measurement
already stored as ``ok`` or ``missing`` is never recomputed, so a killed
measure stage resumes where it stopped; ``failed`` ones (judge unreachable,
leak, missing counterpart answer) are tried again by the next run.

Pairwise measures (``pairwise``, ``semantic_distance``) compare an answer with
its *counterpart* in the same target; where either answer is degenerate (its
status, :mod:`fairpair.measures.status`, is not ``ok``: a refusal, a loop, an
empty or filtered answer...) the pair is stored ``missing`` with the reason
instead of being judged or measured, since a distance or a preference between
degenerate answers is not a result:

* ``against: baseline``: the baseline case (no demographic signal) of the same
  block (template and repetition);
* ``against: reference``: the case of the same matched set whose group on the
  reference's attribute is ``reference`` (other attributes unchanged).

The baseline (or reference) answer itself has no counterpart and gets no row.

The stage streams, like the run engine: answers are read from the store a
chunk at a time (joined with their cases in SQL, those already measured left
out), fed through a bounded queue to ``concurrency`` workers, and
counterparts are looked up per chunk through a compact key index (24 bytes a
case) instead of a dict of every parsed case, so memory stays flat however
many cases the run has (``benchmarks/bench_memory.py``).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import model_validator

from fairpair._calls import CallDeferred, describe_error, worker_pool
from fairpair.errors import FairpairError
from fairpair.measures._base import MAX_MEASURED_CHARS, Measure, MeasureItem, MeasureOptions, MeasureResult, Scale
from fairpair.records import case_from_json
from fairpair.store import Run

if TYPE_CHECKING:
    from fairpair.battery import Battery, LoadedBattery
    from fairpair.measures._mask import Masker
    from fairpair.records import Case
    from fairpair.store import Store

__all__ = ["measure_run", "MeasureContext", "MeasureCounts", "MeasureRunResult", "CounterpartOptions",
           "build_measures", "measure_scales", "measure_categories", "signal_values", "masker_for", "DEFAULT_JUDGE",
           "check_self_judging", "compared_case", "reference_attribute"]

#: The judge used when a battery declares none: the embedded local model, greedy.
DEFAULT_JUDGE: dict[str, Any] = {"kind": "local", "temperature": 0.0, "max_tokens": 256}


class CounterpartOptions(MeasureOptions):
    """Options shared by measures that compare an answer with its counterpart.

    ``against``: ``baseline`` (the no-signal case of the same template and
    repetition) or ``reference`` (the reference group's answer in the same
    matched set); ``reference``: that group's name (required with
    ``against: reference``); ``attribute``: the attribute the group belongs to
    (only needed when two attributes have a group of that name).
    """

    against: Literal["baseline", "reference"] = "baseline"
    reference: str | None = None
    attribute: str | None = None

    @model_validator(mode="after")
    def _needs_reference(self):
        if self.against == "reference" and not self.reference:
            raise ValueError("'against: reference' needs 'reference: <group>'")
        if self.against == "baseline" and self.reference:
            raise ValueError("'reference' is only used with 'against: reference'")
        return self


#: The measure whose item a judge call belongs to (set by each measuring worker; the self-test runs before).
_MEASURING: contextvars.ContextVar[str] = contextvars.ContextVar("measuring", default="judge self-test")
#: The counts of the manifest's ``tokens`` block, per target (answers) or per measure (judge).
TOKEN_KEYS = ("calls", "input_tokens", "output_tokens", "without_usage")


@dataclass
class MeasureCounts:
    """Per measure, what this session stored: ``ok``, ``missing``, ``failed``; ``leaks``
    (judge calls refused by the leak check), ``invalid`` (judge outputs that failed
    validation, retried ones included), ``skipped`` (already stored), ``no_counterpart``,
    ``waiting`` (answers whose judge calls are in a provider batch: nothing stored yet)."""

    ok: int = 0
    missing: int = 0
    failed: int = 0
    leaks: int = 0
    invalid: int = 0
    skipped: int = 0
    no_counterpart: int = 0
    waiting: int = 0


@dataclass(frozen=True)
class MeasureRunResult:
    """What :func:`measure_run` did: counts per measure, the judge and embedders used."""

    run_dir: Path
    counts: dict[str, MeasureCounts]
    scales: dict[str, Scale]
    judge: dict[str, Any] | None
    embedders: dict[str, dict[str, Any]]
    warnings: tuple[str, ...] = ()
    #: what the judge's provider batches did (``fairpair measure --batch``), or None
    batch: Any = None


@dataclass
class MeasureContext:
    """What a measure may use while it measures: the battery, the judge, the masker, counters."""

    battery: Battery | None
    battery_dir: Path | None = None
    judge: Any = None
    judge_identity: dict[str, Any] | None = None
    settings: Any = None
    store: Store | None = None
    counts: dict[str, MeasureCounts] = field(default_factory=dict)
    embedders: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the first messages sent to the judge under each distinct system prompt (for the manifest)
    judge_prompts: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    #: (target, case id) of the answers longer than MAX_MEASURED_CHARS, measured on their beginning
    long_answers: set[tuple[str, str]] = field(default_factory=set)
    #: the judge's calls through a provider batch (:class:`fairpair.run._batchcalls.BatchCalls`), or None
    batch: Any = None
    #: results are not stored this session (the judge self-test waits for its batch)
    hold: bool = False
    #: this session's judge tokens, per measure (see :meth:`count_tokens`), for the manifest's ``tokens.judge``
    judge_tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    _masker: Any = None
    _caller: Any = None

    @property
    def language(self) -> str:
        return getattr(self.battery, "language", "es")

    @property
    def speakers(self) -> dict[str, tuple[str, str]]:
        """Design id -> (res, sub) for the out-of-role answer status (see ``Battery.speakers``)."""
        fn = getattr(self.battery, "speakers", None)
        return fn() if callable(fn) else {}

    def count(self, measure: str, key: str, n: int = 1) -> None:
        c = self.counts.setdefault(measure, MeasureCounts())
        setattr(c, key, getattr(c, key) + n)

    @property
    def masker(self):
        """A :class:`~fairpair.measures._mask.Masker` over every signal value of the battery."""
        if self._masker is None:
            try:
                self._masker = masker_for(self.battery)
            except ValueError as exc:
                raise FairpairError(f"cannot blind the judge: {exc}", key="attributes") from None
        return self._masker

    async def ask_judge(self, messages: list[dict[str, str]], *, case_id: str, seed: int | None) -> str:
        """Send ``messages`` to the judge through the run engine's model-call service; return its text.

        The service (:class:`fairpair._calls.ModelCaller`) retries, times out
        and rate-limits as ``settings`` say, with at most ``settings.concurrency``
        judge calls in flight (fewer if the judge's ``max_concurrency`` says so).

        Raises whatever the judge raised at the last attempt (the caller stores
        it as a failed measurement).
        """
        return (await self._judge_call(messages, case_id=case_id, seed=seed)).text or ""

    async def ask_judge_choice(self, messages: list[dict[str, str]], choices: tuple[str, ...], *, case_id: str,
                               seed: int | None, groups: dict[str, tuple[str, ...]] | None = None,
                               scoring: str = "probabilities") -> ChoiceAnswer:
        """Ask the judge for one of ``choices`` and read the model's probability of each
        (:func:`choice_probabilities`: one token each), or of each of ``groups`` (name -> words;
        :func:`group_probabilities`: words of several tokens, such as "Sí", count by their first
        token).

        The request carries ``choices`` (:class:`~fairpair.targets.ChatRequest`); the target
        constrains its answer to them and reports the first token's candidates
        (:attr:`~fairpair.targets.Completion.top_logprobs`). ``scoring``: the battery's value
        named in the error below.

        Raises
        ------
        FairpairError
            The judge reports no token probabilities (of the built-in targets ``local`` does,
            and ``openai`` when its server returns ``logprobs``).
        """
        completion = await self._judge_call(messages, case_id=case_id, seed=seed, choices=choices)
        if completion.top_logprobs is None:
            ident = self.judge_identity or {}
            raise FairpairError(
                f"the judge ({ident.get('kind', type(self.judge).__name__)}) reports no token probabilities, "
                f"which 'scoring: {scoring}' needs", key="judge",
                hint="use a judge of kind 'local' (the embedded model) or 'openai' with a server that "
                     "returns logprobs (its 'choices_constraint' is not 'off'), or 'scoring: sampled'")
        if groups is not None:
            probs, mass = group_probabilities(completion.top_logprobs, groups)
        else:
            probs, mass = choice_probabilities(completion.top_logprobs, choices)
        return ChoiceAnswer(completion.text or "", probs, mass)

    async def _judge_call(self, messages: list[dict[str, str]], *, case_id: str, seed: int | None,
                          choices: tuple[str, ...] | None = None):
        if self.judge is None:
            raise RuntimeError("no judge configured")
        from fairpair._calls import ModelCaller
        from fairpair.run import RunSettings
        from fairpair.targets import ChatRequest

        if self.settings is None:
            self.settings = RunSettings()
        if self._caller is None or self._caller.target is not self.judge:
            self._caller = ModelCaller.from_settings(self.judge, self.settings,
                                                     max_in_flight=self.settings.concurrency)
        system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
        self.judge_prompts.setdefault(system, [dict(m) for m in messages])
        request = ChatRequest(messages=tuple(messages), seed=seed, case_id=case_id, choices=choices)
        if self.batch is not None:  # answered from the store, or CallDeferred (the call goes in a batch)
            completion = (await self.batch.call(request)).result()
        else:
            completion = (await self._caller.call(request)).result()
        self.count_tokens(completion)
        return completion

    def count_tokens(self, completion) -> None:
        """Add one judge call's ``usage`` (the provider's own token counts) to :attr:`judge_tokens`, under
        the measure being measured (``judge self-test`` before any): ``calls``, ``input_tokens``,
        ``output_tokens`` and ``without_usage`` (calls whose provider reported none, not in the sums)."""
        usage = getattr(completion, "usage", None)
        row = self.judge_tokens.setdefault(_MEASURING.get(), dict.fromkeys(TOKEN_KEYS, 0))
        row["calls"] += 1
        if usage is None or (usage.prompt_tokens is None and usage.completion_tokens is None):
            row["without_usage"] += 1
            return
        row["input_tokens"] += usage.prompt_tokens or 0
        row["output_tokens"] += usage.completion_tokens or 0


@dataclass(frozen=True)
class ChoiceAnswer:
    """A constrained judge answer: ``text`` (the choice decoded), ``probabilities`` (choice -> p,
    summing to 1 over the choices, or all 0 when ``mass`` is 0) and ``mass`` (the model's total
    probability of the choices among its first-token candidates, 0..1)."""

    text: str
    probabilities: dict[str, float]
    mass: float


def choice_probabilities(top_logprobs: dict[str, float], choices: tuple[str, ...]) -> tuple[dict[str, float], float]:
    """``(choice -> probability, mass)`` from a first token's candidates (token -> natural log p).

    A candidate counts for a choice when its text, stripped of white space, is the choice (so
    ``" 4"`` counts for ``"4"``); the probabilities of the choices are renormalised to sum to 1
    (the model's distribution conditioned on answering one of them); a choice absent from the
    candidates gets 0. ``mass`` is their summed probability before renormalising (0..1): low when
    the model wanted to answer something else. With ``mass`` 0, every probability is 0.
    Liu et al. (2023), "G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment", EMNLP,
    sec. 2 (scores weighted by the probabilities of the score tokens).
    """
    import math

    p = dict.fromkeys(choices, 0.0)
    for token, lp in top_logprobs.items():
        t = token.strip()
        if t in p and math.isfinite(lp):
            p[t] += math.exp(lp)
    mass = sum(p.values())
    if mass <= 0:
        return p, 0.0
    return {c: v / mass for c, v in p.items()}, min(1.0, mass)


def group_probabilities(top_logprobs: dict[str, float],
                        groups: dict[str, tuple[str, ...]]) -> tuple[dict[str, float], float]:
    """``(group -> probability, mass)`` from a first token's candidates (token -> natural log p),
    for answers that are words (``{"yes": ("Sí", "si"), "no": ("No",)}``).

    A candidate counts for a group when its text, stripped of white space and case-folded, is a
    non-empty prefix of one of the group's words (case-folded) and of no other group's word: the
    whole word as one token (``"Yes"``, ``" yes"``) or its first token when the tokenizer splits
    it (``"S"`` of ``"Sí"``); a candidate that is a prefix of words of two groups counts for none.
    The groups' probabilities are renormalised to sum to 1 and ``mass`` is their sum before (0..1),
    as in :func:`choice_probabilities`. Reading P(yes) from the first answer token's
    probability: as in G-Eval's probability weighting (Liu et al. 2023, sec. 2) and the yes/no
    relevance scores of Nogueira et al. (2020), "Document Ranking with a Pretrained
    Sequence-to-Sequence Model", Findings of EMNLP (the score is the probability of "true" over
    "true" and "false").
    """
    import math

    folded = {g: tuple(w.casefold() for w in words) for g, words in groups.items()}
    p = dict.fromkeys(groups, 0.0)
    for token, lp in top_logprobs.items():
        t = token.strip().casefold()
        if not t or not math.isfinite(lp):
            continue
        hit = [g for g, words in folded.items() if any(w.startswith(t) for w in words)]
        if len(hit) == 1:
            p[hit[0]] += math.exp(lp)
    mass = sum(p.values())
    if mass <= 0:
        return p, 0.0
    return {g: v / mass for g, v in p.items()}, min(1.0, mass)


def signal_values(battery: Battery) -> tuple[list[str], list[str]]:
    """Every value that could reveal a group, and the declared group references.

    Values: all variants of all groups of all attributes (names, ages, postal
    codes, neighbourhoods, identity labels) and the text values a group
    writes into the context (``context: {crm.pais: Marruecos}``: a CRM field
    that signals the group); terms: every group's ``references`` (matched
    with plural and gender forms by the masker).
    """
    values: list[str] = []
    terms: list[str] = []

    def texts(obj) -> list[str]:
        if isinstance(obj, dict):
            return [s for v in obj.values() for s in texts(v)]
        if isinstance(obj, list):
            return [s for v in obj for s in texts(v)]
        return [str(obj)] if isinstance(obj, (str, int, float)) and not isinstance(obj, bool) else []

    for attr in battery.attributes.values():
        for g in attr.groups.values():
            values.extend(v for v in g.variants if v and v.strip())
            values.extend(v for v in texts(g.context) if v.strip())
            terms.extend(r for r in g.references if r and r.strip())
    return list(dict.fromkeys(values)), list(dict.fromkeys(terms))


def masker_for(battery: Battery, *, marker: str = "[MASK]", extra_values: Iterable[str] = ()) -> Masker:
    """The :class:`~fairpair.measures._mask.Masker` of a battery: the variants of ``name`` signals as
    person names (all their surface forms), the other signal values (:func:`signal_values`: variants
    and the text values groups write into the context) as values, the group references as terms, and
    the battery's language (names that are common words are masked where used as names).

    Raises ValueError as :class:`~fairpair.measures._mask.Masker`.
    """
    from fairpair._text import fold
    from fairpair.measures._mask import Masker, _trim

    def maskable(v) -> bool:
        return isinstance(v, str) and bool(_trim(fold(v)))

    names = [v for attr in battery.attributes.values() if attr.signal == "name"
             for g in attr.groups.values() for v in g.variants if maskable(v)]
    all_values, all_terms = signal_values(battery)
    values = [v for v in (*all_values, *extra_values) if maskable(v) and v not in names]
    terms = [t for t in all_terms if maskable(t)]
    return Masker(list(dict.fromkeys(values)), names=list(dict.fromkeys(names)),
                  group_terms=list(dict.fromkeys(terms)), marker=marker, language=getattr(battery, "language", None))


# ---------------------------------------------------------------- building


def build_measures(battery: Battery, names: Iterable[str] | None = None) -> dict[str, Measure]:
    """Instantiate the battery's measures (all, or ``names``); FairpairError for unknown names."""
    from fairpair._plugins import PluginError, load_plugin

    specs = battery.measures
    if names:
        unknown = [n for n in names if n not in specs]
        if unknown:
            raise FairpairError(f"unknown measure(s) {unknown}; the battery declares {list(specs) or '(none)'}",
                                key="measures")
        specs = {n: specs[n] for n in names}
    out: dict[str, Measure] = {}
    for name, spec in specs.items():
        try:
            cls = load_plugin("fairpair.measures", spec.kind)
        except PluginError as exc:
            raise FairpairError(f"measure '{name}': {exc}", key=f"measures.{name}.kind") from None
        try:
            out[name] = cls(spec.options(), name=name)
        except ValueError as exc:  # pydantic.ValidationError is a ValueError
            raise FairpairError(f"measure '{name}': {exc}", key=f"measures.{name}") from None
    return out


def measure_scales(battery: Battery) -> dict[str, Scale]:
    """Stored row name (``refund``, ``tone.courtesy``) -> scale, for every measure of ``battery``."""
    ctx = MeasureContext(battery=battery)
    out: dict[str, Scale] = {}
    for m in build_measures(battery).values():
        out.update(m.output_scales(ctx))
    return out


def measure_categories(battery: Battery) -> dict[str, tuple[str, ...]]:
    """Stored row name -> declared outcomes, for every ``categorical`` row of ``battery``'s measures."""
    ctx = MeasureContext(battery=battery)
    out: dict[str, tuple[str, ...]] = {}
    for m in build_measures(battery).values():
        out.update(m.categories(ctx))
    return out


def _build_judge(loaded: LoadedBattery, store: Store, ctx: MeasureContext, judge: Any) -> list[str]:
    """Build the judge target, refuse self-judging unless allowed; returns warnings."""
    from fairpair.battery import TargetSpec
    from fairpair.run import build_target

    b = loaded.battery
    if judge is None:
        spec = b.judge or TargetSpec.model_validate(DEFAULT_JUDGE)
        judge = build_target("judge", spec, base_dir=ctx.battery_dir)
    ctx.judge = judge
    ident = _strip_name(judge.identity())
    ctx.judge_identity = ident
    store.event("judge", {"identity": ident})
    warnings = []
    for tname, tident in _target_identities(loaded, store).items():
        if _same_system(tident, ident):
            if not b.allow_self_judging:
                raise FairpairError(
                    f"the judge is the same system as target '{tname}' ({ident.get('kind')} "
                    f"{ident.get('model')}): a model judging its own answers is biased towards them",
                    key="judge", hint="declare another 'judge:' or set 'allow_self_judging: true' (the report "
                                      "will flag it), and run into a new --out: a run measures with the battery "
                                      "recorded when it started")
            msg = f"self-judging: the judge is the same system as target '{tname}'"
            store.event("self_judging", {"target": tname, "judge": ident})
            warnings.append(msg)
    return warnings


def check_self_judging(loaded: LoadedBattery, specs: dict[str, Any] | None = None) -> None:
    """Refuse, before anything is sent, a run whose judge is the same system as one of its targets.

    ``loaded`` is a :class:`~fairpair.battery.LoadedBattery`, ``specs`` the targets to run (name ->
    ``TargetSpec``; default: all of the battery's). Applies only when a measure calls the judge
    (``uses_judge``) and ``allow_self_judging`` is not set; the rule is the measure stage's
    (:func:`_same_system` on the targets' identities, decoding parameters left out). The measure stage
    reads the battery recorded when the run started, so without this check the run would send every
    case and only then stop, with no way to allow it on that run directory. A judge or target that
    cannot be built here (a key not set yet, a missing model file) is left to the stage that builds it.

    Raises
    ------
    BatteryError
        The judge is the same system as a target: file, line and key of the ``judge`` (or, when the
        battery declares none, of the first measure that calls the default judge).
    """
    from fairpair.battery import TargetSpec
    from fairpair.run import build_target

    b = loaded.battery
    if b.allow_self_judging:
        return
    try:
        judging = [n for n, m in build_measures(b).items() if m.uses_judge]
    except FairpairError:
        return  # a measure that cannot be built is reported by the measure stage
    if not judging:
        return
    base_dir = loaded.path.parent if loaded.path else None
    try:
        spec = b.judge or TargetSpec.model_validate(DEFAULT_JUDGE)
        judge = build_target("judge", spec, base_dir=base_dir)
        ident = _strip_name(judge.identity())
    except Exception:  # noqa: BLE001 - the measure stage builds the judge again and reports it
        return
    for tname, tspec in (specs if specs is not None else b.target_specs()).items():
        try:
            tident = build_target(tname, tspec, base_dir=base_dir, language=b.language).identity()
        except Exception:  # noqa: BLE001 - the run reports a target that cannot be built
            continue
        if _same_system(tident, ident):
            where = ("judge",) if b.judge is not None else ("measures", judging[0])
            raise loaded.fail(
                f"the judge is the same system as target '{tname}' ({ident.get('kind')} {ident.get('model')}): "
                "a model judging its own answers is biased towards them"
                + ("" if b.judge is not None else " (the battery declares no 'judge:', so the embedded "
                   "default judge is used)"), where,
                hint="declare another 'judge:' or set 'allow_self_judging: true' (the report will flag it); "
                     "nothing was sent")


def _same_system(target: dict[str, Any], judge: dict[str, Any]) -> bool:
    """The judge is the system under test: the same model key, or (answers imported with
    ``fairpair import-answers``, whose identity lists only the models that wrote them) the judge's
    model is one of those. An identity made from the battery block (``_FROM_BATTERY``) matches a judge
    with the same values of the keys it has (kind, and model and base_url where given)."""
    if (target or {}).get(_FROM_BATTERY):
        return all((judge or {}).get(k) == v for k, v in target.items() if k != _FROM_BATTERY)
    if _model_key(target) == _model_key(judge):
        return True
    models = (target or {}).get("models") if (target or {}).get("kind") == "imported" else None
    if not models:
        return False
    return (judge or {}).get("model") in models


def _model_key(ident: dict[str, Any]) -> dict[str, Any]:
    """The part of an identity that names the model: without the target's name and its decoding
    ``parameters`` (the same weights at another temperature or length still grade their own answers)."""
    return {k: v for k, v in (ident or {}).items() if k not in ("name", "parameters")}


def _strip_name(ident: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (ident or {}).items() if k != "name"}


#: Marks an identity made from the battery's target block alone (see :func:`_target_identities`).
_FROM_BATTERY = "identity_from_battery"


def _target_identities(loaded: LoadedBattery, store: Store) -> dict[str, dict[str, Any]]:
    """Target name -> identity, as recorded when the run started (``manifest.json``, else the store's
    ``target.NAME`` meta), never by building a client: an API target whose key is unset now (the
    answers are stored) must not stop a measure stage whose judge is another system. A target with
    no recorded identity is built; if that fails, its battery block's ``kind``, ``model`` and
    ``base_url`` stand for it, compared on those keys only (:func:`_same_system`)."""
    manifest = Path(store.path).parent / "manifest.json"
    try:
        ids = json.loads(manifest.read_text(encoding="utf-8")).get("targets") or {}
        if ids:
            return ids
    except (OSError, ValueError, AttributeError):
        pass
    from fairpair.run import build_target

    out: dict[str, dict[str, Any]] = {}
    for n, spec in loaded.battery.target_specs().items():
        recorded = store.get_meta(f"target.{n}")
        if isinstance(recorded, dict) and recorded:
            out[n] = recorded
            continue
        try:
            out[n] = build_target(n, spec, language=loaded.battery.language).identity()
        except FairpairError:
            opts = spec.options()
            out[n] = {"kind": spec.kind, _FROM_BATTERY: True,
                      **{k: opts[k] for k in ("model", "base_url") if opts.get(k) is not None}}
    return out


# ---------------------------------------------------------------- counterparts


def reference_attribute(battery: Battery | None, options: CounterpartOptions, measure: str) -> str:
    """The attribute whose group ``options.reference`` is; FairpairError if unknown or ambiguous (or
    without a battery to look in: a :class:`MeasureContext` made for a judge alone)."""
    if battery is None:
        raise FairpairError(f"measure '{measure}': no battery to find the reference group '{options.reference}' in",
                            key=f"measures.{measure}.reference")
    if options.attribute:
        if options.attribute not in battery.attributes:
            raise FairpairError(f"measure '{measure}': unknown attribute '{options.attribute}'",
                                key=f"measures.{measure}.attribute")
        if options.reference not in battery.attributes[options.attribute].groups:
            raise FairpairError(f"measure '{measure}': '{options.reference}' is not a group of "
                                f"'{options.attribute}'", key=f"measures.{measure}.reference")
        return options.attribute
    owners = [a for a, attr in battery.attributes.items() if options.reference in attr.groups]
    if not owners:
        raise FairpairError(f"measure '{measure}': reference group '{options.reference}' is in no attribute",
                            key=f"measures.{measure}.reference")
    if len(owners) > 1:
        raise FairpairError(f"measure '{measure}': group '{options.reference}' is in attributes {owners}",
                            key=f"measures.{measure}.reference", hint="add 'attribute: <name>'")
    return owners[0]


def _groups_key(groups: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(groups.items()))


class _KeyIndex:
    """Case row ids under a 64-bit key (Python's ``hash`` of the block, or of the matched set and
    groups), sorted by key and then by the order the cases were stored: 24 bytes per case, where
    a dict of parsed cases takes kilobytes. Keys may collide; callers check the cases they get."""

    def __init__(self, rows: Iterable[tuple[int, int, int]]):
        from array import array

        import numpy as np

        keys, seqs, rowids = array("q"), array("q"), array("q")
        for key, seq, rowid in rows:
            keys.append(key)
            seqs.append(seq)
            rowids.append(rowid)
        k, s, r = (np.frombuffer(a, dtype=np.int64) if len(a) else np.zeros(0, np.int64)
                   for a in (keys, seqs, rowids))
        order = np.lexsort((s, k))
        self.keys, self.rowids = k[order], r[order]

    def __len__(self) -> int:
        return len(self.keys)

    def rowids_of(self, key: int) -> list[int]:
        """Row ids stored under ``key``, first stored first."""
        lo, hi = self.keys.searchsorted(key, "left"), self.keys.searchsorted(key, "right")
        return self.rowids[lo:hi].tolist()


def compared_case(case: Case, options: CounterpartOptions, ref_attr: str | None) -> bool:
    """Whether a pairwise measure (``options.against``) compares ``case``'s answer with a counterpart:
    ``baseline``: every case but the baselines; ``reference``: the cases that vary ``ref_attr`` with
    another group than ``options.reference`` (the reference's own cases are the comparison point)."""
    if options.against == "baseline":
        return not case.baseline
    return ref_attr in case.groups and case.groups[ref_attr] != options.reference


class _Counterparts:
    """Finds the counterpart case of each case of a chunk, without holding the run's cases.

    ``against: baseline``: the first stored baseline case of the same block;
    ``against: reference``: the first stored case of the same matched set whose
    groups are the case's with the reference group on the reference's
    attribute. The key indexes are built on first use with one streamed scan
    of the cases table (SQLite ``json_extract``); the candidate cases of a
    chunk are then read by row id and checked field by field.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._baselines: _KeyIndex | None = None
        self._members: _KeyIndex | None = None

    def baselines(self) -> _KeyIndex:
        if self._baselines is None:
            self._baselines = _KeyIndex((hash(block), seq, rowid) for rowid, seq, block
                                        in self.store.case_fields("$.block", baseline_only=True))
        return self._baselines

    def members(self) -> _KeyIndex:
        if self._members is None:
            self._members = _KeyIndex(
                (hash((ms, _groups_key(json.loads(groups) if groups else {}))), seq, rowid)
                for rowid, seq, ms, groups in self.store.case_fields("$.matched_set", "$.groups"))
        return self._members

    def find(self, cases: list[Any], options, ref_attr: str | None) -> list[Any]:
        """Per case: its counterpart case; ``"n/a"`` when the case is itself the comparison point
        (or does not vary the reference's attribute); None when the run has no counterpart."""
        plans: list[tuple[list[int], Any] | None] = []
        for case in cases:
            if not compared_case(case, options, ref_attr):
                plans.append(None)
                continue
            if options.against == "baseline":
                plans.append((self.baselines().rowids_of(hash(case.block)),
                              lambda c, case=case: c.baseline and c.block == case.block))
                continue
            want = {**case.groups, ref_attr: options.reference}
            plans.append((self.members().rowids_of(hash((case.matched_set, _groups_key(want)))),
                          lambda c, case=case, want=want: c.matched_set == case.matched_set
                          and c.groups == want and c.id != case.id))
        found = self.store.cases_at(r for p in plans if p is not None for r in p[0])
        out: list[Any] = []
        for p in plans:
            if p is None:
                out.append("n/a")
                continue
            rowids, fits = p
            out.append(next((found[r] for r in rowids if r in found and fits(found[r])), None))
        return out


# ---------------------------------------------------------------- running


def measure_run(run_dir: str | Path | Run, *, console=None, measures: Iterable[str] | None = None, judge: Any = None,
                settings: Any = None, ray_pool: Any = None, summary: bool = True,
                batch: bool = False, extra: dict[str, Any] | None = None,
                only_cases: Any = None) -> MeasureRunResult:
    """Measure every stored answer of a run; resumable.

    Parameters
    ----------
    run_dir:
        A run directory written by ``fairpair run``, or that run already open for writing
        (:class:`fairpair.store.Run`, mode ``"w"``; it stays open).
    console:
        A rich console for the summary (none: silent).
    measures:
        Only these measures (default: all the battery declares).
    judge:
        A target instance to use as judge instead of the battery's ``judge:``
        block (default: the embedded ``local`` model). Tests pass a scripted one.
    settings:
        :class:`~fairpair.run.RunSettings` for judge calls (concurrency,
        timeout, retries; ``engine="ray"`` with ``address`` and ``actors``:
        the judge's calls and the embeddings on Ray actor pools, see
        :mod:`fairpair.run._ray`).
    ray_pool:
        With ``engine="ray"``: a callable given the judge pool's actor
        handles (the tests kill one).
    summary:
        Print the counts table, the self-tests' results and the warnings on
        ``console`` at the end (``fairpair run`` passes False: its report
        prints each warning once, after the verdicts).
    batch:
        Send the judge's calls through its provider's batch API
        (:mod:`fairpair.run._batchcalls`; ``docs/batch.md``): poll and ingest
        the batches already submitted, measure what their answers allow, and
        submit the calls still needed. A run with judge batches recorded, or
        started with ``fairpair run --batch``, keeps its judge on batches
        without the flag (a judge without a batch API then runs live).
    extra:
        Stored measure name -> measure block (:class:`~fairpair.battery.MeasureSpec`) measured
        instead of the battery's (``fairpair discover``: the discovered axes, stored as
        ``discovered.<name>``).
    only_cases:
        A set of case ids, or of (target, case id) pairs: measure only their answers; or a mapping
        measure name -> such a set, per measure (``fairpair discover``: each axis on the part and target
        of its own comparison).

    Returns
    -------
    MeasureRunResult

    Raises
    ------
    FairpairError
        Not a run directory, the directory is in use, an unknown measure, a
        judge identical to a target without ``allow_self_judging``, a missing
        embedder, a pairwise measure whose counterparts the run has none of;
        ``batch`` with a judge that has no batch API or with ``engine="ray"``,
        a judge request that cannot go in its provider's batch (token
        probabilities where the batch returns none).
    """
    if getattr(settings, "engine", "inprocess") not in ("inprocess", "ray"):
        raise FairpairError(f"unknown engine {settings.engine!r}; use one of inprocess, ray", key="--engine")
    with Run.opened(run_dir, "w") as run:
        if getattr(settings, "engine", "inprocess") != "ray":
            return asyncio.run(_measure(run, console, measures, judge, settings, summary=summary, batch=batch,
                                        extra=extra, only_cases=only_cases))
        if batch:
            raise FairpairError("--batch sends the judge's calls through the provider's batch API, not an engine; "
                                "drop --engine ray", key="--batch")
        from fairpair.run import ray_session

        with ray_session(settings.address):  # exit 2 when Ray is missing or the cluster unreachable
            return asyncio.run(_measure(run, console, measures, judge, settings, ray_pool, summary=summary))


async def _measure(run, console, names, judge, settings, ray_pool=None, *, summary: bool = True,
                   batch: bool = False, extra: dict[str, Any] | None = None,
                   only_cases: Any = None) -> MeasureRunResult:
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        return await _measure_in(run, console, names, judge, settings, ray_pool, summary=summary, batch=batch,
                                 stack=stack, extra=extra, only_cases=only_cases)


async def _judge_batches(run, ctx: MeasureContext, *, requested: bool, stack) -> Any:
    """The judge's :class:`~fairpair.run._batchcalls.BatchCalls` when the judge goes through batches
    (``requested``, batches recorded, or a run started with ``run --batch``), polled; else None."""
    from fairpair.run import BatchCalls, batch_api_of

    store = run.store
    recorded = bool(store.batches(JUDGE_BATCH_NAME, stage="measure"))
    if not (requested or recorded or store.get_meta("batch.measures")):
        return None
    api = batch_api_of(ctx.judge, secrets=_judge_secrets(ctx.judge))
    if api is None:
        if requested:
            kind = (ctx.judge_identity or {}).get("kind", "?")
            raise FairpairError(f"--batch: the judge (kind {kind}) has no batch API; the openai and anthropic "
                                "judges send batches", key="judge", hint="declare such a judge, or measure "
                                                                         "without --batch")
        return None
    calls = await stack.enter_async_context(BatchCalls(store, run.path, "measure", JUDGE_BATCH_NAME, api,
                                                       resubmit=requested))
    await calls.poll(calls.summary)
    return calls


def _judge_secrets(judge: Any) -> list[str]:
    fn = getattr(judge, "_secrets", None)
    return [s for s in fn() if s] if callable(fn) else []


#: the ``batches.target`` of the judge's batches (stage ``measure``)
JUDGE_BATCH_NAME = "judge"


async def _measure_in(run, console, names, judge, settings, ray_pool=None, *, summary: bool = True,
                      batch: bool = False, stack=None, extra: dict[str, Any] | None = None,
                      only_cases: Any = None) -> MeasureRunResult:
    from fairpair.battery import recorded_battery

    store, loaded, run_dir = run.store, recorded_battery(run), run.path
    b = loaded.battery
    if extra is not None:
        ms = build_measures(b.model_copy(update={"measures": dict(extra)}))
    else:
        ms = build_measures(b, names)
    bdir = Path(loaded.path).parent if loaded.path else None
    ctx = MeasureContext(battery=b, battery_dir=bdir if bdir and bdir.exists() else None, settings=settings,
                         store=store)
    warnings: list[str] = []
    owns_judge = judge is None
    if any(m.uses_judge for m in ms.values()):
        warnings += _build_judge(loaded, store, ctx, judge)
        if getattr(settings, "engine", "inprocess") != "ray":
            ctx.batch = await _judge_batches(run, ctx, requested=batch, stack=stack)
    elif batch:
        raise FairpairError("--batch: no measure of this battery calls a judge; there is nothing to batch",
                            key="--batch", hint="measure without --batch")
    counterparts = _Counterparts(store)
    scales: dict[str, Scale] = {}
    on_ray = getattr(settings, "engine", "inprocess") == "ray"
    pools = _RayPools(loaded, ms, ctx, judge, settings, ray_pool) if on_ray else None
    store.event("measure_started", {"measures": list(ms)})
    try:
        if any(m.uses_judge for m in ms.values()):
            from fairpair.measures._selftest import run_self_tests

            if pools is not None:
                pools.judge_on()

            warnings += await run_self_tests(ms, ctx, store, getattr(b, "judge_self_test", "stop"), console,
                                             summary=summary)
        for name, m in ms.items():
            ctx.counts.setdefault(name, MeasureCounts())
            scales.update(m.output_scales(ctx))
            store.declare_scales(scales)  # each row stores its measure's scale
            from fairpair._progress import quiet

            if console is not None and not quiet():  # judge measures can take minutes: say what is going on
                who = " (judge calls: one or more per answer)" if m.uses_judge else ""
                from rich.markup import escape  # rich only when printing: importing the measures stays light

                console.print(f"measuring {escape(name)}{who}...", soft_wrap=True)
            if pools is not None:
                await pools.before(name, m)
            bar = asyncio.ensure_future(_measure_progress(console, name, m, ctx, store))
            try:
                await _measure_stream(name, m, ctx, store, counterparts,
                                      only_cases.get(name, set()) if isinstance(only_cases, dict) else only_cases)
            finally:
                bar.cancel()
                await asyncio.gather(bar, return_exceptions=True)
            if m.uses_judge and m.outputs(ctx):
                from fairpair.measures._selftest import flag_degenerate

                warnings += flag_degenerate(name, m, ctx, store)
            if pools is not None:
                await pools.after(name, m)
        if ctx.batch is not None:
            await ctx.batch.flush(ctx.batch.summary)
        if ctx.long_answers:
            warnings.append(f"{len(ctx.long_answers)} answer(s) longer than {MAX_MEASURED_CHARS:,} characters were "
                            f"measured on their first {MAX_MEASURED_CHARS:,} (stored whole), e.g. case "
                            f"{sorted(ctx.long_answers)[0][1]}")
    finally:
        if pools is not None:
            try:
                await pools.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        if owns_judge and ctx.judge is not None and not on_ray:
            try:
                await ctx.judge.aclose()
            except Exception:  # noqa: BLE001
                pass
        store.event("measure_finished", {n: vars(c) for n, c in ctx.counts.items()})
    _record_in_manifest(run, ctx, list(ms), warnings,
                        judged={n: m.options.model_dump(mode="json", by_alias=True, exclude_none=True)
                                for n, m in ms.items() if m.uses_judge})
    if console is not None and summary:
        _print_counts(console, ctx.counts, warnings)
    return MeasureRunResult(Path(run_dir), dict(ctx.counts), scales, ctx.judge_identity, dict(ctx.embedders),
                            tuple(warnings), ctx.batch.summary if ctx.batch is not None else None)


class _RayPools:
    """The Ray actor pools of one measure session (``--engine ray``), each started when a measure needs it.

    The judge: a :class:`fairpair.run.RayTarget` over actors that build it from the battery's
    ``judge:`` block (or the embedded default), or that receive ``judge`` as it is when one was passed
    (a test's scripted judge); the driver keeps only its identity. It is kept while later measures use
    the judge. A ``semantic_distance`` measure without an embedder of its own gets a
    :class:`fairpair.run.RayEmbedder` (actors loading the embedder) for its own run. Every actor
    reserves ``settings.actor_cpus``, so the judge's pool is stopped before an embedding pool that would
    not fit beside it (and started again if a later measure needs the judge).
    """

    def __init__(self, loaded, ms: dict[str, Measure], ctx: MeasureContext, judge: Any, settings: Any,
                 on_pool: Any = None) -> None:
        self.b, self.ms, self.ctx, self.judge, self.settings, self.on_pool = \
            loaded.battery, ms, ctx, judge, settings, on_pool
        self.driver_judge = ctx.judge  # identity only: never called, never loaded here
        self.judge_pool: Any = None
        self.embed_pool: Any = None

    def judge_on(self) -> None:
        from fairpair.battery import TargetSpec
        from fairpair.run import RayTarget

        if self.judge_pool is None and self.driver_judge is not None:
            spec = self.b.judge or TargetSpec.model_validate(DEFAULT_JUDGE)
            self.judge_pool = RayTarget("judge", spec, self.ctx.judge_identity or {}, self.settings,
                                        base_dir=self.ctx.battery_dir, target=self.judge, on_pool=self.on_pool)
        if self.judge_pool is not None:
            self.ctx.judge = self.judge_pool

    async def judge_off(self) -> None:
        if self.judge_pool is not None:
            await self.judge_pool.aclose()
            self.judge_pool = None
            self.ctx.judge = self.driver_judge

    async def before(self, name: str, m: Measure) -> None:
        from fairpair.measures import embed as embed_mod
        from fairpair.run import RayEmbedder, require_ray

        if m.uses_judge:
            self.judge_on()
        if isinstance(m, embed_mod.SemanticDistanceMeasure) and m.embedder is None:
            need = (self.settings.actors or 1) * self.settings.actor_cpus
            if self.judge_pool is not None and require_ray().available_resources().get("CPU", 0) < need:
                await self.judge_off()
            self.embed_pool = m.embedder = RayEmbedder(
                embed_mod.get_embedder, m.options.embedder or getattr(self.b, "embedder", None), self.ctx.language,
                self.settings)

    async def after(self, name: str, m: Measure) -> None:
        if self.embed_pool is not None:
            self.embed_pool.close()
            self.embed_pool = None
            from fairpair.measures.embed import SemanticDistanceMeasure

            if isinstance(m, SemanticDistanceMeasure):  # the measure before() gave the pool to
                m.embedder = None
        names = list(self.ms)
        if not any(self.ms[n].uses_judge for n in names[names.index(name) + 1:]):
            await self.judge_off()

    async def close(self) -> None:
        if self.embed_pool is not None:
            self.embed_pool.close()
        await self.judge_off()


async def _measure_progress(console, name: str, m: Measure, ctx: MeasureContext, store) -> None:
    """A progress bar for measure ``name`` (answers measured this session, judge calls counted); off a
    terminal, plain lines on stderr (:func:`fairpair._progress.poll_progress`)."""
    from fairpair._progress import CountingTarget, plain_progress, poll_progress, shows_progress

    if not (shows_progress(console) or plain_progress(console)):
        return
    rows = m.row_names(ctx)
    answered = sum(store.counts(t)["answered"] for t in store.targets())
    todo = answered - len(store.measured_keys(rows[0])) if rows else answered
    if m.uses_judge and ctx.judge is not None and not isinstance(ctx.judge, CountingTarget):
        ctx.judge = CountingTarget(ctx.judge)
    judge = ctx.judge if m.uses_judge else None
    base = judge.calls if judge is not None else 0

    def done() -> int:
        c = ctx.counts.get(name)
        return c.ok + c.missing + c.failed if c else 0  # one status per answer

    def extra() -> str:
        return f"judge calls {judge.calls - base:,}" if judge is not None else ""

    def failed() -> int:
        c = ctx.counts.get(name)
        return c.failed if c else 0

    await poll_progress(console, f"measure {name}", todo, done, extra, unit="answers", failed=failed)


def _record_in_manifest(run, ctx: MeasureContext, names: Iterable[str], warnings: list[str],
                        judged: dict[str, Any] | None = None) -> None:
    """Add the judge, its prompts, the options of the judge measures (``judge_measures``: how each
    asks and scores, e.g. ``mode``, ``scoring``) and the embedders to ``manifest.json`` (merged with
    earlier sessions)."""
    store = run.store
    try:
        old = run.manifest().get("measurement") or {}
    except (FairpairError, AttributeError):  # unreadable, not an object, or a block that is not one
        old = {}
    block = dict(old)
    if ctx.judge_identity is not None:
        block["judge"] = ctx.judge_identity
        block["self_judging"] = [w for w in warnings if w.startswith("self-judging")]
    if judged:
        block["judge_measures"] = {**(old.get("judge_measures") or {}), **judged}
    if ctx.judge_prompts:
        seen = {json.dumps(p, sort_keys=True) for p in old.get("judge_prompts") or []}
        block["judge_prompts"] = list(old.get("judge_prompts") or []) + [
            p for p in ctx.judge_prompts.values() if json.dumps(p, sort_keys=True) not in seen]
    embedders = {**(old.get("embedders") or {}), **ctx.embedders}
    for name in names:  # embedders recorded by an earlier session of this run
        ident = store.get_meta(f"embedder.{name}")
        if ident is not None:
            embedders.setdefault(name, ident)
    if embedders:
        block["embedders"] = embedders
    batches = [{"batch_id": b["batch_id"], "requests": b["requests"], "base_url": b["base_url"],
                "submitted_at": b["created_at"], "status": b["status"]}
               for b in store.batches(JUDGE_BATCH_NAME, stage="measure") if b["status"] != "superseded"]
    if batches:  # the judge's calls that went through its provider's batch API
        block["judge_batches"] = batches
    settings = ctx.settings
    if getattr(settings, "engine", "inprocess") == "ray":  # where this session's judge calls and embeddings ran
        block["engine"] = {"engine": "ray", "address": settings.address, "actors": settings.actors}
    else:
        block.pop("engine", None)
    if block != old:
        run.write_manifest({"measurement": block})
    if ctx.judge_tokens:  # added to the earlier sessions' (a resumed measure stage calls the judge only for the rest)
        tokens = dict(run.manifest().get("tokens") or {})
        judge = {k: dict(v) for k, v in (tokens.get("judge") or {}).items() if isinstance(v, dict)}
        for name, row in ctx.judge_tokens.items():
            have = judge.setdefault(name, dict.fromkeys(TOKEN_KEYS, 0))
            for k in TOKEN_KEYS:
                have[k] = int(have.get(k) or 0) + row[k]
            if ctx.judge_identity is not None:
                have["model"] = ctx.judge_identity.get("model")
        run.write_manifest({"tokens": {**tokens, "judge": judge}})


#: answers read from the store at a time (and handed to ``Measure.prepare`` together)
CHUNK = 2000


async def _measure_stream(name: str, m: Measure, ctx: MeasureContext, store, counterparts: _Counterparts,
                          only_cases: Any = None) -> None:
    """Measure every stored answer not yet measured by ``m``, streaming.

    The run engine's pool (:func:`fairpair._calls.worker_pool`): a producer
    reads the answers ``CHUNK`` at a time (with their cases, those already
    measured left out in SQL), finds the counterparts of a pairwise measure,
    calls ``m.prepare`` on the chunk's items and feeds a queue of
    ``2 * concurrency`` items to ``concurrency`` workers, which commit each
    result as it arrives. Memory is one chunk and
    the queue, whatever the size of the run.
    """
    rows = m.row_names(ctx)
    fields = m.outputs(ctx)
    ref_attr = None
    if m.pairwise:
        opts = m.options
        if opts.against == "reference":
            ref_attr = reference_attribute(ctx.battery, opts, name)
        elif not len(counterparts.baselines()):
            raise FairpairError(
                f"measure '{name}' compares with the baseline, but the run has no baseline cases",
                key=f"measures.{name}.against",
                hint="add a design '- kind: baseline' (or a two_party design with its baseline), "
                     "or use 'against: reference'")
    concurrency = getattr(ctx.settings, "concurrency", None) or 8

    async def items():
        after = 0
        while answers := store.answers_to_measure(rows, after=after, limit=CHUNK):
            after = answers[-1].id
            if only_cases is not None:
                answers = [a for a in answers if a.response.case_id in only_cases
                           or (a.response.target, a.response.case_id) in only_cases]
            chunk = _chunk_items(name, m, answers, rows, store, ctx, counterparts, ref_attr)
            if chunk:
                await m.prepare(chunk, ctx)
            for it in chunk:
                yield it

    async def work(item: MeasureItem) -> None:
        _MEASURING.set(name)  # the judge calls of this item count under this measure (manifest tokens.judge)
        try:
            res = await m.measure(item, ctx)
        except FairpairError:
            raise
        except CallDeferred:  # its judge calls are in a provider batch: nothing to store yet
            ctx.count(name, "waiting")
            return
        except Exception as exc:  # noqa: BLE001 - a failure is data
            res = MeasureResult.failed(describe_error(exc))
        if ctx.hold:  # the judge self-test waits for its batch: nothing judged is stored before it passes
            ctx.count(name, "waiting")
            return
        _commit(store, name, rows, fields, item, res)
        ctx.count(name, res.status)

    await worker_pool(items(), work, workers=concurrency, buffer=2 * concurrency)


def _chunk_items(name: str, m: Measure, answers, rows: tuple[str, ...], store, ctx: MeasureContext,
                 counterparts: _Counterparts, ref_attr: str | None) -> list[MeasureItem]:
    """The items of one chunk of answers: those already measured counted as ``skipped``; for a
    pairwise measure, an answer whose counterpart is missing stored as ``failed`` (retried later)."""
    todo = []
    for a in answers:
        if a.done:
            ctx.count(name, "skipped")
        elif a.case_json is not None:
            todo.append((a.response, case_from_json(a.case_json)))
            if len(a.response.text or "") > MAX_MEASURED_CHARS:
                ctx.long_answers.add((a.response.target, a.response.case_id))
    if not m.pairwise:
        return [MeasureItem(resp.target, case, resp) for resp, case in todo]
    found = counterparts.find([case for _, case in todo], m.options, ref_attr)
    cp_answers: dict[tuple[str, str], Any] = {}
    items = []
    for (resp, case), cp in zip(todo, found, strict=True):
        if cp == "n/a":
            continue
        cp_resp = None
        if cp is not None:
            key = (resp.target, cp.id)
            if key not in cp_answers:
                cp_answers[key] = store.answer(*key)
            cp_resp = cp_answers[key]
        if cp_resp is None:
            why = "no counterpart case in the run" if cp is None else \
                f"the counterpart case {cp.id} has no answer from '{resp.target}' (yet)"
            for r in rows:
                store.add_measurement(target=resp.target, case_id=resp.case_id, measure=r, status="failed",
                                      error=why)
            ctx.count(name, "failed")
            ctx.count(name, "no_counterpart")
            continue
        item = MeasureItem(resp.target, case, resp, cp_resp, cp)
        speakers = ctx.speakers
        bad = [(w, st.status) for w, st in (("answer", item.status(ctx.language, speakers)),
                                             ("counterpart", MeasureItem(resp.target, cp, cp_resp).status(
                                                 ctx.language, speakers))) if not st.ok]
        if bad:  # a distance or preference between degenerate answers is not a result
            why = "not compared: degenerate " + ", ".join(f"{w} ({st})" for w, st in bad)
            for r in rows:
                store.add_measurement(target=resp.target, case_id=resp.case_id, measure=r, status="missing",
                                      error=why, detail={"answer_statuses": dict(bad)})
            ctx.count(name, "missing")
            continue
        items.append(item)
    return items


def _commit(store, name, rows, fields, item: MeasureItem, res: MeasureResult) -> None:
    full = dict(res.detail or {})
    if res.raw is not None:
        full["raw"] = res.raw
    detail = full or None
    if res.status == "ok":
        if fields is None:
            store.add_measurement(target=item.target, case_id=item.case.id, measure=name, status="ok",
                                  value=res.value, detail=detail)
            return
        outs = res.outputs or {}
        for f, row in zip(fields, rows, strict=True):
            v = outs.get(f)
            store.add_measurement(target=item.target, case_id=item.case.id, measure=row,
                                  status="ok" if v is not None else "missing", value=v, detail=detail,
                                  error=None if v is not None else f"no value for '{f}'")
        return
    for row in rows:
        store.add_measurement(target=item.target, case_id=item.case.id, measure=row, status=res.status,
                              detail=detail, error=res.error)


def _print_counts(console, counts: dict[str, MeasureCounts], warnings: list[str]) -> None:
    from rich.markup import escape
    from rich.table import Table

    # the same words as `fairpair status`: missing = no value could be obtained (final, not retried)
    t = Table("measure", "ok", "missing", "failed", "leaks", "invalid judge outputs", "already stored",
              title="measurements (this session)", title_justify="left",
              caption="missing: no value, final (not retried); failed: retried by the next run", caption_justify="left")
    waiting = any(c.waiting for c in counts.values())
    if waiting:
        t.add_column("waiting for a batch")
    for n, c in counts.items():
        t.add_row(escape(n), str(c.ok), str(c.missing), str(c.failed), str(c.leaks), str(c.invalid),
                  str(c.skipped), *((str(c.waiting),) if waiting else ()))
    console.print(t)
    for w in dict.fromkeys(warnings):
        console.print(f"[yellow]warning:[/yellow] {escape(w)}", soft_wrap=True)
