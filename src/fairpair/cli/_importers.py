"""Commands of the importers: ``fairpair import-answers`` and ``fairpair answers-schema``."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from fairpair.cli._app import app, console
from fairpair.cli._options import (
    AnalyzeStageOpt,
    GateOpt,
    ImportFormat,
    MeasureStageOpt,
    ReportStageOpt,
    choice,
    out_option,
)


@app.command("import-answers")
def import_answers_cmd(
    file: Annotated[Path, typer.Argument(help="Answers: interchange .jsonl or .csv (see `fairpair answers-schema`), "
                                              "or chat-completion records (.json, .jsonl or a folder of them).",
                                         show_default=False)],
    battery: Annotated[Path, typer.Option("--battery", "-b", help="Import battery YAML: attributes and groups, "
                                          "measures, analysis plan (and 'records' for chat-completion records).",
                                          show_default=False)],
    out: Annotated[Path | None, out_option("Run directory to create (default: runs/<battery>-<time>/); it "
                                              "must not exist or be empty.")] = None,
    fmt: Annotated[ImportFormat, choice(ImportFormat, "--format", help="auto (by extension, or chat-completions "
                                        "when the battery has 'records'), jsonl, csv or chat-completions.")]
    = ImportFormat.auto,
    target: Annotated[str | None, typer.Option("--target", help="Name of the system that answered, for rows "
                                                                   "that name none (default: imported).",
                                                  show_default=False)] = None,
    measure_stage: MeasureStageOpt = True,
    analyze_stage: AnalyzeStageOpt = True,
    report_stage: ReportStageOpt = True,
    gate: GateOpt = False,
) -> None:
    """Import answers that already exist into a new run directory (one transaction), then measure, analyze, report."""
    from fairpair.importers import import_answers, load_import_battery

    if out is None:
        name = load_import_battery(battery).battery.name
        out = Path("runs") / f"{name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    res = import_answers(file, battery, out, fmt=fmt.value, target=target)
    files = f"{len(res.sources)} file(s)" if len(res.sources) > 1 else escape(str(res.sources[0].path))
    sha = res.sources[0].sha256 if len(res.sources) == 1 else "per file in the manifest"
    console.print(f"imported {res.rows} rows ({res.format}) from {files} (sha256 {sha[:12]}) into "
                  f"{escape(str(res.run_dir))}", soft_wrap=True)
    console.print(f"  {res.cases} cases in {res.matched_sets} matched sets; {res.answers} answers, {res.failed} "
                  f"failed; {res.measurements} values already measured; targets: "
                  f"{escape(', '.join(res.targets))}", soft_wrap=True)
    for did, d in res.designs.items():
        console.print(f"  design {escape(did)} ({d['kind']}): {d['templates']} templates, {d['cases']} cases, "
                      f"{d['matched_sets']} matched sets", soft_wrap=True)
    for w in res.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}", soft_wrap=True)
    from fairpair import pipeline

    assert res.loaded is not None  # import_answers returns the battery it read
    code = pipeline.after_run(res.run_dir, res.loaded, console, measure=measure_stage, analyze=analyze_stage,
                              report=report_stage, gate=gate)
    if code:
        raise typer.Exit(code)


@app.command("answers-schema")
def answers_schema_cmd(
    battery: Annotated[bool, typer.Option("--battery", help="Print the import battery's schema instead of "
                                                            "the row's.")] = False,
) -> None:
    """Print the JSON schema of one interchange row (generated from the code); --battery: the import battery's."""
    from fairpair.importers import answers_schema

    console.print_json(json.dumps(answers_schema("battery" if battery else "row"), ensure_ascii=False))
