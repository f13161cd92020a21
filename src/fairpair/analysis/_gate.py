"""The gate: an exit code and JUnit XML for CI pipelines.

Exit 1 when any *primary* comparison's verdict is ``fail``, or an automatic
comparison of answer statuses (failed, empty, refused answers between the
groups) fails and ``ignore_status`` is not set (the ranking
designs' verdicts included: every pair of groups on the top pick and on
"ranked above", and every group's four-fifths ratio, read from
``results.json``'s ``rankings``); also when it is
``inconclusive`` and ``on_inconclusive`` (or the plan's
``fail_on_inconclusive``) is set; also when it is ``insufficient design``
and ``on_insufficient`` (or the plan's ``fail_on_insufficient``) is set;
also when a baseline run is given and a primary comparison's gap got
significantly worse than in the baseline
(:func:`fairpair.analysis.compare_runs`; a ranking design's pairs of
groups included, set by set). Else 0.

``insufficient design`` is not a pass: by default the gate lets it through
like ``inconclusive`` (the data cannot tell) but the CLI prints the reason
for each one, and when *no* primary comparison has a verdict at all the gate
refuses to answer (exit 2: there is nothing to gate), as it does when
nothing was measured. An incomplete run is never gated (exit 2, "run
incomplete: ..." before any other reason).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree as ET

from fairpair.analysis._analyze import analyze_run, load_results
from fairpair.errors import FairpairError
from fairpair.records import ComparisonResult, Results

__all__ = ["gate_exit_code", "gate_outcome", "GateOutcome", "gate_lines", "junit_xml", "failing", "verdict_reason",
           "current_results", "RankingRatio", "ranking_pairs", "ranking_ratios"]


def current_results(run_dir: Path | str) -> Results:
    """``results.json`` if it is newer than the store, else a fresh analysis."""
    from fairpair.store import results_current

    run_dir = Path(run_dir)
    if results_current(run_dir):
        return load_results(run_dir)
    return analyze_run(run_dir)


def is_status(c: ComparisonResult) -> bool:
    """An automatic comparison of an answer status (``answer.failed``, ``answer.empty``, ``answer.refused``...)."""
    return c.measure.startswith("answer.")


def failing(c: ComparisonResult, *, on_inconclusive: bool, on_insufficient: bool = False,
            ignore_status: bool = False) -> bool:
    """Whether a comparison fails the gate: primary and fail (or inconclusive / insufficient when asked), or
    an automatic answer-status comparison that fails (unless ``ignore_status``)."""
    if is_status(c):
        return not ignore_status and c.verdict == "fail"
    return c.primary and _fails(c.verdict, on_inconclusive=on_inconclusive, on_insufficient=on_insufficient)


def verdict_reason(c: ComparisonResult) -> str:
    """``; REASON: words`` for a comparison that has a reason (:mod:`fairpair.analysis._why`), else ``""``
    (the end of a gate line and of a pytest item's message)."""
    from fairpair.analysis._why import comparison_reasons, reason_text

    reasons = c.reasons or [r.value for r in comparison_reasons(c)]
    if not reasons:
        return ""
    return f"; {reasons[0]}: {c.reason or reason_text(c, reasons[0])}"


def _fails(verdict: str | None, *, on_inconclusive: bool, on_insufficient: bool) -> bool:
    return verdict == "fail" or (on_inconclusive and verdict == "inconclusive") or \
        (on_insufficient and verdict in ("insufficient design", "insufficient labels"))


@dataclass(frozen=True)
class RankingRatio:
    """One group's four-fifths verdict of a ranking design, as the gate reads it from ``results.json``.

    ``ratio`` is the group's selection rate over the ``reference`` group's
    (:class:`fairpair.records.RankingRatio`), ``ci`` its
    ``confidence_level`` interval, ``pvalue_adjusted`` the Holm-adjusted
    p-value of ``ratio >= 0.8``; ``verdict`` fail / pass / inconclusive /
    insufficient design (``design_reason`` says why).
    """

    target: str
    design: str
    measure: str
    group: str
    reference: str
    ratio: float | None
    ci: tuple | None
    confidence_level: float
    pvalue_adjusted: float | None
    verdict: str
    design_reason: str | None = None

    @property
    def label(self) -> str:
        return f"{self.measure}:four_fifths:{self.group}-over-{self.reference}[{self.target}:{self.design}]"


def ranking_pairs(res: Results) -> list[tuple[str, ComparisonResult]]:
    """The pairwise verdicts of the run's ranking designs: ``(ranking measure, comparison)``.

    Each is a :class:`ComparisonResult` of measure ``top_pick`` or
    ``ranked_above`` (:func:`fairpair.analysis.analyze_ranking`), primary,
    with the verdict rule of every other comparison.
    """
    return [(r.get("measure", ""), ComparisonResult.model_validate(p)) for r in res.rankings
            for p in r.get("pairs") or []]


def ranking_ratios(res: Results) -> list[RankingRatio]:
    """The four-fifths ratio verdicts of the run's ranking designs (rows without a verdict left out)."""
    out = []
    for r in res.rankings:
        for q in r.get("ratios") or []:
            if q.get("verdict") is None:  # a reference group given in the battery: no ratio to judge
                continue
            out.append(RankingRatio(r.get("target", ""), r.get("design", ""), r.get("measure", ""), q["group"],
                                    q.get("reference") or "", q.get("ratio"),
                                    tuple(q["ci"]) if q.get("ci") else None,
                                    float(r.get("confidence_level", res.confidence_level)),
                                    q.get("pvalue_adjusted"), q["verdict"], q.get("design_reason")))
    return out


def _label(c: ComparisonResult, measure: str | None = None) -> str:
    m = f"{measure}:" if measure else ""
    return f"{m}{c.id}[{c.target}:{c.design}:{c.group_a}-vs-{c.group_b}]"


def _testcase(suite, classname: str, name: str, verdict: str, fails: bool, desc: str, secondary: bool = False
              ) -> tuple[int, int]:
    tc = ET.SubElement(suite, "testcase", classname=classname, name=name)
    out = (0, 0)
    if fails:
        ET.SubElement(tc, "failure", message=f"verdict {verdict}", type=verdict).text = desc
        out = (1, 0)
    elif verdict != "pass":
        ET.SubElement(tc, "skipped", message=f"verdict {verdict}" + (" (secondary)" if secondary else ""))
        out = (0, 1)
    ET.SubElement(tc, "system-out").text = desc
    return out


def _desc(c: ComparisonResult) -> str:
    return (f"{c.measure}: {c.group_a} {c.value_a} vs {c.group_b} {c.value_b}; estimate {c.estimate} "
            f"CI {c.ci}; {c.test} p={c.pvalue} adjusted={c.pvalue_adjusted}; margin {c.margin}; "
            f"verdict {c.verdict}; names {c.names}: {c.estimand}"
            + verdict_reason(c) + (f"; note: {c.note}" if c.note else ""))


def junit_xml(res: Results, *, on_inconclusive: bool = False, worse: list | None = None,
              on_insufficient: bool = False, ignore_status: bool = False) -> str:
    """JUnit XML: one testcase per comparison; failures for failing verdicts, skipped for the rest not passed."""
    suite = ET.Element("testsuite", name=f"fairpair:{res.battery}")
    n_fail = n_skip = 0
    on_inc = on_inconclusive or res.fail_on_inconclusive
    on_ins = on_insufficient or res.fail_on_insufficient
    for c in res.comparisons:
        f, k = _testcase(suite, f"fairpair.{res.battery}.{c.target}", _label(c), c.verdict,
                         failing(c, on_inconclusive=on_inc, on_insufficient=on_ins, ignore_status=ignore_status),
                         _desc(c), not c.primary)
        n_fail, n_skip = n_fail + f, n_skip + k
    for m, c in ranking_pairs(res):  # the ranking designs' verdicts (results.json "rankings")
        f, k = _testcase(suite, f"fairpair.{res.battery}.{c.target}.ranking", _label(c, m), c.verdict,
                         failing(c, on_inconclusive=on_inc, on_insufficient=on_ins), _desc(c), not c.primary)
        n_fail, n_skip = n_fail + f, n_skip + k
    for q in ranking_ratios(res):
        desc = (f"selection rate of {q.group} over {q.reference}'s: ratio {q.ratio} CI {q.ci}; Holm-adjusted p of "
                f"ratio >= 0.8 {q.pvalue_adjusted}; verdict {q.verdict}"
                + (f"; why: {q.design_reason}" if q.design_reason else ""))
        f, k = _testcase(suite, f"fairpair.{res.battery}.{q.target}.ranking", q.label, q.verdict,
                         _fails(q.verdict, on_inconclusive=on_inc, on_insufficient=on_ins), desc)
        n_fail, n_skip = n_fail + f, n_skip + k
    for r in worse or []:
        m = f"{r.ranking}:" if r.ranking else ""
        tc = ET.SubElement(suite, "testcase", classname=f"fairpair.{res.battery}.baseline",
                           name=f"{m}{r.id}[{r.target_after}:{r.group_a}-vs-{r.group_b}] vs baseline")
        ET.SubElement(tc, "failure", message="worse than the baseline run", type="regression").text = (
            f"gap {r.gap_before} -> {r.gap_after}, change {r.change} CI {r.ci}, p={r.pvalue}")
        n_fail += 1
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(n_fail))
    suite.set("skipped", str(n_skip))
    suite.set("errors", "0")
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


@dataclass(frozen=True)
class GateOutcome:
    """The gate's decision: ``code`` (0 pass, 1 fail), the ``results`` it judged, the primary
    comparisons that got significantly ``worse`` than the baseline run, ``on_inconclusive`` and
    ``on_insufficient``; ``baseline_notes``: what the comparison with the baseline could not compare
    (a measure stored in one run only, no target in common), to be shown as warnings."""

    code: int
    results: Results
    worse: list
    on_inconclusive: bool
    on_insufficient: bool = False
    baseline_notes: tuple[str, ...] = ()
    ignore_status: bool = False


def _num(x: float | None, binary: bool) -> str:
    if x is None:
        return "n/a"
    return f"{100 * x:+.1f} points" if binary else f"{x:+.3g}"


def _ci(ci, binary: bool) -> str:
    if not ci or None in tuple(ci):
        return "CI n/a"
    lo, hi = ci
    return f"CI {100 * lo:+.1f} to {100 * hi:+.1f}" if binary else f"CI {lo:+.3g} to {hi:+.3g}"


def _p(p: float | None) -> str:
    return "n/a" if p is None else (f"{p:.3g}" if p >= 0.001 else "<0.001")


def _p_is(p: float | None) -> str:
    """``p=0.004``, ``p<0.001`` or ``p=n/a`` (never ``p=<0.001``)."""
    v = _p(p)
    return "p" + v if v.startswith("<") else f"p={v}"


def _mark(verdict: str, fails: bool) -> tuple[str, int]:
    if verdict == "inconclusive" and fails:
        return "FAIL (inconclusive, --on-inconclusive)", 0
    if verdict in ("insufficient design", "insufficient labels") and fails:
        return f"FAIL ({verdict}, --on-insufficient)", 0
    if verdict == "fail":
        return "FAIL", 0
    return verdict, 1


def gate_lines(outcome: GateOutcome) -> list[str]:
    """One line per primary comparison, ranking verdict (pairs of groups, four-fifths ratios) and regression,
    failing ones first, with the numbers: ``FAIL  mock refund magreb vs espana: -33.3 points (95% CI -45.0 to
    -21.7), margin 3.0 points, McNemar (exact) p=0.001, holm-adjusted 0.003, 36 pairs``; a ranking line
    reads ``FAIL  mock ranking seleccion orden ranked_above g2 vs g3: ...`` or ``... orden four-fifths g2:
    selection rate 0.36 of g3's (95% CI 0.13 to 1.00), holm-adjusted p=0.01 against ratio >= 0.8``."""
    res, on_inc = outcome.results, outcome.on_inconclusive
    # the primary comparisons, and the automatic answer-status comparisons that fail (marked "(answer status)")
    prim = [c for c in res.comparisons if c.primary or (is_status(c) and c.verdict == "fail")]
    lines: list[tuple[int, str]] = []
    for c in prim:
        binary = c.scale == "binary"
        fails = failing(c, on_inconclusive=on_inc, on_insufficient=outcome.on_insufficient,
                        ignore_status=outcome.ignore_status)
        mark, rank = _mark(c.verdict, fails)
        if is_status(c):
            mark, rank = ("FAIL" if fails else "fail (answer status, --ignore-status)"), (0 if fails else 1)
        margin = "no margin" if not c.margin else \
            (f"margin {100 * c.margin:.1f} points" if binary else f"margin {c.margin:g}")
        level = f"{100 * c.confidence_level:g}%"
        sc = c.scenarios
        evidence = sc.evidence(c.verdict, binary=binary, level=c.confidence_level) \
            if sc is not None and sc.by_template else ""
        if evidence and sc is not None:  # by template: the deciding scenarios, not the average
            lines.append((rank, f"{mark:12} {c.target} {c.measure} {c.group_a} vs {c.group_b}: by template, "
                                f"decided by {evidence}; {margin}, {c.test}, {c.n_pairs} pairs; the claim is about "
                                f"these scenarios (average over them {_num(sc.average, binary)}, not the verdict's "
                                f"evidence); names {c.names}" + verdict_reason(c)))
            continue
        text = (f"{mark:12} {c.target} {c.measure} {c.group_a} vs {c.group_b}: {_num(c.estimate, binary)} "
                f"({level} {_ci(c.ci, binary)}), {margin}, {c.test} {_p_is(c.pvalue)}"
                + (f", {c.correction}-adjusted {_p(c.pvalue_adjusted)}" if c.correction != "none" else "")
                + f", {c.n_pairs} pairs; names {c.names}: {c.estimand}"
                + (" (automatic comparison of an answer status)" if is_status(c) else "") + verdict_reason(c))
        lines.append((rank, text))
    for m, c in ranking_pairs(res):  # the ranking designs' pairs: the top pick and "ranked above"
        fails = failing(c, on_inconclusive=on_inc, on_insufficient=outcome.on_insufficient)
        mark, rank = _mark(c.verdict, fails)
        binary = c.scale == "binary"
        margin = "no margin" if not c.margin else \
            (f"margin {100 * c.margin:.1f} points" if binary else f"margin {c.margin:g}")
        lines.append((rank, f"{mark:12} {c.target} ranking {c.design} {m} {c.measure} {c.group_a} vs {c.group_b}: "
                            f"{_num(c.estimate, binary)} ({100 * c.confidence_level:g}% {_ci(c.ci, binary)}), "
                            f"{margin}, {c.test} {_p_is(c.pvalue)}"
                            + (f", {c.correction}-adjusted {_p(c.pvalue_adjusted)}" if c.correction != "none" else "")
                            + f", {c.n_pairs} matched sets; names {c.names}" + verdict_reason(c)))
    for q in ranking_ratios(res):  # the four-fifths rule, group by group
        fails = _fails(q.verdict, on_inconclusive=on_inc, on_insufficient=outcome.on_insufficient)
        mark, rank = _mark(q.verdict, fails)
        ratio = "n/a" if q.ratio is None else f"{q.ratio:.2f}"
        ci = "CI n/a" if not q.ci or None in q.ci else f"CI {q.ci[0]:.2f} to {q.ci[1]:.2f}"
        lines.append((rank, f"{mark:12} {q.target} ranking {q.design} {q.measure} four-fifths {q.group}: selection "
                            f"rate {ratio} of {q.reference}'s ({100 * q.confidence_level:g}% {ci}), holm-adjusted "
                            f"{_p_is(q.pvalue_adjusted)} against ratio >= 0.8"
                            + (f"; insufficient design: {q.design_reason}" if q.design_reason else "")))
    for r in outcome.worse:
        binary = r.scale == "binary"
        what = f"ranking {r.design} {r.ranking} {r.measure}" if r.ranking else r.measure
        lines.append((0, f"{'WORSE':12} {r.target_after} {what} {r.group_a} vs {r.group_b}: gap "
                         f"{_num(r.gap_before, binary)} -> {_num(r.gap_after, binary)} than in the baseline, change "
                         f"{_num(r.change, binary)} ({_ci(r.ci, binary)}), {_p_is(r.pvalue)}, {r.n_sets} matched "
                         "sets"))
    return [t for _, t in sorted(lines, key=lambda x: x[0])]


def gate_exit_code(run_dir: Path | str, *, on_inconclusive: bool = False, baseline: Path | str | None = None,
                   junit: Path | str | None = None, on_insufficient: bool = False,
                   ignore_status: bool = False) -> int:
    """0 when the gate passes, 1 when it fails (see module notes); optionally writes JUnit XML to
    ``junit`` (only when the gate decides: never when it raises, so no file reports a gate that erred).

    ``ignore_status``: an automatic answer-status comparison that fails (one group gets more empty,
    refused or failed answers) does not fail the gate.

    Raises
    ------
    FairpairError
        The run is incomplete ("run incomplete: 726 of 2,400 answered; resume with ..."), said before
        any other reason; nothing measured; or no primary comparison has a verdict (all
        ``insufficient design``), ``on_insufficient`` is not set and nothing else fails (an
        answer-status comparison that fails still exits 1).
    """
    return gate_outcome(run_dir, on_inconclusive=on_inconclusive, baseline=baseline, junit=junit,
                        on_insufficient=on_insufficient, ignore_status=ignore_status).code


def gate_outcome(run_dir: Path | str, *, on_inconclusive: bool = False, baseline: Path | str | None = None,
                 junit: Path | str | None = None, on_insufficient: bool = False,
                 ignore_status: bool = False) -> GateOutcome:
    """The gate's decision with what it was made from (see :func:`gate_exit_code`)."""
    res = current_results(run_dir)
    if res.incomplete is not None:  # before any design reason: the verdicts wait for the rest of the answers
        raise FairpairError(f"nothing to gate: {res.incomplete.text()}", file=run_dir,
                            hint=f"run `{res.incomplete.command}`, then gate again")
    pairs = [c for _, c in ranking_pairs(res)]
    ratios = ranking_ratios(res)
    if not any((c.n_pairs or 0) > 0 for c in res.comparisons + pairs):
        raise FairpairError("nothing to gate: no pre-registered comparison (nor ranking design) has a single "
                            "measured pair", file=run_dir,
                            hint="check that the run answered and `fairpair measure` stored values")
    unjudged = [c for c in res.primary() + [c for c in pairs if c.primary] if c.verdict == "no verdict"]
    if unjudged:  # a pre-registered comparison that says nothing is not a pass
        c = unjudged[0]
        more = f" (and {len(unjudged) - 1} more)" if len(unjudged) > 1 else ""
        raise FairpairError(f"nothing to gate for {c.id} [{c.target}: {c.group_a} vs {c.group_b}]: "
                            f"{(c.reasons or ['no verdict'])[0]}{more}", file=run_dir,
                            hint=f"run `fairpair measure {run_dir}` (and check its failures) so that '{c.measure}' "
                                 "has values, then gate again" if "not measured" in c.reasons else None)
    on_inc = on_inconclusive or res.fail_on_inconclusive
    on_ins = on_insufficient or res.fail_on_insufficient
    prim = res.primary() + [c for c in pairs if c.primary]
    bad = any(failing(c, on_inconclusive=on_inc, on_insufficient=on_ins, ignore_status=ignore_status)
              for c in res.comparisons + pairs) or \
        any(_fails(q.verdict, on_inconclusive=on_inc, on_insufficient=on_ins) for q in ratios)
    worse = []
    notes: tuple[str, ...] = ()
    if baseline is not None:
        from fairpair.analysis._compare import compare_runs

        if Path(baseline).resolve() == Path(run_dir).resolve():
            raise FairpairError("--baseline is the run being gated: a run never got worse than itself",
                                file=baseline, hint="give the run directory of an earlier run of this battery")
        cmp = compare_runs(baseline, run_dir)
        why = cmp.nothing_compared(primary=True)
        if why is not None:  # asked for a regression check that checks nothing
            raise FairpairError("--baseline: no primary comparison could be compared with this earlier run ("
                                + why + ")", file=baseline,
                                hint=f"run `fairpair measure {baseline}` if it was not measured, or give a "
                                     "baseline run of the same battery and target")
        worse = [r for r in cmp.worse if r.primary]
        notes = tuple(cmp.notes)
        bad = bad or bool(worse)
    # an answer-status comparison that fails is a finding even when no primary comparison has a verdict
    if prim and not bad and not on_ins and all(c.verdict == "insufficient design" for c in prim) and \
            all(q.verdict == "insufficient design" for q in ratios):
        raise FairpairError("nothing to gate: the design cannot support a verdict for any primary comparison ("
                            + (prim[0].design_reason or "insufficient design") + ")", file=run_dir,
                            hint="enlarge the battery, declare `analysis: {generalize: {names: fixed}}`, or pass "
                                 "--on-insufficient to fail the gate instead")
    # written only once the gate has a verdict: no JUnit file passing a gate that exited 2
    if junit is not None:
        try:
            Path(junit).write_text(junit_xml(res, on_inconclusive=on_inc, worse=worse, on_insufficient=on_ins,
                                             ignore_status=ignore_status), encoding="utf-8")
        except OSError as exc:
            raise FairpairError(f"cannot write the JUnit XML file: {exc.strerror}", file=junit,
                                hint="--junit takes a file path such as fairness.xml") from None
    return GateOutcome(1 if bad else 0, res, worse, on_inc, on_ins, notes, ignore_status)
