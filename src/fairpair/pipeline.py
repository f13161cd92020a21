"""The stages after a run: measure, analyze, report, gate (each skipped when not declared)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def after_run(run_dir: Path, loaded, console, *, measure: bool = True, analyze: bool = True,
              report: bool = True, gate: bool = False) -> int:
    """Run the later stages on ``run_dir``; returns the exit code for ``--gate`` (0 = pass)."""
    b = loaded.battery
    if measure and b.measures:
        from fairpair.measures import measure_run

        measure_run(run_dir, console=console)
    results: Any = None
    if analyze and b.measures and b.analysis.comparisons:
        from fairpair.analysis import analyze_run

        results = analyze_run(run_dir, console=console)
    if report:
        try:
            from fairpair.report import write_report
        except ImportError:
            write_report = None
        if write_report is not None:
            paths = write_report(run_dir)
            console.print(f"report: {paths['html']}")
    if gate:
        from fairpair.analysis import gate_exit_code

        return gate_exit_code(run_dir)
    return 0
