"""The df of a sample variance allowing for kurtosis, from scipy alone (the reference for the bounded measures' t)."""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats


def kurtosis_df_reference(x: np.ndarray) -> float:
    """``n - 1`` (always below 20 values), or ``(n - 1) / (1 + G2 (n - 1) / (2n))`` (G2 scipy's
    bias-corrected excess kurtosis, at least 0) when Anscombe & Glynn's one-sided test of excess
    kurtosis has ``p <= 0.25``."""
    n = x.size
    if n < 20:  # scipy's validity limit of the test: no correction
        return n - 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy's note that the test wants n >= 20
        if stats.kurtosistest(x, alternative="greater").pvalue > 0.25:
            return n - 1.0
    return (n - 1) / (1 + max(stats.kurtosis(x, fisher=True, bias=False), 0.0) * (n - 1) / (2 * n))
