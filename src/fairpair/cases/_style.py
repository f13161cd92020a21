"""Writing-style transforms: the way of writing as a signal (spelling, length, register).

Each transform is deterministic given its seed, so a case's text is
reproducible on any machine. The misspelling rules are the frequent error
types of Spanish learners and hurried typists (accent omission, b/v, ll/y,
silent h, c/z/s before e/i, letter doubling and transposition); see
Real Academia Española, *Ortografía de la lengua española* (2010), ch. I,
for the grapheme pairs that sound alike in Spanish.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Sequence

from fairpair.battery._schema import Transform

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


def _misspell(text: str, rate: float, rng: random.Random, protected: Sequence[str]) -> str:
    keep = {p.casefold() for p in protected}

    def sub(m: re.Match) -> str:
        word = m.group(0)
        if word.casefold() in keep or rng.random() >= rate:
            return word
        return _misspell_word(word, rng)

    return _WORD.sub(sub, text)


def apply_transforms(text: str, transforms: Sequence[Transform], seed: int,
                     protected: Sequence[str] = ()) -> str:
    """Apply ``transforms`` in order to ``text``, deterministically for ``seed``.

    ``protected`` words (the signal values of other attributes, e.g. the
    user's name) are never misspelt, so the writing style does not also change
    another signal.
    """
    rng = random.Random(seed)
    for t in transforms:
        if t.kind == "misspell":
            text = _misspell(text, t.rate, rng, protected)
        elif t.kind == "strip_accents":
            text = strip_accents(text)
        elif t.kind == "lowercase":
            text = text.lower()
        elif t.kind == "strip_punctuation":
            text = re.sub(r"\s{2,}", " ", _PUNCT.sub("", text)).strip()
        elif t.kind == "max_words":
            words = text.split()
            text = " ".join(words[: t.max_words])
        elif t.kind == "replace":
            for a, b in t.pairs.items():
                text = text.replace(a, b)
    return text
