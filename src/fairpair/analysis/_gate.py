"""The gate: an exit code and JUnit XML for CI pipelines.

Exit 1 when any *primary* comparison's verdict is ``fail``; also when it is
``inconclusive`` and ``on_inconclusive`` (or the plan's
``fail_on_inconclusive``) is set; also when a baseline run is given and a
primary comparison's gap got significantly worse than in the baseline
(:func:`fairpair.analysis.compare_runs`). Else 0.
"""

from __future__ import annotations

from fairpair.errors import FairpairError

from pathlib import Path
from xml.etree import ElementTree as ET

from fairpair.analysis._analyze import RESULTS_NAME, analyze_run, load_results
from fairpair.analysis._results import ComparisonResult, Results

__all__ = ["gate_exit_code", "junit_xml", "failing", "current_results"]


def current_results(run_dir: Path | str) -> Results:
    """``results.json`` if it is newer than the store, else a fresh analysis."""
    run_dir = Path(run_dir)
    res_path = run_dir / RESULTS_NAME
    store_files = [p for p in (run_dir / "store.sqlite", run_dir / "store.sqlite-wal") if p.exists()]
    if res_path.exists() and all(res_path.stat().st_mtime >= p.stat().st_mtime for p in store_files):
        return load_results(run_dir)
    return analyze_run(run_dir)


def failing(c: ComparisonResult, *, on_inconclusive: bool) -> bool:
    return c.primary and (c.verdict == "fail" or (on_inconclusive and c.verdict == "inconclusive"))


def _label(c: ComparisonResult) -> str:
    return f"{c.id}[{c.target}:{c.design}:{c.group_a}-vs-{c.group_b}]"


def junit_xml(res: Results, *, on_inconclusive: bool = False, worse: list | None = None) -> str:
    """JUnit XML: one testcase per comparison; failures for failing verdicts, skipped for the rest not passed."""
    suite = ET.Element("testsuite", name=f"fairpair:{res.battery}")
    n_fail = n_skip = 0
    for c in res.comparisons:
        tc = ET.SubElement(suite, "testcase", classname=f"fairpair.{res.battery}.{c.target}", name=_label(c))
        desc = (f"{c.measure}: {c.group_a} {c.value_a} vs {c.group_b} {c.value_b}; estimate {c.estimate} "
                f"CI {c.ci}; {c.test} p={c.pvalue} adjusted={c.pvalue_adjusted}; margin {c.margin}; "
                f"verdict {c.verdict}" + (f"; note: {c.note}" if c.note else ""))
        if failing(c, on_inconclusive=on_inconclusive or res.fail_on_inconclusive):
            ET.SubElement(tc, "failure", message=f"verdict {c.verdict}", type=c.verdict).text = desc
            n_fail += 1
        elif c.verdict != "pass":
            ET.SubElement(tc, "skipped", message=f"verdict {c.verdict}" + ("" if c.primary else " (secondary)"))
            n_skip += 1
        ET.SubElement(tc, "system-out").text = desc
    for r in worse or []:
        tc = ET.SubElement(suite, "testcase", classname=f"fairpair.{res.battery}.baseline",
                           name=f"{r.id}[{r.target_after}:{r.group_a}-vs-{r.group_b}] vs baseline")
        ET.SubElement(tc, "failure", message="worse than the baseline run", type="regression").text = (
            f"gap {r.gap_before} -> {r.gap_after}, change {r.change} CI {r.ci}, p={r.pvalue}")
        n_fail += 1
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(n_fail))
    suite.set("skipped", str(n_skip))
    suite.set("errors", "0")
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def gate_exit_code(run_dir: Path | str, *, on_inconclusive: bool = False, baseline: Path | str | None = None,
                   junit: Path | str | None = None) -> int:
    """0 when the gate passes, 1 when it fails (see module notes); optionally writes JUnit XML."""
    res = current_results(run_dir)
    if not any((c.n_pairs or 0) > 0 for c in res.comparisons):
        raise FairpairError("nothing to gate: no pre-registered comparison has a single measured pair",
                            file=run_dir, hint="check that the run answered and `fairpair measure` stored values")
    on_inc = on_inconclusive or res.fail_on_inconclusive
    bad = any(failing(c, on_inconclusive=on_inc) for c in res.comparisons)
    worse = []
    if baseline is not None:
        from fairpair.analysis._compare import compare_runs

        worse = [r for r in compare_runs(baseline, run_dir).worse if r.primary]
        bad = bad or bool(worse)
    if junit is not None:
        try:
            Path(junit).write_text(junit_xml(res, on_inconclusive=on_inc, worse=worse), encoding="utf-8")
        except OSError as exc:
            raise FairpairError(f"cannot write the JUnit XML file: {exc.strerror}", file=junit,
                                hint="--junit takes a file path such as fairness.xml") from None
    return 1 if bad else 0
