"""No data and a constant measure are their own reasons, in es and en, with counts (issue 14, point 2)."""

from __future__ import annotations

import pytest

from fairpair.analysis._nodata import CONSTANT, NO_DATA, no_data_clause, no_data_reason
from fairpair.report._catalog import verdict_sentence

BASE = {"scale": "binary", "margin": 0.03, "verdict": "inconclusive", "confidence_level": 0.95,
        "test": "McNemar (exact)", "correction": "holm"}


def sentence(comp, lang):
    return verdict_sentence({**BASE, **comp}, lang=lang, label_a="nombres árabes", label_b="nombres españoles",
                            measure_label="reembolso", signal="name")


def test_zero_pairs_never_measured():
    comp = {"n_pairs": 0, "n_dropped": 0, "estimate": None, "ci": None, "value_a": None, "value_b": None}
    assert no_data_reason({**BASE, **comp}) == NO_DATA
    en, es = sentence(comp, "en"), sentence(comp, "es")
    assert en.endswith(": no data: not one matched pair has this measure (not measured, or no answers).")
    assert es.endswith(": sin datos: ningún par emparejado tiene esta medida (no se midió o no hubo respuestas).")
    assert "does not settle" not in en and "no permite decidir" not in es


def test_zero_pairs_all_dropped_gives_the_count():
    comp = {"n_pairs": 0, "n_dropped": 12, "estimate": None, "ci": None}
    assert "all 12 matched pairs were dropped for a failed answer" in sentence(comp, "en")
    assert "se descartaron los 12 pares emparejados" in sentence(comp, "es")


def test_interval_exactly_zero_on_a_constant_yes_no_measure():
    comp = {"n_pairs": 9, "n_dropped": 0, "estimate": 0.0, "ci": [0.0, 0.0], "value_a": 0.0, "value_b": 0.0,
            "pvalue": 1.0, "pvalue_adjusted": 1.0}
    assert no_data_reason({**BASE, **comp}) == CONSTANT
    en = sentence(comp, "en")
    assert en.endswith("constant measure: every answer of the 9 pairs has the same value (0%), so it says nothing "
                       "about a difference.")
    assert "medida constante: todas las respuestas de los 9 pares tienen el mismo valor (0 %)" in sentence(comp, "es")


def test_constant_note_from_the_analysis_on_a_continuous_measure():
    comp = {"scale": "continuous", "n_pairs": 6, "estimate": 0.0, "ci": [0.0, 0.0], "value_a": 3.5,
            "value_b": 3.5, "margin": 0.5,
            "note": "the measure is constant (every answer of both groups has the same value): no information"}
    assert no_data_clause({**BASE, **comp}, "es").startswith("medida constante: todas las respuestas de los 6 pares"
                                                            " tienen el mismo valor (3,5)")


@pytest.mark.parametrize("comp", [
    {"n_pairs": 30, "estimate": 0.0, "ci": [-0.1, 0.1], "value_a": 0.5, "value_b": 0.5},  # data, undecided
    {"n_pairs": 30, "estimate": 0.0, "ci": [0.0, 0.0], "value_a": 0.5, "value_b": 0.5},  # not at 0/1
])
def test_data_that_can_speak_keeps_the_verdict_clause(comp):
    assert no_data_reason({**BASE, **comp}) is None
    assert "does not settle whether it is within the 3-point margin" in sentence(comp, "en")


def test_a_fail_is_never_reworded():
    comp = {"n_pairs": 0, "verdict": "fail"}
    assert "no data" not in sentence(comp, "en")


def test_one_pair_is_singular():
    """A newcomer found "1 pares": every count of pairs takes its noun (and verb) in its number."""
    from fairpair.analysis._design import design_reason_counts

    comp = {"n_pairs": 1, "n_dropped": 0, "estimate": 0.0, "ci": [0.0, 0.0], "value_a": 0.0, "value_b": 0.0,
            "pvalue": 1.0, "pvalue_adjusted": 1.0}
    assert "todas las respuestas del único par tienen el mismo valor" in sentence(comp, "es")
    assert "every answer of the only pair has the same value" in sentence(comp, "en")
    dropped = {"n_pairs": 0, "n_dropped": 1, "estimate": None, "ci": None}
    assert "se descartó el único par emparejado" in sentence(dropped, "es")
    assert "the only matched pair was dropped" in sentence(dropped, "en")
    kw = dict(n_templates=8, n_names_a=5, n_names_b=5, names="random")
    assert design_reason_counts(n_pairs=1, lang="es", **kw) == "1 par emparejado completo: usa al menos 10"
    assert design_reason_counts(n_pairs=3, lang="es", **kw) == "3 pares emparejados completos: usa al menos 10"
    assert design_reason_counts(n_pairs=1, **kw) == "1 complete matched pair: use at least 10"


def test_one_dropped_pair_is_singular():
    from types import SimpleNamespace

    from fairpair.report._render import _drop_text

    row = SimpleNamespace(key="k", measure_label="reembolso", n_dropped=1, n_pairs=1)
    data = SimpleNamespace(drop_reasons={"k": {"answer failed": 1}})
    assert _drop_text(row, data, "es") == ("reembolso: se descartó 1 de 2 pares (1 answer failed); la prueba, el "
                                          "intervalo y los gráficos usan el mismo par")
    assert _drop_text(row, data, "en").endswith("1 of 2 pairs dropped (1 answer failed); the test, the interval and "
                                                "the charts use the same pair")
    row.n_dropped, row.n_pairs = 2, 24
    assert _drop_text(row, data, "es").startswith("reembolso: se descartaron 2 de 26 pares")
    assert _drop_text(row, data, "es").endswith("usan los mismos 24 pares")


def test_scenarios_with_one_pair_each_say_too_few_pairs_not_none_fails():
    """A newcomer read "no scenario fails" under a comparison whose scenarios had 1 pair each: none could
    fail (no error to estimate a scenario's own uncertainty from), so the summary says that instead."""
    from types import SimpleNamespace

    from fairpair.report._catalog import scenario_summary

    rows = [SimpleNamespace(template=f"t{i}", estimate=-0.1, verdict="insufficient design") for i in range(6)]
    comp = SimpleNamespace(scenarios=SimpleNamespace(rows=rows), scale="binary", value_kind="rate")
    assert scenario_summary(comp, "en") == ("no scenario-level verdict: too few pairs per scenario to estimate a "
                                            "scenario's own uncertainty")
    assert scenario_summary(comp, "es").startswith("sin veredicto por escenario: hay demasiado pocos pares")
    rows[0].verdict = "inconclusive"
    assert scenario_summary(comp, "en") == "no scenario fails on its own"
