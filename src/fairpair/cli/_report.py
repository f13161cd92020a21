"""Commands of the report stage: ``report`` and ``export``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from fairpair.cli._app import app, console
from fairpair.cli._common import warn_in_use
from fairpair.cli._options import ExportFormat, LangOpt, RunArg, VerboseOpt, choice, out_option


@app.command()
def report(
    run: RunArg,
    lang: LangOpt = None,
    out: Annotated[Path | None, out_option("Folder for report.html, report.md and report.json (default: "
                                              "RUN/report/).")] = None,
    evidence: Annotated[int, typer.Option("--evidence", min=0, help="Matched sets quoted per failing "
                                          "comparison.")] = 3,
    verbose: VerboseOpt = False,
) -> None:
    """Write the HTML, Markdown and JSON report of a run and print its verdicts."""
    from fairpair import pipeline

    warn_in_use(run, "the report shows")
    res = pipeline.report(run, pipeline.Settings(console=console, language=lang.value if lang else None,
                                                 evidence=evidence, report_out=out, verbose=verbose))
    paths = res.output
    for kind in ("html", "md", "json"):
        console.print(Text(f"{kind}: {paths[kind]}"), soft_wrap=True)


@app.command()
def export(
    run: RunArg,
    fmt: Annotated[ExportFormat, choice(ExportFormat, "--format", "-f", what="export format",
                                        help="Table format.")] = ExportFormat.csv,
    out: Annotated[Path | None, out_option("Folder for the tables (default: RUN/export/).")] = None,
) -> None:
    """Write the run's answers, measurements and results as CSV or Parquet tables."""
    from fairpair.report import export_run

    warn_in_use(run, "the tables hold")
    for name, path in export_run(run, fmt=fmt.value, out=out).items():
        console.print(Text(f"{name}: {path}"), soft_wrap=True)
