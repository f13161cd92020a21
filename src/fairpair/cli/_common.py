"""What several commands share: loading a battery with a selection, the size check, the warnings."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.markup import escape

from fairpair.cli._app import console
from fairpair.cli._options import CONFIRM_REQUESTS
from fairpair.errors import FairpairError


def split_list(v: str | None) -> list[str] | None:
    """``'a, b,'`` -> ``['a', 'b']``; nothing -> ``None``."""
    return [x.strip() for x in v.split(",") if x.strip()] if v else None


def load(path: Path, templates: str | None = None, axes: str | None = None):
    """The battery at ``path``, restricted to ``--templates`` and ``--axes`` (comma-separated)."""
    from fairpair.battery import load_battery, select

    return select(load_battery(path), templates=split_list(templates), axes=split_list(axes))


def confirm_size(lb, yes: bool, what: str) -> None:
    """Stop a very large battery before it is sent or written, unless ``--yes`` (or a yes on a terminal).

    Raises
    ------
    FairpairError
        Over :data:`~fairpair.cli._options.CONFIRM_REQUESTS` requests, no ``--yes``, and no terminal to
        ask on (or a no).
    """
    if yes:
        return
    from fairpair.cases import plan as make_plan

    p = make_plan(lb)  # arithmetic in the repetitions: one repetition is expanded
    if p.requests <= CONFIRM_REQUESTS:
        return
    size = (f"{p.conversations:,} conversations per target, {p.requests:,} requests, about "
            f"{p.prompt_tokens:,} prompt tokens (estimate)")
    if sys.stdin.isatty() and sys.stdout.isatty():
        if typer.confirm(f"this battery {what} {size}; continue?", default=False):
            return
        raise FairpairError(f"stopped: the battery {what} {size}", file=lb.path)
    raise FairpairError(f"this battery {what} {size}; pass --yes to proceed", file=lb.path,
                        hint="`fairpair plan BATTERY` shows the sizes; lower 'repetitions' or select templates "
                             "with --templates")


def design_warnings(lb, p=None) -> None:
    """Print, before anything is sent, the comparisons whose design cannot support a verdict."""
    from fairpair.analysis import plan_warnings
    from fairpair.cases import plan as make_plan

    for w in plan_warnings(lb, p if p is not None else make_plan(lb)):
        console.print(f"[magenta]warning:[/magenta] {escape(w)}")


def warn_ambiguous_names(b) -> None:
    """Warn about variants (or parts of names) that are common words of the battery's language: the
    masker blinds them only where they are used as names, so the judge may see them elsewhere."""
    from fairpair.measures import masker_for

    try:
        masker = masker_for(b)
    except ValueError:
        return  # the measure stage reports a masking error with its key
    terms = set(masker.group_terms)
    # a group's reference word ('china') is not a variant: each is named for what it is
    for what, items in (("variant(s)", [a for a in masker.ambiguous if a not in terms]),
                        ("group reference(s)", [a for a in masker.ambiguous if a in terms])):
        if items:
            console.print(f"[yellow]warning:[/yellow] {what} {', '.join(map(escape, items))} are (or contain) "
                          f"common words of '{escape(b.language)}': they are masked only where used as a name "
                          "(after a title or greeting, or capitalised mid-sentence); prefer unambiguous "
                          + ("variants" if what.startswith("variant") else "references"), soft_wrap=True)


def warn_in_use(run: Path, what: str) -> None:
    """Warn that another process (a ``run`` or ``measure``) is writing ``run``: ``what`` (``"the report
    shows"``, ...) only what was stored so far."""
    from fairpair.store import RunLock

    holder = RunLock.holder(run)
    if holder is not None:
        console.print(f"[yellow]warning:[/yellow] {escape(str(run))} is in use by {escape(holder)} (a run or "
                      f"measure is writing it): {what} only what was stored so far; run this again when "
                      "it has finished", soft_wrap=True)
