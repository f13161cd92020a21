"""Commands of the battery: ``init``, ``validate``, ``plan``, ``lexicons``, ``schema``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from fairpair.battery import TARGET_PRESETS
from fairpair.cli._app import app, console
from fairpair.cli._common import design_warnings, load, warn_ambiguous_names
from fairpair.cli._options import (
    AxesOpt,
    BatteryArg,
    JsonOpt,
    Lang,
    PricesOpt,
    TargetsOpt,
    TemplatesOpt,
    choice,
    renamed,
    unknown_value,
)
from fairpair.errors import FairpairError


@app.command()
def validate(battery: BatteryArg) -> None:
    """Check a battery file: schema, signals, slots, designs, targets, measures and plan."""
    lb = load(battery)
    b = lb.battery
    console.print(f"[green]ok[/green] {escape(str(battery))}: battery '{escape(b.name)}' "
                  f"(schema {b.schema_version}), {len(b.templates)} templates, "
                  f"{len(b.attributes)} attributes, {len(b.designs)} designs, sha256 {lb.sha256[:12]}")
    for i, d in enumerate(b.designs):
        line = d.summary(b)
        if line:
            console.print(f"  design {escape(b.design_id(i))}: {escape(line)}")
    warn_ambiguous_names(b)
    design_warnings(lb)
    from fairpair.battery import number_text_warnings

    for w in number_text_warnings(lb):  # documented: the text as written, never silently a number
        console.print(f"[yellow]warning:[/yellow] {escape(w)}", soft_wrap=True)
    if not b.target_specs():  # valid as a plan, but nothing to send it to
        console.print("[bold yellow]warning:[/bold yellow] " + escape(
            "no 'target' (or 'targets'): the battery validates as a plan, but `fairpair check` and `fairpair run` "
            "refuse it until a target block is added (e.g. target: {kind: mock}, or include: [a target file from "
            "examples/targets/])"), soft_wrap=True)


@app.command()
def plan(
    ctx: typer.Context,
    battery: BatteryArg,
    power: Annotated[bool, typer.Option("--power",
                                        help="Add power planning: smallest detectable differences.")] = False,
    from_run: Annotated[Path | None, typer.Option("--from", help="With --power: take the variance components "
                                                     "from this pilot or earlier run directory.")] = None,
    as_json: JsonOpt = False,
    templates: TemplatesOpt = None,
    axes: AxesOpt = None,
    cost: Annotated[bool, typer.Option("--cost", help="Add the cost: input and output tokens per stage (answers, "
                                       "judge calls, embeddings), priced live and in batch with --prices.")] = False,
    prices: PricesOpt = None,
    target: TargetsOpt = None,
    from_discovered: Annotated[Path | None, typer.Option(
        "--from-discovered", help="Add the confirmed axes of this fragment (RUN/discovered/axes.yaml of `fairpair "
                                  "discover`) as comparisons of the plan, and print the block to paste.")] = None,
    discover: Annotated[bool, typer.Option("--discover", help="Also say whether each part of `fairpair discover`'s "
                                           "split would meet the estimand's design minimums.")] = False,
) -> None:
    """Print the design size: templates, variants, repetitions, conversations, pairs, comparisons, tokens."""
    import dataclasses

    from fairpair.analysis import plan_warnings
    from fairpair.cases import plan as make_plan

    # $FAIRPAIR_PRICES is for `run` too: only a --prices written on the command line asks for --cost
    from_env = getattr(ctx.get_parameter_source("prices"), "name", None) == "ENVIRONMENT"
    if prices is not None and not cost and not from_env:
        raise FairpairError("--prices only works with --cost (it prices the cost estimate)", key="--prices",
                            hint="add --cost")
    if target and not cost:
        raise FairpairError("--target only works with --cost here (the design's sizes are per target)",
                            key="--target", hint="add --cost")
    lb = load(battery, templates, axes)
    added = None
    if from_discovered is not None:
        from fairpair.analysis import from_discovered as take

        new, added = take(lb.battery, from_discovered)
        lb = dataclasses.replace(lb, battery=new)
    estimate = None
    if cost:
        from fairpair.cost import estimate_cost, load_prices
        from fairpair.run import select_targets

        select_targets(lb, target)  # a --target the battery lacks: exit 2
        price_table = load_prices(prices) if prices is not None else None  # a bad table: exit 2 first
        estimate = estimate_cost(lb, price_table, targets=target)
    p = make_plan(lb)
    data = p.as_dict()
    if estimate is not None:
        data["cost"] = estimate.as_dict()
    if added is not None:
        data["from_discovered"] = added
    if discover:
        from fairpair.analysis import discover_sizing

        data["discover"] = discover_sizing(p, lb.battery.analysis.generalize.names)
    if from_run is not None and not power:
        raise FairpairError("--from RUN only works with --power (it gives the power planning its variance components)")
    data["design_warnings"] = plan_warnings(lb, p)
    if power:
        from fairpair.analysis.power import components_from_run, label_residuals_from_run, power_plan

        comps = components_from_run(from_run) if from_run is not None else None
        resid = label_residuals_from_run(from_run) if from_run is not None else None
        data["power"] = power_plan(lb, p, components=comps, label_residual_sd=resid)
    if as_json:
        console.print_json(json.dumps(data, ensure_ascii=False))
        return
    console.print(f"battery [bold]{escape(p.battery)}[/bold]: {p.templates} templates, "
                  f"{p.repetitions} repetitions, {len(p.measures)} measures")
    labels = [("kind", "kind"), ("attribute", "attribute"), ("templates", "templates"),
              ("repetitions", "repetitions"), ("groups", "groups"), ("variants_per_group", "variants per group"),
              ("cells", "cells"), ("cells_per_axis", "cells per axis"),
              ("conditions_per_template", "conditions per template"), ("cases", "conversations"),
              ("candidates", "candidates per prompt"), ("order", "order of the groups"),
              ("orders", "orders (rows of the square)"), ("orders_balanced", "orders balanced in every template"),
              ("matched_sets", "matched sets"), ("pairs", "matched pairs per comparison"),
              ("comparisons", "comparisons per measure")]
    for did, s in p.designs.items():
        t = Table(title=f"design {escape(did)}", show_header=False, title_justify="left")
        for key, label in labels:
            if key in s:
                v = s[key]
                t.add_row(label, escape(", ".join(f"{k}: {x}" for k, x in v.items())
                                        if isinstance(v, dict) else str(v)))
        console.print(t)
    console.print(f"conversations: [bold]{p.conversations}[/bold] per target; targets: {p.targets}; "
                  f"requests: {p.requests}; prompt tokens (estimate, chars/4): {p.prompt_tokens:,}")
    for e in p.exclusions:
        console.print(f"excluded in {escape(e['design'])}: {escape(e['reason'])} ({e['count']})")
    design_warnings(lb, p)
    for line in data.get("discover", []):
        console.print(escape(line), soft_wrap=True)
    if added is not None:
        import yaml

        console.print(f"taken from {escape(str(from_discovered))} (confirmed axes; paste into the battery to "
                      "pre-register them):", soft_wrap=True)
        console.print(escape(yaml.safe_dump(added, sort_keys=False, allow_unicode=True)), soft_wrap=True)
    if power:
        for line in data["power"].get("lines", []):
            console.print(escape(line))
    if estimate is not None:
        _print_cost(estimate)


def _print_cost(est) -> None:
    """The estimate as a table (one row per stage), the totals and the notes."""
    from fairpair.cost import APPROXIMATE

    cur = est.currency or ""
    money = (lambda v: "—" if v is None else f"{v:,.2f}")  # noqa: E731 - a row without a price: its note says so

    def total(mode: str) -> str:
        v = est.total(mode)
        if v is None:
            return f"{mode}: no price"
        return f"{mode} {v:,.2f} {cur}" + (" (rows without a price left out)" if est.unpriced(mode) else "")

    t = Table(title=f"cost before sending{f' ({cur}, prices from {est.prices_file})' if est.prices_file else ''}",
              title_justify="left", box=box.SIMPLE_HEAD)
    heads = ("stage", "name", "model", "calls", "input\ntokens", "output\n≤", "counted",
             *(("live", "batch") if est.prices_file else ()))
    numbers = ("calls", "input\ntokens", "output\n≤", "live", "batch")
    for col in heads:  # a number is never broken over lines: the names fold instead
        t.add_column(col, justify="right" if col in numbers else "left", overflow="fold",
                     no_wrap=col in numbers or col == "counted", min_width=7 if col == "stage" else None)
    for s in est.stages:
        how = "answers" if s.stage == "embeddings" else ("chars/4" if s.approximate else "tokenizer")
        row = [s.stage, escape(s.name), escape(s.model or "(none)"), f"{s.calls:,}",
               f"{'~' if s.approximate else ''}{s.input_tokens:,}", f"{s.output_tokens:,}", how]
        if est.prices_file:
            row += [money(s.live), money(s.batch)]
        t.add_row(*row)
    console.print(t)
    line = f"total: {est.input_tokens:,} input tokens, at most {est.output_tokens:,} output tokens"
    if est.prices_file:
        line += f"; {total('live')}, {total('batch')}"
        if est.confirm_above is not None:
            line += f" (`fairpair run` asks above {est.confirm_above:,.2f} {cur})"
    else:
        line += "; no prices: give --prices prices.yaml (examples/prices.yaml) to see the cost"
    console.print(line, soft_wrap=True)
    for label in dict.fromkeys(s.counted for s in est.stages if not s.approximate and s.stage != "embeddings"):
        console.print(f"tokenizer: {escape(label)}", soft_wrap=True)
    if any(s.approximate for s in est.stages):
        console.print(f"~ {escape(APPROXIMATE)} (an approximation: no tokenizer of these models ships in an "
                      "installed package)", soft_wrap=True)
    rules = ", ".join(dict.fromkeys(f"{s.name} {s.output_rule}" for s in est.stages if s.stage != "embeddings"))
    console.print(f"output ≤: each call's max_tokens, an upper bound ({escape(rules)}); embeddings: each answer "
                  "counted at its target's output bound", soft_wrap=True)
    for n in est.notes:
        console.print(f"[yellow]note:[/yellow] {escape(n)}", soft_wrap=True)


def _lexicon_name(value: str | None) -> str | None:
    """``NAME`` of ``lexicons``: a built-in lexicon; any other text exits 2 with the valid names and, for a
    near miss, a "did you mean"."""
    from fairpair.battery import lexicon_names

    if value is None or value in lexicon_names():
        return value
    raise unknown_value("lexicon", value, lexicon_names(), must="NAME must be")


def _clip(text: str, width: int, sep: str = " ") -> str:
    """``text`` whole when it has at most ``width`` characters, else cut at the last ``sep`` that leaves
    room for ``" …"`` (never inside a word or a name)."""
    if len(text) <= width:
        return text
    cut = text.rfind(sep, 0, width - 1)
    return (text[:cut] if cut > 0 else text[:width - 1]).rstrip(" ,;") + " …"


@app.command()
def lexicons(
    name: Annotated[str | None, typer.Argument(
        parser=_lexicon_name, metavar="NAME", show_default=False,
        help="Show this lexicon in full: every name, its labels, the full source and caveat.")] = None,
) -> None:
    """List the built-in name lexicons (each source once, in full); with NAME, show that lexicon in full."""
    from fairpair.battery import all_lexicons

    specs = all_lexicons()
    if name is not None:
        spec = specs[name]
        console.print(f"[bold]{escape(name)}[/bold] ({len(spec['names'])} names, {escape(spec['file'])})")
        for lang, label in spec["label"].items():
            console.print(f"label ({escape(lang)}): {escape(label)}")
        console.print(f"names: {escape(', '.join(spec['names']))}")
        console.print(f"source: {escape(spec['source'])}")
        if spec["caveat"]:
            console.print(f"caveat: {escape(spec['caveat'])}")
        return
    t = Table("lexicon", "names")
    by_source: dict[str, list[str]] = {}
    for lex, spec in specs.items():
        t.add_row(escape(lex), escape(_clip(", ".join(spec["names"]), 44, sep=",") + f" ({len(spec['names'])})"))
        by_source.setdefault(spec["source"], []).append(lex)
    console.print(t)
    for source, lexs in by_source.items():  # each source once, in full, with the lexicons it is for
        console.print(f"source of {escape(', '.join(lexs))}: {escape(source)}")
    console.print("fairpair lexicons NAME shows one in full: every name, its labels, the source and caveat")


@app.command()
def schema() -> None:
    """Print the battery's JSON schema (generated from the code), every target and measure option included."""
    from fairpair.battery import battery_json_schema

    console.print_json(json.dumps(battery_json_schema(), ensure_ascii=False))


def _init_target(value: str | None) -> str | None:
    """``--target`` of ``init``: one of the target kinds ``init`` writes (:data:`fairpair.battery.TARGET_PRESETS`).

    A registered target kind that ``init`` has no starter for (``python``, ``litellm``, a plugin's) and any
    other text exit 2 with the option, the valid values and, for a near miss, a "did you mean".
    """
    from fairpair._plugins import plugin_names

    if value is None or value in TARGET_PRESETS:
        return value
    valid = list(TARGET_PRESETS)
    if value in plugin_names("fairpair.targets"):
        words = ", ".join(valid[:-1]) + " or " + valid[-1]
        raise typer.BadParameter(f"init has no starter for the target kind '{value}'; --target must be {words} "
                                 f"(write a '{value}' target block by hand: see examples/targets/)")
    raise unknown_value("target", value, valid, must="--target must be")


#: The battery's ``name`` rule (an id, :data:`fairpair.battery._strict._ID`), for ``init``'s names.
NAME_RULE = r"[A-Za-z0-9_][A-Za-z0-9_.\-]*"


def battery_name(text: str) -> str:
    """``text`` (a file's stem, a rejected ``--name``) made a battery name: accents dropped, every run of
    other characters than letters, digits, ``_``, ``.`` and ``-`` one ``_``, leading and trailing ``_.-``
    removed; ``my_audit`` when nothing is left. ``"Tienda Online"`` -> ``Tienda_Online``."""
    import unicodedata

    ascii_ = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", ascii_).strip("_.-") or "my_audit"


def _interactive() -> bool:
    """True when ``init`` may ask what its options leave out: stdin and stdout are a terminal."""
    return sys.stdin.isatty() and sys.stdout.isatty()


@app.command()
def init(
    output: Annotated[Path, typer.Argument(help="Battery file to write (never overwritten).")] = Path("battery.yaml"),
    lang: Annotated[Lang | None, choice(Lang, "--lang", what="language", help="Language of the audit: es or en.")]
    = None,
    language_old: Annotated[str | None, typer.Option("--language", hidden=True, help="Deprecated: use --lang.")]
    = None,
    groups: Annotated[str | None, typer.Option(help="Comma-separated lexicons to compare, the reference "
                                                  "first (see `fairpair lexicons`).")] = None,
    target: Annotated[str | None, typer.Option(
        parser=_init_target, metavar="[" + "|".join(TARGET_PRESETS) + "]",
        help="The target kind to start from (ollama, vllm and lmstudio are openai targets with their "
        "servers' default URL).")] = None,
    url: Annotated[str | None, typer.Option(help="The target's base URL (openai kinds) or URL (http).")] = None,
    model: Annotated[str | None, typer.Option(help="Model name for an OpenAI-compatible server (default: the "
                                                 "preset's, e.g. llama3.2 for ollama; asked on a terminal).")
                     ] = None,
    api_key_env: Annotated[str | None, typer.Option(help="Name of the environment variable holding the "
                                                       "API key.")] = None,
    name: Annotated[str | None, typer.Option(help="Battery name (default: the file's name without its extension, "
                                                "e.g. shop for shop.yaml, with what a name may not hold "
                                                "replaced by '_').")] = None,
) -> None:
    """Write a commented starter battery that validates and runs; asks what flags leave out on a terminal."""
    from fairpair.battery import InitChoices, default_groups, load_battery, starter_battery

    language = renamed(language_old, lang.value if lang else None, old="--language", new="--lang")
    if name is None:
        name = battery_name(output.stem)
    elif not re.fullmatch(NAME_RULE, name):
        raise FairpairError(f"{name!r} is not a battery name: use letters, digits, '_', '.' and '-' (no spaces or "
                            "accents); nothing was written", key="--name", hint=f"--name {battery_name(name)}")
    if output.exists():
        raise FairpairError("already exists; fairpair init never overwrites a file", file=output,
                            hint="give another file name")
    if not output.parent.is_dir():
        raise FairpairError("the folder does not exist", file=output.parent)
    ask = _interactive()
    if language is None:
        language = typer.prompt("language of the audit (es/en)", default="es") if ask else "es"
    if groups is None:
        d = ",".join(default_groups(language))
        groups = typer.prompt("groups to compare (lexicons, reference first)", default=d) if ask else d
    if target is None:
        # value_proc: a value outside TARGET_PRESETS prints _init_target's message and asks again
        target = typer.prompt("target (" + "|".join(TARGET_PRESETS) + ")", default="mock",
                              value_proc=_init_target) if ask else "mock"
    if url is None and ask and TARGET_PRESETS.get(target, {}).get("url"):
        url = typer.prompt("target URL", default=TARGET_PRESETS[target]["url"])
    if model is None and ask and TARGET_PRESETS.get(target, {}).get("model"):  # the OpenAI-compatible kinds
        model = typer.prompt("model name (as the server lists it)", default=TARGET_PRESETS[target]["model"])
    choices = InitChoices(name=name, language=language, groups=tuple(g.strip() for g in groups.split(",") if g.strip()),
                          target=target, url=url, model=model, api_key_env=api_key_env)
    text = starter_battery(choices)
    try:
        with output.open("x", encoding="utf-8") as fh:  # "x": never overwrite, even in a race
            fh.write(text)
    except OSError as exc:
        raise FairpairError(f"cannot write the battery: {exc.strerror}", file=output) from None
    try:
        lb = load_battery(output)  # what init writes always validates
    except FairpairError:
        output.unlink()  # the file init just created: never leave a battery that does not validate
        raise
    console.print(f"[green]wrote[/green] {escape(str(output))}: battery '{escape(lb.battery.name)}', "
                  f"{len(lb.battery.templates)} templates, target {escape(target)}")
    console.print(f"next: fairpair plan {escape(str(output))}; fairpair check {escape(str(output))}; "
                  f"fairpair run {escape(str(output))}", soft_wrap=True)
    console.print(_offline_hint(output, choices), soft_wrap=True)


def _offline_hint(output: Path, c) -> str:
    """What ``init`` prints last: for the mock, what its planted gap should give; for any other target,
    the one command that writes and runs the same battery on the mock target (no server needed)."""
    import shlex

    from fairpair.battery._init import STARTER_BIAS

    if c.target == "mock":
        return escape(f"the mock target has a planted gap (bias: the {c.groups[1]} names get a refund "
                      f"{STARTER_BIAS:.0%} of the time, the others 70%), so the run should end in a fail for the "
                      f"refund comparison; delete `bias` in {output} for a mock without it")
    mock = output.with_name(f"{output.stem}_mock{output.suffix or '.yaml'}")
    flags = ["--target", "mock", "--lang", c.language, "--groups", ",".join(c.groups)]
    if c.name != battery_name(mock.stem):  # the same name, so the same cases (a case's id holds the name)
        flags += ["--name", c.name]
    cmd = shlex.join(["fairpair", "init", str(mock), *flags]) + " && " + shlex.join(["fairpair", "run", str(mock)])
    return escape(f"offline first? the same battery on the mock target, with a planted gap: {cmd}")
