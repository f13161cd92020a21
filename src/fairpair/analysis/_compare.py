"""``compare_runs``: the same battery before and after a change (model, prompt, guardrail).

For every comparison of the plan (per target, design and group pair) and
every matched set present in both runs, the gap ``A - B`` is computed in
each run, and the change in the gap ``gap_after - gap_before`` (a
difference-in-differences per matched set) is summarised by its mean, a
cluster-bootstrap CI resampling templates (the t(G-1) interval of
:mod:`fairpair.analysis._paired`) and a Wilcoxon signed-rank test
(``zero_method="pratt"``) of ``gap_after`` vs ``gap_before``.

Direction: **better** when the change is significant (p < alpha and the
CI excludes 0) and ``|mean gap_after| < |mean gap_before|``; **worse** when
significant and the gap grew; else **no clear change**.

Cases are paired by case id (same battery, same cases); when fewer than
half of the ids match (e.g. the system prompt changed, which changes the
ids), by ``(design, matched set, groups)`` instead, with a note.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from fairpair.analysis._data import group_pairs, load_run_data, measure_scale, strata_for
from fairpair.analysis._paired import t_interval
from fairpair.analysis._results import interval, num
from fairpair.errors import FairpairError
from fairpair.stats._bootstrap import _paired_difference_bootstrap  # silent engine: the t interval below is used
from fairpair.stats import wilcoxon

__all__ = ["CompareRow", "Comparison", "compare_runs"]

COMPARE_SCHEMA = "fairpair.compare/1"


class CompareRow(BaseModel):
    """Change of one gap between the runs (``after - before``, in the measure's units or proportion)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    target_before: str
    target_after: str
    measure: str
    scale: str
    attribute: str
    design: str
    group_a: str
    group_b: str
    primary: bool
    n_sets: int
    n_dropped: int
    gap_before: float | None
    gap_after: float | None
    change: float | None
    ci: list[float | None] | None
    confidence_level: float
    n_resamples: int
    seed: int
    test: str
    statistic: float | None
    pvalue: float | None
    direction: Literal["better", "worse", "no clear change"]
    note: str | None = None


class Comparison(BaseModel):
    """Result of :func:`compare_runs` (``schema: fairpair.compare/1``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    schema_: str = Field(COMPARE_SCHEMA, alias="schema")
    before: str
    after: str
    battery: str
    paired_by: Literal["case_id", "matched_set"]
    alpha: float
    rows: list[CompareRow]
    notes: list[str]

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)

    @property
    def worse(self) -> list[CompareRow]:
        return [r for r in self.rows if r.direction == "worse"]


def _load(run_dir: Path):
    from fairpair.analysis._data import open_for_reading

    with open_for_reading(Path(run_dir)) as run:
        return run.battery().battery, load_run_data(run.store, keep_details=False)


def _target_pairs(a: list[str], b: list[str]) -> list[tuple[str, str]]:
    common = [t for t in a if t in b]
    if common:
        return [(t, t) for t in common]
    if len(a) == 1 and len(b) == 1:
        return [(a[0], b[0])]
    return []


def compare_runs(before: Path | str, after: Path | str) -> Comparison:
    """Compare two runs of the same battery, matched set by matched set (see module notes).

    Raises
    ------
    FairpairError
        If a directory is not a run, or the runs come from different batteries.
    """
    ba, da = _load(Path(before))
    bb, db = _load(Path(after))
    if ba.name != bb.name:
        raise FairpairError(f"the runs come from different batteries ('{ba.name}' and '{bb.name}'); "
                            "compare runs of the same battery", file=after)
    notes: list[str] = []
    plan = ba.analysis
    if ba.analysis != bb.analysis:
        notes.append("the analysis plans differ; the plan of the earlier run is used")
    common_ids = set(da.cases.ids) & set(db.cases.ids)
    by_id = len(common_ids) >= 0.5 * max(len(da.cases.ids), 1)
    if by_id:
        b_index = db.cases.index
        a_key = da.cases.ids
    else:
        notes.append("fewer than half of the case ids match (the conversations changed): cases paired by "
                     "design, matched set and groups")
        b_index = {(db.cases.design[i], db.cases.matched_set[i], json.dumps(db.cases.groups[i], sort_keys=True)): i
                   for i in range(len(db.cases))}
        a_key = [(da.cases.design[i], da.cases.matched_set[i], json.dumps(da.cases.groups[i], sort_keys=True))
                 for i in range(len(da.cases))]
    tpairs = _target_pairs(da.targets, db.targets)
    if not tpairs:
        notes.append(f"no target in common (before: {da.targets}, after: {db.targets})")
    from fairpair.analysis._analyze import _comparison_id, _design_groups, _designs_for

    rows: list[CompareRow] = []
    for ta, tb in tpairs:
        ans_a, ans_b = da.answered[ta], db.answered[tb]
        for k, c in enumerate(plan.comparisons):
            if c.attribute not in ba.attributes:
                continue
            va = da.values.get((ta, c.measure))
            vb = db.values.get((tb, c.measure))
            if va is None or vb is None:
                notes.append(f"{c.measure}: not measured in both runs")
                continue
            scale = measure_scale(ba, c.measure, da.raw_kinds.get(c.measure))
            for did in _designs_for(ba, c, da.cases):
                strata = strata_for(da.cases, did, c.attribute)
                groups = _design_groups(ba, did, c.attribute)
                if c.groups != "all_pairs":
                    groups = [g for g in c.groups if g in groups]
                for ga, gb in group_pairs(c, groups):
                    rows.append(_row(_comparison_id(c, 0), c, did, ga, gb, ta, tb, scale, strata, da, a_key,
                                     b_index, va, vb, ans_a, ans_b, plan))
    return Comparison(before=str(before), after=str(after), battery=ba.name,
                      paired_by="case_id" if by_id else "matched_set", alpha=plan.alpha, rows=rows,
                      notes=list(dict.fromkeys(notes)))


def _row(cid, c, did, ga, gb, ta, tb, scale, strata, da, a_key, b_index, va, vb, ans_a, ans_b, plan) -> CompareRow:
    xa, ya, xb, yb, cl = [], [], [], [], []
    for members in strata.values():
        i, j = members.get(ga), members.get(gb)
        if i is None or j is None:
            continue
        bi, bj = b_index.get(a_key[i]), b_index.get(a_key[j])
        xa.append(va[i] if ans_a[i] else np.nan)
        ya.append(va[j] if ans_a[j] else np.nan)
        xb.append(vb[bi] if bi is not None and ans_b[bi] else np.nan)
        yb.append(vb[bj] if bj is not None and ans_b[bj] else np.nan)
        cl.append(da.cases.template[i])
    gap_a = np.asarray(xa, dtype=float) - np.asarray(ya, dtype=float)
    gap_b = np.asarray(xb, dtype=float) - np.asarray(yb, dtype=float)
    keep = ~(np.isnan(gap_a) | np.isnan(gap_b))
    n = int(keep.sum())
    base = dict(id=cid, target_before=ta, target_after=tb, measure=c.measure, scale=scale, attribute=c.attribute,
                design=did, group_a=ga, group_b=gb, primary=c.primary, n_sets=n, n_dropped=int(keep.size - n),
                confidence_level=plan.confidence_level, n_resamples=plan.bootstrap_resamples, seed=plan.seed,
                test="Wilcoxon signed-rank on gap_after - gap_before (zero_method='pratt')")
    if n == 0:
        return CompareRow(**base, gap_before=None, gap_after=None, change=None, ci=None, statistic=None, pvalue=None,
                          direction="no clear change", note="no matched set complete in both runs")
    g_a, g_b, clu = gap_a[keep], gap_b[keep], np.asarray(cl, dtype=object)[keep]
    w = wilcoxon(g_b, g_a, zero_method="pratt")
    boot = _paired_difference_bootstrap(g_b, g_a, clu, binary=False, n_resamples=max(plan.bootstrap_resamples, 1),
                                        confidence_level=plan.confidence_level, seed=plan.seed, method="percentile")
    before, after = float(g_a.mean()), float(g_b.mean())
    lo, hi = t_interval(boot.statistic, boot.bootstrap_distribution, boot.n_clusters, plan.confidence_level)
    sig = w.pvalue == w.pvalue and w.pvalue < plan.alpha and np.isfinite(lo) and (lo > 0 or hi < 0)
    direction = "no clear change"
    if sig:
        direction = "worse" if abs(after) > abs(before) else "better"
    note = "; ".join(x for x in (w.note, boot.note) if x) or None
    return CompareRow(**base, gap_before=before, gap_after=after, change=num(after - before), ci=interval((lo, hi)),
                      statistic=num(w.statistic), pvalue=num(w.pvalue), direction=direction, note=note)
