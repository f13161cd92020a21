"""Analysis stage: execute the pre-registered plan on a run, compare runs, gate a pipeline.

* :func:`analyze_run` -- the crossed random-effects inference (templates and
  names as random factors, :func:`fairpair.stats.crossed_difference`),
  multiplicity correction and a pass / fail / inconclusive / insufficient
  design verdict per comparison, written
  to ``RUN/results.json`` (schema ``fairpair.results/2``, see
  :mod:`fairpair.records._results` and :func:`results_schema`).
  Every comparison also says where its difference lives (``scenarios``:
  each template's difference, a scenario-level Holm family, the
  heterogeneity guard of the average; ``docs/scenarios.md``), and
  ``generalize.templates: fixed`` makes the verdict a claim about these
  scenarios (:func:`fairpair.stats.scenario_differences`).
* :func:`compare_runs` -- the same battery before and after a change:
  difference-in-differences of each gap, per matched set.
* :func:`gate_exit_code` -- 1 when a primary comparison fails (or is
  inconclusive, has an insufficient design, or got worse than a baseline run,
  when asked), else 0.
* :func:`analyze_ranking` -- the statistics of a ranking design (k candidates
  in one prompt): selection rates, the four-fifths ratio, Cochran's Q,
  Friedman, pairwise comparisons with verdicts, the position effect
  (:class:`RankingAnalysis`, i.e. :class:`fairpair.records.RankingResult`, ``results.json`` key ``rankings``).
* :func:`discover_run` -- ``fairpair discover``: axes of difference found on an exploration part of
  the matched sets and tested on a confirmation part (``results.json`` key ``discovered``, apart
  from the plan); :func:`from_discovered` takes the confirmed ones into the next battery's plan.
* :func:`fairpair.analysis.power.power_plan` -- smallest detectable
  differences for a battery's design (``fairpair plan --power``).
"""

from fairpair._lazy import lazy_getattr
from fairpair.analysis._analyze import analyze_run, load_results
from fairpair.analysis._compare import compare_runs
from fairpair.analysis._gate import gate_exit_code, junit_xml
from fairpair.analysis._ranking import RankingAnalysis, analyze_ranking
from fairpair.records import (
    RESULTS_SCHEMA,
    AnswerStatusBlock,
    CellMean,
    ComparisonResult,
    DispersionRow,
    DispersionTest,
    JudgeBlock,
    LengthBias,
    MinimumIdentity,
    OmnibusResult,
    PositionBias,
    Results,
    ScenarioBlock,
    ScenarioRow,
    SpreadBlock,
    TwoPartyBlock,
    results_schema,
)

# Names fairpair's other packages use, imported from their module on first use (so that
# importing them through the package adds no import cycle and no start-up cost).
_LAZY_EXPORTS = {
    "RESULTS_NAME": "fairpair.analysis._analyze",
    "RULE_NOT_MEASURED": "fairpair.analysis._verdict",
    "comparison_reasons": "fairpair.analysis._why",
    "design_reason_parts": "fairpair.analysis._design",
    "reason_text": "fairpair.analysis._why",
    "design_reason_counts": "fairpair.analysis._design",
    "DISCOVERED_PREFIX": "fairpair.analysis._discover",
    "discover_run": "fairpair.analysis._discover",
    "discover_sizing": "fairpair.analysis._discover",
    "from_discovered": "fairpair.analysis._discover",
    "gate_lines": "fairpair.analysis._gate",
    "gate_outcome": "fairpair.analysis._gate",
    "load_run_data": "fairpair.analysis._data",
    "measure_scale": "fairpair.analysis._data",
    "no_data_clause": "fairpair.analysis._nodata",
    "pairs_for": "fairpair.analysis._data",
    "plan_warnings": "fairpair.analysis._design",
    "planned_comparisons": "fairpair.analysis._analyze",
    "RANKING_MEASURES": "fairpair.analysis._ranking",
    "verdict_reason": "fairpair.analysis._gate",
    "strata_for": "fairpair.analysis._data",
}

__getattr__ = lazy_getattr(__name__, _LAZY_EXPORTS, globals())

__all__ = ["analyze_run", "load_results", "compare_runs", "gate_exit_code", "junit_xml", "Results",
           "ComparisonResult", "results_schema", "RESULTS_SCHEMA", "analyze_ranking", "RankingAnalysis",
           # the records of Results, as the report renders them
           "OmnibusResult", "TwoPartyBlock", "CellMean", "DispersionRow", "DispersionTest", "MinimumIdentity",
           "JudgeBlock", "PositionBias", "LengthBias", "AnswerStatusBlock", "ScenarioBlock", "ScenarioRow",
           "SpreadBlock"]

# the lazily imported names are public too (tests/test_layers.py: a name imported across packages is in __all__)
__all__ += list(_LAZY_EXPORTS)
