r"""Untrusted text made inert: for HTML, Markdown, the terminal and spreadsheets.

Every answer in a report was written by the model under test, and every label
by whoever wrote the battery; neither is trusted. This module is the one place
that decides what such a string may contain when it leaves fairpair.

* :func:`clean` -- the common first step for every output: ANSI/VT escape
  sequences (CSI, OSC, DCS and two-byte ``ESC x``; ECMA-48, 5th ed., section
  5.3-5.6) removed whole, C0/C1 control characters except tab and newline
  removed (NUL included), lone surrogates replaced by U+FFFD, bidirectional
  embedding/override/isolate controls (U+202A-U+202E, U+2066-U+2069: the
  "Trojan Source" characters, Boucher & Anderson 2021) removed, CR LF and
  lone CR turned into LF.
* :func:`md_inline` / :func:`md_block` -- Markdown that cannot form links,
  images, HTML, headings or tables: inline text has ``& < >`` turned into
  entities and every ASCII punctuation character CommonMark may treat as
  inline syntax (`` \ ` * _ [ ] | # ! ~ ``) backslash-escaped (CommonMark
  0.31, section 2.4: "any ASCII punctuation character may be
  backslash-escaped"), and a leading list marker (``-``, ``+``, ``1.``)
  too; block text goes into a
  fenced code block whose fence is longer than any backtick run inside it
  (section 4.5), where nothing is interpreted.
* :func:`terminal` -- for one terminal table cell: :func:`fairpair._text.visible`
  (controls and escape sequences shown as visible ``\\x1b`` escapes) with tabs and
  newlines flattened.
* :func:`code_spans` -- fairpair's own texts (reasons, verdicts, hints) quote a
  command, a setting or a scenario as a Markdown code span (`` `fairpair
  analyze RUN` ``); each output says it in its own way, never with literal
  backticks: :func:`md_inline` keeps it a code span, :func:`html_prose` makes
  it ``<code>`` and :func:`terminal_text` prints it bold without the
  backticks. Text shown as written (answers, prompts) is never read for spans.
* :func:`csv_cell` -- OWASP "CSV Injection" advice: a string cell whose first
  character is ``=``, ``+``, ``-``, ``@``, tab or carriage return is prefixed
  with a single quote so a spreadsheet shows it as text instead of running it
  as a formula (https://owasp.org/www-community/attacks/CSV_Injection).

HTML escaping itself is left to jinja2's autoescape (``markupsafe``), applied
after :func:`clean`.
"""

from __future__ import annotations

import re
from typing import Any

from fairpair._text import as_text, visible

__all__ = ["clean", "md_inline", "md_block", "terminal", "terminal_text", "csv_cell", "MdSafe", "code_spans",
           "html_prose"]

# ECMA-48 CSI: ESC [ params intermediates final; OSC/DCS/SOS/PM/APC: ESC ] ... BEL or ST;
# then any other two-byte escape; the 8-bit C1 forms (0x9b CSI, 0x9d OSC) likewise.
_ANSI = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")
# Characters that can open inline syntax anywhere (emphasis, code, links, images, tables,
# strikethrough, headings after a list marker, raw HTML and entities).
_MD_PUNCT = re.compile(r"([\\`*_\[\]|#!~])")
# A code span of fairpair's own texts: one backtick each side, on one line, no backtick or "|" inside
# (a "|" would end a Markdown table cell even inside a span, so such a span is left as plain text).
_CODE_SPAN = re.compile(r"`([^`|\n]+)`")


class MdSafe(str):
    """A string that is already Markdown (built by fairpair itself); not escaped again."""


def clean(text: Any) -> str:
    """Return ``text`` as a ``str`` without escape sequences, controls or lone surrogates.

    ``None`` becomes ``""``; bytes are decoded as UTF-8 with invalid sequences
    replaced (U+FFFD); anything else goes through ``str()``. Tabs and newlines
    are kept; CR LF and CR become LF.
    """
    text = _SURROGATES.sub("\ufffd", as_text(text))
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _ANSI.sub("", text)
    return _CONTROLS.sub("", text)


def terminal(text: Any, *, limit: int | None = None) -> str:
    """Text for one terminal cell: :func:`fairpair._text.visible` (controls and escapes shown as
    visible ``\\x1b`` escapes, the one terminal sanitiser) flattened to one line (tabs and newlines
    become spaces), cut at ``limit``."""
    out = re.sub(r"\s+", " ", visible(text)).strip()
    if limit is not None and len(out) > limit:
        out = out[: max(0, limit - 1)] + "…"
    return out


def code_spans(text: str) -> list[tuple[str, bool]]:
    """``text`` cut into ``(piece, is_code)`` pieces, in order: a code span is `` `x` `` on one line with
    no backtick or ``|`` inside (its piece is ``x``, without the backticks); an unpaired backtick stays in
    plain text. Their concatenation, with the spans' backticks put back, is ``text``."""
    out: list[tuple[str, bool]] = []
    at = 0
    for m in _CODE_SPAN.finditer(text):
        if m.start() > at:
            out.append((text[at:m.start()], False))
        out.append((m.group(1), True))
        at = m.end()
    if at < len(text) or not out:
        out.append((text[at:], False))
    return out


def html_prose(text: Any) -> Any:
    """``text`` (cleaned) as escaped HTML with its code spans (:func:`code_spans`) as ``<code>``: a
    :class:`markupsafe.Markup`, so jinja2's autoescape does not escape it again."""
    from markupsafe import Markup, escape

    return Markup("").join(Markup("<code>{}</code>").format(p) if code else escape(p)
                           for p, code in code_spans(clean(text)))


def terminal_text(text: Any, *, style: str = "", limit: int | None = None) -> Any:
    """A :class:`rich.text.Text` of :func:`terminal` text (``limit`` as there) in ``style``, its code
    spans (:func:`code_spans`) bold and without their backticks. A ``Text`` is never read as markup."""
    from rich.text import Text

    out = Text(style=style)
    for piece, code in code_spans(terminal(text, limit=limit)):
        out.append(piece, style="bold" if code else "")
    return out


def md_inline(text: Any, *, code: bool = True) -> MdSafe:
    """Escape ``text`` for a Markdown paragraph or table cell (one line, inert); its code spans
    (:func:`code_spans`) stay code spans, where CommonMark reads nothing (0.31, section 6.1), unless
    ``code=False`` (text shown as written: every backtick escaped)."""
    if isinstance(text, MdSafe):
        return text
    s = re.sub(r"\s+", " ", clean(text)).strip()
    pieces = code_spans(s) if code else [(s, False)]
    s = "".join(f"`{p}`" if is_code else _md_escape(p) for p, is_code in pieces)
    # (a span at the start begins with "`", which none of the rules below matches)
    # Block syntax only matters at the start: "- x", "+ x", "---", "1. x", "1) x" and "> x" would open a list, a
    # rule or a quote; "0.04" or "-3" would not, and stay as they are (CommonMark 0.31, 4.1, 5.1, 5.2).
    s = re.sub(r"^([-+])(?=\s|$|-)", r"\\\1", s)
    s = re.sub(r"^(\d{1,9})([.)])(?=\s|$)", r"\1\\\2", s)
    s = re.sub(r"^>", r"\\>", s)
    return MdSafe(s)


def _md_escape(s: str) -> str:
    """Plain text (outside a code span) with every character that can open inline syntax escaped."""
    s = _MD_PUNCT.sub(r"\\\1", s)
    # Only what could open a tag, an autolink or a comment ("<b", "</", "<!", "<?") or read as an entity
    # ("&amp;", "&#1;") is escaped, after the backslashes: "&lt;" is shown as "<" and can never open a tag, and
    # "p < 0.001" or "A & B" stay readable (CommonMark 0.31, 6.5, 6.6, 2.5).
    s = re.sub(r"&(?=#?[0-9A-Za-z]+;)", "&amp;", s)
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", s)


def md_block(text: Any, info: str = "text") -> MdSafe:
    """Put ``text`` in a fenced code block that nothing inside it can close."""
    s = clean(text)
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * max(3, longest + 1)
    return MdSafe(f"{fence}{info}\n{s}\n{fence}")


def csv_cell(value: Any) -> Any:
    """A value safe for a CSV cell: strings cleaned and formula triggers quoted.

    Non-strings (numbers, booleans, ``None``) are returned unchanged, so a
    negative number stays a number. A string starting with ``= + - @``, tab
    or CR, or with one of ``= + - @`` after leading spaces, gets a leading
    ``'``.
    """
    if not isinstance(value, (str, bytes, bytearray)):
        return value
    raw = value if isinstance(value, str) else bytes(value).decode("utf-8", errors="replace")
    if raw[:1] in ("\t", "\r", "\n"):
        return "'" + clean(raw)
    s = clean(raw)
    if s[:1] in ("=", "+", "-", "@") or s.lstrip(" ")[:1] in ("=", "+", "-", "@"):
        return "'" + s
    return s
