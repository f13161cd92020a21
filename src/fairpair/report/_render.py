"""Build the report once (a view model) and write it as HTML, Markdown and JSON.

See :mod:`fairpair.report` for the files and the JSON summary's schema.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from fairpair import __version__
from fairpair._files import atomic_write_text
from fairpair.report._catalog import (
    design_reason_parts,
    design_reason_text,
    fmt_num,
    fmt_p,
    fmt_p_is,
    fmt_pct,
    msg,
    p_reads,
    test_name,
    verdict_sentence,
    verdict_word,
)
from fairpair.report._data import (
    ReportData,
    TargetInfo,
    comparison_key,
    group_label,
    load_report_data,
    measure_label,
    read_report_data,
)
from fairpair.report._notes import translate_note
from fairpair.report._ranking import ranking_view as _ranking_view
from fairpair.report._ranking import rmsg as _ranking_msg
from fairpair.report._text import MdSafe, clean, html_prose, md_block, md_inline
from fairpair.report._view import (
    AAControlRow,
    CollectedRow,
    DiscoveredRow,
    DroppedRow,
    EvidenceBlock,
    Figures,
    RankingView,
    ReasonGroup,
    ScenarioView,
    SelfTestRow,
    SpreadView,
    TwoPartyView,
    VerdictRow,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fairpair.analysis import DispersionTest, JudgeBlock, MinimumIdentity, OmnibusResult, Results, TwoPartyBlock
    from fairpair.records import RankingResult
    from fairpair.store import Run

__all__ = ["write_report", "build_model", "build_view", "report_model", "ReportModel", "REPORT_SCHEMA",
           "overall_verdict", "VerdictRow"]

REPORT_SCHEMA = "fairpair.report/1"
REPORT_DIR = "report"
#: The Content-Security-Policy of the HTML report: nothing may be fetched or run.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def overall_verdict(rows: list[VerdictRow], ranking: list[str] | None = None, *, incomplete: bool = False) -> str:
    """``incomplete run`` if the run is incomplete, else ``fail`` if a primary comparison or an automatic
    answer-status comparison fails, else ``insufficient design`` if a primary one has no verdict for that
    reason, else ``inconclusive`` if one is (or has no verdict for another reason), else ``pass``; ``none``
    if empty.

    ``ranking``: the verdicts of the ranking designs (:func:`ranking_verdicts`), primary comparisons too,
    as the gate counts them."""
    if incomplete:
        return "incomplete run"
    prim = [r for r in rows if r.primary] or rows
    if not prim and not ranking:
        return "none"
    vs = {r.verdict for r in prim} | set(ranking or ())
    if "fail" in vs or any(r.status and r.verdict == "fail" for r in rows):
        return "fail"
    if "insufficient design" in vs:
        return "insufficient design"
    if "inconclusive" in vs or vs - {"pass"}:
        return "inconclusive"
    return "pass"


def _without_quiet_statuses(rows: list[VerdictRow]) -> tuple[list[VerdictRow], list[VerdictRow]]:
    """The rows to show, and the automatic answer-status comparisons left out of the tables: those
    with no such answer in either group (``failed``, ``empty`` and ``refused`` are compared on every
    run), said in one line each status set (:func:`_quiet_status_marks`); ``results.json`` keeps them."""
    def quiet(r: VerdictRow) -> bool:
        c = r.result
        return bool(r.status and r.verdict != "fail" and c is not None and c.n_pairs and c.value_a == 0
                    and c.value_b == 0)
    return [r for r in rows if not quiet(r)], [r for r in rows if quiet(r)]


def _quiet_status_marks(quiet: list[VerdictRow], lang: str) -> list[str]:
    """One line for the answer-status comparisons without any such answer (see :func:`_without_quiet_statuses`),
    grouped by the set of statuses, which it names in words: ``† no failed, empty or refused answer in either
    group: magreb − espana; rumania − espana (6 automatic comparisons, ...)``."""
    by_pair: dict[tuple[str, str], list[VerdictRow]] = {}
    for r in quiet:
        key = (f"{r.label_a} − {r.label_b}", r.target)
        by_pair.setdefault(key, []).append(r)
    by_statuses: dict[tuple[str, ...], list[str]] = {}
    for (pair, target), rs in by_pair.items():
        several = len({t for _, t in by_pair}) > 1
        by_statuses.setdefault(tuple(r.measure for r in rs), []).append(pair + (f" · {target}" if several else ""))
    return [msg(lang, "mark.status.none", statuses=_status_words(st, lang), pairs="; ".join(dict.fromkeys(pairs)),
                n=sum(len(st) for _ in pairs))
            for st, pairs in by_statuses.items()]


def _status_word(status: str, lang: str, form: str) -> str:
    """An answer status (``truncated``) in the report's language, ``form`` ``"adj"`` (``truncada``) or
    ``"plural"`` (``truncadas``); the status itself where the catalogue has no word for it."""
    try:
        return msg(lang, f"status.{form}.{status}")
    except KeyError:
        return status


def _status_words(measures: tuple[str, ...], lang: str) -> str:
    """``("answer.failed", "answer.empty", "answer.refused")`` -> ``failed, empty or refused`` (``fallida,
    vacía ni rechazada``): each status's adjective (the status itself where the catalogue has none), in order."""
    words = [_status_word(m.removeprefix("answer."), lang, "adj") for m in measures]
    if len(words) == 1:
        return words[0]
    return msg(lang, "list.nor", rest=", ".join(words[:-1]), last=words[-1])


def ranking_verdicts(sections: Sequence[RankingResult]) -> list[str]:
    """The verdicts of a run's ranking designs (``results.json`` ``rankings``, decoded:
    :attr:`ReportData.rankings`): every primary pair of groups (top pick, "ranked above") and every
    group's four-fifths ratio that has one; the gate's (:func:`fairpair.analysis.gate_outcome`) primary
    comparisons of a ranking battery."""
    out: list[str] = []
    for r in sections:
        out += [p.verdict for p in r.pairs if p.verdict and p.primary]
        out += [q.verdict for q in r.ratios if q.verdict]
    return out


def _ranking_counts(verdicts: list[str], lang: str) -> str:
    """The ranking verdicts counted (the ``counts.line`` of the comparisons)."""
    return msg(lang, "counts.line", fail=verdicts.count("fail"), pass_=verdicts.count("pass"),
               inconclusive=verdicts.count("inconclusive"), insufficient=verdicts.count("insufficient design"))


def _ranking_fails(sections: Sequence[RankingResult], lang: str) -> list[str]:
    """Per ranking section with a failing ratio or pair: its target and how many of each fail."""
    out = []
    for r in sections:
        ratios = sum(q.verdict == "fail" for q in r.ratios)
        pairs = sum(p.verdict == "fail" and p.primary for p in r.pairs)
        what = [msg(lang, f"ranking.fails.{k}", n=n) for k, n in (("ratios", ratios), ("pairs", pairs)) if n]
        if what:
            out.append(msg(lang, "ranking.fails", target=r.target, what=", ".join(what)))
    return out


def _verdict_rows(data: ReportData, lang: str) -> list[VerdictRow]:
    """One :class:`VerdictRow` per comparison of the run's :class:`~fairpair.analysis.Results`."""
    from fairpair.analysis import comparison_reasons
    from fairpair.records import REASON_VERDICT, first_reason

    rows = []
    level = float(data.results.confidence_level or 0.95) if data.results is not None else 0.95
    incomplete = data.results.incomplete if data.results is not None else None
    for c in data.comparisons:
        binary = c.scale == "binary"
        f = 100.0 if binary else 1.0
        la = group_label(data.battery, c.attribute, c.group_a)
        lb = group_label(data.battery, c.attribute, c.group_b)
        mlab = measure_label(data.battery, c.measure)
        reasons = tuple(c.reasons) or tuple(r.value for r in comparison_reasons(c, incomplete=incomplete is not None))
        first = first_reason(reasons)
        shown = c.verdict if first is None or REASON_VERDICT[first] is not None else first.value
        # a comparison with no verdict (an incomplete run, nothing measured) says that, not the stored rule
        said = c if shown == c.verdict else {**c.model_dump(), "verdict": shown}
        sentence = _status_sentence(data, c, lang) if c.measure.startswith("answer.") and shown == "fail" \
            else verdict_sentence(said, lang=lang, label_a=clean(la), label_b=clean(lb), measure_label=clean(mlab),
                                  signal=data.attribute_signal(c.attribute), confidence_level=level,
                                  reason_said=True)
        ci = c.ci or [None, None]
        est, pv, pv_adj, where = c.estimate, c.pvalue, c.pvalue_adjusted, ""
        deciding = c.scenarios.deciding(c.verdict) if c.scenarios is not None and c.scenarios.by_template else []
        if deciding:  # by template: the scenario that decides (the smallest adjusted p), never the average's interval
            r = min(deciding, key=lambda r: 2.0 if r.pvalue_adjusted is None else r.pvalue_adjusted)
            ci, est, pv, pv_adj = r.ci or [None, None], r.estimate, r.pvalue, r.pvalue_adjusted
            where = f"`{r.template}`" + (f" +{len(deciding) - 1}" if len(deciding) > 1 else "") + " "
        lo, hi = (ci[0], ci[1]) if len(ci) >= 2 else (None, None)
        unit = (" pp" if lang == "en" else " p.\u00a0p.") if binary else ""
        mark = "†" if c.measure.startswith("answer.") else "" if c.primary else "*"
        rows.append(VerdictRow(
            key=comparison_key(c), id=c.id, target=c.target, measure=c.measure, measure_label=mlab,
            attribute=c.attribute, design=c.design, group_a=c.group_a, group_b=c.group_b,
            label_a=la, label_b=lb, scale=c.scale, primary=c.primary,
            verdict=shown, verdict_word=verdict_word(shown, lang), sentence=sentence,
            estimate=where + ((fmt_num(est * f, lang) + unit) if isinstance(est, (int, float)) else "—"),
            ci=(f"{fmt_num(lo * f, lang)} … {fmt_num(hi * f, lang)}"
                if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) else "—"),
            p=fmt_p(pv, lang), p_adjusted=fmt_p(pv_adj, lang),
            test=test_name(c.test, lang), n_pairs=c.n_pairs, n_dropped=c.n_dropped,
            note=translate_note(c.note or "", lang), result=c, reasons=reasons,
            reason=_reason_words(c, first, lang, incomplete), mark=mark))
    return rows


def _named_failing(r: VerdictRow, rows: list[VerdictRow], lang: str) -> str:
    """A failing comparison as the headline names it (:func:`_named`); a ``by: template`` one with the
    scenarios that fail it."""
    sc = r.result.scenarios
    deciding = sc.deciding("fail") if sc is not None and sc.by_template else []
    if not deciding:
        return _named(r, rows, lang)
    return _named(r, rows, lang) + " " + msg(lang, "overall.in_scenarios",
                                             where=", ".join(f"`{x.template}`" for x in deciding))


def _label_rows(rows: list[VerdictRow], lang: str) -> list[str]:
    """One line per comparison corrected by human labels: corrected and raw difference, the labels, the
    judge's error by group (and Rogan-Gladen for a yes/no judge)."""
    out = []
    for r in rows:
        lc = r.result.label_correction
        if lc is None:
            continue
        f = 100.0 if r.scale == "binary" else 1.0

        def ci(v: Any, f: float = f) -> str:
            return (f"{fmt_num(v[0] * f, lang, 2)} … {fmt_num(v[1] * f, lang, 2)}"
                    if v and all(isinstance(x, (int, float)) for x in v) else "—")

        def n(x: Any, f: float = f) -> str:
            return fmt_num(x * f, lang, 2) if isinstance(x, (int, float)) else "—"

        line = msg(lang, "labels.line", what=f"{r.measure_label} · {r.target} · {r.label_a} / {r.label_b}",
                   est=n(r.result.estimate), ci=ci(r.result.ci), raw=n(lc.raw_estimate), raw_ci=ci(lc.raw_ci),
                   n=lc.n_labels, a=r.label_a, b=r.label_b, na=lc.n_labels_a, nb=lc.n_labels_b,
                   lam=fmt_num(lc.lam, lang, 2), ea=n(lc.judge_error_a), eb=n(lc.judge_error_b))
        if lc.rogan_gladen_estimate is not None:
            line += msg(lang, "labels.rg", est=n(lc.rogan_gladen_estimate), ci=ci(lc.rogan_gladen_ci), a=r.label_a,
                        b=r.label_b, sa=fmt_num(lc.sensitivity_a, lang, 2), pa=fmt_num(lc.specificity_a, lang, 2),
                        sb=fmt_num(lc.sensitivity_b, lang, 2), pb=fmt_num(lc.specificity_b, lang, 2))
        elif lc.rogan_gladen_note:  # a yes/no measure without Rogan-Gladen: say why
            line += msg(lang, "labels.rg_none")
        out.append(line)
    return out


def _reason_words(c: Any, reason: Any, lang: str, incomplete: Any) -> str:
    """The headline reason of a comparison in ``lang`` (the design's in the catalog's words)."""
    from fairpair.analysis import reason_text
    from fairpair.records import Reason

    if reason is None:
        return ""
    if reason is Reason.INSUFFICIENT_DESIGN:
        return design_reason_text(c.model_dump(), lang)
    return reason_text(c, reason, lang, incomplete=incomplete)


def verdict_counts(rows: list[VerdictRow], lang: str) -> str:
    """How many comparisons fail, pass, are inconclusive, have an insufficient design (and how many
    have no verdict for another reason), in ``lang``."""
    n = {v: sum(r.verdict == v for r in rows) for v in ("fail", "pass", "inconclusive", "insufficient design")}
    text = msg(lang, "counts.line", fail=n["fail"], pass_=n["pass"], inconclusive=n["inconclusive"],
               insufficient=n["insufficient design"])
    other: dict[str, int] = {}
    for r in rows:
        if r.verdict not in n:
            other[r.verdict] = other.get(r.verdict, 0) + 1
    if other:
        text += "; " + msg(lang, "counts.more", n=sum(other.values()),
                           what=", ".join(f"{k} {msg(lang, 'reason.' + v)}" for v, k in other.items()))
    return text


def _named(row: VerdictRow, rows: list[VerdictRow], lang: str) -> str:
    """``row.label``, after its target when ``rows`` come from more than one target (as a ranking's
    "target: n pairwise comparison(s)")."""
    if len({r.target for r in rows}) > 1:
        return msg(lang, "label.target", target=row.target, label=row.label)
    return row.label


def shared_reasons(rows: list[VerdictRow], lang: str) -> list[ReasonGroup]:
    """Each distinct reason once, with the comparisons it covers (an insufficient design's parts one by
    one: "3 template(s) ..." covers all nine comparisons, "3 name(s) in group china" three of them).
    A run's ``incomplete run`` is said once by the headline and is left out here."""
    from fairpair.records import Reason, first_reason

    groups: dict[tuple[str, str], list[VerdictRow]] = {}
    for r in rows:
        first = first_reason(r.reasons)
        if first is None or first is Reason.INCOMPLETE_RUN or not r.reason:
            continue
        parts = design_reason_parts(r.result.model_dump(), lang) if first is Reason.INSUFFICIENT_DESIGN \
            else [r.reason]
        for part in parts:
            groups.setdefault((first.value, part), []).append(r)
    out = []
    for (kind, text), rs in groups.items():
        every = len(rs) == len(rows) and len(rs) > 1  # every comparison of the table
        which = msg(lang, "reason.all", n=len(rs)) if every else "; ".join(_named(r, rows, lang) for r in rs)
        out.append(ReasonGroup(kind=msg(lang, f"reason.{kind}"), text=text, which=which,
                               labels=[r.label for r in rs],
                               line=msg(lang, "reason.covers", kind=msg(lang, f"reason.{kind}"), why=text,
                                        which=which)))
    return out


def _design_note(res: Results | None, lang: str) -> str:
    """One sentence on the design the verdicts rest on: templates and the names' estimand."""
    if res is None or not res.comparisons:
        return ""
    templates = max((c.n_clusters or 0) for c in res.comparisons)
    names = res.names if res.names in ("random", "fixed") else "random"
    return msg(lang, "design.note", templates=templates, names=msg(lang, f"design.names.{names}"),
               estimand=msg(lang, f"estimand.{names}"))


def _figures(data: ReportData, rows: list[VerdictRow], lang: str) -> Figures:
    from fairpair.report import _plots

    out = Figures()
    labels = {r.key: (f"{r.label_a} vs {r.label_b}" if lang == "en" else f"{r.label_a} frente a {r.label_b}")
              + (f" · {r.target}" if len({x.target for x in rows}) > 1 else "") for r in rows}
    by_measure: dict[str, list[VerdictRow]] = {}
    for r in rows:
        by_measure.setdefault(r.measure, []).append(r)
    for i, rs in enumerate(by_measure.values()):
        mlab = rs[0].measure_label
        with_est = [r.result for r in rs if isinstance(r.result.estimate, (int, float))]
        if with_est:
            out.forest.append(_plots.forest_plot(f"forest-{i}", with_est, measure=mlab, lang=lang, labels=labels))
        binary = [r.result for r in rs
                  if r.scale == "binary" and r.result.binary is not None and r.result.binary.b is not None]
        if binary:
            out.discordant.append(_plots.discordant_plot(
                f"discordant-{i}", binary, measure=mlab, lang=lang, labels=labels,
                group_labels={r.key: (r.label_a, r.label_b) for r in rs}))
    by_ma: dict[tuple[str, str], list[Any]] = {}
    for g in data.group_values:
        by_ma.setdefault((g.measure, g.attribute), []).append(g)
    for i, ((m, a), gs) in enumerate(by_ma.items()):
        out.groups.append(_plots.group_plot(f"groups-{i}", gs, measure=measure_label(data.battery, m),
                                               attribute=a, lang=lang))
    blocks = data.results.two_party if data.results is not None else []
    several = len({b.target for b in blocks}) > 1
    level = data.results.confidence_level if data.results is not None else None
    for i, block in enumerate(blocks):
        figs = _plots.heatmap_plots(f"heatmap-{i}", block, lang=lang, show_target=several, level=level)
        d = _plots.dispersion_plot(f"dispersion-{i}", block, lang=lang, show_target=several)
        if d is not None:
            figs.append(d)
        out.two_party.extend(figs)
        out.two_party_blocks.append(figs)
    for i, r in enumerate(_scenario_rows(rows)):
        fig = _plots.scenario_plot(f"scenarios-{i}", r.result, title=_scenario_title(r, lang), lang=lang)
        if fig is not None:
            out.scenarios[r.key] = fig
    return out


#: The report draws at most this many forest plots by scenario (primary comparisons first).
MAX_SCENARIO_FIGURES = 24


def _scenario_rows(rows: list[VerdictRow]) -> list[VerdictRow]:
    """The comparisons shown by scenario: those with more than one scenario or a scenario-level fail,
    primary ones first, then those whose scenarios fail (at most :data:`MAX_SCENARIO_FIGURES`)."""
    have = [(r, sc) for r in rows if (sc := r.result.scenarios) is not None
            and (len(sc.rows) > 1 or any(x.verdict == "fail" for x in sc.rows))]
    have.sort(key=lambda h: (not h[0].primary, not any(x.verdict == "fail" for x in h[1].rows)))
    return [r for r, _sc in have[:MAX_SCENARIO_FIGURES]]


def _scenario_title(r: VerdictRow, lang: str) -> str:
    vs = "vs" if lang == "en" else "frente a"
    return f"{r.measure_label}: {r.label_a} {vs} {r.label_b}" + (f" · {r.target}" if r.target else "")


def _scenario_views(rows: list[VerdictRow], figures: Figures, lang: str) -> list[ScenarioView]:
    from fairpair.report._catalog import scenario_summary

    out = []
    for r in _scenario_rows(rows):
        sc = r.result.scenarios
        if sc is None:  # never: those rows have scenarios
            continue
        share = sc.share_ci or [None, None]
        spread = "" if sc.share is None else msg(
            lang, "scenarios.spread", share=fmt_pct(sc.share, lang), level="95", lo=fmt_pct(share[0], lang),
            hi=fmt_pct(share[1], lang), outliers=", ".join(f"`{o}`" for o in sc.outliers)
            or msg(lang, "scenarios.no_outliers" if sc.outlier_pvalue is not None else "scenarios.no_test"))
        guard = (msg(lang, "scenarios.guard", outliers=", ".join(f"`{o}`" for o in sc.outliers))
                 if sc.heterogeneous and "heterogeneous average" in (r.result.verdict_rule or "") else "")
        out.append(ScenarioView(title=_scenario_title(r, lang), summary=scenario_summary(r.result, lang),
                                spread=spread, guard=guard, figure=figures.scenarios.get(r.key), row=r))
    return out


def _spread_views(rows: list[VerdictRow], lang: str) -> list[SpreadView]:
    """The comparisons with a within-cell spread statistic (results.json ``spread``), primary ones first."""
    out = []
    for r, sp in sorted(((r, sp) for r in rows if (sp := r.result.spread) is not None), key=lambda h: not h[0].primary):
        # a null limit of a defined interval: Fieller's interval is unbounded on that side
        lo, hi = (("0", "∞") if sp.ratio_ci is None and sp.estimate is not None else
                  ("—", "—") if sp.ratio_ci is None else
                  ("0" if sp.ratio_ci[0] is None else fmt_num(sp.ratio_ci[0], lang, 2),
                   "∞" if sp.ratio_ci[1] is None else fmt_num(sp.ratio_ci[1], lang, 2)))
        level = fmt_num(100 * (r.result.confidence_level or 0.95), lang, 0)
        word = verdict_word(sp.verdict, lang)
        why = (msg(lang, "spread.margin", r=fmt_num(sp.max_sd_ratio, lang, 2)) if sp.max_sd_ratio
               else msg(lang, "spread.no_margin"))
        sd = f"{fmt_num(sp.sd_a, lang, 3)} / {fmt_num(sp.sd_b, lang, 3)}"
        line = msg(lang, "spread.line", label=r.label, sd_a=fmt_num(sp.sd_a, lang, 3), sd_b=fmt_num(sp.sd_b, lang, 3),
                   ratio=fmt_num(sp.ratio, lang, 2), level=level, lo=lo, hi=hi, p=fmt_p(sp.pvalue_adjusted, lang),
                   verdict=word, why=why)
        out.append(SpreadView(sd=sd, ratio=fmt_num(sp.ratio, lang, 2), ci=f"{lo} … {hi}", why=why,
                              p_adjusted=fmt_p(sp.pvalue_adjusted, lang), verdict=sp.verdict, verdict_word=word,
                              line=line, row=r))
    return out


def _commands(data: ReportData) -> list[str]:
    battery = data.manifest.get("battery_path") or f"{data.battery_name}.yaml"
    old = str(data.run_dir)
    new = old.rstrip("/") + "-recheck"
    imported = data.manifest.get("import")
    if isinstance(imported, dict):  # answers imported from elsewhere: import the new ones the same way
        return [f"fairpair import-answers NEW_ANSWERS --battery {shlex.quote(str(battery))} "
                f"--format {shlex.quote(str(imported.get('format') or 'auto'))} --out {shlex.quote(new)}",
                f"fairpair compare {shlex.quote(old)} {shlex.quote(new)}"]
    return [f"fairpair run {shlex.quote(str(battery))} --out {shlex.quote(new)}",
            f"fairpair compare {shlex.quote(old)} {shlex.quote(new)}"]


def plan_info(data: ReportData) -> tuple[str | None, str | None, bool]:
    """``(registered plan sha256, executed plan sha256, executed plan differs from the registered one)``,
    from ``results.json`` when the run is analysed, else from the manifest (an edited plan offered later and
    refused does not count: see :func:`plan_edits_refused`)."""
    m, r = data.manifest, data.results
    plan = (r.plan_sha256 if r is not None else None) or m.get("plan_sha256")
    plan_now = (r.plan_sha256_now if r is not None else None) or m.get("plan_sha256_now")
    changed = bool(r.plan_changed if r is not None else m.get("plan_changed_after_registration"))
    return plan, plan_now, changed


def plan_edits_refused(data: ReportData) -> int:
    """How many batteries with an edited analysis plan were offered to the run directory and refused."""
    r, n = data.results, data.manifest.get("plan_edits_refused")
    return max(r.plan_edits_refused if r is not None else 0, n if isinstance(n, int) else 0)


def _provenance(data: ReportData, lang: str) -> list[tuple[str, str]]:
    m, r = data.manifest, data.results
    plan, plan_now, changed = plan_info(data)
    rows = [
        (msg(lang, "prov.battery"), f"{data.battery_name} ({m.get('battery_path', '—')})"),
        (msg(lang, "prov.battery_sha"), str(m.get("battery_sha256") or (r.battery_sha256 if r is not None else None)
                                             or "—")),
        (msg(lang, "prov.plan_sha"), str(plan or "—")),
        (msg(lang, "prov.plan_now"), str(plan_now or "—")),
        (msg(lang, "prov.plan_changed"), msg(lang, "prov.plan_changed.yes" if changed else "prov.plan_changed.no")),
        (msg(lang, "prov.started"), f"{m.get('started_at', '—')} / {m.get('finished_at', '—')}"),
    ]
    refused = plan_edits_refused(data)
    if refused:  # offered and refused: the registered plan stayed the executed one
        rows.insert(5, (msg(lang, "prov.plan_refused"), msg(lang, "prov.plan_refused.n", n=refused)))
    if r is not None:
        rows.append((msg(lang, "prov.analysis"), msg(
            lang, "prov.analysis.value", alpha=fmt_num(r.alpha, lang, 3),
            correction=r.correction, level=fmt_pct(r.confidence_level, lang, 0))
            # the resamples only where a bootstrap made an interval (the two-party designs); the
            # crossed t intervals use none
            + (f"; bootstrap {r.n_resamples}" if r.two_party or any("bootstrap" in (c.ci_method or "")
                                                                     for c in r.comparisons) else "")
            + f"; seed {r.seed}"))
    imp = m.get("import")
    if isinstance(imp, dict):
        rows.append((msg(lang, "prov.import"), f"{imp.get('format', '—')}: {imp.get('source', '—')} "
                     f"({imp.get('rows', '—')} rows), sha256 {imp.get('sha256', '—')}"))
    if m.get("settings"):
        rows.append((msg(lang, "prov.params"), json.dumps(m["settings"], ensure_ascii=False, sort_keys=True)))
    if m.get("packages"):
        rows.append((msg(lang, "prov.packages"), ", ".join(f"{k} {v}" for k, v in sorted(m["packages"].items()))))
    if m.get("git_revision"):
        rows.append((msg(lang, "prov.git"), ", ".join(f"{k}: {v or '—'}" for k, v in m["git_revision"].items())))
    if m.get("selection"):
        rows.append((msg(lang, "prov.selection"), json.dumps(m["selection"], ensure_ascii=False, sort_keys=True)))
    meas = m.get("measurement") or {}
    judge = meas.get("judge") or (r.judge.judge if r is not None else None)
    if judge:
        rows.append((msg(lang, "prov.judge"), json.dumps(judge, ensure_ascii=False, sort_keys=True, default=str)))
    if meas.get("embedders"):
        rows.append((msg(lang, "prov.embedders"), "; ".join(
            f"{k}: {json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)}"
            for k, v in sorted(meas["embedders"].items()))))
    return rows


def _prompt_texts(data: ReportData) -> tuple[list[str], list[str]]:
    """The battery's prompt templates and the judge prompts recorded in the manifest, as display text."""
    m = data.manifest
    templates = []
    for p in (m.get("expansion") or {}).get("prompt_templates") or []:
        pr = p.get("prompt") or {}
        parts = [f"# {', '.join(p.get('templates') or [])}"]
        for key in ("system", "system_file"):
            if pr.get(key):
                parts.append(f"[{key}]\n{pr[key]}")
        for h in pr.get("history") or []:
            parts.append(f"[history: {h.get('role')}]\n{h.get('content')}")
        for i, t in enumerate(pr.get("turns") or [], 1):
            parts.append(f"[turn {i}]\n{t}")
        for i, t in enumerate(pr.get("baseline_turns") or [], 1):
            parts.append(f"[baseline turn {i}]\n{t}")
        templates.append("\n\n".join(parts))
    for name, ident in sorted((m.get("targets") or {}).items()):  # a target's own prompt replaces the templates'
        own = (ident or {}).get("system_prompt") if isinstance(ident, dict) else None
        if isinstance(own, dict) and own.get("text"):
            templates.append(f"# target {name}: its own system prompt, in place of the templates'\n\n"
                             f"[system]\n{own['text']}")
    judge = ["\n\n".join(f"[{x.get('role')}]\n{x.get('content')}" for x in msgs)
             for msgs in (m.get("measurement") or {}).get("judge_prompts") or []]
    return templates, judge


def _measure_kind(data: ReportData, measure: str) -> str | None:
    b = data.battery
    spec = b.measures.get(measure.partition(".")[0]) if b is not None else None
    return spec.kind if spec is not None else None


def _two_party_blocks(data: ReportData, figures: list[list[Any]], lang: str) -> list[TwoPartyView]:
    """Per (target, measure) block of results.json's ``two_party``: figures, tables, the least-changing prompt."""
    out = []
    for i, b in enumerate(data.results.two_party if data.results is not None else []):
        label = measure_label(data.battery, b.measure)
        kind = _measure_kind(data, b.measure)
        show_min = kind is None or kind == "semantic_distance"
        out.append(TwoPartyView(
            title=msg(lang, "two_party.block", measure=label, target=b.target), target=b.target, measure=label,
            kind=kind, figures=figures[i] if i < len(figures) else [],
            dispersion=list(b.dispersion), tests=list(b.dispersion_tests),
            minimum=list(b.minimum) if show_min else [],
            min_note=None if show_min else msg(lang, "two_party.min_skipped", measure=label),
            cells=list(b.cells), note=b.note, block=b))
    return out


def _status_rows(data: ReportData, lang: str) -> list[str]:
    """One line per target: the usable share, the degenerate kinds, and each group's rate of them."""
    from fairpair.report._catalog import fmt_pct

    out = []
    for target, st in (data.results.answer_statuses if data.results is not None else {}).items():
        counts = st.counts
        kinds = ", ".join(f"{n} {_status_word(k, lang, 'plural')}" for k, n in counts.items() if k != "ok") or "—"
        groups = []
        for attr, by in st.by_group.items():
            for g, rates in by.items():
                bad = ", ".join(f"{fmt_pct(r, lang, 0)} {_status_word(k, lang, 'plural')}"
                                for k, r in rates.items() if k != "ok" and r)
                groups.append(f"{group_label(data.battery, attr, g)} {bad or fmt_pct(0, lang, 0)}")
        out.append(msg(lang, "counts.status_row", target=target, usable=fmt_pct(st.usable_share, lang, 0),
                       kinds=kinds, groups="; ".join(groups) or "—"))
    return out


def _drop_text(r: Any, data: ReportData, lang: str) -> str:
    """How many pairs a comparison dropped, of how many, and why (the same pairs feed the test, the
    interval, the charts, the evidence and the per-name table)."""
    why = data.drop_reasons.get(r.key) or {}
    reasons = ", ".join(f"{n} {k}" for k, n in sorted(why.items(), key=lambda kv: -kv[1])) or "—"
    total = (r.n_pairs or 0) + (r.n_dropped or 0)
    def number(key: str, n: int) -> str:  # "1 pares", "se descartaron 1": the noun and verb in n's number
        return msg(lang, f"{key}.{'one' if n == 1 else 'many'}", n=n)

    return msg(lang, "status.dropped", measure=r.measure_label, dropped=number("status.dropped", r.n_dropped),
               total=total, why=reasons, kept=number("status.kept", r.n_pairs or 0))


def _status_warnings(data: ReportData, lang: str) -> list[str]:
    """The sentence the report opens with about answer statuses: a target whose answers are mostly
    degenerate (an answer-status rate that differs between groups is a failing row of the table, named
    by the headline)."""
    res = data.results
    out = []
    for target, st in (res.answer_statuses if res is not None else {}).items():
        if st.mostly_degenerate:
            n = max(int(st.n or 0), 1)
            counts = st.counts
            kinds = ", ".join(f"{v} {k}" for k, v in counts.items() if k != "ok")
            ex = "; ".join(f"{e[0]} [{e[1]}]: \u201c{e[2][:80]}\u201d" for e in st.examples[:2])
            out.append(msg(lang, "status.degenerate", target=target,
                           share=fmt_pct(1 - counts.get("ok", 0) / n, lang, 0), kinds=kinds, examples=ex or "—"))
    return out


def _status_sentence(data: ReportData, c: Any, lang: str) -> str:
    """A failing answer-status comparison in words (its row's sentence; the headline names it)."""
    status = c.measure.partition(".")[2]
    return msg(lang, "status.gap", verb=msg(lang, f"status.verb.{status}"), status=status,
               group_a=group_label(data.battery, c.attribute, c.group_a),
               group_b=group_label(data.battery, c.attribute, c.group_b),
               rate_a=fmt_pct(c.value_a, lang, 0), rate_b=fmt_pct(c.value_b, lang, 0),
               test=c.test, p=fmt_p(c.pvalue_adjusted, lang))


def _aa_rows(res: Results | None, lang: str) -> list[AAControlRow]:
    """The A/A controls (the audit's empirical noise floor), formatted for the outputs."""
    out = []
    for c in res.aa_controls if res is not None else []:
        ci = c.ci
        out.append(AAControlRow(
            measure=c.measure, target=c.target, groups=f"{c.group_a} / {c.group_b}",
            estimate=fmt_num(c.estimate, lang, 3),
            ci="—" if not ci or None in ci else f"[{fmt_num(ci[0], lang, 3)}, {fmt_num(ci[1], lang, 3)}]",
            p=fmt_p(c.pvalue_adjusted, lang), n_pairs=c.n_pairs, verdict=c.verdict,
            verdict_word=verdict_word(c.verdict, lang), result=c))
    return out


def _discovered(res: Results | None, lang: str) -> tuple[str, list[DiscoveredRow]]:
    """The discovered section (``fairpair discover``): its sentence and one row per axis."""
    d = res.discovered if res is not None else None
    if d is None:
        return "", []
    rows = []
    for a in d.axes:
        c = a.confirmation
        ci = c.ci if c is not None else None
        rows.append(DiscoveredRow(
            name=a.name, target=a.target, how=msg(lang, f"disc.how.{a.how}"),
            what=str((a.spec.get("any_of") or [""])[0] if a.how == "words" else a.spec.get("instructions", "")),
            groups=f"{a.group_a} − {a.group_b}", direction=a.direction or "—",
            estimate=fmt_pct(c.estimate, lang) if c is not None and c.estimate is not None else "—",
            ci="—" if not ci or ci[0] is None or ci[1] is None
            else f"[{fmt_num(100 * ci[0], lang, 1)}, {fmt_num(100 * ci[1], lang, 1)}]",
            p=fmt_p(c.pvalue_adjusted if c is not None else None, lang), confirmed=a.confirmed,
            confirmed_word=msg(lang, "disc.yes" if a.confirmed else "disc.no")))
    intro = msg(lang, "disc.intro", passes=", ".join(msg(lang, f"disc.how.{p}") for p in d.passes),
                explore=d.n_answers.get("explore", 0), confirm=d.n_answers.get("confirm", 0), k=len(d.axes),
                confirmed=len(d.confirmed()), fragment=d.fragment or "—")
    return intro, rows


@dataclass(frozen=True)
class ReportModel:
    """The report of a run, built once from its :class:`~fairpair.report.ReportData` by
    :func:`build_model`: HTML, Markdown, the JSON summary and the terminal table all render this
    record, and none of them reads the run again.

    Numbers in ``rows`` are already formatted for ``lang``; ``figures`` holds the SVG figures
    (empty lists when built without them, as for the terminal); ``generated`` is the sentence
    with fairpair's version and the time the model was built (UTC).
    """

    data: ReportData
    lang: str
    title: str
    battery: str
    description: str
    analysed: bool
    run_dir: str
    rows: list[VerdictRow]
    primary_rows: list[VerdictRow]
    secondary_rows: list[VerdictRow]
    overall: str
    overall_text: str
    overall_word: str
    warnings: list[str]
    counts: str
    failing: list[VerdictRow]
    design_note: str
    shared_reasons: list[ReasonGroup]
    marks: list[str]
    notes: list[str]
    omnibus: list[OmnibusResult]
    aa_controls: list[AAControlRow]
    figures: Figures
    two_party_blocks: list[TwoPartyView]
    rankings: list[RankingView]
    prompt_templates: list[str]
    judge_prompts: list[str]
    evidence: list[EvidenceBlock]
    has_fail: bool
    commands: list[str]
    provenance: list[tuple[str, str]]
    targets: list[TargetInfo]
    n_cases: int
    collected: list[CollectedRow]
    exclusions: list[Any]
    dropped: list[DroppedRow]
    answer_statuses: list[str]
    measurement_counts: dict[str, dict[str, int]]
    judge: JudgeBlock | None
    self_test_rows: list[SelfTestRow]
    two_party: list[TwoPartyBlock]
    minimum: list[MinimumIdentity]
    dispersion_tests: list[DispersionTest]
    generated: str
    #: "Where is it?": each comparison's difference scenario by scenario (:class:`ScenarioView`)
    scenarios: list[ScenarioView] = field(default_factory=list)
    #: The run's verdicts are its ranking designs' only (no comparison but the automatic answer-status ones):
    #: the title, the verdicts' introduction and ``ranking_counts`` (fail, pass... over the ratios and pairs)
    #: say so
    ranking_only: bool = False
    ranking_counts: str = ""
    #: The within-cell spread of each comparison that has one (:class:`SpreadView`; secondary)
    spreads: list[SpreadView] = field(default_factory=list)
    #: every comparison of results.json, in its order: ``rows`` and the answer statuses no answer has,
    #: which the tables leave to one line (``marks``); the JSON summary lists them all
    all_rows: list[VerdictRow] = field(default_factory=list)
    #: judge comparisons corrected by human labels: corrected and raw, the judge's error by group
    label_corrections: list[str] = field(default_factory=list)
    #: ``fairpair discover``: the axes found and confirmed, apart from the plan (:class:`DiscoveredRow`)
    discovered: list[DiscoveredRow] = field(default_factory=list)
    discovered_intro: str = ""

    def context(self) -> dict[str, Any]:
        """The model as the templates' context: its fields (but ``data``) and the formatting helpers
        of its language (``t``, ``fmt_num``, ``fmt_p``, ``fmt_pct``, ``fmt_value``, ``fmt_pb``,
        ``fmt_lb``, ``json``, ``csp``)."""
        lang = self.lang
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "data"}
        out.update({
            "t": lambda key, **kw: msg(lang, key, **kw),
            "rt": lambda key, **kw: _ranking_msg(lang, key, **kw),
            "csp": Markup(CSP),
            "fmt_num": lambda x, d=1: fmt_num(x, lang, d),
            "fmt_p": lambda x: fmt_p(x, lang),
            "fmt_p_is": lambda x: fmt_p_is(x, lang),
            "fmt_pct": lambda x: fmt_pct(x, lang),
            "fmt_value": lambda v: _fmt_value(v, lang),
            "fmt_pb": lambda v: _fmt_position_bias(v, lang),
            "fmt_lb": lambda v: msg(lang, "judge.lb", wa=fmt_num(v.mean_words_answer, lang, 1),
                                    wb=fmt_num(v.mean_words_counterpart, lang, 1),
                                    diff=fmt_num(v.mean_difference, lang, 1),
                                    share=fmt_pct(v.share_longer, lang), p=fmt_p(v.pvalue, lang), n=v.n_items),
            "json": lambda o: json.dumps(o, ensure_ascii=False, sort_keys=True, default=str),
        })
        return out


def build_model(data: ReportData, *, with_figures: bool = True) -> ReportModel:
    """The :class:`ReportModel` of a run read once (``with_figures=False``: no SVG figures, for the
    terminal)."""
    lang = data.language
    all_rows = _verdict_rows(data, lang)
    rows, quiet = _without_quiet_statuses(all_rows)
    res = data.results
    incomplete = res.incomplete if res is not None else None
    overall = overall_verdict(rows, ranking_verdicts(data.rankings), incomplete=incomplete is not None) \
        if data.analysed else "none"
    judge = res.judge if res is not None else None
    warnings = list(data.warnings)
    if plan_info(data)[2]:
        warnings.append(msg(lang, "prov.plan_changed.yes"))
    if judge is not None and judge.self_judging:
        warnings.append(msg(lang, "judge.self"))
    # the self-judging sentence of the analysis says what judge.self says: once
    if judge is not None:
        warnings += [str(w) for w in judge.warnings if not (judge.self_judging and str(w).startswith("self-judging:"))]
    warnings = _status_warnings(data, lang) + warnings
    if res is not None and res.aa_flag:
        warnings.append(msg(lang, "aa.flag", detail=str(res.aa_flag)))
    warnings = list(dict.fromkeys(warnings))  # each distinct warning once, however many stages met it
    failing = [r for r in rows if r.verdict == "fail"]
    evidence = [EvidenceBlock(row=r, pairs=data.evidence.get(r.key, [])) for r in failing]
    exclusions = list((data.manifest.get("expansion") or {}).get("exclusions") or [])
    dropped = [DroppedRow(row=r, text=_drop_text(r, data, lang)) for r in rows if r.n_dropped]
    two_party = list(res.two_party) if res is not None else []
    figures = _figures(data, rows, lang) if with_figures else Figures()
    prompt_templates, judge_prompts = _prompt_texts(data)
    overall_text = msg(lang, f"overall.{overall}") if data.analysed else msg(lang, "not_analysed",
                                                                             run=shlex.quote(str(data.run_dir)))
    if data.analysed and not rows and two_party:
        overall_text = msg(lang, "two_party.no_plan")
    if overall == "incomplete run" and incomplete is not None:
        overall_text = incomplete.text(lang)
    named = [r for r in rows if r.verdict == "fail" and (r.primary or r.status)]
    if overall == "fail" and named and all(r.status for r in named) and \
            "fail" not in ranking_verdicts(data.rankings):  # not a pre-registered comparison that fails
        overall_text = msg(lang, "overall.fail.status")
    ranking_fails = _ranking_fails(data.rankings, lang)
    if overall == "fail" and (named or ranking_fails):  # the headline names what fails, statuses and rankings too
        names = [_named_failing(r, rows, lang) for r in named] + ranking_fails
        overall_text += " " + msg(lang, "overall.fail.named", names="; ".join(names))
    ranking_only = bool(data.analysed and data.rankings) and all(r.status for r in rows)
    blocks = _two_party_blocks(data, figures.two_party_blocks, lang)
    return ReportModel(
        data=data,
        lang=lang,
        title=msg(lang, "title.ranking" if ranking_only else "title", battery=data.battery_name),
        battery=data.battery_name,
        description=(data.battery.description if data.battery is not None else None) or "",
        analysed=data.analysed,
        run_dir=str(data.run_dir),
        rows=rows,
        primary_rows=[r for r in rows if r.primary] or rows,
        secondary_rows=[r for r in rows if not r.primary] if any(r.primary for r in rows) else [],
        overall=overall,
        overall_text=overall_text,
        overall_word=verdict_word(overall, lang),
        warnings=warnings,
        counts=verdict_counts(rows, lang),
        failing=named,
        design_note=_design_note(res, lang),
        shared_reasons=shared_reasons(rows, lang),
        marks=[msg(lang, k) for k, on in (("mark.secondary", any(r.mark == "*" for r in rows)),
                                           ("mark.status", any(r.mark == "†" for r in rows) or quiet)) if on]
        + _quiet_status_marks(quiet, lang),
        notes=[translate_note(str(n), lang) for n in (res.notes if res is not None else [])],
        omnibus=list(res.omnibus) if res is not None else [],
        aa_controls=_aa_rows(res, lang),
        figures=figures,
        two_party_blocks=blocks,
        rankings=_ranking_view(data.rankings, lang, data.battery, with_figures=with_figures,
                               evidence=data.ranking_evidence),
        prompt_templates=prompt_templates,
        judge_prompts=judge_prompts,
        evidence=evidence,
        has_fail=bool(failing) or overall == "fail",  # a ranking design's failing pair or ratio too
        commands=_commands(data),
        provenance=_provenance(data, lang),
        targets=data.targets,
        n_cases=data.n_cases,
        collected=data.collected,
        exclusions=exclusions,
        dropped=dropped,
        answer_statuses=_status_rows(data, lang),
        measurement_counts=data.measurement_counts,
        judge=judge,
        self_test_rows=_self_test_rows(judge, lang),
        two_party=two_party,
        minimum=[m for b in blocks for m in b.minimum],
        dispersion_tests=[t for b in two_party for t in b.dispersion_tests],
        generated=msg(lang, "generated", version=__version__,
                      at=datetime.now(UTC).isoformat(timespec="seconds")),
        scenarios=_scenario_views(rows, figures, lang),
        ranking_only=ranking_only,
        ranking_counts=_ranking_counts(ranking_verdicts(data.rankings), lang) if ranking_only else "",
        spreads=_spread_views(rows, lang),
        all_rows=all_rows,
        label_corrections=_label_rows(rows, lang),
        discovered_intro=_discovered(res, lang)[0],
        discovered=_discovered(res, lang)[1],
    )


def build_view(data: ReportData, *, with_figures: bool = True) -> dict[str, Any]:
    """The templates' context of the run's :class:`ReportModel` (:meth:`ReportModel.context`)."""
    return build_model(data, with_figures=with_figures).context()


def report_model(run: Run, *, language: str | None = None, evidence: int = 3,
                 with_figures: bool = True) -> ReportModel:
    """Run -> :class:`ReportModel`: read an open :class:`fairpair.store.Run` once
    (:func:`~fairpair.report._data.read_report_data`) and build the model every output renders."""
    return build_model(read_report_data(run, language=language, evidence=evidence), with_figures=with_figures)


def _self_test_rows(judge: JudgeBlock | None, lang: str) -> list[SelfTestRow]:
    """The judge self-test table (results.json ``judge.self_test``): one row per check."""
    rows: list[SelfTestRow] = []
    for t in judge.self_test if judge is not None else []:
        m, st = str(t.get("measure")), str(t.get("status"))
        status = msg(lang, f"judge.st.{st}") if st in ("passed", "failed", "not_tested", "off") else st
        th = t.get("thresholds") or {}

        def row(check: str, value: Any, threshold: str, ok: bool | None, m: str = m, status: str = status) -> None:
            rows.append(SelfTestRow(measure=m, check=check, value=value, threshold=threshold,
                                    status=status if ok is None
                                    else msg(lang, "judge.st.passed" if ok else "judge.st.failed")))

        if st in ("off", "not_tested"):
            row(str(t.get("reason") or "—"), "—", "—", None)
            continue
        for d, v in (t.get("dimensions") or {}).items():
            rho = v.get("spearman")
            row(msg(lang, "judge.st.rank", dim=d, tau=fmt_num(v.get("kendall"), lang, 2)), fmt_num(rho, lang, 2),
                f"≥ {fmt_num(th.get('min_rank'), lang, 2)}", rho is not None and rho >= th.get("min_rank", 0.5))
        for c in t.get("cross") or []:
            jr = c.get("judge")
            row(msg(lang, "judge.st.cross", a=c.get("a"), b=c.get("b"), anchors=fmt_num(c.get("anchors"), lang, 2)),
                fmt_num(jr, lang, 2), f"≤ {fmt_num(th.get('max_cross'), lang, 2)}",
                jr is None or jr <= th.get("max_cross", 0.9))
        if t.get("identical_share") is not None:
            v = t["identical_share"]
            row(msg(lang, "judge.st.identical"), fmt_pct(v, lang), f"≤ {fmt_pct(th.get('max_identical'), lang)}",
                v <= th.get("max_identical", 0.5))
        if "accuracy" in t:
            for key, name, thk in (("accuracy", "judge.st.accuracy", "min_accuracy"),
                                   ("both_orders", "judge.st.both", "min_both_orders")):
                v = t.get(key)
                row(msg(lang, name), fmt_pct(v, lang), f"≥ {fmt_pct(th.get(thk), lang)}",
                    v is not None and v >= th.get(thk, 0.5))
            row(msg(lang, "judge.st.first"), fmt_pct(t.get("first_share"), lang), "—", None)
    return rows


def _fmt_position_bias(v: Any, lang: str) -> str:
    """A judge's position bias (a :class:`~fairpair.analysis.PositionBias`, or a bare share) in words."""
    if hasattr(v, "share_first"):
        return msg(lang, "judge.pb", first=fmt_pct(v.share_first, lang), p=fmt_p(v.pvalue, lang),
                   cons=fmt_pct(v.consistency, lang), n=v.n_items)
    return fmt_pct(v, lang)


def _fmt_value(v: Any, lang: str) -> str:
    if isinstance(v, bool):
        return {"en": ("no", "yes"), "es": ("no", "sí")}.get(lang, ("no", "yes"))[v]
    if isinstance(v, (int, float)):
        return fmt_num(v, lang, 0 if float(v).is_integer() else 2)
    return "—" if v is None else json.dumps(v, ensure_ascii=False)


def _env(kind: str):
    import jinja2

    loader = jinja2.PackageLoader("fairpair.report", "templates")
    # Every {{ }} is read as fairpair's prose: its code spans (`fairpair analyze RUN`) become <code> or stay
    # Markdown code spans (report._text.code_spans); "verbatim" marks text shown as written (answers, prompts).
    if kind == "html":
        from markupsafe import escape

        env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined,
                                 finalize=lambda x: html_prose(x) if isinstance(x, str) and not hasattr(x, "__html__")
                                 else x, trim_blocks=True, lstrip_blocks=True)
        env.filters["verbatim"] = lambda s: escape(clean(s))
    else:
        env = jinja2.Environment(loader=loader, autoescape=False, undefined=jinja2.StrictUndefined,
                                 finalize=_md_finalize, trim_blocks=True, lstrip_blocks=True)
        env.filters["verbatim"] = lambda s: md_inline(s, code=False)
        env.filters["code"] = md_block
        env.filters["raw"] = lambda s: MdSafe(str(s))
        env.filters["p_is"] = lambda s: p_reads(f"p = {s}")  # a formatted p: "p = 0.04", "p < 0.001"
    return env


def _md_finalize(x: Any) -> str:
    """Every ``{{ }}`` in the Markdown template is escaped unless fairpair built it as Markdown."""
    if isinstance(x, MdSafe):
        return x
    return md_inline("" if x is None else x)


def _atomic_write(path: Path, text: str) -> None:
    atomic_write_text(path, text)


def summary_json(model: ReportModel, files: dict[str, str]) -> dict[str, Any]:
    """The JSON summary (schema ``fairpair.report/1``; see :mod:`fairpair.report`) of a :class:`ReportModel`."""
    data = model.data
    plan, plan_now, changed = plan_info(data)
    return {
        "schema": REPORT_SCHEMA,
        "fairpair_version": __version__,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "language": data.language,
        "run_dir": str(data.run_dir),
        "analysed": data.analysed,
        "battery": {"name": data.battery_name, "sha256": data.manifest.get("battery_sha256"),
                    "plan_sha256": plan, "plan_sha256_now": plan_now, "plan_changed": changed,
                    "plan_edits_refused": plan_edits_refused(data)},
        "overall": model.overall,
        "verdicts": [{
            "id": r.id, "target": r.target, "measure": r.measure, "attribute": r.attribute, "design": r.design,
            "group_a": r.group_a, "group_b": r.group_b, "label_a": clean(r.label_a), "label_b": clean(r.label_b),
            "scale": r.scale, "primary": r.primary, "verdict": r.verdict,
            "estimate": r.result.estimate, "ci": r.result.ci, "margin": r.result.margin,
            "test": r.result.test, "pvalue": r.result.pvalue, "pvalue_adjusted": r.result.pvalue_adjusted,
            "correction": r.result.correction, "n_pairs": r.n_pairs, "n_dropped": r.n_dropped,
            "sentence": r.sentence, "shown": r.verdict, "reasons": list(r.reasons), "reason": r.reason,
            "mark": r.mark,
            "spread": r.result.spread.model_dump() if r.result.spread is not None else None}
            for r in model.all_rows or model.rows],
        "incomplete": (model.data.results.incomplete.model_dump()
                       if model.data.results is not None and model.data.results.incomplete is not None else None),
        "counts": model.ranking_counts or model.counts,
        "reasons": [{"kind": g.kind, "text": g.text, "comparisons": g.labels} for g in model.shared_reasons],
        "targets": [{"name": t.name, "served_models": t.served_models, "system_fingerprints": t.fingerprints,
                     "cases": t.cases, "answered": t.answered, "failed": t.failed, "retried": t.retried,
                     "failure_reasons": {clean(k): v for k, v in t.failure_reasons.items()}} for t in data.targets],
        "self_judging": model.judge is not None and model.judge.self_judging,
        "warnings": [clean(w) for w in model.warnings],
        "files": files,
    }


def write_report(run_dir: Path | str, *, language: str | None = None, out: Path | str | None = None,
                 evidence: int = 3, data: ReportData | None = None,
                 model: ReportModel | None = None) -> dict[str, Path]:
    """Write ``report.html``, ``report.md`` and ``report.json`` for a run.

    Parameters
    ----------
    run_dir:
        A run directory (``store.sqlite``, ``manifest.json``, optionally
        ``results.json``).
    language:
        ``es`` or ``en``; default: the battery's language.
    out:
        Folder for the three files; default ``RUN/report/``. Existing report
        files there are replaced (a report is derived data; the run's store
        is never touched).
    evidence:
        Matched sets quoted per failing comparison (from its ``evidence``
        in results.json, those that go the way of the difference first).
    data:
        The run already read (:func:`~fairpair.report.load_report_data`).
    model:
        The report already built (:func:`build_model`); the run is not read again.

    Returns
    -------
    dict
        ``{"html": Path, "md": Path, "json": Path}``.

    Raises
    ------
    FairpairError
        Not a run directory; unreadable or unknown-schema results; an output
        folder that cannot be written.
    """
    from fairpair.errors import FairpairError

    run_dir = Path(run_dir)
    if model is None:
        model = build_model(data or load_report_data(run_dir, language=language, evidence=evidence))
    view = model.context()
    out_dir = Path(out) if out is not None else run_dir / REPORT_DIR
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FairpairError(f"cannot create the report folder: {exc.strerror}", file=out_dir) from None
    paths = {"html": out_dir / "report.html", "md": out_dir / "report.md", "json": out_dir / "report.json"}
    html = _env("html").get_template("report.html.j2").render(**view)
    md = _env("md").get_template("report.md.j2").render(**view)
    summary = summary_json(model, {k: str(v) for k, v in paths.items()})
    try:
        _atomic_write(paths["html"], html)
        _atomic_write(paths["md"], md)
        _atomic_write(paths["json"], json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n")
    except OSError as exc:
        raise FairpairError(f"cannot write the report: {exc.strerror}", file=out_dir) from None
    return paths
