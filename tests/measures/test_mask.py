"""Tests for fairpair.measures._mask: blinding the judge."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import fairpair
from fairpair.measures._mask import Masker, _fold_char, fold, mask

VALUES = ["Lucía", "Ana", "María", "María José", "67", "San Blas", "Wei", "Strauss",
          "Ionuț", "Fátima", "28037"]


@pytest.fixture(scope="module")
def m() -> Masker:
    return Masker(VALUES, group_terms=["árabe", "marroquí", "gitano"])


# -- folding ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, folded",
    [
        ("Lucía", "lucia"),
        ("LUCÍA", "lucia"),
        ("Luci\u0301a", "lucia"),  # NFD
        ("Ｌｕｃíａ", "lucia"),  # fullwidth
        ("Strauß", "strauss"),
        ("ﬁn", "fin"),
        ("San \u00a0\n Blas", "san blas"),
        ("Lu\u200bcía", "lucia"),  # zero-width space stripped
        ("O’Brien", "o'brien"),
        ("Jean‑Pierre", "jean-pierre"),  # non-breaking hyphen
    ],
)
def test_fold(text, folded):
    assert fold(text) == folded


# -- the matching rules ---------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        # accents, case, normalisation forms
        ("Hola Lucía.", "Hola [MASK]."),
        ("Hola Lucia, LUCÍA y lucía", "Hola [MASK], [MASK] y [MASK]"),
        ("Hola Luci\u0301a!", "Hola [MASK]!"),
        (unicodedata.normalize("NFD", "Hola Lucía, María José"), "Hola [MASK], [MASK]"),
        ("Hola Ｌｕｃíａ", "Hola [MASK]"),
        ("ＡＮＡ llamó", "[MASK] llamó"),
        # whole words only
        ("mañana vendrá Anabel", "mañana vendrá Anabel"),
        ("Ana, ¡Ana! (Ana) «Ana» ana.", "[MASK], ¡[MASK]! ([MASK]) «[MASK]» [MASK]."),
        ("_Ana_ y **Ana**", "_[MASK]_ y **[MASK]**"),
        ("Susana, Anabel, Ana-Belén", "Susana, Anabel, [MASK]-Belén"),
        # numbers
        ("tengo 67 años", "tengo [MASK] años"),
        ("nací en 1967, mido 167 y peso 67,5 kg", "nací en 1967, mido 167 y peso 67,5 kg"),
        ("6.67 y 1,67 pero 67, 67. y (67)", "6.67 y 1,67 pero [MASK], [MASK]. y ([MASK])"),
        ("CP 28037; CP 280370", "CP [MASK]; CP 280370"),
        # multi-word and overlapping values: longest first
        ("vive en San Blas", "vive en [MASK]"),
        ("vive en San  Blas\ny en San\nBlas", "vive en [MASK]\ny en [MASK]"),
        ("María José y María", "[MASK] y [MASK]"),
        ("María Josefa", "[MASK] Josefa"),
        # possessives, apostrophe variants
        ("Wei's order", "[MASK]'s order"),
        ("Wei’s order", "[MASK]’s order"),
        # length-changing fold
        ("Herr Strauß kam", "Herr [MASK] kam"),
        # non-Latin script in a value
        ("Ionuț și IONUȚ", "[MASK] și [MASK]"),
        # group terms with inflections
        ("los árabes y las marroquíes", "los [MASK] y las [MASK]"),
        ("una familia gitana", "una familia [MASK]"),
        # nothing to mask
        ("Gracias por su consulta.", "Gracias por su consulta."),
        ("", ""),
    ],
)
def test_mask_rules(m, text, expected):
    assert m.mask(text) == expected
    assert m.leaks(m.mask(text)) == []


def test_zero_width_characters_are_stripped_before_matching(m):
    # A name split by an invisible character is still read as the name.
    assert m.mask("Hola Lu\u200bcía.") == "Hola [MASK]."
    assert m.mask("Hola A\u200dn\u2060a.") == "Hola [MASK]."
    assert m.leaks("Hola Lu\u200ccía.") == ["Lucía"]
    # Marks and zero-width characters right after the name go with it.
    assert m.mask("Ana\u200b, hola") == "[MASK], hola"
    # An invisible joiner glued to a word does not create a boundary.
    assert m.mask("x\u200dAna") == "x\u200dAna"
    assert m.mask(unicodedata.normalize("NFD", "mañana")) == unicodedata.normalize("NFD", "mañana")


def test_astral_compatibility_letters(m):
    # Mathematical bold letters (outside the BMP) fold to plain letters.
    assert m.mask("Hola 𝐋𝐮𝐜𝐢𝐚.") == "Hola [MASK]."
    # Tag characters (ASCII smuggling) are stripped.
    assert m.mask("Hola Lu\U000E0041cía.") == "Hola [MASK]."


def test_rest_of_text_preserved_exactly(m):
    text = "¡Hola,\tLucía!  ¿Qué tal, Strauß? — «María José» vive en San Blas (28037). ß"
    assert m.mask(text) == "¡Hola,\t[MASK]!  ¿Qué tal, [MASK]? — «[MASK]» vive en [MASK] ([MASK]). ß"
    assert m.spans("a Ana b") == [(2, 5)]
    assert m.spans("Ana") == [(0, 3)]


def test_custom_marker():
    assert mask("Hola Ana", ["Ana"], marker="<nombre>") == "Hola <nombre>"
    assert mask("Hola Ana", ["Ana"], marker="█") == "Hola █"


def test_mask_function_and_lazy_package_export():
    assert fairpair.mask("Hola LUCÍA y Ana", ["Lucía", "Ana"]) == "Hola [MASK] y [MASK]"
    assert mask("sin valores", []) == "sin valores"


# -- leak check -------------------------------------------------------------------


def test_leaks_reports_each_value_once_in_order(m):
    text = "Ana dijo a LUCIA que Ana y la familia árabe viven en San Blas"
    assert m.leaks(text) == ["Ana", "Lucía", "árabe", "San Blas"]
    assert m.leaks(m.mask(text)) == []


def test_leak_check_catches_a_planted_leak(m):
    masked = m.mask("Hola Lucía, su pedido está en camino.")
    assert m.leaks(masked) == []
    planted = masked.replace("camino", "camino, Fatima")  # unmasked, accent dropped
    assert m.leaks(planted) == ["Fátima"]
    assert m.leaks(masked + " Ｗｅｉ") == ["Wei"]


def test_idempotent(m):
    text = "María José, Ana y Ana's 67 amigos de San Blas"
    once = m.mask(text)
    assert once == "[MASK], [MASK] y [MASK]'s [MASK] amigos de [MASK]"
    assert m.mask(once) == once


# -- errors -------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "   ", "-", "\u200b"])
def test_empty_value_raises(bad):
    with pytest.raises(ValueError, match="no letter or digit"):
        Masker(["Ana", bad])


def test_marker_containing_a_value_raises():
    with pytest.raises(ValueError, match="contains the value"):
        Masker(["Ana"], marker="<ANA>")
    with pytest.raises(ValueError, match="shares the word"):
        Masker(["Mask Ana"])


def test_type_errors():
    with pytest.raises(TypeError):
        Masker("Ana")  # a single string, not a list of values
    with pytest.raises(TypeError):
        Masker(["Ana", 67])
    with pytest.raises(ValueError):
        Masker(["Ana"], marker="")


# -- properties ---------------------------------------------------------------------


def _fullwidth(s: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


def _strip_accents(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", s) if not unicodedata.combining(c))


_variants = st.sampled_from(VALUES).flatmap(
    lambda v: st.sampled_from(
        [v, v.upper(), v.lower(), _strip_accents(v), unicodedata.normalize("NFD", v), _fullwidth(v)]
    )
)
_filler = st.sampled_from(
    ["mañana", "Anabel", "1967", "167", "6.67", "67,5", "Susana", "hola", "pedido", "San",
     "Blas", "José", "Josefa", "ß", "Straus", "ﬁn", "Ｘ", "٦٧"]
)
_seps = st.sampled_from([" ", "  ", ", ", "¡", "!", "'s ", "\n", "_", "-", ".", ",", "(", ")",
                         "\u200b", "\u0301", "’", "\u00a0", ""])
_texts = st.lists(st.one_of(_variants, _filler, _seps, st.text(max_size=3)), max_size=25).map("".join)


def _reference_spans(text: str, masker: Masker) -> list[tuple[int, int]]:
    """Slow oracle: fold char by char with an index map, then one plain regex."""
    chars, index = [], []
    for i, c in enumerate(text):
        f = _fold_char(c)
        chars.append(f)
        index += [i] * len(f)
    folded = "".join(chars)
    alts = []
    for v in sorted(masker._lookup, key=len, reverse=True):
        rx = re.escape(v).replace("\\ ", " ").replace(" ", " +")
        if v[0].isdigit():
            rx = r"(?<!\d[.,])" + rx
        if v[-1].isdigit():
            rx += r"(?![.,]\d)"
        alts.append(rx)
    pattern = re.compile(r"(?<![^\W_])(?:" + "|".join(alts) + r")(?![^\W_])")
    out = []
    for mt in pattern.finditer(folded):
        start, end = index[mt.start()], index[mt.end() - 1] + 1
        while end < len(text) and not _fold_char(text[end]):
            end += 1
        out.append((start, end))
    return out


# Characters whose "is a letter or digit" changes under folding (e.g. "™" ->
# "tm") make the two definitions of a word boundary differ; keep them out.
def _boundary_consistent(text: str) -> bool:
    return all(
        c.isalnum() == any(x.isalnum() for x in _fold_char(c)) or not _fold_char(c)
        for c in text
    )


# Past failures, kept as explicit examples (each once failed on some seed).
_PAST_FAILURES = [
    "Hola Mari\u0301a Lucía",  # a decomposed accent before a value: the article rule ate "a "
    "Mari\u0301a Ana",
    "a\u0301 Ana",
    "x\u200dAna y ana\u0301",
]


def _with_past_failures(fn):
    for t in _PAST_FAILURES:
        fn = example(text=t)(fn)
    return fn


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(text=_texts)
@_with_past_failures
def test_property_masked_text_never_leaks(m, text):
    masked = m.mask(text)
    assert m.leaks(masked) == []
    assert m.mask(masked) == masked


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(text=_texts)
@_with_past_failures
def test_property_matches_slow_reference(m, text):
    if _boundary_consistent(text):
        assert m.spans(text) == _reference_spans(text, m)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(text=_texts)
@_with_past_failures
def test_property_outside_spans_unchanged(m, text):
    spans = m.spans(text)
    masked = m.mask(text)
    pieces, pos = [], 0
    for start, end in spans:
        assert start >= pos and end > start
        pieces.append(text[pos:start])
        pos = end
    pieces.append(text[pos:])
    assert masked.split("[MASK]") == pieces


# -- the cases of issue 13: masked text written by hand ----------------------------------------


def test_decomposed_accent_before_a_value_keeps_the_text_before_it():
    assert fairpair.mask("Hola Mari\u0301a Lucía", ["Lucía"]) == "Hola Mari\u0301a [MASK]"
    assert mask("Mari\u0301a Ana", ["Ana"]) == "Mari\u0301a [MASK]"
    # a real English article is still masked with the value
    assert mask("I am an Asian person", ["Asian person"]) == "I am [MASK]"


@pytest.fixture(scope="module")
def es_names() -> Masker:
    return Masker([], names=["José García", "Rosa Blanco", "Lucía"], language="es")


@pytest.mark.parametrize("text, expected", [
    ("Sr. García, su pedido llegó.", "[MASK], su pedido llegó."),
    ("Estimado Sr. García:", "Estimado [MASK]:"),
    ("Don José García y García, y José.", "[MASK] y [MASK], y [MASK]."),
    ("Hablé con el Sr García y con doña Lucía.", "Hablé con el [MASK] y con [MASK]."),
    ("GARCÍA y garcia", "[MASK] y [MASK]"),
    # the Spanish preposition "a" is no article
    ("Le escribo a Lucía y a José.", "Le escribo a [MASK] y a [MASK]."),
    # Rosa and Blanco are common Spanish words: masked only where used as a name
    ("Le enviamos una rosa blanca y el modelo blanco.", "Le enviamos una rosa blanca y el modelo blanco."),
    ("Hola Rosa, ayer Blanco llamó; la Sra. Blanco también.", "Hola [MASK], ayer [MASK] llamó; la [MASK] también."),
    ("Rosa Blanco ya tiene su reembolso.", "[MASK] ya tiene su reembolso."),
    ("Rosa, gracias por escribir.", "[MASK], gracias por escribir."),
    ("Rosa es el color del envoltorio.", "Rosa es el color del envoltorio."),
])
def test_name_surface_forms_spanish(es_names, text, expected):
    assert es_names.mask(text) == expected
    assert es_names.leaks(expected) == []


def test_name_parts_leak_check_uses_the_same_forms(es_names):
    # the leak check of the judge used to report 0 leaks for these
    assert es_names.leaks("Gracias, Sr. García.") == ["José García"]
    assert es_names.leaks("Gracias, José.") == ["José García"]
    assert es_names.leaks("Hola Rosa") == ["Rosa Blanco"]
    assert es_names.leaks("una rosa blanca") == []
    assert es_names.ambiguous == ("Rosa Blanco",)


@pytest.fixture(scope="module")
def en_names() -> Masker:
    return Masker([], names=["Will Smith", "Mary Jones"], language="en")


@pytest.mark.parametrize("text, expected", [
    ("We will refund you.", "We will refund you."),
    ("Hi Will, we will refund you.", "Hi [MASK], we will refund you."),
    ("Thank you, Will. We will call.", "Thank you, [MASK]. We will call."),
    ("Will you accept a voucher?", "Will you accept a voucher?"),
    ("Will, we will refund you.", "[MASK], we will refund you."),
    ("Dear Mr. Smith and Mrs. Jones, Mary's order and Smith's.",
     "Dear [MASK] and [MASK], [MASK]'s order and [MASK]'s."),
    ("Dr. Will Smith", "[MASK]"),
])
def test_name_surface_forms_english(en_names, text, expected):
    assert en_names.mask(text) == expected


def test_outside_spans_nothing_changes_with_names(es_names):
    text = "¡Hola,\tSra.  Blanco! Su  rosa\u00a0blanca llegó a Mari\u0301a; José García (y José) esperan."
    spans = es_names.spans(text)
    masked = es_names.mask(text)
    pieces, pos = [], 0
    for start, end in spans:
        pieces.append(text[pos:start])
        pos = end
    pieces.append(text[pos:])
    assert masked.split("[MASK]") == pieces
    assert masked == "¡Hola,\t[MASK]! Su  rosa\u00a0blanca llegó a Mari\u0301a; [MASK] (y [MASK]) esperan."


def test_common_words_come_from_the_language_frequency_list():
    from fairpair.measures._mask import common_words

    assert {"will", "may", "hope"} <= common_words("en")
    assert {"rosa", "blanco", "a"} <= common_words("es")
    assert "maria" not in common_words("es") and "lucia" not in common_words("es")


def test_validate_warns_about_variants_that_are_common_words(tmp_path):
    import yaml
    from typer.testing import CliRunner

    from fairpair.cli import app

    b = {"schema_version": 1, "name": "amb", "language": "es",
         "attributes": {"origen": {"signal": "name", "slot": "nombre", "neutral": "un cliente", "groups": {
             "espana": {"variants": ["Rosa", "Lucía"]}, "magreb": {"variants": ["Fátima", "Aicha"]}}}},
         "templates": [{"id": "t", "turns": ["Hola, soy {nombre}."]}],
         "designs": [{"kind": "counterfactual", "attribute": "origen"}], "target": {"kind": "mock"}}
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(b, allow_unicode=True), encoding="utf-8")
    out = CliRunner().invoke(app, ["validate", str(path)])
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "warning: variant(s) Rosa are (or contain) common words of 'es'" in text
    b["attributes"]["origen"]["groups"]["espana"]["variants"] = ["María", "Lucía"]
    path.write_text(yaml.safe_dump(b, allow_unicode=True), encoding="utf-8")
    assert "warning" not in CliRunner().invoke(app, ["validate", str(path)]).output


def test_public_mask_masks_as_a_run_does():
    """Issue 28: ``fairpair.mask`` takes the run's names / group terms / language, so it neither
    over-masks a common word ("We will refund") nor misses a name's part after a title."""
    import fairpair

    text = "We will refund you, Sr. García. Will, thanks."
    assert fairpair.mask(text, names=["Will", "Pedro García"], language="en") == \
        "We will refund you, [MASK]. [MASK], thanks."
    assert fairpair.mask("los gitanos y las gitanas", group_terms=["gitano"]) == "los [MASK] y las [MASK]"
    with pytest.raises(TypeError):
        fairpair.mask(text, names="Will")


def test_a_long_value_is_masked_without_recursion():
    """Issue 28: a 600-character value used to raise RecursionError (the trie was rendered recursively)."""
    import fairpair
    from fairpair.measures._mask import MAX_PATTERN, Masker

    assert fairpair.mask("x " + "A" * 600 + " y", ["A" * 600]) == "x [MASK] y"
    assert fairpair.mask("x " + "A" * 5000, ["A" * 5000]) == "x [MASK]"
    # a value whose letter pairs each fold from one character (pa: U+33A9) doubles the pattern at each
    with pytest.raises(ValueError, match=f"more than {MAX_PATTERN:,} characters"):
        Masker([" ".join(f"pal{i}" for i in range(40))])
