"""The ``ranking`` measure: an answer read as an order of the candidates of a ranking case.

A case of a ``ranking`` design puts k candidates (one name per group) in
one prompt; ``meta.ranking.slots`` records the group and variant of each
slot. :func:`parse_ranking` reads the answer into an order of those
variants:

* names are matched with the masker's folding (:func:`fairpair.measures._mask.fold`:
  NFKD, accents and case folded, dashes and apostrophes unified), as whole
  words; a full name is found by itself or, when no other candidate shares
  it, by one of its words ("García" for "Lucía García");
* a list is read first: lines that start with a number or a bullet
  (``1. Ana``, ``2) Luis``, ``- Marta``), each naming exactly one
  candidate; then ``Ana > Luis > Marta``; then a comma or semicolon list
  naming every candidate (``Ana, Luis y Marta``); else the order of first
  mention in the text (prose: "My first choice is Ana, followed by Luis");
* a name the answer misspells ("Jonathon" for JONATHAN) is matched when it
  is at least :data:`FUZZY` similar (difflib ratio) to one candidate's name
  or own word and closer to it than to any other's; a candidate whose
  first name the answer changed ("Heather Yoder" for HEATH YODER,
  "Alejandra" for ALEJANDRO: a renamed or gender-flipped candidate) is
  credited and **flagged** (``renamed``); the option ``renamed: exclude``
  leaves such answers out instead;
* every pick records how it matched (:class:`Pick`: ``exact``, ``folded``,
  ``word``, ``fuzzy``), in ``detail.picks``;
* a reading that names k or k-1 candidates gives a complete ranking (the
  one left out is last); a clean numbered or bulleted list of fewer (each
  line naming one candidate, the first line an unambiguous first pick)
  keeps its top picks (``parse: partial``); a reading that names a single
  candidate gives the top pick only (``parse: top_only``); anything else
  (no candidate named, e.g. a refusal, or prose naming some candidates) is
  **unparsed**.

The measurement's value is the top group (``categorical``, the groups of
the ranking designs as outcomes); ``detail`` holds ``order`` (the slots,
1-based, in rank order), ``ranks`` (group -> rank, 1 = first; absent for
top-only), ``top`` (the top group), ``variants`` (the names in rank
order), ``parse`` (how the answer was read), ``picks`` (per named
candidate: ``variant``, ``match``, ``said``, ``renamed``) and ``renamed``
(how many picks were renamed). An unparsed answer is
stored as ``missing`` with ``detail.parse = "unparsed"`` and counted by the
ranking analysis. Cases of other designs get ``missing`` ("not a ranking
case").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from fairpair.measures._base import Measure, MeasureItem, MeasureOptions, MeasureResult

if TYPE_CHECKING:
    from fairpair.records import Case

__all__ = ["RankingMeasure", "RankingOptions", "ParsedRanking", "Pick", "parse_ranking", "ranking_detail",
           "candidate_spans", "UNPARSED", "MATCHES", "FUZZY", "ranking_slots"]

UNPARSED = "unparsed"

_LINE_MARK = re.compile(r"^\s*(?:#?\d{1,2}\s*(?:[.):\-º°ª]|st|nd|rd|th)?|[-*•·–]|\(\d{1,2}\))\s+", re.I)


#: How a pick was matched, from the surest to the loosest (``detail.picks[].match``).
MATCHES = ("exact", "folded", "word", "fuzzy")
#: Similarity (difflib ratio, 0-1) from which a misspelt name is taken for a candidate's.
FUZZY = 0.8


@dataclass(frozen=True)
class Pick:
    """One candidate named in the answer, and how the parser matched it.

    ``index``: the candidate (0-based, as given); ``match``: ``exact`` (the
    name as given, case and accents included), ``folded`` (the whole name,
    case and accents folded), ``word`` (one of its own words: "Yoder" for
    "Heath Yoder", when no other candidate shares it) or ``fuzzy`` (a
    misspelt name, similarity >= :data:`FUZZY`); ``said``: the words
    matched (folded); ``renamed``: the answer gives the candidate another
    form of its first name, one that extends it or changes its last letter
    (the ways a name changes gender: "Heather Yoder" for HEATH YODER,
    "Alejandra" for ALEJANDRO): credited to the candidate and flagged. A
    first name misspelt otherwise ("Emilly Snyder") is a ``fuzzy`` match.
    """

    index: int
    match: str
    said: str
    renamed: bool = False


@dataclass(frozen=True)
class ParsedRanking:
    """An answer read as an order of candidates.

    ``order``: candidate indices (0-based, as given) in rank order, complete
    (k) or the top picks alone; ``how``: ``list``, ``arrows``, ``commas``,
    ``prose`` (complete), ``partial`` (a clean numbered or bulleted list of
    fewer than k - 1 candidates: its top picks), ``top_only`` or
    ``unparsed`` (then ``order`` is empty); ``picks``: how each candidate
    the reading named was matched (:class:`Pick`, in rank order; a
    candidate inferred last is not a pick).
    """

    order: tuple[int, ...]
    how: str
    found: tuple[int, ...] = field(default=())
    picks: tuple[Pick, ...] = field(default=())

    @property
    def parsed(self) -> bool:
        return self.how != UNPARSED

    @property
    def complete(self) -> bool:
        return self.parsed and self.how not in ("top_only", "partial")

    @property
    def renamed(self) -> int:
        """Picks credited to a candidate whose first name the answer changed."""
        return sum(p.renamed for p in self.picks)


def _fold(text: str) -> str:
    from fairpair.measures._mask import fold

    return fold(text)


_WORD = re.compile(r"[^\W_]+(?:['\-][^\W_]+)*")


_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


class _Names:
    """The candidates' folded forms (the full name and its own words, as word sequences) and their search."""

    def __init__(self, candidates: list[str]):
        self.given = list(candidates)
        self.full = [_fold(c) for c in candidates]
        self.words = [[w for w in re.split(r"[ \-]+", f) if len(w) > 1] for f in self.full]
        forms: dict[str, tuple[int, bool]] = {}  # folded form (words joined by one space) -> (candidate, full?)
        keys = [" ".join(_TOKEN.findall(f)) for f in self.full]
        for i, f in enumerate(keys):
            others = {w for j, ws in enumerate(self.words) if j != i for w in ws} | \
                     {keys[j] for j in range(len(keys)) if j != i}
            if f:
                forms.setdefault(f, (i, True))
            for w in self.words[i]:
                if w not in others and w != f and _TOKEN.fullmatch(w):
                    forms.setdefault(w, (i, False))
        self.forms = forms
        self.longest = max((f.count(" ") + 1 for f in forms), default=1)
        self.shared = {w for ws in self.words for w in ws if w not in forms}

    def hits(self, folded: str) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, str, int, bool]]]:
        """The words of ``folded`` (start, end, word) and every mention of a form in it
        (start, end, form, candidate, is the full name), longest form first at each word."""
        toks = [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(folded)]
        out = []
        j, n = 0, len(toks)
        forms = self.forms
        while j < n:
            for size in range(min(self.longest, n - j), 0, -1):
                key = toks[j][2] if size == 1 else " ".join(t[2] for t in toks[j:j + size])
                got = forms.get(key)
                if got is not None:
                    out.append((toks[j][0], toks[j + size - 1][1], key, got[0], got[1]))
                    j += size
                    break
            else:
                j += 1
        return toks, out

    def find(self, text: str, fuzzy: bool | None = None) -> list[tuple[int, Pick]]:
        """``(position, pick)`` of each candidate's first mention in ``text``, in text order.

        ``fuzzy``: look for misspelt names of the candidates not found (None: only when no
        candidate is found exactly and the text is short, as one line of a list)."""
        folded = _fold(text)
        first: dict[int, tuple[int, Pick]] = {}
        toks, hits = self.hits(folded)
        for start, _stop, f, i, whole in hits:
            if i in first:
                continue
            if whole:
                first[i] = (start, Pick(i, "exact" if _exactly_in(self.given[i].strip(), text) else "folded", f))
            else:
                first[i] = (start, self._word_pick(i, folded, start, f))
        if (fuzzy is None and not first and len(toks) <= 12) or (fuzzy and len(first) < len(self.full)):
            self._fuzzy(toks, first, [(a, b) for a, b, *_ in hits])
        return sorted(first.values(), key=lambda x: x[0])

    def _word_pick(self, i: int, folded: str, start: int, w: str) -> Pick:
        """A candidate named by one of its words: renamed when a similar but other first name precedes it."""
        words = self.words[i]
        if len(words) >= 2 and w == words[-1]:
            before = _WORD.findall(folded[:start][-40:])
            if before:
                prev = before[-1]
                if prev != words[0] and prev not in self.shared and _similar(prev, words[0]) >= 0.6:
                    if _flipped(prev, words[0]):
                        return Pick(i, "word", f"{prev} {w}", renamed=True)
                    if _similar(prev, words[0]) >= FUZZY:  # a misspelt first name
                        return Pick(i, "fuzzy", f"{prev} {w}")
        return Pick(i, "word", w)

    def _fuzzy(self, toks: list[tuple[int, int, str]], first: dict[int, tuple[int, Pick]],
               used: list[tuple[int, int]]) -> None:
        """Misspelt names of the candidates not found yet: windows of words close to a full name or an own word
        (sharing its first letter)."""
        toks = [t for t in toks if not any(a <= t[0] < b for a, b in used) and t[2] not in self.shared
                and len(t[2]) > 2]
        if not toks:
            return
        for i in range(len(self.full)):
            if i in first:
                continue
            words = self.words[i]
            best: tuple[float, int, str, bool] | None = None
            n = len(words)
            whole = _Matcher(" ".join(words)) if n >= 2 else None
            own = [(_Matcher(w), n >= 2 and w == words[0], w) for w in words if self.forms.get(w, (None,))[0] == i]
            initials = {w[0] for w in words}
            for j in range(len(toks)):
                if toks[j][2][0] not in initials:
                    continue
                cands = []
                if whole is not None and j + n <= len(toks):
                    said = " ".join(t[2] for t in toks[j:j + n])
                    cands.append((whole(said), said, said.split(" ")[1:] == words[1:]
                                  and _flipped(said.split(" ")[0], words[0])))
                if len(toks[j][2]) >= 5:
                    for m, first_name, w in own:
                        cands.append((m(toks[j][2]), toks[j][2], first_name and _flipped(toks[j][2], w)))
                for score, said, renamed in cands:
                    if score >= FUZZY and score < 1.0 and (best is None or score > best[0]):
                        best = (score, toks[j][0], said, renamed)
            if best is None:
                continue
            # the misspelling must be closer to this candidate than to any other
            if any(_similar(best[2], " ".join(self.words[o])) > best[0] or
                   any(_similar(best[2], w) > best[0] for w in self.words[o])
                   for o in range(len(self.full)) if o != i):
                continue
            first[i] = (best[1], Pick(i, "fuzzy", best[2], renamed=best[3]))


def candidate_spans(text: str, candidates: list[str]) -> list[tuple[int, int, int]]:
    """``(start, end, candidate)`` of every mention of a candidate in ``text`` (positions in ``text``
    itself), found as :func:`parse_ranking` finds them (whole name, own word, misspelling), for
    replacing each candidate's name by a placeholder. Non-overlapping, in text order."""
    from fairpair._text import fold_char

    names = _Names(candidates)
    chars: list[str] = []
    where: list[int] = []
    for i, c in enumerate(text):
        f = fold_char(c)
        if f.isspace():
            f = " "
        chars.append(f)
        where.extend([i] * len(f))
    folded = "".join(chars)
    _toks, hits = names.hits(folded)
    spans = [(a, b, i) for a, b, _f, i, _w in hits]
    said = {p.said: p.index for _pos, p in names.find(text, fuzzy=True) if p.match == "fuzzy" or p.renamed}
    for f, i in said.items():
        for m in re.finditer(r"(?<![^\W_])" + r"\W+".join(re.escape(w) for w in f.split(" ")) + r"(?![^\W_])",
                             folded):
            spans.append((m.start(), m.end(), i))
    from fairpair.measures._mask import TITLES

    title = re.compile(r"(?<![^\W_])(?:" + "|".join(TITLES) + r")\.?\s+$")
    spans.sort(key=lambda x: (x[0], -x[1]))
    out: list[tuple[int, int, int]] = []
    end = -1
    for a, b, i in spans:
        tm = title.search(folded, max(0, a - 12), a)  # "Sra. Amrani": the title goes with the name
        if tm and tm.start() >= end:
            a = tm.start()
        if a < end:  # inside a mention already replaced (a renamed "heather yoder" holds "yoder")
            continue
        end = b
        out.append((where[a], where[b - 1] + 1, i))
    return out


class _Matcher:
    """Similarity (difflib ratio) of strings to one fixed string, 0 below :data:`FUZZY` x 0.75 (cheap bounds)."""

    def __init__(self, b: str):
        from difflib import SequenceMatcher

        self.sm = SequenceMatcher(None, autojunk=False)
        self.sm.set_seq2(b)
        self.n = len(b)

    def __call__(self, a: str) -> float:
        if 2.0 * min(len(a), self.n) / (len(a) + self.n) < FUZZY:
            return 0.0
        self.sm.set_seq1(a)
        if self.sm.quick_ratio() < FUZZY:
            return 0.0
        return self.sm.ratio()


def _exactly_in(name: str, text: str) -> bool:
    """``name`` occurs in ``text`` as given (case and accents included), as whole words."""
    at = text.find(name)
    while at >= 0:
        before = text[at - 1] if at else " "
        after = text[at + len(name)] if at + len(name) < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        at = text.find(name, at + 1)
    return False


def _flipped(said: str, first: str) -> bool:
    """``said`` is another form of the first name ``first`` rather than a misspelling of it: one extends the
    other ("heather" / "heath", "luisa" / "luis") or they differ in the last letter only ("alejandra" /
    "alejandro"), the ways a name changes gender; "emilly" for "emily" is a misspelling."""
    if said == first:
        return False
    return said.startswith(first) or first.startswith(said) or (len(said) == len(first) and said[:-1] == first[:-1])


def _similar(a: str, b: str) -> float:
    from difflib import SequenceMatcher

    sm = SequenceMatcher(None, a, b, autojunk=False)
    if sm.real_quick_ratio() < FUZZY * 0.75 or sm.quick_ratio() < FUZZY * 0.75:
        return 0.0
    return sm.ratio()


def _complete(picks: list[Pick], k: int, how: str) -> ParsedRanking | None:
    order = [p.index for p in picks]
    if len(set(order)) != len(order):
        return None
    if len(order) == k:
        return ParsedRanking(tuple(order), how, tuple(order), tuple(picks))
    if len(order) == k - 1 and k >= 2:
        rest = [i for i in range(k) if i not in order]
        return ParsedRanking(tuple(order + rest), how, tuple(order), tuple(picks))
    return None


def parse_ranking(text: str, candidates: list[str]) -> ParsedRanking:
    """Read ``text`` as an order of ``candidates`` (see the module docstring for the rules).

    Parameters
    ----------
    text : str
        The answer.
    candidates : list of str
        The k names, in slot order (k >= 2).

    Returns
    -------
    ParsedRanking
        ``order`` holds indices into ``candidates``; ``picks`` how each was matched.
    """
    k = len(candidates)
    names = _Names(candidates)
    text = text or ""
    # 1. a numbered or bulleted list: one candidate per marked line
    marked: list[Pick] = []
    for line in text.splitlines():
        if _LINE_MARK.match(line):
            found = names.find(line)
            if len(found) == 1:
                marked.append(found[0][1])
            elif len(found) > 1:  # a line naming two candidates: not a clean list
                marked = []
                break
    if len(marked) >= 2:
        got = _complete(marked, k, "list")
        if got is not None:
            return got
        if len({p.index for p in marked}) == len(marked):  # a clean list of the top picks only
            order = tuple(p.index for p in marked)
            return ParsedRanking(order, "partial", order, tuple(marked))
    # 2. A > B > C
    if ">" in text:
        parts = [names.find(p) for p in text.split(">")]
        if all(len(p) == 1 for p in parts) and len(parts) >= 2:
            got = _complete([p[0][1] for p in parts], k, "arrows")
            if got is not None:
                return got
    # 3. a comma / semicolon list naming every candidate on one line
    for line in text.splitlines():
        if "," in line or ";" in line:
            parts = [names.find(p) for p in re.split(r"[,;]|\s(?:y|and|e|et)\s", line)]
            parts = [p for p in parts if p]
            if len(parts) == k and all(len(p) == 1 for p in parts):
                got = _complete([p[0][1] for p in parts], k, "commas")
                if got is not None:
                    return got
    # 4. prose: the order of first mention
    mentioned = [p for _, p in names.find(text, fuzzy=True)]
    got = _complete(mentioned, k, "prose")
    if got is not None:
        return got
    if len(mentioned) == 1:
        return ParsedRanking((mentioned[0].index,), "top_only", (mentioned[0].index,), tuple(mentioned))
    return ParsedRanking((), UNPARSED, tuple(p.index for p in mentioned), tuple(mentioned))


class RankingOptions(MeasureOptions):
    """Options of the ``ranking`` measure (the candidates come from each case).

    ``renamed``: ``count`` (default) credits a renamed or gender-flipped
    candidate ("Heather Yoder" for HEATH YODER) to the candidate and flags
    it; ``exclude`` stores such an answer as missing (``parse:
    renamed``), left out of every denominator like an unparsed one.
    """

    renamed: Literal["count", "exclude"] = "count"


def ranking_detail(slots: list[dict[str, Any]], order: list[int] | tuple[int, ...], how: str, complete: bool,
                   picks: tuple[Pick, ...] | None = None) -> dict[str, Any]:
    """The ``detail`` of a parsed ranking: ``parse``, ``top``, ``order`` (slots), ``variants``, ``ranks``
    (complete rankings only), ``picks`` and ``renamed``. ``order`` holds 0-based indices into ``slots``."""
    names = [str(s["variant"]) for s in slots]
    detail: dict[str, Any] = {"parse": how, "top": str(slots[order[0]]["group"]),
                              "order": [int(slots[i]["slot"]) for i in order], "variants": [names[i] for i in order]}
    if complete:
        detail["ranks"] = {str(slots[i]["group"]): r + 1 for r, i in enumerate(order)}
    if picks is not None:
        detail["picks"] = [{"variant": names[p.index], "match": p.match, "said": p.said, "renamed": p.renamed}
                           for p in picks]
        detail["renamed"] = sum(p.renamed for p in picks)
    return detail


def ranking_slots(case: Case) -> list[dict[str, Any]] | None:
    """The slots (``slot``, ``name``, ``group``, ``variant``) of a ranking case, or None for another case."""
    rk = (getattr(case, "meta", None) or {}).get("ranking")
    if not isinstance(rk, dict) or not isinstance(rk.get("slots"), list):
        return None
    return rk["slots"]


class RankingMeasure(Measure):
    """The answer to a ranking case as an order of its candidates (see the module docstring).

    Value: the top group (``str``; ``categorical``). ``detail``: ``order``,
    ``ranks``, ``top``, ``variants``, ``parse``. Unparsed answers are
    ``missing`` with ``detail.parse = "unparsed"``.
    """

    Options = RankingOptions
    scale: ClassVar[Literal["categorical"]] = "categorical"

    def categories(self, ctx=None) -> dict[str, tuple[str, ...]]:
        battery = getattr(ctx, "battery", None)
        groups: list[str] = []
        for _did, d in battery.ranking_designs() if battery is not None else []:
            groups += d.chosen_groups(battery)
        return {self.name: tuple(dict.fromkeys(groups))}

    async def measure(self, item: MeasureItem, ctx=None) -> MeasureResult:
        slots = ranking_slots(item.case)
        if slots is None:
            return MeasureResult.missing("not a ranking case (the ranking measure reads cases of a ranking design)")
        names = [str(s["variant"]) for s in slots]
        got = parse_ranking(item.text, names)
        if not got.parsed:
            return MeasureResult.missing(
                f"{UNPARSED}: no ranking of the {len(names)} candidates found in the answer "
                f"({len(got.found)} named)", detail={"parse": UNPARSED, "named": [names[i] for i in got.found]})
        detail = ranking_detail(slots, got.order, got.how, got.complete, got.picks)
        if got.renamed and self.options.renamed == "exclude":
            return MeasureResult.missing(
                f"renamed: {got.renamed} candidate(s) named with another first name (renamed: exclude)",
                detail={**detail, "parse": "renamed", "parsed_as": got.how})
        return MeasureResult.ok(detail["top"], detail=detail)
