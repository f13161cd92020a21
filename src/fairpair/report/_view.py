"""The typed records of the report's view model (:class:`~fairpair.report.ReportModel`).

Each record is built once from the run's typed :class:`~fairpair.analysis.Results` (and the
store's data read with it, :class:`~fairpair.report.ReportData`), with its numbers already
formatted for the report's language; the HTML and Markdown templates, the JSON summary and the
terminal table read their attributes. Each record keeps the analysis record it shows
(``result``, ``block``), so a field the analysis adds reaches every output through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fairpair.analysis import (
        CellMean,
        ComparisonResult,
        DispersionRow,
        DispersionTest,
        MinimumIdentity,
        TwoPartyBlock,
    )
    from fairpair.records import RankingResult
    from fairpair.report._data import EvidencePair

__all__ = ["ScenarioView", "SpreadView", "Figures", "CollectedRow", "VerdictRow", "ReasonGroup", "AAControlRow",
           "DiscoveredRow", "SelfTestRow", "EvidenceBlock", "TwoPartyView",
           "DroppedRow", "RankingView", "RankingSelectionRow", "RankingSlotRow", "RankingPairRow",
           "RankingEvidenceView", "RankingEvidenceLine", "RankingTable"]


@dataclass(frozen=True)
class Figures:
    """The report's SVG figures (:class:`~fairpair.report._plots.Figure`), by kind: a forest plot and a
    discordant-pairs plot per measure, rates/means by group per measure and attribute, the two-party
    heat maps and dispersion figures (all of them in ``two_party``, per block in ``two_party_blocks``).
    All empty for a model built without figures (the terminal)."""

    forest: list[Any] = field(default_factory=list)
    groups: list[Any] = field(default_factory=list)
    discordant: list[Any] = field(default_factory=list)
    two_party: list[Any] = field(default_factory=list)
    two_party_blocks: list[list[Any]] = field(default_factory=list)
    #: one forest plot by scenario per comparison (:func:`~fairpair.report._plots.scenario_plot`), by row key
    scenarios: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ScenarioView:
    """Where a comparison's difference lives, for the report's "Where is it?" section: ``title`` (the
    comparison in the battery's words), ``summary`` (:func:`~fairpair.report._catalog.scenario_summary`),
    ``spread`` (the template x group variance share and the outlying scenarios, in words), ``guard`` (why
    the average cannot pass, or empty), ``figure`` (the forest plot by scenario, ``None`` without
    figures) and ``row`` (the :class:`VerdictRow`)."""

    title: str
    summary: str
    spread: str
    guard: str
    figure: Any
    row: Any


@dataclass(frozen=True)
class SpreadView:
    """A comparison's within-cell spread (results.json ``spread``, secondary) with its numbers formatted for the
    report's language: ``sd`` (``SD A / SD B``), ``ratio`` and ``ci`` (of the ratio A / B), ``p_adjusted``,
    ``verdict`` / ``verdict_word``, ``why`` (the plan's largest tolerated ratio, or why the spread cannot
    pass without one), ``line`` (the whole of it in one sentence, for the terminal) and ``row`` (the
    :class:`VerdictRow`)."""

    sd: str
    ratio: str
    ci: str
    p_adjusted: str
    verdict: str
    verdict_word: str
    line: str
    row: Any
    why: str = ""


@dataclass(frozen=True)
class CollectedRow:
    """Cases and answers of one design and cell (``baseline`` or ``attribute=group, ...``; ``label``
    with the battery's group labels); ``answered``: target -> cases answered."""

    design: str
    cell: str
    label: str
    cases: int
    answered: dict[str, int]


@dataclass(frozen=True)
class VerdictRow:
    """One comparison as every output shows it (numbers already formatted for ``lang``).

    ``key`` is :func:`~fairpair.report._data.comparison_key`; ``label_a`` / ``label_b`` and
    ``measure_label`` the battery's words; ``estimate`` (percentage points for a binary measure),
    ``ci``, ``p`` and ``p_adjusted`` formatted text ("—" when undefined); ``result`` the
    comparison of ``results.json`` it shows. ``verdict`` is the verdict shown: the stored one, or
    ``incomplete run`` / ``not measured`` when the headline reason gives none
    (:data:`fairpair.records.REASON_VERDICT`); ``reasons`` the comparison's reasons
    (:class:`fairpair.records.Reason` values, headline first) and ``reason`` the headline one in
    ``lang``; ``mark`` is ``*`` (secondary), ``†`` (automatic answer-status comparison) or empty.
    """

    key: str
    id: str
    target: str
    measure: str
    measure_label: str
    attribute: str
    design: str
    group_a: str
    group_b: str
    label_a: str
    label_b: str
    scale: str
    primary: bool
    verdict: str
    verdict_word: str
    sentence: str
    estimate: str
    ci: str
    p: str
    p_adjusted: str
    test: str
    n_pairs: int | None
    n_dropped: int | None
    note: str
    result: ComparisonResult
    reasons: tuple[str, ...] = ()
    reason: str = ""
    mark: str = ""

    @property
    def status(self) -> bool:
        """An automatic comparison of an answer status (``answer.failed``, ``answer.empty``...)."""
        return self.measure.startswith("answer.")

    @property
    def label(self) -> str:
        """``measure: group_a − group_b`` with its mark: the comparison's name in tables and lists."""
        return f"{self.measure}: {self.group_a} − {self.group_b}" + (f" {self.mark}" if self.mark else "")


@dataclass(frozen=True)
class ReasonGroup:
    """One distinct reason and the comparisons it covers, said once in every output.

    ``kind`` is the reason's name in the report's language (``insufficient design``), ``text`` the
    reason in words, ``which`` the comparisons it covers (``all 9 comparisons`` or their labels),
    ``labels`` those labels, ``line`` the whole line as the terminal prints it.
    """

    kind: str
    text: str
    which: str
    labels: list[str]
    line: str


@dataclass(frozen=True)
class DiscoveredRow:
    """One axis of ``fairpair discover`` (``results.json``'s ``discovered``), formatted: ``what`` the
    phrase or the question, ``how`` the pass in words, ``estimate`` / ``ci`` in points on the
    confirmation part, ``p`` Holm's over the target's discovered axes, ``confirmed`` the word."""

    name: str
    target: str
    how: str
    what: str
    groups: str
    direction: str
    estimate: str
    ci: str
    p: str
    confirmed: bool
    confirmed_word: str


@dataclass(frozen=True)
class AAControlRow:
    """One A/A control (two halves of one group's variants: the audit's empirical noise floor).

    ``groups`` is ``"half_a / half_b"``; ``estimate`` and ``ci`` (``[low, high]``) formatted with
    three decimals, ``p`` the adjusted p-value (Holm within the controls); ``result`` the control's
    :class:`~fairpair.analysis.ComparisonResult`.
    """

    measure: str
    target: str
    groups: str
    estimate: str
    ci: str
    p: str
    n_pairs: int
    verdict: str
    verdict_word: str
    result: ComparisonResult


@dataclass(frozen=True)
class SelfTestRow:
    """One check of a judge's self-test (results.json ``judge.self_test``): the measure, what was
    checked, its value and threshold (formatted) and its status in the report's language."""

    measure: str
    check: str
    value: str
    threshold: str
    status: str


@dataclass(frozen=True)
class EvidenceBlock:
    """A failing comparison (``row``) and the masked answer pairs quoted for it (``pairs``)."""

    row: VerdictRow
    pairs: list[EvidencePair]


@dataclass(frozen=True)
class DroppedRow:
    """A comparison that dropped pairs, and the sentence saying how many, of how many, and why."""

    row: VerdictRow
    text: str


@dataclass(frozen=True)
class TwoPartyView:
    """One SUB x RES block (one target and measure) of results.json ``two_party``, for display.

    ``title`` and ``measure`` (the battery's label) in the report's language; ``kind`` the
    measure's kind; ``figures`` its heat maps and dispersion figure; ``dispersion``, ``tests``,
    ``cells`` and ``minimum`` the analysis's records (``minimum`` empty and ``min_note`` saying
    why when the measure is not a distance from the baseline); ``block`` the whole record.
    """

    title: str
    target: str
    measure: str
    kind: str | None
    figures: list[Any]
    dispersion: list[DispersionRow]
    tests: list[DispersionTest]
    minimum: list[MinimumIdentity]
    min_note: str | None
    cells: list[CellMean]
    note: str | None
    block: TwoPartyBlock = field(repr=False)


# ---------------------------------------------------------------- the ranking design (issue 17)


@dataclass(frozen=True)
class RankingSelectionRow:
    """One group of a ranking section: its selection (top-pick) rate, mean rank and ratio to the
    most selected group with the four-fifths verdict (``below``: the ratio is under 0.8)."""

    group: str
    label: str
    rate: str
    rate_ci: str
    mean_rank: str
    mean_rank_ci: str
    n: int | None
    ratio: str
    ratio_ci: str
    verdict: str
    verdict_word: str
    below: bool


@dataclass(frozen=True)
class RankingSlotRow:
    """One slot (position in the prompt) of a ranking section: its top-pick rate and mean rank."""

    slot: int | None
    rate: str
    rate_ci: str
    mean_rank: str
    mean_rank_ci: str
    n: int | None


@dataclass(frozen=True)
class RankingPairRow:
    """One pairwise comparison of a ranking section (estimate and ``ci`` in percentage points)."""

    id: str | None
    pair: str
    measure: str
    estimate: str
    ci: str
    p: str
    p_adjusted: str
    mcnemar: str
    n: int | None
    verdict: str
    verdict_word: str
    reason: str


@dataclass(frozen=True)
class RankingEvidenceLine:
    """One position of a quoted matched set: the prompt's group at that slot, the answer's at that rank."""

    position: int
    prompt: str
    prompt_group: str
    answer: str
    answer_group: str
    from_slot: str


@dataclass(frozen=True)
class RankingEvidenceView:
    """A quoted matched set of a ranking section (masked), for display; ``ranks``: group -> rank."""

    header: str
    case_id: str
    rows: list[RankingEvidenceLine]
    answer: str
    partial: str
    ranks: dict[str, int]


@dataclass(frozen=True)
class RankingTable:
    """A plain table of a ranking section (how the answers were read, top picks by template, per-name
    rates): ``header`` and ``rows`` already formatted; ``numeric[j]``: column j is right-aligned."""

    title: str
    intro: str
    header: list[str]
    rows: list[list[str]]
    numeric: list[bool]


@dataclass(frozen=True)
class RankingView:
    """One ranking section (design, ranking measure, target) of results.json ``rankings``, for display.

    Texts and numbers formatted for the report's language; ``figures`` the selection and position
    figures (none for the terminal); ``section`` the typed section it shows.
    """

    id: str
    title: str
    intro: str
    headline: str | None
    unparsed: str
    n_unparsed: int
    selection: list[RankingSelectionRow]
    best: str
    ratio_rule: str
    position_intro: str
    slots: list[RankingSlotRow]
    tests: list[str]
    pairs_intro: str
    pairs: list[RankingPairRow]
    notes: list[str]
    figures: list[Any]
    evidence: list[RankingEvidenceView]
    has_evidence: bool
    section: RankingResult = field(repr=False)
    tables: list[RankingTable] = field(default_factory=list)
