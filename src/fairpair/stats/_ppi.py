"""A judge's group difference corrected by human labels: prediction-powered inference and Rogan-Gladen.

An LLM judge scores every answer of an audit; humans label a sample of them.
If the judge errs differently for the two groups (harsher on one group's
answers), the judge's difference is biased and no amount of answers fixes
it. Two corrections use the labelled sample:

Prediction-powered inference (PPI, PPI++)
-----------------------------------------
Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023), "Prediction-powered
inference", *Science* 382, 669-674; power tuning: Angelopoulos, Duchi &
Zrnic (2023), "PPI++: Efficient prediction-powered inference",
arXiv:2311.01453. The audit's estimate is a linear functional of the answers'
values, ``D(y) = sum_i w_i y_i`` (the mean over templates of the difference of
the groups' mean cell means, :func:`fairpair.stats.crossed_difference`). With
judge scores ``f_i`` on every answer, human labels ``h_i`` on a sample drawn
with inclusion probabilities ``pi_i`` (``R_i = 1`` when labelled; several
raters of one answer count as their mean), each answer gets the
prediction-powered value::

    y*_i = lambda f_i + R_i (h_i - lambda f_i) / pi_i

so ``D(y*) = lambda D(f) + sum_i w_i R_i (h_i - lambda f_i) / pi_i``: the
judge's difference corrected by the Horvitz-Thompson (1952) estimate of the
human-minus-judge residual's difference. ``E[R_i / pi_i] = 1``, so ``D(y*)`` is
unbiased for the human difference ``D(h)`` for every fixed ``lambda``; with
``lambda = 1`` and a uniform sample it is the classical PPI mean estimate
(judge mean on all answers plus the mean residual on the labelled ones), and
with ``lambda = 0`` it uses the human labels alone. ``lambda`` is PPI++'s
power tuning for a mean, ``Cov(h, f) / ((1 + n/N) Var(f))`` (arXiv:2311.01453,
Example 6.1), computed within groups on the labelled answers (weights
``1/pi``) and clipped to ``[0, 1]``, cross-fitted: each half of the templates
gets the ``lambda`` of the other half's labels (:func:`ppi_crossfit`).

The interval: ``y*`` are values of answers like any other, so they go through
the audit's own crossed inference (:func:`fairpair.stats.crossed_from_cells`:
templates and names random factors, method of moments, Satterthwaite df). The
labelled sample's noise is independent between answers, so it is part of the
template x name cell noise that the template and name mean squares already
estimate; the interval counts it and the crossed structure at once. Sampling
without replacement within strata makes that variance slightly conservative.
Accepted by ``benchmarks/sim_labels.py`` (whole audits, judge biased against one
group, noisy or fine; 50-200 labels; table in ``docs/corrected-gaps.md``).

Rogan-Gladen (yes/no judge measures)
------------------------------------
Rogan & Gladen (1978), "Estimating prevalence from the results of a screening
test", *Am J Epidemiol* 107, 71-76: with the judge's sensitivity ``q1`` and
specificity ``q0`` the true rate is ``theta = (p + q0 - 1) / (q0 + q1 - 1)``.
Lee, Zeng, Jeong, Sohn & Lee (2025), "How to correctly report LLM-as-a-judge
evaluations", arXiv:2511.21140: the interval must include the calibration
sample's uncertainty, by the delta method::

    Var(theta) = [Var(p) + theta^2 q1 (1 - q1) / m1 + (1 - theta)^2 q0 (1 - q0) / m0] / (q0 + q1 - 1)^2

with ``m1`` / ``m0`` the labelled positives / negatives (Greenland 1996,
"Basic methods for sensitivity analysis of biases", *Int J Epidemiol* 25,
1107-1116, the same expression). :func:`rogan_gladen_difference` estimates
``q1`` and ``q0`` for each group (a judge biased against one group has
different error rates) and takes ``Var(p_A / J_A - p_B / J_B)`` from the
crossed inference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from fairpair.stats._common import ConfidenceInterval, as_float_1d, as_labels, check_level, t_interval
from fairpair.stats._crossed import POOL, CrossedDifferenceResult, cell_matrix, crossed_from_cells

__all__ = ["judge_error_by_group", "ppi_crossfit", "labels_needed", "PPIDifferenceResult", "RoganGladenResult",
           "RoganGladenDifferenceResult", "ppi_tuning", "ppi_values", "ppi_difference", "stratum_inclusion",
           "rogan_gladen", "rogan_gladen_difference"]


def _labelled(human: np.ndarray, judge: np.ndarray) -> np.ndarray:
    return ~np.isnan(human) & ~np.isnan(judge)


def _inclusion(inclusion: Any, labelled: np.ndarray, n_judged: int) -> np.ndarray:
    """``pi_i``: as given, or ``n_labelled / n_judged`` for every answer (a uniform sample)."""
    n = labelled.size
    if inclusion is None:
        return np.full(n, labelled.sum() / n_judged if n_judged else np.nan)
    pi = as_float_1d(inclusion, "inclusion")
    if pi.size != n:
        raise ValueError(f"inclusion must hold one probability per answer ({n}); got {pi.size}")
    bad = labelled & ~((pi > 0) & (pi <= 1))
    if bad.any():
        raise ValueError(f"a labelled answer's inclusion probability must be in (0, 1]; got {pi[bad][0]!r}")
    return pi


def stratum_inclusion(labelled: Any, strata: Any) -> np.ndarray:
    """Inclusion probability of each answer in a stratified sample: the labelled share of its stratum.

    Parameters
    ----------
    labelled : array_like of bool, shape (n,)
        Whether each answer was labelled.
    strata : array_like, shape (n,)
        Stratum of each answer (e.g. ``"group|template"``: ``fairpair calibrate export`` samples
        (group, template) cells evenly).

    Returns
    -------
    ndarray of float, shape (n,)
        ``n_s / N_s`` (labelled over all answers of the stratum), in [0, 1]; 0 in a stratum
        without labels (its answers can then not be corrected: :func:`ppi_values` treats the
        stratum as the judge alone).

    Source: stratified simple random sampling (Cochran 1977, *Sampling Techniques*, 3rd ed., ch. 5).
    """
    lab = np.asarray(labelled, dtype=bool).ravel()
    _, codes = as_labels(strata, "strata", lab.size)
    tot = np.bincount(codes)
    got = np.bincount(codes, weights=lab.astype(float), minlength=tot.size)
    return (got / tot)[codes]


def ppi_tuning(judge: Any, human: Any, group: Any | None = None, *, inclusion: Any = None) -> float:
    """PPI++'s power-tuning ``lambda`` for a mean: ``Cov(h, f) / ((1 + n/N) Var(f))``, clipped to [0, 1].

    Parameters
    ----------
    judge : array_like of float, shape (N,)
        The judge's score of every answer (NaN: missing, left out).
    human : array_like of float, shape (N,)
        The human label (mean of the raters) of the labelled answers, NaN elsewhere.
    group : array_like, shape (N,), optional
        Covariances are taken within groups (pooled), so the group difference itself does not count
        as agreement between judge and humans.
    inclusion : array_like of float, shape (N,), optional
        Inclusion probabilities (weights ``1/pi``); default a uniform sample.

    Returns
    -------
    float
        In [0, 1]; 1 when the labelled judge scores have no variance (the judge alone then carries
        nothing to tune); 0 with fewer than 2 labels.

    Source: Angelopoulos, Duchi & Zrnic (2023), arXiv:2311.01453, Example 6.1 (mean estimation).
    """
    f = as_float_1d(judge, "judge")
    h = as_float_1d(human, "human")
    if f.size != h.size:
        raise ValueError(f"judge and human must have one value per answer; got {f.size} and {h.size}")
    lab = _labelled(h, f)
    n_judged = int((~np.isnan(f)).sum())
    if lab.sum() < 2:
        return 0.0
    pi = _inclusion(inclusion, lab, n_judged)
    g = np.zeros(f.size, np.intp) if group is None else as_labels(group, "group", f.size)[1]
    w = np.where(lab, 1.0 / np.where(lab, pi, 1.0), 0.0)
    cov = var = 0.0
    for k in np.unique(g[lab]):
        m = lab & (g == k)
        ww = w[m]
        fc = f[m] - np.average(f[m], weights=ww)
        hc = h[m] - np.average(h[m], weights=ww)
        cov += float((ww * fc * hc).sum())
        var += float((ww * fc * fc).sum())
    if var <= 0:
        return 1.0
    ratio = lab.sum() / max(n_judged, 1)
    return float(np.clip(cov / ((1.0 + ratio) * var), 0.0, 1.0))


def ppi_crossfit(judge: Any, human: Any, group: Any, folds: Any, *, inclusion: Any = None) -> np.ndarray:
    """Each answer's cross-fitted ``lambda``: :func:`ppi_tuning` on the labelled answers of the *other* folds.

    Tuning ``lambda`` on the same labels whose residuals it weights fits it to them and makes the
    interval a little too narrow (false fails 5.5-6.6% at alpha 5% in ``benchmarks/sim_labels.py``);
    tuned on the other folds it is independent of the fold's own residuals, so each fold's correction
    is unbiased for a fixed ``lambda`` and its variance is the one the interval counts (cross-fitting:
    Chernozhukov et al. 2018, *Econometrics Journal* 21, C1-C68; for PPI, Zrnic & Candes 2024,
    "Cross-prediction-powered inference", *PNAS* 121).

    Parameters
    ----------
    judge, human, group, inclusion
        As in :func:`ppi_tuning`.
    folds : array_like of int, shape (N,)
        Fold of each answer (e.g. template code modulo 2: templates are the exchangeable units).

    Returns
    -------
    ndarray of float, shape (N,)
        In [0, 1]; a single fold falls back to tuning on all labels.
    """
    f = as_float_1d(judge, "judge")
    fo = np.asarray(folds).ravel()
    if fo.size != f.size:
        raise ValueError(f"folds must hold one fold per answer ({f.size}); got {fo.size}")
    pi = None if inclusion is None else as_float_1d(inclusion, "inclusion")
    h = as_float_1d(human, "human")
    g = np.zeros(f.size, np.intp) if group is None else as_labels(group, "group", f.size)[1]
    if pi is None:  # the uniform default of the whole sample, not of the other folds
        lab = _labelled(h, f)
        pi = np.full(f.size, lab.sum() / max(int((~np.isnan(f)).sum()), 1))
    uniq = np.unique(fo)
    if uniq.size < 2:
        return np.full(f.size, ppi_tuning(f, h, g, inclusion=pi))
    out = np.empty(f.size)
    for k in uniq:
        other = fo != k
        out[fo == k] = ppi_tuning(f[other], h[other], g[other], inclusion=pi[other])
    return out


def ppi_values(judge: Any, human: Any, *, lam: Any = 1.0, inclusion: Any = None) -> np.ndarray:
    """Each answer's prediction-powered value ``y*_i = lam f_i + R_i (h_i - lam f_i) / pi_i``.

    Parameters
    ----------
    judge, human : array_like of float, shape (N,)
        As in :func:`ppi_tuning`. An answer without a judge score is missing (NaN) whether
        labelled or not: the correction needs the judge's score of the same answer.
    lam : float or array_like of float, shape (N,), default 1
        ``lambda`` in [0, 1] (one, or one per answer: :func:`ppi_crossfit`): 1 is classical PPI, 0 the
        human labels alone (Horvitz-Thompson).
    inclusion : array_like of float, shape (N,), optional
        Probability that each answer was drawn for labelling (labelled ones in (0, 1]);
        default ``n_labelled / N`` for all (a uniform sample).

    Returns
    -------
    ndarray of float, shape (N,)
        Any linear estimator of the audit (a difference of cell means) applied to them is unbiased
        for the same estimator applied to the human labels (module notes).

    Raises
    ------
    ValueError
        Mismatched lengths, ``lam`` outside [0, 1], a labelled answer's ``pi`` outside (0, 1].
    """
    f = as_float_1d(judge, "judge")
    h = as_float_1d(human, "human")
    if f.size != h.size:
        raise ValueError(f"judge and human must have one value per answer; got {f.size} and {h.size}")
    lam_a = np.broadcast_to(np.asarray(lam, dtype=float), f.shape)
    if not np.all((lam_a >= 0.0) & (lam_a <= 1.0)):
        raise ValueError(f"lam must be in [0, 1]; got {lam!r}")
    lab = _labelled(h, f)
    pi = _inclusion(inclusion, lab, int((~np.isnan(f)).sum()))
    out = lam_a * f
    out[lab] += (h[lab] - lam_a[lab] * f[lab]) / pi[lab]
    return out


@dataclass(frozen=True)
class PPIDifferenceResult:
    """The prediction-powered difference of two groups (:func:`ppi_difference`).

    Attributes
    ----------
    estimate, se, df, statistic, pvalue : float
        Of the corrected difference ``A - B`` (the crossed t on the prediction-powered values).
    lam : float
        The ``lambda`` used (PPI++ tuning unless given).
    n_labelled, n_judged : int
        Answers with a human label and a judge score; answers with a judge score.
    corrected : CrossedDifferenceResult
        The crossed inference on the prediction-powered values (its intervals are this result's).
    raw : CrossedDifferenceResult
        The same inference on the judge's scores alone (what an uncorrected audit reports).
    judge_error : dict of str to float
        ``"A"`` / ``"B"``: the judge's mean error (judge minus human) on each group's labelled
        answers (weights ``1/pi``), in the measure's units; NaN for a group without labels.
    n_labelled_by_group : dict of str to int
    values : ndarray, shape (N,)
        The prediction-powered values (:func:`ppi_values`).
    method : str
    note : str or None
    """

    estimate: float
    se: float
    df: float
    statistic: float
    pvalue: float
    lam: float
    n_labelled: int
    n_judged: int
    corrected: CrossedDifferenceResult = field(repr=False)
    raw: CrossedDifferenceResult = field(repr=False)
    judge_error: dict = field(default_factory=dict)
    n_labelled_by_group: dict = field(default_factory=dict)
    values: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    method: str = ""
    note: str | None = None

    def confidence_interval(self, confidence_level: float = 0.95, *,
                            bounds: tuple[float, float] | None = None) -> ConfidenceInterval:
        """``estimate +/- t_df * se`` of the corrected difference (``bounds`` clip it, e.g. ``(-1, 1)``)."""
        return self.corrected.confidence_interval(confidence_level, bounds=bounds)


def judge_error_by_group(judge: Any, human: Any, is_a: np.ndarray, inclusion: Any = None
                         ) -> tuple[dict[str, float], dict[str, int]]:
    """The judge's mean error (judge minus human) on each group's labelled answers, and their counts.

    ``judge`` / ``human`` / ``inclusion`` as in :func:`ppi_values`; ``is_a``: bool array, shape (N,), True
    for group A. Returns ``({"A": err, "B": err}, {"A": n, "B": n})``: weighted means (weights ``1/pi``)
    in the measure's units, NaN for a group without labels.
    """
    f = as_float_1d(judge, "judge")
    h = as_float_1d(human, "human")
    lab = _labelled(h, f)
    pi = _inclusion(inclusion, lab, int((~np.isnan(f)).sum()))
    err, cnt = {}, {}
    for key, m in (("A", lab & is_a), ("B", lab & ~is_a)):
        cnt[key] = int(m.sum())
        err[key] = float(np.average(f[m] - h[m], weights=1.0 / pi[m])) if m.any() else float("nan")
    return err, cnt


def _split(template: Any, name: Any, group: Any, n: int, groups: tuple[Any, Any] | None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``is_a`` and the template / name codes (the checks of :func:`crossed_difference`)."""
    gl, gc = as_labels(group, "group", n)
    if len(gl) != 2:
        raise ValueError(f"group must hold exactly two labels; got {len(gl)}")
    if groups is not None:
        if set(groups) != set(gl.tolist()) or len(set(groups)) != 2:
            raise ValueError(f"groups {groups!r} must be the two labels of group")
        is_a = gc == list(gl).index(groups[0])
    else:
        is_a = gc == 0
    _, tc = as_labels(template, "template", n)
    nl, nc = as_labels(name, "name", n)
    ga = np.bincount(nc, weights=is_a.astype(float), minlength=len(nl))
    gt = np.bincount(nc, minlength=len(nl))
    if np.any((ga > 0) & (ga < gt)):
        raise ValueError("a name must belong to one group")
    return is_a, tc, nc


def _cells(values: np.ndarray, tc: np.ndarray, nc: np.ndarray, is_a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    means, _cnt, _tl, _nl = cell_matrix(values, tc, nc)
    name_in_a = np.bincount(nc, weights=is_a.astype(float), minlength=means.shape[1])[: means.shape[1]] > 0
    return means[:, name_in_a], means[:, ~name_in_a]


def ppi_difference(judge: Any, human: Any, template: Any, name: Any, group: Any, *, inclusion: Any = None,
                   lam: float | None = None, groups: tuple[Any, Any] | None = None, names: str = "random",
                   pool: float | None = POOL) -> PPIDifferenceResult:
    """Prediction-powered difference of two groups' means, templates and names random factors.

    Parameters
    ----------
    judge : array_like of float, shape (N,)
        The judge's score of every answer (a 1-5 rubric level, a probability-weighted level, 0/1
        for a yes/no judge); NaN: missing.
    human : array_like of float, shape (N,)
        The mean of the raters' labels of each labelled answer; NaN for an unlabelled answer.
    template, name, group : array_like, shape (N,)
        As in :func:`fairpair.stats.crossed_difference` (two groups; a name belongs to one group).
    inclusion : array_like of float, shape (N,), optional
        Probability that each answer was drawn for labelling; weights ``1/pi`` when the sample is
        not uniform (:func:`stratum_inclusion` for a stratified one). Default: uniform.
    lam : float in [0, 1], optional
        Default: PPI++ power tuning (:func:`ppi_tuning`, within groups), cross-fitted over two folds
        of templates (:func:`ppi_crossfit`; ``lam`` reports their mean).
    groups, names, pool
        As in :func:`fairpair.stats.crossed_difference`.

    Returns
    -------
    PPIDifferenceResult
        The estimate is unbiased for the human-labelled difference whatever the judge's errors
        (module notes); the interval is the crossed t interval of the prediction-powered values,
        so it counts the labelled sample and the templates and names. Never raises on degenerate
        data (NaN with a note, as the crossed inference does).

    Raises
    ------
    ValueError
        Mismatched lengths, not two groups, a name in both groups, ``lam`` outside [0, 1], a
        labelled answer's inclusion probability outside (0, 1].

    References
    ----------
    Angelopoulos et al. (2023), *Science* 382, 669-674; Angelopoulos, Duchi & Zrnic (2023),
    arXiv:2311.01453; Horvitz & Thompson (1952), *JASA* 47, 663-685; see
    :mod:`fairpair.stats._ppi`.
    """
    f = as_float_1d(judge, "judge")
    h = as_float_1d(human, "human")
    n = f.size
    if h.size != n:
        raise ValueError(f"judge and human must have one value per answer; got {n} and {h.size}")
    is_a, tc, nc = _split(template, name, group, n, groups)
    lab = _labelled(h, f)
    lams = ppi_crossfit(f, h, is_a, tc % 2, inclusion=inclusion) if lam is None else lam
    y = ppi_values(f, h, lam=lams, inclusion=inclusion)
    lam = float(np.mean(lams))
    raw = crossed_from_cells(*_cells(f, tc, nc, is_a), names=names, pool=pool)
    cr = crossed_from_cells(*_cells(y, tc, nc, is_a), names=names, pool=pool)
    err, cnt = judge_error_by_group(f, h, is_a, inclusion)
    notes = [x for x in (cr.note,) if x]
    if not lab.any():
        notes.append("no labelled answer: the corrected difference is the judge's times lambda")
    return PPIDifferenceResult(cr.estimate, cr.se, cr.df, cr.statistic, cr.pvalue, float(lam), int(lab.sum()),
                               int((~np.isnan(f)).sum()), cr, raw, err, cnt, y,
                               f"prediction-powered (PPI++, lambda {lam:.2f}); {cr.method}",
                               "; ".join(notes) or None)


def labels_needed(half_width: float, residual_sd: float, *, se_judge: float = 0.0, n_answers: float = math.inf,
                  confidence_level: float = 0.95) -> float:
    """Human labels for a corrected group difference with a given interval half-width (planning).

    With ``n`` labels drawn evenly from the two groups (``n/2`` each, simple random within group) out of
    ``N`` answers and ``lambda = 1``, the correction of each group's mean is the mean residual of its
    labelled answers, so (Cochran 1977, ch. 5; Angelopoulos et al. 2023, the PPI variance)::

        SE^2 = se_judge^2 + 4 residual_sd^2 (1/n - 1/N)

    and the half-width is ``z * SE``. Solved for ``n``: ``4 s^2 / ((h/z)^2 - se_judge^2 + 4 s^2 / N)``.

    Parameters
    ----------
    half_width : float > 0
        Wanted half-width of the ``confidence_level`` interval, in the measure's units.
    residual_sd : float >= 0
        Standard deviation of the human-minus-judge difference within a group (rater noise included).
    se_judge : float, default 0
        The judge's own standard error of the difference (templates and names; from a pilot).
    n_answers : float, default inf
        Answers of the comparison (the finite-population correction).

    Returns
    -------
    float
        Labels needed (not rounded); ``inf`` when the judge's own error alone is wider than asked.
    """
    level = check_level(confidence_level)
    if not half_width > 0 or residual_sd < 0 or se_judge < 0:
        raise ValueError("half_width must be > 0, residual_sd and se_judge >= 0")
    z = float(special.ndtri(0.5 + level / 2.0))
    room = (half_width / z) ** 2 - se_judge ** 2 + 4 * residual_sd ** 2 / n_answers
    if room <= 0:
        return math.inf
    return 4 * residual_sd ** 2 / room


# ------------------------------------------------------------------------------------------- Rogan-Gladen


@dataclass(frozen=True)
class RoganGladenResult:
    """A rate corrected for the judge's sensitivity and specificity (:func:`rogan_gladen`).

    Attributes
    ----------
    estimate : float
        ``(p + q0 - 1) / (q0 + q1 - 1)``, not clipped (clip when reporting a rate); NaN when
        ``q0 + q1 <= 1`` (a judge no better than chance).
    se : float
        Delta-method standard error with the test and calibration samples (module notes).
    observed : float
        The judge's rate ``p``.
    sensitivity, specificity : float
        ``q1``, ``q0``.
    n, n_positive, n_negative : float
        Test answers; labelled positives ``m1`` and negatives ``m0`` (effective sizes).
    method : str
    note : str or None
    """

    estimate: float
    se: float
    observed: float
    sensitivity: float
    specificity: float
    n: float
    n_positive: float
    n_negative: float
    method: str = "Rogan-Gladen (1978); delta-method SE with the calibration sample (Lee et al. 2025)"
    note: str | None = None

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Wald interval ``estimate +/- z * se``, clipped to [0, 1]."""
        level = check_level(confidence_level)
        z = float(special.ndtri(0.5 + level / 2.0))
        lo, hi = self.estimate - z * self.se, self.estimate + z * self.se
        return ConfidenceInterval(float(max(lo, 0.0)), float(min(hi, 1.0)), level, self.method)


def _rg_terms(theta: float, q1: float, q0: float, m1: float, m0: float) -> float:
    """The calibration part of ``Var(theta) * J^2``: ``theta^2 q1 (1 - q1)/m1 + (1 - theta)^2 q0 (1 - q0)/m0``."""
    return theta ** 2 * q1 * (1 - q1) / m1 + (1 - theta) ** 2 * q0 * (1 - q0) / m0


def rogan_gladen(observed: float, n: float, sensitivity: float, specificity: float, n_positive: float,
                 n_negative: float, *, var_observed: float | None = None) -> RoganGladenResult:
    """The true rate behind a judge's observed rate, with an interval that counts the calibration sample.

    Parameters
    ----------
    observed : float in [0, 1]
        The judge's "yes" rate ``p`` on the ``n`` test answers.
    n : float
        Test answers (for ``Var(p) = p (1 - p) / n`` unless ``var_observed`` is given).
    sensitivity, specificity : float in [0, 1]
        ``q1 = P(judge yes | human yes)``, ``q0 = P(judge no | human no)`` from the labelled sample.
    n_positive, n_negative : float
        Labelled answers the humans called yes (``m1``) and no (``m0``).
    var_observed : float, optional
        ``Var(p)`` from a design-aware inference (e.g. templates as clusters).

    Returns
    -------
    RoganGladenResult
        NaN estimate with a note when ``q0 + q1 <= 1`` or a calibration count is 0.

    References
    ----------
    Rogan & Gladen (1978), *Am J Epidemiol* 107, 71-76; Greenland (1996), *Int J Epidemiol* 25,
    1107-1116; Lee et al. (2025), arXiv:2511.21140.
    """
    p, q1, q0 = float(observed), float(sensitivity), float(specificity)
    for nm, v in (("observed", p), ("sensitivity", q1), ("specificity", q0)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{nm} must be in [0, 1]; got {v!r}")
    j = q0 + q1 - 1.0
    nan = float("nan")
    if not (j > 0 and n_positive > 0 and n_negative > 0 and n > 0):
        why = ("the judge is no better than chance (sensitivity + specificity <= 1)" if not j > 0
               else "no labelled yes or no answer: sensitivity or specificity unknown")
        return RoganGladenResult(nan, nan, p, q1, q0, float(n), float(n_positive), float(n_negative), note=why)
    theta = (p + q0 - 1.0) / j
    vp = p * (1 - p) / n if var_observed is None else float(var_observed)
    var = (vp + _rg_terms(theta, q1, q0, n_positive, n_negative)) / j ** 2
    return RoganGladenResult(float(theta), float(np.sqrt(var)), p, q1, q0, float(n), float(n_positive),
                             float(n_negative))


def _sens_spec(f: np.ndarray, h: np.ndarray, w: np.ndarray) -> tuple[float, float, float, float]:
    """Weighted ``q1, q0`` and Kish effective ``m1, m0``; a fractional label (raters split) counts as both."""
    pos, neg = w * h, w * (1 - h)
    sp, sn = pos.sum(), neg.sum()
    q1 = float((pos * f).sum() / sp) if sp > 0 else float("nan")
    q0 = float((neg * (1 - f)).sum() / sn) if sn > 0 else float("nan")
    m1 = float(sp ** 2 / (pos ** 2).sum()) if sp > 0 else 0.0
    m0 = float(sn ** 2 / (neg ** 2).sum()) if sn > 0 else 0.0
    return q1, q0, m1, m0


@dataclass(frozen=True)
class RoganGladenDifferenceResult:
    """Rogan-Gladen corrected risk difference of two groups (:func:`rogan_gladen_difference`).

    Attributes
    ----------
    estimate, se, df : float
        ``theta_A - theta_B``; SE with the crossed part and both groups' calibration parts;
        Satterthwaite df (calibration parts counted with ``m1 + m0 - 2``).
    by_group : dict of str to RoganGladenResult
        ``"A"`` / ``"B"``: each group's corrected rate, sensitivity and specificity.
    method : str
    note : str or None
    """

    estimate: float
    se: float
    df: float
    by_group: dict
    method: str = ("Rogan-Gladen by group (sensitivity and specificity per group); crossed t for the judge's "
                   "rates plus the calibration sample's delta-method variance (Lee et al. 2025)")
    note: str | None = None

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """``estimate +/- t_df * se``, clipped to [-1, 1]."""
        lo, hi = t_interval(self.estimate, self.se, self.df, check_level(confidence_level))
        return ConfidenceInterval(float(max(lo, -1.0)), float(min(hi, 1.0)), confidence_level, self.method)


def rogan_gladen_difference(judge: Any, human: Any, template: Any, name: Any, group: Any, *,
                            inclusion: Any = None, groups: tuple[Any, Any] | None = None,
                            names: str = "random", pool: float | None = POOL) -> RoganGladenDifferenceResult:
    """Risk difference of two groups corrected by each group's judge sensitivity and specificity.

    Parameters
    ----------
    judge : array_like of 0/1, shape (N,)
        The yes/no judge's answer for every answer (NaN missing).
    human : array_like of float in [0, 1], shape (N,)
        Mean of the raters' 0/1 labels on labelled answers (a split 0.5 counts half yes, half no),
        NaN elsewhere.
    template, name, group, inclusion, groups, names, pool
        As in :func:`ppi_difference`.

    Returns
    -------
    RoganGladenDifferenceResult
        ``theta_g = (p_g + q0_g - 1) / J_g`` with ``J_g = q0_g + q1_g - 1``; ``Var`` is the crossed
        variance of ``p_A / J_A - p_B / J_B`` (:func:`fairpair.stats.crossed_from_cells` on the
        scaled cell means) plus, for each group, ``[theta^2 q1 (1 - q1) / m1 + (1 - theta)^2 q0
        (1 - q0) / m0] / J^2`` (module notes). NaN with a note when a group's judge is no better
        than chance or a group has no labelled yes or no.

    References
    ----------
    Rogan & Gladen (1978); Lee et al. (2025), arXiv:2511.21140; Satterthwaite (1946).
    """
    f = as_float_1d(judge, "judge")
    h = as_float_1d(human, "human")
    n = f.size
    if h.size != n:
        raise ValueError(f"judge and human must have one value per answer; got {n} and {h.size}")
    ok = ~np.isnan(f)
    if not np.all(np.isin(f[ok], (0.0, 1.0))):
        raise ValueError("judge must be 0/1 (a yes/no judge) for the Rogan-Gladen correction")
    is_a, tc, nc = _split(template, name, group, n, groups)
    lab = _labelled(h, f)
    pi = _inclusion(inclusion, lab, int(ok.sum()))
    nan = float("nan")
    cells_a, cells_b = _cells(f, tc, nc, is_a)
    raw = crossed_from_cells(cells_a, cells_b, names=names, pool=pool)
    by: dict[str, RoganGladenResult] = {}
    js = {}
    for key, m, mean in (("A", is_a, raw.mean_a), ("B", ~is_a, raw.mean_b)):
        mm = lab & m
        q1, q0, m1, m0 = _sens_spec(f[mm], h[mm], 1.0 / pi[mm]) if mm.any() else (nan, nan, 0.0, 0.0)
        r = (rogan_gladen(mean, int((ok & m).sum()), q1, q0, m1, m0) if np.isfinite(q1) and np.isfinite(q0)
             and np.isfinite(mean) else RoganGladenResult(nan, nan, float(mean), q1, q0, float((ok & m).sum()),
                                                          m1, m0, note="no labelled yes or no answer"))
        by[key] = r
        js[key] = q0 + q1 - 1.0
    if not all(np.isfinite(r.estimate) for r in by.values()):
        why = "; ".join(f"group {k}: {r.note}" for k, r in by.items() if r.note)
        return RoganGladenDifferenceResult(nan, nan, nan, by, note=why or "undefined")
    scaled = crossed_from_cells(cells_a / js["A"], cells_b / js["B"], names=names, pool=pool)
    terms = [(scaled.se ** 2, scaled.df)]
    for k, r in by.items():
        terms.append((_rg_terms(r.estimate, r.sensitivity, r.specificity, r.n_positive, r.n_negative) / js[k] ** 2,
                      max(r.n_positive + r.n_negative - 2.0, 1.0)))
    var = sum(v for v, _ in terms)
    den = sum(v ** 2 / d for v, d in terms if np.isfinite(d) and d > 0)
    df = float(var ** 2 / den) if den > 0 and np.isfinite(var) else nan
    return RoganGladenDifferenceResult(float(by["A"].estimate - by["B"].estimate), float(np.sqrt(var)), df, by,
                                       note=scaled.note)
