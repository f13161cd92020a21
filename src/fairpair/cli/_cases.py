"""Command of the cases stage: ``expand``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from rich.markup import escape

from fairpair.cli._app import app, console
from fairpair.cli._common import confirm_size, load
from fairpair.cli._options import AxesOpt, BatteryArg, OldOutputOpt, TemplatesOpt, YesOpt, out_option, renamed


@app.command()
def expand(
    battery: BatteryArg,
    out: Annotated[Path, out_option("Where to write cases.jsonl.")] = Path("cases.jsonl"),
    output_old: OldOutputOpt = None,
    templates: TemplatesOpt = None,
    axes: AxesOpt = None,
    yes: YesOpt = False,
) -> None:
    """Write every generated case (one JSON per line) and its expansion manifest."""
    from fairpair import pipeline

    out = Path(renamed(output_old, out, old="--output", new="--out", default=Path("cases.jsonl")))
    lb = load(battery, templates, axes)
    confirm_size(lb, yes, "expands to")
    res = pipeline.expand(out, pipeline.Settings(battery=lb))
    exp = res.output
    manifest = out.with_name(out.stem + ".manifest.json")
    console.print(f"wrote {exp.total} cases to {escape(str(out))} (manifest: {escape(str(manifest))})")
    for e in exp.exclusions:
        console.print(f"excluded in {escape(e['design'])}: {escape(e['reason'])} ({e['count']})")
