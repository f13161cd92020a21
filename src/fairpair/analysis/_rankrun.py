"""The ranking designs of a run: their answers as a frame, analysed by :func:`analyze_ranking`.

For every ``ranking`` design, every measure of kind ``ranking`` and every
target, :func:`ranking_frame` builds the frame that
:func:`fairpair.analysis._ranking.analyze_ranking` reads: one row per
(target, case_id, group), with ``template``, ``repetition``, ``group``,
``variant``, ``slot`` (1-based position in the prompt), ``rank`` (1 = first;
NaN when the answer gave no complete ranking) and ``top`` (1 for the top
pick, 0 otherwise; NaN when the answer was not parsed). A case that was
answered but not parsed stays in the frame with NaN (the analysis counts
it as unparsed); a case without an answer or not yet measured is left out
and counted in a note.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from fairpair.analysis._data import RunData
from fairpair.records import RankingParse

if TYPE_CHECKING:
    from fairpair.battery import Battery

__all__ = ["ranking_frame", "analyze_rankings", "FRAME_COLUMNS"]

FRAME_COLUMNS = ("target", "case_id", "template", "repetition", "group", "variant", "slot", "rank", "top")


def _details(data: RunData, measure: str) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    out = {}
    for target, cid, m, st, d in data.details:
        if m == measure:
            out[(target, cid)] = (st, d)
    return out


def ranking_frame(data: RunData, design_id: str, measure: str, target: str, *,
                  imported: bool = False) -> tuple[Any, dict[str, int]]:
    """The frame of one ranking design, measure and target, and counts of the cases left out.

    ``imported``: each request was answered by the one target that got it (an imported run), so a
    case without any answer row of ``target`` is another target's request, not one left out.

    Returns
    -------
    (pandas.DataFrame, dict)
        The frame (columns :data:`FRAME_COLUMNS`) and ``{"unanswered": n,
        "unmeasured": n}``.
    """
    import pandas as pd

    details = _details(data, measure)
    answered = data.answered.get(target)
    asked = data.statuses.get(target)  # "" where the target has no answer row (not even a failed one)
    rows: list[dict[str, Any]] = []
    left = {"unanswered": 0, "unmeasured": 0}
    parse: dict[str, Any] = {"how": {}, "matches": {}, "renamed_picks": 0, "renamed_answers": 0,
                             "renamed_excluded": 0}
    cases = data.cases
    for i, cid in enumerate(cases.ids):
        if cases.design[i] != design_id:
            continue
        rk = (cases.meta[i] or {}).get("ranking") or {}
        slots = rk.get("slots") or []
        if not slots:
            continue
        if answered is None or not answered[i]:
            if not (imported and asked is not None and asked[i] == ""):
                left["unanswered"] += 1
            continue
        got = details.get((target, cid))
        if got is None:
            left["unmeasured"] += 1
            continue
        st, d = got
        _count_parse(parse, st, d)
        parsed = st == "ok" and d.get("parse") not in (None, "unparsed") and "top" in d
        ranks = d.get("ranks") if parsed else None
        for s in slots:
            g = str(s["group"])
            rows.append({"target": target, "case_id": cid, "template": cases.template[i],
                         "repetition": int(rk.get("repetition", 0)), "group": g, "variant": str(s["variant"]),
                         "slot": int(s["slot"]),
                         "rank": float(ranks[g]) if isinstance(ranks, dict) and g in ranks else math.nan,
                         "top": (1.0 if d.get("top") == g else 0.0) if parsed else math.nan})
    frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    frame.attrs["parse"] = parse
    return frame, left


def _count_parse(parse: dict[str, Any], status: str, d: Any) -> None:
    """Add one measured answer to the parse table: how it was read, how its picks matched, renamed picks."""
    if not isinstance(d, dict):
        d = {}
    how = str(d.get("parse") or ("unparsed" if status != "ok" else "?"))
    parse["how"][how] = parse["how"].get(how, 0) + 1
    picks = d.get("picks") or []
    for p in picks:
        m = str(p.get("match", "?"))
        parse["matches"][m] = parse["matches"].get(m, 0) + 1
    renamed = sum(bool(p.get("renamed")) for p in picks)
    parse["renamed_picks"] += renamed
    parse["renamed_answers"] += renamed > 0
    parse["renamed_excluded"] += how == "renamed"


def analyze_rankings(battery: Battery, data: RunData, *,
                     imported: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
    """Every ranking design x ranking measure x target, analysed (``results.json`` key ``rankings``).

    Returns the records (:meth:`fairpair.records.RankingResult.to_dict`, with ``measure`` and
    ``parse`` set) and notes (cases left out; an analysis that could not run, with its reason).
    """
    designs, measures = battery.ranking_designs(), battery.ranking_measures()
    if not designs or not measures:
        return [], []
    from fairpair.analysis._ranking import analyze_ranking

    plan = battery.analysis
    out: list[dict[str, Any]] = []
    notes: list[str] = []
    for did, d in designs:
        groups = d.chosen_groups(battery)
        for m in measures:
            for target in data.targets:
                frame, left = ranking_frame(data, did, m, target, imported=imported)
                for why, n in left.items():
                    if n:
                        notes.append(f"ranking design {did}, measure {m}, target {target}: {n} case(s) left out "
                                     f"({why})")
                if frame.empty:
                    notes.append(f"ranking design {did}, measure {m}, target {target}: no measured answer")
                    continue
                try:
                    res = analyze_ranking(frame, groups=groups, alpha=plan.alpha, names=plan.generalize.names,
                                          confidence_level=plan.confidence_level, target=target, design=did,
                                          attribute=d.attribute, correction=plan.correction,
                                          templates=plan.generalize.templates)
                except ValueError as exc:
                    notes.append(f"ranking design {did}, measure {m}, target {target}: not analysed ({exc})")
                    continue
                parse = frame.attrs.get("parse")
                out.append(res.model_copy(update={
                    "measure": m, "parse": None if parse is None else RankingParse.model_validate(parse)}).to_dict())
    return out, notes
