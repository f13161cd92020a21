"""Command of the cases stage: ``expand``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

from rich.markup import escape

from fairpair.cli._app import app, console
from fairpair.cli._common import confirm_size, load
from fairpair.cli._options import AxesOpt, BatteryArg, OldOutputOpt, TemplatesOpt, YesOpt, out_option, renamed
from fairpair.errors import FairpairError


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
    from fairpair.cases import write_cases

    out = Path(renamed(output_old, out, old="--output", new="--out", default=Path("cases.jsonl")))
    lb = load(battery, templates, axes)
    confirm_size(lb, yes, "expands to")
    if out.is_dir():
        raise FairpairError("is a directory; give a file name such as cases.jsonl", file=out)
    if not out.parent.is_dir():
        raise FairpairError("the output folder does not exist; create it first or choose another -o",
                            file=out.parent)
    manifest = out.with_name(out.stem + ".manifest.json")
    try:
        exp = write_cases(lb, out)
        manifest.write_text(json.dumps(exp.manifest(), indent=2, ensure_ascii=False, sort_keys=True) + "\n",
                            encoding="utf-8")
    except OSError as exc:
        raise FairpairError(f"cannot write the cases: {exc.strerror}", file=exc.filename or out) from None
    console.print(f"wrote {exp.total} cases to {escape(str(out))} (manifest: {escape(str(manifest))})")
    for e in exp.exclusions:
        console.print(f"excluded in {escape(e['design'])}: {escape(e['reason'])} ({e['count']})")
