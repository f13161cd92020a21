"""``compare_runs``: the same battery before and after a change (model, prompt, guardrail).

For every comparison of the plan (per target, design and group pair) and
every matched set present in both runs, the gap ``A - B`` is computed in
each run, and the change in the gap ``gap_after - gap_before`` (a
difference-in-differences per matched set) is summarised by its mean, a
cluster-bootstrap CI resampling templates (the t(G-1) interval of
:mod:`fairpair.analysis._paired`; the plan's ``bootstrap_resamples``, or
:data:`RESAMPLES_IF_NONE` when it sets 0, with a note) and a Wilcoxon signed-rank test
(``zero_method="pratt"``) of ``gap_after`` vs ``gap_before``.

Direction: **better** when the change is significant (p < alpha and the
CI excludes 0) and ``|mean gap_after| < |mean gap_before|``; **worse** when
significant and the gap grew; else **no clear change**.

The pairwise verdicts of a ``ranking`` design (every pair of groups on
the top pick and on "ranked above", :mod:`fairpair.analysis._ranking`) are
compared the same way: the per-set difference of the pair
(:func:`fairpair.analysis._ranking.set_differences`) is the gap, one
matched set being one answer; their rows have ``ranking`` set to the
ranking measure and ``measure`` ``top_pick`` or ``ranked_above``. The
four-fifths ratios are not compared (a ratio of two rates has no per-set
value); the gate judges them in each run.

Cases are paired by case id (same battery, same cases); when fewer than
half of the ids match (e.g. the system prompt changed, which changes the
ids), by ``(design, matched set, groups)`` instead, with a note.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from fairpair.analysis._data import CaseTable, group_pairs, load_run_data, measure_scale, strata_for
from fairpair.analysis._paired import t_interval
from fairpair.battery import recorded_battery
from fairpair.errors import FairpairError
from fairpair.records import interval, num
from fairpair.stats import wilcoxon
from fairpair.stats._bootstrap import _paired_difference_bootstrap  # silent engine: the t interval below is used

if TYPE_CHECKING:
    from fairpair.analysis._data import RunData
    from fairpair.battery import AnalysisPlan, Battery

__all__ = ["CompareRow", "Comparison", "compare_runs"]

COMPARE_SCHEMA = "fairpair.compare/1"
#: Cluster-bootstrap resamples of the change's interval when the plan sets ``bootstrap_resamples: 0``.
RESAMPLES_IF_NONE = 2000


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
    #: the ranking measure of a ranking design's pair (``measure`` is then ``top_pick`` or ``ranked_above``)
    ranking: str | None = None


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

    def nothing_compared(self, *, primary: bool = False) -> str | None:
        """Why no comparison (``primary``: no primary comparison) has a matched set in both runs: the
        notes, or "no matched set in common"; None when one has. ``gate --baseline`` and ``compare``
        exit 2 on it rather than report a change that checks nothing."""
        if any(r.n_sets and (r.primary or not primary) for r in self.rows):
            return None
        return "; ".join(self.notes) or "no matched set in common"


def _load(run_dir: Path):
    from fairpair.analysis._data import open_for_reading

    with open_for_reading(Path(run_dir)) as run:
        battery = recorded_battery(run).battery
        # a ranking design's parsed rankings are details
        return battery, load_run_data(run.store, keep_details=bool(battery.ranking_designs()))


def _case_key(cases: CaseTable, i: int) -> tuple[str, str, str]:
    """What pairs case ``i`` with its counterpart in the other run when the conversations changed:
    design, matched set and groups (as canonical JSON)."""
    return cases.design[i], cases.matched_set[i], json.dumps(cases.groups[i], sort_keys=True)


def _target_pairs(a: list[str], b: list[str]) -> list[tuple[str, str]]:
    common = [t for t in a if t in b]
    if common:
        return [(t, t) for t in common]
    if len(a) == 1 and len(b) == 1:
        return [(a[0], b[0])]
    return []


def compare_runs(before: Path | str, after: Path | str, *, target_before: str | None = None,
                 target_after: str | None = None) -> Comparison:
    """Compare two runs of the same battery, matched set by matched set (see module notes).

    The targets of the same name are paired (or the only target of each run).
    ``target_before`` / ``target_after`` pair those two targets instead: the
    same run twice compares two targets of one run (the same model under the
    production prompt and under a changed one), case by case.

    Raises
    ------
    FairpairError
        If a directory is not a run, the runs come from different batteries, or a named target has no
        answer in its run.
    """
    ba, da = _load(Path(before))
    bb, db = _load(Path(after))
    if ba.name != bb.name:
        raise FairpairError(f"the runs come from different batteries: {before} is '{ba.name}', {after} is "
                            f"'{bb.name}'; compare runs of the same battery", file=after)
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
        b_index = {_case_key(db.cases, i): i for i in range(len(db.cases))}
        a_key = [_case_key(da.cases, i) for i in range(len(da.cases))]
    if not plan.bootstrap_resamples:
        notes.append(f"the plan sets bootstrap_resamples: 0; the intervals of the changes use {RESAMPLES_IF_NONE} "
                     f"cluster-bootstrap resamples (seed {plan.seed})")
    if target_before is not None or target_after is not None:
        ta, tb = target_before or target_after, target_after or target_before
        assert ta is not None and tb is not None  # one of the two is set, and stands for both when alone
        for name, data, run in ((ta, da, before), (tb, db, after)):
            if name not in data.targets:
                raise FairpairError(f"target '{name}' has no answer in {run} (its targets: "
                                    f"{', '.join(data.targets) or 'none'})", file=run, key="--target-before"
                                    if name == ta else "--target-after")
        tpairs = [(ta, tb)]
    else:
        tpairs = _target_pairs(da.targets, db.targets)
    if not tpairs:
        notes.append(f"no target in common (before: {da.targets}, after: {db.targets})")
    from fairpair.analysis._analyze import _comparison_id, _design_groups, _designs_for

    rows: list[CompareRow] = []
    for ta, tb in tpairs:
        ans_a, ans_b = da.answered[ta], db.answered[tb]
        for c in plan.comparisons:
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
        rows += _ranking_rows(ba, da, db, ta, tb, a_key, b_index, plan, notes)
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
    return _change(dict(id=cid, target_before=ta, target_after=tb, measure=c.measure, scale=scale,
                        attribute=c.attribute, design=did, group_a=ga, group_b=gb, primary=c.primary),
                   gap_a, gap_b, cl, plan)


def _resamples(plan: AnalysisPlan) -> int:
    """The plan's bootstrap resamples; :data:`RESAMPLES_IF_NONE` when it has none (``bootstrap_resamples: 0``,
    usual for a ranking battery, whose own analysis uses none): with one resample the interval would be
    undefined and no change could ever be called better or worse."""
    return plan.bootstrap_resamples or RESAMPLES_IF_NONE


def _ranking_rows(battery: Battery, da: RunData, db: RunData, ta: str, tb: str, a_key: list[tuple[str, str, str]],
                  b_index: dict[tuple[str, str, str], int], plan: AnalysisPlan, notes: list[str]) -> list[CompareRow]:
    """The ranking designs' pairs of groups: the per-set difference before and after, set by set."""
    from fairpair.analysis._ranking import set_differences
    from fairpair.analysis._rankrun import ranking_frame

    measures = battery.ranking_measures()
    rows: list[CompareRow] = []
    for did, d in battery.ranking_designs():
        groups = d.chosen_groups(battery)
        for m in measures:
            fa, fb = ranking_frame(da, did, m, ta)[0], ranking_frame(db, did, m, tb)[0]
            if fa.empty or fb.empty:
                notes.append(f"ranking design {did}, measure {m}: not measured in both runs")
                continue
            try:
                before = set_differences(fa, groups)
                after = {(s.measure, s.group_a, s.group_b): s for s in set_differences(fb, groups)}
            except ValueError as exc:
                notes.append(f"ranking design {did}, measure {m}: not compared ({exc})")
                continue
            for s in before:
                t = after[(s.measure, s.group_a, s.group_b)]
                of_b = dict(zip(t.case_ids.tolist(), t.difference.tolist(), strict=True))
                # the same matched set in the later run: by case id, or by (design, matched set, groups)
                later = [b_index.get(a_key[da.cases.index[cid]]) for cid in s.case_ids.tolist()]
                gap_b = np.array([np.nan if j is None else of_b.get(db.cases.ids[j], np.nan) for j in later])
                rows.append(_change(dict(id=f"{s.measure}:{s.group_a}-vs-{s.group_b}", target_before=ta,
                                         target_after=tb, measure=s.measure, scale="binary", attribute=d.attribute,
                                         design=did, group_a=s.group_a, group_b=s.group_b, primary=True,
                                         ranking=m),
                                    s.difference, gap_b, s.templates.tolist(), plan))
    return rows


def _change(base: dict, gap_a: np.ndarray, gap_b: np.ndarray, cl: list, plan: AnalysisPlan) -> CompareRow:
    """The change of one gap, ``gap_b - gap_a`` per matched set (NaN: left out), templates ``cl`` as clusters."""
    keep = ~(np.isnan(gap_a) | np.isnan(gap_b))
    n = int(keep.sum())
    base = dict(base, n_sets=n, n_dropped=int(keep.size - n), confidence_level=plan.confidence_level,
                n_resamples=_resamples(plan), seed=plan.seed,
                test="Wilcoxon signed-rank on gap_after - gap_before (zero_method='pratt')")
    if n == 0:
        return CompareRow(**base, gap_before=None, gap_after=None, change=None, ci=None, statistic=None, pvalue=None,
                          direction="no clear change", note="no matched set complete in both runs")
    g_a, g_b, clu = gap_a[keep], gap_b[keep], np.asarray(cl, dtype=object)[keep]
    w = wilcoxon(g_b, g_a, zero_method="pratt")
    boot = _paired_difference_bootstrap(g_b, g_a, clu, binary=False, n_resamples=_resamples(plan),
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
