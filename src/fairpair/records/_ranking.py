"""The typed record of one ranking section of ``results.json`` (``rankings``): :class:`RankingResult`.

A ranking design puts k candidates in one prompt and asks for an order; the analysis
(:func:`fairpair.analysis.analyze_ranking`, one section per design, ranking measure and target)
returns the selection rates, the four-fifths ratios, the omnibus and position tests and the
pairwise comparisons as this record (``fairpair.analysis.RankingAnalysis`` is its other name), and
these models read such a section back with its types (:meth:`fairpair.records.Results.ranking_results`).
Keys a later fairpair adds are kept (``extra="allow"``). Undefined floats are ``None``; intervals
are ``[low, high]``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from fairpair.records._results import ComparisonResult

__all__ = ["RankingResult", "RankingSelection", "RankingRatio", "RankingTest", "RankingSlot", "RankingPosition",
           "RankingTemplateCounts", "RankingNameRate", "RankingParse"]

Interval = list[float | None]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")


class RankingSelection(_Section):
    """One group's selection rate (top pick, in [0, 1]) and mean rank (in [1, k]), with intervals;
    ``n_sets`` parsed sets with its candidate, ``n_ranked`` with a complete ranking, ``n_names``
    names seen; ``se`` / ``df``: crossed standard error and Satterthwaite df of ``rate``."""

    group: str
    n_sets: int
    n_ranked: int
    n_names: int
    rate: float | None
    rate_ci: Interval | None
    se: float | None
    df: float | None
    mean_rank: float | None
    mean_rank_ci: Interval | None
    note: str | None = None
    n_top: int | None = None


class RankingRatio(_Section):
    """A group's selection rate over the reference group's (the four-fifths rule): ``ratio``, its
    interval, the one-sided lower limit, the test of ``ratio >= 0.8`` (raw and Holm-adjusted p)
    and its ``verdict``."""

    group: str
    reference: str
    rate: float | None
    ratio: float | None
    ci: Interval | None
    lower_one_sided: float | None
    below_four_fifths: bool | None
    pvalue_below: float | None
    pvalue_adjusted: float | None
    verdict: str | None
    design_reason: str | None = None
    note: str | None = None
    #: The interval the verdict reads: from ``lower_one_sided`` (pass rule) to the upper limit of the two-sided
    #: interval at ``verdict_upper_level``, the level of the group's step in the correction over the groups
    #: (:func:`fairpair.stats.verdict_alphas`): wholly above 0.8 exactly when pass, below exactly when fail.
    verdict_ci: Interval | None = None
    verdict_upper_level: float | None = None


class RankingTest(_Section):
    """A test that all groups (or slots) share one value: name, statistic, p-value, df."""

    test: str
    statistic: float | None
    pvalue: float | None
    df: float | None
    df_denominator: float | None = None
    n: int | None = None
    note: str | None = None


class RankingSlot(_Section):
    """Top-pick rate and mean rank of one slot (1 = first in the prompt), intervals over templates."""

    slot: int
    n: int
    top_rate: float | None
    top_rate_ci: Interval | None
    mean_rank: float | None
    mean_rank_ci: Interval | None


class RankingPosition(_Section):
    """The position effect: per-slot rows, the F tests (templates random), Cochran's Q and Friedman;
    ``expected_rate`` = 1/k; ``first_minus_last``: slot 1's top-pick rate minus slot k's."""

    slots: list[RankingSlot]
    expected_rate: float
    top_test: RankingTest
    rank_test: RankingTest
    cochran: RankingTest
    friedman: RankingTest | None
    first_minus_last: float | None = None


class RankingTemplateCounts(_Section):
    """The top picks of one template counted (the table a published audit gives): ``n_sets`` answers,
    ``n_parsed`` with a top pick, ``top`` group -> count, ``ratios`` group -> share over the most
    picked group's (no interval)."""

    template: str
    n_sets: int
    n_parsed: int
    top: dict[str, int]
    ratios: dict[str, float | None]


class RankingNameRate(_Section):
    """One name's top-pick rate over the ``n_sets`` read answers that showed its candidate."""

    group: str
    name: str
    n_sets: int
    n_top: int
    rate: float | None


class RankingParse(_Section):
    """How the answers were read: ``how`` reading -> answers, ``matches`` match kind -> named candidates,
    ``renamed_picks`` / ``renamed_answers`` (credited and flagged), ``renamed_excluded`` (left out)."""

    how: dict[str, int]
    matches: dict[str, int]
    renamed_picks: int = 0
    renamed_answers: int = 0
    renamed_excluded: int = 0


class RankingResult(_Section):
    """One ranking section (design x ranking measure x target) of ``results.json``.

    Attributes
    ----------
    measure : str
        The ranking measure whose parsed orders were analysed.
    target, design, attribute : str
    groups : tuple of str
        The groups, in report order.
    k : int
        Candidates per matched set.
    names, templates : {"random", "fixed"}
        The estimand (``templates: fixed``: these templates, name sets random); ``estimand`` says it
        in words.
    alpha, confidence_level : float
    margin : float or None
        Equivalence margin of the pairwise verdicts (risk-difference units).
    n_sets, n_parsed, n_ranked, n_unparsed : int
        Matched sets (answers); with a parsed top pick; with a complete ranking; unparsed (left out
        of every denominator).
    unparsed_share : float or None
        ``n_unparsed / n_sets``.
    n_templates : int
    selection : list of RankingSelection
    reference : str or None
        Denominator of the ratios; ``reference_rule`` ``"most selected"`` (chosen from the data) or
        ``"given"``.
    ratios : list of RankingRatio
    omnibus : RankingTest
        Crossed test of equal selection rates (cluster-aware).
    cochran, friedman : RankingTest
        Over the sets (secondary); Friedman None for k = 2.
    position : RankingPosition
    pairs : list of ComparisonResult
        Measures ``top_pick`` and ``ranked_above`` for every pair of groups.
    notes : list of str
    by_template : list of RankingTemplateCounts
        The top picks counted per template, in template order.
    names_table : list of RankingNameRate
        Per name, its top-pick rate, for the names shown in at least ``min_name_sets`` parsed
        answers (a name seen in fewer has no rate worth reading; they are counted in ``notes``).
    names_test : RankingTest or None
        Do the names of a group differ in top-pick rate? Pearson's chi-square of homogeneity of
        each group's names (those in ``names_table``) over the top pick, summed over the groups (df
        summed); it treats the answers as independent. None when no group has two such names.
    four_fifths, ratio_rule : float, str
        The threshold (0.8) and the rule of the ratios' verdicts.
    correction : str
        Multiplicity correction over the pairs of each measure and over the groups' ratio tests.
    parse : RankingParse or None
        How the answers were read (set for a run's sections, not by ``analyze_ranking`` alone).
    """

    measure: str = "ranking"
    target: str
    design: str
    attribute: str
    groups: tuple[str, ...]
    k: int
    names: str
    estimand: str
    alpha: float
    confidence_level: float
    margin: float | None
    n_sets: int
    n_parsed: int
    n_ranked: int
    n_unparsed: int
    unparsed_share: float | None
    n_templates: int
    selection: list[RankingSelection]
    reference: str | None
    reference_rule: str
    ratios: list[RankingRatio]
    omnibus: RankingTest
    cochran: RankingTest
    friedman: RankingTest | None
    position: RankingPosition
    pairs: list[ComparisonResult] = []
    notes: list[str] = []
    by_template: list[RankingTemplateCounts] = []
    names_table: list[RankingNameRate] = []
    names_test: RankingTest | None = None
    min_name_sets: int = 30
    four_fifths: float = 0.8
    ratio_rule: str = ""
    correction: str = "holm"
    templates: str = "random"
    parse: RankingParse | None = None

    def to_dict(self) -> dict[str, Any]:
        """The section as ``results.json`` holds it (JSON-safe: the analysis writes undefined floats as
        None; lists, not tuples)."""
        return self.model_dump(mode="json")
