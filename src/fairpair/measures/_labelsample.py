"""The labelling sample of one judge measure row: stratified, drawn where the judge is least certain.

What humans label decides how well their labels correct the judge. Prediction-powered inference
(Angelopoulos et al., "Prediction-powered inference", Science 382, 2023) corrects the judge's
estimate by the human-minus-judge residual on a labelled subset; the subset need not be uniform
if each labelled answer carries its inclusion probability ``pi_i`` and the residual is weighted
by ``1 / pi_i`` (Horvitz & Thompson 1952). Drawing more where the judge is uncertain lowers the
variance: Zrnic & Candes ("Active statistical inference", ICML 2024, sec. 3) show that the
variance-minimising rule takes ``pi_i`` proportional to the root of the expected squared residual,
and Gligoric et al. ("Can unconfident LLM annotations be used for confident conclusions?",
arXiv 2408.15204) measure about a quarter fewer human labels for the same precision, politeness
among the tasks, when the LLM's confidence guides the draw.

The design (:func:`draw_label_sample`):

* **Strata**: ``target|group|template`` cells of the answers with a stored value of the measure
  (the frame), so every target, group and template is labelled; when the sample is smaller than
  the number of cells, ``target|group`` (and then every stratum gets one draw, which may exceed
  ``n``). Each stratum gets at least one draw; the rest of ``n`` is shared in proportion to the
  stratum's total weight (largest remainders; no stratum more than its size).
* **Within a stratum**: systematic sampling with probabilities proportional to size (Madow 1949;
  Sarndal, Swensson & Wretman 1992, sec. 3.6) over the stratum's answers in a random order. The
  size is ``(1 - mixing) * u_i + mixing * mean(u)``, with ``u_i`` the judge's own predictive
  standard deviation: for ``scoring: yes_no`` ``(high - low) * sqrt(p (1 - p))`` with ``p`` its
  P(yes); for ``scoring: probabilities`` the standard deviation of the level under its level
  probabilities. The mixing with uniform (default 0.3) bounds ``1 / pi_i`` when the judge is
  wrongly confident (Zrnic & Candes, sec. 3.2). A judge without probabilities (``scoring:
  sampled``) gives every answer the same size: simple random sampling, ``pi_i = n_h / N_h``.
  ``pi_i = min(1, c_h * size_i)`` with ``c_h`` set so that the stratum's ``pi`` sum to its
  ``n_h`` (answers at 1 are taken for sure); systematic sampling takes exactly ``n_h`` answers and
  each with probability exactly ``pi_i``.
* **Draw order**: each stratum's draws in a random order, the strata interleaved by their share
  (draw ``k`` of ``n_h`` at ``(k + U_h) / n_h``), so a rater who stops early has labelled about the
  same share of every stratum, and the labelled draws of a stratum are a simple random subsample
  of its draws (:meth:`fairpair.records.LabelSample.labelled_probabilities`).

Every random choice comes from ``random.Random(seed)`` over sorted keys: the same store, measure,
``n``, ``seed`` and ``mixing`` give the same sample; the seed is stored with it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fairpair.errors import FairpairError
from fairpair.records import LabelSample, SampledAnswer

__all__ = ["LabelMeasure", "label_measure", "judge_uncertainty", "pps_probabilities", "systematic_sample",
           "allocate", "draw_label_sample", "DEFAULT_MIXING"]

#: Share of uniform probability mixed into the uncertainty weights (Zrnic & Candes 2024, sec. 3.2).
DEFAULT_MIXING = 0.3


@dataclass(frozen=True)
class LabelMeasure:
    """One judge-measured row as a rater labels it.

    ``row`` is the stored measure row (``tone.warmth``, ``decision.refund``); ``measure`` the
    battery's measure name and ``dimension`` the rubric dimension or schema property;
    ``description`` and ``levels`` (level -> its text) what the judge was given; ``scoring`` the
    tone judge's (``sampled``, ``probabilities`` or ``yes_no``; ``sampled`` for ``llm_extract``);
    ``question`` the dimension's yes/no question (``yes_no``) or the extraction's instructions
    (``llm_extract``); ``language`` the battery's (the words for no and yes); ``examples`` the
    rubric's example answers with their levels, as the judge is shown them.

    With ``yes_no`` a rater answers the question and the label is stored on the levels' scale:
    ``no`` as the lowest level, ``yes`` as the highest (the judge's value is ``low + (high - low) *
    P(yes)``). An ``llm_extract`` boolean property has levels 0 (no) and 1 (yes), as it is stored.
    """

    row: str
    measure: str
    dimension: str
    description: str
    levels: dict[int, str]
    scoring: str
    question: str | None = None
    language: str | None = None
    examples: tuple[tuple[int, str], ...] = ()

    @property
    def low(self) -> int:
        return min(self.levels)

    @property
    def high(self) -> int:
        return max(self.levels)

    def choices(self) -> list[tuple[str, float, str]]:
        """``(key, stored value, text)`` of each answer a rater can give: the levels, or no/yes. The
        key is the level's digit (no/yes: ``0``/``1``); a level outside 0-9 has its number as key
        (the page's button, no shortcut)."""
        if self.scoring == "yes_no":
            no, yes = _no_yes(self.language)
            return [("0", float(self.low), no), ("1", float(self.high), yes)]
        return [(str(lvl), float(lvl), txt) for lvl, txt in sorted(self.levels.items())]


def _no_yes(language: str | None) -> tuple[str, str]:
    return ("no", "sí") if language == "es" else ("no", "yes")


def _extract_rows(battery, mname: str) -> dict[str, LabelMeasure]:
    """The rows of an ``llm_extract`` measure a rater can label: boolean properties (0 no, 1 yes) and
    integer ones with at most 10 levels (an ``enum``, or ``minimum``..``maximum``)."""
    from fairpair.measures._runner import build_measures
    from fairpair.measures.judge import ExtractMeasure

    m = build_measures(battery, [mname])[mname]
    if not isinstance(m, ExtractMeasure):  # never: the caller passes llm_extract measures
        raise TypeError(f"measure '{mname}' is not an llm_extract measure")
    o = m.options
    props = m._props() or {}
    scales = m.output_scales()
    out: dict[str, LabelMeasure] = {}
    no, yes = _no_yes(battery.language)
    for k, prop in props.items():
        row = f"{mname}.{k}"
        if scales.get(row) == "binary":
            levels = {0: no, 1: yes}
        elif scales.get(row) == "ordinal" and prop.get("type") == "integer":
            values = prop.get("enum") or range(int(prop["minimum"]), int(prop["maximum"]) + 1)
            levels = {int(v): str(v) for v in values}
        else:
            continue
        out[row] = LabelMeasure(row=row, measure=mname, dimension=k, description=(prop.get("description") or k),
                                levels=levels, scoring="sampled", question=o.instructions, language=battery.language)
    return out


def label_measure(battery, name: str | None) -> LabelMeasure:
    """The judge-measured row ``name``: a ``judge`` measure's dimension (``tone.warmth``, or ``tone``
    when it has one dimension) or an ``llm_extract`` measure's boolean or small-integer property
    (``decision.refund``); default: the first dimension of the first ``judge`` measure, else the
    first such ``llm_extract`` row.

    Raises
    ------
    FairpairError
        No row to label; ``name`` is not one (the message lists them).
    """
    from fairpair.measures._labels import _judge_measure

    rows: dict[str, LabelMeasure] = {}
    for mname, spec in battery.measures.items():
        if spec.kind == "judge":
            _, m, rubric, _ = _judge_measure(battery, mname)
            for d, dim in rubric.items():
                rows[f"{mname}.{d}"] = LabelMeasure(
                    row=f"{mname}.{d}", measure=mname, dimension=d, description=(dim.get("description") or d).strip(),
                    levels={int(k): str(v) for k, v in dim["levels"].items()}, scoring=m.options.scoring,
                    question=dim.get("question"), language=battery.language,
                    examples=tuple((int(e["level"]), str(e["answer"])) for e in dim.get("examples") or ()))
    for mname, spec in battery.measures.items():
        if spec.kind == "llm_extract":
            rows.update(_extract_rows(battery, mname))
    if not rows:
        raise FairpairError("the battery has no judge-measured row to label (a 'judge' measure, or an "
                            "'llm_extract' measure with a boolean or small-integer property)", key="measures")
    if name is None:
        return next(iter(rows.values()))
    if name not in rows:
        mine = [r for r in rows if r.split(".", 1)[0] == name]
        if len(mine) == 1:
            return rows[mine[0]]
        raise FairpairError(f"'{name}' is not a judge-measured row of this run" +
                            (" (it has several; name one)" if mine else ""), key="--measure",
                            hint="one of: " + ", ".join(rows))
    return rows[name]


def judge_uncertainty(lm: LabelMeasure, detail: Mapping[str, Any] | None) -> float | None:
    """The judge's predictive standard deviation for one answer, on the levels' scale; None when the
    stored detail has no probabilities (``scoring: sampled``, or a row stored without them).

    ``yes_no``: ``(high - low) * sqrt(p (1 - p))``, ``p`` = P(yes) in ``detail["p_yes"]``;
    ``probabilities``: ``sqrt(sum q_l (l - mean)^2)`` over ``detail["probabilities"]`` renormalised.
    """
    if not detail:
        return None
    if lm.scoring == "yes_no":
        p = (detail.get("p_yes") or {}).get(lm.dimension)
        if p is None:
            return None
        p = min(1.0, max(0.0, float(p)))
        return (lm.high - lm.low) * math.sqrt(p * (1 - p))
    probs = (detail.get("probabilities") or {}).get(lm.dimension)
    if not probs:
        return None
    q = {int(k): float(v) for k, v in probs.items()}
    total = sum(q.values())
    if total <= 0:
        return None
    mean = sum(k * v for k, v in q.items()) / total
    return math.sqrt(max(0.0, sum(v * (k - mean) ** 2 for k, v in q.items()) / total))


def pps_probabilities(sizes: Sequence[float], n: int) -> list[float]:
    """Inclusion probabilities proportional to ``sizes`` (all > 0) summing to ``n`` (``0 < n <= len``),
    none above 1: those that would exceed 1 are set to 1 and the rest rescaled, until none does
    (Sarndal, Swensson & Wretman 1992, sec. 3.6.2)."""
    if not 0 < n <= len(sizes) or any(s <= 0 for s in sizes):
        raise ValueError(f"need 0 < n <= {len(sizes)} and positive sizes")
    pi = [0.0] * len(sizes)
    free = set(range(len(sizes)))
    left = float(n)
    while True:
        total = sum(sizes[i] for i in free)
        over = {i for i in free if left * sizes[i] / total >= 1.0}
        if not over:
            for i in free:
                pi[i] = left * sizes[i] / total
            return pi
        for i in over:
            pi[i] = 1.0
        free -= over
        left -= len(over)
        if not free:
            return pi


def systematic_sample(pi: Sequence[float], start: float) -> list[int]:
    """Systematic sampling of the positions ``0..len(pi)-1`` (in this order) with inclusion
    probabilities ``pi`` (summing to an integer ``n``) and a start in [0, 1): position ``i`` is taken
    when an integer ``k`` has ``C_{i-1} <= start + k < C_i``, ``C`` the cumulative sums (Madow 1949).
    Exactly ``n`` positions; each with probability ``pi_i`` over a uniform ``start``."""
    out, cum = [], 0.0
    n = round(sum(pi))
    for i, p in enumerate(pi):
        lo, cum = cum, cum + p
        hi = n if i == len(pi) - 1 else cum  # the last bound is the integer n (no rounding drift)
        if math.ceil(hi - start) > math.ceil(lo - start) or p >= 1.0:
            out.append(i)
    return out


def allocate(weights: Mapping[str, float], sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """Draws per stratum: one each, the rest of ``n`` in proportion to ``weights`` by largest
    remainders, none above its size (what a full stratum cannot take goes to the others)."""
    alloc = {h: 1 for h in sizes if sizes[h] > 0}
    left = n - len(alloc)
    while left > 0:
        open_ = [h for h in sorted(alloc) if alloc[h] < sizes[h]]
        if not open_:
            break
        total = sum(weights[h] for h in open_) or float(len(open_))
        share = {h: left * (weights[h] / total if total else 1.0 / len(open_)) for h in open_}
        add = {h: min(int(share[h]), sizes[h] - alloc[h]) for h in open_}
        if sum(add.values()) == 0:  # hand out the remainders, largest first
            for h in sorted(open_, key=lambda h: (-(share[h] - int(share[h])), h))[:left]:
                add[h] = 1
        for h, k in add.items():
            alloc[h] += k
        left -= sum(add.values())
    return alloc


@dataclass(frozen=True)
class _Unit:
    target: str
    case_id: str
    group: str
    template: str
    uncertainty: float | None


def draw_label_sample(store, lm: LabelMeasure, *, n: int = 100, seed: int = 0,
                      mixing: float = DEFAULT_MIXING, created_at: str = "") -> LabelSample:
    """Draw (do not store) the labelling sample of ``lm.row`` from ``store``'s ``ok`` values (see the
    module docstring for the design; pass the result to :meth:`fairpair.store.Store.add_label_sample`).

    Raises
    ------
    FairpairError
        ``n`` < 1, ``mixing`` outside [0, 1], or no answer has a stored value of the measure.
    """
    if n < 1:
        raise FairpairError(f"a labelling sample needs at least 1 answer, not {n}", key="--n")
    if not 0.0 <= mixing <= 1.0:
        raise FairpairError(f"mixing {mixing} is not in [0, 1]", key="--mixing")
    cases = {c.id: c for c in store.iter_cases()}
    units: list[_Unit] = []
    for m in store.measurements(lm.row, status="ok"):
        c = cases.get(m.case_id)
        if c is None or m.value is None:
            continue
        units.append(_Unit(m.target, m.case_id, c.group_label(), c.template, judge_uncertainty(lm, m.detail)))
    if not units:
        raise FairpairError(f"no answer has a stored value of '{lm.row}' to sample",
                            hint="run `fairpair measure` on the run first")
    units.sort(key=lambda u: (u.target, u.case_id))
    known = [u.uncertainty for u in units if u.uncertainty is not None]
    weighted = len(known) == len(units) and sum(known) > 0
    mean_u = sum(known) / len(known) if weighted else 1.0
    size = {(u.target, u.case_id): ((1 - mixing) * u.uncertainty + mixing * mean_u)
            if weighted and u.uncertainty is not None else 1.0 for u in units}
    if weighted and mixing == 0.0 and min(size.values()) <= 0:
        raise FairpairError("with mixing 0 an answer the judge is certain of could never be drawn, and the "
                            "weighted estimate would be biased", key="--mixing", hint="use a mixing above 0")

    def cells(fine: bool) -> dict[str, list[_Unit]]:
        out: dict[str, list[_Unit]] = {}
        for u in units:
            out.setdefault("|".join([u.target, u.group, *([u.template] if fine else [])]), []).append(u)
        return out

    strata = cells(True)
    if len(strata) > n:
        strata = cells(False)
    rng = random.Random(seed)
    keys = sorted(strata)
    alloc = allocate({h: sum(size[(u.target, u.case_id)] for u in strata[h]) for h in keys},
                     {h: len(strata[h]) for h in keys}, n)
    placed: list[tuple[float, str, SampledAnswer]] = []
    for h in keys:
        members = list(strata[h])
        rng.shuffle(members)
        pi = pps_probabilities([size[(u.target, u.case_id)] for u in members], alloc[h])
        taken = [members[i] for i in systematic_sample(pi, rng.random())]
        prob = {(u.target, u.case_id): p for u, p in zip(members, pi, strict=True)}
        rng.shuffle(taken)
        offset = rng.random()
        for k, u in enumerate(taken):
            placed.append(((k + offset) / len(taken), h, SampledAnswer(
                target=u.target, case_id=u.case_id, stratum=h, probability=min(1.0, prob[(u.target, u.case_id)]),
                order=0, uncertainty=u.uncertainty if weighted else None)))
    placed.sort(key=lambda t: (t[0], t[1]))
    answers = tuple(SampledAnswer(a.target, a.case_id, a.stratum, a.probability, i, a.uncertainty)
                    for i, (_, _, a) in enumerate(placed))
    return LabelSample(measure=lm.row, seed=seed, design="uncertainty" if weighted else "stratified",
                       mixing=mixing if weighted else 0.0, frame={h: len(strata[h]) for h in keys},
                       answers=answers, created_at=created_at)
