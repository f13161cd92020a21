"""Runs produced with the mock target, measured with simple rules written straight into the store.

The measures stage is another package; these helpers record what it would:
``refund`` (bool: the mock's refund sentence is present), ``words`` (int:
word count) and ``escalate`` (bool).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from fairpair.battery import load_battery
from fairpair.run import RunSettings, execute_run
from fairpair.store import Store

NAMES = {"espana": ["Lucía", "María", "Carmen"], "magreb": ["Fátima", "Aicha", "Khadija"],
         "rumania": ["Ioana", "Elena", "Andreea"], "china": ["Wei", "Li", "Mei"]}


def battery_dict(*, bias: dict | None = None, templates: int = 20, repetitions: int = 2, margin: float | None = 0.1,
                 correlation: float = 0.7, name: str = "mock_audit", comparisons: list | None = None,
                 resamples: int = 500, names: str | None = "fixed") -> dict:
    """A mock battery; ``names`` is the plan's ``generalize.names`` (None: the default, random).

    3 names per group: with names random every comparison is `insufficient design`, so the
    tests that check verdicts use ``names="fixed"``.
    """
    if comparisons is None:
        comparisons = [
            {"id": "refund", "measure": "refund", "attribute": "origen", "reference": "espana", "margin": margin},
            {"id": "words", "measure": "words", "attribute": "origen", "reference": "espana", "primary": False},
        ]
    return {
        "schema_version": 1, "name": name, "language": "es", "seed": 7, "repetitions": repetitions,
        "attributes": {"origen": {"signal": "name", "slot": "nombre", "neutral": "un cliente",
                                  "groups": {g: {"variants": v} for g, v in NAMES.items()}}},
        "templates": [{"id": f"t{i:02d}", "turns": [f"Hola, soy {{nombre}}. Caso {i}: mi pedido llegó roto."]}
                      for i in range(templates)],
        "designs": [{"kind": "counterfactual", "attribute": "origen"}],
        "target": {"kind": "mock", "correlation": correlation, "bias": bias or {}},
        # declared as what measure() below stores (a comparison may only name a declared measure)
        "measures": {"refund": {"kind": "keywords", "any_of": ["reembolso completo"]},
                     "escalate": {"kind": "keywords", "any_of": ["agente humano"]},
                     "words": {"kind": "word_count"}},
        "analysis": {"bootstrap_resamples": resamples, "comparisons": comparisons,
                     **({"generalize": {"names": names}} if names else {})},
    }


def measure(run_dir: Path, *, skip=lambda case_id, measure: False) -> None:
    """Record refund / escalate / words for every answer (``skip`` marks a measurement missing)."""
    with Store.open(run_dir) as s:
        for r in s.responses():
            vals = {"refund": "reembolso completo" in r.text, "escalate": "agente humano" in r.text,
                    "words": len(r.text.split())}
            for m, v in vals.items():
                if skip(r.case_id, m):
                    s.add_measurement(target=r.target, case_id=r.case_id, measure=m, status="missing")
                else:
                    s.add_measurement(target=r.target, case_id=r.case_id, measure=m, status="ok", value=v)


def make_run(tmp: Path, name: str, battery: dict, *, skip=None) -> Path:
    bpath = tmp / f"{name}.yaml"
    bpath.write_text(yaml.safe_dump(battery, allow_unicode=True), encoding="utf-8")
    run_dir = tmp / name
    execute_run(load_battery(bpath), run_dir, RunSettings(concurrency=16))
    if skip is None:
        measure(run_dir)
    else:
        measure(run_dir, skip=skip)
    return run_dir


def score_run(tmp: Path, battery: dict, value, *, measure: str = "score", seed: int = 0) -> Path:
    """Run ``battery`` (with ``measure`` declared as a word count) with the mock target, then store
    ``value(case, rng)`` as every answer's ``measure``."""
    import numpy as np

    battery["measures"][measure] = {"kind": "word_count"}  # declared (a plan's measure must be); values below
    path = tmp / "b.yaml"
    path.write_text(yaml.safe_dump(battery, allow_unicode=True), encoding="utf-8")
    run_dir = tmp / "run"
    execute_run(load_battery(path), run_dir, RunSettings(concurrency=16))
    rng = np.random.default_rng(seed)
    with Store.open(run_dir) as s:
        cases = {c.id: c for c in s.iter_cases()}
        for r in s.responses():
            s.add_measurement(target=r.target, case_id=r.case_id, measure=measure, status="ok",
                              value=float(value(cases[r.case_id], rng)))
    return run_dir
