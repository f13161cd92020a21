"""Paired statistics for counterfactual audits: pure arrays in, result objects out.

Every test returns a frozen result object (``statistic``, ``pvalue``,
``method``, the counts it used, a ``note`` for degenerate input and, where it
makes sense, ``confidence_interval(confidence_level=0.95)``), never a tuple.

========================================  ===========================================
Paired binary outcomes                    :func:`mcnemar`, :func:`mcnemar_table`
Paired continuous outcomes                :func:`wilcoxon` (+ Hodges-Lehmann), :func:`paired_t`
k matched groups                          :func:`cochran_q`, :func:`friedman`
Multiple testing                          :func:`adjust`, :func:`holm`, :func:`benjamini_hochberg`
Clustered data (templates)                :func:`cluster_bootstrap`, :func:`cluster_bootstrap_risk_difference`,
                                          :func:`cluster_bootstrap_mean_difference`
Equivalence and verdicts                  :func:`verdict`, :func:`equivalence_verdict`, :func:`tost_paired`,
                                          :func:`significant`
Planning                                  :func:`pairs_needed`, :func:`mcnemar_power`, :func:`paired_power`,
                                          :func:`min_detectable_effect`, :func:`min_detectable_risk_difference`,
                                          :func:`design_effect`
Dispersion (Tan & Lee 2025)               :func:`cell_means`, :func:`dispersion`, :func:`dispersion_bootstrap`,
                                          :func:`dispersion_permutation_test`, :func:`paired_permutation_test`
Variant heterogeneity                     :func:`variant_heterogeneity`
========================================  ===========================================

Depends on numpy and scipy only (pandas objects are accepted, never imported).
"""

from __future__ import annotations

from fairpair.stats._bootstrap import (
    BootstrapResult,
    cluster_bootstrap,
    cluster_bootstrap_mean_difference,
    cluster_bootstrap_risk_difference,
)
from fairpair.stats._common import ConfidenceInterval
from fairpair.stats._dispersion import (
    DispersionResult,
    PermutationTestResult,
    cell_means,
    dispersion,
    dispersion_bootstrap,
    dispersion_permutation_test,
    paired_permutation_test,
)
from fairpair.stats._equivalence import (
    TostResult,
    Verdict,
    equivalence_verdict,
    significant,
    tost_paired,
    verdict,
)
from fairpair.stats._heterogeneity import HeterogeneityResult, VariantEffect, variant_heterogeneity
from fairpair.stats._mcnemar import McNemarResult, mcnemar, mcnemar_table
from fairpair.stats._multitest import adjust, benjamini_hochberg, holm
from fairpair.stats._omnibus import CochranQResult, FriedmanResult, cochran_q, friedman
from fairpair.stats._power import (
    PowerResult,
    design_effect,
    mcnemar_power,
    min_detectable_effect,
    min_detectable_risk_difference,
    paired_power,
    pairs_needed,
)
from fairpair.stats._signed_rank import PairedTResult, WilcoxonResult, paired_t, wilcoxon

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
    # k groups
    "cochran_q",
    "CochranQResult",
    "friedman",
    "FriedmanResult",
    # multiple testing
    "adjust",
    "holm",
    "benjamini_hochberg",
    # bootstrap
    "cluster_bootstrap",
    "cluster_bootstrap_mean_difference",
    "cluster_bootstrap_risk_difference",
    "BootstrapResult",
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
    # dispersion
    "cell_means",
    "dispersion",
    "dispersion_bootstrap",
    "dispersion_permutation_test",
    "paired_permutation_test",
    "DispersionResult",
    "PermutationTestResult",
    # heterogeneity
    "variant_heterogeneity",
    "HeterogeneityResult",
    "VariantEffect",
    # shared
    "ConfidenceInterval",
]
