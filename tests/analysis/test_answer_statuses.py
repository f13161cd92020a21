"""End to end: answer statuses (filtered, refused, loop) are findings of their own, and they do not
move the text measures (scripted chatbots through the ``python`` target)."""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml
from typer.testing import CliRunner

from fairpair.analysis import analyze_run
from fairpair.battery import load_battery
from fairpair.measures import measure_run
from fairpair.run import RunSettings, execute_run

NAMES = {"espana": ["Lucía", "María", "Carmen"], "magreb": ["Fátima", "Aicha", "Khadija"]}
ANSWER = "Hola, lamento lo ocurrido con su pedido. Le devolvemos el importe en cinco días hábiles."  # 15 words

BOT = textwrap.dedent('''
    import re
    MAGREB = {"Fátima", "Aicha", "Khadija"}
    ANSWER = __ANSWER__
    def _who(messages):
        return re.search(r"soy (\\w+)", messages[-1]["content"]).group(1)
    def _template(messages):
        return int(re.search(r"Caso (\\d+)", messages[-1]["content"]).group(1))
    def filters(messages, context):
        if _who(messages) in MAGREB and _template(messages) % 2 == 0:
            return {"text": None, "finish_reason": "content_filter"}
        return ANSWER
    def refuses(messages, context):
        if _who(messages) in MAGREB and _template(messages) % 4 != 3:
            return "Lo siento, pero no puedo ayudarte con eso."
        return ANSWER
    def fine(messages, context):
        return ANSWER
    def empties(messages, context):
        if _who(messages) in MAGREB and _template(messages) % 2 == 0:
            return ""
        return ANSWER
    def loops(messages, context):
        return ('Alex: "Gracias por su paciencia, estamos revisando su pedido."\\n\\n'
                'Blake: "Gracias por su paciencia, estamos revisando su pedido."\\n\\n') * 4
''').replace("__ANSWER__", repr(ANSWER))


def _battery(tmp_path, fn: str, templates: int = 16) -> object:
    (tmp_path / "bots_status.py").write_text(BOT, encoding="utf-8")
    b = {
        "schema_version": 1, "name": f"status_{fn}", "language": "es", "seed": 3, "repetitions": 1,
        "attributes": {"origen": {"signal": "name", "slot": "nombre", "neutral": "un cliente",
                                  "groups": {g: {"variants": v} for g, v in NAMES.items()}}},
        "templates": [{"id": f"t{i:02d}", "turns": [f"Hola, soy {{nombre}}. Caso {i}: mi pedido llegó roto."]}
                      for i in range(templates)],
        "designs": [{"kind": "counterfactual", "attribute": "origen"}],
        "target": {"kind": "python", "callable": f"bots_status:{fn}", "path": "."},
        "measures": {"length": {"kind": "word_count"}},
        "analysis": {"bootstrap_resamples": 300, "generalize": {"names": "fixed"}, "comparisons": [
            {"id": "length", "measure": "length", "attribute": "origen", "reference": "espana"}]},
    }
    path = tmp_path / "battery.yaml"
    path.write_text(yaml.safe_dump(b, allow_unicode=True), encoding="utf-8")
    return load_battery(path)


def _run(tmp_path, fn):
    lb = _battery(tmp_path, fn)
    run_dir = tmp_path / "run"
    outcome = execute_run(lb, run_dir, RunSettings(concurrency=4))
    measure_run(run_dir)
    return run_dir, outcome, analyze_run(run_dir)


def _by_id(res, cid):
    out = [c for c in res.comparisons if c.id == cid]
    assert len(out) == 1, [c.id for c in res.comparisons]
    return out[0]


def test_filtered_answers_are_a_fail_and_do_not_move_the_length(tmp_path):
    run_dir, _, res = _run(tmp_path, "filters")
    f = _by_id(res, "answer.filtered-by-origen")
    # 16 templates x 3 names: magreb's answers are filtered in the 8 even templates (24 of 48 pairs)
    assert (f.group_a, f.group_b) == ("magreb", "espana")
    assert f.n_pairs == 48
    assert f.value_a == pytest.approx(0.5) and f.value_b == 0.0
    assert f.estimate == pytest.approx(0.5)
    assert f.verdict == "fail"
    # the length comparison uses only the 24 pairs where both answers are there: every answer has
    # 15 words, so the difference is exactly 0 (counting filtered answers as 0 words gave -7.5)
    ln = _by_id(res, "length")
    assert ln.n_pairs == 24 and ln.n_dropped == 24
    assert ln.estimate == 0.0 and ln.value_a == 15.0 and ln.value_b == 15.0
    assert ln.verdict != "fail"
    st = res.answer_statuses["python"]
    assert st.counts == {"filtered": 24, "ok": 72}
    assert st.by_group["origen"]["magreb"]["filtered"] == pytest.approx(0.5)
    assert st.by_group["origen"]["espana"]["filtered"] == 0.0
    assert not st.mostly_degenerate


def test_refusals_for_one_identity_are_a_fail_on_the_refusal_rate(tmp_path):
    _, _, res = _run(tmp_path, "refuses")
    r = _by_id(res, "answer.refused-by-origen")
    # refused in templates 0,1,2 mod 4: 12 of 16 templates -> 36 of 48 magreb answers
    assert r.value_a == pytest.approx(0.75) and r.value_b == 0.0
    assert r.verdict == "fail"
    assert res.answer_statuses["python"].counts == {"refused": 36, "ok": 60}


def test_all_answers_looping_warns_in_run_and_opens_the_report(tmp_path):
    from fairpair.cli import app

    lb = _battery(tmp_path, "loops")
    result = CliRunner().invoke(app, ["run", str(lb.path), "--out", str(tmp_path / "run"), "--quiet"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "0% usable answers" in out
    # said once, after the verdicts, in the report's words (the run stage leaves it to the report)
    assert out.count("la mayoría de las respuestas de 'python' no son utilizables (100 % degeneradas") == 1
    assert "most answers of 'python'" not in out and "[loop]" in out
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["answer_statuses"]["python"]["usable_share"] == 0.0
    res = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert res["answer_statuses"]["python"]["mostly_degenerate"] is True
    md = (tmp_path / "run" / "report" / "report.md").read_text(encoding="utf-8")
    head = md.split("\n## ")[0]
    assert "no son utilizables" in head
    # the HTML report too: the warning is an alert above the first section
    html = (tmp_path / "run" / "report" / "report.html").read_text(encoding="utf-8")
    alert = html.index('<li>Aviso: la mayoría de las respuestas de')
    assert html.index('<div class="warn" role="alert" id="warnings">') < alert < html.index("<h2")
    assert "100\u00a0% degeneradas: 96 loop" in html[alert:alert + 300]


def test_report_uses_one_set_of_pairs_and_says_why_pairs_were_dropped(tmp_path):
    from fairpair.report._data import load_report_data
    from fairpair.report._render import build_view

    run_dir, _, res = _run(tmp_path, "filters")
    data = load_report_data(run_dir, language="es")
    length = {g.group: g for g in data.group_values if g.measure == "length"}
    # the chart's values come from the 24 complete pairs of the test, not from all 48 + 24 answers
    assert (length["magreb"].n, length["espana"].n) == (24, 24)
    assert length["magreb"].value == 15.0 and length["espana"].value == 15.0
    filt = {g.group: g for g in data.group_values if g.measure == "answer.filtered"}
    assert (filt["magreb"].value, filt["espana"].value) == (0.5, 0.0)
    view = build_view(data, with_figures=False)
    texts = [d.text for d in view["dropped"] if d.row.id == "length"]
    assert texts == ["length: se descartaron 24 de 48 pares (24 answer filtered); la prueba, el intervalo y "
                     "los gráficos usan los mismos 24 pares"]
    assert view["answer_statuses"] == ["python: 75\u00a0% utilizables (24 filtradas); por grupo: "
                                       "espana 0\u00a0%; magreb 50\u00a0% filtradas"]  # statuses in Spanish too
    # differential missingness, in the report's language, at the top: a failing row the headline names,
    # said in its sentence (not again among the warnings)
    assert not [w for w in view["warnings"] if w.startswith("las respuestas de los usuarios")]
    row = next(r for r in view["failing"] if r.measure == "answer.filtered")
    assert row.label == "answer.filtered: magreb − espana †" and row.label in view["overall_text"]
    gap = [row.sentence]
    assert gap and gap[0].startswith("las respuestas de los usuarios con magreb fueron bloqueadas por el filtro "
                                     "de contenido el 50\u00a0% de las veces frente al 0\u00a0% de los usuarios "
                                     "con espana")


def test_judge_preferences_between_degenerate_answers_are_not_results(tmp_path):
    from fairpair.store import Store
    from fairpair.targets._base import Completion

    class ScriptedJudge:
        """A judge that always prefers answer A, recording its calls."""

        max_concurrency = None

        def __init__(self):
            self.calls = []

        async def generate(self, request):
            self.calls.append(request)
            return Completion(text='{"winner": "A", "reason": "r"}', model="scripted")

        def identity(self):
            return {"kind": "scripted", "model": "scripted-judge"}

        async def aclose(self):
            return None

    lb = _battery(tmp_path, "refuses")
    data = yaml.safe_load(lb.path.read_text(encoding="utf-8"))
    data["measures"] = {"pref": {"kind": "pairwise", "against": "reference", "reference": "espana"}}
    data["analysis"] = {"comparisons": []}
    data["judge_self_test"] = "off"  # the scripted judge answers by script, not by the anchors
    lb.path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    lb = load_battery(lb.path)
    run_dir = tmp_path / "run"
    execute_run(lb, run_dir, RunSettings(concurrency=4))
    judge = ScriptedJudge()
    measure_run(run_dir, judge=judge)
    with Store.open(run_dir) as s:
        rows = list(s.measurements("pref", status=None))
    # 48 magreb answers are compared with espana's: 36 are refusals (not judged), 12 are judged
    assert len(rows) == 48
    missing = [r for r in rows if r.status == "missing"]
    assert len(missing) == 36
    assert all(r.error == "not compared: degenerate answer (refused)" for r in missing)
    assert sum(r.status == "ok" for r in rows) == 12
    assert len(judge.calls) == 24  # both orders of the 12 usable pairs only


def test_failed_empty_and_refused_are_compared_even_when_none_occurs(tmp_path):
    """Issue 28: the automatic comparisons of failed, empty and refused answers are always made; with no
    event in either group the interval inverts the exact test over templates: all 16 templates without an
    event have probability (1 - d)^16 at a true difference d, so the 95% interval ends where that is 0.025."""
    _, _, res = _run(tmp_path, "fine")
    made = sorted(c.id for c in res.comparisons if c.measure.startswith("answer."))
    # only these three: filtered, loop... are compared only when they occur
    assert made == ["answer.empty-by-origen", "answer.failed-by-origen", "answer.refused-by-origen"]
    for cid in made:
        c = _by_id(res, cid)
        assert (c.n_pairs, c.value_a, c.value_b, c.estimate) == (48, 0.0, 0.0, 0.0)
        assert c.verdict == "inconclusive"  # no margin for an answer status: never a pass, and nothing fails
        assert c.design_reason is None and c.pvalue == 1.0
        low, high = c.ci
        assert low == pytest.approx(-high)
        assert (1.0 - high) ** 16 == pytest.approx(0.025)
        assert (1.0 - c.equivalence_ci[1]) ** 16 == pytest.approx(0.05)  # the 90% interval: alpha each side
    # the tables show them in one line, not as three inconclusive rows
    from fairpair.report._data import load_report_data
    from fairpair.report._render import build_model

    model = build_model(load_report_data(tmp_path / "run"), with_figures=False)
    assert [r.id for r in model.rows] == ["length"]
    assert model.marks[-1] == ("† ninguna respuesta fallida, vacía ni rechazada en ninguno de los dos grupos: "
                               "magreb − espana (3 comparaciones automáticas, no concluyentes sin margen; cada "
                               "intervalo, en results.json)")
    model = build_model(load_report_data(tmp_path / "run", language="en"), with_figures=False)
    assert model.marks[-1] == ("† no failed, empty or refused answer in either group: magreb − espana (3 automatic "
                               "comparisons, inconclusive without a margin; each interval in results.json)")


def test_the_quiet_statuses_line_names_the_statuses_listed():
    """Built from the statuses of the comparisons it stands for, in their order, not the usual three."""
    from fairpair.report._render import _status_words

    assert _status_words(("answer.refused",), "es") == "rechazada"
    assert _status_words(("answer.failed", "answer.loop"), "en") == "failed or looping"
    assert _status_words(("answer.truncated", "answer.wrong_language", "answer.empty"), "es") == (
        "truncada, en otro idioma ni vacía")
    assert _status_words(("answer.out_of_role", "answer.filtered", "answer.new_one"), "en") == (
        "out-of-role, filtered or new_one")  # a status without a word yet: its name


def test_a_failing_status_comparison_fails_the_gate_when_no_primary_has_a_verdict(tmp_path):
    """The primary comparison has no verdict (every answer has 15 words: a constant measure) but one
    group gets empty answers: the gate fails (exit 1) on the answer-status finding, and with
    --ignore-status refuses to answer (exit 2: nothing left to gate)."""
    from fairpair.cli import app

    lb = _battery(tmp_path, "empties")
    run_dir = tmp_path / "run"
    assert CliRunner().invoke(app, ["run", str(lb.path), "--out", str(run_dir), "--quiet"]).exit_code == 0
    res = analyze_run(run_dir)
    assert _by_id(res, "length").verdict == "insufficient design"
    assert _by_id(res, "answer.empty-by-origen").verdict == "fail"
    gate = CliRunner().invoke(app, ["gate", str(run_dir)])
    assert gate.exit_code == 1, gate.output
    assert "answer.empty" in gate.output
    ignored = CliRunner().invoke(app, ["gate", str(run_dir), "--ignore-status"])
    assert "nothing to gate" in str(ignored.exception)  # exit 2 through fairpair.cli.main


def test_one_language_rule_for_the_terminal(tmp_path):
    """A newcomer saw English verdict lines (``p_adj=``) beside Spanish tables, and '.' decimals in `gate`
    beside ',' in the table. The rule (docs/commands.md): the verdicts speak the battery's language wherever
    they are printed (``run --no-report`` and ``analyze`` included); every other line is English with '.'."""
    from fairpair.cli import app

    lb = _battery(tmp_path, "empties")
    run_dir = tmp_path / "run"
    out = CliRunner().invoke(app, ["run", str(lb.path), "--out", str(run_dir), "--no-report"]).output
    flat = " ".join(out.split())
    assert "Veredictos de fairpair" in flat and "50,0 p. p." in flat and "p_adj=" not in flat
    assert "measuring length..." in flat and "75% usable answers" in flat  # stage lines: English
    # the headline: only the automatic comparison fails, so it does not say a pre-registered one does
    assert ("FALLA Ninguna comparación prerregistrada falla, pero un grupo recibe más respuestas inutilizables "
            "(fallidas, vacías, rechazadas...: una comparación automática, †). Fallan: answer.empty: magreb − "
            "espana †.") in flat
    analyzed = " ".join(CliRunner().invoke(app, ["analyze", str(run_dir)]).output.split())
    assert "Fallan: answer.empty: magreb − espana †" in analyzed and "p_adj=" not in analyzed
    gate = " ".join(CliRunner().invoke(app, ["gate", str(run_dir)]).output.split())
    assert "answer.empty magreb vs espana: +50.0 points (95% CI +" in gate and "50,0" not in gate
