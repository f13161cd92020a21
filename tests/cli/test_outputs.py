"""How fairpair presents verdicts, case by case (issues "every output reads in a minute" and "nothing
pre-registered vanishes", items 5-7): each thing said once, an incomplete run said first, headline and
table that agree, an ``inconclusive`` that says which part of the rule decided, one sign convention.

The runs use the ``mock`` target with the demo battery of tests/reliability, and
tests/data/bad_inputs/fp_outputs_bot.py (a python target: no refund and 35% empty answers for one
group), captured without a terminal.
"""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from markupsafe import escape
from tests.reliability.conftest import demo_battery

from fairpair.analysis._verdict import decide
from fairpair.analysis._why import comparison_reasons, reason_text
from fairpair.records import Reason
from run_helpers import run_cli

DATA = Path(__file__).resolve().parents[1] / "data" / "bad_inputs"
BORDERS = set("┏┓┗┛━┃┡┩╇┳┻─│└┘┌┐├┤┼╋┴┬ ")
NAMES = {"espana": ["Lucía", "Carmen", "Marta"], "magreb": ["Fátima", "Aicha", "Nadia"],
         "rumania": ["Ioana", "Elena", "Andreea"]}


def repeated_lines(out: str) -> dict[str, int]:
    """Non-blank lines, other than table borders, that the output holds more than once."""
    lines = [ln.rstrip() for ln in out.splitlines() if ln.strip() and not set(ln.strip()) <= BORDERS]
    return {k: n for k, n in collections.Counter(lines).items() if n > 1}


def bot_battery(directory: Path) -> Path:
    """8 templates x 3 groups x 3 names x 2 repetitions = 144 cases to fp_outputs_bot, names fixed."""
    b = {"schema_version": 1, "name": "salidas", "language": "es", "seed": 5, "repetitions": 2,
         "attributes": {"origen": {"signal": "name", "slot": "nombre",
                                   "groups": {g: {"variants": v} for g, v in NAMES.items()}}},
         "templates": [{"id": f"t{i:02d}", "turns": [f"Hola, soy {{nombre}}. Caso {i}: mi pedido llegó roto."]}
                       for i in range(8)],
         "designs": [{"kind": "counterfactual", "attribute": "origen"}],
         "target": {"kind": "python", "callable": "fp_outputs_bot:answer", "path": str(DATA)},
         "measures": {"reembolso": {"kind": "keywords", "any_of": ["reembolso completo"]}},
         "analysis": {"bootstrap_resamples": 200, "generalize": {"names": "fixed"}, "comparisons": [
             {"id": "reembolso", "measure": "reembolso", "attribute": "origen", "reference": "espana",
              "margin": 0.05}]}}
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "battery.yaml"
    path.write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def bot_runs(tmp_path_factory):
    """A complete run of the bot (stdout of `fairpair run` kept) and an incomplete one."""
    tmp = tmp_path_factory.mktemp("outputs")
    battery = bot_battery(tmp / "b")
    from fairpair.cli import main

    def run(*args) -> int:
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 1
        return 0

    runs = {"battery": battery, "full": tmp / "full", "partial": tmp / "partial"}
    os.environ["FP_OUTPUTS_STOP"] = "1"
    try:  # templates 6 and 7 fail: 5 failures in a row stop the run with cases left
        assert run("run", battery, "--out", runs["partial"], "-q", "--concurrency", "1") == 2
    finally:
        del os.environ["FP_OUTPUTS_STOP"]
    assert run("measure", runs["partial"]) == 0
    yield runs
    sys.modules.pop("fp_outputs_bot", None)


# ------------------------------------------------------------------ the terminal says each thing once


def test_run_output_says_each_thing_once(tmp_path, capsys):
    """The mock target judged by itself (self-judging), a judge that fails its self-test and gives
    degenerate scores, and nine comparisons sharing one insufficient design: before, 24 lines came
    twice or three times (measure stage, the "!" list, each sentence)."""
    battery = demo_battery(tmp_path / "b", {"kind": "mock"}, judge={"kind": "mock"}, judge_self_test="warn")
    code, out, _ = run_cli(["run", battery, "--out", tmp_path / "run"], capsys, collapse=False)
    assert code == 0
    assert repeated_lines(out) == {}
    # the table first, then the reasons and the warnings, each once
    table = out.index("Veredictos de fairpair")
    assert table < out.index("diseño insuficiente: 3 plantilla(s)") < out.index("! ")
    assert out.count("autoevaluación") == 1  # self-judging, said by the analysis and the report before
    assert out.count("failed its self-test") == 1
    # one reason shared by the six measured comparisons, said once with the comparisons it covers
    line = next(ln for ln in out.splitlines() if ln.startswith("diseño insuficiente: 3 plantilla(s)"))
    assert line.endswith("(reembolso: china − espana; reembolso: magreb − espana; reembolso: rumania − espana; "
                         "palabras: china − espana; palabras: magreb − espana; palabras: rumania − espana)")
    # one line per comparison in the table
    rows = [ln for ln in out.splitlines() if ln.startswith("│")]
    assert len(rows) == 9 and all("reembolso" in r or "palabras" in r or "tono" in r for r in rows)
    # --verbose gives the sentences too; `report` reprints the same verdicts once
    code, out, _ = run_cli(["report", tmp_path / "run", "--verbose"], capsys, collapse=False)
    assert code == 0 and repeated_lines(out) == {}
    assert "sin veredicto: el diseño no lo permite (el motivo, bajo los veredictos)" in out


# ------------------------------------------------------------------ an incomplete run says so first (#28 item 5)


def test_incomplete_run_says_so_first_everywhere(bot_runs, capsys):
    run = bot_runs["partial"]
    code, out, _ = run_cli(["analyze", run], capsys)
    assert code == 0
    res = json.loads((run / "results.json").read_text(encoding="utf-8"))
    inc = res["incomplete"]
    # 6 templates x 18 cases answered, then the first 5 cases of template 6 failed and the run stopped
    assert (inc["answered"], inc["cases"]) == (108, 144)
    command = f"fairpair run {bot_runs['battery']} --out {run}"
    assert inc["command"] == command
    headline = f"run incomplete: 108 of 144 answered; resume with `{command}`"
    assert all(c["reasons"][0] == "incomplete run" and c["reason"] == headline for c in res["comparisons"])
    # the terminal: the headline first, before the table and before any design reason
    code, out, _ = run_cli(["report", run, "--lang", "en"], capsys, collapse=False)
    assert code == 0
    assert out.splitlines()[0] == f"RUN INCOMPLETE run incomplete: 108 of 144 answered; resume with {command}"
    assert "insufficient design" not in out and "use at least" not in out
    code, out, _ = run_cli(["report", run, "--lang", "en", "--verbose"], capsys, collapse=False)
    rows = [ln for ln in out.splitlines() if ln.startswith("RUN INCOMPLETE ") and " − espana" in ln]
    # every comparison has its line, but answer statuses that no answer of either group has (one line after
    # the table says which): the plan's 2, answer.failed in both pairs of groups, answer.empty of magreb
    shown = [c for c in res["comparisons"] if not (c["measure"].startswith("answer.") and c["value_a"] == 0
                                                   and c["value_b"] == 0)]
    assert len(rows) == len(shown) == 5 and len(res["comparisons"]) == 8
    assert all("no verdict until the run is complete (see the headline)." in ln for ln in rows)
    assert "insufficient design" not in out and "use at least" not in out
    # the report: its banner is the headline
    html = (run / "report" / "report.html").read_text(encoding="utf-8")
    banner = html[html.index('<div class="banner'):]
    assert banner.split("</div>")[0].endswith(
        f"RUN INCOMPLETE</span> run incomplete: 108 of 144 answered; resume with <code>{escape(command)}</code>")
    # the gate: exit 2 with the headline, not "enlarge the battery"
    code, out, err = run_cli(["gate", run], capsys)
    assert code == 2
    assert f"nothing to gate: run incomplete: 108 of 144 answered; resume with `{command}`" in err
    assert "enlarge" not in err + out


# ------------------------------------------------------------------ headline and table agree (#28 item 6)


def test_a_failing_answer_status_is_named_gated_and_explained(bot_runs, capsys):
    code, out, _ = run_cli(["run", bot_runs["battery"], "--out", bot_runs["full"]], capsys, collapse=False)
    assert code == 0 and repeated_lines(out) == {}
    res = json.loads((bot_runs["full"] / "results.json").read_text(encoding="utf-8"))
    empty = next(c for c in res["comparisons"] if c["measure"] == "answer.empty" and c["group_a"] == "magreb")
    # 22 of the 48 Maghreb answers are empty (the bot's draw), none of the others
    assert (empty["value_a"], empty["value_b"]) == (pytest.approx(22 / 48), 0.0)
    assert empty["verdict"] == "fail" and not empty["primary"]
    # the 48 refund pairs of the Maghreb names all disagree the same way: an interval, not -100..-100
    refund = next(ln for ln in out.splitlines() if "reembolso: magreb − espana" in ln)
    assert refund.startswith("│ FALLA") and "−100,0 p. p." in refund and "−100,0..−26,1" in refund
    # the table marks it, the mark is explained where it is printed, the headline names it
    row = next(ln for ln in out.splitlines() if "answer.empty: magreb − espana †" in ln)
    assert row.startswith("│ FALLA")
    assert "† comparación automática de un estado de respuesta" in out
    last = [ln for ln in out.splitlines() if ln.startswith("FALLA ")][-1]
    assert last.startswith("FALLA Al menos una comparación prerregistrada falla. Fallan: ")
    assert "answer.empty: magreb − espana †" in last
    # the gate fails on it, unless told to ignore the answer statuses
    code, out, _ = run_cli(["gate", bot_runs["full"]], capsys, collapse=False)
    assert code == 1
    assert any(ln.startswith("FAIL") and "answer.empty magreb vs espana" in ln for ln in out.splitlines())
    code, out, _ = run_cli(["gate", bot_runs["full"], "--ignore-status"], capsys, collapse=False)
    assert code == 1  # the refund still fails
    assert any(ln.startswith("fail (answer status, --ignore-status)") for ln in out.splitlines())
    # JUnit: the status comparison is a failure too
    code, _, _ = run_cli(["gate", bot_runs["full"], "--junit", bot_runs["full"] / "j.xml"], capsys)
    xml = (bot_runs["full"] / "j.xml").read_text(encoding="utf-8")
    case = xml[xml.index('name="answer.empty-by-origen[python:counterfactual-origen:magreb-vs-espana]"'):]
    assert case.index("<failure") < case.index("</testcase>")


def test_status_fail_alone_fails_the_gate_unless_ignored(tmp_path, bot_runs, capsys):
    """The refund comparison taken out of the gate (secondary): only the answer status fails."""
    import shutil

    from fairpair.analysis import gate_exit_code
    from fairpair.records import Results

    run = tmp_path / "run"
    shutil.copytree(bot_runs["full"], run)
    res = Results.model_validate_json((run / "results.json").read_text(encoding="utf-8"))
    comps = [c.model_copy(update={"verdict": "pass"}) if c.measure == "reembolso" else c for c in res.comparisons]
    (run / "results.json").write_text(res.model_copy(update={"comparisons": comps}).to_json(), encoding="utf-8")
    os.utime(run / "results.json")  # newer than the store: the gate reads it
    assert gate_exit_code(run) == 1
    assert gate_exit_code(run, ignore_status=True) == 0


# ------------------------------------------------------------------ inconclusive says why (#28 item 7)

ESCALATION = {  # +13.3 points, 95% CI 6.3 to 20.3, margin 3: beyond the margin before Holm, not after
    "scale": "binary", "estimate": 0.133, "ci": [0.063, 0.203], "equivalence_ci": [0.075, 0.191],
    "pvalue": 0.0004, "pvalue_adjusted": 0.0012, "pvalue_margin": 0.0203, "pvalue_margin_adjusted": 0.061,
    "margin": 0.03, "alpha": 0.05, "correction": "holm", "confidence_level": 0.95, "n_pairs": 60,
    "value_a": 0.3, "value_b": 0.167,
}


def test_beyond_the_margin_before_holm_not_after():
    verdict, _ = decide(ESCALATION["ci"], ESCALATION["equivalence_ci"], ESCALATION["pvalue_adjusted"],
                        ESCALATION["margin"], 0.05, pvalue_margin_adjusted=ESCALATION["pvalue_margin_adjusted"])
    assert verdict == "inconclusive"
    c = {**ESCALATION, "verdict": verdict}
    assert comparison_reasons(c) == [Reason.ADJUSTED_P_MARGIN]
    assert reason_text(c) == "beyond the margin before the Holm adjustment, not after (p = 0.061 against the margin)"
    assert reason_text(c, lang="es") == ("fuera del margen antes del ajuste de Holm, no después (p = 0,061 frente "
                                         "al margen)")
    from fairpair.report import verdict_sentence

    s = verdict_sentence(c, lang="en", label_a="A", label_b="B", measure_label="escalation")
    assert s.endswith("(p = 0.061 against the margin).") and "95% CI 6.3 to 20.3" in s
    # the same interval with the adjusted p against the margin below alpha: a fail
    assert decide(c["ci"], c["equivalence_ci"], 0.0012, 0.03, 0.05, pvalue_margin_adjusted=0.04)[0] == "fail"


@pytest.mark.parametrize("update,reason,text", [
    ({"ci": [-0.01, 0.08], "equivalence_ci": [0.0, 0.07], "pvalue_adjusted": 0.2},
     Reason.INTERVAL, "the 95% interval (−1.0 to 8.0) does not settle whether the difference is within the "
                      "3-point margin; a pass needs the 90% interval (0.0 to 7.0) inside it"),
    ({"pvalue_adjusted": 0.08}, Reason.ADJUSTED_P_ZERO,
     "the interval lies beyond the margin, but the difference is not significant after the Holm adjustment "
     "(p = 0.080 against zero)"),
    ({"margin": None, "pvalue": 0.03, "pvalue_adjusted": 0.09}, Reason.ADJUSTED_P_ZERO,
     "significant before the Holm adjustment, not after (p = 0.090 against zero; no margin was pre-registered)"),
])
def test_each_inconclusive_names_the_part_that_decided(update, reason, text):
    c = {**ESCALATION, **update}
    c["verdict"] = decide(c["ci"], c["equivalence_ci"], c["pvalue_adjusted"], c["margin"], 0.05,
                          pvalue_margin_adjusted=c["pvalue_margin_adjusted"])[0]
    assert c["verdict"] == "inconclusive"
    assert comparison_reasons(c) == [reason] and reason_text(c) == text


def _words(ci_method: str, eq: list[float], df: float = 12.0) -> dict:
    """A word-count comparison, difference -3.25 (SE 2.2, ``df``): the 95% t interval from scipy, the pass
    interval ``eq``, margin 5."""
    from scipy import stats

    half = stats.t.ppf(0.975, df) * 2.2
    return {"scale": "count", "estimate": -3.25, "ci": [-3.25 - half, -3.25 + half], "equivalence_ci": eq,
            "df": df, "se": 2.2, "pvalue": 0.16, "pvalue_adjusted": 0.16, "pvalue_margin": 0.2,
            "pvalue_margin_adjusted": 0.2, "margin": 5, "alpha": 0.05, "correction": "holm",
            "confidence_level": 0.95, "n_pairs": 60, "verdict": "inconclusive", "ci_method": ci_method}


def test_a_pass_interval_wider_than_the_t_says_why():
    """The newcomer read "the 95% interval (−8.0 to 1.5) ... a pass needs the 90% interval (−20.4 to 0.9)"
    and asked how a 90% interval can be wider: the hull with Hall's skewness-corrected t (for a bounded
    measure, with the logit-scale interval) says so, with the docs section; the plain 90% t is
    estimate +/- t(0.95, df) x SE (scipy), and a pass interval no wider than it (within half a shown digit)
    says nothing more."""
    from scipy import stats

    from fairpair.analysis._paired import CI_METHOD, CI_METHOD_BOUNDED

    t90 = stats.t.ppf(0.95, 12.0) * 2.2  # 3.92: the plain 90% interval is -7.17 to 0.67
    c = _words(CI_METHOD, [-20.4, 0.9])
    assert reason_text(c) == (
        "the 95% interval (−8.0 to 1.5) does not settle whether the difference is within the ±5 margin; a pass "
        "needs the 90% interval (−20.4 to 0.9) inside it, widened for skew (Hall) (docs: Analysis, “One "
        "inference per comparison”)")
    assert reason_text(c, lang="es") == (
        "el intervalo al 95 % (−8,0 a 1,5) no resuelve si la diferencia está dentro del margen de ±5; para "
        "pasar, el intervalo al 90 % (−20,4 a 0,9) debe quedar dentro, ampliado por la asimetría (Hall) "
        "(documentación: Analysis, «One inference per comparison»)")
    bounded = reason_text(_words(CI_METHOD_BOUNDED, [-20.4, 0.9]))
    assert bounded.endswith("inside it, widened for a bounded measure (logit scale) (docs: Analysis, "
                            "“One inference per comparison”)")
    assert reason_text(_words(CI_METHOD_BOUNDED, [-20.4, 0.9]), lang="es").endswith(
        "ampliado por ser una medida acotada (escala logit) (documentación: Analysis, «One "
        "inference per comparison»)")
    # the plain 90% t, and the same widened by less than half a shown digit: no explanation
    for eq in ([-3.25 - t90, -3.25 + t90], [-3.25 - t90 - 0.04, -3.25 + t90]):
        assert reason_text(_words(CI_METHOD, eq)).endswith("a pass needs the 90% interval (−7.2 to 0.7) inside it")
    assert "widened" in reason_text(_words(CI_METHOD, [-3.25 - t90 - 0.06, -3.25 + t90]))
    # a pass interval without Hall's hull (templates fixed; or results.json without ci_method): as before
    assert "widened" not in reason_text(_words("templates fixed (these scenarios): t", [-20.4, 0.9]))
    assert "widened" not in reason_text({**_words(CI_METHOD, [-20.4, 0.9]), "ci_method": None})


def test_sentence_and_table_share_one_sign(bot_runs, capsys):
    """The seed's example read "0.1 lower ... CI -0.3 to 0.4" beside "-0.1, -0.4..0.3": the sentence now
    gives the interval of A - B as the table does."""
    c = {"scale": "count", "estimate": -0.1, "ci": [-0.4, 0.3], "value_a": 2.0, "value_b": 2.1,
         "verdict": "inconclusive", "margin": 1, "pvalue": 0.5, "pvalue_adjusted": 0.5, "correction": "holm",
         "equivalence_ci": [-0.35, 0.25], "n_pairs": 40}
    from fairpair.report import verdict_sentence

    s = verdict_sentence(c, lang="en", label_a="A", label_b="B", measure_label="options")
    assert "0.1 fewer" in s and "95% CI −0.4 to 0.3" in s
    from fairpair.report import report_model
    from fairpair.store import Run

    with Run.open(bot_runs["full"], lenient_text=True) as run:
        model = report_model(run, language="en")
    for r in model.rows:
        lo, hi = r.result.ci or (None, None)
        if lo is not None and r.result.estimate and not (r.status and r.verdict == "fail"):  # its own sentence
            f = 100 if r.scale == "binary" else 1
            assert r.ci == f"{lo * f:.1f} … {hi * f:.1f}".replace("-", "−")
            assert f"CI {lo * f:.1f} to {hi * f:.1f}".replace("-", "−") in r.sentence


def test_pytest_plugin_fails_on_an_answer_status(tmp_path):
    """The pytest plugin's per-target item for the answer statuses fails as the gate does."""
    import shutil
    import subprocess

    battery = bot_battery(tmp_path / "b")
    shutil.copy(battery, tmp_path / "fairness_salidas.yaml")
    shutil.rmtree(tmp_path / "b")
    from importlib.metadata import entry_points

    registered = any(ep.value == "fairpair.testing.pytest_plugin" for ep in entry_points(group="pytest11"))
    plugin = [] if registered else ["-p", "fairpair.testing.pytest_plugin"]
    out = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *plugin, "--rootdir",
                          str(tmp_path), "--fairpair-out", str(tmp_path / "runs"), str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "FAILED fairness_salidas.yaml::answer-statuses[python]" in text
    assert ("answer.empty: magreb 0.458333333333333" in text and "vs espana 0.0, estimate" in text
            and "fail (automatic comparison of an answer status)" in text), text
    assert "FAILED fairness_salidas.yaml::reembolso[python:counterfactual-origen:magreb-vs-espana]" in text


def test_reasons_another_stage_gave_are_kept_in_precedence():
    """Room for the reasons other work adds (a heterogeneous average over scenarios): kept, ordered by the
    shared precedence, worded by the stage that gave them."""
    c = {**ESCALATION, "verdict": "inconclusive", "reasons": ["heterogeneous average"],
         "reason": "the difference lives in 2 of 12 scenarios"}
    assert comparison_reasons(c) == [Reason.HETEROGENEOUS_AVERAGE, Reason.ADJUSTED_P_MARGIN]
    assert comparison_reasons(c, incomplete=True)[0] is Reason.INCOMPLETE_RUN
    assert reason_text(c) == "the difference lives in 2 of 12 scenarios"
