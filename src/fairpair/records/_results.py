"""The typed ``results.json`` record (schema ``fairpair.results/2``).

Every field is documented here and in :func:`results_schema` (the JSON schema
generated from these models). The report stage renders this file; field names
are stable within a schema version and a change of meaning bumps it.

Conventions
-----------
* Floats that are undefined (NaN, +/-inf) are written as ``null``.
* Differences are always ``group_a - group_b`` (``group_b`` is the reference
  when the plan names one).
* ``ci`` is ``[low, high]`` at ``confidence_level`` (``1 - alpha``);
  ``equivalence_ci`` is the ``1 - 2*alpha`` interval used for "pass".
* Schema 2 (fairpair 0.x, issue 11): the verdict, ``pvalue`` and the
  intervals come from the crossed random-effects t of
  :func:`fairpair.stats.crossed_difference` (templates and, unless the plan
  declares them fixed, names random); McNemar / Wilcoxon are secondary
  (``binary`` / ``continuous``); a fourth verdict ``insufficient design``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from fairpair.records._ranking import RankingResult

__all__ = [
    "RESULTS_SCHEMA", "Results", "ComparisonResult", "BinaryDetail", "ContinuousDetail", "PairedTDetail",
    "VariantRow", "Heterogeneity", "Evidence", "OmnibusResult", "TwoPartyBlock", "CellMean", "DispersionRow",
    "DispersionTest", "MinimumIdentity", "PositionBias", "LengthBias", "JudgeBlock", "Counts", "AnswerStatusBlock",
    "results_schema", "num", "interval", "IncompleteRun", "incomplete_text", "ScenarioRow", "ScenarioBlock",
    "SpreadBlock",
    "DiscoveredAxis", "DiscoveredBlock",
]

RESULTS_SCHEMA = "fairpair.results/2"
Verdict = Literal["pass", "fail", "inconclusive", "insufficient design", "insufficient labels", "no verdict"]
Interval = list[float | None]


def num(x: Any) -> float | None:
    """A JSON-safe float: ``None`` for None, NaN and infinities."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def interval(ci: Any) -> Interval | None:
    """``[low, high]`` from a ConfidenceInterval or a pair; ``None`` when both limits are undefined."""
    if ci is None:
        return None
    low, high = (num(v) for v in ci)
    return None if low is None and high is None else [low, high]


class _Rec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BinaryDetail(_Rec):
    """McNemar details for a yes/no measure.

    ``table`` is ``[[yes-yes, yes-no], [no-yes, no-no]]`` (rows: group A's
    answer, columns: group B's); ``b`` = A yes / B no, ``c`` = A no / B yes
    (the discordant pairs). Secondary statistics: they treat the pairs as
    independent and do not drive the verdict. Both the exact binomial and
    the chi-square with Edwards's continuity correction are reported;
    ``mcnemar_method`` / ``mcnemar_pvalue``: exact below ``exact_threshold``
    discordant pairs, else the chi-square *without* correction (Fagerland et
    al. 2013). ``odds_ratio`` is the matched-pairs ``b / c`` with its
    exact conditional CI; ``newcombe_ci`` is the unclustered paired interval
    of the risk difference (Newcombe 1998), for reference.
    """

    table: list[list[int]]
    b: int
    c: int
    exact_threshold: int
    exact_pvalue: float | None
    chi2_statistic: float | None
    chi2_pvalue: float | None
    odds_ratio: float | None
    odds_ratio_ci: Interval | None
    newcombe_ci: Interval | None
    mcnemar_method: str | None = None
    mcnemar_pvalue: float | None = None


class PairedTDetail(_Rec):
    """Paired t-test on ``x - y`` (secondary to the Wilcoxon test)."""

    statistic: float | None
    pvalue: float | None
    df: float | None
    mean_difference: float | None
    ci: Interval | None


class ContinuousDetail(_Rec):
    """Wilcoxon signed-rank details for continuous, count and ordinal measures.

    ``zero_method`` is ``"pratt"`` (Pratt 1959: zero differences are ranked
    and their ranks then dropped). ``hodges_lehmann`` is the median of Walsh
    averages with its distribution-free CI; ``rank_biserial`` is the
    matched-pairs rank-biserial correlation in [-1, 1] (Kerby 2014).
    Secondary statistics (pairs treated as independent; not the verdict's).
    """

    zero_method: str
    n_zero: int
    median_difference: float | None
    hodges_lehmann: float | None
    hodges_lehmann_ci: Interval | None
    rank_biserial: float | None
    paired_t: PairedTDetail
    wilcoxon_statistic: float | None = None
    wilcoxon_pvalue: float | None = None


class VariantRow(_Rec):
    """One variant pair (e.g. ``Fatima / Lucia``): its paired effect and CI (Newcombe or t)."""

    variant: str
    n: int
    effect: float | None
    ci: Interval | None
    b: int | None = None
    c: int | None = None


class Heterogeneity(_Rec):
    """Test that the names within each group do not differ (:func:`fairpair.stats.names_heterogeneity`).

    ``F = MS names-within-groups / MS template x name interaction`` on cell
    means, df ``df`` and ``df_denominator``: the repetitions of a cell do not
    count as independent evidence.
    """

    statistic: float | None
    pvalue: float | None
    df: int
    method: str
    df_denominator: float | None = None
    note: str | None = None


class Evidence(_Rec):
    """A matched set whose two answers differ: for the report to quote."""

    matched_set: str
    case_a: str
    case_b: str
    value_a: float | None
    value_b: float | None


class ScenarioRow(_Rec):
    """One template (scenario) of a comparison: its difference ``group_a - group_b`` and verdict.

    ``estimate`` / ``ci`` / ``pvalue`` from :func:`fairpair.stats.scenario_differences` (this template's
    names, names random or fixed as the comparison); ``pvalue_adjusted`` / ``pvalue_margin_adjusted``:
    Holm over the comparison's templates (the scenario-level family), or over the plan's primary tests
    with ``by: template``; ``verdict`` by the comparison's rule and margin; ``outlier``: the generalized
    ESD singles it out from the other templates (:func:`fairpair.stats.scenario_heterogeneity`).
    """

    template: str
    estimate: float | None
    se: float | None
    ci: Interval | None
    equivalence_ci: Interval | None
    pvalue: float | None
    pvalue_adjusted: float | None
    pvalue_margin_adjusted: float | None = None
    n_names_a: int
    n_names_b: int
    verdict: Verdict
    outlier: bool = False


class ScenarioBlock(_Rec):
    """Where a comparison's difference lives: every scenario's difference and the spread between them.

    ``rows``: one :class:`ScenarioRow` per template with answers from both groups; ``df``: their
    t's degrees of freedom; ``correction`` / ``family_size``: the scenario-level family (secondary:
    Holm over this comparison's templates; ``by_template``: primary). ``average`` / ``average_ci``:
    the average over these templates (templates fixed). ``share`` / ``share_ci``: the template x group
    variance share ``I^2`` with its interval and ``heterogeneity_pvalue`` its F test; ``outlier_pvalue``:
    the generalized ESD's (Rosner 1983) for a few outlying templates; ``without_outliers``: the average
    over the other templates; ``heterogeneous``: the guard holds the templates-random average back
    from ``pass`` (outlier p-value below :data:`fairpair.analysis._paired.HETEROGENEITY_CUTOFF`).
    ``summary``: the scenario-level finding in one sentence (English; the report words it in its
    language).
    """

    names: Literal["random", "fixed"]
    df: float | None
    correction: str
    family_size: int
    by_template: bool = False
    rows: list[ScenarioRow]
    average: float | None
    average_ci: Interval | None
    share: float | None = None
    share_ci: Interval | None = None
    heterogeneity_pvalue: float | None = None
    outlier_pvalue: float | None = None
    outliers: list[str] = Field(default_factory=list)
    without_outliers: float | None = None
    heterogeneous: bool = False
    summary: str = ""
    note: str | None = None

    def deciding(self, verdict: str | None) -> list[ScenarioRow]:
        """The scenarios that decide a ``by: template`` verdict (the evidence to print beside it, never the
        average's): for ``fail`` the failing ones; for ``inconclusive`` the ones that do not pass; for
        ``pass`` (every scenario passes) the one with the largest Holm-adjusted p against the margin (the
        nearest to not passing). Empty without rows."""
        if verdict == "fail":
            return [r for r in self.rows if r.verdict == "fail"]
        if verdict == "inconclusive":
            return [r for r in self.rows if r.verdict != "pass"]
        if verdict == "pass" and self.rows:
            return [max(self.rows, key=lambda r: -1.0 if r.pvalue_margin_adjusted is None
                        else r.pvalue_margin_adjusted)]
        return []

    def evidence(self, verdict: str | None, *, binary: bool, level: float) -> str:
        """The deciding scenarios (:meth:`deciding`) in one English line, each with its estimate, its ``level``
        interval (a fraction, 0.95) and its p-value raw and Holm-adjusted within the scenario family, e.g.
        ``scenario `garantia`: -100.0 points (95% CI -120.0 to -80.0), p<0.001, holm-adjusted 0.002 within the
        scenario family``; binary differences in points. Empty without a deciding scenario."""

        def num(x: float | None) -> str:
            return "n/a" if x is None else (f"{100 * x:+.1f} points" if binary else f"{x:+.3g}")

        def p(x: float | None) -> str:
            return "n/a" if x is None else (f"{x:.3g}" if x >= 0.001 else "<0.001")

        out = []
        for r in self.deciding(verdict):
            lo, hi = (None, None) if r.ci is None else tuple(r.ci)
            ci = "CI n/a" if lo is None or hi is None else \
                (f"CI {100 * lo:+.1f} to {100 * hi:+.1f}" if binary else f"CI {lo:+.3g} to {hi:+.3g}")
            raw = p(r.pvalue)
            out.append(f"scenario `{r.template}`: {num(r.estimate)} ({100 * level:g}% {ci}), "
                       f"p{raw if raw.startswith('<') else '=' + raw}, holm-adjusted {p(r.pvalue_adjusted)} "
                       "within the scenario family")
        return "; ".join(out)


class SpreadBlock(_Rec):
    """The difference in within-cell spread between the groups (a secondary statistic; never the verdict's).

    For count, continuous and 1-5 measures with at least two answers in some template x name cells:
    ``sd_a`` / ``sd_b`` each group's mean unbiased within-cell standard deviation (the repetitions of
    one template and name; measure units), ``estimate`` the log ratio ``log(sd_a / sd_b)`` (natural
    log) and ``ratio`` its ``exp``; ``ci`` / ``ratio_ci`` the ``confidence_level`` intervals of both
    (Fieller's; a ``null`` limit: unbounded on that side); ``df`` / ``statistic`` / ``pvalue`` the
    crossed t of ``sd_a - sd_b`` (templates and, unless fixed, names random;
    :func:`fairpair.stats.spread_difference`), ``se`` the delta-method standard error of ``estimate``
    (scale only); ``pvalue_adjusted`` over the
    target's spread tests of the same family (``correction``, ``family_size`` tests). ``verdict``:
    ``fail`` (the spreads differ: adjusted p < alpha; with ``max_sd_ratio``, beyond it),
    ``pass`` (only with the plan's ``max_sd_ratio``: the ``1 - 2 alpha`` interval of the ratio inside
    ``[1 / max_sd_ratio, max_sd_ratio]``), ``inconclusive`` or ``insufficient design``
    (``design_reason``); it never changes the comparison's verdict or the gate. ``n_cells``: cells
    with at least two answers.
    """

    estimate: float | None
    ratio: float | None
    ci: Interval | None
    ratio_ci: Interval | None
    sd_a: float | None
    sd_b: float | None
    se: float | None
    df: float | None
    statistic: float | None
    pvalue: float | None
    pvalue_adjusted: float | None = None
    correction: str = ""
    family_size: int = 1
    n_templates: int
    n_cells: int
    #: the plan's largest tolerated SD ratio (the spread margin; None: the spread cannot pass)
    max_sd_ratio: float | None = None
    #: the 1 - 2 alpha interval of the ratio that ``pass`` needs inside [1 / max_sd_ratio, max_sd_ratio]
    equivalence_ratio_ci: Interval | None = None
    #: p-value against a ratio within [1 / max_sd_ratio, max_sd_ratio], raw and adjusted over the family
    pvalue_margin: float | None = None
    pvalue_margin_adjusted: float | None = None
    verdict: Verdict
    verdict_rule: str
    design_reason: str | None = None
    method: str
    note: str | None = None


class LabelCorrection(_Rec):
    """A judge-measured comparison corrected by human labels (:mod:`fairpair.analysis._corrected`).

    The comparison's ``estimate`` / ``ci`` / ``pvalue`` / ``verdict`` are then the corrected ones
    (prediction-powered inference on the crossed design); this block keeps the judge's own figures:
    ``raw_estimate`` / ``raw_ci`` / ``raw_pvalue`` / ``raw_value_a`` / ``raw_value_b`` (the judge's
    scores alone, as an uncorrected audit reports them). ``lam``: PPI++'s power tuning in [0, 1] (0:
    the labels alone; 1: classical PPI). ``n_labels`` (``_a`` / ``_b``): labelled answers of the
    comparison (several raters of one answer count once, as their mean). ``judge_error_a`` / ``_b``:
    the judge's mean error (judge minus human) on each group's labelled answers, in the measure's
    units. ``min_labels``: below it the verdict is ``insufficient labels``. Yes/no judges:
    ``rogan_gladen_estimate`` / ``rogan_gladen_ci`` (Rogan & Gladen 1978 with each group's
    sensitivity and specificity; the interval includes the calibration sample, Lee et al. 2025) and
    the groups' ``sensitivity_*`` / ``specificity_*``; a yes/no judge that gives probabilities has none, and
    ``rogan_gladen_note`` says why.
    """

    raw_estimate: float | None
    raw_ci: Interval | None
    raw_pvalue: float | None = None
    raw_value_a: float | None = None
    raw_value_b: float | None = None
    lam: float | None
    n_labels: int
    n_labels_a: int
    n_labels_b: int
    judge_error_a: float | None
    judge_error_b: float | None
    min_labels: int
    method: str
    rogan_gladen_estimate: float | None = None
    rogan_gladen_ci: Interval | None = None
    rogan_gladen_note: str | None = None
    sensitivity_a: float | None = None
    specificity_a: float | None = None
    sensitivity_b: float | None = None
    specificity_b: float | None = None


class ComparisonResult(_Rec):
    """One pre-registered comparison of two groups, for one target and one design.

    ``estimate`` is the risk difference (binary) or mean difference
    (continuous) ``group_a - group_b``: the mean over templates of the
    difference between the groups' name-averaged cell means; ``value_a`` /
    ``value_b`` the two terms. ``names`` is the pre-registered estimand
    (``random``: generalises to other names of the groups; ``fixed``: these
    names), ``templates`` the same for scenarios (``fixed``: these templates,
    :func:`fairpair.stats.scenario_differences`), ``estimand`` says it in words. ``statistic`` is the crossed t,
    ``df`` its Satterthwaite degrees of freedom, ``se`` its standard error
    and ``variance_components`` the contributions of templates and names
    to ``se**2`` (:func:`fairpair.stats.crossed_difference`); ``ci``,
    ``equivalence_ci`` and ``pvalue`` all come from that t (``equivalence_ci``
    is its hull with Hall's (1992) skewness-corrected t, see ``ci_method``). ``n_clusters``
    counts templates, ``n_names_a`` / ``n_names_b`` names. ``pvalue_adjusted``
    from ``correction`` over the family (primary comparisons of the target;
    ``family_size`` tests); ``pvalue_margin`` / ``pvalue_margin_adjusted``:
    the same t against ``|difference| <= margin`` (equal to ``pvalue`` without
    a margin), raw and adjusted over the family; a ``fail`` needs it below
    alpha. ``design_reason`` says why the verdict is
    ``insufficient design`` (and what to change). ``verdict_rule`` states
    how ``verdict`` was reached (see :mod:`fairpair.analysis._verdict`).
    ``n_resamples`` / ``seed`` are the plan's (the bootstrap is used by the
    two-party designs only).
    """

    id: str
    target: str
    measure: str
    scale: str
    attribute: str
    design: str
    group_a: str
    group_b: str
    primary: bool
    n_pairs: int
    n_dropped: int
    n_clusters: int
    n_names_a: int = 0
    n_names_b: int = 0
    names: Literal["random", "fixed"] = "random"
    templates: Literal["random", "fixed"] = "random"
    estimand: str = ""
    df: float | None = None
    se: float | None = None
    variance_components: dict[str, float | None] = Field(default_factory=dict)
    design_reason: str | None = None
    value_kind: Literal["rate", "mean"]
    value_a: float | None
    value_b: float | None
    estimate: float | None
    estimate_name: str
    ci: Interval | None
    equivalence_ci: Interval | None
    confidence_level: float
    ci_method: str
    n_resamples: int
    seed: int
    test: str
    statistic: float | None
    pvalue: float | None
    pvalue_adjusted: float | None
    correction: str
    family_size: int
    alpha: float
    margin: float | None
    verdict: Verdict
    pvalue_margin: float | None = None
    pvalue_margin_adjusted: float | None = None
    verdict_rule: str
    #: Why there is no verdict or only an ``inconclusive`` one, highest precedence first
    #: (:class:`fairpair.records.Reason` values; empty for a ``pass`` or ``fail`` of a complete run).
    reasons: list[str] = Field(default_factory=list)
    #: The first of ``reasons`` in words, with the numbers that decided it (:mod:`fairpair.analysis._why`).
    reason: str | None = None
    note: str | None = None
    binary: BinaryDetail | None = None
    continuous: ContinuousDetail | None = None
    per_variant: list[VariantRow] = Field(default_factory=list)
    heterogeneity: Heterogeneity | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    #: Where the difference lives: per-scenario differences, the scenario-level family, the guard.
    scenarios: ScenarioBlock | None = None
    #: The difference in within-cell spread (count, continuous and 1-5 measures; secondary).
    spread: SpreadBlock | None = None
    #: Share of group A's and group B's answers missing (not answered, measurement missing or failed).
    missing_shares: list[float | None] | None = None
    #: Worst-case bounds of the estimate (Manski 1990): the missing answers at either end of the scale.
    missing_bounds: Interval | None = None
    #: Missingness differs by group (McNemar's exact test on the matched sets, p < alpha): the note says so,
    #: bounds that cross the margin mean the comparison cannot pass, and bounds not beyond it that it
    #: cannot fail.
    missing_informative: bool = False
    #: Human labels corrected the judge (:class:`LabelCorrection`): the figures above are the corrected ones.
    label_correction: LabelCorrection | None = None
    #: Why the labels are too few for a corrected verdict (verdict ``insufficient labels``).
    labels_reason: str | None = None


class OmnibusResult(_Rec):
    """Test that all the comparison's groups (> 2) share one mean, with the comparisons' structure.

    ``test`` / ``statistic`` / ``pvalue`` / ``df`` / ``df_denominator``: the
    F test (names fixed) or Clark's quasi-F (names random) on template x name
    cell means (:func:`fairpair.stats.crossed_omnibus`). Cochran's Q
    (binary) or Friedman (continuous) on the matched sets is reported as
    ``secondary_*`` (it treats the sets as independent).
    """

    id: str
    target: str
    measure: str
    design: str
    attribute: str
    groups: list[str]
    test: str
    statistic: float | None
    pvalue: float | None
    df: float | None
    n_sets: int
    n_dropped: int
    values: dict[str, float | None]
    note: str | None = None
    df_denominator: float | None = None
    names: Literal["random", "fixed"] = "random"
    secondary_test: str | None = None
    secondary_statistic: float | None = None
    secondary_pvalue: float | None = None


class CellMean(_Rec):
    """Mean of a measure in one SUB x RES cell of an axis, with a CI resampling scenes."""

    axis: str
    sub: str
    res: str
    condition: str | None
    n: int
    mean: float | None
    ci: Interval | None


class DispersionRow(_Rec):
    """Tan & Lee (2025) dispersion (SD of cell means, ``ddof``, averaged over axes) in one power condition.

    ``statistic`` / ``per_axis`` / ``ci`` are the paper's raw statistic (it
    reproduces their Table 6) and grow with answer noise alone; ``corrected``
    / ``corrected_per_axis`` / ``corrected_ci`` remove each cell mean's
    sampling variance (``noise_per_axis``, estimated from the scene x cell
    interaction; :func:`fairpair.stats.corrected_dispersion`) and are the
    figures to read.
    """

    condition: str | None
    statistic: float | None
    per_axis: dict[str, float | None]
    ci: Interval | None
    ddof: int
    n_scenes: int
    note: str | None = None
    corrected: float | None = None
    corrected_per_axis: dict[str, float | None] = Field(default_factory=dict)
    corrected_ci: Interval | None = None
    noise_per_axis: dict[str, float | None] = Field(default_factory=dict)


class DispersionTest(_Rec):
    """Permutation test of the difference in dispersion between two power conditions.

    ``paired`` is true when it swaps conditions within matched scenes (meta
    ``scene``); false (flagged in ``note``) when scenes are not matched and
    condition labels are permuted across scenes instead.
    """

    condition_a: str
    condition_b: str
    statistic: float | None
    pvalue: float | None
    paired: bool
    n_scenes: int
    n_resamples: int
    method: str
    note: str | None = None
    statistic_kind: Literal["raw", "noise-corrected"] = "raw"


class MinimumIdentity(_Rec):
    """The prompt that changes the answer least: lowest mean of the measure on an axis and side.

    ``stability`` is the share of scene resamples in which the same identity
    stays the minimum; the test compares it with the runner-up over matched
    scenes. This says which explicit identity prompt moves the answer least
    from the baseline; it does not show that the model adopts that identity
    by default.
    """

    axis: str
    side: Literal["sub", "res"]
    condition: str | None
    identity: str
    mean: float | None
    runner_up: str | None
    runner_up_mean: float | None
    stability: float | None
    test: str | None
    pvalue: float | None
    wording: str


class TwoPartyBlock(_Rec):
    """SUB x RES persona design results for one target and measure."""

    target: str
    measure: str
    design: str
    cells: list[CellMean]
    dispersion: list[DispersionRow]
    dispersion_tests: list[DispersionTest]
    minimum: list[MinimumIdentity]
    n_resamples: int
    seed: int
    note: str | None = None


class PositionBias(_Rec):
    """Position bias of a pairwise judge (``fairpair.measures.position_bias``; Zheng et al. 2023, sec. 3.3).

    ``share_first``: share of decisive verdicts preferring the answer shown
    first (0.5 = none), with the exact binomial ``pvalue`` against 0.5;
    ``consistency``: share of items whose two orders agree; ``n_items``.
    """

    share_first: float | None
    pvalue: float | None
    consistency: float | None
    n_items: int


class LengthBias(_Rec):
    """A pairwise judge's preference against the answers' lengths (:func:`fairpair.measures.length_bias`).

    ``share_longer``: of the decisive preferences between answers of different length, the share for the
    longer one (0.5 = chance), with its sign-test ``pvalue``; mean word counts of the answer under test
    and of its counterpart, and their mean difference, beside the mean preference.
    """

    share_longer: float | None
    pvalue: float | None
    n_items: int
    mean_words_answer: float | None
    mean_words_counterpart: float | None
    mean_difference: float | None


class JudgeBlock(_Rec):
    """What the measures stage recorded about LLM judges.

    ``judge``: the judge's identity (store event ``judge``) or the battery's
    ``judge:`` block; ``invalid_outputs``: measure -> judge outputs that
    failed validation (``measure_finished`` events, retries included);
    ``leaks``: measure -> judge calls refused because a group signal
    survived masking; ``position_bias``: pairwise measure -> its position
    bias; ``self_judging``: the judge is the same system as a target (store
    event ``self_judging``, allowed by ``allow_self_judging``);
    ``warnings``: sentences for the report; ``events``: the judge-related
    store events as recorded; ``self_test``: per judge measure, the latest
    judge self-test (store event ``judge_self_test``: status ``passed``,
    ``failed``, ``not_tested`` or ``off``, the rank agreements and failures;
    :mod:`fairpair.measures._selftest`), without the per-anchor outputs.
    """

    judge: dict[str, Any] | None
    invalid_outputs: dict[str, int]
    leaks: dict[str, int]
    position_bias: dict[str, PositionBias]
    self_judging: bool
    warnings: list[str]
    events: list[dict[str, Any]]
    length_bias: dict[str, LengthBias] = Field(default_factory=dict)
    self_test: list[dict[str, Any]] = Field(default_factory=list)


class Counts(_Rec):
    """Per target: cases, answered, failed (no answer), measured (ok), missing (measurement missing/failed), leaks."""

    cases: int
    answered: int
    failed: int
    measured: int
    missing: int
    leaks: int


class AnswerStatusBlock(_Rec):
    """Per target: the answer statuses (:mod:`fairpair.measures.status`).

    ``counts``: status -> cases over ``n`` cases with a final outcome;
    ``usable_share``: share ``ok``; ``mostly_degenerate``: above
    ``DEGENERATE_WARNING_SHARE`` (the report opens with ``warning``);
    ``by_group``: attribute -> group -> status -> rate (over that group's
    cases with a final outcome); ``examples``: up to three (case id, status,
    excerpt); ``cases``: status -> the ids of the cases with it, for every
    status but ``ok`` (the report reads them instead of computing every
    answer's status again; None when not recorded).
    """

    counts: dict[str, int]
    n: int
    usable_share: float | None
    mostly_degenerate: bool
    warning: str | None = None
    by_group: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    examples: list[list[str]] = Field(default_factory=list)
    cases: dict[str, list[str]] | None = None


class IncompleteRun(_Rec):
    """A run that has not stored every case's outcome: ``answered`` of ``cases`` (summed over the
    targets; a case whose every attempt failed counts as done), ``command`` resumes it. Every
    comparison of such a run carries the reason ``incomplete run`` first."""

    answered: int
    cases: int
    command: str

    def text(self, lang: str = "en") -> str:
        """``run incomplete: 726 of 2,400 answered; resume with `fairpair run ...```."""
        return incomplete_text(self.answered, self.cases, self.command, lang)


_INCOMPLETE = {"en": "run incomplete: {answered} of {cases} answered; resume with `{command}`",
               "es": "run incompleto: {answered} de {cases} respondidos; reanuda con `{command}`"}


def incomplete_text(answered: int, cases: int, command: str, lang: str = "en") -> str:
    """``run incomplete: 726 of 2,400 answered; resume with `fairpair run ...``` (``es``: ``2.400``): the
    headline of an incomplete run in every output."""
    def n(x: int) -> str:
        s = f"{x:,}"
        return s.replace(",", ".") if lang == "es" else s

    return _INCOMPLETE.get(lang, _INCOMPLETE["en"]).format(answered=n(answered), cases=n(cases), command=command)


class DiscoveredAxis(_Rec):
    """One axis of difference that ``fairpair discover`` found on the exploration part of a run and
    tested on the confirmation part (``docs/discover.md``).

    ``how``: ``words`` (a phrase picked by the log-odds ratio with an informative Dirichlet prior,
    Monroe, Colaresi & Quinn 2008) or ``model`` (a yes/no question proposed by a blind model);
    ``measure``: the stored measure (``discovered.<name>``), whose definition is ``spec`` (an ordinary
    measure block of the battery fragment); ``exploration``: what picked it (the phrase's answers per
    group, its z-score; or how many of the proposer's calls asked it); ``direction``: the group the
    exploration saw it more in (``None`` for a model axis, whose direction was not seen);
    ``confirmation``: the crossed test on the confirmation part (``pvalue_adjusted``: Holm over the
    target's discovered family; a words axis one-sided, in the exploration's direction);
    ``confirmed``: that p-value is below alpha."""

    name: str
    how: Literal["words", "model"]
    measure: str
    spec: dict[str, Any]
    target: str
    attribute: str
    design: str
    group_a: str
    group_b: str
    direction: str | None = None
    exploration: dict[str, Any] = Field(default_factory=dict)
    confirmation: ComparisonResult | None = None
    confirmed: bool = False


class DiscoveredBlock(_Rec):
    """The ``discovered`` section of ``results.json``: the axes ``fairpair discover`` found and
    confirmed, kept apart from the pre-registered comparisons (they never change a verdict or the gate).

    ``split``: the recorded random split (``seed``; ``names``, the estimand's; per part, its templates,
    names and matched sets); ``passes``: the passes that ran (``words``, ``model``);
    ``n_answers``: answers read per part; ``design_notes``: a part that misses the estimand's design
    minimums; ``fragment``: the battery fragment written (relative to the run directory)."""

    seed: int
    names: Literal["random", "fixed"]
    passes: list[str]
    split: dict[str, Any]
    n_answers: dict[str, int]
    alpha: float
    correction: str
    axes: list[DiscoveredAxis]
    design_notes: list[str] = Field(default_factory=list)
    fragment: str | None = None
    notes: list[str] = Field(default_factory=list)

    def confirmed(self) -> list[DiscoveredAxis]:
        return [a for a in self.axes if a.confirmed]


class Results(_Rec):
    """The whole analysis of a run: written to ``RUN/results.json``.

    ``plan_sha256`` is the plan registered before any answer was sent;
    ``plan_sha256_now`` the plan executed (the recorded battery's), and
    ``plan_changed`` is true exactly when the two differ. ``plan_edits_refused``
    counts the batteries with an edited plan offered to the run directory
    later and refused (their edits not used; they do not set ``plan_changed``).
    """

    schema_: str = Field(RESULTS_SCHEMA, alias="schema")
    fairpair_version: str
    created_at: str
    run_dir: str
    battery: str
    battery_sha256: str
    plan_sha256: str | None
    plan_sha256_now: str | None
    plan_changed: bool
    plan_edits_refused: int = 0
    alpha: float
    correction: str
    confidence_level: float
    n_resamples: int
    seed: int
    fail_on_inconclusive: bool
    fail_on_insufficient: bool = False
    names: Literal["random", "fixed"] = "random"
    templates: Literal["random", "fixed"] = "random"
    targets: list[str]
    measures: dict[str, str]
    comparisons: list[ComparisonResult]
    omnibus: list[OmnibusResult]
    two_party: list[TwoPartyBlock]
    judge: JudgeBlock
    counts: dict[str, Counts]
    notes: list[str]
    answer_statuses: dict[str, AnswerStatusBlock] = Field(default_factory=dict)
    #: A/A controls (design ``aa_control``): each measure compared between two halves of one
    #: group's variants, analysed as the real comparisons (Holm within the controls).
    aa_controls: list[ComparisonResult] = Field(default_factory=list)
    #: Set when an A/A control fails: the system's answers or the analysis do not behave as the test assumes.
    aa_flag: str | None = None
    #: Ranking designs (issue 17): per design, ranking measure and target, the ranking statistics
    #: (:meth:`fairpair.records.RankingResult.to_dict`; typed: :meth:`ranking_results`).
    rankings: list[dict[str, Any]] = Field(default_factory=list)
    #: Set when the run has not stored every case's outcome (the verdicts are of the answers so far).
    incomplete: IncompleteRun | None = None
    #: ``fairpair discover``: axes found on the exploration part and tested on the confirmation part,
    #: apart from the pre-registered comparisons (never a verdict of the plan or the gate).
    discovered: DiscoveredBlock | None = None

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    def primary(self) -> list[ComparisonResult]:
        return [c for c in self.comparisons if c.primary]

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)

    def ranking_results(self) -> list[RankingResult]:
        """``rankings`` as typed :class:`~fairpair.records.RankingResult` records (one per design,
        ranking measure and target), in file order.

        Raises
        ------
        pydantic.ValidationError
            A section is not a ranking section.
        """
        from fairpair.records._ranking import RankingResult  # defined after Results: it holds ComparisonResults

        return [RankingResult.model_validate(r) for r in self.rankings]


def results_schema() -> dict[str, Any]:
    """The JSON schema of ``results.json`` (generated from :class:`Results`)."""
    schema = Results.model_json_schema(by_alias=True)
    schema["$id"] = RESULTS_SCHEMA
    return schema
