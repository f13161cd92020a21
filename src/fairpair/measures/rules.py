"""Rule-based measures: decisions, length, options and tool calls, without a model.

The first two ways a chatbot can treat users differently (the first seed: *the
decision* and *the quality*) are read off the answer with rules: does it offer
a refund, how many words, how many concrete options, did it call the
``issue_refund`` tool. Rules are transparent and free; their limits are
documented below so that a battery author knows when to use ``llm_extract``
instead.

Kinds and battery syntax
------------------------
``regex``  (binary)::

    refund: {kind: regex, any_of: ['reembols\\w*', 'devol\\w+ (el|su) dinero'],
             none_of: ['\\bno\\b.{0,30}reembols']}

``keywords``  (binary)::

    refund: {kind: keywords, any_of: [reembolso, devolución del importe, refund],
             none_of: [sin reembolso], negation: true}

``word_count``  (count)::

    length: {kind: word_count}

``n_options``  (count)::

    options: {kind: n_options}

``tool_call``  (binary)::

    refund_tool: {kind: tool_call, name: issue_refund, arguments: {reason: damaged}}

``categories``  (categorical: k outcomes)::

    decision: {kind: categories, categories: {approve: ['aprobad\\w*'], deny: ['deneg\\w*', 'rechaz\\w*'],
                                              refer: ['deriv\\w*', 'especialista']}, otherwise: other}

``tool_argument``  (categorical: the value of a tool call's argument)::

    decision: {kind: tool_argument, name: decide_application, argument: outcome,
               categories: [approve, deny, refer]}

``python``  (any scale)::

    politeness: {kind: python, function: "my_measures:politeness", scale: continuous}

Matching (``regex`` and ``keywords``)
-------------------------------------
Text and patterns are *folded* first: compatibility-normalised (NFKD),
accents dropped, case-folded; so ``Reembolso``, ``REEMBOLSO`` and
``reembolsó`` all match ``reembolso``. Matching is done per sentence (split at
``. ! ? ;`` and line breaks; ``scope: text`` matches the whole answer): a
sentence counts when it matches one ``any_of`` entry and no ``none_of``
entry (alias ``exclude``). The value is ``True`` when at least one sentence
counts.

Patterns run with a time limit (``regex`` and ``categories``): they are compiled by the ``regex``
package (Python ``re`` syntax, its ``VERSION0`` mode) and every search of one answer shares
:data:`PATTERN_SECONDS` seconds; a pattern that backtracks catastrophically on an answer
(``(a+)+$`` on a long run of ``a``) stops there and the answer is stored ``missing`` with the
pattern named, instead of hanging the measure stage.

Negation (``keywords`` with ``negation: true``, the default) follows the NegEx
idea (Chapman et al. 2001, "A simple algorithm for identifying negated
findings and diseases in discharge summaries", J Biomed Inform 34:301-310):
a keyword is negated when a negation cue (``no``, ``nunca``, ``sin``,
``tampoco``, ``imposible``; ``not``, ``never``, ``cannot``, ``unable``,
``n't``, ``without``...) occurs within the six words before it in the same
clause (clauses end at ``, : ;`` and at ``pero``, ``sino``, ``but``,
``however``), or when the clause continues with a post-negation phrase
(``no es posible``, ``no está disponible``, ``not possible``, ``not
available``). So "no podemos ofrecer un reembolso" and "a refund is not
possible" do not count, while "No se preocupe, le ofrecemos un reembolso"
does.

Known limits: double negation ("no podemos negarle el reembolso") reads as
negated; negation carried across clauses or sentences ("¿Reembolso? Me temo
que no.") is missed; conditional or hypothetical offers ("si el producto
estuviera roto, le reembolsaríamos") count as offers; irony is invisible.
For decisions where these matter, use ``llm_extract`` and calibrate it.
"""

from __future__ import annotations

import inspect
import re
import time
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import regex
from pydantic import Field, field_validator, model_validator

from fairpair._text import fold, fold_text
from fairpair.errors import FairpairError
from fairpair.measures._base import Measure, MeasureItem, MeasureOptions, MeasureResult, Scale

__all__ = [
    "RegexMeasure", "KeywordsMeasure", "WordCountMeasure", "OptionsCountMeasure", "ToolCallMeasure",
    "PythonMeasure", "CategoriesMeasure", "ToolArgumentMeasure", "fold_text", "sentences", "count_words",
    "count_options", "keyword_hits",
]


# ---------------------------------------------------------------- text helpers


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])\s+|\n+")


def sentences(text: str) -> list[str]:
    """Split ``text`` into sentences at ``. ! ? ;`` followed by space, and at line breaks."""
    return [s for s in (p.strip() for p in _SENTENCE_SPLIT.split(text)) if s]


_WORD = re.compile(r"[^\W_]+(?:['\u2019\-][^\W_]+)*")


def count_words(text: str) -> int:
    """Number of words: runs of letters/digits, joined by inner apostrophes or hyphens.

    Counted on the NFC form of ``text`` (a decomposed accent would otherwise
    split a word in two: ``Luci\u0301a`` is one word). Markdown symbols,
    bullets and punctuation are not words; ``don't``, ``e-mail`` and
    ``48213`` are one word each.
    """
    return len(_WORD.findall(unicodedata.normalize("NFC", text)))


# Negation cues (folded). Spanish: RAE, Nueva gramática, ch. 48 (negation);
# English: the NegEx trigger list (Chapman et al. 2001), reduced to general ones.
_NEG_CUES = {
    "es": {"no", "ni", "nunca", "jamas", "sin", "tampoco", "imposible", "ningun", "ninguna", "ninguno",
           "nada", "negar", "denegar", "denegado", "denegada", "rechazar", "rechazado", "rechazada"},
    "en": {"no", "not", "never", "cannot", "can't", "won't", "don't", "doesn't", "isn't", "aren't",
           "wasn't", "unable", "without", "nor", "neither", "deny", "denied", "decline", "declined",
           "unfortunately-not", "couldn't", "wouldn't", "shouldn't", "didn't", "impossible", "none"},
}
_POST_NEG = re.compile(
    r"\b(?:no (?:es|sera|seria|esta|resulta) (?:posible|disponible|viable)|no procede|no corresponde|"
    r"no se puede|no podemos|no esta disponible|not (?:be )?(?:possible|available|eligible|an option)|"
    r"is not|isn't|cannot be|can't be|won't be)\b")
_CLAUSE_BREAK = re.compile(r"[,:;()\u2014\u2013]|\b(?:pero|sino|aunque|but|however|although|though)\b")
_WINDOW = 6


def keyword_hits(sentence: str, keyword: str, *, negation: bool = True) -> list[dict[str, Any]]:
    """Occurrences of ``keyword`` (already folded) in a folded ``sentence``, with their negation status.

    Returns a list of ``{"at": index, "negated": bool, "cue": str | None}``.
    """
    out = []
    for m in re.finditer(rf"(?<![^\W_]){re.escape(keyword)}(?![^\W_])", sentence):
        negated, cue = False, None
        if negation:
            before = _CLAUSE_BREAK.split(sentence[: m.start()])[-1]
            words = _WORD.findall(before)[-_WINDOW:]
            for w in reversed(words):
                if w in _NEG_CUES["es"] or w in _NEG_CUES["en"] or w.endswith("n't"):
                    negated, cue = True, w
                    break
            if not negated:
                after = _CLAUSE_BREAK.split(sentence[m.end():])[0]
                pm = _POST_NEG.search(after)
                if pm:
                    negated, cue = True, pm.group(0)
        out.append({"at": m.start(), "negated": negated, "cue": cue})
    return out


# ---------------------------------------------------------------- decision measures


class _DecisionOptions(MeasureOptions):
    any_of: list[str] = Field(default_factory=list)
    none_of: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    scope: Literal["sentence", "text"] = "sentence"

    @model_validator(mode="after")
    def _need_any(self):
        if not self.any_of and not getattr(self, "pattern", None):
            raise ValueError("needs 'any_of' (a list of patterns or keywords)")
        return self

    def excluded(self) -> list[str]:
        return [*self.none_of, *self.exclude]


class RegexOptions(_DecisionOptions):
    """``any_of``: regular expressions (Python ``re`` syntax), one of which must match;
    ``pattern``: a single one (added to ``any_of``); ``none_of``/``exclude``: patterns that
    veto a sentence; ``scope``: ``sentence`` (default) or ``text``. Patterns are folded
    like the text (accents dropped, lower case), so write them without accents or with."""

    pattern: str | None = None

    @field_validator("any_of", "none_of", "exclude")
    @classmethod
    def _compiles(cls, v: list[str]) -> list[str]:
        for p in v:
            _compile_folded(p)
        return v

    @field_validator("pattern")
    @classmethod
    def _compiles_one(cls, v: str | None) -> str | None:
        if v is not None:
            _compile_folded(v)
        return v


_ESCAPE = re.compile(r"\\(?:N\{[^}]*\}|.)", re.DOTALL)


def fold_pattern(pattern: str) -> str:
    """A regular expression folded like the text it is matched against (:func:`fairpair._text.fold_text`),
    its escapes kept as written: ``\\S``, ``\\W``, ``\\D``, ``\\B``, ``\\A``, ``\\Z`` and ``\\N{...}`` mean
    what they say (folding ``\\S`` would make it ``\\s``, the opposite class), ``É`` matches ``é`` and ``e``."""
    out, at = [], 0
    for m in _ESCAPE.finditer(pattern):
        out.append(fold_text(pattern[at:m.start()]))
        esc = m.group(0)
        if esc.startswith("\\N{"):  # a named character: folded like any other literal
            try:
                esc = re.escape(fold_text(unicodedata.lookup(esc[3:-1])))
            except KeyError:
                pass  # re.compile reports the unknown name
        out.append(esc)
        at = m.end()
    out.append(fold_text(pattern[at:]))
    return "".join(out)


#: The time all the pattern searches of one answer may take, in seconds (a well-formed pattern takes
#: microseconds per sentence; catastrophic backtracking takes minutes).
PATTERN_SECONDS = 1.0


@lru_cache(maxsize=1024)
def _compile_folded(pattern: str) -> regex.Pattern[str]:
    try:
        re.compile(fold_pattern(pattern))  # the syntax users write is Python's re
        return regex.compile(fold_pattern(pattern), flags=regex.VERSION0)
    except (re.error, regex.error) as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None


class _PatternTimeout(Exception):
    def __init__(self, pattern: str):
        super().__init__(pattern)
        self.pattern = pattern


class _Deadline:
    """The pattern searches of one answer, sharing :data:`PATTERN_SECONDS`."""

    def __init__(self, seconds: float = PATTERN_SECONDS):
        self.end = time.monotonic() + seconds

    def search(self, pattern: str, text: str) -> bool:
        left = self.end - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return _compile_folded(pattern).search(text, timeout=left) is not None
        except TimeoutError:
            raise _PatternTimeout(pattern) from None

    def first(self, patterns: list[str], text: str) -> str | None:
        return next((p for p in patterns if self.search(p, text)), None)


def _timed_out(exc: _PatternTimeout) -> MeasureResult:
    return MeasureResult.missing(f"pattern {exc.pattern!r} ran past {PATTERN_SECONDS:g} s on this answer "
                                 "(catastrophic backtracking, e.g. a nested quantifier such as (a+)+): rewrite "
                                 "it without nested repetition")


def _units(text: str, scope: str) -> list[str]:
    folded = fold_text(text)
    return [folded] if scope == "text" else sentences(folded)


class RegexMeasure(Measure):
    """Yes/no: does a sentence of the answer match a pattern (and no excluding pattern)?

    Value: ``bool``. ``detail``: the first counting sentence (folded) and the
    pattern that matched, or the sentences vetoed by ``none_of``.
    """

    Options = RegexOptions
    scale = "binary"

    async def measure(self, item: MeasureItem, ctx=None) -> MeasureResult:
        o = self.options
        pats = [*o.any_of, *([o.pattern] if o.pattern else [])]
        vetoed = []
        clock = _Deadline()
        try:
            for unit in _units(item.text, o.scope):
                hit = clock.first(pats, unit)
                if hit is None:
                    continue
                veto = clock.first(o.excluded(), unit)
                if veto is None:
                    return MeasureResult.ok(True, detail={"sentence": unit[:300], "pattern": hit})
                vetoed.append({"sentence": unit[:300], "excluded_by": veto})
        except _PatternTimeout as exc:
            return _timed_out(exc)
        return MeasureResult.ok(False, detail={"vetoed": vetoed} if vetoed else None)


class KeywordsOptions(_DecisionOptions):
    """``any_of``: words or phrases (literal, whole-word); ``none_of``/``exclude``: phrases that
    veto a sentence; ``negation``: skip keywords negated in their clause (see the module
    docstring); ``scope``: ``sentence`` or ``text``."""

    negation: bool = True

    @field_validator("any_of", "none_of", "exclude")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        if any(not k.strip() for k in v):
            raise ValueError("empty keyword")
        return v


class KeywordsMeasure(Measure):
    """Yes/no: does the answer use one of the keywords, not negated and not excluded?

    Value: ``bool``. ``detail``: the keyword and sentence that counted, and the
    occurrences skipped as negated (with their cue) or excluded.
    """

    Options = KeywordsOptions
    scale = "binary"

    async def measure(self, item: MeasureItem, ctx=None) -> MeasureResult:
        o = self.options
        kws = [fold_text(k).strip() for k in o.any_of]
        excl = [fold_text(k).strip() for k in o.excluded()]
        skipped = []
        for unit in _units(item.text, o.scope):
            veto = next((k for k in excl if keyword_hits(unit, k, negation=False)), None)
            for k in kws:
                for h in keyword_hits(unit, k, negation=o.negation):
                    if veto is not None:
                        skipped.append({"keyword": k, "sentence": unit[:300], "excluded_by": veto})
                    elif h["negated"]:
                        skipped.append({"keyword": k, "sentence": unit[:300], "negated_by": h["cue"]})
                    else:
                        return MeasureResult.ok(True, detail={"keyword": k, "sentence": unit[:300]})
        return MeasureResult.ok(False, detail={"skipped": skipped} if skipped else None)


# ---------------------------------------------------------------- quality measures


_CountedStatus = Literal["ok", "truncated", "refused", "loop", "out_of_role", "wrong_language", "empty", "filtered"]


def _only_ok() -> list[_CountedStatus]:
    return ["ok"]


class _QuantityOptions(MeasureOptions):
    """``answer_statuses``: the answer statuses counted (default ``[ok]``); the others are stored
    as ``missing`` with their status, never as 0 (see :mod:`fairpair.measures.status`)."""

    answer_statuses: list[_CountedStatus] = Field(default_factory=_only_ok, min_length=1)


def _excluded(item: MeasureItem, ctx, allowed: list[str]) -> MeasureResult | None:
    """``missing`` for an answer whose status is not among ``allowed``; None to measure it."""
    st = item.status(getattr(ctx, "language", None), getattr(ctx, "speakers", None))
    if st.status in allowed:
        return None
    return MeasureResult.missing(f"answer status '{st.status}' ({st.reason}): not counted",
                                 detail={"answer_status": st.status})


class WordCountOptions(_QuantityOptions):
    """``answer_statuses``: which answers are counted (default only ``ok`` ones)."""


class WordCountMeasure(Measure):
    """Number of words of the answer's NFC text (see :func:`count_words`). Value: ``int`` >= 0.

    Answers whose status (:mod:`fairpair.measures.status`) is not in
    ``answer_statuses`` (default ``[ok]``) are ``missing``, not 0 words.
    ``detail``: ``{"normalization": "NFC"}``.
    """

    Options = WordCountOptions
    scale = "count"

    async def measure(self, item: MeasureItem, ctx=None) -> MeasureResult:
        skip = _excluded(item, ctx, self.options.answer_statuses)
        if skip is not None:
            return skip
        return MeasureResult.ok(count_words(item.text), detail={"normalization": "NFC"})


_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+\u2022\u00b7\u2023\u25e6\u25aa\u2013]|\d{1,2}[.)]|[a-zA-Z][.)]"
                        r"|\(\d{1,2}\)|\([a-z]\))[ \t]+\S", re.M)
# Phrases that open an enumeration of alternatives in running text (folded).
_ALT_TRIGGERS = re.compile(
    r"\b(?:(?:puede|puedes|podra|podria|podemos|pueden) (?:elegir|escoger|optar|seleccionar)(?: entre| por)?|"
    r"(?:elegir|escoger|optar) entre|(?:tiene|tienes|hay|ofrecemos|le ofrecemos|te ofrecemos) "
    r"(?:varias |dos |tres |estas )?(?:opciones|alternativas|posibilidades)(?: como| entre)?|"
    r"(?:las |sus |tus )?(?:opciones|alternativas) (?:son|serian|disponibles son)|o bien|"
    r"(?:you )?(?:can|could|may) (?:choose|pick|select|opt) (?:between|from|for)?|choose (?:between|from)|"
    r"(?:your |the )?(?:options|alternatives|choices) (?:are|include|would be)|"
    r"(?:we|i) (?:can )?offer (?:you )?(?:either )?|either)\b[: ]*")
_ALT_SPLIT = re.compile(r"\s*(?:,|;|\bo bien\b|\bo\b|\bu\b|\by\b|\be\b|\bor\b|\band\b|\band/or\b)\s*")


def count_options(text: str) -> dict[str, int]:
    """Concrete options offered: list items plus alternatives enumerated in running text.

    Returns ``{"list_items": n1, "inline": n2, "total": n1 + n2}``.

    * List items: lines starting with a bullet (``- * + •``) or an enumerator
      (``1.``, ``2)``, ``a)``, ``(b)``).
    * Inline: after a trigger phrase ("puede elegir entre", "sus opciones son",
      "o bien", "you can choose between", "either", "options are"), the rest
      of the sentence split at commas and the conjunctions ``o/u/y/e`` and
      ``or/and``; counted when it gives two or more non-empty items (e.g.
      "puede elegir entre un vale, un cambio o el reembolso" -> 3).

    Limits: numbered *steps* ("1. Entre en su cuenta") are counted as options;
    an enumeration without a trigger phrase is not counted; an item that
    itself contains "y"/"and" ("recogida y entrega") is counted as two.
    """
    list_items = len(_LIST_ITEM.findall(text))
    inline = 0
    for sent in sentences(fold_text(text)):
        m = _ALT_TRIGGERS.search(sent)
        if not m:
            continue
        rest = re.split(r"[.!?]", sent[m.end():])[0]
        if not rest.strip():
            continue  # "sus opciones son:" followed by a list
        parts = [p for p in _ALT_SPLIT.split(rest) if _WORD.search(p or "")]
        if len(parts) >= 2:
            inline += len(parts)
    return {"list_items": list_items, "inline": inline, "total": list_items + inline}


class OptionsCountOptions(_QuantityOptions):
    """``lists``: count bulleted/numbered items; ``inline``: count enumerations in running text;
    ``answer_statuses``: which answers are counted (default only ``ok`` ones)."""

    lists: bool = True
    inline: bool = True


class OptionsCountMeasure(Measure):
    """Number of concrete options offered (see :func:`count_options`). Value: ``int`` >= 0."""

    Options = OptionsCountOptions
    scale = "count"

    async def measure(self, item: MeasureItem, ctx=None) -> MeasureResult:
        skip = _excluded(item, ctx, self.options.answer_statuses)
        if skip is not None:
            return skip
        c = count_options(item.text)
        value = (c["list_items"] if self.options.lists else 0) + (c["inline"] if self.options.inline else 0)
        return MeasureResult.ok(value, detail=c)


# ---------------------------------------------------------------- tool calls


class ToolCallOptions(MeasureOptions):
    """``name``: the tool (function) name; ``arguments``: optional values the call's arguments
    must have (a subset match; strings compared case- and accent-insensitively)."""

    name: str
    arguments: dict[str, Any] | None = None


def _arg_matches(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _arg_matches(v, got[k]) for k, v in want.items())
    if isinstance(want, str) and isinstance(got, str):
        return fold(want) == fold(got)
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    return want == got


class ToolCallMeasure(Measure):
    """Yes/no: did the target call tool ``name`` (with ``arguments``, if given) in its stored answer?

    Reads the tool calls the run stored with the answer. Value: ``bool``;
    ``detail``: the names of all calls made.
    """

    Options = ToolCallOptions
    scale = "binary"

    async def measure(self, item: MeasureItem, ctx=None) -> MeasureResult:
        o = self.options
        calls = item.response.tool_calls or []
        hit = any(c.get("name") == o.name and (o.arguments is None or _arg_matches(o.arguments, c.get("arguments")))
                  for c in calls)
        return MeasureResult.ok(hit, detail={"calls": [c.get("name") for c in calls]})


# ---------------------------------------------------------------- k-outcome decisions


class CategoriesOptions(MeasureOptions):
    """``categories``: outcome -> regular expressions (folded like ``regex``), tried in the order
    given, the first outcome with a matching sentence wins; ``otherwise``: the outcome when none
    matches (one of ``categories`` or a new one; default: the value is missing); ``scope``:
    ``sentence`` or ``text``."""

    categories: dict[str, list[str]] = Field(min_length=2)
    otherwise: str | None = None
    scope: Literal["sentence", "text"] = "sentence"

    @field_validator("categories")
    @classmethod
    def _patterns(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for name, pats in v.items():
            if not pats:
                raise ValueError(f"category '{name}' has no pattern")
            for p in pats:
                _compile_folded(p)
        return v


class _CategoricalMeasure(Measure):
    """A measure whose value is one of ``options.categories`` (or ``options.otherwise``)."""

    scale = "categorical"

    def categories(self, ctx=None) -> dict[str, tuple[str, ...]]:
        """``{measure name: outcomes in declared order}``, ``otherwise`` last when it is not a category."""
        cats = list(self.options.categories)
        if self.options.otherwise and self.options.otherwise not in cats:
            cats.append(self.options.otherwise)
        return {self.name: tuple(cats)}


class CategoriesMeasure(_CategoricalMeasure):
    """A k-outcome decision read with rules: the first category (in declared order) one of whose
    patterns matches a sentence of the answer. Value: the category name (``str``); ``detail``: the
    matching sentence and pattern. Analysed as ``categorical`` (Stuart-Maxwell, Bowker, and each
    outcome as a yes/no measure)."""

    Options = CategoriesOptions
    scale = "categorical"


    async def measure(self, item: MeasureItem, ctx=None) -> MeasureResult:
        o = self.options
        units = _units(item.text, o.scope)
        clock = _Deadline()
        for cat, pats in o.categories.items():
            for unit in units:
                try:
                    hit = clock.first(pats, unit)
                except _PatternTimeout as exc:
                    return _timed_out(exc)
                if hit is not None:
                    return MeasureResult.ok(cat, detail={"sentence": unit[:300], "pattern": hit})
        if o.otherwise is not None:
            return MeasureResult.ok(o.otherwise)
        return MeasureResult.missing("no category matched")


class ToolArgumentOptions(MeasureOptions):
    """``name``: the tool; ``argument``: the argument whose value is the outcome (``a.b`` for a nested
    one); ``categories``: the allowed values (compared case- and accent-insensitively); ``otherwise``:
    the outcome when the tool is not called (default: missing)."""

    name: str
    argument: str
    categories: list[str] = Field(min_length=2)
    otherwise: str | None = None


class ToolArgumentMeasure(_CategoricalMeasure):
    """A k-outcome decision read off a tool call: the value of ``argument`` in the first call of
    tool ``name``. Value: the matching category (``str``); a value outside ``categories`` is
    ``missing`` with the value kept in ``detail``."""

    Options = ToolArgumentOptions
    scale = "categorical"


    async def measure(self, item: MeasureItem, ctx=None) -> MeasureResult:
        o = self.options
        call = next((c for c in item.response.tool_calls or [] if c.get("name") == o.name), None)
        if call is None:
            if o.otherwise is not None:
                return MeasureResult.ok(o.otherwise, detail={"calls": []})
            return MeasureResult.missing(f"tool '{o.name}' was not called")
        got: Any = call.get("arguments")
        for part in o.argument.split("."):
            got = got.get(part) if isinstance(got, dict) else None
        if isinstance(got, str):
            for cat in o.categories:
                if fold(cat) == fold(got):
                    return MeasureResult.ok(cat, detail={"argument": got})
        return MeasureResult.missing(f"argument '{o.argument}' of '{o.name}' is {got!r}, not one of {o.categories}",
                                     detail={"argument": got})


# ---------------------------------------------------------------- user functions


class PythonOptions(MeasureOptions):
    """``function``: ``"module:function"`` (the battery's folder is importable); ``scale``: how to
    analyse its values; ``fields``: the output names when it returns a dict (stored as
    ``<measure>.<field>``); ``args``: extra keyword arguments passed to it."""

    function: str
    scale: Scale = "continuous"
    fields: list[str] | None = None
    args: dict[str, Any] = Field(default_factory=dict)

    @field_validator("function")
    @classmethod
    def _ref(cls, v: str) -> str:
        from fairpair._plugins import check_reference

        try:
            return check_reference(v)
        except ValueError as exc:
            raise ValueError(f"'function' {exc}") from None


class PythonMeasure(Measure):
    """A user's own ``module:function``.

    The function receives the parameters it names among ``text`` (the
    answer), ``case`` (:class:`~fairpair.cases.Case`), ``response``
    (:class:`~fairpair.run.Response`), ``tool_calls`` and the ``args``
    options; it may be ``async``. It returns a value (bool, int, float, str),
    ``None`` (stored as missing), a dict (with ``fields``) or a
    :class:`MeasureResult`. An exception is stored as a failed measurement.
    """

    Options = PythonOptions

    def __init__(self, options, *, name: str) -> None:
        super().__init__(options, name=name)
        self._fn = None

    @property
    def scale(self) -> Scale:  # type: ignore[override]
        return self.options.scale

    def outputs(self, ctx=None) -> tuple[str, ...] | None:
        return tuple(self.options.fields) if self.options.fields else None

    def load(self, base_dir: Path | None = None):
        if self._fn is not None:
            return self._fn
        from fairpair._plugins import ReferenceProblem, load_reference

        try:
            fn = load_reference(self.options.function, path=base_dir)
        except ReferenceProblem as exc:
            raise FairpairError(f"measure '{self.name}': {exc.message}", key=f"measures.{self.name}.function",
                                hint=exc.hint) from None
        self._fn = fn
        return fn

    async def measure(self, item: MeasureItem, ctx=None) -> MeasureResult:
        fn = self.load(getattr(ctx, "battery_dir", None))
        avail = {"text": item.text, "case": item.case, "response": item.response,
                 "tool_calls": item.response.tool_calls, **self.options.args}
        params = inspect.signature(fn).parameters
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            kwargs = avail
        else:
            kwargs = {k: v for k, v in avail.items() if k in params}
        try:
            out = fn(**kwargs)
            if inspect.isawaitable(out):
                out = await out
        except Exception as exc:  # noqa: BLE001 - a user's error is data
            return MeasureResult.failed(f"{type(exc).__name__}: {exc}")
        if isinstance(out, MeasureResult):
            return out
        if out is None:
            return MeasureResult.missing("the function returned None")
        if isinstance(out, dict):
            fields = self.outputs()
            if fields is None:
                return MeasureResult.failed("the function returned a dict; declare its keys in 'fields'")
            unknown = set(out) - set(fields)
            if unknown:
                return MeasureResult.failed(f"the function returned undeclared fields {sorted(unknown)}")
            return MeasureResult.ok(outputs={f: out.get(f) for f in fields})
        if self.outputs() is not None:
            return MeasureResult.failed("'fields' is declared but the function returned a single value")
        return MeasureResult.ok(out)

