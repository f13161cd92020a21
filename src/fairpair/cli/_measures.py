"""Commands of the measure stage: ``measure``, ``label`` (the blind labelling page) and ``calibrate
export|import|score`` (the judge against human raters).

The calibration library (sampling, label files, agreement) is
:mod:`fairpair.measures._labels` and :mod:`fairpair.measures._calibration`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from fairpair.cli._app import app, console
from fairpair.cli._options import (
    ConcurrencyOpt,
    Engine,
    MaxAttemptsOpt,
    OldOutputOpt,
    QuietOpt,
    RunArg,
    TimeoutOpt,
    out_option,
    renamed,
)


@app.command()
def measure(
    run: RunArg,
    measure_names: Annotated[list[str] | None, typer.Option("--measure", "-m",
                                                               help="Only this measure (repeatable).")] = None,
    concurrency: ConcurrencyOpt = 8,
    timeout: TimeoutOpt = 120.0,
    max_attempts: MaxAttemptsOpt = 5,
    quiet: QuietOpt = False,
    engine: Annotated[Engine, typer.Option(help="inprocess: the judge's calls and the embeddings in this "
                                           "process; ray: on a Ray actor pool, each actor holding the judge "
                                           "(or the embedder) (pip install 'fairpair[ray]'); this process stays "
                                           "the store's only writer.")] = Engine.inprocess,
    address: Annotated[str | None, typer.Option(help="Ray cluster for --engine ray: 'auto' (the running "
                                                   "cluster) or ray://HOST:10001; default: a local Ray.")] = None,
    actors: Annotated[int | None, typer.Option(min=1, help="Actors of each Ray pool (default: the free CPUs, "
                                                  "at most --concurrency).")] = None,
    batch: Annotated[bool, typer.Option("--batch", help="Send the judge's calls (judge, pairwise in both orders, "
                                        "llm_extract) through its provider's batch API (openai or anthropic "
                                        "judge): submit, then come back later; `fairpair measure RUN` polls and "
                                        "stores the answers. See docs/batch.md.")] = False,
) -> None:
    """Measure every stored answer of a run (resumable: stored measurements are kept)."""
    from fairpair import pipeline
    from fairpair._progress import progress_enabled
    from fairpair.errors import FairpairError
    from fairpair.run import RunSettings

    if engine is not Engine.ray and (address is not None or actors is not None):
        raise FairpairError("--address and --actors belong to --engine ray", key="--engine",
                            hint="add --engine ray")
    if engine is Engine.ray:
        from fairpair.run import require_ray

        require_ray()  # exit 2 with the install line before anything is opened
    if engine is Engine.ray and batch:
        raise FairpairError("--batch sends the judge's calls through the provider's batch API, not an engine; "
                            "drop --engine ray", key="--batch")
    calls = RunSettings(concurrency=concurrency, timeout=timeout, max_attempts=max_attempts, engine=engine.value,
                        address=address, actors=actors)
    with progress_enabled(not quiet):
        res = pipeline.measure(run, pipeline.Settings(console=console, measures=tuple(measure_names or ()) or None,
                                                      judge_calls=calls, batch=batch))
    print_batch_lines(res.output.batch, f"fairpair measure {run}")


def print_batch_lines(summary, again: str) -> bool:
    """Print what a session did with provider batches; True (and when to come back) while some are open."""
    if summary is None:
        return False
    for line in summary.lines():
        console.print(escape(line), soft_wrap=True)
    if summary.pending:
        console.print(f"the provider answers batches within 24 hours; come back later (any machine with this run "
                      f"directory) and run `{escape(again)}` to fetch and store the answers", soft_wrap=True)
    return summary.pending


@app.command()
def label(
    run: RunArg,
    measure_name: Annotated[str | None, typer.Option(
        "--measure", help="The judge measure row to label, such as tone.warmth (default: the first judge "
                          "measure's first dimension).")] = None,
    rater: Annotated[str | None, typer.Option(help="Your name as a rater (default: asked on the page).")] = None,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: a free one).")] = 8779,
    n: Annotated[int | None, typer.Option("--n", min=1, help="Answers in the labelling sample, drawn the first "
                                             "time or with --new-sample (default 100).")] = None,
    seed: Annotated[int | None, typer.Option(help="Sampling seed, the first time (default 0) or with "
                                                "--new-sample (default: the latest sample's + 1).")] = None,
    new_sample: Annotated[bool, typer.Option("--new-sample", help="Draw another labelling sample and label it; "
                                             "the earlier samples and their labels are kept.")] = False,
) -> None:
    """Label answers by hand on a local page (127.0.0.1): blind, one at a time, stored as you go."""
    from fairpair.measures import open_label_session, serve_labels

    session = open_label_session(run, measure=measure_name, n=n, seed=seed, new_sample=new_sample)
    for note in session.notes:
        console.print(f"note: {escape(note)}", soft_wrap=True)
    s = session.sample
    console.print(f"labelling '{escape(session.measure.row)}': {len(s)} answers from {len(s.frame)} strata "
                  f"({s.design} sample '{escape(s.name)}', seed {s.seed}); each label is stored in "
                  f"{escape(str(run))} as it is given; `fairpair label {escape(str(run))} --new-sample` draws "
                  "another sample when this one is done", soft_wrap=True)

    def announce(url: str) -> None:
        console.print(f"open {url}  (Ctrl+C stops the page; nothing is lost)", soft_wrap=True)

    serve_labels(session, port=port, rater=rater, announce=announce)


calibrate_app = typer.Typer(help="Calibrate the tone judge against human raters.", no_args_is_help=True,
                            rich_markup_mode=None)
app.add_typer(calibrate_app, name="calibrate")


JudgeMeasureOpt = Annotated[str | None, typer.Option("--measure", help="The judge measure (default: the first).")]
KeyOpt = Annotated[Path | None, typer.Option("--key", help="Key CSV (default: the key stored in the run).")]


@calibrate_app.command("export")
def calibrate_export(
    run: RunArg,
    out: Annotated[Path, out_option("Labels CSV to write.")] = Path("labels.csv"),
    output_old: OldOutputOpt = None,
    n: Annotated[int, typer.Option("--n", min=1, help="Answers to sample.")] = 100,
    measure_name: Annotated[str | None, typer.Option("--measure", help="The judge measure (default: the first).")]
    = None,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
) -> None:
    """Write a stratified sample of masked answers for human raters (without the judge's scores)."""
    from fairpair.measures import export_labels

    out = Path(renamed(output_old, out, old="--output", new="--out", default=Path("labels.csv")))
    res = export_labels(run, out, n=n, measure=measure_name, seed=seed)
    console.print(f"wrote {res.n} masked answers from {res.strata} (group, template) cells to "
                  f"{escape(str(res.labels))}; raters fill the columns {', '.join(res.dimensions)}")
    console.print(f"key (sample -> case, group): {escape(str(res.key))}; do not give it to the raters")


@calibrate_app.command("import")
def calibrate_import(
    run: RunArg,
    labels: Annotated[list[Path], typer.Argument(help="Filled-in labels CSV(s), one per rater (the file's "
                                                 "name is the rater's).", show_default=False)],
    measure_name: JudgeMeasureOpt = None,
    key: KeyOpt = None,
) -> None:
    """Store raters' filled-in labels files in the run, where `analyze` reads them with the labelling page's."""
    from fairpair.measures import import_label_files

    res = import_label_files(run, labels, measure=measure_name, key=key)
    for rater, k in res.labels.items():
        console.print(f"{escape(rater)}: {k} new label(s) of '{escape(res.measure)}' stored")


@calibrate_app.command("score")
def calibrate_score(
    run: RunArg,
    labels: Annotated[list[Path], typer.Argument(help="Labels CSV(s), one per rater.", show_default=False)],
    measure_name: JudgeMeasureOpt = None,
    key: KeyOpt = None,
) -> None:
    """Agreement of the judge with human raters: Cohen's kappa, Fleiss, Krippendorff, confusion, by group."""
    from fairpair.measures import score_label_files

    reports = score_label_files(run, labels, measure=measure_name, key=key)
    for d, rep in reports.items():
        t = Table("statistic", "value", "interpretation", title=f"{d}: {rep.n_items} items "
                  f"(quadratic-weighted kappa; ordinal alpha)", title_justify="left")
        for _, row in rep.summary().iterrows():
            t.add_row(escape(row["measure"]), f"{row['value']:.3f}", escape(str(row["interpretation"])))
        console.print(t)
        cm = rep.confusion.to_frame()
        ct = Table("human \\ judge", *map(str, cm.columns), title="confusion matrix (human consensus x judge)",
                   title_justify="left")
        for idx, row in cm.iterrows():
            ct.add_row(str(idx), *map(str, row.tolist()))
        console.print(ct)
        if rep.disagreement is not None:
            dt = Table("group", "n", "disagreement rate", "mean |error|", title="disagreement by group",
                       title_justify="left")
            for g, row in rep.disagreement.table.iterrows():
                dt.add_row(escape(str(g)), str(int(row["n"])), f"{row['disagreement_rate']:.3f}",
                           f"{row['mean_abs_error']:.3f}")
            console.print(dt)
            rt = rep.disagreement.rate_test
            console.print(f"equal disagreement rates: {rt.name} statistic {rt.statistic:.3f}, p = {rt.pvalue:.3g}")
        for note in rep.notes:
            console.print(f"note: {escape(note)}")
