"""Rule-based measures on real Spanish and English customer-service sentences."""

from __future__ import annotations

import asyncio
import sys
import textwrap

import pytest

from fairpair._plugins import PluginError, validate_options
from fairpair.measures._base import MeasureItem
from fairpair.measures.rules import (
    KeywordsMeasure,
    OptionsCountMeasure,
    PythonMeasure,
    RegexMeasure,
    ToolCallMeasure,
    WordCountMeasure,
    count_options,
    count_words,
    fold_text,
)
from fairpair.store import Response


def resp(text: str, tool_calls=()) -> Response:
    return Response("t", "c1", "ok", text, [], list(tool_calls), None, None, None, "stop", "m", None, None, 1, "")


def run(measure, text: str, tool_calls=(), ctx=None):
    return asyncio.run(measure.measure(MeasureItem("t", None, resp(text, tool_calls)), ctx))


REFUND_KW = KeywordsMeasure({"any_of": ["reembolso", "devolución del importe", "refund"]}, name="refund")


@pytest.mark.parametrize("text, expected", [
    ("Le ofrecemos el reembolso completo del importe.", True),
    ("Lamentablemente no podemos ofrecer un reembolso.", False),
    ("Por ahora no podemos tramitar un reembolso.", False),
    ("No se preocupe, le tramitamos el REEMBOLSO hoy mismo.", True),  # negation in another clause
    ("El reembolso no es posible porque han pasado 30 días.", False),  # post-negation
    ("Sin reembolso, pero le damos un vale.", False),
    ("Hemos iniciado la devolución del importe a su tarjeta.", True),
    ("Hemos iniciado la devolucion del importe a su tarjeta.", True),  # without the accent
    ("We can offer you a full refund.", True),
    ("Unfortunately we cannot offer a refund.", False),
    ("A refund is not possible at this time.", False),
    ("We are unable to refund this order.", False),  # negated by 'unable'

    ("Gracias por su mensaje, le paso con un agente.", False),
])
def test_keywords_refund_es_en(text, expected):
    assert run(REFUND_KW, text).value is expected


def test_keywords_none_of_vetoes_sentence_and_keeps_others():
    m = KeywordsMeasure({"any_of": ["reembolso"], "none_of": ["política de reembolsos"]}, name="r")
    assert run(m, "Consulte nuestra política de reembolso en la web.").value is True  # singular != plural veto
    r = run(m, "Consulte la política de reembolsos. No hay reembolso posible.")
    assert r.value is False
    assert run(m, "Consulte la política de reembolsos. Le hacemos el reembolso hoy.").value is True


def test_keywords_whole_words_only():
    m = KeywordsMeasure({"any_of": ["vale"]}, name="v")
    assert run(m, "Le enviamos un vale de compra.").value is True
    assert run(m, "Eso no equivale a nada.").value is False  # 'equivale' contains 'vale'


def test_keywords_negation_can_be_switched_off():
    m = KeywordsMeasure({"any_of": ["reembolso"], "negation": False}, name="r")
    assert run(m, "No podemos ofrecer un reembolso.").value is True


def test_regex_with_exclude_pattern():
    m = RegexMeasure({"any_of": [r"reembols\w*", r"devolv\w+ (el|su) dinero"],
                      "exclude": [r"\bno\b.{0,30}(reembols|devolv)"]}, name="refund")
    assert run(m, "Le devolvemos el dinero en 3 días.").value is True
    assert run(m, "Le REEMBOLSAMOS el importe.").value is True
    r = run(m, "No podemos reembolsarle el importe.")
    assert r.value is False
    assert r.detail["vetoed"][0]["excluded_by"].startswith(r"\bno\b")
    # scope text: an exclude anywhere vetoes the whole answer
    m2 = RegexMeasure({"pattern": r"reembols", "none_of": [r"\bno\b"], "scope": "text"}, name="r2")
    assert run(m2, "Le reembolsamos. No dude en escribirnos.").value is False


def test_regex_invalid_pattern_is_a_battery_error():
    with pytest.raises(PluginError, match="invalid regular expression"):
        validate_options("fairpair.measures", "regex", {"any_of": ["(unclosed"]})
    with pytest.raises(PluginError, match="unknown key 'any'"):
        validate_options("fairpair.measures", "regex", {"any": ["x"]})


def test_fold_text():
    assert fold_text("ReemBOLSÓ Ñandú ’") == "reembolso nandu '"


def test_word_count():
    assert count_words("Hola, soy Ana. Don't e-mail 48213 — ¿vale?") == 7
    assert count_words("**Opciones:**\n- Cambio\n- Vale") == 3
    assert run(WordCountMeasure({}, name="w"), "Le ofrecemos el reembolso completo.").value == 5


@pytest.mark.parametrize("text, expected", [
    ("Puede elegir entre un vale de compra, un cambio o el reembolso.", 3),
    ("You can choose between a replacement or a refund.", 2),
    ("Estas son sus opciones:\n1. Sustitución del producto.\n2. Reembolso a su tarjeta.", 2),
    ("Opciones:\n- Recogida a domicilio\n- Entrega en tienda\n* Envío por correo", 3),
    ("Le ofrecemos dos opciones: cambiar el producto o recibir un vale.", 2),
    ("Either we send a new one or we refund you.", 2),
    ("Lo siento, no es posible.", 0),
    ("Le enviamos un nuevo producto y le devolvemos los gastos de envío.", 0),  # no trigger phrase
])
def test_count_options(text, expected):
    assert count_options(text)["total"] == expected
    assert run(OptionsCountMeasure({}, name="n"), text).value == expected


def test_tool_call_with_argument_match():
    calls = [{"name": "issue_refund", "arguments": {"reason": "Dañado", "amount": 89}}]
    assert run(ToolCallMeasure({"name": "issue_refund"}, name="t"), "", calls).value is True
    assert run(ToolCallMeasure({"name": "issue_refund", "arguments": {"reason": "dañado"}}, name="t"), "",
               calls).value is True
    assert run(ToolCallMeasure({"name": "issue_refund", "arguments": {"amount": 90}}, name="t"), "",
               calls).value is False
    assert run(ToolCallMeasure({"name": "transfer_to_human"}, name="t"), "", calls).value is False
    assert run(ToolCallMeasure({"name": "issue_refund"}, name="t"), "", []).value is False


def test_python_measure(tmp_path, monkeypatch):
    (tmp_path / "my_measures.py").write_text(textwrap.dedent("""
        def exclamations(text):
            return text.count("!")
        def both(text, case, factor=1):
            return {"len": len(text) * factor, "upper": sum(c.isupper() for c in text)}
        def boom(text):
            raise RuntimeError("kaput")
        def nothing(text):
            return None
    """))
    ctx = type("Ctx", (), {"battery_dir": tmp_path})()
    m = PythonMeasure({"function": "my_measures:exclamations", "scale": "count"}, name="ex")
    assert m.scale == "count"
    assert run(m, "¡Hola! ¡Gracias!", ctx=ctx).value == 2
    m2 = PythonMeasure({"function": "my_measures:both", "fields": ["len", "upper"], "args": {"factor": 2}},
                       name="b")
    assert m2.row_names() == ("b.len", "b.upper")
    r = run(m2, "Hola Ana", ctx=ctx)
    assert r.outputs == {"len": 16, "upper": 2}
    r3 = run(PythonMeasure({"function": "my_measures:boom"}, name="x"), "hi", ctx=ctx)
    assert r3.status == "failed" and "kaput" in r3.error
    assert run(PythonMeasure({"function": "my_measures:nothing"}, name="x"), "hi", ctx=ctx).status == "missing"
    with pytest.raises(PluginError, match="module:function"):
        validate_options("fairpair.measures", "python", {"function": "not a ref"})
    sys.modules.pop("my_measures", None)


@pytest.mark.parametrize("pattern, text, expected", [
    (r"^\S+$", "Reembolso", True),           # \S stays "not a space" (casefolded it would be \s)
    (r"^\S+$", "dos palabras", False),
    (r"\Wok\W", " ok.", True),                # \W stays "not a word character"
    (r"pedido \D", "pedido 48213", False),    # \D stays "not a digit"
    (r"pedido \D", "pedido nuevo", True),
    (r"\AREEMBOLSO", "Reembolso tramitado", True),   # \A anchors; the literal is folded like the text
    (r"DEVOLUCIÓN", "la devolucion del importe", True),
    (r"\N{LATIN CAPITAL LETTER E WITH ACUTE}xito", "Éxito total", True),  # a named character is folded
])
def test_regex_escapes_keep_their_meaning_while_literals_are_folded(pattern, text, expected):
    m = RegexMeasure({"pattern": pattern, "scope": "text"}, name="r")
    assert run(m, text).value is expected


@pytest.mark.parametrize("pattern, text", [("(a+)+$", "a" * 5000 + "!"), ("(x+x+)+y", "x" * 3000),
                                           ("(a|aa)+$", "a" * 3000 + "b")])
def test_a_catastrophic_pattern_stops_at_the_time_limit(pattern, text):
    """Issue 28: nested quantifiers on a long answer used to hang the measure stage for minutes;
    the regex package's timeout stops the search and the answer is stored missing, naming the pattern."""
    import time

    from fairpair.measures.rules import PATTERN_SECONDS

    t0 = time.monotonic()
    r = run(RegexMeasure({"any_of": [pattern], "scope": "text"}, name="r"), text)
    assert r.status == "missing" and repr(pattern) in r.error and "nested quantifier" in r.error
    assert time.monotonic() - t0 < 30 * PATTERN_SECONDS  # bounded (CI machines are slow), never minutes


def test_regex_syntax_is_pythons_re():
    m = RegexMeasure({"any_of": [r"reembols\w*", r"devol\w+ (el|su) dinero"]}, name="r")
    assert run(m, "Le devolvemos su dinero hoy.").value is True
    with pytest.raises(ValueError, match="invalid regular expression"):
        RegexMeasure({"any_of": ["(?<name>x)"]}, name="r")  # the regex package's syntax, not re's


def test_an_answer_above_the_cap_is_measured_on_its_beginning():
    from fairpair.measures._base import MAX_MEASURED_CHARS

    text = "Le ofrecemos el reembolso. " + "x" * (MAX_MEASURED_CHARS + 10) + " agente humano"
    item = MeasureItem("t", None, resp(text))
    assert len(item.text) == MAX_MEASURED_CHARS and item.response.text == text  # stored whole
    assert run(KeywordsMeasure({"any_of": ["agente humano"]}, name="h"), text).value is False
    assert run(REFUND_KW, text).value is True
