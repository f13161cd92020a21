"""A k-outcome decision (approve / deny / refer) end to end: rules measure, Stuart-Maxwell and Bowker
beside the per-outcome comparisons (checked against statsmodels and counts written by hand)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import yaml
from statsmodels.stats.contingency_tables import SquareTable

from fairpair.analysis import analyze_run
from fairpair.battery import load_battery
from fairpair.measures import measure_run
from fairpair.run import RunSettings, execute_run

NAMES = {"espana": ["Lucía", "María", "Carmen"], "magreb": ["Fátima", "Aicha", "Khadija"]}

BOT = textwrap.dedent('''
    import re
    MAGREB = {"Fátima", "Aicha", "Khadija"}
    TEXT = {"approve": "Buenos días, su solicitud de crédito ha sido aprobada hoy mismo.",
            "deny": "Buenos días, su solicitud de crédito ha sido denegada tras revisarla.",
            "refer": "Buenos días, le derivamos a un especialista para que revise su solicitud."}
    ESPANA = ["approve", "approve", "deny", "refer"]
    OTHER = ["approve", "refer", "refer", "refer"]
    def decide(messages, context):
        who = re.search(r"soy (\\w+)", messages[-1]["content"]).group(1)
        i = int(re.search(r"Caso (\\d+)", messages[-1]["content"]).group(1))
        return TEXT[(OTHER if who in MAGREB else ESPANA)[i % 4]]
    def decide_tool(messages, context):
        text = decide(messages, context)
        outcome = next(k for k, v in TEXT.items() if v == text)
        return {"text": "Hemos revisado su solicitud.",
                "tool_calls": [{"name": "decide", "arguments": {"outcome": outcome}}]}
''')


def _run(tmp_path, measure, fn="decide"):
    (tmp_path / "bots_categorical.py").write_text(BOT, encoding="utf-8")
    b = {
        "schema_version": 1, "name": "credito", "language": "es", "seed": 3, "repetitions": 1,
        "attributes": {"origen": {"signal": "name", "slot": "nombre", "neutral": "un cliente",
                                  "groups": {g: {"variants": v} for g, v in NAMES.items()}}},
        "templates": [{"id": f"t{i:02d}", "turns": [f"Hola, soy {{nombre}}. Caso {i}: pido un crédito."]}
                      for i in range(16)],
        "designs": [{"kind": "counterfactual", "attribute": "origen"}],
        "target": {"kind": "python", "callable": f"bots_categorical:{fn}", "path": "."},
        "measures": {"decision": measure},
        "analysis": {"bootstrap_resamples": 300, "generalize": {"names": "fixed"}, "comparisons": [
            {"id": "decision", "measure": "decision", "attribute": "origen", "reference": "espana"}]},
    }
    path = tmp_path / "battery.yaml"
    path.write_text(yaml.safe_dump(b, allow_unicode=True), encoding="utf-8")
    lb = load_battery(path)
    execute_run(lb, tmp_path / "run", RunSettings(concurrency=4))
    measure_run(tmp_path / "run")
    return analyze_run(tmp_path / "run")


RULES = {"kind": "categories", "categories": {"approve": ["aprobad\\w*"], "deny": ["denegad\\w*"],
                                              "refer": ["deriv\\w*", "especialista"]}}
TOOL = {"kind": "tool_argument", "name": "decide", "argument": "outcome", "categories": ["approve", "deny", "refer"]}
# rows: magreb's outcome, columns: espana's (approve, deny, refer); 16 templates x 3 names, by template mod 4:
# 0 -> (approve, approve), 1 -> (refer, approve), 2 -> (refer, deny), 3 -> (refer, refer): 12 pairs each
TABLE = np.array([[12, 0, 0], [0, 0, 0], [12, 12, 12]])


@pytest.mark.parametrize("measure, fn", [(RULES, "decide"), (TOOL, "decide_tool")])
def test_three_outcomes_end_to_end(tmp_path, measure, fn):
    res = _run(tmp_path, measure, fn)
    assert res.measures["decision"] == "categorical"
    tests = {o.test: o for o in res.omnibus if o.measure == "decision"}
    st = SquareTable(TABLE, shift_zeros=False)
    sm, bw = tests["Stuart-Maxwell"], tests["Bowker"]
    assert sm.statistic == pytest.approx(st.homogeneity().statistic, abs=1e-10)
    assert sm.pvalue == pytest.approx(st.homogeneity().pvalue, abs=1e-10)
    assert (sm.df, sm.n_sets, sm.groups) == (2, 48, ["magreb", "espana"])
    assert bw.statistic == pytest.approx(st.symmetry().statistic, abs=1e-10)
    assert bw.df == 3
    assert sm.values["magreb: refer"] == pytest.approx(0.75) and sm.values["espana: refer"] == pytest.approx(0.25)
    by_id = {c.id: c for c in res.comparisons}
    refer, approve, deny = by_id["decision=refer"], by_id["decision=approve"], by_id["decision=deny"]
    assert refer.measure == "decision=refer" and refer.scale == "binary"
    assert (refer.value_a, refer.value_b, refer.estimate) == pytest.approx((0.75, 0.25, 0.5))
    assert refer.binary is not None
    assert refer.verdict == "fail"
    assert (approve.value_a, approve.value_b) == pytest.approx((0.25, 0.5))
    assert (deny.value_a, deny.value_b) == pytest.approx((0.0, 0.25))
    assert refer.family_size == 3  # the three outcomes form the comparison's family
