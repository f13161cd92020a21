"""Everything a report shows, read once from a run directory into frozen records.

Sources, all through one :class:`fairpair.store.Run` opened read-only once:
``RUN/results.json`` (the analysis, schema ``fairpair.results/2``; optional),
``RUN/manifest.json`` (provenance) and ``RUN/store.sqlite`` (battery, answers,
measurements, failures). Nothing is written here.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairpair.battery import recorded_battery
from fairpair.errors import FairpairError, validation_summary
from fairpair.records import RankingResult, case_from_json
from fairpair.report._view import CollectedRow
from fairpair.store import MANIFEST_NAME, RESULTS_NAME, RESULTS_SCHEMA

if TYPE_CHECKING:
    from fairpair.analysis import ComparisonResult, Results
    from fairpair.battery import Battery
    from fairpair.measures import Masker
    from fairpair.records import Case
    from fairpair.store import Run, Store

__all__ = ["ReportData", "TargetInfo", "GroupValue", "EvidencePair", "load_report_data", "read_report_data",
           "RESULTS_SCHEMA", "MANIFEST_NAME", "RESULTS_NAME", "group_label", "measure_label", "comparison_key",
           "RankingEvidence", "ranking_key", "ranking_sections"]

#: Matched sets quoted per failing comparison.
EVIDENCE_PER_COMPARISON = 3


@dataclass(frozen=True)
class TargetInfo:
    """A target as the run saw it: declared identity, and what the responses say was served."""

    name: str
    identity: dict[str, Any]
    served_models: dict[str, int]
    fingerprints: dict[str, int]
    cases: int
    answered: int
    failed: int
    retried: int
    failure_reasons: dict[str, int]


@dataclass(frozen=True)
class GroupValue:
    """Descriptive share (binary) or mean of a measure over one group's answers (those of the complete
    pairs its comparisons used, when the plan compares the measure).

    ``ci`` is a 95% interval that ignores the pairing: Wilson (1927) for a
    share, Student t for a mean; ``(nan, nan)`` below two values.
    """

    target: str
    measure: str
    scale: str
    attribute: str
    group: str
    label: str
    n: int
    value: float
    ci: tuple[float, float]


@dataclass(frozen=True)
class EvidencePair:
    """Two masked answers of one matched set, for one comparison (A = subject, B = reference)."""

    comparison: str
    matched_set: str
    template: str
    repetition: int | None
    prompt_a: str
    prompt_b: str
    answer_a: str | None
    answer_b: str | None
    value_a: Any
    value_b: Any


@dataclass(frozen=True)
class RankingEvidence:
    """One matched set of a ranking design, masked: the prompt's order and the answer's ranking.

    ``slots``: ``(slot, group, label, placeholder)`` in prompt order (slot 1 first), the candidate's
    name replaced by ``placeholder`` (``[label]``); ``ranking``: ``(rank, slot, group, label)`` as the
    ranking measure parsed the answer (rank 1 first; only the top pick when the answer gave no
    complete order); ``answer``: the answer text with each candidate's name replaced by its group's
    placeholder and every other signal value by the report's marker.
    """

    key: str
    case_id: str
    matched_set: str
    template: str
    repetition: int | None
    slots: tuple[tuple[int, str, str, str], ...]
    ranking: tuple[tuple[int, int, str, str], ...]
    parse: str
    answer: str


@dataclass(frozen=True)
class ReportData:
    """A run directory, read for reporting (see the module docstring)."""

    run_dir: Path
    language: str
    battery: Battery | None  # None for a store without one
    battery_name: str
    manifest: dict[str, Any]
    #: ``results.json`` as the typed :class:`~fairpair.analysis.Results` (None before the analysis);
    #: a dict given here is validated into one
    results: Results | None
    targets: list[TargetInfo]
    measurement_counts: dict[str, dict[str, int]]
    group_values: list[GroupValue]
    evidence: dict[str, list[EvidencePair]]
    mask_values: tuple[str, ...]
    mask_terms: tuple[str, ...]
    n_cases: int
    collected: list[CollectedRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: comparison key -> why its dropped pairs were dropped -> count
    drop_reasons: dict[str, dict[str, int]] = field(default_factory=dict)
    #: ranking section key (:func:`ranking_key`) -> masked matched sets quoted for it
    ranking_evidence: dict[str, list[RankingEvidence]] = field(default_factory=dict)
    #: ``rankings`` already decoded from ``results`` (:func:`ranking_sections`; :func:`read_report_data`
    #: decodes them once for the evidence and hands them on); None: decoded here
    decoded_rankings: InitVar[list[RankingResult] | None] = None
    #: ``results.json``'s ``rankings`` as typed :class:`~fairpair.records.RankingResult` records, in file
    #: order (empty before the analysis or without a ranking design): what the report's ranking section reads
    rankings: list[RankingResult] = field(init=False, repr=False, compare=False)

    def __post_init__(self, decoded_rankings: list[RankingResult] | None) -> None:
        if isinstance(self.results, dict):  # a results.json object: the typed record every stage reads
            from fairpair.analysis import Results

            object.__setattr__(self, "results", Results.model_validate(self.results))
        if decoded_rankings is None:
            decoded_rankings = ranking_sections(self.results, file=Path(self.run_dir) / RESULTS_NAME)
        object.__setattr__(self, "rankings", decoded_rankings)

    @property
    def analysed(self) -> bool:
        return self.results is not None

    @property
    def comparisons(self) -> list[ComparisonResult]:
        """The analysis's :class:`~fairpair.analysis.ComparisonResult` records (none before it ran)."""
        return list(self.results.comparisons) if self.results is not None else []

    def attribute_signal(self, attribute: str) -> str | None:
        a = self.battery.attributes.get(attribute) if self.battery is not None else None
        return a.signal if a is not None else None


def comparison_key(c: ComparisonResult) -> str:
    """A comparison's (:class:`~fairpair.analysis.ComparisonResult`) unique key in results.json: one
    plan comparison yields one row per target, design and pair of groups."""
    return "|".join(str(getattr(c, k)) for k in ("id", "target", "design", "group_a", "group_b"))


def ranking_key(sec: RankingResult) -> str:
    """A ranking section's key in results.json ``rankings``: one per design, ranking measure and target."""
    return "|".join((sec.design, sec.measure, sec.target))


def ranking_sections(results: Results | None, *, file: Path | str | None = None) -> list[RankingResult]:
    """``results.rankings`` (results.json's ranking sections, as the analysis wrote them) decoded into typed
    :class:`~fairpair.records.RankingResult` records, in file order, as
    :meth:`fairpair.records.Results.ranking_results` does; empty for None or a run without a ranking design.

    Raises
    ------
    FairpairError
        A section is not a ranking section: the message names ``file`` (results.json), the section
        (key ``rankings.<i>``, 0-based) and its first problems.
    """
    out = []
    for i, sec in enumerate(results.rankings if results is not None else []):
        try:
            out.append(RankingResult.model_validate(sec))
        except ValueError as exc:
            raise FairpairError(f"results.json is malformed: ranking section {i + 1} has {validation_summary(exc)}",
                                file=file, key=f"rankings.{i}",
                                hint="rerun `fairpair analyze RUN` to write it again") from None
    return out


def group_label(battery: Battery | None, attribute: str, group: str) -> str:
    """The battery's ``label`` of a group, or the group id."""
    if battery is not None:
        a = battery.attributes.get(attribute)
        g = a.groups.get(group) if a is not None else None
        if g is not None and g.label:
            return g.label
    return group


def measure_label(battery: Battery | None, measure: str) -> str:
    """A measure's ``label`` option when the battery gives one, else its name (``tone.courtesy``)."""
    if battery is not None:
        base, _, fld = measure.partition(".")
        spec = battery.measures.get(base)
        if spec is not None:
            lab = spec.options().get("label")
            if isinstance(lab, dict):
                lab = lab.get(fld) if fld else None
            if isinstance(lab, str) and lab.strip():
                return lab + (f" ({fld})" if fld and not isinstance(spec.options().get("label"), dict) else "")
    return measure


def _signal_values(battery: Battery | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The battery's signal values and group references (:func:`fairpair.measures.signal_values`)."""
    if battery is None:
        return (), ()
    from fairpair.measures import signal_values

    values, terms = signal_values(battery)
    return tuple(values), tuple(terms)


def _wilson(k: float, n: int) -> tuple[float, float]:
    """95% Wilson interval of a group's share; NaN below two cases."""
    from fairpair.stats import wilson_interval

    return wilson_interval(k, n, 0.95) if n >= 2 else (math.nan, math.nan)


def _t_interval(vals: list[float]) -> tuple[float, float]:
    """95% t interval of a group's mean; NaN below two cases."""
    from fairpair.stats import t_interval

    n = len(vals)
    if n < 2:
        return (math.nan, math.nan)
    m = math.fsum(vals) / n
    sd = math.sqrt(math.fsum((v - m) ** 2 for v in vals) / (n - 1))
    return t_interval(m, sd / math.sqrt(n), n - 1, 0.95)


def _group_values(store: Store, battery: Battery | None, results: Results | None,
                  drop_reasons: dict[str, dict[str, int]] | None = None) -> list[GroupValue]:
    """Descriptive per-group shares/means for each measure the plan compares (or every measure).

    For a compared measure, each group's value is taken over the cases of the complete pairs its
    comparisons used (the pairs of the test and the interval; a group in several comparisons, such
    as the reference, over the union of its pairs), so the chart never shows other answers than the
    test. ``drop_reasons`` (filled when given): comparison key -> why its pairs were dropped ->
    count ("no answer", "answer <status>", "measurement missing").
    """
    if battery is None:
        return []
    import numpy as np

    from fairpair.analysis import load_run_data, measure_scale, pairs_for, strata_for

    data = load_run_data(store, keep_details=False, language=battery.language, statuses=True,
                         speakers=battery.speakers(),  # the statuses the analysis recorded, when they still hold
                         known_statuses=dict(results.answer_statuses) if results is not None else None)
    used: dict[tuple[str, str, str, str], set[int]] = {}
    comparisons = list(results.comparisons) if results is not None else []
    if comparisons:
        wanted = list(dict.fromkeys((c.measure, c.attribute) for c in comparisons))
        strata_cache: dict[tuple[str, str], Any] = {}
        data.values.update(data.status_values)  # the answer-status comparisons' measures
        for c in comparisons:
            vals = data.values.get((c.target, c.measure))
            if vals is None or c.attribute not in battery.attributes:
                continue
            key = (c.design, c.attribute)
            if key not in strata_cache:
                strata_cache[key] = strata_for(data.cases, *key)
            st = strata_cache[key]
            answered = data.answered.get(c.target, np.zeros(len(data.cases), dtype=bool))
            if c.measure.startswith("answer."):
                answered = data.statuses.get(c.target, np.full(len(data.cases), "", dtype=object)) != ""
            pd = pairs_for(data.cases, st, c.attribute, c.group_a, c.group_b, vals, answered)
            kept = ~(np.isnan(pd.x) | np.isnan(pd.y))
            ia = np.array([data.cases.index[i] for i in pd.case_a], dtype=np.intp)
            ib = np.array([data.cases.index[i] for i in pd.case_b], dtype=np.intp)
            for grp, idx in ((c.group_a, ia), (c.group_b, ib)):
                used.setdefault((c.target, c.measure, c.attribute, grp), set()).update(idx[kept].tolist())
            if drop_reasons is not None and (~kept).any():
                stat = data.statuses.get(c.target)
                why: dict[str, int] = {}
                for a, b in zip(ia[~kept], ib[~kept], strict=True):
                    reasons = []
                    for i in (a, b):
                        s_i = "" if stat is None else stat[i]
                        if not answered[i] or s_i in ("", "failed"):
                            reasons.append("no answer" if s_i != "failed" else "answer failed")
                        elif s_i != "ok":
                            reasons.append(f"answer {s_i}")
                        elif math.isnan(vals[i]):
                            reasons.append("measurement missing")
                    r = reasons[0] if reasons else "measurement missing"
                    why[r] = why.get(r, 0) + 1
                drop_reasons[comparison_key(c)] = why
    else:
        attrs = sorted({a for g in data.cases.groups for a in g if a in battery.attributes})
        from fairpair.analysis import DISCOVERED_PREFIX

        measures = sorted({m for (t, m) in data.values if not m.startswith(("answer.", DISCOVERED_PREFIX))})
        wanted = [(m, a) for m in measures for a in attrs]
    scales = results.measures if results is not None else {}
    out: list[GroupValue] = []
    for target in data.targets:
        for measure, attribute in wanted:
            vals = data.values.get((target, measure))
            if vals is None:
                continue
            scale = scales.get(measure) or measure_scale(battery, measure, data.raw_kinds.get(measure))
            by_group: dict[str, list[float]] = {}
            for i, g in enumerate(data.cases.groups):
                if data.cases.baseline[i] or attribute not in g:
                    continue
                if comparisons and i not in used.get((target, measure, attribute, g[attribute]), ()):
                    continue
                v = vals[i]
                if not math.isnan(v):
                    by_group.setdefault(g[attribute], []).append(float(v))
            order = list(battery.attributes[attribute].groups) if attribute in battery.attributes else []
            for grp in sorted(by_group, key=lambda x: (order.index(x) if x in order else len(order), x)):
                xs = by_group[grp]
                mean = sum(xs) / len(xs)
                ci = _wilson(sum(xs), len(xs)) if scale == "binary" else _t_interval(xs)
                out.append(GroupValue(target, measure, scale, attribute, grp, group_label(battery, attribute, grp),
                                      len(xs), mean, ci))
    return out


def _targets(store: Store, manifest: dict[str, Any]) -> list[TargetInfo]:
    names = list(dict.fromkeys([*(manifest.get("targets") or {}), *store.targets()]))
    out = []
    for name in names:
        served: Counter[str] = Counter()
        prints: Counter[str] = Counter()
        for model, fp, cnt in store.served_models(name):
            served[model or "?"] += cnt
            if fp:
                prints[fp] += cnt
        reasons: Counter[str] = Counter()
        for err in store.unanswered_errors(name):
            reasons[_reason(err)] += 1
        c = store.counts(name)
        out.append(TargetInfo(name, (manifest.get("targets") or {}).get(name) or {}, dict(served), dict(prints),
                              c["cases"], c["answered"], c["failed"], c["retried"], dict(reasons.most_common())))
    return out


def _reason(err: str | None) -> str:
    """A failure message shortened to its kind (first line, at most 120 characters)."""
    first = (err or "unknown error").strip().splitlines()[0] if (err or "").strip() else "unknown error"
    return first[:120]


def _measured_value(store: Store, target: str, case_id: str, measure: str) -> Any:
    base, _, fld = measure.partition(".")
    for m in (measure, base) if fld else (measure,):
        v = store.latest_value(target, case_id, m)
        if v is not None:
            if m == base and fld and isinstance(v, dict):
                return v.get(fld)
            return v
    return None


def _evidence(store: Store, results: Results | None, masker: Callable[[str], str],
              limit: int = EVIDENCE_PER_COMPARISON) -> dict[str, list[EvidencePair]]:
    """Masked answer pairs for every failing comparison (``evidence`` of results.json)."""
    out: dict[str, list[EvidencePair]] = {}
    if results is None:
        return out

    def answer(target: str, cid: str) -> str | None:
        text = store.answer_text(target, cid)
        return None if text is None else masker(text)

    for comp in results.comparisons:
        if comp.verdict != "fail":
            continue
        key = comparison_key(comp)
        pairs = []
        est = comp.estimate or 0.0

        def along(ev: Any, est: float = est) -> int:  # pairs going the way of the difference first
            va, vb = ev.value_a, ev.value_b
            if isinstance(va, (int, float)) and isinstance(vb, (int, float)):
                return 0 if (va - vb) * est > 0 else 1
            return 1

        for ev in sorted(comp.evidence, key=along)[:limit]:
            ca, cb = store.case(ev.case_a), store.case(ev.case_b)
            tgt = comp.target
            va, vb = ev.value_a, ev.value_b
            if va is None and ca is not None:
                va = _measured_value(store, tgt, ca.id, comp.measure)
            if vb is None and cb is not None:
                vb = _measured_value(store, tgt, cb.id, comp.measure)
            pairs.append(EvidencePair(
                comparison=key, matched_set=ev.matched_set,
                template=ca.template if ca else (cb.template if cb else ""),
                repetition=ca.repetition if ca else (cb.repetition if cb else None),
                prompt_a=masker(ca.turns[-1]) if ca and ca.turns else "",
                prompt_b=masker(cb.turns[-1]) if cb and cb.turns else "",
                answer_a=answer(tgt, ca.id) if ca else None, answer_b=answer(tgt, cb.id) if cb else None,
                value_a=va, value_b=vb))
        out[key] = pairs
    return out


#: Parsed cases of a design looked at, at most, when choosing a ranking section's evidence.
RANKING_EVIDENCE_SCAN = 400


def _placeholder_mask(text: str, slots: list[tuple[str, str]], language: str | None,
                      masker: Callable[[str], str] | None) -> str:
    """``text`` with each candidate's name (``slots``: ``(variant, placeholder)``), as the ranking parse
    finds it (whole name, own word, misspelt or renamed: :func:`fairpair.measures.ranking.candidate_spans`),
    replaced by its placeholder, then ``masker`` (the group terms) over the rest; the placeholders are kept
    out of ``masker``'s reach (a label may hold a group term)."""
    from fairpair.measures.ranking import candidate_spans

    keep = {}
    for i, (_variant, placeholder) in enumerate(slots):
        keep[chr(0xE000 + i)] = placeholder  # a private-use character: no letter, digit or value
    for start, end, i in reversed(candidate_spans(text, [v for v, _ in slots])):
        text = text[:start] + chr(0xE000 + i) + text[end:]
    if masker is not None:
        text = masker(text)
    for token, placeholder in keep.items():
        text = text.replace(token, placeholder)
    return text


def _ranking_cases(store: Store, battery: Battery | None, designs: Iterable[str]) -> dict[str, list[Case]]:
    """Design -> its first stored cases with candidate slots (at most 4 x :data:`RANKING_EVIDENCE_SCAN`,
    in expansion order), for the ``designs`` that are ranking designs: those of
    :meth:`~fairpair.battery.Battery.ranking_designs`, or, without a battery, those of the ranking sections
    (``designs``; the analysis wrote them for ranking designs only). The design of each case is read by SQLite
    (``$.design``), so the cases of the other designs are never decoded."""
    from fairpair.measures.ranking import ranking_slots

    ranking = {did for did, _d in battery.ranking_designs()} if battery is not None else None
    rowids: dict[str, list[int]] = {d: [] for d in designs if ranking is None or d in ranking}
    for rowid, _seq, design in store.case_fields("$.design"):
        if design in rowids:
            rowids[design].append(rowid)
    limit = 4 * RANKING_EVIDENCE_SCAN
    out: dict[str, list[Case]] = {d: [] for d in designs}
    for design, ids in rowids.items():
        for k in range(0, len(ids), limit):
            part = store.cases_at(ids[k:k + limit])
            out[design] += [part[i] for i in ids[k:k + limit] if ranking_slots(part[i])]
            if len(out[design]) >= limit:
                break
    return out


def _ranking_evidence(store: Store, battery: Battery | None, sections: list[RankingResult],
                      masker: Callable[[str], str] | None,
                      limit: int = EVIDENCE_PER_COMPARISON) -> dict[str, list[RankingEvidence]]:
    """Up to ``limit`` masked matched sets per ranking section (results.json ``rankings``).

    Chosen deterministically, in case order, among the first :data:`RANKING_EVIDENCE_SCAN` parsed
    answers of the design (in its first 4 x that many cases): first the sets whose top pick is the most
    selected group's candidate (the section's ``reference``) placed in a slot other than 1 (the group
    effect, not the first slot's), one per template; then the first parsed sets of the other templates; then any.
    """
    out: dict[str, list[RankingEvidence]] = {}
    if not sections or limit <= 0:
        return out
    by_design: dict[str, list[RankingResult]] = {}
    for sec in sections:
        by_design.setdefault(sec.design, []).append(sec)
    cases = _ranking_cases(store, battery, by_design)
    language = getattr(battery, "language", None)
    # the candidates' names are replaced by the parse's own matches; only the group terms need a masker
    # (one over every name of the battery costs about a second per name to build)
    terms = _signal_values(battery)[1] if battery is not None else ()
    if terms:
        from fairpair.measures import Masker

        masker = Masker((), group_terms=terms, language=language).mask
    else:
        masker = None
    for design, secs in by_design.items():
        for sec in secs:
            attribute, target, measure = sec.attribute, sec.target, sec.measure
            reference = sec.reference
            seen: list[tuple[Case, dict[str, Any], bool]] = []
            for looked, c in enumerate(cases[design]):
                if len(seen) >= RANKING_EVIDENCE_SCAN or looked >= 4 * RANKING_EVIDENCE_SCAN:
                    break  # bounded: a run of mostly unparsed answers does not cost a query per case
                d = store.latest_detail(target, c.id, measure)
                if not isinstance(d, dict) or d.get("parse") in (None, "unparsed") or not d.get("order"):
                    continue
                slot_of = {str(s["group"]): int(s["slot"]) for s in c.meta["ranking"]["slots"]}
                seen.append((c, d, d.get("top") == reference and slot_of.get(str(d.get("top"))) != 1))
            chosen: list[tuple[Case, dict[str, Any]]] = []
            templates: set[str] = set()
            for want_telling, new_template in ((True, True), (False, True), (False, False)):
                for c, d, telling in seen:
                    if len(chosen) >= limit:
                        break
                    if (want_telling and not telling) or (new_template and c.template in templates) \
                            or any(c is x for x, _ in chosen):
                        continue
                    chosen.append((c, d))
                    templates.add(c.template)
            chosen.sort(key=lambda cd: cases[design].index(cd[0]))
            quoted = []
            for c, d in chosen:
                rk = c.meta["ranking"]
                slots = sorted(rk["slots"], key=lambda s: int(s["slot"]))
                label = {str(s["group"]): group_label(battery, attribute, str(s["group"])) for s in slots}
                group_at = {int(s["slot"]): str(s["group"]) for s in slots}
                rows = tuple((int(s["slot"]), str(s["group"]), label[str(s["group"])], f"[{label[str(s['group'])]}]")
                             for s in slots)
                ranking = tuple((r + 1, int(sl), group_at.get(int(sl), "?"), label.get(group_at.get(int(sl), ""), "?"))
                                for r, sl in enumerate(d.get("order") or []))
                text = store.answer_text(target, c.id)
                answer = "" if text is None else _placeholder_mask(
                    text, [(str(s["variant"]), f"[{label[str(s['group'])]}]") for s in slots], language, masker)
                quoted.append(RankingEvidence(
                    key=ranking_key(sec), case_id=c.id, matched_set=c.matched_set or c.id,
                    template=c.template, repetition=rk.get("repetition", c.repetition),
                    slots=rows, ranking=ranking, parse=str(d.get("parse", "")), answer=answer))
            out[ranking_key(sec)] = quoted
    return out


def _case_signal_values(store: Store) -> set[str]:
    """Every variant the cases actually used (lexicon groups included)."""
    vals: set[str] = set()
    for _cid, _seq, data in store.case_rows(ordered=False):
        for v in case_from_json(data).variants.values():
            if isinstance(v, str):
                vals.add(v)
    return vals


def _collected(store: Store, battery: Battery | None) -> list[CollectedRow]:
    """Cases and answers per design and cell (:class:`~fairpair.report._view.CollectedRow`)."""
    answered: dict[str, set[str]] = {t: store.answered_ids(t) for t in store.targets()}
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for _cid, _seq, data in store.case_rows():
        c = case_from_json(data)
        groups = c.groups
        cell = "baseline" if c.baseline else ", ".join(f"{k}={v}" for k, v in groups.items())
        label = "baseline" if c.baseline else ", ".join(group_label(battery, k, v) for k, v in groups.items())
        if c.design_kind == "ranking":  # one cell per design, not one per order of the candidates
            cell = label = f"{len(groups)} candidates, one per group"
        row = cells.setdefault((c.design, cell), {"design": c.design, "cell": cell, "label": label,
                                                  "cases": 0, "answered": {t: 0 for t in answered}})
        row["cases"] += 1
        for t, ids in answered.items():
            row["answered"][t] += c.id in ids
    return [CollectedRow(**row) for row in cells.values()]


def _masker(battery: Battery | None, values: tuple[str, ...], terms: tuple[str, ...], marker: str) -> Masker:
    """The battery's masker (names in all their forms, see ``masker_for``), plus the values the cases
    used; without a battery, every value as given."""
    from fairpair.measures import Masker

    if battery is None:
        return Masker(values, group_terms=terms, marker=marker)
    from fairpair.measures import masker_for

    return masker_for(battery, marker=marker, extra_values=values)


class _LazyMasker:
    """The report's ``mask`` (see :func:`_masker`), compiled at the first call: a report that quotes no
    evidence (no failing comparison) never pays for a pattern over every signal value."""

    def __init__(self, battery: Battery | None, values: tuple[str, ...], terms: tuple[str, ...],
                 warnings: list[str]):
        self.battery, self.values, self.terms, self.warnings = battery, values, terms, warnings
        self._mask: Callable[[str], str] | None = None

    def __call__(self, text: str) -> str:
        if self._mask is None:
            try:
                self._mask = _masker(self.battery, self.values, self.terms, "[MASK]").mask
            except ValueError as exc:  # a value that shares a word with the marker: a longer marker
                self.warnings.append(f"masking: {exc}")
                self._mask = _masker(self.battery, self.values, self.terms, "[SIGNAL-MASKED]").mask
        return self._mask(text)


def load_report_data(run_dir: Path, *, language: str | None = None,
                     evidence: int = EVIDENCE_PER_COMPARISON) -> ReportData:
    """Read ``run_dir`` for a report; ``evidence``: matched sets quoted per failing comparison.

    Raises
    ------
    FairpairError
        ``run_dir`` is not a run directory, or results.json/manifest.json are
        unreadable or of an unknown schema.
    """
    from fairpair.store import Run

    with Run.open(Path(run_dir), lenient_text=True) as run:
        return read_report_data(run, language=language, evidence=evidence)


def read_report_data(run: Run, *, language: str | None = None,
                     evidence: int = EVIDENCE_PER_COMPARISON) -> ReportData:
    """:func:`load_report_data` from a :class:`fairpair.store.Run` already open (the only read of the
    run a report makes: every stage after this one renders the :class:`ReportData`)."""
    from fairpair._text import fold
    from fairpair.measures._mask import _trim

    run_dir = run.path
    manifest = run.manifest()
    results = run.results()  # the typed Results (validated once), or None before the analysis
    rankings = ranking_sections(results, file=run_dir / RESULTS_NAME)  # its ranking sections, decoded once
    warnings: list[str] = []
    store = run.store
    battery = None
    try:
        battery = recorded_battery(run).battery
    except FairpairError as exc:
        warnings.append(exc.message)
    lang = language or (battery.language if battery is not None else None) or "en"
    if lang not in ("es", "en"):
        raise FairpairError(f"unknown report language {lang!r}; use es or en", key="--lang")
    values, terms = _signal_values(battery)
    used = [v for v in _case_signal_values(store) if _trim(fold(v))]
    values = tuple(dict.fromkeys([*values, *used]))
    masker = _LazyMasker(battery, values, terms, warnings)  # compiled only if evidence is quoted
    drops: dict[str, dict[str, int]] = {}
    return ReportData(
        run_dir=run_dir, language=lang, battery=battery,
        battery_name=(battery.name if battery is not None else manifest.get("battery", run_dir.name)),
        manifest=manifest, results=results, targets=_targets(store, manifest),
        measurement_counts=store.measurement_row_counts(),
        group_values=_group_values(store, battery, results, drops),
        evidence=_evidence(store, results, masker, evidence), mask_values=values, mask_terms=terms,
        n_cases=store.n_cases(), collected=_collected(store, battery), warnings=warnings, drop_reasons=drops,
        ranking_evidence=_ranking_evidence(store, battery, rankings, masker, evidence), decoded_rankings=rankings)
