"""Read a run's cases, answers and measurements into arrays, and form matched pairs.

Reads the SQLite store directly (one query per table, JSON decoded with the
standard library) so that a 56,000-answer study loads in about a second.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairpair.analysis._paired import PairData

__all__ = ["CaseTable", "RunData", "load_run_data", "measure_scale", "pairs_for", "strata_for", "to_float"]

SCALES = ("binary", "count", "continuous", "ordinal")


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

    @property
    def targets(self) -> list[str]:
        return sorted(self.answered)


def load_run_data(conn, *, keep_details: bool = True) -> RunData:
    """Load cases, answers and measurements from an open store connection."""
    ids, design, kind, template, mset, base, axis, groups, variants, meta = ([] for _ in range(10))
    for cid, data in conn.execute("SELECT case_id, data FROM cases ORDER BY seq"):
        c = json.loads(data)
        ids.append(cid)
        design.append(c["design"])
        kind.append(c["design_kind"])
        template.append(c["template"])
        mset.append(c["matched_set"])
        base.append(bool(c.get("baseline")))
        axis.append(c.get("axis"))
        groups.append(c.get("groups") or {})
        variants.append(c.get("variants") or {})
        meta.append(c.get("meta") or {})
    index = {c: i for i, c in enumerate(ids)}
    cases = CaseTable(ids, index, design, kind, template, mset, base, axis, groups, variants, meta)
    n = len(ids)
    answered: dict[str, np.ndarray] = {}
    for target, cid in conn.execute("SELECT target, case_id FROM responses WHERE status='ok'"):
        arr = answered.get(target)
        if arr is None:
            arr = answered[target] = np.zeros(n, dtype=bool)
        i = index.get(cid)
        if i is not None:
            arr[i] = True
    failed: dict[str, int] = {}
    for target, cnt in conn.execute(
            "SELECT target, COUNT(DISTINCT case_id) FROM responses r WHERE status='failed' AND NOT EXISTS "
            "(SELECT 1 FROM responses o WHERE o.target=r.target AND o.case_id=r.case_id AND o.status='ok') "
            "GROUP BY target"):
        failed[target] = cnt
        answered.setdefault(target, np.zeros(n, dtype=bool))
    values: dict[tuple[str, str], np.ndarray] = {}
    kinds: dict[str, set[str]] = {}
    measured: dict[str, int] = {}
    missing: dict[str, int] = {}
    failed_m: dict[str, int] = {}
    details: list[tuple[str, str, str, str, Any]] = []
    seen_missing: set[tuple[str, str, str]] = set()
    q = ("SELECT target, case_id, measure, status, value, detail FROM measurements "
         "WHERE status IN ('ok','missing') OR NOT EXISTS (SELECT 1 FROM measurements o WHERE "
         "o.target=measurements.target AND o.case_id=measurements.case_id AND o.measure=measurements.measure "
         "AND o.status IN ('ok','missing'))")
    for target, cid, measure, status, value, detail in conn.execute(q):
        i = index.get(cid)
        if i is None:
            continue
        key = (target, measure)
        arr = values.get(key)
        if arr is None:
            arr = values[key] = np.full(n, np.nan)
        if status == "ok" and value is not None:
            v = json.loads(value)
            if isinstance(v, dict):  # a multi-output measure stored whole: expose name.field
                for fk, fv in v.items():
                    sub = values.setdefault((target, f"{measure}.{fk}"), np.full(n, np.nan))
                    sub[i] = to_float(fv)
                    kinds.setdefault(f"{measure}.{fk}", set()).add(type(fv).__name__)
            else:
                arr[i] = to_float(v)
                kinds.setdefault(measure, set()).add(type(v).__name__)
            measured[target] = measured.get(target, 0) + 1
        elif (target, cid, measure) not in seen_missing:
            seen_missing.add((target, cid, measure))
            missing[target] = missing.get(target, 0) + 1
            if status == "failed":
                failed_m[measure] = failed_m.get(measure, 0) + 1
        if keep_details and detail is not None:
            d = json.loads(detail)
            if isinstance(d, dict) and d:
                details.append((target, cid, measure, status, d))
    for t in {k[0] for k in values}:
        answered.setdefault(t, np.zeros(n, dtype=bool))
    return RunData(cases, answered, failed, values, kinds, measured, missing, details, failed_m)


_SCALES_CACHE: dict[int, tuple[Any, dict[str, str]]] = {}


def _declared_scales(battery) -> dict[str, str]:
    """Stored row name -> scale as the measures stage declares it (``measure_scales``); {} if unavailable."""
    key = id(battery)
    hit = _SCALES_CACHE.get(key)
    if hit is None or hit[0] is not battery:
        try:
            from fairpair.measures import measure_scales

            scales = {k: v for k, v in measure_scales(battery).items() if v in SCALES}
        except Exception:  # noqa: BLE001 - a measure that cannot be built: fall back to the stored values
            scales = {}
        _SCALES_CACHE.clear()
        hit = _SCALES_CACHE[key] = (battery, scales)
    return hit[1]


def measure_scale(battery, name: str, kinds: set[str] | None = None) -> str:
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


def strata_for(cases: CaseTable, design: str, attribute: str) -> dict[tuple, dict[str, int]]:
    """Matched strata of a design for one attribute: ``(matched_set, other groups) -> {group: case index}``.

    In counterfactual designs a matched set holds one case per group; in
    crossed designs the cases of a matched set that agree on every other
    attribute form a stratum.
    """
    out: dict[tuple, dict[str, int]] = {}
    for i in range(len(cases)):
        if cases.design[i] != design or cases.baseline[i]:
            continue
        g = cases.groups[i]
        if attribute not in g:
            continue
        others = tuple(sorted((k, v) for k, v in g.items() if k != attribute))
        out.setdefault((cases.matched_set[i], others), {})[g[attribute]] = i
    return out


def pairs_for(cases: CaseTable, strata: dict[tuple, dict[str, int]], attribute: str, group_a: str,
              group_b: str, vals: np.ndarray, answered: np.ndarray) -> PairData:
    """The matched pairs (A, B) of a comparison; unanswered cases count as missing values."""
    ia, ib = [], []
    for members in strata.values():
        a, b = members.get(group_a), members.get(group_b)
        if a is not None and b is not None:
            ia.append(a)
            ib.append(b)
    ia_, ib_ = np.asarray(ia, dtype=np.intp), np.asarray(ib, dtype=np.intp)
    x = np.where(answered[ia_], vals[ia_], np.nan) if ia else np.empty(0)
    y = np.where(answered[ib_], vals[ib_], np.nan) if ib else np.empty(0)
    clusters = np.array([cases.template[i] for i in ia], dtype=object)
    variants = np.array([f"{cases.variants[a].get(attribute, group_a)} / {cases.variants[b].get(attribute, group_b)}"
                         for a, b in zip(ia, ib)], dtype=object)
    sets = np.array([cases.matched_set[i] for i in ia], dtype=object)
    return PairData(x, y, clusters, variants, sets, np.array([cases.ids[i] for i in ia], dtype=object),
                    np.array([cases.ids[i] for i in ib], dtype=object))


def group_pairs(comparison, groups: list[str]) -> list[tuple[str, str]]:
    """(group_a, group_b) pairs of a comparison: vs ``reference`` if given, else all pairs in order."""
    chosen = list(groups) if comparison.groups == "all_pairs" else [g for g in comparison.groups]
    if comparison.reference:
        return [(g, comparison.reference) for g in chosen if g != comparison.reference]
    return list(itertools.combinations(chosen, 2))
