"""The stages after a run: measure, analyze, report, gate (each skipped when not declared).

``fairpair run`` calls :func:`after_run`; each stage also has its own command
(``fairpair measure``, ``analyze``, ``report``, ``gate``) that works on a run
directory alone, since the battery is recorded in the run's store.
"""

from __future__ import annotations

from pathlib import Path

from fairpair.errors import FairpairError


def after_run(run_dir: Path, loaded, console, *, measure: bool = True, analyze: bool = True,
              report: bool = True, gate: bool = False) -> int:
    """Run the later stages on ``run_dir``; returns the exit code for ``--gate`` (0 = pass).

    Raises
    ------
    FairpairError
        ``gate`` was asked for a battery without an analysis plan.
    """
    b = loaded.battery
    if measure and b.measures:
        from fairpair.measures import measure_run

        measure_run(run_dir, console=console)
    # a two-party design is analysed without a plan (cells, dispersion, least-changing prompt)
    two_party = any(getattr(d, "kind", None) == "two_party" for d in b.designs)
    analyzed = analyze and bool(b.measures) and (bool(b.analysis.comparisons) or two_party)
    if analyzed:
        from fairpair.analysis import analyze_run

        # the report prints the verdicts in plain words; without it, the analysis prints its table.
        # A bar counts the comparisons (on a terminal, not under -q).
        analyze_run(run_dir, console=None if report else console, progress_console=console)
    if report:
        from fairpair.report._data import load_report_data
        from fairpair.report._render import write_report
        from fairpair.report._terminal import print_verdicts

        from fairpair._progress import stage_status

        with stage_status(console, "writing the report..."):
            data = load_report_data(Path(run_dir))
            paths = write_report(run_dir, data=data)
        if analyzed and b.analysis.comparisons:
            print_verdicts(console, data=data)
        console.print(f"report: {paths['html']}", soft_wrap=True)
    if gate:
        if not (analyzed and b.analysis.comparisons):
            raise FairpairError("--gate needs measures and an analysis plan with comparisons in the battery",
                                file=loaded.path, key="analysis.comparisons")
        from fairpair.analysis import gate_exit_code

        return gate_exit_code(run_dir)
    return 0
