"""Writing-style transforms: the way of writing as a signal (spelling, length, register).

Each transform is deterministic given its seed, so a case's text is
reproducible on any machine. The misspelling rules are the frequent error
types of Spanish learners and hurried typists (accent omission, b/v, ll/y,
silent h, c/z/s before e/i, letter doubling and transposition); see
Real Academia Española, *Ortografía de la lengua española* (2010), ch. I,
for the grapheme pairs that sound alike in Spanish.
"""

from __future__ import annotations

import functools
import random
import re
import unicodedata
from collections.abc import Callable, Sequence

from fairpair.battery import Transform

__all__ = ["apply_transforms", "strip_accents"]

_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
_PUNCT = re.compile(r"[¡!¿?.,;:…\"«»()]")


def strip_accents(text: str) -> str:
    """Remove combining accents (keeps ñ, which is a letter of its own in Spanish)."""
    out = []
    for ch in text:
        if ch in "ñÑ":
            out.append(ch)
            continue
        decomposed = unicodedata.normalize("NFD", ch)
        out.append("".join(c for c in decomposed if not unicodedata.combining(c)))
    return unicodedata.normalize("NFC", "".join(out))


def _misspell_word(word: str, rng: random.Random) -> str:
    w = word
    lower = w.lower()
    options: list = []
    if strip_accents(w) != w:
        options.append(lambda s: strip_accents(s))
    if "v" in lower:
        options.append(lambda s: s.replace("v", "b", 1))
    elif "b" in lower:
        options.append(lambda s: s.replace("b", "v", 1))
    if "ll" in lower:
        options.append(lambda s: s.replace("ll", "y", 1))
    if lower.startswith("h"):
        options.append(lambda s: s[1:])
    if re.search(r"c[ei]", lower):
        options.append(lambda s: re.sub(r"c(?=[eiéí])", "z", s, count=1))
    if re.search(r"(.)\1", lower):
        options.append(lambda s: re.sub(r"(.)\1", r"\1", s, count=1))
    if len(w) > 3:
        def _swap(s: str) -> str:
            i = rng.randrange(1, len(s) - 2)
            return s[:i] + s[i + 1] + s[i] + s[i + 2:]
        options.append(_swap)
    return rng.choice(options)(w) if options else w


def _misspell(text: str, rate: float, rng: random.Random) -> str:
    def sub(m: re.Match) -> str:
        word = m.group(0)
        if rng.random() >= rate:
            return word
        return _misspell_word(word, rng)

    return _WORD.sub(sub, text)


def _outside(text: str, protected: Sequence[str], fn: Callable[[str], str]) -> str:
    """Apply ``fn`` to the parts of ``text`` that are not a protected value (whole words only)."""
    values = sorted({p for p in protected if p and p.strip()}, key=len, reverse=True)
    if not values:
        return fn(text)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(v) for v in values) + r")(?!\w)")
    out: list[str] = []
    last = 0
    for m in pattern.finditer(text):
        out.append(fn(text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(fn(text[last:]))
    return "".join(out)


def apply_transforms(text: str, transforms: Sequence[Transform], seed: int,
                     protected: Sequence[str] = ()) -> str:
    """Apply ``transforms`` in order to ``text``, deterministically for ``seed``.

    ``protected`` values (every value filled into a slot: the user's name,
    age, postal code) are left exactly as they are by ``misspell``,
    ``strip_accents``, ``lowercase`` and ``replace``, so the writing style does
    not also change another signal. The text around them is transformed the
    same way whatever the protected value is (same random draws), so two
    cases that differ only in a name get the same misspellings.
    """
    rng = random.Random(seed)
    for t in transforms:
        if t.kind == "misspell":
            text = _outside(text, protected, functools.partial(_misspell, rate=t.rate, rng=rng))
        elif t.kind == "strip_accents":
            text = _outside(text, protected, strip_accents)
        elif t.kind == "lowercase":
            text = _outside(text, protected, str.lower)
        elif t.kind == "strip_punctuation":
            text = re.sub(r"\s{2,}", " ", _PUNCT.sub("", text)).strip()
        elif t.kind == "max_words":
            words = text.split()
            text = " ".join(words[: t.max_words])
        elif t.kind == "replace":
            text = _outside(text, protected, _word_replacer({**t.pairs, **t.phrases}))
    return text


def _keep_case(found: str, repl: str) -> str:
    """``repl`` written in the case of ``found``: ``SHE`` -> ``HE``, ``She`` -> ``He``, ``she`` -> as given."""
    letters = [c for c in found if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return repl.upper()
    if letters and found.lstrip()[:1].isupper() and not any(c.isupper() for c in found[1:]):
        return repl[:1].upper() + repl[1:]
    return repl


def _word_replacer(pairs: dict[str, str]) -> Callable[[str], str]:
    """One pass over the text: each key matched as whole words (Unicode), any case, longest first."""
    if not pairs:
        return lambda s: s
    table = {" ".join(k.split()).casefold(): v for k, v in pairs.items()}
    alts = sorted(table, key=len, reverse=True)
    # whitespace inside a phrase matches any run of whitespace
    body = "|".join(r"\s+".join(re.escape(w) for w in k.split(" ")) for k in alts)
    pattern = re.compile(r"(?<!\w)(?:" + body + r")(?!\w)", re.IGNORECASE)

    def sub(m: re.Match) -> str:
        found = m.group(0)
        return _keep_case(found, table[" ".join(found.split()).casefold()])

    return lambda s: pattern.sub(sub, s)
