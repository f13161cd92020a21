"""The ``fairpair`` command line (typer + rich).

Every failure fairpair understands is a :class:`~fairpair.errors.FairpairError`:
printed as one message with file, line and key, exit code 2, no traceback.
Set ``FAIRPAIR_DEBUG=1`` to see tracebacks of unexpected errors.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fairpair.errors import FairpairError

app = typer.Typer(
    name="fairpair",
    help="Counterfactual, paired audits of LLM chatbots for unequal treatment.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

def _version(value: bool) -> None:
    if value:
        from fairpair import __version__

        console.print(f"fairpair {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Counterfactual, paired audits of LLM chatbots for unequal treatment."""


BatteryArg = Annotated[Path, typer.Argument(help="Battery YAML file.", show_default=False)]
RunArg = Annotated[Path, typer.Argument(help="Run directory (written by `fairpair run`).", show_default=False)]
TemplatesOpt = Annotated[Optional[str], typer.Option(
    "--templates", help="Only templates (scenes) whose id or meta value matches these comma-separated glob "
    "patterns, e.g. 'work-*'.")]
AxesOpt = Annotated[Optional[str], typer.Option(
    "--axes", help="Only these comma-separated attributes / two-party axes, e.g. 'age,race'.")]


def _load(path: Path, templates: str | None = None, axes: str | None = None):
    from fairpair.battery import load_battery, select

    def split(v: str | None) -> list[str] | None:
        return [x.strip() for x in v.split(",") if x.strip()] if v else None

    return select(load_battery(path), templates=split(templates), axes=split(axes))


#: Above this many requests (conversations x turns x targets), ``run`` and ``expand`` ask for ``--yes``.
CONFIRM_REQUESTS = 100_000
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help=f"Proceed without asking when the battery is large "
                                      f"(over {CONFIRM_REQUESTS:,} requests).")]


def _confirm_size(lb, yes: bool, what: str) -> None:
    """Stop a very large battery before it is sent or written, unless ``--yes`` (or a yes on a terminal).

    Raises
    ------
    FairpairError
        Over :data:`CONFIRM_REQUESTS` requests, no ``--yes``, and no terminal to ask on (or a no).
    """
    if yes:
        return
    from fairpair.cases import plan as make_plan

    p = make_plan(lb)  # arithmetic in the repetitions: one repetition is expanded
    if p.requests <= CONFIRM_REQUESTS:
        return
    size = (f"{p.conversations:,} conversations per target, {p.requests:,} requests, about "
            f"{p.prompt_tokens:,} prompt tokens (estimate)")
    if sys.stdin.isatty() and sys.stdout.isatty():
        if typer.confirm(f"this battery {what} {size}; continue?", default=False):
            return
        raise FairpairError(f"stopped: the battery {what} {size}", file=lb.path)
    raise FairpairError(f"this battery {what} {size}; pass --yes to proceed", file=lb.path,
                        hint="`fairpair plan BATTERY` shows the sizes; lower 'repetitions' or select templates "
                             "with --templates")


@app.command()
def validate(battery: BatteryArg) -> None:
    """Check a battery file: schema, signals, slots, designs, targets, measures and plan."""
    lb = _load(battery)
    b = lb.battery
    console.print(f"[green]ok[/green] {escape(str(battery))}: battery '{escape(b.name)}' "
                  f"(schema {b.schema_version}), {len(b.templates)} templates, "
                  f"{len(b.attributes)} attributes, {len(b.designs)} designs, sha256 {lb.sha256[:12]}")
    _warn_ambiguous_names(b)
    _design_warnings(lb)


def _design_warnings(lb, p=None) -> None:
    """Print, before anything is sent, the comparisons whose design cannot support a verdict."""
    from fairpair.analysis._design import plan_warnings
    from fairpair.cases import plan as make_plan

    for w in plan_warnings(lb, p if p is not None else make_plan(lb)):
        console.print(f"[magenta]warning:[/magenta] {escape(w)}")


def _warn_ambiguous_names(b) -> None:
    """Warn about variants (or parts of names) that are common words of the battery's language: the
    masker blinds them only where they are used as names, so the judge may see them elsewhere."""
    from fairpair.measures._runner import masker_for

    try:
        ambiguous = masker_for(b).ambiguous
    except ValueError:
        return  # the measure stage reports a masking error with its key
    if ambiguous:
        console.print(f"[yellow]warning:[/yellow] variant(s) {', '.join(map(escape, ambiguous))} are (or contain) "
                      f"common words of '{escape(b.language)}': they are masked only where used as a name "
                      "(after a title or greeting, or capitalised mid-sentence); prefer unambiguous variants",
                      soft_wrap=True)


@app.command()
def plan(
    battery: BatteryArg,
    power: Annotated[bool, typer.Option("--power", help="Add power planning: smallest detectable differences.")] = False,
    from_run: Annotated[Optional[Path], typer.Option("--from", help="With --power: take the variance components "
                                                     "from this pilot or earlier run directory.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    templates: TemplatesOpt = None,
    axes: AxesOpt = None,
) -> None:
    """Print the design size: templates, variants, repetitions, conversations, pairs, comparisons, tokens."""
    from fairpair.cases import plan as make_plan

    lb = _load(battery, templates, axes)
    p = make_plan(lb)
    data = p.as_dict()
    if from_run is not None and not power:
        raise FairpairError("--from RUN only works with --power (it gives the power planning its variance components)")
    from fairpair.analysis._design import plan_warnings

    data["design_warnings"] = plan_warnings(lb, p)
    if power:
        from fairpair.analysis.power import components_from_run, power_plan

        comps = components_from_run(from_run) if from_run is not None else None
        data["power"] = power_plan(lb, p, components=comps)
    if as_json:
        console.print_json(json.dumps(data, ensure_ascii=False))
        return
    console.print(f"battery [bold]{escape(p.battery)}[/bold]: {p.templates} templates, "
                  f"{p.repetitions} repetitions, {len(p.measures)} measures")
    labels = [("kind", "kind"), ("attribute", "attribute"), ("templates", "templates"),
              ("repetitions", "repetitions"), ("groups", "groups"), ("variants_per_group", "variants per group"),
              ("cells", "cells"), ("cells_per_axis", "cells per axis"),
              ("conditions_per_template", "conditions per template"), ("cases", "conversations"),
              ("matched_sets", "matched sets"), ("pairs", "matched pairs per comparison"),
              ("comparisons", "comparisons per measure")]
    for did, s in p.designs.items():
        t = Table(title=f"design {escape(did)}", show_header=False, title_justify="left")
        for key, label in labels:
            if key in s:
                v = s[key]
                t.add_row(label, escape(", ".join(f"{k}: {x}" for k, x in v.items()) if isinstance(v, dict) else str(v)))
        console.print(t)
    console.print(f"conversations: [bold]{p.conversations}[/bold] per target; targets: {p.targets}; "
                  f"requests: {p.requests}; prompt tokens (estimate, chars/4): {p.prompt_tokens:,}")
    for e in p.exclusions:
        console.print(f"excluded in {escape(e['design'])}: {escape(e['reason'])} ({e['count']})")
    _design_warnings(lb, p)
    if power:
        _print_power(data["power"])


def _print_power(pw: dict) -> None:
    for line in pw.get("lines", []):
        console.print(escape(line))


@app.command()
def expand(
    battery: BatteryArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write cases.jsonl.")] = Path("cases.jsonl"),
    templates: TemplatesOpt = None,
    axes: AxesOpt = None,
    yes: YesOpt = False,
) -> None:
    """Write every generated case (one JSON per line) and its expansion manifest."""
    from fairpair.cases import write_cases

    lb = _load(battery, templates, axes)
    _confirm_size(lb, yes, "expands to")
    if output.is_dir():
        raise FairpairError("is a directory; give a file name such as cases.jsonl", file=output)
    if not output.parent.is_dir():
        raise FairpairError("the output folder does not exist; create it first or choose another -o",
                            file=output.parent)
    manifest = output.with_name(output.stem + ".manifest.json")
    try:
        exp = write_cases(lb, output)
        manifest.write_text(json.dumps(exp.manifest(), indent=2, ensure_ascii=False, sort_keys=True) + "\n",
                            encoding="utf-8")
    except OSError as exc:
        raise FairpairError(f"cannot write the cases: {exc.strerror}", file=exc.filename or output) from None
    console.print(f"wrote {exp.total} cases to {escape(str(output))} (manifest: {escape(str(manifest))})")
    for e in exp.exclusions:
        console.print(f"excluded in {escape(e['design'])}: {escape(e['reason'])} ({e['count']})")


@app.command()
def run(
    battery: BatteryArg,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Run directory (default: runs/<battery>-<time>/). "
                                                "An existing one is resumed.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Parallel requests per target.")] = 8,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds per request.")] = 120.0,
    max_attempts: Annotated[int, typer.Option(min=1, help="Tries per case before it is stored as failed.")] = 5,
    rpm: Annotated[Optional[float], typer.Option(help="Requests per minute limit.")] = None,
    tpm: Annotated[Optional[float], typer.Option(help="Prompt tokens per minute limit (estimated).")] = None,
    target: Annotated[Optional[list[str]], typer.Option("--target", help="Run only these targets.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the exact request (method, URL, headers with "
                                          "secrets as ***, body) of one case per template; send nothing.")] = False,
    measure_stage: Annotated[bool, typer.Option("--measure/--no-measure", help="Measure the answers after the run.")] = True,
    analyze_stage: Annotated[bool, typer.Option("--analyze/--no-analyze", help="Run the analysis plan after measuring.")] = True,
    report_stage: Annotated[bool, typer.Option("--report/--no-report", help="Write the report at the end.")] = True,
    gate: Annotated[bool, typer.Option("--gate", help="Exit 1 when a pre-registered comparison fails.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    preflight: Annotated[bool, typer.Option("--preflight/--no-preflight", help="Send one case first and stop "
                                            "(exit 2) if it fails.")] = True,
    max_consecutive_failures: Annotated[int, typer.Option(min=0, help="Stop (exit 2) after this many cases in a "
                                                          "row fail with the same error; 0 = never.")] = 5,
    batch: Annotated[bool, typer.Option("--batch", help="Send the cases through the provider's batch API "
                                        "(OpenAI's Batch API and compatible ones; about half the price, answers "
                                        "within 24 h) and stop; run the same command again later to fetch them.")] = False,
    templates: TemplatesOpt = None,
    axes: AxesOpt = None,
    yes: YesOpt = False,
) -> None:
    """Send every case to the battery's target(s) and store every answer; then measure, analyze, report."""
    from fairpair.run import RunSettings, default_run_dir, execute_run

    lb = _load(battery, templates, axes)
    if dry_run:
        _dry_run(lb, target)
        return
    _confirm_size(lb, yes, "sends")
    run_dir = out or default_run_dir(lb)
    settings = RunSettings(concurrency=concurrency, timeout=timeout, max_attempts=max_attempts, rpm=rpm, tpm=tpm,
                           preflight=preflight, max_consecutive_failures=max_consecutive_failures)
    from fairpair._progress import RunProgress

    console.print(f"run directory: {escape(str(run_dir))}")
    _current_run[:] = [run_dir]
    with RunProgress(console, enabled=not quiet and console.is_terminal) as prog:
        outcome = execute_run(lb, run_dir, settings, only_targets=target, progress=prog, batch=batch)
    if outcome.batch is not None:
        for line in outcome.batch.lines():
            console.print(escape(line), soft_wrap=True)
        if outcome.batch.pending:
            again = f"fairpair run {battery} --out {run_dir}"
            console.print(f"the provider answers batches within 24 hours; come back later (any machine with this "
                          f"run directory) and run `{escape(again)}` to fetch and store the answers", soft_wrap=True)
            return
        left = sum(c["failed"] for n, c in outcome.manifest.get("counts", {}).items()
                   if n in {b["target"] for b in outcome.batch.ingested})
        if left:
            console.print(f"{left} case(s) have no answer (their errors are stored); `fairpair run {escape(str(battery))} "
                          f"--out {escape(str(run_dir))} --batch` submits them again", soft_wrap=True)
    for name, c in outcome.manifest.get("counts", {}).items():
        console.print(f"target {escape(name)}: {c['answered']}/{c['cases']} answered, {c['failed']} failed, "
                      f"{c['retried']} retried")
    for warning in outcome.warnings:  # a fleet that mixed model versions...
        console.print(f"[bold yellow]warning:[/bold yellow] {escape(warning)}", soft_wrap=True)
    _print_answer_statuses(outcome.manifest.get("answer_statuses") or {})
    if outcome.cases_added:
        console.print(f"[yellow]warning:[/yellow] the battery changed since this run directory was started: "
                      f"{outcome.cases_added} new cases were added beside the "
                      f"{outcome.manifest['counts'][next(iter(outcome.manifest['counts']))]['cases'] - outcome.cases_added}"
                      " stored before (recorded as battery_changed); use a new --out for a clean run",
                      soft_wrap=True)
    _print_failures(run_dir, list(outcome.manifest.get("counts", {})))
    from fairpair import pipeline

    from fairpair._progress import progress_enabled

    with progress_enabled(not quiet):  # -q: no bars in the later stages either
        code = pipeline.after_run(run_dir, lb, console, measure=measure_stage, analyze=analyze_stage,
                                  report=report_stage, gate=gate)
    if code:
        raise typer.Exit(code)


def _print_answer_statuses(statuses: dict) -> None:
    """One line per target with its usable share and degenerate kinds; a warning with examples when
    most answers are degenerate (see fairpair.measures.status)."""
    from fairpair.measures.status import StatusSummary, degenerate_warning

    for name, js in statuses.items():
        sm = StatusSummary(js["counts"], js["n"], tuple(tuple(e) for e in js.get("examples", ())))
        kinds = ", ".join(f"{n} {s}" for s, n in sm.counts.items() if s != "ok")
        console.print(f"target {escape(name)}: {1 - sm.degenerate_share:.0%} usable answers"
                      + (f" ({escape(kinds)})" if kinds else ""), soft_wrap=True)
        warning = degenerate_warning(name, sm)
        if warning:
            console.print(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True)
            for cid, st, text in sm.examples:
                console.print(f"  {escape(cid)} \\[{escape(st)}]: {escape(repr(text))}", soft_wrap=True)


def _print_failures(run_dir: Path, targets: list[str]) -> None:
    """The end-of-run summary: the top error kinds of each target with counts and one example."""
    from fairpair.run import open_run
    from fairpair.run._status import failure_lines

    with open_run(run_dir, readonly=True) as store:
        lines = failure_lines(store, targets)
    for line in lines:
        console.print(escape(line), soft_wrap=True)


def _dry_run(lb, only_targets: list[str] | None = None) -> None:
    """Print the exact request of the first case of each template for each target; send nothing."""
    from fairpair.cases import expand as expand_cases
    from fairpair.run._preview import preview_requests

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
def lexicons() -> None:
    """List the built-in name lexicons and their sources."""
    from fairpair.battery._lexicons import all_lexicons

    t = Table("lexicon", "names", "source")
    for name, spec in all_lexicons().items():
        t.add_row(name, ", ".join(spec["names"][:4]) + ", ...", spec["source"][:80] + "...")
    console.print(t)


@app.command()
def schema() -> None:
    """Print the battery's JSON schema (generated from the code), every target and measure option included."""
    from fairpair.battery._jsonschema import battery_json_schema

    console.print_json(json.dumps(battery_json_schema(), ensure_ascii=False))


# Commands of the later stages live beside their stage and register themselves on `app`.
_COMMAND_MODULES = ("fairpair.battery._cli", "fairpair.run._cli", "fairpair.measures._cli", "fairpair.analysis._cli", "fairpair.report._cli",
                    "fairpair.persona._cli", "fairpair.importers._cli")


def _register_commands() -> None:
    import importlib

    for mod in _COMMAND_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise


_register_commands()


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point: run the app, turning known errors into exit code 2 without a traceback."""
    try:
        code = app(args=argv, standalone_mode=False)
        if code == 130:  # typer's click returns 130 for Ctrl-C outside standalone mode
            _interrupted()
        if isinstance(code, int) and code:  # typer.Exit(n) is returned, not raised, outside standalone mode
            sys.exit(code)
    except FairpairError as exc:
        err_console.print(f"[red]error:[/red] {escape(exc.format())}", soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _interrupted()
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001
        clicks = _click_exceptions()
        if isinstance(exc, tuple(m.ClickException for m in clicks if hasattr(m, "ClickException"))):
            exc.show()  # usage errors and bad option values: click's message, exit 2
            sys.exit(exc.exit_code)
        if isinstance(exc, tuple(m.Abort for m in clicks if hasattr(m, "Abort"))):
            if isinstance(exc.__cause__, KeyboardInterrupt):  # click turns Ctrl-C into Abort
                _interrupted()
            sys.exit(1)
        understood = _understood(exc)
        if understood is not None:  # e.g. a damaged store found mid-command: one message, exit 2
            err_console.print(f"[red]error:[/red] {escape(understood.format())}", soft_wrap=True)
            sys.exit(understood.exit_code)
        if os.environ.get("FAIRPAIR_DEBUG"):
            raise
        err_console.print(f"[red]internal error:[/red] {escape(type(exc).__name__)}: {escape(str(exc))}\n"
                          "  this is a bug in fairpair; rerun with FAIRPAIR_DEBUG=1 for the traceback")
        sys.exit(1)


#: The run directory of the ``run`` command in progress (for the Ctrl-C resume hint).
_current_run: list[Path] = []


def _interrupted() -> None:
    """Ctrl-C: say that nothing is lost and how to resume; exit 130 (128 + SIGINT)."""
    if _current_run:
        err_console.print(f"interrupted: every answer stored so far is kept in {escape(str(_current_run[-1]))}; "
                          f"run the same command again (with --out {escape(str(_current_run[-1]))}) to resume",
                          soft_wrap=True)
    else:
        err_console.print("interrupted: everything stored so far is kept; run the same command again to resume")
    sys.exit(130)


def _understood(exc: BaseException) -> FairpairError | None:
    """An unexpected exception that fairpair nevertheless understands, as a FairpairError."""
    from fairpair.run._store import damaged_store_error

    return damaged_store_error(exc)


def _click_exceptions() -> list:
    """click's exception modules: click's own and the copy typer >= 0.20 vendors (``typer._click``)."""
    mods = []
    try:  # click itself is not a dependency: typer >= 0.20 vendors its own copy
        import click
    except ImportError:
        pass
    else:
        mods.append(click.exceptions)
    try:
        from typer import exceptions as typer_exceptions  # Abort, Exit
        from typer._click import exceptions as vendored
    except ImportError:
        pass
    else:
        mods += [vendored, typer_exceptions]
    return mods


if __name__ == "__main__":
    # ``python -m fairpair.cli``: run the app of the imported module ``fairpair.cli``, on which the
    # stage commands (measure, analyze, report, ...) register; this file's own ``app`` as
    # ``__main__`` would lack them.
    from fairpair.cli import main as _main

    _main()
