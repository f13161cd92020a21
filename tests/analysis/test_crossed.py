"""Crossed designs: pairs differ in one attribute and agree on every other."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict

import yaml
from statsmodels.stats.contingency_tables import mcnemar

from analysis_runs import measure
from fairpair.analysis import analyze_run
from fairpair.battery import load_battery
from fairpair.run import RunSettings, execute_run


def test_crossed_design_pairs_within_the_other_attribute(tmp_path):
    b = {
        "schema_version": 1, "name": "crossed", "language": "es", "seed": 3, "repetitions": 4,
        "attributes": {
            "origen": {"signal": "name", "slot": "nombre", "groups": {
                "espana": {"variants": ["Lucía", "Carmen"]}, "magreb": {"variants": ["Fátima", "Aicha"]}}},
            "edad": {"signal": "age", "slot": "edad", "groups": {
                "joven": {"variants": ["25"]}, "mayor": {"variants": ["70"]}}}},
        "templates": [{"id": f"t{i}", "turns": [f"Soy {{nombre}}, tengo {{edad}} años. Caso {i}."]} for i in range(6)],
        "designs": [{"kind": "crossed", "attributes": ["origen", "edad"]}],
        "target": {"kind": "mock", "bias": {"magreb": {"refund": 0.4}}},
        "measures": {"refund": {"kind": "keywords", "any_of": ["reembolso completo"]}},
        "analysis": {"bootstrap_resamples": 200, "comparisons": [
            {"id": "refund", "measure": "refund", "attribute": "origen", "reference": "espana"}]},
    }
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(b, allow_unicode=True), encoding="utf-8")
    run = tmp_path / "c"
    execute_run(load_battery(p), run, RunSettings())
    measure(run)
    (c,) = [c for c in analyze_run(run).comparisons if c.id == "refund"]  # answer statuses aside
    # one position (the shortest attribute has 1 variant) x 6 templates x 4 reps x 2 ages
    assert c.n_pairs == 48 and c.group_a == "magreb"
    con = sqlite3.connect(run / "store.sqlite")
    cases = {cid: json.loads(d) for cid, d in con.execute("SELECT case_id, data FROM cases")}
    vals = {cid: json.loads(v) for cid, v in con.execute(
        "SELECT case_id, value FROM measurements WHERE measure='refund' AND status='ok'")}
    cells = defaultdict(dict)
    for cid, k in cases.items():
        cells[(k["matched_set"], k["groups"]["edad"])][k["groups"]["origen"]] = vals[cid]
    bb = sum(1 for v in cells.values() if v["magreb"] and not v["espana"])
    cc = sum(1 for v in cells.values() if not v["magreb"] and v["espana"])
    assert (c.binary.b, c.binary.c) == (bb, cc)
    ref = mcnemar([[0, bb], [cc, 0]], exact=bb + cc < 25, correction=False)
    assert abs(c.binary.mcnemar_pvalue - ref.pvalue) < 1e-12  # secondary statistic
    # names random (default) with 2 names per group and 6 templates: no verdict, and it says why
    assert c.verdict == "insufficient design" and c.pvalue is None
    assert "6 template(s)" in c.design_reason and "1 name(s) in group magreb" in c.design_reason
