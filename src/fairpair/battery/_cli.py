"""``fairpair init``: write a commented starter battery (from flags, or questions on a terminal)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from fairpair.cli import app, console


@app.command()
def init(
    output: Annotated[Path, typer.Argument(help="Battery file to write (never overwritten).")] = Path("battery.yaml"),
    language: Annotated[Optional[str], typer.Option(help="es or en.")] = None,
    groups: Annotated[Optional[str], typer.Option(help="Comma-separated lexicons to compare, the reference "
                                                  "first (see `fairpair lexicons`).")] = None,
    target: Annotated[Optional[str], typer.Option(help="mock, openai, ollama, vllm, lmstudio, http or local.")] = None,
    url: Annotated[Optional[str], typer.Option(help="The target's base URL (openai kinds) or URL (http).")] = None,
    model: Annotated[Optional[str], typer.Option(help="Model name for an OpenAI-compatible server.")] = None,
    api_key_env: Annotated[Optional[str], typer.Option(help="Name of the environment variable holding the "
                                                       "API key.")] = None,
    name: Annotated[str, typer.Option(help="Battery name.")] = "my_audit",
) -> None:
    """Write a commented starter battery that validates and runs; asks what flags leave out on a terminal."""
    from fairpair.battery import load_battery
    from fairpair.battery._init import TARGET_PRESETS, InitChoices, default_groups, starter_battery
    from fairpair.errors import FairpairError

    if output.exists():
        raise FairpairError("already exists; fairpair init never overwrites a file", file=output,
                            hint="give another file name")
    if not output.parent.is_dir():
        raise FairpairError("the folder does not exist", file=output.parent)
    ask = sys.stdin.isatty() and sys.stdout.isatty()
    if language is None:
        language = typer.prompt("language of the audit (es/en)", default="es") if ask else "es"
    if groups is None:
        d = ",".join(default_groups(language))
        groups = typer.prompt("groups to compare (lexicons, reference first)", default=d) if ask else d
    if target is None:
        target = typer.prompt(f"target ({'/'.join(TARGET_PRESETS)})", default="mock") if ask else "mock"
    if url is None and ask and TARGET_PRESETS.get(target, {}).get("url"):
        url = typer.prompt("target URL", default=TARGET_PRESETS[target]["url"])
    choices = InitChoices(name=name, language=language, groups=tuple(g.strip() for g in groups.split(",") if g.strip()),
                          target=target, url=url, model=model, api_key_env=api_key_env)
    text = starter_battery(choices)
    try:
        with output.open("x", encoding="utf-8") as fh:  # "x": never overwrite, even in a race
            fh.write(text)
    except OSError as exc:
        raise FairpairError(f"cannot write the battery: {exc.strerror}", file=output) from None
    lb = load_battery(output)  # what init writes always validates
    console.print(f"[green]wrote[/green] {escape(str(output))}: battery '{escape(lb.battery.name)}', "
                  f"{len(lb.battery.templates)} templates, target {escape(target)}")
    console.print(f"next: fairpair plan {escape(str(output))}; fairpair check {escape(str(output))}; "
                  f"fairpair run {escape(str(output))}", soft_wrap=True)
