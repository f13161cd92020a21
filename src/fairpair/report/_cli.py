"""Commands of the report stage: ``report`` and ``export``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.text import Text

from fairpair.cli import RunArg, app, console


@app.command()
def report(
    run: RunArg,
    lang: Annotated[Optional[str], typer.Option("--lang", help="Report language: es or en (default: the "
                                                "battery's).")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Folder for report.html, report.md and "
                                                "report.json (default: RUN/report/).")] = None,
    evidence: Annotated[int, typer.Option("--evidence", min=0, help="Matched sets quoted per failing "
                                          "comparison.")] = 3,
) -> None:
    """Write the HTML, Markdown and JSON report of a run and print its verdicts."""
    from fairpair.report._data import load_report_data
    from fairpair.report._render import write_report
    from fairpair.report._terminal import print_verdicts

    data = load_report_data(run, language=lang, evidence=evidence)
    paths = write_report(run, out=out, data=data)
    print_verdicts(console, data=data)
    for kind in ("html", "md", "json"):
        console.print(Text(f"{kind}: {paths[kind]}"), soft_wrap=True)


@app.command()
def export(
    run: RunArg,
    fmt: Annotated[str, typer.Option("--format", "-f", help="csv or parquet.")] = "csv",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Folder for the tables (default: "
                                                "RUN/export/).")] = None,
) -> None:
    """Write the run's answers, measurements and results as CSV or Parquet tables."""
    from fairpair.report._export import export_run

    for name, path in export_run(run, fmt=fmt, out=out).items():
        console.print(Text(f"{name}: {path}"), soft_wrap=True)
