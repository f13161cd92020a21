"""Commands of the analysis stage: ``analyze``, ``gate``, ``compare``, ``results-schema``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from fairpair.cli._app import app, console
from fairpair.cli._common import warn_in_use
from fairpair.cli._options import IgnoreStatusOpt, JsonOpt, RunArg
from fairpair.errors import FairpairError


@app.command()
def analyze(run: RunArg,
            as_json: Annotated[bool, typer.Option("--json", help="Print results.json instead of the summary.")] = False,
            ) -> None:
    """Execute the run's pre-registered analysis plan and write RUN/results.json."""
    from fairpair import pipeline

    res = pipeline.analyze(run, pipeline.Settings(console=None if as_json else console))
    if as_json:
        print(res.output.to_json())
        return
    console.print(f"wrote {escape(str(Path(run) / 'results.json'))}")
    from fairpair.analysis import RULE_NOT_MEASURED

    unmeasured = [c for c in res.output.comparisons if c.verdict_rule == RULE_NOT_MEASURED]
    if unmeasured:  # e.g. after `fairpair run --no-measure`: say what gives them a verdict
        measures = ", ".join(dict.fromkeys(c.measure for c in unmeasured))
        console.print(f"[yellow]note:[/yellow] {len(unmeasured)} comparison(s) have no measured value "
                      f"({escape(measures)}): run fairpair measure {escape(str(run))}, then fairpair analyze "
                      f"{escape(str(run))} again", soft_wrap=True)


@app.command()
def gate(run: RunArg,
         on_inconclusive: Annotated[bool, typer.Option("--on-inconclusive",
                                                       help="Also fail on inconclusive primary comparisons.")] = False,
         baseline: Annotated[Path | None, typer.Option("--baseline", help="Also fail when a gap got "
                                                          "significantly worse than in this earlier run.")] = None,
         junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here (not when the gate "
                                                       "exits 2).")] = None,
         on_insufficient: Annotated[bool, typer.Option(
             "--on-insufficient", help="Also fail on primary comparisons whose design cannot support a verdict "
                                       "(verdict 'insufficient design').")] = False,
         ignore_status: IgnoreStatusOpt = False) -> None:
    """Exit 1 when a primary comparison fails (or is inconclusive / insufficient / worse than --baseline, if asked).

    An automatic comparison of answer statuses that fails (one group gets more
    failed, empty or refused answers) fails the gate too, unless --ignore-status.
    A comparison with an insufficient design is not a pass: its reason is
    printed; when no primary comparison has a verdict, or the run is
    incomplete, the gate exits 2.
    """
    from fairpair.analysis import gate_lines, gate_outcome

    warn_in_use(run, "the gate judges")
    outcome = gate_outcome(run, on_inconclusive=on_inconclusive, baseline=baseline, junit=junit,
                           on_insufficient=on_insufficient, ignore_status=ignore_status)
    code = outcome.code
    lines = gate_lines(outcome)
    for line in lines:  # failing comparisons and regressions first, each with its numbers
        console.print(escape(line), soft_wrap=True)
    for note in outcome.baseline_notes:  # what the regression check against --baseline left out
        console.print(f"[yellow]warning:[/yellow] --baseline {escape(str(baseline))}: {escape(note)}", soft_wrap=True)
    n_fail = sum(1 for line in lines if line.startswith(("FAIL", "WORSE")))
    console.print("gate: " + (f"[red]failed[/red] ({n_fail} of the lines above)" if code
                              else "[green]passed[/green]"))
    if code:
        raise typer.Exit(code)


@app.command()
def compare(run_a: Annotated[Path, typer.Argument(help="Run before the change.", show_default=False)],
            run_b: Annotated[Path | None, typer.Argument(
                help="Run after the change (default: RUN_A, to compare two of its targets).",
                show_default=False)] = None,
            target_before: Annotated[str | None, typer.Option(
                "--target-before", help="The target of RUN_A to compare (default: each target with the one of "
                                        "the same name).")] = None,
            target_after: Annotated[str | None, typer.Option(
                "--target-after", help="The target of RUN_B to compare it with.")] = None,
            as_json: JsonOpt = False) -> None:
    """Compare two runs of the same battery: the change in each gap, matched set by matched set.

    A ranking design's pairs of groups (top pick, ranked above) are compared too. Two targets of one run
    (the same model under two system prompts) compare with `fairpair compare RUN --target-before A
    --target-after B`.
    """
    from fairpair.analysis import compare_runs

    if run_b is None:
        if target_before is None or target_after is None:
            raise FairpairError("compare: give RUN_B, or --target-before and --target-after to compare two "
                                "targets of one run", key="RUN_B")
        run_b = run_a
    elif run_a.resolve() == run_b.resolve() and target_before is None and target_after is None:
        # as the gate's --baseline: a run never changed against itself
        raise FairpairError("compare: both arguments are the same run, so every change would be 0", file=run_b,
                            hint="give the run before the change first and the run after it second (or "
                                 "--target-before and --target-after to compare two targets of one run)")
    cmp = compare_runs(run_a, run_b, target_before=target_before, target_after=target_after)
    why = cmp.nothing_compared()
    if why is not None:  # only notes: a change that compares nothing is not "no change"
        raise FairpairError(f"compare: no comparison could be compared between {run_a} and {run_b} ({why})",
                            file=run_b, hint="run `fairpair measure` on a run that was not measured, or compare "
                                             "two runs of the same battery and target")
    if as_json:
        print(cmp.to_json())
        return
    for r in cmp.rows:
        # a rate's gap in percentage points, as the gate and the report print it; others in the measure's units
        binary = r.scale == "binary"
        unit = " points" if binary else ""
        f = lambda v, binary=binary: "n/a" if v is None else (f"{100 * v:+.1f}" if binary else f"{v:+.3f}")  # noqa: E731
        ci = "" if not r.ci or None in r.ci else f" [{f(r.ci[0])}, {f(r.ci[1])}]"
        p = "n/a" if r.pvalue is None else f"{r.pvalue:.3g}"
        what = f"ranking {r.design} {r.ranking} {r.id}" if r.ranking else r.id
        who = r.target_after if r.target_before == r.target_after else f"{r.target_before} -> {r.target_after}"
        console.print(f"{r.direction:16} {escape(who)} {escape(what)} {escape(r.group_a)} vs "
                      f"{escape(r.group_b)}: gap {f(r.gap_before)} -> {f(r.gap_after)}{unit}, change "
                      f"{f(r.change)}{unit}{ci} p={p} (n={r.n_sets})", soft_wrap=True)
    for n in cmp.notes:
        console.print(f"note: {escape(n)}")


@app.command("results-schema")
def results_schema_cmd() -> None:
    """Print the JSON schema of results.json (generated from the code)."""
    from fairpair.analysis import results_schema

    console.print_json(json.dumps(results_schema(), ensure_ascii=False))


@app.command()
def discover(run: RunArg,
             seed: Annotated[int | None, typer.Option(
                 help="Seed of the split into exploration and confirmation parts (default 0). A run is split "
                      "once: with a split recorded, a different seed is an error.")] = None,
             words: Annotated[bool, typer.Option("--words/--no-words", help="The model-free pass: phrases that "
                                                 "distinguish the groups' answers (log-odds ratio, informative "
                                                 "Dirichlet prior).")] = True,
             proposer: Annotated[str | None, typer.Option(
                 "--proposer", help="The model pass: a target of the battery, or a target block as JSON/YAML "
                                    "('{kind: openai, model: ..., base_url: ...}'), shown masked answer pairs in "
                                    "both orders; its questions are answered by the battery's judge. Default: "
                                    "no model pass.")] = None,
             max_axes: Annotated[int, typer.Option(min=1, max=20, help="Axes per pass and pair of groups.")] = 3,
             z_min: Annotated[float, typer.Option(help="Smallest |z| of a phrase's log-odds ratio.")] = 2.0,
             min_answers: Annotated[int, typer.Option(min=1, help="A phrase used by fewer exploration answers is "
                                                              "no candidate.")] = 5,
             pairs: Annotated[int, typer.Option(min=1, help="Matched pairs shown to the proposer per pair of "
                                                          "groups (each in both orders).")] = 8,
             judge: Annotated[str | None, typer.Option(
                 "--judge", help="The judge that answers the proposed questions on the confirmation part: a target "
                                 "of the battery or a target block as JSON/YAML (default: the battery's judge, "
                                 "else the embedded local model).")] = None,
             ) -> None:
    """Find differences no measure was written for (exploration part), then test them on the confirmation part.

    The matched sets are split once, at random and recorded, into two parts that share no template (and no
    name, with names random). The axes found on the exploration part are written to RUN/discovered/axes.yaml
    as ordinary measures, measured on the confirmation part only and tested with the crossed inference, Holm
    over the discovered axes: the 'discovered' section of results.json and the report. A discovered axis
    changes no pre-registered verdict and not the gate. See docs/discover.md.
    """
    from fairpair.analysis import discover_run
    from fairpair.run import build_target

    target = judge_target = None
    if proposer is not None:
        target = _target_option(run, proposer, build_target, "--proposer")
    if judge is not None:
        judge_target = _target_option(run, judge, build_target, "--judge")
    discover_run(run, seed=seed, words=words, proposer=target, max_axes=max_axes, z_min=z_min,
                 min_answers=min_answers, proposer_pairs=pairs, judge=judge_target, console=console)
    if (Path(run) / "report").is_dir():  # a report written before: its 'discovered' section is brought up to date
        from fairpair import pipeline

        out = pipeline.report(run, pipeline.Settings(console=None))
        console.print(f"report updated: {escape(str(Path(run) / 'report'))} ({out.counts.get('files', 0)} files)")


def _target_option(run: Path, text: str, build_target, option: str):
    """A target named on the command line: a target of the run's battery by name, or a target block
    (JSON or YAML, relative paths read from the current directory)."""
    import yaml

    from fairpair.battery import TargetSpec, recorded_battery
    from fairpair.store import Run

    with Run.open(run, "r") as r:
        loaded = recorded_battery(r)
    specs = loaded.battery.target_specs()
    base = Path(loaded.path).parent if loaded.path else Path.cwd()
    if text in specs:
        return build_target(f"{option[2:]}:{text}", specs[text], base_dir=base)
    try:
        block = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FairpairError(f"{option}: not a target of the battery ({', '.join(specs) or 'none'}) nor a "
                            f"target block: {exc}", key=option) from None
    if not isinstance(block, dict) or "kind" not in block:
        raise FairpairError(f"{option} {text!r}: not a target of the battery ({', '.join(specs) or 'none'}) "
                            "nor a target block with a 'kind'", key=option)
    try:
        spec = TargetSpec.model_validate(block)
    except ValueError as exc:
        raise FairpairError(f"{option}: {exc}", key=option) from None
    return build_target(option[2:], spec, base_dir=Path.cwd())
