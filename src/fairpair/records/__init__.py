"""Typed records every stage passes on: the ground floor (imports nothing else of fairpair).

=============================  ==================================================================
:class:`Case`                  one rendered conversation and its place in the design (``_case``)
:class:`Response` (``Answer``)  one target's stored answer or failure (``_answer``)
:class:`Measurement`           one stored value of one measure, with its :data:`Scale`
:class:`MeasurementColumns`    every measurement row as numpy columns (the analysis's bulk read)
:class:`Results`               ``results.json``: :class:`ComparisonResult` and the other blocks (``_results``)
:class:`RunManifest`           ``manifest.json``: a run's provenance (``_manifest``)
:class:`HumanLabel`            one rater's label of one answer; :class:`LabelSample` its sample (``_labels``)
:class:`RankingResult`         one ranking section of ``results.json`` (``_ranking``)
:class:`Reason`                why a comparison has no verdict, in precedence order (``_reasons``)
=============================  ==================================================================

The store (:mod:`fairpair.store`) reads and writes these records and imports nothing above
them; every other package imports them from here (``tests/test_layers.py``).
"""

from fairpair.records._answer import SCALES, Answer, AnswerToMeasure, Measurement, MeasurementColumns, Response, Scale
from fairpair.records._case import Case, case_from_json, case_json
from fairpair.records._labels import HumanLabel, LabelDesign, LabelSample, SampledAnswer, mean_label
from fairpair.records._manifest import RunManifest
from fairpair.records._ranking import (
                                      RankingNameRate,
                                      RankingParse,
                                      RankingPosition,
                                      RankingRatio,
                                      RankingResult,
                                      RankingSelection,
                                      RankingSlot,
                                      RankingTemplateCounts,
                                      RankingTest,
)
from fairpair.records._reasons import (
                                      REASON_VERDICT,
                                      Reason,
                                      first_reason,
)
from fairpair.records._results import (
                                      RESULTS_SCHEMA,
                                      AnswerStatusBlock,
                                      BinaryDetail,
                                      CellMean,
                                      ComparisonResult,
                                      ContinuousDetail,
                                      Counts,
                                      DiscoveredAxis,
                                      DiscoveredBlock,
                                      DispersionRow,
                                      DispersionTest,
                                      Evidence,
                                      Heterogeneity,
                                      IncompleteRun,
                                      JudgeBlock,
                                      LabelCorrection,
                                      LengthBias,
                                      MinimumIdentity,
                                      OmnibusResult,
                                      PairedTDetail,
                                      PositionBias,
                                      Results,
                                      ScenarioBlock,
                                      ScenarioRow,
                                      SpreadBlock,
                                      TwoPartyBlock,
                                      VariantRow,
                                      incomplete_text,
                                      interval,
                                      num,
                                      results_schema,
)

__all__ = ["REASON_VERDICT", "Reason", "first_reason", "IncompleteRun", "incomplete_text",
           "Case", "case_json", "case_from_json",
           "Response", "Answer", "AnswerToMeasure", "Measurement", "MeasurementColumns", "Scale", "SCALES",
           "RunManifest",
           "HumanLabel", "LabelSample", "SampledAnswer", "LabelDesign", "mean_label",
           "RankingResult", "RankingSelection", "RankingRatio", "RankingTest", "RankingSlot", "RankingPosition",
           "RankingTemplateCounts", "RankingNameRate", "RankingParse",
           "RESULTS_SCHEMA", "Results", "ComparisonResult", "BinaryDetail", "ContinuousDetail", "PairedTDetail",
           "VariantRow", "Heterogeneity", "Evidence", "OmnibusResult", "TwoPartyBlock", "CellMean", "DispersionRow",
           "DispersionTest", "MinimumIdentity", "PositionBias", "LengthBias", "JudgeBlock", "Counts",
           "AnswerStatusBlock", "LabelCorrection", "results_schema", "num", "interval", "ScenarioBlock", "ScenarioRow",
           "SpreadBlock", "DiscoveredAxis", "DiscoveredBlock"]
