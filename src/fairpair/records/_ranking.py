"""The typed record of one ranking section of ``results.json`` (``rankings``): :class:`RankingResult`.

A ranking design puts k candidates in one prompt and asks for an order; the analysis
(:func:`fairpair.analysis.analyze_ranking`, one section per design, ranking measure and target)
writes the selection rates, the four-fifths ratios, the omnibus and position tests and the
pairwise comparisons. These models read such a section back with its types
(:meth:`fairpair.records.Results.ranking_results`). Keys a later fairpair adds are kept
(``extra="allow"``). Undefined floats are ``None``; intervals are ``[low, high]``.
"""

from __future__ import annotations

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

    See :class:`fairpair.analysis.RankingAnalysis` for the meaning of each field; ``measure`` is
    the ranking measure whose parsed orders were analysed, ``pairs`` the ``top_pick`` and
    ``ranked_above`` comparisons of every pair of groups.
    """

    measure: str
    target: str
    design: str
    attribute: str
    groups: list[str]
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
    parse: RankingParse | None = None
    four_fifths: float = 0.8
    ratio_rule: str = ""
    correction: str = "holm"
    templates: str = "random"
