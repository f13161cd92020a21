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

__all__ = ["fold", "fold_text", "fold_char", "APOSTROPHES", "STRIPPED_CATEGORIES", "visible", "one_line", "as_text",
           "counted"]

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


# ---------------------------------------------------------------- the terminal sanitiser

# C0 controls but tab and newline, DEL, C1 controls (0x9b is an 8-bit CSI), the bidirectional
# embedding/override/isolate controls ("Trojan Source", Boucher & Anderson 2021), the line and
# paragraph separators, and lone surrogates (not encodable; some terminals show garbage).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    if c == "\r":
        return "\\r"
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def visible(text: object) -> str:
    """``text`` as a terminal may print it: every control or escape character shown as a visible
    escape, so nothing from a target or an answer can move the cursor, clear the screen, set the
    window title or reorder the line.

    ESC (``\\x1b``) and the other C0 controls except tab and newline, DEL, the C1 controls
    (``\\x9b``, an 8-bit CSI, included), CR (``\\r``), the bidirectional controls U+202A-U+202E
    and U+2066-U+2069, U+2028/U+2029 and lone surrogates become ``\\xNN`` / ``\\uNNNN`` text;
    everything else is kept. ``None`` is ``""``; bytes are decoded as UTF-8 with invalid sequences
    replaced; anything else goes through ``str()``. This is the one sanitiser of text printed to a
    terminal (the HTML and Markdown reports remove such characters instead:
    :func:`fairpair.report._text.clean`).
    """
    return _UNSAFE.sub(_escape, as_text(text))


def as_text(text: object) -> str:
    """``text`` as a ``str``: ``None`` is ``""``, bytes are decoded as UTF-8 with invalid sequences
    replaced (U+FFFD), anything else goes through ``str()``."""
    if text is None:
        return ""
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("utf-8", errors="replace")
    return text if isinstance(text, str) else str(text)


def one_line(text: object, limit: int | None = None) -> str:
    """:func:`visible` text on one line (runs of whitespace, newlines included, become one space),
    cut at ``limit`` characters with ``...``."""
    out = " ".join(visible(text).split())
    if limit is not None and len(out) > limit:
        out = out[: max(0, limit - 3)] + "..."
    return out


def counted(n: int, one: str, many: str) -> str:
    """``n`` with its noun in the number it takes: ``counted(1, "par", "pares")`` is ``"1 par"``,
    ``counted(3, "par", "pares")`` ``"3 pares"`` (never "1 pares")."""
    return f"{n} {one if n == 1 else many}"
