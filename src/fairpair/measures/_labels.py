"""Calibration samples and label files (``fairpair calibrate export|score``).

Calibration (the first seed, step 4: "calibra el juez: puntúa a mano una
muestra de 50 o 100 respuestas y comprueba que sus notas se parecen a las
tuyas"): ``export`` writes a stratified sample of *masked* answers with blank
rubric columns and without the judge's verdict (raters must not see it first:
the second seed notes that showing the AI's verdict before asking for
agreement validates plausibility, not correctness); ``score`` compares one or
more raters' filled-in files with the judge's stored scores
(:func:`fairpair.measures._calibration.score_labels`).
"""

from __future__ import annotations

import csv
import hashlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairpair.battery import recorded_battery
from fairpair.errors import FairpairError

__all__ = ["export_labels", "score_label_files", "import_label_files", "ExportResult", "ImportResult"]


# ---------------------------------------------------------------- export


@dataclass(frozen=True)
class ExportResult:
    """What ``calibrate export`` wrote: the labels file, the key file, the sample size and strata."""

    labels: Path
    key: Path
    n: int
    strata: int
    measure: str
    dimensions: tuple[str, ...]


#: The exported labels file's columns besides ``sample_id`` and the rubric's dimensions: shown to the rater
#: (``prompt``, ``answer``, masked) or theirs to write in (``comment``), never read back as labels.
EXPORT_EXTRA_COLUMNS = ("prompt", "answer", "comment")


def _sample_id(target: str, case_id: str) -> str:
    return "s" + hashlib.sha256(f"{target}|{case_id}".encode()).hexdigest()[:10]


def _judge_measure(battery, name: str | None):
    from fairpair.measures._runner import MeasureContext, build_measures
    from fairpair.measures.judge import ToneJudgeMeasure

    if name is None:
        names = [n for n, s in battery.measures.items() if s.kind == "judge"]
        if not names:
            raise FairpairError("the battery declares no 'judge' measure to calibrate", key="measures")
        name = names[0]
    m = build_measures(battery, [name])[name]
    if not isinstance(m, ToneJudgeMeasure):
        raise FairpairError(f"measure '{name}' is a '{battery.measures[name].kind}' measure; calibration "
                            "compares rubric scores of a 'judge' measure", key=f"measures.{name}")
    ctx = MeasureContext(battery=battery)
    return name, m, m.rubric(ctx), ctx


def export_labels(run_dir: Path, out: Path, *, n: int = 100, measure: str | None = None,
                  seed: int = 0) -> ExportResult:
    """Write a stratified, masked sample for human raters and its key file.

    Strata are (group, template) cells; each stratum is shuffled (``seed``)
    and cells are visited in turn until ``n`` answers are taken, so every cell
    is represented as evenly as the sample allows. The labels CSV has
    ``sample_id, prompt, answer`` (both masked), one blank column per rubric
    dimension and ``comment``; rows are shuffled. The key CSV
    (``<labels>.key.csv``: sample id -> target, case, group, template) is for
    the analyst, not the raters, and the same key is recorded in the store.

    Raises
    ------
    FairpairError
        No such run, ``out`` is a folder, ``out`` or its key file already exists (never overwritten: the
        raters may have filled it in), no judge measure, or no answer to sample.
    """
    from fairpair.store import Run

    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise FairpairError("run directory not found", file=run_dir)
    out = Path(out)
    if out.is_dir():
        raise FairpairError("is a directory; give a file name such as labels.csv", file=out)
    for path in (out, out.with_name(out.stem + ".key.csv")):  # raters may have labelled it already
        if path.exists():
            raise FairpairError("already exists; a labels file (and its key) is never overwritten: the raters "
                                "may have filled it in", file=path, hint="give another -o, such as labels-2.csv")
    with Run.open(run_dir, "w") as run:
        store = run.store
        b = recorded_battery(run).battery
        name, m, rubric, ctx = _judge_measure(b, measure)
        cases = {c.id: c for c in store.iter_cases()}
        strata: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for r in store.responses(status="ok"):
            c = cases.get(r.case_id)
            if c is None or not (r.text or "").strip():
                continue
            strata.setdefault((c.group_label(), c.template), []).append((r.target, r.case_id))
        if not strata:
            raise FairpairError("the run has no answers to sample", file=run_dir)
        rng = random.Random(seed)
        keys = sorted(strata)
        for k in keys:
            strata[k].sort()
            rng.shuffle(strata[k])
        chosen: list[tuple[str, str, tuple[str, str]]] = []
        depth = 0
        while len(chosen) < n and any(depth < len(strata[k]) for k in keys):
            for k in keys:
                if depth < len(strata[k]) and len(chosen) < n:
                    chosen.append((*strata[k][depth], k))
            depth += 1
        rng.shuffle(chosen)
        texts = {(r.target, r.case_id): r.text or "" for r in store.responses(status="ok")}
        mk = ctx.masker
        dims = list(rubric)
        out.parent.mkdir(parents=True, exist_ok=True)
        key_path = out.with_name(out.stem + ".key.csv")
        key_rows = []
        with open(out, "x", newline="", encoding="utf-8") as fh:  # "x": never overwrite, even in a race
            w = csv.writer(fh)
            w.writerow(["sample_id", "prompt", "answer", *dims, "comment"])  # EXPORT_EXTRA_COLUMNS
            for target, case_id, (group, template) in chosen:
                c = cases[case_id]
                sid = _sample_id(target, case_id)
                w.writerow([sid, mk.mask(c.turns[-1] if c.turns else ""), mk.mask(texts[(target, case_id)]),
                            *([""] * len(dims)), ""])
                key_rows.append([sid, target, case_id, group, template])
        with open(key_path, "x", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["sample_id", "target", "case_id", "group", "template"])
            w.writerows(key_rows)
        store.event("calibration_export", {"measure": name, "labels": str(out), "seed": seed,
                                           "samples": {r[0]: [r[1], r[2]] for r in key_rows}})
        _record_sample(store, name, dims, chosen, strata, seed, str(out))
    return ExportResult(out, key_path, len(chosen), len(keys), name, tuple(dims))


def _record_sample(store, name: str, dims: list[str], chosen, strata, seed: int, label: str) -> None:
    """Store the exported sample of each dimension's row as a :class:`~fairpair.records.LabelSample`
    named after the labels file: each (group, template) cell's answers were shuffled and its first
    ``n_h`` taken, a simple random sample, so an answer's inclusion probability is ``n_h / N_h``."""
    from collections import Counter

    from fairpair.records import LabelSample, SampledAnswer

    taken = Counter(cell for *_, cell in chosen)
    answers = tuple(SampledAnswer(target=t, case_id=c, stratum="|".join(cell),
                                  probability=taken[cell] / len(strata[cell]), order=i)
                    for i, (t, c, cell) in enumerate(chosen))
    frame = {"|".join(cell): len(members) for cell, members in strata.items()}
    for d in dims:
        store.add_label_sample(LabelSample(measure=f"{name}.{d}", seed=seed, design="stratified", mixing=0.0,
                                           frame=frame, answers=answers, created_at="", name=label))


# ---------------------------------------------------------------- score


def _read_key(run_store, key: Path | None) -> dict[str, tuple[str, str]]:
    if key is not None:
        try:
            with open(key, newline="", encoding="utf-8-sig") as fh:
                rows = list(csv.DictReader(fh))
        except OSError as exc:
            raise FairpairError(f"cannot read the key file: {exc.strerror}", file=key) from None
        except UnicodeDecodeError as exc:
            raise FairpairError(f"not UTF-8 text (byte {exc.start}: {exc.reason}); give the key file "
                                "`fairpair calibrate export` wrote, as it was", file=key) from None
        except csv.Error as exc:
            raise FairpairError(f"not a readable CSV file: {exc}", file=key) from None
        if rows and not {"sample_id", "target", "case_id"} <= set(rows[0]):
            raise FairpairError("the key file needs columns sample_id, target, case_id", file=key)
        return {r["sample_id"]: (r["target"], r["case_id"]) for r in rows}
    out: dict[str, tuple[str, str]] = {}
    for e in run_store.events("calibration_export"):
        for sid, (t, c) in e.get("samples", {}).items():
            out[sid] = (t, c)
    return out


def _read_labels(path: Path, dims: list[str], levels: dict[str, dict[str, int]], known: dict[str, Any]
                 ) -> dict[str, dict[str, int | None]]:
    try:
        fh = open(path, newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise FairpairError(f"cannot read the labels file: {exc.strerror}", file=path) from None
    with fh:
        try:
            return _parse_labels(fh, path, dims, levels, known)
        except UnicodeDecodeError as exc:
            raise FairpairError(f"not UTF-8 text (byte {exc.start}: {exc.reason}); save the labels file as UTF-8 "
                                "CSV", file=path) from None
        except csv.Error as exc:
            raise FairpairError(f"not a readable CSV file: {exc}", file=path) from None


def _parse_labels(fh, path: Path, dims: list[str], levels: dict[str, dict[str, int]], known: dict[str, Any]
                  ) -> dict[str, dict[str, int | None]]:
    reader = csv.reader(fh)
    cols = next(reader, None) or []
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        raise FairpairError(f"column(s) {dup} appear more than once", file=path, line=1, key=dup[0])
    need = ["sample_id", *dims]
    missing = [c for c in need if c not in cols]
    if missing:
        raise FairpairError(f"missing column(s) {missing}", file=path, line=1,
                            hint=f"a labels file needs the columns {', '.join(need)}")
    # the export's own columns are read or shown to the rater; any other would be ignored without a word
    unknown = [c for c in cols if c not in (*need, *EXPORT_EXTRA_COLUMNS) and c.strip()]
    if unknown:
        raise FairpairError(f"unknown column(s) {unknown}: their values would not be read", file=path, line=1,
                            key=unknown[0],
                            hint="one rater per file: give a second rater's labels in a copy of the exported file "
                                 "(its name is the rater's); notes go in the 'comment' column")
    out: dict[str, dict[str, int | None]] = {}
    end = reader.line_num
    for cells in reader:
        line, end = end + 1, reader.line_num  # the row's first line: a masked answer spans several
        if not cells:
            continue
        extra = next((i for i, c in enumerate(cells[len(cols):], len(cols) + 1) if c.strip()), None)
        if extra is not None:  # its values would be dropped; blank trailing cells (a spreadsheet's) lose nothing
            raise FairpairError(f"{len(cells)} cells where the header has {len(cols)} columns: column {extra} "
                                f"holds {cells[extra - 1].strip()!r:.40} and has no header",
                                file=path, line=line, key=f"column {extra}",
                                hint="a value holding a comma must be quoted (\"like, this\"); a spreadsheet "
                                     "saved as CSV quotes it")
        row = dict(zip(cols, cells, strict=False))  # a short row leaves its last columns blank (as csv.DictReader)
        sid = (row.get("sample_id") or "").strip()
        if sid not in known:
            raise FairpairError(f"unknown sample id {sid!r}", file=path, line=line, key="sample_id",
                                hint="ids come from `fairpair calibrate export` on this run")
        if sid in out:
            raise FairpairError(f"sample id {sid!r} appears twice", file=path, line=line, key="sample_id")
        vals: dict[str, int | None] = {}
        for d in dims:
            raw = (row.get(d) or "").strip()
            if not raw:
                vals[d] = None
                continue
            v = levels[d].get(raw.lstrip("+").casefold())
            if v is None:
                raise FairpairError(f"label {raw!r} is not a level of '{d}'", file=path, line=line, key=d,
                                    hint=f"allowed: {', '.join(levels[d])} or blank")
            vals[d] = v
        out[sid] = vals
    return out


@dataclass(frozen=True)
class _RaterFiles:
    """What one or more raters' labels files hold, read against a run: the judge measure ``name``
    and its rubric dimensions' ``levels``, the key (sample id -> (target, case id)), the run's cases,
    and per rater (the file's stem; a repeated stem gets a ``'``) sample id -> dimension -> level."""

    name: str
    levels: dict[str, set[int]]
    known: dict[str, tuple[str, str]]
    cases: dict[str, Any]
    raters: dict[str, dict[str, dict[str, int | None]]]


def _read_rater_files(run, run_dir: Path, files: list[Path], measure: str | None, key: Path | None) -> _RaterFiles:
    if not files:
        raise FairpairError("give at least one labels file")
    store = run.store
    b = recorded_battery(run).battery
    name, m, rubric, _ = _judge_measure(b, measure)
    known = _read_key(store, key)
    if not known:
        raise FairpairError("this run has no calibration export; run `fairpair calibrate export` first",
                            file=run_dir)
    cases = {c.id: c for c in store.iter_cases()}
    foreign = [sid for sid, (_, c) in known.items() if c not in cases]
    if foreign:  # a key from another run: none of its samples would find a judge score
        raise FairpairError(f"{len(foreign)} of the key's {len(known)} samples name a case that is not in "
                            f"this run (first: {foreign[0]} -> case {known[foreign[0]][1]})", file=key,
                            hint=f"give the key file that `fairpair calibrate export {run_dir}` wrote")
    resolved = [Path(f).resolve() for f in files]
    twice = next((f for i, f in enumerate(files) if resolved[i] in resolved[:i]), None)
    if twice is not None:  # one rater's file given twice would count as two raters who always agree
        raise FairpairError("this labels file is given twice; give each rater's file once", file=twice)
    dims = list(rubric)
    levels = {d: _answers(set(rubric[d]["levels"]), m.options.scoring, b.language) for d in dims}
    raters: dict[str, dict[str, dict[str, int | None]]] = {}
    for f in files:
        label = Path(f).stem
        while label in raters:
            label += "'"
        raters[label] = _read_labels(Path(f), dims, levels, known)
    return _RaterFiles(name, {d: set(rubric[d]["levels"]) for d in dims}, known, cases, raters)


def _answers(levels: set[int], scoring: str, language: str | None) -> dict[str, int]:
    """What a labels file's cell may hold (case-folded) -> the level stored: the rubric's levels, or, for a
    ``scoring: yes_no`` judge, only what the label page offers (:meth:`~fairpair.measures._labelsample.
    LabelMeasure.choices`): the lowest level or ``no``, the highest or ``yes`` (``sí``/``si`` in Spanish)."""
    if scoring != "yes_no":
        return {str(v): v for v in sorted(levels)}
    from fairpair.measures._labelsample import _no_yes

    low, high = min(levels), max(levels)
    no, yes = _no_yes(language)
    out = {str(low): low, str(high): high, no: low, yes: high, "no": low, "yes": high}
    if yes == "sí":
        out["si"] = high
    return out


@dataclass(frozen=True)
class ImportResult:
    """What ``calibrate import`` stored: ``labels`` new labels (a label the rater's file gave before,
    unchanged, is not stored again), per rater name; ``measure`` the judge measure."""

    measure: str
    labels: dict[str, int]


def import_label_files(run_dir: Path, files: list[Path], *, measure: str | None = None,
                       key: Path | None = None) -> ImportResult:
    """Store raters' filled-in ``calibrate export`` labels files in the run's store (``fairpair calibrate
    import``), where the analysis reads them with the labelling page's (``Store.labels``).

    Each filled-in cell becomes a :class:`~fairpair.records.HumanLabel` of the row
    ``<measure>.<dimension>`` with ``source`` ``file`` and the file's stem as the rater's name;
    blank cells are not labels. Importing a file again stores only what changed (a changed cell
    supersedes the earlier label; nothing stored is removed). The files are checked as ``calibrate
    score`` checks them (a ``scoring: yes_no`` judge's cells hold only what the label page offers:
    the lowest level or ``no``, the highest or ``yes``), and nothing is stored unless every file reads.
    A file named after a rater of the label page is refused: its labels would supersede theirs.

    Raises
    ------
    FairpairError
        As :func:`score_label_files`; a file whose rater (its stem) has labelled on the page.
    """
    from fairpair.store import Run

    run_dir = Path(run_dir)
    with Run.open(run_dir, "w") as run:
        rf = _read_rater_files(run, run_dir, files, measure, key)
        store = run.store
        added: dict[str, int] = {}
        rows_of = [f"{rf.name}.{d}" for d in rf.levels]
        for (rater, _rows), f in zip(rf.raters.items(), files, strict=True):
            page = next((x for row in rows_of for x in store.label_actions(row, rater) if x.source != "file"), None)
            if page is not None:  # the file's labels would supersede that rater's own, as a later label does
                raise FairpairError(f"rater '{rater}' (the file's name) has labelled '{page.measure}' on the label "
                                    "page of this run; importing this file would replace their labels", file=f,
                                    key="rater", hint=f"rename the file (the rater is its name without .csv), "
                                    f"e.g. {rater}-file.csv; nothing was stored")
        with store.transaction():
            current = {(x.rater, x.target, x.case_id, x.measure): x.value for x in store.labels()}
            for rater, rows in rf.raters.items():
                added[rater] = 0
                for sid, vals in rows.items():
                    target, case_id = rf.known[sid]
                    for d, v in vals.items():
                        row = f"{rf.name}.{d}"
                        if v is None or current.get((rater, target, case_id, row)) == float(v):
                            continue
                        store.add_label(target=target, case_id=case_id, measure=row, rater=rater, value=v,
                                        source="file")
                        added[rater] += 1
    return ImportResult(rf.name, added)


def score_label_files(run_dir: Path, files: list[Path], *, measure: str | None = None,
                      key: Path | None = None) -> dict[str, Any]:
    """Score one or more raters' label files against the judge; returns dimension -> CalibrationReport.

    Raises FairpairError (exit 2) for a missing column, a row with a value past
    the header's last column (an unquoted comma; blank trailing cells are
    allowed), a label outside the rubric's levels, an unknown or duplicated
    sample id, a file given twice, a ``key`` of another run, or nothing (or a
    single sample) to score.
    """
    import pandas as pd

    from fairpair.measures._calibration import score_labels
    from fairpair.store import Run

    with Run.open(Path(run_dir)) as run:
        rf = _read_rater_files(run, Path(run_dir), files, measure, key)
        name, levels, known, cases, raters = rf.name, rf.levels, rf.known, rf.cases, rf.raters
        dims = list(levels)
        # a probability-weighted score (scoring: probabilities) is compared at its nearest level
        judged = {d: {(x.target, x.case_id): _nearest_level(x.value)
                      for x in run.store.measurements(f"{name}.{d}", status="ok")} for d in dims}
        tried = {(x.target, x.case_id) for d in dims for x in run.store.measurements(f"{name}.{d}", status=None)}
    reports = {}
    sids = sorted({s for r in raters.values() for s in r})
    for d in dims:
        rows = []
        for sid in sids:
            t, c = known[sid]
            jv = judged[d].get((t, c))
            hv = [raters[r].get(sid, {}).get(d) for r in raters]
            if jv is None or all(v is None for v in hv):
                continue
            case = cases.get(c)
            rows.append({"judge": jv, **dict(zip(raters, hv, strict=True)),
                         "group": case.group_label() if case else "?"})
        if not rows:
            continue
        if len(rows) < 2:
            raise FairpairError(f"'{d}': only 1 labelled sample has a judge score; agreement needs at least 2",
                                file=files[0] if len(files) == 1 else None,
                                hint="label more of the exported samples (or run `fairpair measure` on the run)")
        df = pd.DataFrame(rows)
        for r in raters:
            df[r] = df[r].astype(object).where(df[r].notna(), None)
        try:
            reports[d] = score_labels(df, "judge", list(raters), "group", ordinal=True,
                                      labels=sorted(levels[d]))
        except ValueError as exc:
            raise FairpairError(f"cannot score '{d}': {exc}") from None
    if not reports:
        labelled = {known[s] for s in sids if any(v is not None for r in raters.values()
                                                  for v in r.get(s, {}).values())}
        if labelled & tried:  # measured, but the judge gave no valid score on these samples
            raise FairpairError("no labelled sample has a judge score to compare with: the judge read "
                                f"{len(labelled & tried)} labelled sample(s) but gave no valid score on the "
                                "dimensions labelled",
                                hint=f"`fairpair status {run_dir}` counts these rows as missing; a judge that "
                                     "fails its self-test (docs/judge.md) gives no scores to calibrate")
        raise FairpairError("no labelled sample has a judge score to compare with",
                            hint=f"run `fairpair measure {run_dir}` first, and fill in the rubric columns")
    return reports


def _nearest_level(value):
    """An expected level (a float such as 3.62) rounded half up to its nearest level (4); an integer
    level as it is. Kappa compares levels, not expected levels."""
    import math

    if isinstance(value, float) and math.isfinite(value):
        return int(math.floor(value + 0.5))
    return value
