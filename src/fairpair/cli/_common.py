"""What several commands share: loading a battery with a selection, the size check, the warnings."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from fairpair.cli._app import console
from fairpair.cli._options import CONFIRM_REQUESTS
from fairpair.errors import FairpairError

if TYPE_CHECKING:
    from fairpair.battery import Battery, LoadedBattery
    from fairpair.cases import Plan


def split_list(v: str | None) -> list[str] | None:
    """``'a, b,'`` -> ``['a', 'b']``; nothing -> ``None``."""
    return [x.strip() for x in v.split(",") if x.strip()] if v else None


def load(path: Path, templates: str | None = None, axes: str | None = None) -> LoadedBattery:
    """The battery at ``path``, restricted to ``--templates`` and ``--axes`` (comma-separated)."""
    from fairpair.battery import load_battery, select

    return select(load_battery(path), templates=split_list(templates), axes=split_list(axes))


def confirm_size(lb: LoadedBattery, yes: bool, what: str) -> None:
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
    ask_or_stop(f"this battery {what} {size}", file=lb.path,
                hint="`fairpair plan BATTERY` shows the sizes; lower 'repetitions' or select templates with "
                     "--templates")


def on_terminal() -> bool:
    """Whether a person can be asked: standard input and output are both a terminal."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def ask_or_stop(what: str, *, file, hint: str) -> None:
    """Ask "``what``; continue?" on a terminal; without one (or on a no) stop with exit code 2.

    Raises
    ------
    FairpairError
        No terminal to ask on (the message says to pass ``--yes``), or the person answered no.
    """
    if on_terminal():
        if typer.confirm(f"{what}; continue?", default=False):
            return
        raise FairpairError(f"stopped: {what}", file=file)
    raise FairpairError(f"{what}; pass --yes to proceed", file=file, hint=hint)


def confirm_cost(lb: LoadedBattery, prices_path: Path | None, yes: bool, *, targets: list[str] | None,
                 batch: bool) -> None:
    """Stop an audit estimated above the price table's ``confirm_above`` before it is sent, unless
    ``--yes`` (or a yes on a terminal). The estimate is :func:`fairpair.cost.estimate_cost`'s total, in
    batch prices with ``--batch``; nothing is estimated without ``--prices`` or without ``confirm_above``.

    Raises
    ------
    FairpairError
        A bad price table (file, line, key); over ``confirm_above`` with no ``--yes`` and no terminal, or a no.
    """
    if prices_path is None:
        return
    from fairpair.cost import estimate_cost, load_prices

    prices = load_prices(prices_path)  # a bad table is an error even with --yes: it was asked for
    limit = prices.table.confirm_above
    if yes or limit is None:
        return
    est = estimate_cost(lb, prices, targets=targets)
    mode = "batch" if batch else "live"
    total = est.total(mode) or 0.0
    left = est.unpriced(mode)
    if left:  # confirm_above sees only what is priced: said, never silent
        names = ", ".join(dict.fromkeys(s.model or f"{s.stage} {s.name}" for s in left))
        console.print(f"[yellow]warning:[/yellow] no {mode} price in {escape(str(prices.path))} for {escape(names)}: "
                      f"confirm_above compares {total:,.2f} {est.currency} without them", soft_wrap=True)
    if total <= limit:
        return
    more = f", and more for {len(left)} stage(s) without a {mode} price" if left else ""
    ask_or_stop(f"this audit is estimated at {total:,.2f} {est.currency} ({mode} prices{more}), above "
                f"confirm_above {limit:,.2f} in {prices.path}", file=lb.path,
                hint=f"`fairpair plan {lb.path} --cost --prices {prices.path}` shows the estimate per stage")


def design_warnings(lb: LoadedBattery, p: Plan | None = None) -> None:
    """Print, before anything is sent, the comparisons whose design cannot support a verdict."""
    from fairpair.analysis import plan_warnings
    from fairpair.cases import plan as make_plan

    for w in plan_warnings(lb, p if p is not None else make_plan(lb)):
        console.print(f"[magenta]warning:[/magenta] {escape(w)}")


def warn_ambiguous_names(b: Battery) -> None:
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
