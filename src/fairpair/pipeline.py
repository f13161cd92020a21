"""The stages of an audit as functions of a run, and the pipeline as a loop over them.

Each stage is ``stage(run, settings) -> StageResult``: ``run`` is the open
:class:`fairpair.store.Run` (or its directory, which the stage opens for itself
and closes), ``settings`` one :class:`Settings` for every stage, and the
:class:`StageResult` a small frozen record (stage name, counts, warnings,
elapsed seconds, and the stage's own typed result)::

    battery --expand--> cases.jsonl
    battery --run--> RUN (cases, answers) --measure--> measurements --analyze--> results.json --report--> report/

``fairpair run`` and ``fairpair import-answers`` call :func:`after_run`, the
loop over ``measure``, ``analyze`` and ``report`` (each skipped when the
battery does not declare what it needs), then the gate; it opens the run once
to measure (the lock) and once to analyse and report, so the report is built
from the :class:`~fairpair.records.Results` the analysis returned, not from
``results.json`` read back (the file is written all the same). Each stage also has
its own command (``fairpair expand``, ``measure``, ``analyze``, ``report``)
that works on a run directory alone, since the battery is recorded in the
run's store.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

from fairpair._progress import RunProgress
from fairpair.battery import LoadedBattery
from fairpair.errors import FairpairError
from fairpair.records import Results
from fairpair.run import RunSettings
from fairpair.store import Run

if TYPE_CHECKING:
    from rich.console import Console

    from fairpair.cases import Expansion
    from fairpair.measures import MeasureRunResult
    from fairpair.run import RunOutcome

__all__ = ["STAGES", "RunRef", "Settings", "StageResult", "after_run", "analyze", "expand", "measure", "report",
           "run", "run_stages"]

#: What a stage is given: the open run, or its directory (opened by the stage for itself, and closed).
RunRef: TypeAlias = "Run | str | os.PathLike[str]"


@dataclass(frozen=True)
class Settings:
    """What the stages need beside the run directory.

    Attributes
    ----------
    battery : LoadedBattery or None
        The battery (``expand`` and ``run`` need it; the later stages read the one recorded in the run).
    calls : RunSettings
        How ``run`` sends its requests (concurrency, timeout in seconds, attempts, rate limits, preflight).
    judge_calls : RunSettings
        How ``measure`` calls its judge.
    targets : tuple of str or None
        ``run``: only these targets of the battery.
    measures : tuple of str or None
        ``measure``: only these measures.
    language : ``"es"``, ``"en"`` or None
        ``report``: its language (default: the battery's).
    evidence : int >= 0
        ``report``: matched sets quoted per failing comparison.
    report_out : Path or None
        ``report``: the folder for its files (default: ``RUN/report/``).
    console : rich Console or None
        Where the stages print their summaries and progress (None: silent).
    progress : object or None
        ``run``: a progress display (:class:`fairpair._progress.RunProgress`).
    batch : bool
        ``run``: send the cases through the provider's batch API (:mod:`fairpair.run._batch`), and later the
        judge's calls (the run remembers it); ``measure``: send the judge's calls through its provider's
        batch API (:mod:`fairpair.run._batchcalls`).
    analysis_table : bool
        ``analyze``: print the verdicts on ``console``: the verdict table, its reasons and the
        headline, in the battery's language, as ``report`` prints them (the analysis's notes after).
    verdicts : bool
        ``report``: print the verdict table on ``console``.
    summaries : bool
        ``measure``: print its counts table, self-test results and warnings on ``console`` (off when the
        report follows and prints each warning once).
    verbose : bool
        ``report``: print each comparison's sentence under the table too.
    """

    battery: LoadedBattery | None = None
    calls: RunSettings = field(default_factory=RunSettings)
    judge_calls: RunSettings = field(default_factory=RunSettings)
    targets: tuple[str, ...] | None = None
    measures: tuple[str, ...] | None = None
    language: str | None = None
    evidence: int = 3
    report_out: Path | None = None
    console: Console | None = None
    progress: RunProgress | None = None
    batch: bool = False
    analysis_table: bool = True
    verdicts: bool = True
    summaries: bool = True
    verbose: bool = False


#: A stage's own result type (:attr:`StageResult.output`).
OutT = TypeVar("OutT")


@dataclass(frozen=True)
class StageResult(Generic[OutT]):
    """What one stage did; ``StageResult[T]``, ``T`` the stage's own result type.

    Attributes
    ----------
    stage : str
        ``expand``, ``run``, ``measure``, ``analyze`` or ``report``.
    counts : Mapping[str, int]
        The stage's counts (``cases``; ``answered``/``failed``/``retried``; ``ok``/``missing``/``failed``;
        ``comparisons`` and one count per verdict; ``files``).
    warnings : tuple of str
        Warnings the stage raised (printed by the caller).
    elapsed : float
        Wall-clock seconds the stage took.
    output : T
        The stage's own typed result (keyword-only): the :class:`~fairpair.cases.Expansion`, the
        :class:`~fairpair.run.RunOutcome`, the :class:`~fairpair.measures.MeasureRunResult`, the
        :class:`~fairpair.analysis.Results`, or the report's ``{"html": Path, "md": Path, "json": Path}``.
    """

    stage: str
    counts: Mapping[str, int]
    warnings: tuple[str, ...] = ()
    elapsed: float = 0.0
    output: OutT = field(kw_only=True)


def _path(run_ref: RunRef) -> Path:
    """The directory of a run given open or as its path."""
    return run_ref.path if isinstance(run_ref, Run) else Path(run_ref)


def _battery(settings: Settings, stage: str) -> LoadedBattery:
    if settings.battery is None:
        raise FairpairError(f"the {stage} stage needs the battery (Settings.battery)")
    return settings.battery


# ---------------------------------------------------------------- the stages


def expand(dest: RunRef, settings: Settings) -> StageResult[Expansion]:
    """Write every case of ``settings.battery`` to ``dest`` (JSON lines; an open run: its ``cases.jsonl``) and
    the expansion manifest beside it (``<dest stem>.manifest.json``).

    Raises
    ------
    FairpairError
        ``dest`` is a folder, its folder does not exist, ``dest`` exists and is not an earlier expansion
        (no ``<dest stem>.manifest.json`` beside it: never overwritten), or a file cannot be written.
    """
    from fairpair.cases import write_cases

    t0 = time.monotonic()
    lb = _battery(settings, "expand")
    out = dest.path / "cases.jsonl" if isinstance(dest, Run) else Path(dest)
    if out.is_dir():
        raise FairpairError("is a directory; give a file name such as cases.jsonl", file=out)
    if not out.parent.is_dir():
        raise FairpairError("the output folder does not exist; create it first or choose another -o",
                            file=out.parent)
    manifest = out.with_name(out.stem + ".manifest.json")
    if out.exists() and not manifest.exists():  # not an earlier expansion (which it would replace, identically)
        raise FairpairError("already exists and is not an earlier `fairpair expand` output (no "
                            f"{manifest.name} beside it); it is never overwritten", file=out,
                            hint="give another -o, such as cases.jsonl")
    try:
        exp = write_cases(lb, out)
        manifest.write_text(json.dumps(exp.manifest(), indent=2, ensure_ascii=False, sort_keys=True) + "\n",
                            encoding="utf-8")
    except OSError as exc:
        raise FairpairError(f"cannot write the cases: {exc.strerror}", file=exc.filename or out) from None
    return StageResult("expand", {"cases": exp.total, "excluded": sum(e["count"] for e in exp.exclusions)},
                       elapsed=time.monotonic() - t0, output=exp)


def run(run_ref: RunRef, settings: Settings) -> StageResult[RunOutcome]:
    """Send every case of ``settings.battery`` to its targets and store every answer in the run (resumable;
    a directory is created if absent; an open run must be open for writing).

    Counts are summed over the targets: ``cases`` (per target), ``answered``, ``failed``, ``retried``,
    ``cases_added`` (cases a resumed run added because the battery changed, with a warning). With
    ``settings.batch`` (or batches already recorded), the output's ``batch`` says what was submitted,
    is pending or was ingested.

    Raises
    ------
    FairpairError
        See :func:`fairpair.run.execute_run` (no target, unknown target, a failing preflight, ...).
    """
    from fairpair.measures import check_self_judging
    from fairpair.run import execute_run, select_targets

    t0 = time.monotonic()
    lb = _battery(settings, "run")
    only = list(settings.targets) if settings.targets else None
    # before anything is sent: the measure stage would refuse it after the run
    check_self_judging(lb, select_targets(lb, only))
    outcome = execute_run(lb, run_ref if isinstance(run_ref, Run) else Path(run_ref), settings.calls, only_targets=only,
                          progress=settings.progress, batch=settings.batch)
    per = outcome.manifest.get("counts", {})
    counts = {k: sum(c[k] for c in per.values()) for k in ("answered", "failed", "retried")}
    counts["cases"] = next(iter(per.values()))["cases"] if per else 0
    counts["cases_added"] = outcome.cases_added
    warnings = list(outcome.warnings)  # a fleet that mixed model versions...
    if outcome.cases_added:
        warnings.append(f"the battery changed since this run directory was started: {outcome.cases_added} new "
                        f"cases were added beside the {counts['cases'] - outcome.cases_added} stored before "
                        "(recorded as battery_changed); use a new --out for a clean run")
    return StageResult("run", counts, tuple(warnings), time.monotonic() - t0, output=outcome)


def measure(run_ref: RunRef, settings: Settings) -> StageResult[MeasureRunResult]:
    """Measure every stored answer of the run (resumable: stored measurements are kept; an open run must be
    open for writing).

    Counts are summed over the measures: ``ok``, ``missing``, ``failed``, ``skipped``, and ``waiting``
    (answers whose judge calls are in a provider batch) when there are any.

    Raises
    ------
    FairpairError
        See :func:`fairpair.measures.measure_run`.
    """
    from fairpair.measures import measure_run  # looked up in the package at each call (tests swap it there)

    t0 = time.monotonic()
    res = measure_run(run_ref if isinstance(run_ref, Run) else Path(run_ref), console=settings.console,
                      measures=list(settings.measures) if settings.measures else None,
                      settings=settings.judge_calls, summary=settings.summaries, batch=settings.batch)
    counts = {k: sum(getattr(c, k) for c in res.counts.values()) for k in ("ok", "missing", "failed", "skipped")}
    waiting = sum(c.waiting for c in res.counts.values())
    if waiting:  # answers whose judge calls are in a provider batch
        counts["waiting"] = waiting
    return StageResult("measure", counts, tuple(res.warnings), time.monotonic() - t0, output=res)


def analyze(run_ref: RunRef, settings: Settings) -> StageResult[Results]:
    """Execute the run's pre-registered analysis plan and write ``RUN/results.json``; an open run's
    :meth:`~fairpair.store.Run.results` is then the returned record (a later stage is given it as it is).

    Counts: ``comparisons`` and one count per verdict (``pass``, ``fail``, ``inconclusive``,
    ``insufficient design``).

    Raises
    ------
    FairpairError
        See :func:`fairpair.analysis.analyze_run`.
    """
    from fairpair.analysis import analyze_run

    t0 = time.monotonic()
    with Run.opened(run_ref, "r", migrate=True) as opened:  # read-only; an older store migrated first
        from fairpair._progress import plain_stage

        with plain_stage(settings.console, "analysing the pre-registered comparisons"):  # off a terminal
            res = analyze_run(opened, console=None, progress_console=settings.console)
        if settings.console is not None and settings.analysis_table:
            _print_analysis(settings.console, opened, res, settings)
    counts = {"comparisons": len(res.comparisons)}
    for c in res.comparisons:
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
    return StageResult("analyze", counts, tuple(res.notes), time.monotonic() - t0, output=res)


def _print_analysis(console: Console, run: Run, res: Results, settings: Settings) -> None:
    """The analysis's verdicts in the words of the report (one language per run: the battery's, or
    ``settings.language``; an A/A control that fails is among its warnings), then the analysis's notes
    (stage lines, English)."""
    from rich.markup import escape

    from fairpair.report import print_verdicts, report_model

    if res.comparisons or res.rankings or res.incomplete is not None:
        model = report_model(run, language=settings.language, with_figures=False)
        print_verdicts(console, model=model, verbose=settings.verbose)
    for n in dict.fromkeys(res.notes):
        console.print(f"note: {escape(n)}", soft_wrap=True)


def report(run_ref: RunRef, settings: Settings) -> StageResult[dict[str, Path]]:
    """Write the HTML, Markdown and JSON report of the run (and print its verdicts if ``settings.verdicts``).

    The run is read once (through ``run_ref`` when it is an open :class:`fairpair.store.Run`, else
    opened read-only here) into one :class:`~fairpair.report.ReportModel`; the files and the
    terminal table are rendered from that model, and none of them opens the run again. A run the
    analysis wrote its results through gives them as they are (``results.json`` is not read back).

    Raises
    ------
    FairpairError
        See :func:`fairpair.report.load_report_data` (no run, an unknown language, ...).
    """
    from fairpair._progress import stage_status
    from fairpair.report import print_verdicts, report_model, write_report

    t0 = time.monotonic()
    with stage_status(settings.console, "writing the report..."):  # the run is read once, one model built
        with Run.opened(run_ref, "r", lenient_text=True) as opened:
            model = report_model(opened, language=settings.language, evidence=settings.evidence)
        paths = write_report(_path(run_ref), out=settings.report_out, model=model)
    if settings.verdicts and settings.console is not None:
        print_verdicts(settings.console, model=model, verbose=settings.verbose)
    return StageResult("report", {"files": len(paths)}, elapsed=time.monotonic() - t0, output=paths)


#: The stages by name, in the order of the pipeline.
STAGES: dict[str, Callable[[RunRef, Settings], StageResult[Any]]] = {
    "expand": expand, "run": run, "measure": measure, "analyze": analyze, "report": report}


def run_stages(run_ref: RunRef, names: Iterable[str], settings: Settings) -> list[StageResult[Any]]:
    """Run the named stages on ``run_ref`` in turn; returns their results.

    Raises
    ------
    FairpairError
        An unknown stage name, or the first stage that fails.
    """
    names = list(names)
    unknown = [n for n in names if n not in STAGES]
    if unknown:
        raise FairpairError(f"unknown stage(s) {unknown}; the stages are {list(STAGES)}")
    return [STAGES[n](run_ref, settings) for n in names]


def _unmeasured(run_dir: RunRef, measures: list[str]) -> tuple[dict[str, int], int]:
    """Per declared measure, the answers with no ``ok`` or ``missing`` row (only those left), and the answers."""
    from fairpair.run import run_status

    st = run_status(_path(run_dir))
    answered = sum(t.answered for t in st.targets)
    left = {m: answered - st.measured(m) for m in measures}
    return {m: n for m, n in left.items() if n > 0}, answered


def after_run(run_dir: RunRef, loaded: LoadedBattery, console: Console | None, *, measure: bool = True,
              analyze: bool = True, report: bool = True, gate: bool = False, judge_calls: RunSettings | None = None,
              verbose: bool = False, ignore_status: bool = False) -> int:
    """Run the later stages on ``run_dir``; returns the exit code for ``--gate`` (0 = pass).

    ``measure`` runs when the battery declares measures; ``analyze`` when it also has comparisons or a
    two-party design (analysed without a plan: cells, dispersion, least-changing prompt); ``report``
    always (when asked). With the report, the analysis prints no table: the report prints the verdicts
    in plain words. The run is opened once to measure (for writing) and once to analyse and report
    (read-only): the report is built from the analysis's :class:`~fairpair.records.Results` as
    returned. ``judge_calls``: how ``measure`` calls its judge (``fairpair run --engine ray`` passes its
    engine, so the judge's calls and the embeddings run on Ray too); default :class:`RunSettings()`.

    Without ``measure`` (``--no-measure``), when the battery declares measures and no answer has a
    measurement yet (none stored, none imported), neither ``analyze`` nor ``report`` runs: their files
    would hold no measure, only "insufficient design" for every comparison. The console says so and
    names the commands to run later. When some answers are measured and others not, both run on the
    measured ones and the console says, per measure, how many answers are left.

    Raises
    ------
    FairpairError
        ``gate`` was asked for a battery without an analysis plan, or with ``measure`` off and nothing
        measured.
    """
    b = loaded.battery
    # a two-party design (cells, dispersion, least-changing prompt) and a ranking design (selection
    # rates, position effect) are analysed without a plan
    unplanned = any(getattr(d, "analysed_without_plan", False) for d in b.designs)
    if not measure and b.measures and (analyze or report or gate):
        left, answered = _unmeasured(run_dir, list(b.measures))
        if len(left) == len(b.measures) and all(n == answered for n in left.values()):
            where = _path(run_dir)
            if console is not None:
                console.print(f"--no-measure: none of the {answered} answers is measured; results.json and the "
                              "report are not written (they would hold no measure). Later: "
                              f"fairpair measure {where}, then fairpair analyze {where} and fairpair report "
                              f"{where}", soft_wrap=True)
            if gate:
                raise FairpairError("--gate with --no-measure: no answer is measured, there is nothing to gate",
                                    file=where, hint=f"run `fairpair measure {where}`, then `fairpair gate {where}`")
            return 0
        for m, n in left.items():
            if console is not None:
                console.print(f"--no-measure: measure {m}: {n} of {answered} answers not measured; the results "
                              f"and the report cover the measured ones only (fairpair measure {_path(run_dir)} "
                              "measures the rest)", soft_wrap=True)
    analyzed = analyze and bool(b.measures) and (bool(b.analysis.comparisons) or unplanned)
    ranked = bool(b.ranking_designs())
    names = [n for n, on in (("measure", measure and bool(b.measures)), ("analyze", analyzed), ("report", report))
             if on]
    verdicts = analyzed and (bool(b.analysis.comparisons) or ranked)
    settings = Settings(battery=loaded, console=console, analysis_table=not report,
                        judge_calls=judge_calls or RunSettings(), verbose=verbose,
                        summaries=verbose or not (report and verdicts),  # the report prints each warning once
                        verdicts=verdicts)  # verdicts and ranking tables
    if "measure" in names:
        result = STAGES["measure"](run_dir, settings)
        batch = getattr(result.output, "batch", None)
        if batch is not None and console is not None:
            for line in batch.lines():
                console.print(line, soft_wrap=True, markup=False)
        if batch is not None and (batch.pending or result.counts.get("waiting")):
            if console is not None:  # the analysis waits for every judge answer
                console.print(f"the judge's batches are not all in ({result.counts.get('waiting', 0)} answers wait); "
                              f"come back later: `fairpair run` with the same --out fetches them, then analyses "
                              "and reports", soft_wrap=True)
            if gate:  # a gate that passed while the judge's answers wait would pass nothing
                raise FairpairError("--gate: the judge's batches are not all in, so there is nothing to gate yet",
                                    file=_path(run_dir), hint="run the same command again once the provider has "
                                                              "answered (fairpair status shows what it waits for)")
            return 0
    later = [n for n in names if n != "measure"]
    if later:  # one read of the run for both: the report takes the Results the analysis wrote through it
        with Run.opened(run_dir, "r", migrate="analyze" in later, lenient_text="analyze" not in later) as opened:
            for name in later:
                result = STAGES[name](opened, settings)
                if result.stage == "report" and console is not None:
                    console.print(f"report: {result.output['html']}", soft_wrap=True)
    if gate:
        if not (analyzed and (b.analysis.comparisons or ranked)):  # a ranking design's verdicts are gated too
            raise FairpairError("--gate needs measures and an analysis plan with comparisons (or a ranking "
                                "design) in the battery",
                                file=loaded.path, key="analysis.comparisons")
        from fairpair.analysis import gate_exit_code

        return gate_exit_code(_path(run_dir), ignore_status=ignore_status)
    return 0
