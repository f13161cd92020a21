"""The verdict table for the terminal (rich), shared by ``fairpair report`` and ``fairpair run``.

Every cell is a :class:`rich.text.Text` built from :func:`~fairpair.report._text.terminal`
text (:func:`~fairpair.report._text.terminal_text`: code spans bold, without their backticks):
ANSI sequences and control characters removed, one line, so neither an answer nor a label can
move the cursor, recolour the terminal, set its title or inject rich markup (``[bold]`` is shown
literally).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairpair.report._catalog import msg
from fairpair.report._text import terminal, terminal_text

if TYPE_CHECKING:
    from rich.console import Console

    from fairpair.report._data import ReportData
    from fairpair.report._render import ReportModel

__all__ = ["verdict_table", "print_verdicts"]

_STYLE = {"fail": "bold white on red3", "pass": "bold white on green4", "inconclusive": "bold white on blue3",
          "insufficient design": "bold white on magenta",
          "insufficient labels": "bold white on magenta", "none": "bold white on grey35",
          "incomplete run": "bold white on grey35", "not measured": "bold white on grey35",
          "no verdict": "bold white on grey35"}


def verdict_table(model: Any, *, verbose: bool = False, wrap: bool = True) -> Any:
    """A rich ``Table`` of the comparisons of a :class:`~fairpair.report.ReportModel` (or of its
    templates' context, :func:`~fairpair.report.build_view`): one line per comparison (verdict,
    comparison, effect A − B, interval; ``verbose`` adds the adjusted p-value and the pairs).
    ``wrap=False`` (output that is not a terminal): cells never wrap, since a wrapped cell prints the
    same fragment on several lines."""
    from rich.table import Table
    from rich.text import Text

    if isinstance(model, dict):  # the templates' context of a model
        lang, rows, battery = model["lang"], model["rows"], model["battery"]
    else:
        lang, rows, battery = model.lang, model.rows, model.battery
    several = len({r.target for r in rows}) > 1
    t = Table(title=Text(terminal(msg(lang, "terminal.title", battery=battery))), title_justify="left")
    t.add_column(Text(msg(lang, "col.verdict")), no_wrap=True)
    t.add_column(Text(msg(lang, "col.comparison")), no_wrap=not wrap, overflow="fold")
    if several:
        t.add_column(Text(msg(lang, "col.target")), no_wrap=not wrap, overflow="fold")
    t.add_column(Text("A − B"), justify="right", no_wrap=True)
    t.add_column(Text(msg(lang, "col.ci")), justify="right", no_wrap=True)
    if verbose:
        t.add_column(Text("p adj."), justify="right", no_wrap=True)
        t.add_column(Text("n"), justify="right", no_wrap=True)
    for r in rows:
        cells = [Text(terminal(r.verdict_word), style=_STYLE.get(r.verdict, "")),
                 terminal_text(r.label, limit=60)]
        if several:
            cells.append(Text(terminal(r.target, limit=24)))
        cells += [terminal_text(r.estimate), Text(terminal(r.ci.replace(" … ", "..")))]
        if verbose:
            cells += [Text(terminal(r.p_adjusted)), Text(terminal(r.n_pairs))]
        t.add_row(*cells)
    return t


def print_verdicts(console: Console, run_dir: Path | None = None, *, language: str | None = None,
                   sentences: bool = False, data: ReportData | None = None, model: ReportModel | None = None,
                   verbose: bool = False) -> str:
    """Print a run's verdicts, each thing once; returns the overall verdict.

    In order: the ``run incomplete`` headline (when it is), the verdict table (one line per
    comparison), the within-cell spread tests that fail or pass (secondary; all of them with ``verbose``),
    what its marks mean, each distinct reason once with the comparisons it covers,
    each distinct warning once, and the overall verdict naming what fails. ``verbose`` (or
    ``sentences``) adds each comparison's sentence; the rest is in ``fairpair status RUN``.

    Give ``model`` (a :class:`~fairpair.report.ReportModel` already built), ``data`` (a
    :class:`~fairpair.report.ReportData` already read) or ``run_dir`` (read now).
    """
    from rich.text import Text

    from fairpair.report._data import load_report_data
    from fairpair.report._render import build_model

    if model is None:
        if data is None:
            if run_dir is None:
                raise TypeError("print_verdicts needs model, data or run_dir")
            data = load_report_data(Path(run_dir), language=language)
        model = build_model(data, with_figures=False)

    def line(text: str, style: str = "") -> None:
        console.print(terminal_text(text, style=style), soft_wrap=True)  # never wrapped into repeated fragments

    if not model.analysed:
        for w in model.warnings:
            line("! " + w, "bold red")
        line(model.overall_text)
        return "none"
    if model.overall == "incomplete run":
        console.print(Text.assemble((terminal(model.overall_word), _STYLE["incomplete run"]), " ",
                                    terminal_text(model.overall_text)), soft_wrap=True)
    if model.rows or not model.rankings:  # a ranking battery alone: its own tables, not an empty one
        tty = bool(getattr(console, "is_terminal", False))
        table = verdict_table(model, verbose=verbose, wrap=tty)
        if tty:
            console.print(table)
        else:  # not a terminal: as wide as the table needs, one line per comparison
            from rich.measure import Measurement

            width, fixed = console.width, getattr(console, "_width", None)  # fixed: None unless a width was set
            console.width = max(width, Measurement.get(console, console.options.update_width(1000), table).maximum)
            try:
                console.print(table)
            finally:  # back to no fixed width where none was set: a later $COLUMNS or terminal still counts
                if hasattr(console, "_width"):
                    console._width = fixed
                else:
                    console.width = width
    if model.rankings:
        from fairpair.report._ranking import ranking_tables

        for table in ranking_tables(model.rankings, model.lang):
            console.print(table)
    for lc in model.label_corrections:  # a verdict decided by human labels says so, with the judge's own figure
        line(lc)
    for sp in getattr(model, "spreads", []):  # secondary: the spread tests that fail or pass, all with --verbose
        if verbose or sp.verdict in ("fail", "pass"):
            line(sp.line)
    for m in model.marks:
        line(m)
    for g in model.shared_reasons:
        line(g.line)
    for w in model.warnings:
        line("! " + w, "bold red")
    if sentences or verbose:
        for r in model.rows:
            console.print(Text.assemble((terminal(r.verdict_word), _STYLE.get(r.verdict, "")), " ",
                                        terminal_text(r.label), ": ", terminal_text(r.sentence)), soft_wrap=True)
    if model.overall != "incomplete run":
        console.print(Text.assemble((terminal(model.overall_word), _STYLE.get(model.overall, "")), " ",
                                    terminal_text(model.overall_text)), soft_wrap=True)
    if not (sentences or verbose):
        import shlex

        line(msg(model.lang, "verbose.hint", run=shlex.quote(model.run_dir)))
    return model.overall
