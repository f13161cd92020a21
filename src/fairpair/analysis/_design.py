"""When a design can support a verdict: the `insufficient design` rule and the estimand in words.

A comparison's verdict generalises over templates (``analysis.generalize.templates:
random``, the default) or holds for the templates used (``fixed``: these
scenarios), and over names (``analysis.generalize.names: random``, the
default) or holds for the names used (``fixed``). With too few templates, or too few names per group for
names random, the crossed t of :func:`fairpair.stats.crossed_difference`
has so few degrees of freedom, or its variance estimate is so unstable,
that its level and coverage no longer meet the goals (false ``fail`` at most
alpha + 1 point, 95% coverage within 93.5-96.5%). Such comparisons get the
verdict ``insufficient design`` with the reason in plain words.

The thresholds below come from ``benchmarks/sim_audits.py`` (the grid of
3, 5, 8, 20 templates x 3 and 10 names per group, independent and correlated
repetitions, template x group bias, name effects; binary, count and 1-5
measures): they are the smallest designs where every simulated generator met
the goals. See the table in ``benchmarks/HISTORY.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from fairpair._text import counted
from fairpair.stats import CrossedDifferenceResult

if TYPE_CHECKING:
    from fairpair.battery import LoadedBattery
    from fairpair.cases import Plan
    from fairpair.stats import CrossedMeanResult

__all__ = ["MIN_TEMPLATES", "MIN_TEMPLATES_FIXED", "MIN_NAMES", "MIN_PAIRS", "design_reason", "design_reason_counts",
           "design_reason_parts", "estimand_words", "ReasonWords", "PAIRED_WORDS", "RANKING_WORDS"]

#: Smallest number of templates for a verdict, per estimand (``benchmarks/sim_audits.py``).
MIN_TEMPLATES = {"random": 8, "fixed": 5}
#: The same with ``templates: fixed`` (the claim is about these scenarios), per names estimand: names random
#: needs no second template (the names are the random units); names fixed needs a template x name
#: interaction to estimate the error from (``benchmarks/sim_audits.py``).
MIN_TEMPLATES_FIXED = {"random": 1, "fixed": 2}
#: Smallest number of names per group for a verdict with names random (``benchmarks/sim_audits.py``).
MIN_NAMES = 5
#: Fewer complete matched pairs than this: no verdict.
MIN_PAIRS = 10

_ESTIMAND = {
    ("random", "random"): "generalises to other names of these groups and other scenarios like these templates",
    ("fixed", "random"): "holds for these names, in scenarios like these templates (not for other names of the "
                         "groups)",
    ("random", "fixed"): "holds for these scenarios (these templates) and generalises to other names of these "
                         "groups (not to other scenarios)",
    ("fixed", "fixed"): "holds for these names in these scenarios (these templates) only",
}


def estimand_words(names: str, templates: str = "random") -> str:
    """The estimand of a comparison in plain words (``names`` and ``templates`` are ``"random"`` or ``"fixed"``)."""
    return _ESTIMAND[(names, templates)]


class _Words(TypedDict):
    templates: str
    names: str
    templates_fixed: str
    pairs: str
    pair: tuple[str, str]  # (one, many)


_WORDS: dict[str, _Words] = {
    "en": {"templates": "{n} template(s): too few scenarios to estimate how much the difference varies between "
                        "them; use at least {need}",
           "names": "{n} name(s) in group {g}: the result cannot generalise to other names of this group; use at "
                    "least {need}, or declare `names: fixed` (the verdict then holds for these names only)",
           "templates_fixed": "{n} template(s): with `names: fixed` and `templates: fixed` the error comes from "
                              "the template x name interaction, which needs {need}; use `names: random`",
           "pairs": "{pairs}: use at least {need}", "pair": ("complete matched pair", "complete matched pairs")},
    "es": {"templates": "{n} plantilla(s): demasiado pocos escenarios para estimar cuánto varía la diferencia entre "
                        "ellos; usa al menos {need}",
           "names": "{n} nombre(s) en el grupo {g}: el resultado no se puede generalizar a otros nombres de este "
                    "grupo; usa al menos {need}, o declara `names: fixed` (el veredicto valdrá solo para estos "
                    "nombres)",
           "templates_fixed": "{n} plantilla(s): con `names: fixed` y `templates: fixed` el error sale de la "
                              "interacción plantilla x nombre, que necesita {need}; usa `names: random`",
           "pairs": "{pairs}: usa al menos {need}", "pair": ("par emparejado completo", "pares emparejados completos")},
}


def design_reason_counts(*, n_templates: int, n_names_a: int, n_names_b: int, names: str,
                         n_pairs: int | None = None, group_a: str = "A", group_b: str = "B",
                         lang: str = "en", templates: str = "random") -> str | None:
    """Why a design of this size cannot support a verdict, in plain words (``lang`` en or es); ``None`` when it can.

    Used before anything is sent (``fairpair validate`` / ``plan``, from
    the planned counts) and after (from the counts that have answers).
    """
    return "; ".join(design_reason_parts(n_templates=n_templates, n_names_a=n_names_a, n_names_b=n_names_b,
                                         names=names, n_pairs=n_pairs, group_a=group_a, group_b=group_b,
                                         lang=lang, templates=templates)) or None


def design_reason_parts(*, n_templates: int, n_names_a: int, n_names_b: int, names: str,
                        n_pairs: int | None = None, group_a: str = "A", group_b: str = "B",
                        lang: str = "en", templates: str = "random") -> list[str]:
    """The parts of :func:`design_reason_counts` one by one (templates, names of each group, pairs), so an
    output can say a part shared by several comparisons once; empty when the design can support a verdict."""
    w = _WORDS.get(lang, _WORDS["en"])
    reasons: list[str] = []
    if templates == "fixed":
        need_t = MIN_TEMPLATES_FIXED[names]
        if n_templates < need_t:
            reasons.append(w["templates_fixed"].format(n=n_templates, need=need_t))
    elif n_templates < MIN_TEMPLATES[names]:
        reasons.append(w["templates"].format(n=n_templates, need=MIN_TEMPLATES[names]))
    if names == "random":
        for g, k in ((group_a, n_names_a), (group_b, n_names_b)):
            if k < MIN_NAMES:
                reasons.append(w["names"].format(n=k, g=g, need=MIN_NAMES))
    if n_pairs is not None and n_pairs < MIN_PAIRS:
        reasons.append(w["pairs"].format(pairs=counted(n_pairs, *w["pair"]), need=MIN_PAIRS))
    return list(dict.fromkeys(reasons))


#: The design reason of a comparison whose measure has no value at all: its verdict is ``no verdict``
#: with the reason ``not measured`` (:class:`fairpair.records.Reason`), not ``insufficient design``.
NOT_MEASURED = "no answer of these groups has a value for this measure: check the measures stage (missing or failed)"


@dataclass(frozen=True)
class ReasonWords:
    """The sentences of :func:`design_reason` beside the counts' (a paired comparison's, or a ranking's)."""

    not_measured: str = NOT_MEASURED
    #: said when no template has values from both groups (None: the counts say it)
    no_templates: str | None = ("no template has measured answers from both groups: check the measures stage "
                                "(one group's measurements are missing)")
    constant: str = ("the measure is constant (every answer of both groups has the same value): no information "
                     "about a difference; check the measure")
    no_variance: str = ("no variance between templates or names: the uncertainty cannot be estimated; use more "
                        "templates or repetitions, or check the measure")


#: A paired comparison's (:mod:`fairpair.analysis._paired`).
PAIRED_WORDS = ReasonWords()

#: A ranking design's per-set difference of two candidates' groups (:mod:`fairpair.analysis._ranking`).
RANKING_WORDS = ReasonWords(
    not_measured="no parsed answer holds both groups' candidates", no_templates=None,
    constant="every parsed answer puts the two candidates the same way: no information about a difference",
    no_variance=("no variance between templates or names: the uncertainty cannot be estimated; use more templates "
                 "or repetitions"))


def design_reason(cr: CrossedDifferenceResult | CrossedMeanResult, *, names: str, n_pairs: int,
                  constant: bool = False, group_a: str = "A", group_b: str = "B", templates: str = "random",
                  no_events: bool = False, n_names: tuple[int, int] | None = None,
                  words: ReasonWords = PAIRED_WORDS) -> str | None:
    """:func:`design_reason_counts` from a :class:`~fairpair.stats.CrossedDifferenceResult`, plus "no variance".

    ``no_events``: a yes/no measure of events that may never occur (an answer status) has none in
    either group: that is data (an exact interval over templates), so only the counts can refuse it.
    ``n_names``: the names of each group counted by the caller (needed for a ranking's
    :class:`~fairpair.stats.CrossedMeanResult`; default: ``cr``'s); ``words``: the sentences beside the
    counts' (:data:`RANKING_WORDS` for a ranking design)."""
    if cr.n_values == 0:
        return words.not_measured
    if cr.n_templates == 0 and words.no_templates is not None:
        return words.no_templates
    if n_names is None:
        if not isinstance(cr, CrossedDifferenceResult):
            raise TypeError("design_reason: give n_names for a result that does not count names per group")
        n_names = (cr.n_names_a, cr.n_names_b)
    r = design_reason_counts(n_templates=cr.n_templates, n_names_a=n_names[0], n_names_b=n_names[1],
                             names=names, n_pairs=n_pairs, group_a=group_a, group_b=group_b,
                             templates=templates)
    if r or no_events:
        return r
    if constant:
        return words.constant
    if cr.se == 0 and math.isfinite(cr.estimate) and cr.estimate != 0:
        return None  # every template shows the same non-zero difference: the sign-flip test decides (fail only)
    if not (math.isfinite(cr.se) and cr.se > 0 and math.isfinite(cr.df)):
        return words.no_variance
    return None


def plan_warnings(loaded: LoadedBattery, plan: Plan) -> list[str]:
    """Warnings, before anything is sent, for pre-registered comparisons whose design cannot support a verdict.

    ``loaded`` is a :class:`~fairpair.battery.LoadedBattery`, ``plan`` its
    :func:`fairpair.cases.plan`. One sentence per comparison and design,
    from the planned counts (templates, names per group, matched pairs) and
    the declared estimand.
    """
    b = loaded.battery
    out: list[str] = []
    for c in b.analysis.comparisons:
        names = (c.generalize or b.analysis.generalize).names
        templates = (c.generalize or b.analysis.generalize).templates
        for did, s in plan.designs.items():
            if s.get("attribute") != c.attribute or (c.design and c.design != did):
                continue
            per = int(s.get("variants_per_group") or 0)
            reason = design_reason_counts(n_templates=int(s.get("templates") or 0), n_names_a=per, n_names_b=per,
                                          names=names, n_pairs=int(s.get("pairs") or 0), group_a="each",
                                          group_b="each", templates=templates)
            if reason:
                cid = c.id or f"{c.measure}-by-{c.attribute}"
                out.append(f"comparison {cid} (design {did}, names {names}): the verdict will be "
                           f"'insufficient design': {reason.replace('group each', 'each group')}")
    names, templates = b.analysis.generalize.names, b.analysis.generalize.templates
    ranking = {did for did, _d in b.ranking_designs()}
    for did, s in plan.designs.items():  # ranking designs are analysed without planned comparisons
        if did not in ranking:
            continue
        per = int(s.get("variants_per_group") or 0)
        # templates fixed: the name sets are the random units whatever names says (analyze_ranking)
        reason = design_reason_counts(n_templates=int(s.get("templates") or 0), n_names_a=per, n_names_b=per,
                                      names="random" if templates == "fixed" else names,
                                      n_pairs=int(s.get("pairs") or 0), group_a="each", group_b="each",
                                      templates=templates)
        if reason:
            out.append(f"ranking design {did} (names {names}): its verdicts will be 'insufficient design': "
                       f"{reason.replace('group each', 'each group')}")
    return list(dict.fromkeys(out))
