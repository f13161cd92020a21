"""Read a run's cases, answers and measurements into arrays, and form matched pairs.

Reads the store's columnar bulk reads (:meth:`fairpair.store.Store.case_rows`,
:meth:`~fairpair.store.Store.measurement_columns`: one query per table, JSON
decoded with the standard library) so that a 56,000-answer study loads in
about a second.
"""

from __future__ import annotations

import itertools
import json
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from fairpair.analysis._paired import PairData
from fairpair.records import case_from_json

if TYPE_CHECKING:
    from fairpair.battery import Battery, Comparison
    from fairpair.store import Store

__all__ = ["CaseTable", "RunData", "Strata", "load_run_data", "load_answer_statuses", "add_status_values",
           "add_category_values",
           "STATUS_PREFIX", "measure_scale", "pairs_for", "strata_for", "to_float",
           "group_pairs"]

@contextmanager
def open_for_reading(run_dir):
    """A run opened for the analysis (:class:`fairpair.store.Run`, read-only; a store from an older
    fairpair is migrated first, append-only), or ``run_dir`` itself when it is a ``Run`` already open."""
    from fairpair.store import Run

    with Run.opened(run_dir, "r", migrate=True) as run:
        yield run


def to_float(v: Any) -> float:
    """A stored JSON value as a float: bools as 0/1; None, strings, dicts as NaN."""
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        f = float(v)
        return f if math.isfinite(f) else math.nan
    return math.nan


@dataclass
class CaseTable:
    """Cases of a run, columnar, in store order."""

    ids: list[str]
    index: dict[str, int]
    design: list[str]
    design_kind: list[str]
    template: list[str]
    matched_set: list[str]
    baseline: list[bool]
    axis: list[str | None]
    groups: list[dict[str, str]]
    variants: list[dict[str, str]]
    meta: list[dict[str, Any]]

    def __len__(self) -> int:
        return len(self.ids)

    def arrays(self) -> dict[str, np.ndarray]:
        """Cached numpy columns: ids, matched sets (object), template codes (int) and labels."""
        cache = self.__dict__.get("_arrays")
        if cache is None:
            labels, codes = np.unique(np.array(self.template, dtype=object).astype(str), return_inverse=True)
            cache = {"ids": np.array(self.ids, dtype=object), "sets": np.array(self.matched_set, dtype=object),
                     "template_code": codes.astype(np.intp), "template_labels": labels}
            self.__dict__["_arrays"] = cache
        return cache


@dataclass
class RunData:
    """Everything the analysis reads from a store."""

    cases: CaseTable
    answered: dict[str, np.ndarray]  # target -> bool per case
    failed: dict[str, int]
    values: dict[tuple[str, str], np.ndarray]  # (target, measure) -> float per case (NaN missing)
    raw_kinds: dict[str, set[str]]  # measure -> python type names of stored values
    measured: dict[str, int] = field(default_factory=dict)  # target -> ok measurements
    missing: dict[str, int] = field(default_factory=dict)  # target -> missing/failed measurements
    details: list[tuple[str, str, str, str, Any]] = field(default_factory=list)  # judge-ish details
    failed_measurements: dict[str, int] = field(default_factory=dict)  # measure -> failed rows
    #: target -> answer status per case (see fairpair.measures.status; "" while pending)
    statuses: dict[str, np.ndarray] = field(default_factory=dict)
    #: target -> status -> up to 3 (case id, text excerpt) examples
    status_examples: dict[str, dict[str, list[tuple[str, str]]]] = field(default_factory=dict)
    #: (target, "answer.<status>") -> 1/0 per case (NaN pending): the answer-status measures, kept apart
    #: from ``values`` so that stages iterating every measure (two-party cells) do not pick them up
    status_values: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    #: (target, categorical measure) -> the outcome label per case (None where missing)
    labels: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    #: categorical measure -> its declared outcomes
    categories: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def targets(self) -> list[str]:
        return sorted(self.answered)


#: rows per fetch of the measurement scan
_CHUNK = 100_000


#: Name prefix of the answer-status measures the analysis adds (``answer.refused``...).
STATUS_PREFIX = "answer."


#: Statuses already computed in this process, by (text, finish_reason, has tool calls, language, roles): the
#: status is a pure function of these (:mod:`fairpair.measures.status`), so the stages of one command
#: (``import-answers`` or ``run``: measure, analyze, report) compute each answer's status once.
_STATUS_MEMO: dict[tuple, Any] = {}
_STATUS_MEMO_MAX = 500_000


def load_answer_statuses(store: Store, index: dict[str, int], n: int, language: str | None,
                         speakers: dict[str, tuple[str, str]] | None = None,
                         ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, list[tuple[str, str]]]]]:
    """Per target, each case's answer status (:func:`fairpair.measures.status.answer_status`).

    A case with an ``ok`` row gets its answer's status; one with only
    ``failed`` rows is ``failed``; one with neither is ``""`` (pending). Also
    returns up to three examples (case id, first 160 characters) per status.
    ``speakers``: design id -> ``(res, sub)`` (``Battery.speakers()``) for the
    out-of-role check of those designs' cases.
    """
    from fairpair.measures.status import answer_status, case_roles

    roles = case_roles(store, speakers)

    out: dict[str, np.ndarray] = {}
    examples: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for target, cid, st, text, fr, calls in store.answer_status_rows():
        i = index.get(cid)
        if i is None:
            continue
        arr = out.get(target)
        if arr is None:
            arr = out[target] = np.full(n, "", dtype=object)
        if st != "ok":
            if arr[i] == "":
                arr[i] = "failed"
            continue
        key = (text, fr, bool(calls), language, roles.get(cid))
        res = _STATUS_MEMO.get(key)
        if res is None:
            if len(_STATUS_MEMO) > _STATUS_MEMO_MAX:
                _STATUS_MEMO.clear()
            res = _STATUS_MEMO[key] = answer_status(text, finish_reason=fr, tool_calls=calls, language=language,
                                                    roles=roles.get(cid))
        arr[i] = res.status
        if res.status != "ok":
            ex = examples.setdefault(target, {}).setdefault(res.status, [])
            if len(ex) < 3:
                ex.append((cid, (text or "")[:160]))
    return out, examples


def add_status_values(data: RunData) -> None:
    """Fill ``data.status_values`` with one yes/no measure per answer status: ``answer.<status>`` is
    1 where the case's answer has that status, 0 where it has another, NaN while pending."""
    from fairpair.measures.status import DEGENERATE

    for target, arr in data.statuses.items():
        known = arr != ""
        for st in DEGENERATE:
            v = np.where(known, (arr == st).astype(float), np.nan)
            data.status_values[(target, STATUS_PREFIX + st)] = v
            data.raw_kinds.setdefault(STATUS_PREFIX + st, set()).add("bool")


def add_category_values(store: Store, data: RunData, categories: dict[str, tuple[str, ...]]) -> None:
    """Read the labels of the ``categorical`` measures (row -> declared outcomes) into ``data.labels``
    and add one yes/no measure per outcome, ``<measure>=<outcome>`` (1 where the case got that
    outcome, 0 where it got another, NaN where the label is missing), so each outcome is analysed
    through the same paired code as any binary measure."""
    if not categories:
        return
    n = len(data.cases)
    index = data.cases.index
    for target, cid, measure, v in store.ok_values(list(categories)):
        i = index.get(cid)
        if i is None:
            continue
        arr = data.labels.get((target, measure))
        if arr is None:
            arr = data.labels[(target, measure)] = np.full(n, None, dtype=object)
        arr[i] = v if isinstance(v, str) else None
    data.categories.update(categories)
    for (target, measure), arr in data.labels.items():
        known = np.array([v is not None for v in arr], dtype=bool)
        extra = sorted({v for v in arr[known]} - set(categories[measure]))
        for cat in (*categories[measure], *extra):
            data.values[(target, f"{measure}={cat}")] = np.where(known, (arr == cat).astype(float), np.nan)
            data.raw_kinds.setdefault(f"{measure}={cat}", set()).add("bool")


def load_run_data(store, *, keep_details: bool = True, language: str | None = None,
                  statuses: bool = False, speakers: dict[str, tuple[str, str]] | None = None,
                  known_statuses: dict[str, Any] | None = None) -> RunData:
    """Load cases, answers and measurements from an open :class:`~fairpair.store.Store`.

    With ``statuses``, also each answer's status (:func:`load_answer_statuses`, with the
    battery's ``language`` for the wrong-language check and its ``speakers``, design id ->
    ``(res, sub)``, for the out-of-role check) and the ``answer.<status>`` measures.
    ``known_statuses``: the analysis' ``Results.answer_statuses``; when each target's block records
    its cases and still covers the store's answers, the statuses are read from it instead of computed.
    """
    ids, design, kind, template, mset, base, axis, groups, variants, meta, seqs = ([] for _ in range(11))
    # Cases repeat a few values many times: one shared object per distinct value (strings and the
    # read-only groups/variants/meta dicts) keeps a million cases within a few hundred MiB.
    shared: dict[Any, Any] = {}

    def one(v: Any) -> Any:
        key = (0, v) if isinstance(v, str) or v is None else (1, json.dumps(v, sort_keys=True))
        return shared.setdefault(key, v)

    for cid, seq, data in store.case_rows():
        c = case_from_json(data)
        seqs.append(seq)
        ids.append(cid)
        design.append(one(c.design))
        kind.append(one(c.design_kind))
        template.append(one(c.template))
        mset.append(one(c.matched_set))
        base.append(c.baseline)
        axis.append(one(c.axis))
        groups.append(one(c.groups))
        variants.append(one(c.variants))
        meta.append(one(c.meta))
    shared.clear()
    index = {c: i for i, c in enumerate(ids)}
    cases = CaseTable(ids, index, design, kind, template, mset, base, axis, groups, variants, meta)
    n = len(ids)
    answered: dict[str, np.ndarray] = {}
    for target, cid in store.answered_keys():
        arr = answered.get(target)
        if arr is None:
            arr = answered[target] = np.zeros(n, dtype=bool)
        i = index.get(cid)
        if i is not None:
            arr[i] = True
    failed = store.failed_case_counts()
    for target in failed:
        answered.setdefault(target, np.zeros(n, dtype=bool))
    values: dict[tuple[str, str], np.ndarray] = {}
    kinds: dict[str, set[str]] = {}
    failed_m: dict[str, int] = {}
    details: list[tuple[str, str, str, str, Any]] = []
    measured: dict[str, int] = {}
    missing: dict[str, int] = {}
    seq_to_i = np.full(int(max(seqs, default=-1)) + 1, -1, dtype=np.intp)
    seq_to_i[np.asarray(seqs, dtype=np.intp)] = np.arange(n)
    cols = store.measurement_columns(chunk=_CHUNK)  # one scan, as numpy columns
    if len(cols):
        kcode, seq, status, fv, kind_c, extra, rid = (cols.key, cols.seq, cols.status, cols.value, cols.kind,
                                                      cols.extra, cols.id)
        idx = seq_to_i[seq.astype(np.intp)]
        split = cols.keys
        kind_names = {0: "other", 1: "bool", 2: "number"}
        done_key = kcode.astype(np.int64) * (n + 1) + idx
        done = np.unique(done_key[status < 2])
        for j, (target, measure) in enumerate(split):
            sel = kcode == j
            arr = values.setdefault((target, measure), np.full(n, np.nan))
            ok = sel & (status == 0) & ~np.isnan(fv)
            arr[idx[ok]] = fv[ok]
            measured[target] = measured.get(target, 0) + int((sel & (status == 0)).sum())
            ks = {kind_names[int(k)] for k in np.unique(kind_c[sel & (status == 0)]) if int(k) in kind_names}
            if ks:
                kinds.setdefault(measure, set()).update(ks)
            miss = np.unique(idx[sel & (status == 1)])
            fail = np.unique(idx[sel & (status == 2)])
            fail = fail[~np.isin(j * (n + 1) + fail, done)] if fail.size else fail
            fail = np.setdiff1d(fail, miss)
            missing[target] = missing.get(target, 0) + int(miss.size + fail.size)
            if fail.size:
                failed_m[measure] = failed_m.get(measure, 0) + int(fail.size)
        need = rid[extra == 1].astype(np.int64)
        if need.size:  # objects (multi-output measures stored whole) and details: the few rows parsed in Python
            for target, cid, measure, st, raw, d in store.measurement_rows(need.tolist()):
                i = index.get(cid)
                if i is None:
                    continue
                if st == "ok" and isinstance(raw, dict):
                    for fk, sub_v in raw.items():  # expose name.field
                        sub = values.setdefault((target, f"{measure}.{fk}"), np.full(n, np.nan))
                        sub[i] = to_float(sub_v)
                        kinds.setdefault(f"{measure}.{fk}", set()).add(
                            "bool" if isinstance(sub_v, bool) else "number" if isinstance(sub_v, (int, float))
                            else "other")
                if keep_details and d is not None:
                    if isinstance(d, dict) and d:
                        details.append((target, cid, measure, st, d))
    for t in {k[0] for k in values}:
        answered.setdefault(t, np.zeros(n, dtype=bool))
    data = RunData(cases, answered, failed, values, kinds, measured, missing, details, failed_m)
    if statuses:
        known = _recorded_statuses(known_statuses, data, index, n, store) if known_statuses else None
        if known is not None:
            data.statuses, data.status_examples = known
        else:
            data.statuses, data.status_examples = load_answer_statuses(store, index, n, language, speakers)
        add_status_values(data)
    return data


def _recorded_statuses(blocks: dict[str, Any], data: RunData, index: dict[str, int], n: int, store
                       ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, list[tuple[str, str]]]]] | None:
    """The statuses the analysis recorded (``AnswerStatusBlock.cases``), as :func:`load_answer_statuses`
    returns them; None when a target's block lacks them or no longer matches the store (an answer added
    since: its cases with a final outcome differ)."""
    out: dict[str, np.ndarray] = {}
    examples: dict[str, dict[str, list[tuple[str, str]]]] = {}
    targets = set(data.answered) | set(store.targets())
    for target in targets:
        b = blocks.get(target)
        cases = getattr(b, "cases", None) if b is not None else None
        if b is None or cases is None:
            return None
        arr = np.where(data.answered.get(target, np.zeros(n, dtype=bool)), "ok", "").astype(object)
        for st, ids in cases.items():
            for cid in ids:
                i = index.get(cid)
                if i is None:
                    return None
                arr[i] = st
        if int((arr != "").sum()) != int(b.n):
            return None
        out[target] = arr
        for cid, st, text in b.examples or []:
            examples.setdefault(target, {}).setdefault(st, []).append((cid, text))
    return out, examples


_SCALES_CACHE: dict[int, tuple[Any, dict[str, str]]] = {}


def _declared_scales(battery: Battery) -> dict[str, str]:
    """Stored row name -> scale as the measures stage declares it (``measure_scales``); {} if unavailable."""
    key = id(battery)
    hit = _SCALES_CACHE.get(key)
    if hit is None or hit[0] is not battery:
        try:
            from fairpair.measures import SCALES, measure_scales

            scales: dict[str, str] = {k: v for k, v in measure_scales(battery).items() if v in SCALES}
        except Exception:  # noqa: BLE001 - a measure that cannot be built: fall back to the stored values
            scales = {}
        _SCALES_CACHE.clear()
        hit = _SCALES_CACHE[key] = (battery, scales)
    return hit[1]


def measure_scale(battery: Battery, name: str, kinds: set[str] | None = None) -> str:
    """Scale of a stored measure: as the measures stage declares it, else the plugin's ``scale``, else inferred.

    Inference from the stored values: JSON booleans -> ``binary``; anything
    else numeric -> ``continuous``.
    """
    scales = _declared_scales(battery)
    if name in scales:
        return scales[name]
    base, _, fld = name.partition(".")
    spec = battery.measures.get(base) or battery.measures.get(name)
    if spec is not None:
        try:
            from fairpair._plugins import load_plugin
            from fairpair.measures import SCALES

            cls = load_plugin("fairpair.measures", spec.kind)
            s = getattr(cls, "scale", None)
            if isinstance(s, dict):
                s = s.get(fld) or s.get(name)
            if isinstance(s, str) and s in SCALES:
                return s
        except Exception:  # noqa: BLE001 - a plugin that cannot be imported: infer from the data
            pass
    if kinds and kinds <= {"bool"}:
        return "binary"
    return "continuous"


@dataclass(frozen=True)
class Strata:
    """Matched strata of one design for one attribute.

    ``matrix[s, j]`` is the case index of group ``groups[j]`` in stratum ``s``
    (-1 when absent). In counterfactual designs a stratum is a matched set;
    in crossed designs, the cases of a matched set that agree on every other
    attribute. ``variant_code`` gives each case's variant of the attribute
    as a code into ``variant_labels``.
    """

    keys: list
    groups: list[str]
    matrix: np.ndarray
    variant_code: np.ndarray
    variant_labels: list[str]

    def column(self, group: str) -> np.ndarray:
        if group not in self.groups:
            return np.full(len(self.keys), -1, dtype=np.intp)
        return self.matrix[:, self.groups.index(group)]

    def values(self):  # {group: case index} per stratum, for callers that iterate
        for row in self.matrix:
            yield {g: int(i) for g, i in zip(self.groups, row, strict=True) if i >= 0}


def strata_for(cases: CaseTable, design: str, attribute: str) -> Strata:
    """Matched strata of a design for one attribute (see :class:`Strata`)."""
    out: dict[tuple, dict[str, int]] = {}
    groups: dict[str, None] = {}
    vlabels: dict[str, int] = {}
    vcode = np.full(len(cases), -1, dtype=np.intp)
    for i in range(len(cases)):
        if cases.design[i] != design or cases.baseline[i]:
            continue
        g = cases.groups[i]
        if attribute not in g:
            continue
        others = tuple(sorted((k, v) for k, v in g.items() if k != attribute))
        out.setdefault((cases.matched_set[i], others), {})[g[attribute]] = i
        groups[g[attribute]] = None
        vcode[i] = vlabels.setdefault(cases.variants[i].get(attribute, g[attribute]), len(vlabels))
    gl = list(groups)
    matrix = np.full((len(out), len(gl)), -1, dtype=np.intp)
    for s, members in enumerate(out.values()):
        for gname, i in members.items():
            matrix[s, gl.index(gname)] = i
    return Strata(list(out), gl, matrix, vcode, list(vlabels))


def pairs_for(cases: CaseTable, strata: Strata, attribute: str, group_a: str, group_b: str, vals: np.ndarray,
              answered: np.ndarray) -> PairData:
    """The matched pairs (A, B) of a comparison; unanswered cases count as missing values.

    Clusters are integer template codes and variant pairs integer codes into
    ``variant_labels`` (the stats package factorises integers fastest);
    ``name_a`` / ``name_b`` are each side's variant code (the names of the
    crossed inference).
    """
    ca, cb = strata.column(group_a), strata.column(group_b)
    ok = (ca >= 0) & (cb >= 0)
    ia, ib = ca[ok], cb[ok]
    arr = cases.arrays()
    x = np.where(answered[ia], vals[ia], np.nan)
    y = np.where(answered[ib], vals[ib], np.nan)
    nv = max(len(strata.variant_labels), 1)
    pair_key = strata.variant_code[ia] * nv + strata.variant_code[ib]
    uniq, codes = np.unique(pair_key, return_inverse=True)
    vl = strata.variant_labels
    labels = tuple(f"{vl[k // nv]} / {vl[k % nv]}" for k in uniq)
    return PairData(x, y, arr["template_code"][ia], codes.reshape(-1).astype(np.intp), labels, arr["sets"][ia],
                    arr["ids"][ia], arr["ids"][ib], name_a=strata.variant_code[ia].astype(np.intp),
                    name_b=strata.variant_code[ib].astype(np.intp), template_labels=tuple(arr["template_labels"]))


def group_pairs(comparison: Comparison, groups: list[str]) -> list[tuple[str, str]]:
    """(group_a, group_b) pairs of a comparison: vs ``reference`` if given, else all pairs in order."""
    chosen = list(groups) if comparison.groups == "all_pairs" else [g for g in comparison.groups]
    if comparison.reference:
        return [(g, comparison.reference) for g in chosen if g != comparison.reference]
    return list(itertools.combinations(chosen, 2))
