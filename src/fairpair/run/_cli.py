"""Commands of the run stage beside ``run``: ``check`` (the preflight alone) and ``status``."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Optional

import typer
from rich.markup import escape

from fairpair.cli import BatteryArg, RunArg, app, console


@app.command()
def check(
    battery: BatteryArg,
    target: Annotated[Optional[list[str]], typer.Option("--target", help="Check only these targets.")] = None,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds for the request.")] = 60.0,
) -> None:
    """Validate the battery and send its first case to each target: the run's preflight, alone.

    Exit 0 when every target answered; 2 with the error when one is unreachable,
    rejects the key or answers in a shape it cannot read. Nothing is stored.
    """
    from fairpair.cases import expand
    from fairpair.cli import _load
    from fairpair.errors import FairpairError
    from fairpair.run import RunSettings
    from fairpair.run._preflight import preflight
    from fairpair.run._runner import build_target, target_secrets

    lb = _load(battery)
    b = lb.battery
    specs = b.target_specs()
    if not specs:
        raise FairpairError("the battery declares no 'target'; add a target block", file=lb.path)
    if target:
        unknown = [t for t in target if t not in specs]
        if unknown:
            raise FairpairError(f"unknown target(s) {unknown}; the battery has {list(specs)}", file=lb.path)
        specs = {k: v for k, v in specs.items() if k in target}
    case = next(iter(expand(lb)), None)
    if case is None:
        raise FairpairError("the battery expands to no case", file=lb.path)
    settings = RunSettings(concurrency=1, timeout=timeout)
    for name, spec in specs.items():
        t = build_target(name, spec, base_dir=lb.path.parent, language=b.language)
        try:
            if hasattr(t, "load"):
                asyncio.run(t.load())
            t0 = time.monotonic()
            completion, _, _, _ = asyncio.run(preflight(
                t, case, settings, tools=b.all_tools() or None, tool_map=b.all_tool_results() or None,
                secrets=target_secrets(spec.options()), name=name))
        finally:
            try:
                asyncio.run(t.aclose())
            except Exception:  # noqa: BLE001
                pass
        text = " ".join(completion.text.split())
        console.print(f"[green]ok[/green] target {escape(name)} ({escape(spec.kind)}) answered case "
                      f"{escape(case.id[:12])} in {time.monotonic() - t0:.1f} s: "
                      f"{escape(text[:160])}{'...' if len(text) > 160 else ''}", soft_wrap=True)


@app.command()
def status(run: RunArg) -> None:
    """Say what a run directory holds: answers, failures by kind with an example, measures, and what is left."""
    from fairpair.run._preflight import format_error_summary
    from fairpair.run._status import run_status

    st = run_status(run)
    console.print(f"run {escape(str(st.run_dir))}: battery [bold]{escape(st.battery)}[/bold]")
    for t in st.targets:
        console.print(f"target {escape(t.name)}: {t.answered}/{t.cases} answered, {t.failed} failed, "
                      f"{t.left} not sent yet")
        for line in format_error_summary(t.errors, total_kinds=t.error_kinds):
            console.print(escape(line), soft_wrap=True)
    for m, c in st.measures.items():
        console.print(f"measure {escape(m)}: {c.get('ok', 0)} measured, {c.get('missing', 0)} not applicable, "
                      f"{c.get('failed', 0)} failed")
    for k, n in st.events.items():
        console.print(f"events: {escape(k)} x {n}")
    console.print(f"analysis: {'results.json written' if st.analyzed else 'not run'}; "
                  f"report: {'written' if st.reported else 'not written'}")
    if st.todo:
        console.print("left to do:")
        for cmd in st.todo:
            console.print(f"  {escape(cmd)}", soft_wrap=True)
    else:
        console.print("nothing left to do")
