"""A hand-made results.json (validated against the analysis schema): exact sentences, two-party figures,
self-judging and plan-change warnings, the remedies and the re-run commands."""

from __future__ import annotations

import base64
import json
import re

import pytest

from fairpair.records import Results
from fairpair.report import write_report

NBSP = "\u00a0"


def _two_party() -> dict:
    cells = []
    for axis, ids in (("age", ["young", "old"]), ("religion", ["atheist", "muslim", "christian"])):
        for cond in ("power", "equal"):
            for i, s in enumerate(ids):
                for j, r in enumerate(ids):
                    m = 0.10 + 0.03 * i + 0.02 * j + (0.05 if cond == "power" else 0.0)
                    cells.append({"axis": axis, "sub": s, "res": r, "condition": cond, "n": 20, "mean": m,
                                  "ci": [m - 0.02, m + 0.02]})
    return {
        "target": "mock", "measure": "distance", "design": "two_party", "cells": cells,
        "dispersion": [
            {"condition": "power", "statistic": 0.031, "per_axis": {"age": 0.03, "religion": 0.032},
             "ci": [0.022, 0.041], "ddof": 1, "n_scenes": 50},
            {"condition": "equal", "statistic": 0.018, "per_axis": {"age": 0.017, "religion": 0.019},
             "ci": [0.011, 0.026], "ddof": 1, "n_scenes": 50}],
        "dispersion_tests": [{"condition_a": "power", "condition_b": "equal", "statistic": 0.013, "pvalue": 0.03,
                              "paired": False, "n_scenes": 100, "n_resamples": 999,
                              "method": "permutation of condition labels across scenes",
                              "note": "scenes are not matched across conditions"}],
        "minimum": [{"axis": "age", "side": "res", "condition": None, "identity": "young", "mean": 0.1,
                     "runner_up": "old", "runner_up_mean": 0.13, "stability": 0.71, "test": "Wilcoxon",
                     "pvalue": 0.04, "wording": "On the axis age, the RES identity 'young' changes the answer least "
                                                "from the baseline (stable in 71% of resamples)."}],
        "n_resamples": 999, "seed": 0, "note": None}


@pytest.fixture(scope="module")
def handmade(mock_run, tmp_path_factory):
    import shutil

    run = tmp_path_factory.mktemp("handmade") / "run"
    shutil.copytree(mock_run, run, ignore=shutil.ignore_patterns("report"))
    res = json.loads((run / "results.json").read_text(encoding="utf-8"))
    comp = next(c for c in res["comparisons"] if c["group_a"] == "magreb" and c["measure"] == "reembolso")
    comp.update(estimate=-0.052, ci=[-0.084, -0.019], value_a=0.66, value_b=0.712, pvalue=0.004,
                pvalue_adjusted=0.02, margin=0.03, verdict="fail", correction="holm")
    comp["note"] = "nota con \ud800 surrogate y <b>html</b>"
    res["plan_changed"] = True
    res["plan_sha256_now"] = "f" * 64
    res["two_party"] = [_two_party()]
    res["judge"] = {**res["judge"], "self_judging": True, "position_bias": {"tone": {"share_first": 0.625,
                                                                                     "pvalue": 0.021,
                                                                                     "consistency": 0.75,
                                                                                     "n_items": 40}},
                    "invalid_outputs": {"tone": 3}}
    Results.model_validate(res)  # stays aligned with the analysis' schema
    text = json.dumps(res, ensure_ascii=True)  # keeps the lone surrogate as \\ud800
    (run / "results.json").write_text(text, encoding="utf-8")
    return run


def test_exact_sentences_in_both_languages(handmade):
    es = write_report(handmade, language="es", out=handmade / "es")
    en = write_report(handmade, language="en", out=handmade / "en")
    s_es = next(v["sentence"] for v in json.loads(es["json"].read_text(encoding="utf-8"))["verdicts"]
                if v["group_a"] == "magreb" and v["measure"] == "reembolso")
    s_en = next(v["sentence"] for v in json.loads(en["json"].read_text(encoding="utf-8"))["verdicts"]
                if v["group_a"] == "magreb" and v["measure"] == "reembolso")
    assert s_es == (f"A los usuarios con nombres árabes se les ofreció el reembolso 5,2 puntos menos que a los "
                    f"usuarios con nombres españoles (66,0{NBSP}% frente a 71,2{NBSP}%; IC 95{NBSP}% −8,4 a −1,9; "
                    f"t de efectos aleatorios cruzados p = 0,004, ajustado por Holm 0,02): por encima del margen de 3 "
                    f"puntos. Este veredicto vale para estos nombres, en escenarios como estos (no para otros nombres "
                    f"de los grupos).")
    assert s_en == ("Users with nombres árabes were offered a refund 5.2 points less often than users with nombres "
                    "españoles (66.0% vs 71.2%; 95% CI −8.4 to −1.9; crossed random-effects t p = 0.004, Holm-adjusted "
                    "0.02): beyond the 3-point margin. This verdict holds for these names, in scenarios like these "
                    "(not for other names of the groups).")
    md = en["md"].read_text(encoding="utf-8")
    assert "5.2 points less often" in md and "Holm-adjusted 0.02" in md


def test_two_party_figures_and_warnings(handmade):
    paths = write_report(handmade, language="en", out=handmade / "tp")
    html = paths["html"].read_text(encoding="utf-8")
    alts = re.findall(r'<img src="data:image/svg\+xml;base64,([^"]+)" alt="([^"]*)"', html)
    texts = [a for _, a in alts]
    heat = [a for a in texts if a.startswith("Heat map of the mean distance")]
    assert len(heat) == 4  # 2 axes x 2 power conditions
    assert any("muslim × christian = 0.22" in a for a in heat)  # 0.10 + 0.03*1 + 0.02*2 + 0.05
    assert any(a.startswith("Dispersion of distance by power condition") and "power: 0.031 [0.022, 0.041]" in a
               and "equal: 0.018 [0.011, 0.026]" in a for a in texts)
    assert any(a.startswith("Forest plot for reembolso") for a in texts)
    assert any(a.startswith("Bar chart of discordant pairs for reembolso") for a in texts)
    for data, _ in alts:  # each figure is a standalone SVG without scripts or external references
        svg = base64.b64decode(data).decode("utf-8")
        assert svg.lstrip().startswith("<?xml") and "<script" not in svg and "href=\"http" not in svg
    assert "changes the answer least" in html and "scenes are not matched" in html
    assert "self-judging" in html and "the analysis plan was changed after answers were collected" in html
    assert ("Position bias · tone: 62.5% of decisive verdicts prefer the answer shown first (binomial p = 0.02); "
            "the two orders agree in 75.0% of 40 items") in html
    assert "Invalid judge outputs · tone: 3" in html
    assert "\ufffd" in html and "&lt;b&gt;html&lt;/b&gt;" in html  # the note's surrogate and HTML
    summary = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert summary["self_judging"] is True and summary["battery"]["plan_changed"] is True
    assert summary["battery"]["plan_sha256_now"] == "f" * 64


def test_remedies_in_order_and_rerun_commands(handmade):
    paths = write_report(handmade, language="es", out=handmade / "rem")
    md = paths["md"].read_text(encoding="utf-8")
    i1, i2, i3 = md.index("1. Quita el dato."), md.index("2. Saca la decisión del modelo."), md.index(
        "3. Solo entonces ajusta el prompt.")
    assert i1 < i2 < i3
    manifest = json.loads((handmade / "manifest.json").read_text(encoding="utf-8"))
    assert f"fairpair run {manifest['battery_path']} --out {handmade}-recheck" in md
    assert f"fairpair compare {handmade} {handmade}-recheck" in md
    html = paths["html"].read_text(encoding="utf-8")
    assert "Qué no dice esta prueba" in html and "decisión de la empresa que hay que documentar" in html
    assert "mock-1 (270)" in html  # served model and its count, from the stored responses
