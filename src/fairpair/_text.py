"""One text folding for every comparison of values and texts in fairpair.

The battery loader's "no value in two groups" check, the importer's owner
check, the masker (its compiled pattern implements the same fold, see
:mod:`fairpair.measures._mask`), and the rule and status measures all compare
text through :func:`fold` (values, keys) or :func:`fold_text` (whole answers,
where line breaks matter), so ``O'Brien`` and ``O’Brien``, ``Lucía`` and
``LUCIA``, ``San  Blas`` and ``San Blas`` are one value everywhere.

The fold, per code point:

* Unicode compatibility normalisation (NFKD; UAX #15): fullwidth ``Ｌｕｃíａ``,
  ligatures (``ﬁ``), superscript digits fold to plain letters and digits.
* Combining marks (Mn, Me) and format characters (Cf: zero-width space and
  joiners, soft hyphen, BOM, bidi controls) are dropped, so accents do not count
  and invisible characters cannot split a value.
* Case is folded with :meth:`str.casefold` (Unicode full case folding,
  ``ß`` -> ``ss``: the length may change).
* Every dash (category Pd) becomes ``-``; the apostrophes and quote marks
  ``' ’ ʼ ‘ ` ´ ′`` become ``'``.
* Whitespace: :func:`fold` turns every run into one space and strips both
  ends; :func:`fold_text` keeps each whitespace character as it is.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["fold", "fold_text", "fold_char", "APOSTROPHES", "STRIPPED_CATEGORIES"]

#: Unicode categories removed by the fold: nonspacing and enclosing marks, format characters.
STRIPPED_CATEGORIES = frozenset({"Mn", "Me", "Cf"})
#: Characters read as an apostrophe (folded to ``'``).
APOSTROPHES = "'\u2019\u02bc\u2018`\u00b4\u2032"


def fold_char(c: str) -> str:
    """Fold one code point (see the module docstring); may return ``''`` or 2+ characters."""
    cat = unicodedata.category(c)
    if cat in STRIPPED_CATEGORIES:
        return ""
    if c.isspace():
        return " "
    if cat == "Pd":
        return "-"
    if c in APOSTROPHES:
        return "'"
    out = []
    # A non-space character never folds to a space (NFKD of "¨" is " \u0308").
    for d in unicodedata.normalize("NFKD", c).replace(" ", ""):
        if unicodedata.category(d) in STRIPPED_CATEGORIES:
            continue
        for e in unicodedata.normalize("NFKD", d.casefold()):
            if unicodedata.category(e) not in STRIPPED_CATEGORIES:
                out.append(e)
    return "".join(out)


class _Table(dict):
    """``str.translate`` table that folds each code point once and remembers it."""

    def __init__(self, keep_space: bool) -> None:
        super().__init__()
        self._keep_space = keep_space

    def __missing__(self, cp: int) -> str:
        c = chr(cp)
        f = c if self._keep_space and c.isspace() else fold_char(c)
        self[cp] = f
        return f


_KEY_TABLE = _Table(keep_space=False)
_TEXT_TABLE = _Table(keep_space=True)
_SPACES = re.compile(r" {2,}")


def fold(text: str) -> str:
    """The comparison key of a value: ``text`` folded, whitespace runs as one space, both ends stripped.

    ``fold("O’Brien") == fold("o'brien") == "o'brien"``; ``fold(" San\\nBlas ") == "san blas"``.
    Raises nothing; ``fold("") == ""``.
    """
    return _SPACES.sub(" ", text.translate(_KEY_TABLE)).strip()


def fold_text(text: str) -> str:
    """``text`` folded character by character, whitespace kept (so line and sentence breaks stay).

    The form rule measures match their (equally folded) patterns and keywords against.
    """
    return text.translate(_TEXT_TABLE)
