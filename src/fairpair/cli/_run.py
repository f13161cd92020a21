"""Commands of the run stage: ``run`` (then measure, analyze, report), ``check`` (the preflight alone), ``status``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from fairpair.cli._app import app, console, current_run
from fairpair.cli._common import confirm_cost, confirm_size, load
from fairpair.cli._options import (
    AnalyzeStageOpt,
    AxesOpt,
    BatteryArg,
    ConcurrencyOpt,
    Engine,
    GateOpt,
    IgnoreStatusOpt,
    MaxAttemptsOpt,
    MeasureStageOpt,
    PricesOpt,
    QuietOpt,
    ReportStageOpt,
    RunArg,
    RunYesOpt,
    TargetsOpt,
    TemplatesOpt,
    TimeoutOpt,
    VerboseOpt,
    out_option,
)

if TYPE_CHECKING:
    from fairpair.battery import LoadedBattery


def _per_minute(value: float | None) -> float | None:
    """``--rpm`` / ``--tpm``: a rate above 0 (0 or a negative rate used to mean, silently, no limit at all)."""
    if value is not None and not value > 0:
        raise typer.BadParameter(f"{value:g} is not a rate; give a number above 0, or leave the option out for no "
                                 "limit")
    return value


@app.command()
def run(
    battery: BatteryArg,
    out: Annotated[Path | None, out_option("Run directory (default: runs/<battery>-<time>/). An existing one "
                                              "is resumed.")] = None,
    concurrency: ConcurrencyOpt = 8,
    timeout: TimeoutOpt = 120.0,
    max_attempts: MaxAttemptsOpt = 5,
    rpm: Annotated[float | None, typer.Option(
        callback=_per_minute, help="Requests per minute (> 0): request starts, retries included, are spaced "
        "60/RPM s apart from the first on, so no 60 s window holds more than RPM of them (no initial burst; "
        "at most ceil(RPM/60) a second). Per target; default: no limit.")] = None,
    tpm: Annotated[float | None, typer.Option(
        callback=_per_minute, help="Estimated prompt tokens per minute (> 0): after a request of N tokens the "
        "next starts at least 60*N/TPM s later, so no 60 s window holds more than TPM tokens plus one "
        "request's. Per target; default: no limit.")] = None,
    target: TargetsOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the exact request (method, URL, headers with "
                                          "secrets as ***, body) of one case per template; send nothing.")] = False,
    measure_stage: MeasureStageOpt = True,
    analyze_stage: AnalyzeStageOpt = True,
    report_stage: ReportStageOpt = True,
    gate: GateOpt = False,
    ignore_status: IgnoreStatusOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    preflight: Annotated[bool, typer.Option("--preflight/--no-preflight", help="Send one case first and stop "
                                            "(exit 2) if it fails.")] = True,
    max_consecutive_failures: Annotated[int, typer.Option(min=0, help="Stop (exit 2) after this many cases in a "
                                                          "row fail with the same error; 0 = never.")] = 5,
    batch: Annotated[bool, typer.Option("--batch", help="Send the cases through the provider's batch API "
                                        "(OpenAI's Batch API and compatible ones; about half the price, answers "
                                        "within 24 h) and stop; run the same command again later to fetch them.")]
    = False,
    engine: Annotated[Engine, typer.Option(help="inprocess: asyncio in this process; ray: shard the cases over "
                                           "a Ray actor pool, each actor holding its target (pip install "
                                           "'fairpair[ray]'); this process stays the store's only writer.")
                      ] = Engine.inprocess,
    address: Annotated[str | None, typer.Option(help="Ray cluster for --engine ray: 'auto' (the running "
                                                   "cluster) or ray://HOST:10001; default: a local Ray.")] = None,
    actors: Annotated[int | None, typer.Option(min=1, help="Actors of the Ray pool (default: the free CPUs, "
                                                  "at most --concurrency); --concurrency is shared among them.")
                      ] = None,
    templates: TemplatesOpt = None,
    axes: AxesOpt = None,
    prices: PricesOpt = None,
    yes: RunYesOpt = False,
) -> None:
    """Send every case to the battery's target(s) and store every answer; then measure, analyze, report.

    With --prices (or $FAIRPAIR_PRICES), an audit estimated above the table's confirm_above is asked about
    on a terminal and, without one, stopped (exit 2) unless --yes; `fairpair plan --cost` shows the estimate.
    """
    from fairpair.errors import FairpairError

    if engine is not Engine.ray and (address is not None or actors is not None):
        raise FairpairError("--address and --actors belong to --engine ray", key="--engine",
                            hint="add --engine ray")
    if engine is Engine.ray and batch:
        raise FairpairError("--batch sends through the provider's batch API, not an engine; drop --engine ray",
                            key="--engine")
    if out is not None and str(out) == "." and not (Path.cwd() / "store.sqlite").exists():
        # typer reads --out '' as '.': a run would scatter its files into the current directory
        raise FairpairError("--out names the current directory ('' or '.'), which holds no run", key="--out",
                            hint="give the run directory's name, e.g. --out runs/audit-1 (or leave --out out)")
    if not analyze_stage and gate:
        raise FairpairError("--gate judges the analysis, and --no-analyze skips it", key="--gate",
                            hint="drop --no-analyze, or run `fairpair analyze RUN` and `fairpair gate RUN` later")
    if dry_run and batch:
        raise FairpairError("--dry-run prints the requests one at a time; --batch would send them as one batch "
                            "file, which a dry run does not build", key="--batch",
                            hint="drop --batch to see each request (the batch sends the same bodies)")
    if engine is Engine.ray:
        from fairpair.run import require_ray

        require_ray()  # exit 2 with the install line before anything is loaded
    from fairpair import pipeline
    from fairpair._progress import RunProgress, progress_enabled
    from fairpair.run import RunSettings, default_run_dir, refuse_batch, select_targets

    lb = load(battery, templates, axes)
    specs = select_targets(lb, target)  # a --target the battery lacks: exit 2 before any run directory is named
    if batch:  # a target without a batch API, or tools: refused before a run directory is named or made
        refuse_batch(specs, lb.battery.all_tools())
    if dry_run:
        _dry_run(lb, target)
        return
    confirm_size(lb, yes, "sends")
    confirm_cost(lb, prices, yes, targets=target, batch=batch)
    run_dir = out or default_run_dir(lb)
    calls = RunSettings(concurrency=concurrency, timeout=timeout, max_attempts=max_attempts, rpm=rpm, tpm=tpm,
                        preflight=preflight, max_consecutive_failures=max_consecutive_failures,
                        engine=engine.value, address=address, actors=actors)
    console.print(f"run directory: {escape(str(run_dir))}")
    current_run[:] = [run_dir]
    # on a terminal a bar; off one (CI logs, nohup, a pipe) plain lines on stderr; -q: neither
    with RunProgress(console, enabled=not quiet and console.is_terminal,
                     plain=not quiet and not console.is_terminal) as prog:
        res = pipeline.run(run_dir, pipeline.Settings(battery=lb, calls=calls, targets=tuple(target or ()) or None,
                                                      progress=prog, batch=batch))
    outcome = res.output
    manifest = outcome.manifest
    if outcome.batch is not None:
        for line in outcome.batch.lines():
            console.print(escape(line), soft_wrap=True)
        if outcome.batch.pending:
            again = f"fairpair run {battery} --out {run_dir}"
            console.print(f"the provider answers batches within 24 hours; come back later (any machine with this "
                          f"run directory) and run `{escape(again)}` to fetch and store the answers", soft_wrap=True)
            return
        left = sum(c["failed"] for n, c in manifest.get("counts", {}).items()
                   if n in {b["target"] for b in outcome.batch.ingested})
        if left:
            console.print(f"{left} case(s) have no answer (their errors are stored); "
                          f"`fairpair run {escape(str(battery))} --out {escape(str(run_dir))} --batch` submits them "
                          "again", soft_wrap=True)
    for name, c in manifest.get("counts", {}).items():
        console.print(f"target {escape(name)}: {c['answered']}/{c['cases']} answered, {c['failed']} failed, "
                      f"{c['retried']} retried")
    for w in res.warnings:  # a fleet that mixed model versions, a battery changed since the run began
        console.print(f"[bold yellow]warning:[/bold yellow] {escape(w)}", soft_wrap=True)
    # the report says a degenerate target's warning once, after the verdicts
    _print_answer_statuses(manifest.get("answer_statuses") or {}, warn=verbose or not report_stage)
    _print_failures(run_dir, list(manifest.get("counts", {})))
    with progress_enabled(not quiet):  # -q: no bars in the later stages either
        code = pipeline.after_run(run_dir, lb, console, measure=measure_stage, analyze=analyze_stage,
                                  report=report_stage, gate=gate, verbose=verbose, ignore_status=ignore_status,
                                  judge_calls=RunSettings(engine=engine.value, address=address, actors=actors))
    if code:
        raise typer.Exit(code)


def _print_answer_statuses(statuses: dict, *, warn: bool = True) -> None:
    """One line per target with its usable share and degenerate kinds; a warning with examples when
    most answers are degenerate (see fairpair.measures.status) and ``warn``."""
    from fairpair.measures.status import StatusSummary, degenerate_warning

    for name, js in statuses.items():
        sm = StatusSummary(js["counts"], js["n"], tuple(tuple(e) for e in js.get("examples", ())))
        kinds = ", ".join(f"{n} {s}" for s, n in sm.counts.items() if s != "ok")
        console.print(f"target {escape(name)}: {1 - sm.degenerate_share:.0%} usable answers"
                      + (f" ({escape(kinds)})" if kinds else ""), soft_wrap=True)
        warning = degenerate_warning(name, sm) if warn else None
        if warning:
            console.print(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True)
            for cid, st, text in sm.examples:
                console.print(f"  {escape(cid)} \\[{escape(st)}]: {escape(repr(text))}", soft_wrap=True)


def _print_failures(run_dir: Path, targets: list[str]) -> None:
    """The end-of-run summary: the top error kinds of each target with counts and one example."""
    from fairpair.run import failure_lines, open_run

    with open_run(run_dir, readonly=True) as store:
        lines = failure_lines(store, targets)
    for line in lines:
        console.print(escape(line), soft_wrap=True)


def _dry_run(lb: LoadedBattery, only_targets: list[str] | None = None) -> None:
    """Print the exact request of the first case of each template for each target; send nothing."""
    from fairpair.cases import expand as expand_cases
    from fairpair.run import preview_requests

    for p in preview_requests(lb, only_targets=only_targets):
        console.print(f"[bold]target {escape(p.target)} ({escape(p.kind)}) · template {escape(p.template)} · "
                      f"case {p.case_id}[/bold]" + (f" · turn 1 of {p.turns}" if p.turns > 1 else ""))
        for note in p.notes:
            console.print(f"[yellow]note:[/yellow] {escape(note)}")
        console.file.flush()
        # the request itself goes out unformatted: exactly the bytes that would be sent
        lines = [f"{p.method} {p.url}", *(f"{k}: {v}" for k, v in p.headers.items()), "",
                 p.body.decode("utf-8", errors="backslashreplace"), ""]
        if p.rendered is not None:
            lines += ["--- the prompt as the model reads it (its chat template applied by llama.cpp):",
                      p.rendered, "---", ""]
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
    n = sum(1 for _ in expand_cases(lb))
    targets = ", ".join(f"{k} ({v.kind})" for k, v in lb.battery.target_specs().items()) or "(none)"
    console.print(f"dry run: {n} cases would be sent to each target: {escape(targets)}; nothing was sent")


@app.command()
def check(
    battery: BatteryArg,
    target: TargetsOpt = None,
    timeout: TimeoutOpt = 60.0,
) -> None:
    """Validate the battery and send its first case to each target: the run's preflight, alone.

    Exit 0 when every target answered; 2 with the error when one is unreachable,
    rejects the key or answers in a shape it cannot read. Nothing is stored.
    """
    from fairpair._text import one_line
    from fairpair.run import check_targets

    for c in check_targets(load(battery), only_targets=target, timeout=timeout):
        console.print(f"[green]ok[/green] target {escape(c.name)} ({escape(c.kind)}) answered case "
                      f"{escape(c.case_id[:12])} in {c.seconds:.1f} s: "
                      f"{escape(one_line(c.text, 163))}", soft_wrap=True)


@app.command()
def status(run: RunArg) -> None:
    """Say what a run directory holds: answers, failures by kind with an example, measures, and what is left."""
    from fairpair.run import format_error_summary, run_status

    st = run_status(run)
    console.print(f"run {escape(str(st.run_dir))}: battery [bold]{escape(st.battery)}[/bold]")
    for t in st.targets:
        console.print(f"target {escape(t.name)}: {t.answered}/{t.cases} answered, {t.failed} failed, "
                      f"{t.left} not sent yet")
        for line in format_error_summary(t.errors, total_kinds=t.error_kinds):
            console.print(escape(line), soft_wrap=True)
    for m, c in st.measures.items():
        console.print(f"measure {escape(m)}: {c.get('ok', 0)} measured, "
                      f"{c.get('missing', 0)} missing (no value, final), {c.get('failed', 0)} failed")
    for k, n in st.events.items():
        console.print(f"events: {escape(k)} x {n}")
    for line in st.batches_waiting:
        console.print(f"waiting: {escape(line)}", soft_wrap=True)
    analysis = "results.json unreadable (cut short or damaged)" if st.results_unreadable else \
        "results.json written" if st.analyzed else "not run"
    console.print(f"analysis: {analysis}; "
                  f"report: {'written' if st.reported else 'not written'}")
    if st.todo:
        console.print("left to do:")
        for cmd in st.todo:
            console.print(f"  {escape(cmd)}", soft_wrap=True)
    else:
        console.print("nothing left to do")
