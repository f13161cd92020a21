"""One text folding (fairpair._text) serves the battery loader, the importer, the masker and the rule
and status measures: a value written two ways is one value everywhere (issue 15, point 6)."""

from __future__ import annotations

import pytest

from fairpair._text import fold, fold_text

SAME = [
    ("O'Brien", "O\u2019Brien"),  # ASCII apostrophe / right single quotation mark
    ("O'Brien", "O\u02bcBrien"),  # modifier letter apostrophe
    ("O'Brien", "o`brien"),
    ("Jean-Luc", "Jean\u2013Luc"),  # en dash
    ("Jean-Luc", "JEAN\u2011LUC"),  # non-breaking hyphen
    ("San Blas", "San  \nBlas"),
    ("Lucía", "Luci\u0301a"),  # NFC / NFD
    ("Lucía", "LUCIA"),
    ("Lucía", "Lu\u200bcía"),  # zero-width space
    ("Straße", "STRASSE"),
    ("Ｌｕｃíａ", "lucia"),  # fullwidth
]


@pytest.mark.parametrize("a,b", SAME)
def test_fold_makes_them_one_value(a, b):
    assert fold(a) == fold(b)


def test_fold_values():
    assert fold("  O\u2019Brien ") == "o'brien"
    assert fold("San\t Blas") == "san blas"
    assert fold("") == ""


def test_fold_text_keeps_line_breaks():
    assert fold_text("Hola O\u2019Brien.\n\nAdiós") == "hola o'brien.\n\nadios"


@pytest.mark.parametrize("a,b", SAME)
def test_the_masker_folds_the_same_way(a, b):
    from fairpair.measures._mask import Masker

    mk = Masker([a])
    assert mk.mask(f"Hola {b}, gracias.") == "Hola [MASK], gracias."


def test_obrien_is_masked_both_ways():
    from fairpair.measures._mask import Masker

    mk = Masker([], names=["O'Brien"])
    assert mk.mask("Mr. O\u2019Brien and O'Brien called.") == "[MASK] and [MASK] called."


def test_the_masker_and_the_loader_share_the_fold():
    from fairpair.battery import _load
    from fairpair.measures import _mask

    assert _load.fold is fold and _mask.fold is fold


def test_rules_compare_folded_values():
    from fairpair.measures.rules import fold_text as rules_fold_text

    assert rules_fold_text is fold_text
