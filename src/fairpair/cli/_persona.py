"""CLI of the persona stage: ``fairpair import-scenes`` and ``fairpair reanalyze``."""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from fairpair.cli._app import app, console, err_console
from fairpair.cli._options import Ddof, JsonOpt, JsonPathCompat, OldOutputOpt, ReleaseFormat, choice, renamed
from fairpair.errors import FairpairError


@app.command("import-scenes")
def import_scenes(
    file: Annotated[Path, typer.Argument(help="Scene table (.xlsx or .csv): scenario_id, contextual_dim, "
                                               "presence_of_power_differential, scenario.", show_default=False)],
    out: Annotated[str, typer.Option("--out", "-o", help="Battery YAML to write ('-' = standard output).")] = "-",
    output_old: OldOutputOpt = None,
    axes: Annotated[list[str] | None, typer.Option("--axes", help="Only these Table 2 axes (repeatable or "
                                                                     "comma-separated): race, gender, age, religion, "
                                                                     "political, disability, nationality, "
                                                                     "appearance.")] = None,
    scenes: Annotated[list[str] | None, typer.Option("--scenes", help="Only these scene keys or globs "
                                                                         "(repeatable or comma-separated), e.g. "
                                                                         "'work-*' or 'work-pd-1'.")] = None,
    name: Annotated[str, typer.Option(help="The battery's name.")] = "tan_lee_2025",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
) -> None:
    """Import a Tan & Lee (2025) scene table into a two_party battery (112 conditions per scene)."""
    from fairpair.battery import TwoPartyDesign, load_battery
    from fairpair.persona import battery_yaml, read_scenes, select

    output = renamed(output_old, out, old="--output", new="--out", default="-")
    table = select(read_scenes(file), scenes)
    axis_list = [a.strip() for item in (axes or []) for a in item.split(",") if a.strip()] or None
    text = battery_yaml(table, axes=axis_list, name=name, source=file.name)
    dest = None if output == "-" else Path(output)
    if dest is not None and dest.exists() and not force:
        raise FairpairError("the output file exists; give another -o or --force to overwrite it", file=dest)
    # validate before writing anything: the battery must load as written
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "battery.yaml"
        probe.write_text(text, encoding="utf-8")
        lb = load_battery(probe)
    report = err_console if dest is None else console
    if dest is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        dest.write_text(text, encoding="utf-8")
    counts = table.counts()
    design = lb.battery.designs[0]
    if not isinstance(design, TwoPartyDesign):  # never: battery_yaml writes one two_party design
        raise TypeError(f"the scene battery's design is {design.kind}, not two_party")
    n_axes = len(design.axes)
    per_scene = sum(len(lb.battery.attributes[a].groups) ** 2 for a in design.axes) + 1
    report.print(f"{escape(str(file))}: {len(table.scenes)} scenes ({counts.get('disparity', 0)} with a power "
                 f"disparity, {counts.get('equal', 0)} without), {n_axes} axes, {per_scene} conditions per scene "
                 f"-> {len(table.scenes) * per_scene:,} conversations per target", soft_wrap=True)
    lines = table.cleaning.lines()
    if lines:
        report.print("cleaned:", soft_wrap=True)
        for ln in lines:
            report.print(f"  - {escape(ln)}", soft_wrap=True)
    else:
        report.print("cleaned: nothing needed cleaning", soft_wrap=True)
    report.print("[yellow]note:[/yellow] the scenes with and without a power disparity are different scenes "
                 "(not matched); power is compared unpaired (meta.matched: false)", soft_wrap=True)
    if dest is not None:
        report.print(f"[green]wrote[/green] {escape(str(dest))} (valid battery, sha256 {lb.sha256[:12]})",
                     soft_wrap=True)


@app.command(cls=JsonPathCompat)
def reanalyze(
    files: Annotated[list[Path], typer.Argument(help="Result CSV file(s) of the study's public release.",
                                                show_default=False)],
    fmt: Annotated[ReleaseFormat, choice(ReleaseFormat, "--format", help="Column layout of the files.")]
    = ReleaseFormat.tan_lee_2025,
    ddof: Annotated[Ddof, choice(Ddof, "--ddof", help="Standard deviation across cells: 0 (population), "
                                 "1 (sample, pandas' default) or both.")] = Ddof.both,
    resamples: Annotated[int, typer.Option("--resamples", min=0, help="Scene-bootstrap resamples and "
                                                                      "permutations (0: point estimates only).")]
    = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap and permutations.")] = 0,
    as_json: JsonOpt = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="With --json: write every result as JSON "
                                                "to this file (the tables are printed too).")] = None,
) -> None:
    """Recompute Tan & Lee's (2025) Table 6 from their released results, with CIs and an unpaired power test."""
    from fairpair.persona import reanalyze_files

    if out is not None and not as_json:
        raise FairpairError("--out writes the JSON results: give --json with it", key="out")
    if out is not None and out.exists():  # before the resamples: nothing already stored is overwritten
        raise FairpairError("already exists; reanalyze never overwrites a file", file=out,
                            hint="give another -o, such as reanalysis-2.json")
    ddofs = (0, 1) if ddof is Ddof.both else (int(ddof.value),)
    result = reanalyze_files(files, ddofs=ddofs, n_resamples=resamples, seed=seed)
    text = json.dumps(result.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if as_json and out is None:
        sys.stdout.write(text)
        return
    _print_reanalysis(result)
    if out is not None:
        try:
            with out.open("x", encoding="utf-8") as fh:  # "x": never overwrite, even in a race
                fh.write(text)
        except OSError as exc:
            raise FairpairError(f"cannot write the results: {exc.strerror}", file=out) from None
        console.print(f"[green]wrote[/green] {escape(str(out))}")


def _f(x: float | None, digits: int = 4) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _print_reanalysis(r) -> None:
    c = r.checks
    console.print(f"[bold]Tan & Lee (2025) reanalysis[/bold]: {len(r.files)} file(s), {c.rows_read:,} rows, "
                  f"models: {', '.join(c.rows_per_model)}", soft_wrap=True)
    t = Table(title="data checks")
    for col in ("model", "rows", "demographic", "baselines", "excluded", "dup. keys", "scenes no PD/PD"):
        t.add_column(col)
    for m, n in c.rows_per_model.items():
        t.add_row(m, f"{n.total:,}", f"{n.demographic:,}", f"{n.baseline:,}", f"{n.excluded:,}",
                  str(n.duplicate_keys), f"{n.scenes_equal}/{n.scenes_disparity}")
    console.print(t)
    for line in c.lines():
        console.print(f"  {escape(line)}", soft_wrap=True)
    for ex in c.exclusions:
        per = ", ".join(f"{m}: {k:,}" for m, k in ex.per_model.items())
        console.print(f"  [yellow]excluded[/yellow] {ex.rows:,} rows ({per}; labels {escape(', '.join(ex.labels))}): "
                      f"{escape(ex.reason)}", soft_wrap=True)
    metric_name = {"cosine_distance": "cosine", "win_rate": "win rate"}
    t = Table(title="Table 6: mean over axes of the SD across SUB x RES cells of the cell mean "
                    "(no PD = equal, PD = disparity), ours beside the paper")
    for col in ("model", "metric", "ddof", "no PD", "PD", "paper (no PD -> PD)", "match"):
        t.add_column(col)
    for row in r.table6:
        pub = row.published
        t.add_row(row.model, metric_name.get(row.metric, row.metric), str(row.ddof), _f(row.equal.statistic),
                  _f(row.disparity.statistic), "-" if pub is None else f"{pub[0]:.4f} -> {pub[1]:.4f}",
                  "-" if row.matches_published is None else ("yes" if row.matches_published else "no"))
    console.print(t)
    t = Table(title="the same dispersion with the answer noise removed (between-cell variance minus the scene x "
                    "cell interaction mean square / scenes; the raw SD grows with noise alone)")
    for col in ("model", "metric", "ddof (raw)", "no PD raw -> corrected", "PD raw -> corrected"):
        t.add_column(col)
    for row in r.table6:
        if row.ddof != r.ddofs[-1]:
            continue  # the corrected figure does not depend on ddof: once per model and metric
        t.add_row(row.model, metric_name.get(row.metric, row.metric), str(row.ddof),
                  f"{_f(row.equal.statistic)} -> {_f(row.equal.corrected)}",
                  f"{_f(row.disparity.statistic)} -> {_f(row.disparity.corrected)}")
    console.print(t)
    if r.n_resamples > 0:
        t = Table(title=f"{r.confidence_level:.0%} CIs of the dispersions (percentile, {r.n_resamples} resamples of "
                        "each condition's scenes)")
        for col in ("model", "metric", "ddof", "no PD", "PD"):
            t.add_column(col)
        for row in r.table6:
            t.add_row(row.model, metric_name.get(row.metric, row.metric), str(row.ddof),
                      f"[{_f(row.equal.ci_low)}, {_f(row.equal.ci_high)}]",
                      f"[{_f(row.disparity.ci_low)}, {_f(row.disparity.ci_high)}]")
        console.print(t)
        t = Table(title="PD - no PD, UNMATCHED scenes: stratified scene bootstrap CI; p from shuffling whole "
                        "scenes between conditions (unpaired permutation)")
        for col in ("model", "metric", "ddof", "difference", "CI", "p"):
            t.add_column(col)
        for d in r.differences:
            t.add_row(d.model, metric_name.get(d.metric, d.metric), str(d.ddof), _f(d.statistic),
                      f"[{_f(d.ci_low)}, {_f(d.ci_high)}]", _f(d.pvalue))
        console.print(t)
    t = Table(title="the prompt that changes the answer least (lowest mean cosine distance from the baseline "
                    "answer, both power conditions), per axis and side; stability = share of scene resamples")
    for col in ("model", "axis", "side", "identity", "mean", "runner-up (mean)", "stability"):
        t.add_column(col)
    for m in r.least_change:
        t.add_row(m.model, m.axis, m.side.upper(), m.identity, _f(m.mean), f"{m.runner_up} ({_f(m.runner_up_mean)})",
                  _f(m.stability, 2))
    console.print(t)
    for note in r.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}", soft_wrap=True)
