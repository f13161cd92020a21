"""A run with two targets: the closing summary and the reason lines name the target of each comparison
("sesgado: palabras: magreb − espana"), as the ranking summary names its target ("mock: 3 comparación(es)")."""

from __future__ import annotations

import pytest
from tests.report.conftest import COMPARISONS, LABELS, MEASURES, _battery, run_battery
from tests.run_helpers import run_cli


@pytest.fixture(scope="module")
def two_targets(tmp_path_factory):
    b = _battery(name="dos_destinos", templates=6, repetitions=5, labels=LABELS["es"], comparisons=COMPARISONS,
                 measures=MEASURES, target={})
    del b["target"]
    b["targets"] = {"sesgado": {"kind": "mock", "correlation": 0.8,
                                "bias": {"magreb": {"refund": 0.2, "words_factor": 0.7}}},
                    "justo": {"kind": "mock", "correlation": 0.8}}
    return run_battery(tmp_path_factory.mktemp("two_targets"), b)


def test_summary_and_reasons_name_the_target(two_targets, capsys):
    code, out, _ = run_cli(["report", two_targets], capsys, collapse=False)
    lines = out.splitlines()
    last = [ln for ln in lines if ln.startswith("FALLA ")][-1]
    fails = last.split("Fallan: ", 1)[1]
    # every failing comparison is named after its target, and only the biased target fails
    assert fails.startswith("sesgado: ") and "justo:" not in fails
    assert "sesgado: reembolso: magreb − espana" in fails
    # the reason lines name the target of the comparisons they cover
    reasons = [ln for ln in lines if ln.lstrip().startswith("no concluyente:")]
    assert any(ln.endswith("ampliado por ser una medida acotada (escala logit) (documentación: "
                           "Analysis, «One inference per comparison») (justo: reembolso: magreb − espana)")
               for ln in reasons)
    assert any(ln.endswith("(justo: reembolso: rumania − espana; sesgado: reembolso: rumania − espana)")
               for ln in reasons)


def test_one_target_keeps_the_short_label(mock_run, capsys):
    code, out, _ = run_cli(["report", mock_run], capsys, collapse=False)
    last = [ln for ln in out.splitlines() if ln.startswith("FALLA ")][-1]
    assert "Fallan: reembolso: magreb − espana" in last and "mock: reembolso" not in last
