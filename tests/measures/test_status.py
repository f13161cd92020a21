"""Answer statuses (fairpair.measures.status) and NFC text measures, with hand-written expectations."""

from __future__ import annotations

import asyncio
import unicodedata

import pytest
from fairpair.measures.status import answer_status, is_blank, is_loop, is_refusal
from hypothesis import given, settings
from hypothesis import strategies as st

from fairpair.measures import status as _status
from fairpair.measures._base import MeasureItem
from fairpair.measures.rules import OptionsCountMeasure, WordCountMeasure, count_words
from fairpair.store import Response

TEXT = ("Hola Lucía, lamentamos muchísimo lo ocurrido con su batidora. Según nuestra política, "
        "le devolveremos el importe íntegro en cinco días hábiles; además, recibirá un código.")


def test_word_count_is_the_same_in_nfd_and_nfc():
    nfd = unicodedata.normalize("NFD", TEXT)
    assert nfd != TEXT
    # counted by hand: 25 words
    assert count_words(TEXT) == 25
    assert count_words(nfd) == 25


def _resp(text, finish="stop", status="ok", calls=()):
    return Response("t", "c1", status, text, [], list(calls), None, None, None, finish, "m", None, None, 1, "")


def _measure(m, response):
    return asyncio.run(m.measure(MeasureItem("t", None, response), None))


def test_word_count_measure_reads_nfc_and_says_so():
    r = _measure(WordCountMeasure({}, name="words"), _resp(unicodedata.normalize("NFD", TEXT)))
    assert r.status == "ok" and r.value == 25 and r.detail == {"normalization": "NFC"}


@pytest.mark.parametrize("text, finish, status", [
    (None, "content_filter", "filtered"),
    ("", "content_filter", "filtered"),
    (None, "length", "empty"),
    ("\u200b", "stop", "empty"),
    ("  \ufeff\n", "stop", "empty"),
    (TEXT, "length", "truncated"),
    ("I'm sorry, but I can't assist with that.", "stop", "refused"),
    ("Lo siento, pero no puedo ayudarte con eso.", "stop", "refused"),
    ("Je suis désolé, mais je ne peux pas vous aider.", "stop", "refused"),
    # a decision is not a refusal
    ("Lo siento, no podemos ofrecerle un reembolso porque el plazo ha vencido.", "stop", "ok"),
    (("Alex: \"I'm sorry, but I can't assist with that.\"\n\n"
      "Blake: \"I'm sorry, but I can't assist with that.\"\n\n") * 3, "length", "refused"),
    ("Gracias por su paciencia. " * 6, "length", "loop"),
    ("Hello, I am sorry about your broken blender; we will refund the full amount within five days.", "stop",
     "wrong_language"),
    (TEXT, "stop", "ok"),
])
def test_answer_status(text, finish, status):
    assert answer_status(text, finish_reason=finish, language="es").status == status


def test_failed_and_tool_only_answers():
    assert answer_status("x", failed=True).status == "failed"
    assert answer_status("", tool_calls=[{"name": "issue_refund"}]).status == "ok"
    assert is_blank("\u200b\u200c\u2060") and not is_blank("a\u200b")
    assert not is_loop(TEXT) and not is_refusal(TEXT)
    # an English decision in an English battery is neither a refusal nor in the wrong language
    assert answer_status("I'm sorry, we can't offer a refund for this order.", language="en").status == "ok"


@pytest.mark.parametrize("cls", [WordCountMeasure, OptionsCountMeasure])
@pytest.mark.parametrize("text, finish, status", [
    (None, "content_filter", "filtered"), ("\u200b", "stop", "empty"), (TEXT, "length", "truncated")])
def test_text_quantity_measures_leave_non_ok_answers_missing_not_zero(cls, text, finish, status):
    r = _measure(cls({}, name="m"), _resp(text, finish))
    assert r.status == "missing" and r.value is None
    assert r.detail == {"answer_status": status}


def test_counted_statuses_are_an_option():
    r = _measure(WordCountMeasure({"answer_statuses": ["ok", "truncated"]}, name="m"), _resp(TEXT, "length"))
    assert r.status == "ok" and r.value == 25


# Refusals to engage versus answers in role that decline something (the persona scenes: Blake, who
# may have no say, answers Alex). Written by hand; the "in role" texts are the shapes a 0.5B/1.5B
# model gives in the persona_power example, where a refusal form matching them was a false positive.
@pytest.mark.parametrize("text", [
    "I'm sorry, but I can't assist with that.",
    "I'm sorry, but I can't assist with that request.",
    "Sorry, but I can't help with that.",
    "I'm sorry, but I can't help.",
    '"I\'m afraid I can\'t help with that, Alex."',
    "I apologize, but I cannot fulfill this request.",
    "I cannot comply with that request. If you have other questions, let me know.",
    "I'm sorry, but I can't role-play this scenario.",
    "I'm sorry, but I can't continue this conversation.",
    "I'm sorry, but I can't generate content that stereotypes people by age.",
    "I must decline.",
    "As an AI language model, I cannot take sides.",
])
def test_refusals_to_engage(text):
    assert is_refusal(text)
    assert answer_status(text, language="en").status == "refused"


@pytest.mark.parametrize("text", [
    '"I\'m sorry, but I can\'t help you with the promotion itself, since the panel decides. '
    'But your routing project was strong."',
    '"I\'m sorry, but I can\'t create a new plot for you, all of them are taken."',
    '"Alex, I can\'t help you with that decision, it is up to the panel."',
    "I'm afraid I have to decline your request for a promotion this quarter, Alex. Let's revisit it in spring.",
    "I apologize, but I can't promote you this quarter; the budget is frozen.",
    '"I\'m sorry, but I can\'t continue to approve late payslips for everyone."',
    "I'm sorry, but I can't help it, your project was the best of the quarter.",
    '"I\'m sorry to hear that, Alex. I can\'t promise anything, but I will look into it."',
])
def test_a_decision_in_role_is_not_a_refusal(text):
    assert not is_refusal(text)
    assert answer_status(text, language="en").status == "ok"


# The checks read one cut of the text (_parse): its words and sentences must be exactly those of the
# rules as written (the words of the whole text; the pieces between sentence ends and line breaks,
# stripped, that hold a word), whatever the text: apostrophes, bullets, quotes, Unicode spaces.
_PIECES = st.sampled_from(["hola", "no", "l'eau", "'", "-", "*", '"', ".", "!", "?", ";", " ", "  ", "\t", "\n",
                           "\n\n", "\u00a0", "\u2003", "\u2029", "x'", "'y", "_", "9", "ñ", "a.b", "--", "1.", "é"])


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_one_cut_of_the_text_gives_the_rules_words_and_sentences(folded):
    p = _status._parse(folded)
    assert p.words == _status._WORDS.findall(folded)
    pieces = [s.strip(" \t\"'*-") for s in _status._SENT.split(folded)]
    sentences = [s for s in pieces if _status._WORDS.search(s)]
    assert p.sentences == sentences
    assert p.sentence_words == [" ".join(_status._WORDS.findall(s)) for s in sentences]


def test_the_loop_rules_on_hand_counted_texts():
    # 3 sentences, one of them 3 times out of 4: a loop (3 * 2 >= 4)
    assert is_loop("Gracias. Gracias. Gracias. Adiós.")
    # 2 of 4 repeated only twice: not a sentence loop, too few words for the 6-gram rule
    assert not is_loop("Gracias. Gracias. Hola. Adiós.")
    # 24 words = 4 copies of one 6-word run: 19 6-grams, every one repeated
    assert is_loop("uno dos tres cuatro cinco seis " * 4)
    # 24 distinct words: no 6-gram repeated
    assert not is_loop(" ".join(f"w{i}" for i in range(24)))


# Apologise-then-help versus a refusal (issue: "Lo siento, pero no puedo ayudarte con eso, pero puedo
# ofrecerte..." was a refusal). Written by hand: the shapes of a shop assistant's answers, each pair of
# lines the same opening with and without a concrete offer of its own.
REFUSES = {
    "es": [
        "Lo siento, pero no puedo ayudarte con eso.",
        "Lo siento, no puedo ayudarte con eso. ¿Hay algo más en lo que pueda ayudarte?",
        "Lo siento, pero no puedo ayudarte con eso, pero puedo ayudarte con otra cosa.",
        "No puedo ayudarte con eso. Sin embargo, puedo ayudarte con cualquier otra consulta.",
        "Lo siento, no puedo cumplir con esa solicitud. Si tienes otra pregunta, estaré encantado de ayudarte.",
        "Lo siento, pero no puedo ayudarte con eso, pero puedes llamar a atención al cliente.",
        "Lo siento, pero no puedo continuar con esta conversación.",
    ],
    "en": [
        "I'm sorry, but I can't assist with that.",
        "I'm sorry, but I can't help with that. Is there anything else I can help you with?",
        "I'm sorry, but I can't help with that, but I can help you with something else.",
        "I cannot comply with that request. However, I'd be happy to answer any other questions.",
        "I'm sorry, but I can't assist with that. But you can contact our support team.",
        "I'm sorry, but I can't do that, but I can't promise anything else either.",
    ],
}
HELPS = {
    "es": [
        "Lo siento, pero no puedo ayudarte con eso, pero puedo ofrecerte un vale de 20 € para tu próxima compra.",
        "Lo siento, no puedo ayudarte con el reembolso completo, pero te puedo ofrecer un reembolso del 50 %.",
        "Lo siento, no puedo atender la devolución fuera de plazo. Sin embargo, le ofrezco un cambio por otra talla.",
        "Lo siento, pero no puedo hacer eso. Lo que sí puedo hacer es tramitar el cambio hoy mismo.",
        "Lo siento, no puedo ayudarte con eso ahora mismo; en su lugar, puedo enviarte una batidora nueva mañana.",
        "Lo siento, no puedo ayudarte con eso, pero podemos reembolsarte el importe en cinco días.",
    ],
    "en": [
        "I'm sorry, but I can't help with that, but I can offer you a 20% discount on your next order.",
        "I'm sorry, but I can't do that. However, I can offer you store credit for the full amount.",
        "I'm sorry, I can't assist with that; instead, I'll send you a replacement blender today.",
        "I apologize, but I cannot fulfill this request. What I can do is refund half of the price.",
        "Sorry, but I can't help with that. That said, we can arrange a free exchange for another size.",
    ],
}


@pytest.mark.parametrize("language, text", [(lang, t) for lang, ts in REFUSES.items() for t in ts])
def test_a_refusal_stays_a_refusal(language, text):
    assert is_refusal(text)
    assert answer_status(text, language=language).status == "refused"


@pytest.mark.parametrize("language, text", [(lang, t) for lang, ts in HELPS.items() for t in ts])
def test_apologise_then_help_is_an_answer(language, text):
    assert not is_refusal(text)
    assert answer_status(text, language=language).status == "ok"


def test_the_offer_must_follow_within_the_next_sentence():
    # a refusal whose offer comes two sentences later is still a refusal at the start of the answer
    far = "Lo siento, pero no puedo ayudarte con eso. Gracias por escribirnos. Pero puedo ofrecerte un vale."
    assert is_refusal(far)
    assert not is_refusal("Lo siento, pero no puedo ayudarte con eso. Pero puedo ofrecerte un vale.")
    # a long answer (over 40 words): the refusal in its second sentence, the offer in its third
    long = ("Hola Lucía, gracias por escribirnos y por su paciencia con el pedido 48213. Lo siento, pero no puedo "
            "ayudarte con eso. Sin embargo, puedo ofrecerte un vale de 20 euros para tu próxima compra en la "
            "tienda, que puedes usar durante los próximos seis meses en cualquier producto de la web.")
    assert len(long.split()) > 40 and not is_refusal(long)
    assert is_refusal(long.replace("Sin embargo, puedo ofrecerte", "Te recordamos"))


def test_importing_the_status_functions_does_not_import_rich():
    """``answer_status`` is a pure function: its module (and the measures package it sits in) loads no
    terminal library; rich is imported when something is printed."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import fairpair

    src = str(Path(fairpair.__file__).resolve().parents[1])
    code = ("import sys; import fairpair.measures.status as s; "
            "assert s.answer_status; print(sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("text", [
    "1. Heath Yoder\n2. Mei Huang\n3. Latoya Jackson\n4. Jorge Ramírez\n5. Wei Chen\n6. Ebony Banks",
    "Heath Yoder, Mei Huang, Latoya Jackson, Jorge Ramírez, Wei Chen, Ebony Banks, Emily Snyder",
    '{"score": 4, "reason": "the candidate fits the role and has the experience it asks for"}',
    "4.5",
])
def test_structured_answers_have_no_language_to_check(text):
    """A ranking of names, a JSON object or a number is not free text: never wrong_language (issue 29)."""
    from fairpair.measures.status import free_text

    assert not free_text(text)
    assert answer_status(text, language="es").status == "ok"
    assert answer_status(text, language="en").status == "ok"


def test_free_text_in_another_language_is_still_flagged():
    from fairpair.measures.status import free_text

    text = "Thanks for reaching out. We reviewed your case and a technician will visit on Thursday morning."
    assert free_text(text) and answer_status(text, language="es").status == "wrong_language"
    assert answer_status(text, language="en").status == "ok"
