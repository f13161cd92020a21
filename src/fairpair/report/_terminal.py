"""The verdict table for the terminal (rich), shared by ``fairpair report`` and ``fairpair run``.

Every cell is a :class:`rich.text.Text` built from :func:`~fairpair.report._text.terminal`
text: ANSI sequences and control characters removed, one line, so neither an
answer nor a label can move the cursor, recolour the terminal, set its title
or inject rich markup (``[bold]`` is shown literally).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairpair.report._catalog import msg
from fairpair.report._text import terminal

__all__ = ["verdict_table", "print_verdicts"]

_STYLE = {"fail": "bold white on red3", "pass": "bold white on green4", "inconclusive": "bold white on blue3",
          "insufficient design": "bold white on magenta", "none": "bold white on grey35",
          "no verdict": "bold white on grey35"}


def verdict_table(model: Any) -> Any:
    """A rich ``Table`` of the comparisons of a :class:`~fairpair.report.ReportModel` (or of its
    templates' context, :func:`~fairpair.report.build_view`)."""
    from rich.table import Table
    from rich.text import Text

    if isinstance(model, dict):  # the templates' context of a model
        lang, rows, battery = model["lang"], model["rows"], model["battery"]
    else:
        lang, rows, battery = model.lang, model.rows, model.battery
    several = len({r.target for r in rows}) > 1
    t = Table(title=Text(terminal(msg(lang, "terminal.title", battery=battery))), title_justify="left")
    t.add_column(Text(msg(lang, "col.verdict")), no_wrap=True)
    t.add_column(Text(msg(lang, "col.comparison")), overflow="fold")
    if several:
        t.add_column(Text(msg(lang, "col.target")), overflow="fold")
    t.add_column(Text("A − B"), justify="right", no_wrap=True)
    t.add_column(Text(msg(lang, "col.ci")), justify="right", no_wrap=True)
    t.add_column(Text("p adj."), justify="right", no_wrap=True)
    t.add_column(Text("n"), justify="right", no_wrap=True)
    for r in rows:
        cells = [Text(terminal(r.verdict_word), style=_STYLE.get(r.verdict, "")),
                 Text(terminal(f"{r.measure}: {r.group_a} − {r.group_b}", limit=60) + ("" if r.primary else " *"))]
        if several:
            cells.append(Text(terminal(r.target, limit=24)))
        cells += [Text(terminal(r.estimate)), Text(terminal(r.ci.replace(" … ", ".."))),
                  Text(terminal(r.p_adjusted)), Text(terminal(r.n_pairs))]
        t.add_row(*cells)
    return t


def print_verdicts(console: Any, run_dir: Path | None = None, *, language: str | None = None,
                   sentences: bool = True, data: Any = None, model: Any = None) -> str:
    """Print the verdict table (and each sentence) of a run; returns the overall verdict.

    Give ``model`` (a :class:`~fairpair.report.ReportModel` already built), ``data`` (a
    :class:`~fairpair.report.ReportData` already read) or ``run_dir`` (read now).
    """
    from rich.text import Text

    from fairpair.report._data import load_report_data
    from fairpair.report._render import build_model

    if model is None:
        if data is None:
            data = load_report_data(Path(run_dir), language=language)
        model = build_model(data, with_figures=False)
    for w in model.warnings:
        console.print(Text("! " + terminal(w), style="bold red"))
    if not model.analysed:
        console.print(Text(terminal(model.overall_text)))
        return "none"
    if model.rows or not model.rankings:  # a ranking battery alone: its own tables, not an empty one
        console.print(verdict_table(model))
    if model.rankings:
        from fairpair.report._ranking import ranking_tables

        for table in ranking_tables(model.rankings, model.lang):
            console.print(table)
    if sentences:
        for r in model.primary_rows:
            console.print(Text.assemble((terminal(r.verdict_word), _STYLE.get(r.verdict, "")), " ",
                                        terminal(r.sentence)))
    console.print(Text.assemble((terminal(model.overall_word), _STYLE.get(model.overall, "")), " ",
                                terminal(model.overall_text)))
    return model.overall
