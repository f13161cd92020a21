"""Paired statistics for counterfactual audits: pure arrays in, result objects out.

Every test returns a frozen result object (``statistic``, ``pvalue``,
``method``, the counts it used, a ``note`` for degenerate input and, where it
makes sense, ``confidence_interval(confidence_level=0.95)``), never a tuple.

========================================  ===========================================
Paired binary outcomes                    :func:`mcnemar`, :func:`mcnemar_table`
Paired continuous outcomes                :func:`wilcoxon` (+ Hodges-Lehmann), :func:`paired_t`
Paired k-outcome decisions                :func:`stuart_maxwell`, :func:`bowker`, :func:`category_tests`
k matched groups                          :func:`cochran_q`, :func:`friedman`
Distinguishing words                      :func:`fightin_words` (log-odds ratio, informative Dirichlet prior)
Multiple testing                          :func:`adjust`, :func:`holm`, :func:`benjamini_hochberg`
Clustered data (templates)                :func:`cluster_bootstrap`, :func:`cluster_bootstrap_risk_difference`,
                                          :func:`cluster_bootstrap_mean_difference`
Equivalence and verdicts                  :func:`verdict`, :func:`equivalence_verdict`, :func:`tost_paired`,
                                          :func:`significant`
Planning                                  :func:`pairs_needed`, :func:`mcnemar_power`, :func:`paired_power`,
                                          :func:`min_detectable_effect`, :func:`min_detectable_risk_difference`,
                                          :func:`design_effect`; crossed designs: :func:`crossed_power`,
                                          :func:`crossed_variance`, :func:`estimate_variance_components`
Dispersion (Tan & Lee 2025)               :func:`cell_means`, :func:`cell_means_bootstrap`, :func:`dispersion`,
                                          :func:`dispersion_bootstrap`,
                                          :func:`dispersion_permutation_test` (matched scenes),
                                          :func:`unpaired_dispersion_permutation_test` (different scenes),
                                          :func:`paired_permutation_test`, :func:`least_change_identity`,
                                          :func:`corrected_dispersion` (answer noise removed)
Crossed designs (templates x names)       :func:`crossed_difference`, :func:`crossed_from_cells`,
                                          :func:`crossed_omnibus`, :func:`names_heterogeneity`,
                                          :func:`logit_interval`, :func:`null_variance_interval` (bounded
                                          measures' pass rule)
Within-cell spread                        :func:`spread_difference`, :func:`spread_from_cells`, :func:`cell_sds`
Scenarios (templates fixed)               :func:`scenario_differences` (per template and the average over these
                                          templates), :func:`scenario_heterogeneity`
Variant heterogeneity                     :func:`variant_heterogeneity`
Ranking design (k candidates, one prompt) :func:`crossed_mean`, :func:`set_mean` (templates random or fixed),
                                          :func:`paired_difference`, :func:`selection_ratio`,
                                          :func:`ratio_to_best` (four-fifths rule), :func:`crossed_k_test`,
                                          :func:`position_effect`
Intervals                                 :func:`wilson_interval`, :func:`t_interval`
A judge corrected by human labels        :func:`ppi_difference` (PPI++ on the crossed design), :func:`ppi_values`,
                                          :func:`ppi_tuning`, :func:`ppi_crossfit`, :func:`judge_error_by_group`,
                                          :func:`stratum_inclusion`, :func:`rogan_gladen`,
                                          :func:`rogan_gladen_difference` (yes/no judges), :func:`labels_needed`
Inter-rater agreement                     :func:`cohen_kappa` (weighted too), :func:`fleiss_kappa`,
                                          :func:`krippendorff_alpha`, :func:`confusion_matrix`,
                                          :func:`landis_koch`
========================================  ===========================================

Depends on numpy and scipy only (pandas objects are accepted, never imported).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fairpair._lazy import lazy_getattr

# Public name -> private module. Submodules (and scipy.stats, ~1 s) load on
# first use, so ``import fairpair.stats`` stays instant for the CLI.
_LAZY = {
    "_agreement": ("CohenKappaResult", "ConfusionMatrixResult", "FleissKappaResult", "KrippendorffAlphaResult",
                   "cohen_kappa", "confusion_matrix", "fleiss_kappa", "krippendorff_alpha", "landis_koch"),
    "_bootstrap": ("BootstrapResult", "cluster_bootstrap", "cluster_bootstrap_mean_difference",
                   "cluster_bootstrap_risk_difference", "FewClustersWarning", "MIN_CLUSTERS_FOR_INTERVAL"),
    "_categorical": ("CategoryTest", "SquareTableResult", "bowker", "category_tests", "square_table",
                     "stuart_maxwell"),
    "_common": ("ConfidenceInterval", "t_interval", "wilson_interval"),
    "_bounded": ("logit_interval", "null_variance_interval"),
    "_crossed": ("CrossedDifferenceResult", "CrossedFResult", "crossed_difference", "crossed_from_cells",
                 "crossed_omnibus", "names_heterogeneity"),
    "_dispersion": ("CorrectedDispersionResult", "corrected_dispersion", "CellMeansResult", "DispersionResult",
                    "LeastChangeResult", "PermutationTestResult", "cell_means",
                    "cell_means_bootstrap", "dispersion", "dispersion_bootstrap", "dispersion_permutation_test",
                    "least_change_identity", "paired_permutation_test", "unpaired_dispersion_permutation_test"),
    "_equivalence": ("TostResult", "Verdict", "equivalence_verdict", "significant", "tost_paired", "verdict"),
    "_fightin": ("FightinWordsResult", "fightin_words"),
    "_heterogeneity": ("HeterogeneityResult", "VariantEffect", "variant_heterogeneity"),
    "_mcnemar": ("McNemarResult", "mcnemar", "mcnemar_table"),
    "_multitest": ("adjust", "benjamini_hochberg", "holm", "verdict_alphas"),
    "_omnibus": ("CochranQResult", "FriedmanResult", "cochran_q", "friedman"),
    "_power": ("PowerResult", "design_effect", "mcnemar_power", "min_detectable_effect",
               "min_detectable_risk_difference", "paired_power", "pairs_needed", "CrossedPowerResult",
               "VarianceComponents", "crossed_power", "crossed_variance", "estimate_variance_components"),
    "_ppi": ("judge_error_by_group", "ppi_crossfit", "labels_needed", "PPIDifferenceResult", "RoganGladenResult",
             "RoganGladenDifferenceResult", "ppi_difference",
             "ppi_tuning", "ppi_values", "rogan_gladen", "rogan_gladen_difference", "stratum_inclusion"),
    "_ranking": ("CrossedMeanResult", "SelectionRatioResult", "RatioToBest", "SlotEffect", "PositionEffectResult",
                 "crossed_mean", "set_mean", "paired_difference", "selection_ratio", "ratio_to_best", "crossed_k_test",
                 "set_k_test", "stratified_k_test", "position_effect", "FOUR_FIFTHS"),
    "_scenarios": ("ScenarioDifferencesResult", "ScenarioHeterogeneityResult", "scenario_differences",
                   "scenario_differences_from_cells", "scenario_heterogeneity", "score_interval", "score_restricted",
                   "score_se", "stratified_difference"),
    "_spread": ("SpreadDifferenceResult", "spread_difference", "spread_from_cells", "cell_sds"),
    "_signed_rank": ("PairedTResult", "WilcoxonResult", "paired_t", "wilcoxon"),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from fairpair.stats._agreement import (  # noqa: F401
        CohenKappaResult,
        ConfusionMatrixResult,
        FleissKappaResult,
        KrippendorffAlphaResult,
        cohen_kappa,
        confusion_matrix,
        fleiss_kappa,
        krippendorff_alpha,
        landis_koch,
    )
    from fairpair.stats._bootstrap import (  # noqa: F401
        MIN_CLUSTERS_FOR_INTERVAL,
        BootstrapResult,
        FewClustersWarning,
        cluster_bootstrap,
        cluster_bootstrap_mean_difference,
        cluster_bootstrap_risk_difference,
    )
    from fairpair.stats._bounded import logit_interval, null_variance_interval  # noqa: F401
    from fairpair.stats._categorical import (  # noqa: F401
        CategoryTest,
        SquareTableResult,
        bowker,
        category_tests,
        square_table,
        stuart_maxwell,
    )
    from fairpair.stats._common import ConfidenceInterval, t_interval, wilson_interval  # noqa: F401
    from fairpair.stats._crossed import (  # noqa: F401
        CrossedDifferenceResult,
        CrossedFResult,
        crossed_difference,
        crossed_from_cells,
        crossed_omnibus,
        names_heterogeneity,
    )
    from fairpair.stats._dispersion import (  # noqa: F401
        CellMeansResult,
        CorrectedDispersionResult,
        DispersionResult,
        LeastChangeResult,
        PermutationTestResult,
        cell_means,
        cell_means_bootstrap,
        corrected_dispersion,
        dispersion,
        dispersion_bootstrap,
        dispersion_permutation_test,
        least_change_identity,
        paired_permutation_test,
        unpaired_dispersion_permutation_test,
    )
    from fairpair.stats._equivalence import (  # noqa: F401
        TostResult,
        Verdict,
        equivalence_verdict,
        significant,
        tost_paired,
        verdict,
    )
    from fairpair.stats._heterogeneity import HeterogeneityResult, VariantEffect, variant_heterogeneity  # noqa: F401
    from fairpair.stats._mcnemar import McNemarResult, mcnemar, mcnemar_table  # noqa: F401
    from fairpair.stats._multitest import adjust, benjamini_hochberg, holm, verdict_alphas  # noqa: F401
    from fairpair.stats._omnibus import CochranQResult, FriedmanResult, cochran_q, friedman  # noqa: F401
    from fairpair.stats._power import (  # noqa: F401
        CrossedPowerResult,
        PowerResult,
        VarianceComponents,
        crossed_power,
        crossed_variance,
        design_effect,
        estimate_variance_components,
        mcnemar_power,
        min_detectable_effect,
        min_detectable_risk_difference,
        paired_power,
        pairs_needed,
    )
    from fairpair.stats._ppi import (  # noqa: F401
        PPIDifferenceResult,
        RoganGladenDifferenceResult,
        RoganGladenResult,
        judge_error_by_group,
        labels_needed,
        ppi_crossfit,
        ppi_difference,
        ppi_tuning,
        ppi_values,
        rogan_gladen,
        rogan_gladen_difference,
        stratum_inclusion,
    )
    from fairpair.stats._ranking import (  # noqa: F401
        FOUR_FIFTHS,
        CrossedMeanResult,
        PositionEffectResult,
        RatioToBest,
        SelectionRatioResult,
        SlotEffect,
        crossed_k_test,
        crossed_mean,
        paired_difference,
        position_effect,
        ratio_to_best,
        selection_ratio,
        set_k_test,
        set_mean,
        stratified_k_test,
    )
    from fairpair.stats._scenarios import (  # noqa: F401
        ScenarioDifferencesResult,
        ScenarioHeterogeneityResult,
        scenario_differences,
        scenario_differences_from_cells,
        scenario_heterogeneity,
        score_interval,
        score_restricted,
        score_se,
        stratified_difference,
    )
    from fairpair.stats._signed_rank import PairedTResult, WilcoxonResult, paired_t, wilcoxon  # noqa: F401
    from fairpair.stats._spread import (  # noqa: F401
        SpreadDifferenceResult,
        cell_sds,
        spread_difference,
        spread_from_cells,
    )


__getattr__ = lazy_getattr(__name__, {name: f"{__name__}.{module}" for name, module in _WHERE.items()}, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    # paired binary
    "mcnemar",
    "mcnemar_table",
    "McNemarResult",
    # paired continuous
    "wilcoxon",
    "WilcoxonResult",
    "paired_t",
    "PairedTResult",
    # paired k-outcome decisions
    "stuart_maxwell",
    "bowker",
    "square_table",
    "category_tests",
    "SquareTableResult",
    "CategoryTest",
    # k groups
    "cochran_q",
    "CochranQResult",
    "friedman",
    "FriedmanResult",
    # distinguishing words (Monroe, Colaresi & Quinn 2008)
    "fightin_words",
    "FightinWordsResult",
    # multiple testing
    "adjust",
    "holm",
    "benjamini_hochberg",
    "verdict_alphas",
    # bootstrap
    "cluster_bootstrap",
    "cluster_bootstrap_mean_difference",
    "cluster_bootstrap_risk_difference",
    "BootstrapResult",
    "FewClustersWarning",
    "MIN_CLUSTERS_FOR_INTERVAL",
    # equivalence
    "verdict",
    "equivalence_verdict",
    "tost_paired",
    "significant",
    "Verdict",
    "TostResult",
    # power
    "pairs_needed",
    "mcnemar_power",
    "paired_power",
    "min_detectable_effect",
    "min_detectable_risk_difference",
    "design_effect",
    "PowerResult",
    "crossed_power",
    "crossed_variance",
    "estimate_variance_components",
    "CrossedPowerResult",
    "VarianceComponents",
    # dispersion
    "cell_means",
    "cell_means_bootstrap",
    "dispersion",
    "dispersion_bootstrap",
    "dispersion_permutation_test",
    "unpaired_dispersion_permutation_test",
    "paired_permutation_test",
    "least_change_identity",
    "CellMeansResult",
    "DispersionResult",
    "PermutationTestResult",
    "LeastChangeResult",
    "corrected_dispersion",
    "CorrectedDispersionResult",
    # crossed designs
    "crossed_difference",
    "crossed_from_cells",
    "null_variance_interval",
    "logit_interval",
    "crossed_omnibus",
    "names_heterogeneity",
    # scenarios (templates fixed; where a difference lives)
    "scenario_differences",
    "scenario_differences_from_cells",
    "scenario_heterogeneity",
    "score_interval",
    "score_restricted",
    "score_se",
    "stratified_difference",
    "ScenarioDifferencesResult",
    "ScenarioHeterogeneityResult",
    "CrossedDifferenceResult",
    "CrossedFResult",
    # within-cell spread (templates and names random)
    "spread_difference",
    "spread_from_cells",
    "cell_sds",
    "SpreadDifferenceResult",
    # heterogeneity
    "variant_heterogeneity",
    "HeterogeneityResult",
    "VariantEffect",
    # a judge corrected by human labels
    "ppi_difference",
    "labels_needed",
    "judge_error_by_group",
    "ppi_crossfit",
    "ppi_tuning",
    "ppi_values",
    "stratum_inclusion",
    "rogan_gladen",
    "rogan_gladen_difference",
    "PPIDifferenceResult",
    "RoganGladenResult",
    "RoganGladenDifferenceResult",
    # ranking design (k candidates in one prompt)
    "crossed_mean",
    "set_mean",
    "paired_difference",
    "crossed_k_test",
    "set_k_test",
    "stratified_k_test",
    "selection_ratio",
    "ratio_to_best",
    "position_effect",
    "CrossedMeanResult",
    "SelectionRatioResult",
    "RatioToBest",
    "SlotEffect",
    "PositionEffectResult",
    "FOUR_FIFTHS",
    # shared
    "ConfidenceInterval",
    # inter-rater agreement
    "cohen_kappa",
    "CohenKappaResult",
    "fleiss_kappa",
    "FleissKappaResult",
    "krippendorff_alpha",
    "KrippendorffAlphaResult",
    "confusion_matrix",
    "ConfusionMatrixResult",
    "landis_koch",
    "wilson_interval",
    "t_interval",
]
