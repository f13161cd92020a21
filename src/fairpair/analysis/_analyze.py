"""``analyze_run``: execute the pre-registered plan on a run and write ``results.json``."""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import fairpair.battery  # noqa: F401  (registers the reader of the battery a run records: Run.battery)
from fairpair import __version__
from fairpair.analysis._corrected import analyze_corrected, label_arrays, load_labels
from fairpair.analysis._data import (
    CaseTable,
    RunData,
    Strata,
    add_category_values,
    group_pairs,
    load_run_data,
    measure_scale,
    pairs_for,
    strata_for,
)
from fairpair.analysis._paired import BINARY_SCALES, analyze_pairs, finish, scenario_pvalues
from fairpair.battery import recorded_battery
from fairpair.errors import FairpairError
from fairpair.records import (
    AnswerStatusBlock,
    ComparisonResult,
    Counts,
    IncompleteRun,
    JudgeBlock,
    LengthBias,
    OmnibusResult,
    PositionBias,
    Results,
    num,
)
from fairpair.stats import adjust, cochran_q, friedman
from fairpair.store import RESULTS_NAME, Run, executed_plan_sha256, plan_changed, plan_edits_refused

if TYPE_CHECKING:
    from fairpair.battery import AnalysisPlan, Battery, Comparison
    from fairpair.store import Store

__all__ = ["analyze_run", "analyze_loaded", "load_results", "comparison_names", "RESULTS_NAME"]



def _designs_for(battery: Battery, comparison: Comparison, cases: CaseTable | None) -> list[str]:
    """Design ids whose cases vary the comparison's attribute (or the one the plan names)."""
    out = []
    for i, d in enumerate(battery.designs):
        did = battery.design_id(i)
        if comparison.design and comparison.design != did:
            continue
        if d.compares(comparison, did):
            out.append(did)
    return out


def _design_groups(battery: Battery, did: str, attribute: str) -> list[str]:
    for i, d in enumerate(battery.designs):
        if battery.design_id(i) == did:
            return d.comparison_groups(battery, attribute)
    return list(battery.attributes[attribute].groups)


def _comparison_id(c: Comparison, k: int) -> str:
    return c.id or f"{c.measure}-by-{c.attribute}" + (f"-{k}" if k else "")


def planned_comparisons(battery: Battery) -> list[tuple[str, str, str, str, bool]]:
    """What the plan of ``battery`` (a :class:`~fairpair.battery.Battery`) promises before any answer:
    one ``(comparison id, design id, group_a, group_b, primary)`` per comparison, design and pair of
    groups, in plan order (the rows of ``results.json`` per target, answer statuses aside)."""
    from fairpair.analysis._data import group_pairs

    out = []
    for c in battery.analysis.comparisons:
        cid = _comparison_id(c, 0)
        for did in _designs_for(battery, c, None):
            groups = _design_groups(battery, did, c.attribute)
            if c.groups != "all_pairs":
                groups = [g for g in c.groups if g in groups]
            out += [(cid, did, ga, gb, c.primary) for ga, gb in group_pairs(c, groups)]
    return out


def _ticking(items, tick):
    """``items``, calling ``tick()`` after each one's loop body (``continue`` included)."""
    for item in items:
        yield item
        if tick is not None:
            tick()


def analyze_loaded(battery: Battery, data: RunData, *, targets: list[str] | None = None, heterogeneity: bool = True,
                   on_comparison=None, labels: dict | None = None,
                   always_compared: tuple[str, ...] | None = None,
                   ) -> tuple[list[ComparisonResult], list[OmnibusResult], list[str]]:
    """Run the plan's comparisons and omnibus tests on loaded data (per target).

    ``always_compared``: the answer statuses compared even when none occurs (default
    :data:`ALWAYS_COMPARED`; the A/A controls pass ``()``: a status that never occurs says nothing
    about the split of one group).

    ``on_comparison``, if given, is called with no argument after each planned comparison of each
    target (``len(targets) x len(plan.comparisons)`` calls): the progress bar's hook. ``labels``:
    ``(target, measure) -> HumanLabels`` (:func:`fairpair.analysis._corrected.load_labels`); a
    comparison of a labelled measure is corrected by them (:func:`~fairpair.analysis._corrected.analyze_corrected`).
    """
    plan = battery.analysis
    notes: list[str] = []
    comparisons: list[ComparisonResult] = []
    omnibus: list[OmnibusResult] = []
    strata_cache: dict[tuple[str, str], Strata] = {}
    seen_ids: dict[str, int] = {}
    for target in targets or data.targets:
        answered = data.answered.get(target, np.zeros(len(data.cases), dtype=bool))
        pending: list[tuple[Any, dict[str, Any], bool, float | None]] = []
        for k, c in _ticking(enumerate(plan.comparisons), on_comparison):
            cid = _comparison_id(c, 0)
            if cid in seen_ids and seen_ids[cid] != k:
                cid = _comparison_id(c, k)
            seen_ids[cid] = k
            vals = data.values.get((target, c.measure))
            if c.attribute not in battery.attributes:
                notes.append(f"comparison {cid}: attribute '{c.attribute}' is not in the battery")
                continue
            scale = measure_scale(battery, c.measure, data.raw_kinds.get(c.measure))
            if vals is None:
                vals = np.full(len(data.cases), np.nan)
                notes.append(f"comparison {cid}, target {target}: no measurement named '{c.measure}' was stored")
            designs = _designs_for(battery, c, data.cases)
            if not designs:
                notes.append(f"comparison {cid}: no design varies '{c.attribute}'")
            for did in designs:
                key = (did, c.attribute)
                if key not in strata_cache:
                    strata_cache[key] = strata_for(data.cases, did, c.attribute)
                strata = strata_cache[key]
                groups = _design_groups(battery, did, c.attribute)
                if c.groups != "all_pairs":
                    groups = [g for g in c.groups if g in groups]
                names = comparison_names(plan, c)
                templates = comparison_templates(plan, c)
                if scale == "categorical":
                    for ga, gb in group_pairs(c, groups):
                        ident = dict(id=cid, target=target, measure=c.measure, attribute=c.attribute, design=did,
                                     group_a=ga, group_b=gb, primary=c.primary)
                        omnibus += _square_table_tests(data, strata, answered, ident)
                        pending += _category_comparisons(data, strata, answered, ident, c.margin, plan,
                                                         heterogeneity, names, templates)
                    continue
                for ga, gb in group_pairs(c, groups):
                    pd = pairs_for(data.cases, strata, c.attribute, ga, gb, vals, answered)
                    pa = analyze_pairs(pd, scale=scale, alpha=plan.alpha, confidence_level=plan.confidence_level,
                                       exact_threshold=plan.exact_threshold,
                                       n_resamples=plan.bootstrap_resamples, seed=plan.seed,
                                       heterogeneity=heterogeneity, names=names, labels=(ga, gb),
                                       templates=templates, by_template=c.by == "template" and c.primary)
                    human = (labels or {}).get((target, c.measure))
                    if human:
                        spec = battery.measures.get(c.measure.split(".", 1)[0])
                        scoring = spec.options().get("scoring") if spec is not None and spec.kind == "judge" else None
                        pa = analyze_corrected(pd, pa, *label_arrays(pd, human), scale=scale, scoring=scoring,
                                               alpha=plan.alpha,
                                               confidence_level=plan.confidence_level,
                                               exact_threshold=plan.exact_threshold,
                                               n_resamples=plan.bootstrap_resamples, seed=plan.seed,
                                               heterogeneity=heterogeneity, names=names, labels=(ga, gb),
                                               templates=templates, by_template=c.by == "template" and c.primary)
                    ident = dict(id=cid, target=target, measure=c.measure, attribute=c.attribute, design=did,
                                 group_a=ga, group_b=gb, primary=c.primary)
                    pa.spread_margin = c.max_sd_ratio
                    pending.append((pa, ident, c.primary, c.margin))
                all_groups = groups if c.reference is None else list(dict.fromkeys([*groups, c.reference]))
                if len(all_groups) > 2:
                    omnibus.append(_omnibus(cid, target, c.measure, did, c.attribute, all_groups, strata, vals,
                                            answered, scale, names, data.cases))
        pending += _status_comparisons(battery, data, target, pending, strata_cache, heterogeneity,
                                       ALWAYS_COMPARED if always_compared is None else always_compared)
        # families: the primary comparisons, the secondary ones, the answer-status comparisons
        for primary in (True, False, "status"):
            fam = [p for p in pending if p[2] is primary or p[2] == primary == "status"]
            if not fam:
                continue
            method = plan.correction if primary is True else "holm" if primary == "status" else "none"
            label = {True: method, False: "none (secondary comparison)",
                     "status": "holm (the answer-status comparisons of the target)"}[primary]
            adj, adj_m, scen = _family_adjust(fam, method)
            spread = _spread_adjust(fam, method)
            for (pa, ident, _, margin), pa_adj, pm_adj, sc, sp in zip(fam, adj, adj_m, scen, spread, strict=True):
                comparisons.append(finish(pa, pvalue_adjusted=num(pa_adj), margin=margin, alpha=plan.alpha,
                                          pvalue_margin_adjusted=num(pm_adj), scenario_adjusted=sc,
                                          spread_adjusted=sp, correction=label, family_size=len(fam), **ident))
    return comparisons, omnibus, notes


def _spread_adjust(fam: list, method: str) -> list:
    """The spread statistics' p-values adjusted over the family's comparisons that have one (secondary: a
    family of their own, with the family's correction), against equal SDs and against the plan's
    ``max_sd_ratio`` (adjusted together, as :func:`_family_adjust` does the means'): per comparison
    ``(adjusted p, label, size, adjusted p against the ratio)`` or None."""
    have = [i for i, (pa, *_rest) in enumerate(fam) if pa.within_spread is not None]
    out: list = [None] * len(fam)
    if not have:
        return out
    sps = [fam[i][0] for i in have]
    raw = np.array([pa.within_spread.pvalue for pa in sps], dtype=float)
    raw_m = np.array([pa.within_spread.pvalue_beyond(pa.spread_margin) for pa in sps], dtype=float)
    adj, adj_m = adjust(raw, method), adjust(raw_m, method)
    label = f"{method} (the target's spread tests; secondary)"
    for i, p, pm, pa in zip(have, adj, adj_m, sps, strict=True):
        out[i] = (num(p), label, len(have), num(pm) if pa.spread_margin else None)
    return out


def _family_adjust(fam: list, method: str) -> tuple[np.ndarray, np.ndarray, list]:
    """Adjust a family's p-values (against 0 and against the margin) together.

    A comparison with ``by: template`` enters with one test per scenario (its scenario-level verdicts
    are primary); its own adjusted p-value is the smallest of its scenarios'. Returns the adjusted
    p-values per comparison and, per comparison, its scenarios' adjusted arrays (``None`` unless by
    template).
    """
    raw: list[float] = []
    raw_m: list[float] = []
    spans: list[tuple[int, int]] = []
    for pa, _ident, _primary, margin in fam:
        if pa.by_template:
            p0, pm = scenario_pvalues(pa, margin)
        else:
            q = pa.pvalue_beyond(margin)
            p0 = np.array([np.nan if pa.pvalue is None else pa.pvalue])
            pm = np.array([np.nan if q is None else q])
        spans.append((len(raw), len(raw) + len(p0)))
        raw += list(p0)
        raw_m += list(pm)
    a0 = adjust(np.array(raw), method) if raw else np.zeros(0)
    am = adjust(np.array(raw_m), method) if raw_m else np.zeros(0)
    adj: list[float] = []
    adj_m: list[float] = []
    scen: list[tuple[np.ndarray, np.ndarray] | None] = []
    for (pa, *_), (i, j) in zip(fam, spans, strict=True):
        if pa.by_template:
            s0, sm = a0[i:j], am[i:j]
            adj.append(np.nanmin(s0) if np.isfinite(s0).any() else np.nan)
            adj_m.append(np.nanmin(sm) if np.isfinite(sm).any() else np.nan)
            scen.append((s0, sm))
        else:
            adj.append(a0[i])
            adj_m.append(am[i])
            scen.append(None)
    return np.array(adj), np.array(adj_m), scen


def _category_comparisons(data: RunData, strata, answered, ident: dict[str, Any], margin, plan,
                          heterogeneity: bool, names: str = "random", templates: str = "random") -> list:
    """A k-outcome (``categorical``) comparison, outcome by outcome: ``<measure>=<outcome>`` as a
    yes/no measure through the same paired analysis as any binary measure (McNemar, risk
    difference, cluster interval, verdict), in the comparison's own family."""
    out = []
    measure = ident["measure"]
    for cat in data.categories.get(measure, ()):
        vals = data.values.get((ident["target"], f"{measure}={cat}"))
        if vals is None:
            continue
        pd = pairs_for(data.cases, strata, ident["attribute"], ident["group_a"], ident["group_b"], vals, answered)
        pa = analyze_pairs(pd, scale="binary", alpha=plan.alpha, confidence_level=plan.confidence_level,
                           exact_threshold=plan.exact_threshold, n_resamples=plan.bootstrap_resamples,
                           seed=plan.seed, heterogeneity=heterogeneity, names=names,
                           labels=(ident["group_a"], ident["group_b"]), templates=templates)
        out.append((pa, {**ident, "id": f"{ident['id']}={cat}", "measure": f"{measure}={cat}"},
                    ident["primary"], margin))
    return out


def _square_table_tests(data: RunData, strata: Strata, answered: np.ndarray,
                        ident: dict[str, Any]) -> list[OmnibusResult]:
    """Stuart-Maxwell (marginal homogeneity) and Bowker (symmetry) on the k x k table of the pairs'
    outcomes (:func:`fairpair.stats.stuart_maxwell`, :func:`fairpair.stats.bowker`), reported beside
    the per-outcome comparisons. Pair-level chi-square tests: they do not model the clustering of
    pairs in templates (the per-outcome comparisons, which carry the verdict, do)."""
    from fairpair.stats import bowker, stuart_maxwell

    labels = data.labels.get((ident["target"], ident["measure"]))
    ca, cb = strata.column(ident["group_a"]), strata.column(ident["group_b"])
    ok = (ca >= 0) & (cb >= 0)
    ia, ib = ca[ok], cb[ok]
    if labels is None:
        labels = np.full(len(data.cases), None, dtype=object)
    none = np.array(None, dtype=object)  # not a bare None: numpy's stubs read where(c, Any, None) as where(c)
    x = np.where(answered[ia], labels[ia], none)
    y = np.where(answered[ib], labels[ib], none)
    cats = data.categories.get(ident["measure"]) or None
    extra = sorted({v for v in (*x, *y) if v is not None} - set(cats or ()))
    cats = (*cats, *extra) if cats else None
    out = []
    for fn in (stuart_maxwell, bowker):
        r = fn(list(x), list(y), categories=cats)
        values = {f"{g}: {c}": num(rate) for g, rates in ((ident["group_a"], r.rates_a), (ident["group_b"], r.rates_b))
                  for c, rate in rates.items()}
        out.append(OmnibusResult(id=ident["id"], target=ident["target"], measure=ident["measure"],
                                 design=ident["design"], attribute=ident["attribute"],
                                 groups=[ident["group_a"], ident["group_b"]], test=r.method,
                                 statistic=num(r.statistic), pvalue=num(r.pvalue), df=int(r.df), n_sets=int(r.n),
                                 n_dropped=int(r.n_missing), values=values, note=r.note))
    return out


#: The answer statuses compared between the groups of every plan comparison even when none occurs
#: (the others only when they occur): an answer that failed, came back empty or refused to engage.
ALWAYS_COMPARED = ("failed", "empty", "refused")


def _status_comparisons(battery: Battery, data: RunData, target: str, pending: list, strata_cache: dict,
                        heterogeneity: bool, always: tuple[str, ...] = ()) -> list:
    """The answer-status rates (``answer.failed``, ``answer.refused``...; see
    :mod:`fairpair.measures.status`) compared between the groups of every plan comparison, as
    yes/no measures through the same paired analysis. The statuses of ``always`` (the analysis's
    :data:`ALWAYS_COMPARED`: failed, empty, refused) are always compared, also when none occurs (no
    event in either group: the interval of :func:`~fairpair.analysis._paired.no_events_interval`); the others only when
    they occur for the target. One Holm family per target; secondary (they do not enter the gate's
    primary family), but a ``fail`` is named in the headline and fails the gate (unless
    ``--ignore-status``)."""
    from fairpair.analysis._data import STATUS_PREFIX
    from fairpair.measures.status import DEGENERATE

    plan = battery.analysis
    st = data.statuses.get(target)
    if st is None:
        return []
    known = st != ""
    seen: dict[tuple[str, str, str, str], None] = {}
    for _pa, ident, primary, _m in pending:
        if primary is True or primary is False:
            seen.setdefault((ident["attribute"], ident["design"], ident["group_a"], ident["group_b"]), None)
    out = []
    for status in DEGENERATE:
        name = STATUS_PREFIX + status
        vals = data.status_values.get((target, name))
        if vals is None or not (np.nansum(vals) or status in always):
            continue
        for attr, did, ga, gb in seen:
            pd = pairs_for(data.cases, strata_cache[(did, attr)], attr, ga, gb, vals, known)
            pa = analyze_pairs(pd, scale="binary", alpha=plan.alpha, confidence_level=plan.confidence_level,
                               exact_threshold=plan.exact_threshold, n_resamples=plan.bootstrap_resamples,
                               seed=plan.seed, heterogeneity=heterogeneity, names=plan.generalize.names,
                               labels=(ga, gb), templates=plan.generalize.templates, events=True)
            ident = dict(id=f"{name}-by-{attr}", target=target, measure=name, attribute=attr, design=did,
                         group_a=ga, group_b=gb, primary=False)
            out.append((pa, ident, "status", None))
    return out




def comparison_names(plan: AnalysisPlan, comparison: Comparison) -> str:
    """The estimand of a comparison: its own ``generalize.names``, else the plan's."""
    g = comparison.generalize or plan.generalize
    return g.names


def comparison_templates(plan: AnalysisPlan, comparison: Comparison) -> str:
    """The templates' estimand of a comparison: its own ``generalize.templates``, else the plan's."""
    g = comparison.generalize or plan.generalize
    return g.templates


def _group_cells(cases, strata, group: str, vals, answered) -> np.ndarray:
    """Template x name cell means of one group's answers (T x n_names, NaN = empty), templates in code order."""
    col = strata.column(group)
    idx = col[col >= 0]
    arr = cases.arrays()
    n_t = len(arr["template_labels"])
    v = np.where(answered[idx], vals[idx], np.nan) if idx.size else np.zeros(0)
    nm = strata.variant_code[idx]
    names, nc = np.unique(nm, return_inverse=True)
    k = max(len(names), 1)
    ok = ~np.isnan(v)
    flat = arr["template_code"][idx][ok] * k + nc.reshape(-1)[ok]
    cnt = np.bincount(flat, minlength=n_t * k).reshape(n_t, k)
    tot = np.bincount(flat, weights=v[ok], minlength=n_t * k).reshape(n_t, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)


def _omnibus(cid, target, measure, did, attribute, groups, strata, vals, answered, scale, names="random",
             cases=None) -> OmnibusResult:
    from fairpair.stats import crossed_omnibus

    cols = np.column_stack([strata.column(g) for g in groups]) if groups else np.empty((0, 0), dtype=np.intp)
    idx = cols[(cols >= 0).all(axis=1)]
    table = np.where(answered[idx], vals[idx], np.nan) if idx.size else np.empty((0, len(groups)))
    binary = scale in BINARY_SCALES and np.all(np.isin(table[~np.isnan(table)], (0.0, 1.0)))
    note = None
    s_stat: float | None
    s_p: float | None
    try:
        res = cochran_q(table) if binary else friedman(table)
        s_stat, s_p, n, n_missing, s_note = res.statistic, res.pvalue, res.n, res.n_missing, res.note
    except ValueError as exc:
        s_stat = s_p = None
        n, n_missing, s_note = 0, int(table.shape[0]), str(exc)
    s_test = "Cochran's Q" if binary else "Friedman"
    stat = p = df = df2 = None
    test = "quasi-F (Clark 1973)" if names == "random" else "F (templates random)"
    if cases is not None:
        cr = crossed_omnibus([_group_cells(cases, strata, g, vals, answered) for g in groups], names=names)
        stat, p, df, df2, note, test = cr.statistic, cr.pvalue, cr.df_num, cr.df_den, cr.note, cr.method
    if s_note:
        note = "; ".join(x for x in (note, f"{s_test}: {s_note}") if x)
    ok = ~np.isnan(table).any(axis=1) if table.size else np.zeros(0, dtype=bool)
    values = {g: (num(table[ok, j].mean()) if ok.any() else None) for j, g in enumerate(groups)}
    return OmnibusResult(id=cid, target=target, measure=measure, design=did, attribute=attribute, groups=groups,
                         test=test, statistic=num(stat), pvalue=num(p), df=num(df), df_denominator=num(df2),
                         n_sets=int(n), n_dropped=int(n_missing), values=values, note=note, names=names,
                         secondary_test=s_test, secondary_statistic=num(s_stat), secondary_pvalue=num(s_p))


def _judge_block(battery: Battery, store: Store, data: RunData) -> JudgeBlock:
    events = [e for e in store.events() if e["kind"] in ("judge", "self_judging", "measure_finished",
                                                           "judge_degenerate")]
    judge = next((e.get("identity") for e in reversed(events) if e["kind"] == "judge"), None)
    if judge is None and battery.judge is not None:
        judge = battery.judge.model_dump(mode="json")
    invalid: dict[str, int] = {}
    leaks: dict[str, int] = {}
    for e in events:
        if e["kind"] != "measure_finished":
            continue
        for m, c in e.items():
            if isinstance(c, dict):
                if c.get("invalid"):
                    invalid[m] = invalid.get(m, 0) + int(c["invalid"])
                if c.get("leaks"):
                    leaks[m] = leaks.get(m, 0) + int(c["leaks"])
    position: dict[str, PositionBias] = {}
    lengths: dict[str, LengthBias] = {}
    pairwise = [n for n, m in battery.measures.items() if m.kind == "pairwise"]
    if pairwise:
        try:
            from fairpair.measures import position_bias
            from fairpair.measures.judge import length_bias
        except ImportError:
            pairwise = []
        for name in pairwise:
            pb = position_bias(store, name)
            if pb.n_items:
                position[name] = PositionBias(share_first=num(pb.statistic), pvalue=num(pb.pvalue),
                                              consistency=num(pb.consistency), n_items=pb.n_items)
            lb = length_bias(store, name)
            if lb.n_items:
                lengths[name] = LengthBias(share_longer=num(lb.share_longer), pvalue=num(lb.pvalue),
                                           n_items=lb.n_items, mean_words_answer=num(lb.mean_words_answer),
                                           mean_words_counterpart=num(lb.mean_words_counterpart),
                                           mean_difference=num(lb.mean_difference))
    warnings: list[str] = []
    self_judging = False
    for e in events:
        if e["kind"] == "self_judging":
            self_judging = True
            warnings.append(f"self-judging: the judge is the same system as target '{e.get('target')}'; "
                            "a model judging its own answers can favour them")
    for m, pb in position.items():
        if pb.pvalue is not None and pb.pvalue < 0.05:
            warnings.append(f"{m}: the judge prefers the answer shown first in {pb.share_first:.0%} of decisive "
                            "verdicts (position bias); both orders are averaged")
    for m, bias in lengths.items():
        if bias.pvalue is not None and bias.pvalue < 0.05 and (bias.share_longer or 0) > 0.5:
            warnings.append(f"{m}: the judge prefers the longer answer in {bias.share_longer:.0%} of decisive verdicts "
                            f"between answers of different length (sign test p = {bias.pvalue:.3g}): its preferences "
                            "may follow length (verbosity bias) rather than quality")
    for m, n in invalid.items():
        warnings.append(f"{m}: {n} invalid judge outputs (retried; those still invalid are missing)")
    self_test = _self_tests(store)
    for t in self_test:
        if t.get("status") == "failed":
            warnings.append(f"{t['measure']}: the judge failed its self-test on anchors with known scores "
                            f"({'; '.join(t.get('failures') or [])}); its verdicts are never 'pass'")
        elif t.get("status") == "off":
            warnings.append(f"{t['measure']}: the judge was not self-tested (judge_self_test: off)")
        elif t.get("status") == "not_tested":
            warnings.append(f"{t['measure']}: not self-tested ({t.get('reason')})")
        warnings += [f"{t['measure']}: {f}" for f in t.get("flags") or []]
    for e in events:
        if e["kind"] == "judge_degenerate":
            warnings += [f"{e.get('measure')} ({e.get('target')}): degenerate judge scores: {f}"
                         for f in e.get("flags") or []]
    return JudgeBlock(judge=judge, invalid_outputs=invalid, leaks=leaks, position_bias=position, length_bias=lengths,
                      self_judging=self_judging, warnings=list(dict.fromkeys(warnings)),
                      events=[e for e in events if e["kind"] != "measure_finished"], self_test=self_test)


def _self_tests(store: Store) -> list[dict[str, Any]]:
    """The latest judge self-test per measure (store events ``judge_self_test``), without the
    per-anchor outputs."""
    latest: dict[str, dict[str, Any]] = {}
    for e in store.events("judge_self_test"):
        latest[str(e.get("measure"))] = {k: v for k, v in e.items() if k not in ("outputs", "kind")}
    return list(latest.values())


def _distrust_judge(battery: Battery, comparisons: list[ComparisonResult], judge: JudgeBlock) -> list[ComparisonResult]:
    """A comparison of a measure whose judge failed its self-test (``judge_self_test: warn``) carries
    the warning in its note and is never ``pass`` (a ``pass`` becomes ``inconclusive``)."""
    failed = {t["measure"] for t in judge.self_test if t.get("status") == "failed"}
    if not failed:
        return comparisons
    out = []
    for c in comparisons:
        root = c.measure.split(".", 1)[0] if c.measure not in battery.measures else c.measure
        if root not in failed:
            out.append(c)
            continue
        note = f"the judge of '{root}' failed its self-test on anchors with known scores: never 'pass'"
        upd: dict[str, Any] = {"note": f"{c.note}; {note}" if c.note else note}
        if c.verdict == "pass":
            upd |= {"verdict": "inconclusive",
                    "verdict_rule": c.verdict_rule + "; the judge failed its self-test, so 'pass' is withheld"}
        out.append(c.model_copy(update=upd))
    return out


def _incomplete(run_dir: Path, counts: dict[str, Counts]) -> IncompleteRun | None:
    """The run's :class:`IncompleteRun` when some case of a target has no outcome stored yet (neither an
    answer nor a final failure), else ``None``."""
    cases = sum(c.cases for c in counts.values())
    done = sum(c.answered + c.failed for c in counts.values())
    if not counts or done >= cases:
        return None
    try:
        manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
        battery = manifest.get("battery_path") or "BATTERY"
    except (OSError, ValueError, AttributeError):
        battery = "BATTERY"
    command = f"fairpair run {shlex.quote(str(battery))} --out {shlex.quote(str(run_dir))}"
    return IncompleteRun(answered=sum(c.answered for c in counts.values()), cases=cases, command=command)


def with_reasons(comparisons: list[ComparisonResult], incomplete: IncompleteRun | None = None
                 ) -> list[ComparisonResult]:
    """Each comparison with its ``reasons`` (:func:`fairpair.analysis._why.comparison_reasons`) and its
    headline ``reason`` in words."""
    from fairpair.analysis._why import comparison_reasons, reason_text

    out = []
    for c in comparisons:
        reasons = comparison_reasons(c, incomplete=incomplete is not None)
        text = reason_text(c, reasons[0], "en", incomplete=incomplete) if reasons else None
        out.append(c.model_copy(update={"reasons": [r.value for r in reasons], "reason": text}))
    return out


def _counts(data: RunData, cases: dict[str, int]) -> dict[str, Counts]:
    """Per target, its cases (``Store.counts``'s: in an imported run, the target's own) and outcomes."""
    leaks: dict[str, int] = {}
    for t, _c, _m, _s, d in data.details:
        lk = d.get("leaks") or d.get("leak")
        if lk:
            leaks[t] = leaks.get(t, 0) + 1
    return {t: Counts(cases=cases[t], answered=int(data.answered[t].sum()), failed=int(data.failed.get(t, 0)),
                      measured=int(data.measured.get(t, 0)), missing=int(data.missing.get(t, 0)),
                      leaks=leaks.get(t, 0)) for t in data.targets}


def _answer_statuses(battery: Battery, data: RunData) -> dict[str, AnswerStatusBlock]:
    """Per target, the answer statuses, their rates per group of each attribute, and the warning."""
    from fairpair.measures.status import STATUSES, StatusSummary, degenerate_warning

    out: dict[str, AnswerStatusBlock] = {}
    for target, arr in data.statuses.items():
        known = arr != ""
        counts = {s: int((arr == s).sum()) for s in STATUSES if (arr == s).any()}
        sm = StatusSummary(counts, int(known.sum()))
        by_group: dict[str, dict[str, dict[str, float]]] = {}
        for i in np.flatnonzero(known):
            for attr, g in data.cases.groups[i].items():
                cell = by_group.setdefault(attr, {}).setdefault(g, {})
                cell[arr[i]] = cell.get(arr[i], 0) + 1
        for groups in by_group.values():
            for g, cell in groups.items():
                tot = sum(cell.values())
                groups[g] = {s: cell.get(s, 0) / tot for s in STATUSES if s in counts}
        examples = [[cid, st, text] for st, exs in (data.status_examples.get(target) or {}).items()
                    for cid, text in exs][:6]
        ids = {st: [str(data.cases.ids[i]) for i in np.flatnonzero(arr == st)] for st in counts if st != "ok"}
        out[target] = AnswerStatusBlock(counts=counts, n=sm.n, usable_share=num(1 - sm.degenerate_share) if sm.n
                                        else None, mostly_degenerate=sm.mostly_degenerate,
                                        warning=degenerate_warning(target, sm, battery.language),
                                        by_group=by_group, examples=examples,
                                        cases=ids if sum(map(len, ids.values())) <= STATUS_IDS_MAX else None)
    return out


#: The most non-ok case ids results.json records per target (beyond, the report computes the statuses again).
STATUS_IDS_MAX = 200_000


def analyze_run(run_dir: Path | str | Run, *, console: Any = None, write: bool = True,
                heterogeneity: bool = True, progress_console: Any = None) -> Results:
    """Execute the run's pre-registered analysis plan and write ``RUN/results.json``.

    Parameters
    ----------
    run_dir : path or Run
        A directory written by ``fairpair run`` (with measurements), or that run already open
        (:class:`fairpair.store.Run`; it stays open, and its :meth:`~fairpair.store.Run.results` is
        then the record written here).
    console : rich Console, optional
        Prints a one-line summary per comparison.
    progress_console : rich Console, optional
        Draws a bar of the planned comparisons done (rate, ETA) on a terminal, not under ``-q``.
    write : bool, default True
        Write ``results.json`` (atomically; an earlier different file is
        kept under ``results.previous/``, nothing is lost).

    Returns
    -------
    Results
        The typed record (see :mod:`fairpair.records._results`).

    Raises
    ------
    FairpairError
        Not a run directory, or no battery recorded in it.
    """
    from fairpair.analysis._data import open_for_reading
    from fairpair.analysis._two_party import analyze_two_party

    with open_for_reading(run_dir) as run:
        path: Path = run.path
        store = run.store
        loaded = recorded_battery(run)
        battery = loaded.battery
        data = load_run_data(store, language=battery.language, statuses=True, speakers=battery.speakers())
        from fairpair.measures import measure_categories

        try:
            add_category_values(store, data, measure_categories(battery))
        except FairpairError:
            pass  # a measure that cannot be built here: its labels stay unread (its comparisons note it)
        plan = battery.analysis
        registered = store.get_meta("plan_sha256")
        executed = executed_plan_sha256(store) or registered
        changed = plan_changed(store)
        refused = len(plan_edits_refused(store))
        from fairpair._progress import stage_bar

        n_planned = len(plan.comparisons) * len(data.targets)
        with stage_bar(progress_console) as bar:
            task = bar.add_task("analysing the pre-registered comparisons", total=n_planned, rate="-", extra="")

            def tick() -> None:
                speed = bar.tasks[task].speed
                bar.update(task, advance=1, rate=f"{speed:.1f}" if speed else "-")

            human, label_notes = load_labels(store)
            comparisons, omnibus, notes = analyze_loaded(battery, data, heterogeneity=heterogeneity,
                                                         on_comparison=tick, labels=human)
            notes += label_notes
        from fairpair.analysis._aa import analyze_aa

        aa = analyze_aa(battery, data)
        from fairpair.analysis._rankrun import analyze_rankings

        rankings, rank_notes = analyze_rankings(battery, data, imported=store.get_meta("import") is not None)
        notes += rank_notes
        two_party = analyze_two_party(battery, data, n_resamples=plan.bootstrap_resamples, seed=plan.seed,
                                      confidence_level=plan.confidence_level)
        judge = _judge_block(battery, store, data)
        comparisons = _distrust_judge(battery, comparisons, judge)
        counts = _counts(data, {t: store.counts(t)["cases"] for t in data.targets})
        incomplete = _incomplete(path, counts)
        comparisons = with_reasons(comparisons, incomplete)
        from fairpair.analysis._discover import DISCOVERED_PREFIX, discovered_block

        discovered = discovered_block(store, battery, data)
        measures = sorted({m for (_t, m) in data.values if not m.startswith(DISCOVERED_PREFIX)}
                          | set(battery.measures))
        scales = {m: measure_scale(battery, m, data.raw_kinds.get(m)) for m in measures}
        if changed:
            notes.append("the analysis plan executed differs from the one registered before the answers were "
                         "collected")
        if refused:
            notes.append(f"a battery with an edited analysis plan was offered to this run directory {refused} "
                         f"time(s) and refused: its edits were not used, the registered plan was executed")
        res = Results(
            schema_="fairpair.results/2", fairpair_version=__version__,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"), run_dir=str(path),
            battery=battery.name, battery_sha256=loaded.sha256, plan_sha256=registered, plan_sha256_now=executed,
            plan_changed=changed, plan_edits_refused=refused, alpha=plan.alpha, correction=plan.correction,
            confidence_level=plan.confidence_level, n_resamples=plan.bootstrap_resamples, seed=plan.seed,
            fail_on_inconclusive=plan.fail_on_inconclusive, fail_on_insufficient=plan.fail_on_insufficient,
            names=plan.generalize.names, templates=plan.generalize.templates, targets=data.targets, measures=scales,
            comparisons=comparisons, omnibus=omnibus, two_party=two_party, judge=judge, counts=counts,
            notes=notes + aa.notes, answer_statuses=_answer_statuses(battery, data), aa_controls=aa.comparisons,
            aa_flag=aa.flag, rankings=rankings, incomplete=incomplete, discovered=discovered)
    if write:  # after a run opened here is closed (a store it migrated is checkpointed before the file's time)
        run.write_results(res)
    if console is not None:
        _print_summary(console, res)
    return res


def _print_summary(console, res: Results) -> None:
    from rich.markup import escape

    from fairpair.analysis._design import design_reason_parts

    colour = {"fail": "red", "pass": "green", "inconclusive": "yellow", "insufficient design": "magenta",
              "insufficient labels": "magenta", "no verdict": "bold red"}
    if res.incomplete is not None:  # said first, once
        console.print(escape(res.incomplete.text()), soft_wrap=True)
    why: dict[tuple[str, str], list[str]] = {}  # each reason once, with the comparisons it covers
    for c in res.comparisons:
        est = "n/a" if c.estimate is None else f"{c.estimate:+.3f}"
        ci = "" if not c.ci or None in c.ci else f" [{c.ci[0]:+.3f}, {c.ci[1]:+.3f}]"
        p = "n/a" if c.pvalue_adjusted is None else f"{c.pvalue_adjusted:.3g}"
        console.print(f"[{colour[c.verdict]}]{c.verdict:12}[/{colour[c.verdict]}] {escape(c.target)} "
                      f"{escape(c.id)} {escape(c.group_a)} vs {escape(c.group_b)}: {est}{ci} "
                      f"p_adj={p} (n={c.n_pairs}; names {c.names}: {escape(c.estimand)})", soft_wrap=True)
        lc = c.label_correction
        if lc is not None:
            raw = "n/a" if lc.raw_estimate is None else f"{lc.raw_estimate:+.3f}"
            rci = "" if not lc.raw_ci or None in lc.raw_ci else f" [{lc.raw_ci[0]:+.3f}, {lc.raw_ci[1]:+.3f}]"
            err = ", ".join(f"{escape(g)} {e:+.3f}" for g, e in ((c.group_a, lc.judge_error_a),
                                                                  (c.group_b, lc.judge_error_b)) if e is not None)
            console.print(f"  corrected by {lc.n_labels} human labels (lambda {lc.lam:.2f}); the judge alone: "
                          f"{raw}{rci}; the judge's error (judge - human): {err or 'n/a'}", soft_wrap=True)
        if c.reasons and c.reason and c.reasons[0] != "incomplete run":
            parts = [c.reason]
            if c.reasons[0] == "insufficient design" and (c.design_reason or "")[:1].isdigit():
                parts = design_reason_parts(n_templates=c.n_clusters, n_names_a=c.n_names_a,
                                            n_names_b=c.n_names_b, names=c.names, n_pairs=c.n_pairs,
                                            group_a=c.group_a, group_b=c.group_b) or parts
            for part in parts:  # an insufficient design part by part: a part shared by many is one line
                why.setdefault((c.reasons[0], part), []).append(f"{c.id} {c.group_a} vs {c.group_b}")
    for (kind, text), which in why.items():
        console.print(f"  {escape(kind)}: {escape(text)} ({escape('; '.join(which))})", soft_wrap=True)
    for c in res.aa_controls:
        console.print(f"A/A control {escape(c.verdict):12} {escape(c.target)} {escape(c.measure)} "
                      f"{escape(c.group_a)} vs {escape(c.group_b)}: "
                      + ("n/a" if c.estimate is None else f"{c.estimate:+.3f}"))
    if res.aa_flag:
        console.print(f"[red]A/A control failed:[/red] {escape(res.aa_flag)}")
    for n in dict.fromkeys(res.notes):
        console.print(f"note: {escape(n)}", soft_wrap=True)
    if res.discovered is not None:
        from fairpair.analysis._discover import print_discovered

        print_discovered(console, res.discovered)


def load_results(run_dir: Path | str) -> Results:
    """Read ``RUN/results.json`` back into :class:`Results` (:func:`fairpair.store.read_results`)."""
    from fairpair.store import read_results

    return read_results(Path(run_dir))
