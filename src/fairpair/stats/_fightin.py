"""The log-odds ratio with an informative Dirichlet prior ("Fightin' Words").

Monroe, Colaresi & Quinn (2008), "Fightin' Words: Lexical Feature Selection and Evaluation for
Identifying the Content of Political Conflict", *Political Analysis* 16(4), 372-403, section 3.5,
equations 16-22: the words that distinguish two corpora, each word's log-odds ratio shrunk towards a
prior and divided by its approximate standard deviation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FightinWordsResult", "fightin_words"]


@dataclass(frozen=True)
class FightinWordsResult:
    """Per word: ``delta`` (the prior-smoothed log-odds ratio of corpus A against corpus B, positive:
    more used in A), ``variance`` (its approximate variance) and ``zscore`` (``delta / sqrt(variance)``),
    arrays of shape (V,); ``prior`` the Dirichlet prior ``alpha_w`` used (shape (V,))."""

    delta: np.ndarray
    variance: np.ndarray
    zscore: np.ndarray
    prior: np.ndarray
    method: str = "log-odds ratio, informative Dirichlet prior (Monroe, Colaresi & Quinn 2008)"


def fightin_words(counts_a, counts_b, *, prior=None, prior_size: float | None = None) -> FightinWordsResult:
    """Log-odds ratio of every word between two corpora with an informative Dirichlet prior.

    For word ``w`` with counts ``y_a``, ``y_b`` (corpus totals ``n_a``, ``n_b``) and prior ``alpha_w``
    (total ``alpha_0``), Monroe et al. (2008, eq. 16-22)::

        delta_w = log((y_a + alpha_w) / (n_a + alpha_0 - y_a - alpha_w))
                - log((y_b + alpha_w) / (n_b + alpha_0 - y_b - alpha_w))
        var_w   = 1 / (y_a + alpha_w) + 1 / (y_b + alpha_w)
        z_w     = delta_w / sqrt(var_w)

    Parameters
    ----------
    counts_a, counts_b : array_like of float, shape (V,)
        Non-negative counts of each word in corpus A and in corpus B (token counts, or the number of
        answers that use the word).
    prior : array_like of float, shape (V,), optional
        The Dirichlet prior ``alpha_w`` (positive). Default: the informative prior of the paper, the
        pooled frequencies ``(y_a + y_b) / (n_a + n_b)`` scaled to ``prior_size``.
    prior_size : float, optional
        ``alpha_0`` of the default prior (default: ``n_a + n_b``, the pooled corpus, as when the
        background corpus is the two corpora together). Ignored with ``prior``.

    Raises
    ------
    ValueError
        Shapes differ, a count is negative or not finite, or a prior weight is not positive.
    """
    ya = np.asarray(counts_a, dtype=float)
    yb = np.asarray(counts_b, dtype=float)
    if ya.shape != yb.shape or ya.ndim != 1:
        raise ValueError(f"counts_a and counts_b must be 1-D of one length, got shapes {ya.shape} and {yb.shape}")
    if not (np.all(np.isfinite(ya)) and np.all(np.isfinite(yb))) or (ya < 0).any() or (yb < 0).any():
        raise ValueError("counts must be finite and non-negative")
    na, nb = ya.sum(), yb.sum()
    if prior is None:
        pooled = ya + yb
        total = pooled.sum()
        if total <= 0:
            raise ValueError("both corpora are empty")
        a0 = float(total if prior_size is None else prior_size)
        alpha = np.maximum(pooled / total * a0, 1e-9)  # a word seen nowhere gets a vanishing weight
    else:
        alpha = np.asarray(prior, dtype=float)
        if alpha.shape != ya.shape or not np.all(alpha > 0):
            raise ValueError("prior must have the counts' shape and positive weights")
    a0 = alpha.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = (np.log(ya + alpha) - np.log(na + a0 - ya - alpha)
                 - np.log(yb + alpha) + np.log(nb + a0 - yb - alpha))
        var = 1.0 / (ya + alpha) + 1.0 / (yb + alpha)
        z = delta / np.sqrt(var)
    return FightinWordsResult(delta, var, z, alpha)
