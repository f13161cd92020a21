"""``fairpair export``: a run's answers, measurements and results as CSV or Parquet tables.

Tables (one file each, in ``RUN/export/`` unless ``--out``):

``answers``
    Every stored response row, failures included (the store is append-only,
    so a case that failed and then succeeded has two rows): ``target,
    case_id, status, design, design_kind, template, repetition,
    matched_set, block, position, attribute, axis, baseline``, one
    ``group:<attribute>`` and ``variant:<attribute>`` column per attribute
    (``sub``/``res`` in the two-party design), ``prompt`` (the last user
    turn), ``text``, ``tool_calls`` (JSON), ``model, system_fingerprint,
    finish_reason, prompt_tokens, completion_tokens, latency_s, error,
    attempts, created_at``.
``measurements``
    ``target, case_id, measure, status, value`` (JSON text), ``value_num``
    (the value as a number: booleans 0/1, empty otherwise), ``error,
    detail`` (JSON).
``rankings``
    (only when the battery has a ``ranking`` measure) per answer of a
    ranking case: ``target, case_id, measure, template``, ``candidates``
    (as shown, in order, with their groups), ``text`` (the answer) and its
    parse beside it: ``parse`` (how it was read), ``top`` (the top group),
    ``order`` (the names in rank order), ``picks`` (how each name matched;
    a renamed one with the name the answer gave), ``renamed``, ``status``
    and ``error`` (why it is missing).
``results``
    (only when ``results.json`` exists) one row per comparison: its scalar
    fields, ``ci_low, ci_high``, ``equivalence_ci_low, equivalence_ci_high``
    and, for binary measures, ``b, c``.

Text is untrusted: NUL and other control characters, ANSI sequences and
lone surrogates are removed or replaced (:func:`~fairpair.report._text.clean`)
in both formats; in CSV a text cell that a spreadsheet would run as a formula
(first character ``= + - @``, tab or CR) gets a leading ``'`` (OWASP, "CSV
Injection"). Numbers stay numbers. CSV is UTF-8, comma-separated, RFC 4180
quoting; it opens with ``pandas.read_csv`` as is. Parquet needs ``pyarrow``
(``pip install 'fairpair[parquet]'``).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairpair._files import atomic_path
from fairpair.errors import FairpairError
from fairpair.report._text import clean, csv_cell

if TYPE_CHECKING:
    from fairpair.records import Case
    from fairpair.store import Run

__all__ = ["export_run", "export_tables", "FORMATS"]

FORMATS = ("csv", "parquet")
EXPORT_DIR = "export"

_ANSWER_HEAD = ["target", "case_id", "status", "design", "design_kind", "template", "repetition", "matched_set",
                "block", "position", "attribute", "axis", "baseline"]
_ANSWER_TAIL = ["prompt", "text", "tool_calls", "model", "system_fingerprint", "finish_reason", "prompt_tokens",
                "completion_tokens", "latency_s", "error", "attempts", "created_at"]


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return None


def _js(v: Any) -> str | None:
    return None if v is None else json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)


_RANKING_COLS = ["target", "case_id", "measure", "template", "candidates", "text", "parse", "top", "order",
                 "picks", "renamed", "status", "error"]


def _ranking_rows(run: Run, cases: dict[str, Case],
                  answers: list[dict[str, Any]]) -> tuple[list[str], list[dict]] | None:
    """The ``rankings`` table: per answer of a ranking case and ranking measure, the candidates shown (in
    order, with their groups), the answer's text and the parse beside it (how it was read, the top group,
    the names in rank order, how each name matched, renamed picks). None when the battery has no
    ranking measure."""
    try:
        from fairpair.battery import recorded_battery

        battery = recorded_battery(run).battery
    except Exception:  # noqa: BLE001 - a run without a readable battery exports the rest
        return None
    measures = battery.ranking_measures()
    if not measures:
        return None
    text = {(a["target"], a["case_id"]): a.get("text") for a in answers if a.get("status") == "ok"}
    rows = []
    for m in run.store.measurements(status=None):
        if m.measure not in measures:
            continue
        c = cases.get(m.case_id)
        if c is None:
            continue
        slots = ((c.meta or {}).get("ranking") or {}).get("slots")
        if not slots:
            continue
        d = m.detail if isinstance(m.detail, dict) else {}
        picks = d.get("picks") or []
        rows.append({
            "target": m.target, "case_id": m.case_id, "measure": m.measure, "template": c.template,
            "candidates": "; ".join(f"{s['slot']}. {s['variant']} ({s['group']})" for s in slots),
            "text": text.get((m.target, m.case_id)), "parse": d.get("parse"), "top": d.get("top"),
            "order": "; ".join(str(v) for v in d.get("variants") or []) or None,
            "picks": "; ".join(f"{p.get('variant')}: {p.get('match')}" + (f" as '{p.get('said')}' (renamed)"
                                                                       if p.get("renamed") else "")
                               for p in picks) or None,
            "renamed": d.get("renamed"), "status": m.status, "error": m.error})
    return _RANKING_COLS, rows


def export_tables(run_dir: Path) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """The export tables of a run: name -> (columns, rows). Text is :func:`clean`-ed."""
    from fairpair.store import Run

    run_dir = Path(run_dir)
    out: dict[str, tuple[list[str], list[dict[str, Any]]]] = {}
    with Run.open(run_dir, lenient_text=True) as run:
        store = run.store
        cases = {c.id: c for c in store.iter_cases()}
        keys: dict[str, None] = {}
        for case in cases.values():
            for k in case.groups:
                keys[k] = None
        group_cols = [f"group:{k}" for k in keys] + [f"variant:{k}" for k in keys]
        rows = []
        for r in store.responses(status=None):
            c = cases.get(r.case_id)
            row: dict[str, Any] = {"target": r.target, "case_id": r.case_id, "status": r.status}
            if c is not None:
                row.update(design=c.design, design_kind=c.design_kind, template=c.template,
                           repetition=c.repetition, matched_set=c.matched_set, block=c.block, position=c.position,
                           attribute=c.attribute, axis=c.axis, baseline=c.baseline,
                           prompt=c.turns[-1] if c.turns else None)
                for k in keys:
                    row[f"group:{k}"] = c.groups.get(k)
                    row[f"variant:{k}"] = c.variants.get(k)
            row.update(text=r.text, tool_calls=_js(r.tool_calls or None), model=r.model,
                       system_fingerprint=r.system_fingerprint, finish_reason=r.finish_reason,
                       prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens, latency_s=r.latency_s,
                       error=r.error, attempts=r.attempts, created_at=r.created_at)
            rows.append(row)
        out["answers"] = (_ANSWER_HEAD + group_cols + _ANSWER_TAIL, rows)
        mrows = [{"target": m.target, "case_id": m.case_id, "measure": m.measure, "status": m.status,
                  "value": _js(m.value), "value_num": _num(m.value), "error": m.error, "detail": _js(m.detail)}
                 for m in store.measurements(status=None)]
        out["measurements"] = (["target", "case_id", "measure", "status", "value", "value_num", "error", "detail"],
                               mrows)
        ranked = _ranking_rows(run, cases, rows)
        if ranked is not None:
            out["rankings"] = ranked
        res = run.results_json(validate=False)  # exported as it is, whatever fairpair wrote it
    if res is not None:
        crow: list[dict[str, Any]] = []
        cols: dict[str, None] = {}
        for comp in res.get("comparisons") or []:
            row = {k: v for k, v in comp.items() if v is None or isinstance(v, (str, int, float, bool))}
            for name in ("ci", "equivalence_ci"):
                iv = comp.get(name) or [None, None]
                row[f"{name}_low"], row[f"{name}_high"] = iv[0], iv[1]
            det = comp.get("binary") or {}
            row["b"], row["c"] = det.get("b"), det.get("c")
            for k in row:
                cols[k] = None
            crow.append(row)
        out["results"] = (list(cols), crow)
    for _cols, rows in out.values():
        for row in rows:
            for k, v in row.items():
                if isinstance(v, (str, bytes)):
                    row[k] = clean(v)
    return out


def _write_csv(path: Path, cols: list[str], rows: list[dict[str, Any]]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
        w.writerow([csv_cell(c) for c in cols])
        for row in rows:
            w.writerow(["" if row.get(c) is None else csv_cell(row.get(c)) for c in cols])


def _write_parquet(path: Path, cols: list[str], rows: list[dict[str, Any]]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise FairpairError("Parquet export needs pyarrow: pip install 'fairpair[parquet]'") from None
    import pandas as pd

    df = pd.DataFrame(rows, columns=cols)
    for c in df.columns:  # a column of mixed Python types (a value that is sometimes text) becomes text
        if df[c].dtype == object:
            kinds = {type(v) for v in df[c] if v is not None and not (isinstance(v, float) and math.isnan(v))}
            if len(kinds) > 1:
                df[c] = [None if v is None else str(v) for v in df[c]]
    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp)  # what df.to_parquet(index=False) does


def export_run(run_dir: Path | str, *, fmt: str = "csv", out: Path | str | None = None) -> dict[str, Path]:
    """Write the run's tables as ``fmt`` (``csv`` or ``parquet``) to ``out`` (default ``RUN/export/``).

    Returns
    -------
    dict
        Table name -> file written (``answers``, ``measurements``, and
        ``results`` when the analysis has run).

    Raises
    ------
    FairpairError
        Unknown format; not a run directory; pyarrow missing for Parquet; a
        table file that already exists in ``out`` (never overwritten: give
        another folder; the default ``RUN/export/`` is fairpair's own and is
        rewritten from the store); an output folder that cannot be written.
    """
    if fmt not in FORMATS:
        raise FairpairError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}", key="--format")
    run_dir = Path(run_dir)
    tables = export_tables(run_dir)
    out_dir = Path(out) if out is not None else run_dir / EXPORT_DIR
    if out is not None:
        for name in tables:
            path = out_dir / f"{name}.{fmt}"
            if path.exists():
                raise FairpairError("already exists; an export to --out never overwrites a file", file=path,
                                    hint="give another --out, such as an empty folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = {}
        for name, (cols, rows) in tables.items():
            path = out_dir / f"{name}.{fmt}"
            if fmt == "csv":
                _write_csv(path, cols, rows)
            else:
                _write_parquet(path, cols, rows)
            paths[name] = path
    except OSError as exc:
        raise FairpairError(f"cannot write the export: {exc.strerror}", file=out_dir) from None
    return paths
