"""The one vocabulary of the command line: argument and option types declared once.

Every command takes its options from here, so an option means the same thing
and is spelled the same way everywhere:

- ``--out/-o PATH`` is the output path (file or folder) of every command that
  writes one; the old spelling ``--output`` still works, hidden, and prints a
  deprecation line (:func:`renamed`).
- ``--json`` is always a flag: print JSON instead of the summary (with
  ``--out``, where a command has both, write it there).
- ``--concurrency``, ``--timeout``, ``--max-attempts``, ``--target``,
  ``--lang``, ``--templates``, ``--axes``, ``--yes``, ``--quiet`` and the
  ``--measure/--analyze/--report`` stage switches are declared here once.
- A choice is an :class:`enum.Enum`; a value outside it exits 2 with
  ``unknown <what> '<value>'; <option> must be a, b or c`` (:func:`choice`).
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperCommand

from fairpair.errors import FairpairError

E = TypeVar("E", bound=enum.Enum)


# ---------------------------------------------------------------- choices


class Engine(enum.StrEnum):
    """Where ``fairpair run`` sends cases from: this process (asyncio) or a Ray actor pool."""

    inprocess = "inprocess"
    ray = "ray"


class Lang(enum.StrEnum):
    """Language of a battery or a report (the two that ship texts and lexicons)."""

    es = "es"
    en = "en"


class ExportFormat(enum.StrEnum):
    """Table format of ``fairpair export`` (:data:`fairpair.report._export.FORMATS`)."""

    csv = "csv"
    parquet = "parquet"


class ImportFormat(enum.StrEnum):
    """Answer file format of ``fairpair import-answers`` (:data:`fairpair.importers._read.FORMATS`)."""

    auto = "auto"
    jsonl = "jsonl"
    csv = "csv"
    chat_completions = "chat-completions"


class ReleaseFormat(enum.StrEnum):
    """Column layout of the result files ``fairpair reanalyze`` reads (:data:`fairpair.persona._reanalyze.FORMATS`)."""

    tan_lee_2025 = "tan-lee-2025"


class Ddof(enum.StrEnum):
    """Delta degrees of freedom of the standard deviation across cells: 0, 1 or both."""

    zero = "0"
    one = "1"
    both = "both"


def _words(values: list[str]) -> str:
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]


def unknown_value(what: str, value: str, valid: list[str], *, must: str) -> typer.BadParameter:
    """The usage error (exit 2, no traceback) for a ``value`` outside ``valid``:
    ``unknown <what> '<value>'; <must> a, b or c`` and, for a near miss (:func:`difflib.get_close_matches`),
    `` (did you mean 'b'?)``. ``must`` names what is constrained, e.g. ``"--target must be"``."""
    import difflib

    close = difflib.get_close_matches(value, valid, n=1)
    return typer.BadParameter(f"unknown {what} '{value}'; {must} {_words(valid)}"
                              + (f" (did you mean '{close[0]}'?)" if close else ""))


def choice(enum_type: type[E], *decls: str, what: str | None = None, **kwargs: Any) -> Any:
    """A typer option whose value is a member of ``enum_type``.

    A value outside the enum exits 2 (click's usage error, no traceback) with
    ``unknown <what> '<value>'; <option> must be a, b or c``; ``what`` defaults
    to the option's name. The help lists the values.
    """
    values = [m.value for m in enum_type]
    name = next((d for d in decls if d.startswith("--")), decls[0] if decls else "value")
    what = what or name

    def parse(value: Any) -> E:
        if isinstance(value, enum_type):
            return value
        try:
            return enum_type(value)
        except ValueError:
            raise typer.BadParameter(f"unknown {what} '{value}'; {name} must be {_words(values)}") from None

    return typer.Option(*decls, parser=parse, metavar="[" + "|".join(values) + "]", **kwargs)


# ---------------------------------------------------------------- arguments

BatteryArg = Annotated[Path, typer.Argument(help="Battery YAML file.", show_default=False)]
RunArg = Annotated[Path, typer.Argument(help="Run directory (written by `fairpair run`).", show_default=False)]


# ---------------------------------------------------------------- selection and size

TemplatesOpt = Annotated[str | None, typer.Option(
    "--templates", help="Only templates (scenes) whose id or meta value matches these comma-separated glob "
    "patterns, e.g. 'work-*'.")]
AxesOpt = Annotated[str | None, typer.Option(
    "--axes", help="Only these comma-separated attributes / two-party axes, e.g. 'age,race'.")]
PricesOpt = Annotated[Path | None, typer.Option(
    "--prices", envvar="FAIRPAIR_PRICES", show_default=False,
    help="Price table (prices.yaml: per model, live and batch prices per million tokens, confirm_above; see "
         "examples/prices.yaml); also $FAIRPAIR_PRICES.")]

TargetsOpt = Annotated[list[str] | None, typer.Option(
    "--target", help="Only these targets of the battery (repeatable).")]

#: Above this many requests (conversations x turns x targets), ``run`` and ``expand`` ask for ``--yes``.
CONFIRM_REQUESTS = 100_000
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help=f"Proceed without asking when the battery is large "
                                      f"(over {CONFIRM_REQUESTS:,} requests).")]
#: ``run``'s ``--yes``: also past the price table's ``confirm_above`` (``--prices``)
RunYesOpt = Annotated[bool, typer.Option("--yes", "-y", help=f"Proceed without asking when the battery is large "
                                         f"(over {CONFIRM_REQUESTS:,} requests) or, with --prices, estimated "
                                         "above the price table's confirm_above.")]


# ---------------------------------------------------------------- model calls

ConcurrencyOpt = Annotated[int, typer.Option(
    "--concurrency", min=1, help="Parallel model calls (requests per target; judge calls for measure).")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds per model call.")]
MaxAttemptsOpt = Annotated[int, typer.Option(
    "--max-attempts", min=1, help="Tries per model call on retryable errors before it is stored as failed.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars and no running commentary: "
                                        "counts, tables, warnings and errors only.")]


# ---------------------------------------------------------------- the stages after a run

MeasureStageOpt = Annotated[bool, typer.Option("--measure/--no-measure", help="Measure the answers (values that "
                                               "came with imported answers are kept). With --no-measure and no "
                                               "answer measured yet, no results.json nor report is written.")]
AnalyzeStageOpt = Annotated[bool, typer.Option("--analyze/--no-analyze", help="Run the analysis plan after "
                                               "measuring.")]
ReportStageOpt = Annotated[bool, typer.Option("--report/--no-report", help="Write the report at the end.")]
GateOpt = Annotated[bool, typer.Option("--gate", help="Exit 1 when a pre-registered comparison fails.")]
IgnoreStatusOpt = Annotated[bool, typer.Option(
    "--ignore-status", help="The gate does not fail on an automatic comparison of answer statuses (one group "
                            "gets more failed, empty or refused answers).")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Also print each comparison's sentence, the "
                                          "adjusted p-values and pairs, and each stage's own summary.")]


# ---------------------------------------------------------------- output

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of the summary.")]
LangOpt = Annotated[Lang | None, choice(Lang, "--lang", what="report language",
                                           help="Report language: es or en (default: the battery's).")]


def out_option(help: str) -> Any:
    """``--out/-o``: the output path of a command (file or folder, said by ``help``)."""
    return typer.Option("--out", "-o", help=help)


#: The old spelling of ``--out`` (``--output``), hidden; see :func:`renamed`.
OldOutputOpt = Annotated[str | None, typer.Option("--output", hidden=True, help="Deprecated: use --out.")]


def renamed(old_value: Any, new_value: Any, *, old: str, new: str, default: Any = None) -> Any:
    """The value of an option given under its deprecated spelling ``old`` or its new one ``new``.

    Prints one deprecation line on standard error when ``old`` was used.

    Raises
    ------
    FairpairError
        Both spellings were given with different values.
    """
    if old_value is None:
        return new_value
    from fairpair.cli._app import err_console

    if new_value is not None and new_value != default and str(new_value) != str(old_value):
        raise FairpairError(f"{old} and {new} are the same option; give it once", key=new)
    err_console.print(f"deprecated: {old} is now {new} (same meaning); {old} will be removed", soft_wrap=True)
    return old_value


class JsonPathCompat(TyperCommand):
    """A command whose ``--json`` used to take a path (``--json FILE``): now ``--json --out FILE``.

    ``--json`` followed by a word that is not an option and not one of the
    command's ``.csv`` inputs is read in the old way, as ``--json --out WORD``,
    with a deprecation line; ``--json`` alone (or before another option) is the
    flag.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        args = list(args)
        for i, a in enumerate(args):
            if a == "--":
                break
            if a == "--json" and i + 1 < len(args):
                nxt = args[i + 1]
                if not nxt.startswith("-") and not nxt.lower().endswith(".csv"):
                    from fairpair.cli._app import err_console

                    err_console.print(f"deprecated: --json {nxt} is now --json --out {nxt} (same meaning)",
                                      soft_wrap=True)
                    args[i + 1:i + 1] = ["--out"]
                break
        return super().parse_args(ctx, args)
