"""What a run directory holds and what is left to do (``fairpair status RUN``, the end-of-run summary)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairpair.run._preflight import ErrorKind, format_error_summary, summarize_errors
from fairpair.store import PLAN_EDIT_REFUSED, plan_edits_refused

__all__ = ["TargetStatus", "RunStatus", "batch_lines", "run_status", "failure_lines"]


@dataclass(frozen=True)
class TargetStatus:
    """One target: ``cases`` in the run, ``answered``, ``failed`` (no answer, at least one failure),
    ``left`` (never sent), the top error kinds and how many kinds there are in all."""

    name: str
    cases: int
    answered: int
    failed: int
    left: int
    errors: list[ErrorKind] = field(default_factory=list)
    error_kinds: int = 0


@dataclass(frozen=True)
class RunStatus:
    """A run directory's state: battery, targets, measures (measure -> status -> count),
    whether ``results.json`` and the report exist (``results_unreadable``: it exists but is not JSON, cut
    short or damaged), the provider batches not yet ingested (``batches_waiting``) and the commands that
    remain (``todo``)."""

    run_dir: Path
    battery: str
    targets: list[TargetStatus]
    measures: dict[str, dict[str, int]]
    analyzed: bool
    reported: bool
    todo: list[str]
    events: dict[str, int] = field(default_factory=dict)
    results_unreadable: bool = False
    #: one line per provider batch not yet ingested (what the run waits for; :func:`batch_lines`)
    batches_waiting: list[str] = field(default_factory=list)

    def measured(self, measure: str) -> int:
        """Answers with an ``ok`` or ``missing`` row of ``measure``; a judge measure, stored per rubric
        dimension (``tono.courtesy``, ...), counts the answers every dimension has."""
        def done(counts: dict[str, int]) -> int:
            return sum(counts.get(s, 0) for s in ("ok", "missing"))

        dims = [v for k, v in self.measures.items() if k.startswith(measure + ".")]
        own = self.measures.get(measure)
        return done(own or {}) if own or not dims else min(done(v) for v in dims)


def _target_status(store, name: str) -> TargetStatus:
    c = store.counts(name)
    n_cases = c["cases"]
    msgs = store.failure_messages(name)
    all_kinds = summarize_errors(msgs, top=10**9)
    return TargetStatus(name, n_cases, c["answered"], c["failed"], max(0, n_cases - c["answered"] - c["failed"]),
                        all_kinds[:3], len(all_kinds))


def failure_lines(store, targets: list[str]) -> list[str]:
    """The end-of-run summary of failures: per target with failed cases, the top 3 error kinds
    with counts and one example each (empty when nothing failed)."""
    lines: list[str] = []
    for name in targets:
        t = _target_status(store, name)
        if t.failed:
            lines.append(f"target {name}: {t.failed} cases without an answer; errors by kind:")
            lines += format_error_summary(t.errors, total_kinds=t.error_kinds)
    return lines


def run_status(run_dir: Path) -> RunStatus:
    """Read ``run_dir`` (read-only) and say what it holds and what is left.

    Raises
    ------
    FairpairError
        Not a run directory, or its store cannot be read.
    """
    from fairpair.run._runner import open_run
    from fairpair.store import RESULTS_NAME

    run_dir = Path(run_dir)
    with open_run(run_dir, readonly=True) as store:
        battery: dict[str, Any] = store.get_meta("battery") or {}
        names = list(dict.fromkeys([*store.targets(), *_declared_targets(battery)]))
        targets = [_target_status(store, name) for name in names]
        measures = store.measurement_counts()
        events = {k: len(store.events(k)) for k in ("preflight_failed", "circuit_open", "battery_changed",
                                                     "target_changed")}
        events[PLAN_EDIT_REFUSED] = len(plan_edits_refused(store))  # the kind's older name included
        waiting = batch_lines(store)
    declared = list((battery.get("measures") or {}).keys())
    for m in declared:
        if not any(k.startswith(m + ".") for k in measures):  # a judge's rows are its dimensions'
            measures.setdefault(m, {})
    analyzed = (run_dir / RESULTS_NAME).exists()
    unreadable = analyzed and not _readable_json(run_dir / RESULTS_NAME)
    reported = (run_dir / "report" / "report.html").exists()
    todo: list[str] = []
    path = battery and _battery_path(run_dir)
    if any(t.left or t.failed for t in targets):
        todo.append(f"fairpair run {path or 'BATTERY'} --out {run_dir}   (sends the cases left and retries the failed)")
    st = RunStatus(run_dir, battery.get("name", "?"), targets, measures, analyzed, reported, todo,
                   {k: v for k, v in events.items() if v}, unreadable, waiting)
    if waiting:
        todo.insert(0, f"fairpair run {path or 'BATTERY'} --out {run_dir}   (fetches the batches when the provider "
                       "has answered them; `fairpair measure` for the judge's)")
    answered = sum(t.answered for t in targets)
    if any(st.measured(m) < answered for m in declared):
        todo.append(f"fairpair measure {run_dir}")
    has_plan = bool((battery.get("analysis") or {}).get("comparisons"))
    if not answered:  # nothing to analyze or report yet: `run` does both once answers come back
        return st
    if declared and has_plan and (not analyzed or unreadable):
        todo.append(f"fairpair analyze {run_dir}")
    if not reported:
        todo.append(f"fairpair report {run_dir}")
    return st


_STAGE_WORDS = {"run": "answers", "turns": "one turn of each multi-turn case; the next turn waits for its answers",
                "measure": "the judge's calls; the measurements wait for its answers"}


def batch_lines(store) -> list[str]:
    """One line per provider batch not yet ingested: who, what it carries, its last status and counts."""
    out = []
    for b in store.batches(stage=None):
        if b["status"] in ("ingested", "superseded"):
            continue
        c = (b["state"] or {}).get("request_counts") or {}
        done = f", {c.get('completed', 0)}/{c.get('total', 0)} done" if c.get("total") else ""
        status = "submitted, not yet recorded (the next session adopts or resubmits it)" \
            if b["status"] == "submitting" else b["status"]
        out.append(f"batch {b['batch_id']} ({b['target']}: {_STAGE_WORDS.get(b['stage'], b['stage'])}): "
                   f"{b['requests']} requests, {status}{done}")
    return out


def _readable_json(path: Path) -> bool:
    import json

    try:
        json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return True


def _declared_targets(battery: dict[str, Any]) -> list[str]:
    if battery.get("targets"):
        return list(battery["targets"])
    t = battery.get("target")
    return [t["kind"]] if isinstance(t, dict) and t.get("kind") else []  # as Battery.target_specs names it


def _battery_path(run_dir: Path) -> str | None:
    import json

    try:
        return json.loads((run_dir / "manifest.json").read_text(encoding="utf-8")).get("battery_path")
    except (OSError, ValueError, AttributeError):
        return None
