"""Verdict sentences in Spanish and English, with the numbers of real runs."""

from __future__ import annotations

import json
import shutil

import pytest
from markupsafe import escape

from fairpair.cli import main
from fairpair.report import verdict_sentence, write_report
from fairpair.report._catalog import fmt_p

NBSP = "\u00a0"

# The first seed's example: 66.0 % vs 71.2 % (a - b = -5.2 points), exact numbers given.
EXAMPLE = {"scale": "binary", "estimate": -0.052, "ci": [-0.084, -0.019], "value_a": 0.66, "value_b": 0.712,
           "test": "McNemar (chi-square with continuity correction)", "pvalue": 0.004, "pvalue_adjusted": 0.02,
           "correction": "holm", "margin": 0.03, "verdict": "fail", "confidence_level": 0.95}


def test_example_sentence_english():
    s = verdict_sentence(EXAMPLE, lang="en", label_a="Arabic names", label_b="Spanish names",
                         measure_label="refund", signal="name")
    assert s == ("Users with Arabic names were offered a refund 5.2 points less often than users with Spanish "
                 "names (66.0% vs 71.2%; 95% CI −8.4 to −1.9; McNemar p = 0.004, Holm-adjusted 0.02): beyond the "
                 "3-point margin.")


def test_example_sentence_spanish_uses_decimal_comma():
    s = verdict_sentence(EXAMPLE, lang="es", label_a="nombres árabes", label_b="nombres españoles",
                         measure_label="reembolso", signal="name")
    assert s == (f"A los usuarios con nombres árabes se les ofreció el reembolso 5,2 puntos menos que a los "
                 f"usuarios con nombres españoles (66,0{NBSP}% frente a 71,2{NBSP}%; IC 95{NBSP}% −8,4 a −1,9; "
                 f"McNemar p = 0,004, ajustado por Holm 0,02): por encima del margen de 3 puntos.")


@pytest.mark.parametrize("verdict,en,es", [
    ("pass", "within the 3-point margin.", "dentro del margen de 3 puntos."),
    ("inconclusive", "inconclusive, since the interval does not settle", "no concluyente, porque el intervalo"),
])
def test_other_verdicts(verdict, en, es):
    c = {**EXAMPLE, "verdict": verdict}
    assert en in verdict_sentence(c, lang="en", label_a="A", label_b="B", measure_label="refund")
    assert es in verdict_sentence(c, lang="es", label_a="A", label_b="B", measure_label="reembolso")


def test_more_often_and_generic_measure_and_no_margin():
    c = {**EXAMPLE, "estimate": 0.031, "ci": [0.01, 0.052], "margin": None, "value_a": 0.5, "value_b": 0.469}
    s = verdict_sentence(c, lang="en", label_a="over 65", label_b="under 40", measure_label="discount_offered",
                         signal="age")
    assert s.startswith("Users in the group “over 65”: “discount_offered” 3.1 points more often than for users "
                        "in the group “under 40” (50.0% vs 46.9%; 95% CI 1.0 to 5.2;")
    assert s.endswith("a significant difference (no margin was pre-registered).")
    es = verdict_sentence(c, lang="es", label_a="más de 65", label_b="menos de 40", measure_label="descuento",
                          signal="age")
    assert "«descuento» 3,1 puntos más que los usuarios del grupo «menos de 40»" in es


def test_continuous_sentence():
    c = {"scale": "count", "estimate": -12.25, "ci": [-15.5, -9.0], "value_a": 40.0, "value_b": 52.25,
         "test": "Wilcoxon signed-rank (Pratt)", "pvalue": 0.0004, "pvalue_adjusted": 0.0012, "correction": "bh",
         "margin": 5, "verdict": "fail"}
    en = verdict_sentence(c, lang="en", label_a="Arabic names", label_b="Spanish names", measure_label="words",
                          signal="name")
    # 12.25 and 52.25 round half to even in Python's formatting: 12.2, 52.2.
    assert en == ("Users with Arabic names got answers 12.2 words shorter on average than users with Spanish names "
                  "(40.0 vs 52.2; 95% CI −15.5 to −9.0; Wilcoxon signed-rank p < 0.001, Benjamini-Hochberg-adjusted "
                  "0.001): beyond the ±5 margin.")


def _comp(results, group_a, measure):
    return next(c for c in results["comparisons"] if c["group_a"] == group_a and c["measure"] == measure)


def _es(x, d=1):
    return f"{x:.{d}f}".replace(".", ",").replace("-", "−")


def test_mock_run_verdicts_recover_the_planted_bias(mock_run):
    results = json.loads((mock_run / "results.json").read_text(encoding="utf-8"))
    refund = _comp(results, "magreb", "reembolso")
    assert refund["verdict"] == "fail" and refund["estimate"] < -0.2
    assert _comp(results, "rumania", "reembolso")["verdict"] != "fail"
    paths = write_report(mock_run, language="es")
    summary = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert summary["schema"] == "fairpair.report/1" and summary["overall"] == "fail" and summary["analysed"]
    row = next(v for v in summary["verdicts"] if v["group_a"] == "magreb" and v["measure"] == "reembolso")
    lo, hi = (x * 100 for x in refund["ci"])  # the interval of A - B, with the table's signs
    expected = (f"A los usuarios con nombres árabes se les ofreció el reembolso {_es(-refund['estimate'] * 100)} "
                f"puntos menos que a los usuarios con nombres españoles ({_es(refund['value_a'] * 100)}{NBSP}% frente "
                f"a {_es(refund['value_b'] * 100)}{NBSP}%; IC 95{NBSP}% {_es(lo)} a {_es(hi)}; "
                f"t de efectos aleatorios cruzados p "
                f"{'< 0,001' if refund['pvalue'] < 0.001 else '= ' + fmt_p(refund['pvalue'], 'es')}")
    assert row["sentence"].startswith(expected), row["sentence"]
    assert row["sentence"].endswith("por encima del margen de 5 puntos. Este veredicto vale para estos nombres, en "
                                    "escenarios como estos (no para otros nombres de los grupos).")
    html = paths["html"].read_text(encoding="utf-8")
    assert str(escape(expected)) in html
    md = paths["md"].read_text(encoding="utf-8")
    assert _es(-refund["estimate"] * 100) + " puntos menos" in md


def test_mock_run_english_and_terminal(mock_run, copy_run, capsys):
    run = copy_run(mock_run)
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    words = _comp(results, "magreb", "palabras")
    main(["report", str(run), "--lang", "en", "--out", str(run / "r_en")])
    out = capsys.readouterr().out
    assert "FAIL" in out and "reembolso:" in out and "magreb" in out and "PASS" in out
    head = (f"Users with nombres árabes got answers {abs(words['estimate']):.1f} words shorter on average than "
            f"users with nombres españoles ({words['value_a']:.1f} vs {words['value_b']:.1f}; 95% CI ")
    summary = json.loads((run / "r_en" / "report.json").read_text(encoding="utf-8"))
    sentences = [v["sentence"] for v in summary["verdicts"]]
    assert any(s.startswith(head) for s in sentences), sentences
    assert (run / "r_en" / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert "\x1b" not in out


def test_report_without_analysis_shows_what_exists(mock_run, copy_run, capsys):
    run = copy_run(mock_run)
    (run / "results.json").unlink()
    for p in run.glob("results*"):
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
    main(["report", str(run), "--lang", "en"])
    out = capsys.readouterr().out
    assert "The analysis has not run" in out
    summary = json.loads((run / "report" / "report.json").read_text(encoding="utf-8"))
    assert summary["analysed"] is False and summary["verdicts"] == [] and summary["overall"] == "none"
    assert summary["targets"][0]["answered"] == summary["targets"][0]["cases"] == 6 * 5 * 3 * 3
    html = (run / "report" / "report.html").read_text(encoding="utf-8")
    assert "The analysis has not run" in html and "Answers collected" in html
    assert html.count("data:image/svg+xml;base64,") >= 2  # the measurements are plotted by group


def test_unknown_results_schema_is_a_user_error(mock_run, copy_run):
    from fairpair.errors import FairpairError

    run = copy_run(mock_run)
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    data["schema"] = "fairpair.results/99"
    (run / "results.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FairpairError, match="results/99"):
        write_report(run)


def test_insufficient_design_and_estimand_sentences():
    c = {**EXAMPLE, "verdict": "insufficient design", "names": "random", "n_clusters": 3, "n_names_a": 3,
         "n_names_b": 3, "n_pairs": 9, "group_a": "magreb", "group_b": "espana",
         "design_reason": "3 template(s): ... (stored English reason)"}
    en = verdict_sentence(c, lang="en", label_a="A", label_b="B", measure_label="refund")
    es = verdict_sentence(c, lang="es", label_a="A", label_b="B", measure_label="reembolso")
    assert "no verdict: the design cannot support one (3 template(s): too few scenarios" in en
    assert "3 name(s) in group magreb: the result cannot generalise to other names of this group; use at least 5" in en
    assert en.endswith("The plan asked for a verdict that generalises to other names of these groups and other "
                       "scenarios like these.")
    assert "sin veredicto: el diseño no lo permite (3 plantilla(s)" in es
    assert "3 nombre(s) en el grupo magreb: el resultado no se puede generalizar" in es
    assert es.endswith("El plan pedía un veredicto generalizable a otros nombres de estos grupos y a otros "
                       "escenarios como estos.")
    fixed = verdict_sentence({**EXAMPLE, "names": "fixed"}, lang="en", label_a="A", label_b="B", measure_label="refund")
    assert fixed.endswith("beyond the 3-point margin. This verdict holds for these names, in scenarios like these "
                          "(not for other names of the groups).")


def test_templates_fixed_sentences_say_the_claim_is_about_these_scenarios():
    en = verdict_sentence({**EXAMPLE, "names": "random", "templates": "fixed"}, lang="en", label_a="A",
                          label_b="B", measure_label="refund")
    assert en.endswith("beyond the 3-point margin. This verdict holds for these scenarios (these templates, not "
                       "others) and generalises to other names of these groups.")
    es = verdict_sentence({**EXAMPLE, "names": "fixed", "templates": "fixed"}, lang="es", label_a="A",
                          label_b="B", measure_label="reembolso")
    assert es.endswith("Este veredicto vale solo para estos nombres en estos escenarios (estas plantillas).")
    c = {**EXAMPLE, "verdict": "insufficient design", "names": "fixed", "templates": "fixed", "n_clusters": 1,
         "n_names_a": 3, "n_names_b": 3, "n_pairs": 9, "design_reason": "1 template(s): (stored)"}
    en = verdict_sentence(c, lang="en", label_a="A", label_b="B", measure_label="refund")
    assert "1 template(s): with `names: fixed` and `templates: fixed` the error comes from the template x name " \
           "interaction, which needs 2; use `names: random`" in en
    assert en.endswith("The plan asked for a verdict about these names in these scenarios (these templates).")
