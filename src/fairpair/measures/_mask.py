"""Blinding the judge: mask every signal value in a text before it is judged.

Why
---
The first seed of a paired audit is that the *judge* (a human or an LLM that
scores the chatbot's answers) must not see the attribute under test. If the
answer to "Me llamo Mohamed, ..." still says "Mohamed" when it is scored, the
judge can treat it differently and the audit measures the judge's bias instead
of the chatbot's. So before judging, every value that could reveal a group is
replaced by one marker: all names of all groups, ages ("67"), neighbourhoods
and postal codes, multi-word values ("San Blas") and declared group references
("árabe", "marroquí"). Afterwards :meth:`Masker.leaks` re-scans the masked text
with the same matcher; the judge refuses to score a text whose leak list is not
empty.

Matching rules
--------------
Matching is done on a *folded* form of text and values, so that spelling
variants cannot slip past. The fold is :func:`fairpair._text.fold`, the one
every check of fairpair uses (the battery's "no value in two groups" check
included); the matcher compiles it into its pattern:

* Unicode compatibility normalisation (NFKD): fullwidth ``Ｌｕｃíａ``,
  ligatures (``ﬁ``), superscript digits, math alphanumerics fold to plain
  letters and digits.
* Accents and other combining marks are dropped (``Lucía`` = ``Lucia``), in
  composed (NFC) or decomposed (NFD) form.
* Case is folded with :meth:`str.casefold` (``LUCÍA`` = ``lucía``;
  ``ß`` = ``ss``, a fold that changes length; see below).
* Format characters (Unicode category Cf: zero-width space/joiner/non-joiner,
  word joiner, BOM, soft hyphen, bidi controls, tag characters) and combining
  marks are **stripped before matching**, so ``Lu\\u200bcía`` is still
  ``Lucía``. Stripping is the safer choice: those characters are invisible to
  a reader, so a name split by them is still read as the name.
* All whitespace runs are equal to one space (``San  Blas``, ``San\\nBlas``),
  all dashes (Unicode Pd) to ``-``, and the apostrophes ``' ’ ʼ ‘ ` ´ ′`` to
  ``'``.
* Whole words only: a match may not be preceded or followed by a letter or a
  digit, so ``Ana`` is not masked in ``mañana`` or ``Anabel``, while ``Ana,``,
  ``¡Ana!``, ``_Ana_`` (markdown) and ``Wei's`` (-> ``[MASK]'s``) are.
* Numbers are whole numbers: ``67`` is masked in ``tengo 67 años`` and
  ``67,`` but not inside ``167``, ``1967``, ``67,5`` or ``6.67``.
* Longest match first: with values ``María`` and ``María José``, the text
  ``María José`` becomes one marker.

Group terms (``group_terms``) are words that inflect, so each also matches its
Spanish/English plural and, for terms ending in ``-o``/``-a``, the other
grammatical gender: ``gitano`` matches ``gitana``, ``gitanos``, ``gitanas``;
``marroquí`` matches ``marroquíes`` and ``marroquís``; ``árabe`` matches
``árabes``.

Implementation
--------------
One regular expression is compiled per value set (and cached). Instead of
folding every text, the folding is compiled into the pattern: each folded
letter becomes a character class of every code point that folds to it
(``[aAáÁàâäãåａＡ...]``) and each multi-character fold (``ß`` -> ``ss``) an
extra alternative, arranged as a trie so shared prefixes are tried once. The
pattern starts by consuming the non-alphanumeric character before a value,
so the regex engine skips ahead in C to word starts. Matches are therefore
positions in the original text, and everything outside a match is kept
exactly. Before the regex, a Windows-1252 text (nearly every Spanish or
English answer) is folded by one byte-table translation and split into words;
if no word starts a value, the text is clean and the regex is skipped. On one
core, masking plus leak-checking 100,000 answers of ~80 words against ~60
values takes about 3 s (``benchmarks/bench_mask.py``). Texts that contain
stripped characters (marks, format characters; rare) take a second path: they
are removed while an index map is kept, the same pattern is run, and the spans
are mapped back (a span swallows the marks that follow its last character).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from typing import NamedTuple

from fairpair._text import APOSTROPHES as _APOSTROPHES
from fairpair._text import fold
from fairpair._text import fold_char as _fold_char

__all__ = ["Masker", "mask", "fold", "name_forms", "common_words", "TITLES", "GREETINGS"]

# Code points whose folding is compiled into the pattern: the BMP. Keeping every
# character class inside the BMP lets the regex engine use its fast two-level
# bitmap; a class with an astral range falls back to a linear scan of ranges,
# about 20x slower. Astral code points (math alphanumerics, tag characters,
# emoji) are rare in answers and are folded on the slow path instead.
_BMP = range(0, 0x10000)
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")
# "a"/"an" (any case), followed by spaces up to the value: masked with it when it is a whole
# word (see _article_start: the character before it is no letter, digit, mark or apostrophe).
_ARTICLE = re.compile(r"[Aa][Nn]?[ \t]+\Z")

#: Titles that may precede a name (folded; written with or without the dot).
TITLES: tuple[str, ...] = ("sr", "sra", "srta", "don", "dona", "senor", "senora", "senorita", "mr", "mrs", "ms",
                           "miss", "dr", "dra")
#: Greetings after which a capitalised word is a name ("Hola Rosa", "Hi Will").
GREETINGS: frozenset[str] = frozenset({"hola", "buenas", "estimado", "estimada", "querido", "querida", "hi",
                                       "hello", "hey", "dear", "adios", "gracias", "thanks", "bye", "ok"})
#: Particles of compound names, never masked alone ("María de la O": "de", "la" stay).
_PARTICLES = frozenset({"de", "del", "la", "las", "los", "el", "y", "e", "i", "da", "das", "do", "dos", "di",
                        "van", "von", "der", "den", "le", "al", "bin", "ben", "ibn", "abu", "bint", "st"})
#: The largest masking pattern compiled (characters). A multi-character fold (``ß`` -> ``ss``,
#: ``ﬁ`` -> ``fi``) repeats the rest of its value in the pattern, so a value with many such pairs
#: doubles the pattern at each; real names stay under 100,000 characters.
MAX_PATTERN = 4_000_000
#: A form is a *common word* of a language when it is among its most frequent words.
COMMON_WORD_RANK = 3000


@functools.cache
def common_words(language: str) -> frozenset[str]:
    """The ``COMMON_WORD_RANK`` most frequent words of ``language`` (folded), or {} if unknown.

    Source: the word frequencies shipped with ``pyspellchecker`` (Barrus,
    after Norvig), built from the OpenSubtitles 2018 corpus (Lison &
    Tiedemann 2016, "OpenSubtitles2016: extracting large parallel corpora from
    movie and TV subtitles", LREC) via Hermit Dave's FrequencyWords lists.
    Names that are also frequent words ("Will", "Rosa", "Blanco") are in it;
    most names ("María" is rank 5,348 in Spanish) are not.
    """
    import heapq

    try:
        from spellchecker import SpellChecker
    except ImportError:  # pragma: no cover - a core dependency
        raise ImportError("masking names that are common words needs pyspellchecker: "
                          "pip install pyspellchecker") from None
    try:
        freq = SpellChecker(language=language, distance=1).word_frequency.dictionary
    except ValueError:
        return frozenset()
    top = heapq.nlargest(COMMON_WORD_RANK, freq.items(), key=lambda kv: kv[1])
    return frozenset(_trim(fold(w)) for w, _ in top)


def name_forms(name: str) -> list[str]:
    """The surface forms that identify a person's name ``name``: the full name, each given-name and
    surname part (particles such as ``de``/``la`` and one-letter parts left out), and each of them after
    a title (:data:`TITLES`, with and without the dot); folded. Possessives (``García's``) and
    articles are handled by the matcher."""
    full = _trim(fold(name))
    if not full:
        return []
    parts = [p for p in (_trim(x) for x in re.split(r"[ -]+", full)) if len(p) > 1 and p not in _PARTICLES]
    cores = list(dict.fromkeys([full, *parts]))
    out = list(cores)
    for t in TITLES:
        for c in cores:
            out += [f"{t}. {c}", f"{t} {c}"]
    return list(dict.fromkeys(out))


def _trim(folded: str) -> str:
    """Drop leading/trailing characters that are not letters or digits."""
    m = re.search(r"[^\W_](?:.*[^\W_])?", folded, re.S)
    return m.group() if m else ""


class _Tables(NamedTuple):
    by_fold: dict[str, list[str]]  # folded string -> BMP code points that fold to it
    multi: tuple[str, ...]  # folded strings of length >= 2 that some code point produces
    stripped: str  # character-class body of the BMP code points folding to ''


@functools.cache
def _tables() -> _Tables:
    by_fold: dict[str, list[str]] = {}
    stripped: list[int] = []
    for cp in _BMP:
        c = chr(cp)
        if unicodedata.category(c) == "Cs":  # lone surrogates
            continue
        f = _fold_char(c)
        if f:
            by_fold.setdefault(f, []).append(c)
        else:
            stripped.append(cp)
    multi = tuple(sorted((f for f in by_fold if len(f) > 1), key=len, reverse=True))
    return _Tables(by_fold, multi, _class_body_from_codepoints(stripped))


def _class_body_from_codepoints(cps: list[int]) -> str:
    """Compress sorted code points into a regex character-class body of ranges."""
    parts: list[str] = []
    i = 0
    cps = sorted(cps)
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        lo, hi = cps[i], cps[j]
        parts.append(_esc(chr(lo)) if lo == hi else f"{_esc(chr(lo))}-{_esc(chr(hi))}")
        i = j + 1
    return "".join(parts)


def _esc(c: str) -> str:
    return "\\" + c if c in "\\]^-[" else c


def _char_class(folded: str) -> str:
    """Character class matching every code point whose fold is ``folded``."""
    chars = _tables().by_fold.get(folded, [])
    if len(folded) == 1 and folded not in chars:
        chars = [folded, *chars]
    return "[" + _class_body_from_codepoints([ord(c) for c in chars]) + "]"


def _inflections(term: str) -> list[str]:
    """Folded Spanish/English number and gender variants of a group term."""
    out = [term]
    if term.endswith(("o", "a")) and len(term) > 2:
        stem = term[:-1]
        out += [stem + "o", stem + "a", stem + "os", stem + "as"]
    else:
        out += [term + "s", term + "es"]
    return list(dict.fromkeys(out))


_SENTINEL = b"\x00"


@functools.cache
def _cp1252_table() -> bytes:
    """A 256-byte table folding Windows-1252 text for :meth:`Masker._surely_clean`.

    A byte maps to the Windows-1252 byte of its folded letter or digit, to a
    space if it is a word boundary (not alphanumeric, or ``_``), or to
    ``_SENTINEL`` where a one-byte fold would not agree with the matcher
    (multi-character or empty folds, folds outside Windows-1252).
    """
    table = bytearray(_SENTINEL * 256)
    for b in range(256):
        try:
            c = bytes([b]).decode("cp1252")
        except UnicodeDecodeError:
            continue  # never produced by the encoder
        f = _fold_char(c)
        if c == "_" or (not c.isalnum() and f and not any(x.isalnum() for x in f)):
            table[b] = ord(" ")
        elif c.isalnum() and len(f) == 1 and f.isalnum():
            try:
                table[b] = f.encode("cp1252")[0]
            except UnicodeEncodeError:
                pass
    table[0] = _SENTINEL[0]
    return bytes(table)


def _first_words(folded_values: Iterable[str]) -> Iterable[bytes]:
    """First alphanumeric run of each folded value, in Windows-1252 bytes.

    A value whose first run cannot be encoded can never appear in a text that
    encodes (no Windows-1252 character folds to it), so it is skipped.
    """
    for f in folded_values:
        m = re.match(r"[^\W_]+", f)
        if m is None:  # never: every form is trimmed to a letter or digit (_trim)
            raise ValueError(f"masking form {f!r} does not start with a letter or digit")
        try:
            yield m.group().encode("cp1252")
        except UnicodeEncodeError:
            continue


class _Node(dict):
    """Trie node: folded char -> child; ``end`` is set where a value ends."""

    end: bool = False


class Masker:
    """A compiled, reusable masker for one set of signal values.

    Parameters
    ----------
    values:
        Strings to mask, matched whole-word, accent-, case- and
        compatibility-insensitively (see the module docstring): every name of
        every group, ages (``"67"``), neighbourhoods, postal codes, multi-word
        values (``"San Blas"``). Duplicates and spelling variants of one value
        are fine.
    marker:
        The replacement text, ``"[MASK]"`` by default.
    group_terms:
        Declared group references (``"árabe"``, ``"marroquí"``); matched like
        values and also in their plural and other-gender forms.
    names:
        Person names (variants of a ``name`` signal): each is matched in all
        its surface forms (:func:`name_forms`: ``José García`` also as
        ``José``, ``García``, ``Sr. García``, ``Don José``...).
    language:
        The battery's language (``es``, ``en``). With it, a form that is a
        common word of the language (:func:`common_words`: ``Will``,
        ``Rosa``, ``Blanco``) is masked only where it is used as a name:
        after a title or a greeting (``Hi Will``, ``Hola Rosa``), or
        capitalised and not at the start of a sentence, or capitalised at the
        start and followed by a comma (``Will, we...``); so "We will refund
        you" keeps "will". The English article rule (below) applies only when
        ``language`` is ``en`` or None: in Spanish "a" is a preposition.

    Raises
    ------
    TypeError
        If a value, group term or the marker is not a ``str``.
    ValueError
        If a value or group term is empty or has no letter or digit once folded
        (``""``, ``"  "``, ``"-"``); if the marker is empty; if the marker
        itself contains a value (it would leak, and masking would not be
        idempotent), or shares a word with a value (``"[MASK]"`` with value
        ``"Mask Ana"``).

    Notes
    -----
    The first construction in a process builds the folding tables (about
    0.5 s); patterns are compiled once per instance, and :func:`mask` caches
    instances per value set.
    """

    def __init__(
        self,
        values: Iterable[str],
        *,
        marker: str = "[MASK]",
        group_terms: Iterable[str] = (),
        names: Iterable[str] = (),
        language: str | None = None,
    ) -> None:
        if not isinstance(marker, str):
            raise TypeError(f"marker must be a str, got {type(marker).__name__}")
        if not marker:
            raise ValueError("marker must not be empty")
        if isinstance(values, str) or isinstance(group_terms, str) or isinstance(names, str):
            raise TypeError("values, names and group_terms must be iterables of str, not a single str")
        self.values: tuple[str, ...] = tuple(values)
        self.group_terms: tuple[str, ...] = tuple(group_terms)
        self.names: tuple[str, ...] = tuple(names)
        self.language = language
        self.marker = marker

        # folded form -> the value (as given) it reports in leaks()
        self._lookup: dict[str, str] = {}
        for kind, items in (("value", self.values), ("group term", self.group_terms)):
            for v in items:
                if not isinstance(v, str):
                    raise TypeError(f"{kind} {v!r} is not a str ({type(v).__name__})")
                f = _trim(fold(v))
                if not f:
                    raise ValueError(f"{kind} {v!r} is empty or has no letter or digit")
                forms = _inflections(f) if kind == "group term" else [f]
                for form in forms:
                    self._lookup.setdefault(form, v)
        for v in self.names:
            if not isinstance(v, str):
                raise TypeError(f"name {v!r} is not a str ({type(v).__name__})")
            if not _trim(fold(v)):
                raise ValueError(f"name {v!r} is empty or has no letter or digit")
            for form in name_forms(v):
                self._lookup.setdefault(form, v)
        # forms that are common words of the language: matched by their own pattern, kept in context
        common = common_words(language) if language else frozenset()
        self.ambiguous: tuple[str, ...] = tuple(dict.fromkeys(
            self._lookup[f] for f in self._lookup if f in common))
        self._contextual = {f: v for f, v in self._lookup.items() if f in common}
        always = {f: v for f, v in self._lookup.items() if f not in common}
        self._articles = language in (None, "en")

        self._pattern = self._compile(always)
        self._pattern_ctx = self._compile(self._contextual)
        self._stripped = re.compile(f"[{_tables().stripped}]")
        self._first_words = frozenset(_first_words(self._lookup))
        self._first_words_ctx = frozenset(_first_words(self._contextual))

        if self.leaks(marker):
            raise ValueError(
                f"marker {marker!r} contains the value(s) {self.leaks(marker)}; "
                "choose a marker without any signal value"
            )
        marker_words = set(re.findall(r"[^\W_]+", fold(marker)))
        for f, v in self._lookup.items():
            shared = marker_words & set(re.findall(r"[^\W_]+", f))
            if shared:
                raise ValueError(
                    f"value {v!r} shares the word(s) {sorted(shared)} with marker {marker!r}; "
                    "a masked text could then leak it"
                )

    # -- compilation -------------------------------------------------------

    @staticmethod
    def _compile(lookup: dict[str, str]) -> re.Pattern[str] | None:
        if not lookup:
            return None
        root = _Node()
        for f in lookup:
            node = root
            for ch in f:
                node = node.setdefault(ch, _Node())
            node.end = True
        multi_by_first: dict[str, list[str]] = {}
        for f in _tables().multi:  # one code point folding to several chars, e.g. ß -> ss
            multi_by_first.setdefault(f[0], []).append(f)

        def walk(node: _Node, path: str) -> _Node | None:
            for ch in path:
                child = node.get(ch)
                if child is None:
                    return None
                node = child
            return node

        rendered: dict[int, str] = {}  # id(node) -> its regex; filled children first (no recursion)

        def alternatives(node: _Node, at_start: bool) -> list[str]:
            """Regex alternatives for the edges out of ``node``, longest-first safe.

            The character classes of sibling edges are disjoint (each code
            point has one fold), so their order does not matter. Edges that
            consume a multi-character fold are bundled behind one class of
            all such code points, so ordinary text fails them with one test.
            Every node below ``node`` is already in ``rendered``.
            """
            alts, multis = [], []
            for ch, child in node.items():
                rx = _char_class(ch) + ("+" if ch == " " else "")
                # Numbers do not start after a decimal separator (67 in 6.67).
                # Tested after the class, so other words fail on the class.
                guard = "(?<!\\d[.,].)" if at_start and ch.isdigit() else ""
                alts.append(rx + guard + rendered[id(child)])
                for f in multi_by_first.get(ch, ()):
                    target = walk(node, f)
                    if target is not None:
                        multis.append((_char_class(f), guard + rendered[id(target)]))
            if len(multis) == 1:
                alts.append(multis[0][0] + multis[0][1])
            elif multis:
                union = "".join(cls[1:-1] for cls, _ in multis)
                inner = "|".join(f"(?<={cls}){rest}" for cls, rest in multis)
                alts.append(f"[{union}](?:{inner})")
            return alts

        def render(node: _Node, last: str) -> str:
            alts = alternatives(node, at_start=False)
            if node.end:
                # Right boundary: no letter/digit follows; numbers do not
                # continue with a decimal part (67 in 67,5). Tried last, so
                # the longest value wins.
                end = "(?![^\\W_])"
                if last.isdigit():
                    end += "(?![.,]\\d)"
                alts.append(end)
            if len(alts) == 1:
                return alts[0]
            return "(?:" + "|".join(alts) + ")"

        # Iterative, never recursive: a value of hundreds of characters is a trie as deep, and a
        # recursive walk of it overflowed Python's stack (issue 28). Nodes in preorder, rendered in
        # reverse, so every node's children (and the targets of its multi-character folds, which
        # are below it) are rendered before it.
        order: list[tuple[_Node, str]] = []
        todo: list[tuple[_Node, str]] = [(child, ch) for ch, child in root.items()]
        while todo:
            node, ch = todo.pop()
            order.append((node, ch))
            todo.extend((child, c) for c, child in node.items())
        for node, ch in reversed(order):
            rendered[id(node)] = render(node, ch)
            if len(rendered[id(node)]) > MAX_PATTERN:
                raise ValueError(f"the values to mask compile to a pattern of more than {MAX_PATTERN:,} characters "
                                 "(a value with many letter pairs that one character folds to, such as 'ss', "
                                 "'fi', 'pa'); use shorter values")

        # A value is only ever preceded by a non-alphanumeric character, so the
        # pattern starts by consuming that separator (texts are searched with
        # a space prepended). A leading separator class lets the engine skip
        # ahead in C to word starts only, about 2.5x faster than testing a
        # lookbehind at every letter.
        # The match includes that one separator character.
        return re.compile(f"[\\W_](?:{'|'.join(alternatives(root, at_start=True))})")

    # -- matching ----------------------------------------------------------

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Return the ``(start, end)`` spans of ``text`` that hold a value.

        Spans are non-overlapping, sorted, leftmost-longest, as positions in
        ``text`` itself. Forms that are common words (see ``language``) give
        a span only where they are used as a name.
        """
        spans = self._spans(self._pattern, self._first_words, text)
        if self._pattern_ctx is None:
            return spans
        extra = [sp for sp in self._spans(self._pattern_ctx, self._first_words_ctx, text)
                 if _used_as_name(text, *sp)]
        if not extra:
            return spans
        merged: list[tuple[int, int]] = []
        for sp in sorted(spans + extra, key=lambda x: (x[0], -x[1])):
            if merged and sp[0] < merged[-1][1]:
                if sp[1] > merged[-1][1]:
                    merged[-1] = (merged[-1][0], sp[1])
                continue
            merged.append(sp)
        return merged

    def _spans(self, pattern: re.Pattern[str] | None, first_words: frozenset[bytes],
               text: str) -> list[tuple[int, int]]:
        if pattern is None or self._surely_clean(text, first_words):
            return []
        if self._stripped.search(text) is None and _ASTRAL.search(text) is None:
            return [(m.start(), m.end() - 1) for m in pattern.finditer(" " + text)]
        # Slow path: stripped characters removed and astral ones folded, with
        # an index map from the cleaned text back to ``text``.
        index: list[int] = [-1]  # for the prepended space
        chunks: list[str] = [" "]
        for i, c in enumerate(text):
            f = _fold_char(c) if (c > "\uffff" or self._stripped.match(c)) else c
            chunks.append(f)
            index += [i] * len(f)
        out = []
        for m in pattern.finditer("".join(chunks)):
            start, end = index[m.start() + 1], index[m.end() - 1] + 1
            while end < len(text) and not _fold_char(text[end]):
                end += 1  # swallow the marks / zero-width chars after the match
            out.append((start, end))
        return out

    def _surely_clean(self, text: str, first_words: frozenset[bytes] | None = None) -> bool:
        """Cheap pre-check: True only if ``text`` cannot contain any value.

        For texts in Windows-1252 (Spanish, English and most Western European
        text, curly quotes and dashes included) one C-level byte translation
        folds the text and splits it into words; if none of them is the first
        word of a value, no value can match. Anything the byte table cannot
        fold exactly (``ß``, ``™``, soft hyphens, ...) answers False, and the
        regular expression decides.
        """
        try:
            folded = text.encode("cp1252").translate(_cp1252_table())
        except UnicodeEncodeError:
            return False
        if _SENTINEL in folded:
            return False
        return (self._first_words if first_words is None else first_words).isdisjoint(folded.split())

    def mask(self, text: str) -> str:
        """Return ``text`` with every value replaced by the marker.

        An English indefinite article right before a value ("an old person",
        "a young person") is masked with it, since *a*/*an* tells the value's
        first sound (Tan & Lee 2025 write identities as "an Asian person");
        the rest of the text is preserved exactly. Idempotent:
        ``mask(mask(t)) == mask(t)``.
        """
        spans = self.spans(text)
        if not spans:
            return text
        parts: list[str] = []
        pos = 0
        for start, end in spans:
            art = _ARTICLE.search(text, pos, start) if self._articles else None
            if art is not None and _word_start(text, art.start()):
                start = art.start()
            parts += (text[pos:start], self.marker)
            pos = end
        parts.append(text[pos:])
        return "".join(parts)

    def leaks(self, text: str) -> list[str]:
        """Return the values still present in ``text`` (empty when it is blind).

        Each leaked value is reported once, as given to the constructor (for a
        group term, the term itself), in order of first appearance. Uses the
        same matcher as :meth:`mask`, so ``leaks(mask(t)) == []`` for every
        ``t``; a judge should refuse to score a text with a non-empty result.
        """
        found: dict[str, None] = {}
        for start, end in self.spans(text):
            found[self._lookup[fold(text[start:end])]] = None
        return list(found)

    def __repr__(self) -> str:
        return (
            f"Masker({len(self.values)} values, {len(self.names)} names, {len(self.group_terms)} group terms, "
            f"marker={self.marker!r})"
        )


def _word_start(text: str, i: int) -> bool:
    """True when ``text[i]`` starts a word: the character before it (if any) is no letter, digit,
    combining mark, apostrophe or hyphen (``Mari\u0301a`` ends in a mark: its ``a`` is no article)."""
    if i == 0:
        return True
    c = text[i - 1]
    return not (unicodedata.category(c)[0] in "LMN" or c in _APOSTROPHES or c in "-\u2010\u2011")


_OPENERS = " \t\u00a0\"'«“‘(*_[¡¿-"


def _used_as_name(text: str, start: int, end: int) -> bool:
    """Whether the common word at ``text[start:end]`` is used as a name (see ``Masker(language=)``)."""
    j = start
    while j > 0 and text[j - 1] in _OPENERS:
        j -= 1
    prev = re.search(r"([^\W_]+)\.?\Z", text[max(0, j - 30):j])
    if prev is not None and _trim(fold(prev.group(1))) in (*TITLES, *GREETINGS):
        return True
    first = next((c for c in text[start:end] if unicodedata.category(c)[0] == "L"), "")
    if not first.isupper():
        return False
    before = text[:j].rstrip()
    initial = j == 0 or not before or before[-1] in ".!?…\n:" or text[j - 1] == "\n"
    if not initial:
        return True
    return text[end:end + 1] in (",", "!")


@functools.lru_cache(maxsize=64)
def _cached_masker(values: tuple[str, ...], marker: str, names: tuple[str, ...] = (),
                   group_terms: tuple[str, ...] = (), language: str | None = None) -> Masker:
    return Masker(values, marker=marker, names=names, group_terms=group_terms, language=language)


def mask(text: str, values: Iterable[str] = (), *, marker: str = "[MASK]", names: Iterable[str] = (),
         group_terms: Iterable[str] = (), language: str | None = None) -> str:
    """Replace every occurrence of any of ``values`` (and of ``names``, ``group_terms``) in ``text`` with ``marker``.

    A convenience wrapper around :class:`Masker` (compiled maskers are cached
    per arguments); see the module docstring for the matching rules. A run masks
    a battery's person names as ``names`` and its group words as ``group_terms``, with
    the battery's ``language``: pass the same to mask as a run does (``names``
    masks "Sr. García" for "Pedro García"; ``language`` keeps "We will refund" whole
    for the name "Will").

    Parameters
    ----------
    text:
        The text to blind, e.g. a chatbot answer before it goes to the judge.
    values:
        Signal values masked as written (ages, places, ...).
    marker:
        Replacement, ``"[MASK]"`` by default.
    names:
        Person names: each is masked in all its forms (each given name and surname, after a title).
    group_terms:
        Words that name a group, masked with their plural and other gender ("gitano": "gitanas").
    language:
        ``es`` or ``en``: a name that is also a common word ("Will", "Rosa") is masked only where it
        is used as a name. ``None``: everywhere.

    Returns
    -------
    str
        ``text`` with each value occurrence replaced, the rest unchanged.

    Raises
    ------
    TypeError, ValueError
        As :class:`Masker`.

    Examples
    --------
    >>> mask("Hola, LUCÍA. ¿Lucia vive en San  Blas?", ["Lucía", "San Blas"])
    'Hola, [MASK]. ¿[MASK] vive en [MASK]?'
    """
    for arg, given in (("values", values), ("names", names), ("group_terms", group_terms)):
        if isinstance(given, str):
            raise TypeError(f"{arg} must be an iterable of str, not a single str")
    return _cached_masker(tuple(values), marker, tuple(names), tuple(group_terms), language).mask(text)

