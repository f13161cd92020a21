"""Power and sample size for paired audits, with a design effect for clustering.

Formulas
--------
McNemar (Connor 1987): with discordance ``psi = p10 + p01`` (share of pairs
whose outcomes differ) and risk difference ``delta = p10 - p01``,

    n = [z_{1-a/2} sqrt(psi) + z_{1-b} sqrt(psi - delta^2)]^2 / delta^2,
    power(n) = Phi((|delta| sqrt(n) - z_{1-a/2} sqrt(psi)) / sqrt(psi - delta^2)).

Paired t: the exact noncentral-t power of the two-sided one-sample t test
on the differences, ``df = n - 1``, noncentrality ``d_z sqrt(n)`` with
``d_z = mean(diff) / sd(diff)`` (identical to
``statsmodels.stats.power.TTestPower``).

Wilcoxon signed-rank: the t power at ``n * 3/pi`` pairs, i.e. the
Pitman asymptotic relative efficiency 3/pi ~ 0.955 of the signed-rank test
to the t test under normal differences (Lehmann 1975; Noether 1987).
For heavy-tailed differences the ARE is >= 0.864 and often > 1, so this is
the usual planning value, not a bound.

Clustering: answers nested in templates of ``m`` answers with
intra-cluster correlation ``icc`` carry the information of
``n / DE`` independent pairs, ``DE = 1 + (m - 1) * icc`` (Kish 1965;
Donner & Klar 2000). The defaults, ``cluster_size=1`` and ``icc=0.05``,
give ``DE = 1``; set ``cluster_size`` to the pairs per template to apply
the 0.05 planning ICC, a moderate value (ICCs reported for clustered
designs are mostly below 0.05; Killip, Mahfoud & Pearce 2004). Replace it
with the ICC estimated from a pilot run whenever one exists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from fairpair.stats._common import check_choice, check_level

__all__ = [
    "PowerResult",
    "design_effect",
    "mcnemar_power",
    "paired_power",
    "pairs_needed",
    "min_detectable_effect",
    "min_detectable_risk_difference",
]

_TESTS = ("mcnemar", "t", "wilcoxon")
ARE_WILCOXON = 3.0 / math.pi


@dataclass(frozen=True)
class PowerResult:
    """Result of a power / sample-size calculation.

    Attributes
    ----------
    test : {"mcnemar", "t", "wilcoxon"}
    power : float
        Probability of rejecting at ``alpha`` (two-sided) under the effect.
    n_pairs : float
        Pairs (answers per group); an integer (rounded up) from
        :func:`pairs_needed`.
    effect : float
        Risk difference (McNemar) or standardised mean difference ``d_z``
        (t, Wilcoxon).
    alpha : float
    discordance : float or None
        ``psi`` for McNemar; ``None`` otherwise.
    cluster_size : float
    icc : float
    design_effect : float
        ``1 + (cluster_size - 1) * icc``.
    effective_n_pairs : float
        ``n_pairs / design_effect`` (times 3/pi for Wilcoxon).
    method : str
        The formula used.
    note : str or None
    """

    test: str
    power: float
    n_pairs: float
    effect: float
    alpha: float
    discordance: float | None
    cluster_size: float
    icc: float
    design_effect: float
    effective_n_pairs: float
    method: str
    note: str | None = None


def design_effect(cluster_size: float = 1, icc: float = 0.05) -> float:
    """Kish's design effect ``1 + (cluster_size - 1) * icc``.

    Parameters
    ----------
    cluster_size : float, default 1
        Average number of pairs per cluster (template), >= 1.
    icc : float, default 0.05
        Intra-cluster correlation in [0, 1].

    Raises
    ------
    ValueError
        If ``cluster_size < 1`` or ``icc`` is outside [0, 1].

    References
    ----------
    Kish, L. (1965). *Survey Sampling*. Wiley.
    Donner, A., & Klar, N. (2000). *Design and Analysis of Cluster
    Randomization Trials in Health Research*. Arnold.
    """
    m = float(cluster_size)
    r = float(icc)
    if not (np.isfinite(m) and m >= 1):
        raise ValueError(f"cluster_size must be >= 1; got {cluster_size!r}")
    if not 0.0 <= r <= 1.0:
        raise ValueError(f"icc must be in [0, 1]; got {icc!r}")
    return 1.0 + (m - 1.0) * r


def _check_alpha(alpha: Any) -> float:
    return check_level(alpha, "alpha")


def _check_mcnemar_effect(delta: Any, psi: Any) -> tuple[float, float]:
    if psi is None:
        raise ValueError("discordance (share of discordant pairs, psi = p10 + p01) is required for test='mcnemar'")
    psi = float(psi)
    if not 0.0 < psi <= 1.0:
        raise ValueError(f"discordance must be in (0, 1]; got {psi!r}")
    if delta is not None:
        delta = float(delta)
        if not abs(delta) <= psi:
            raise ValueError(f"|risk_difference| must not exceed discordance ({psi}); got {delta!r}")
    return (np.nan if delta is None else delta), psi


def _connor_power(delta: float, psi: float, n_eff: float, alpha: float) -> float:
    if delta == 0:
        return alpha / 2.0  # Connor's one-tail approximation at the null
    spread = psi - delta * delta
    z = special.ndtri(1.0 - alpha / 2.0)
    num = abs(delta) * math.sqrt(n_eff) - z * math.sqrt(psi)
    if spread <= 0:
        return 1.0 if num > 0 else 0.0
    return float(special.ndtr(num / math.sqrt(spread)))


def _t_power(d: float, n_eff: float, alpha: float) -> float:
    df = n_eff - 1.0
    if df <= 0:
        return np.nan
    nc = d * math.sqrt(n_eff)
    crit = stats.t.isf(alpha / 2.0, df)
    return float(1.0 - special.nctdtr(df, nc, crit) + special.nctdtr(df, nc, -crit))


def _power(test: str, effect: float, psi: float | None, n_pairs: float, alpha: float, de: float) -> tuple[float, float]:
    n_eff = n_pairs / de
    if test == "mcnemar":
        return _connor_power(effect, psi, n_eff, alpha), n_eff
    if test == "wilcoxon":
        n_eff = n_eff * ARE_WILCOXON
    return _t_power(effect, n_eff, alpha), n_eff


_METHODS = {
    "mcnemar": "Connor (1987) normal approximation for McNemar's test",
    "t": "noncentral t power of the paired t-test",
    "wilcoxon": "paired t power at n * 3/pi pairs (ARE of the signed-rank test)",
}


def _result(test: str, effect: float, psi: float | None, n_pairs: float, alpha: float,
            cluster_size: float, icc: float, note: str | None = None) -> PowerResult:
    de = design_effect(cluster_size, icc)
    pw, n_eff = _power(test, effect, psi, n_pairs, alpha, de)
    return PowerResult(test, pw, n_pairs, effect, alpha, psi, float(cluster_size), float(icc), de, n_eff,
                       _METHODS[test], note)


def mcnemar_power(
    n_pairs: float,
    risk_difference: float,
    discordance: float,
    *,
    alpha: float = 0.05,
    cluster_size: float = 1,
    icc: float = 0.05,
) -> PowerResult:
    """Power of the two-sided McNemar test (Connor 1987).

    Parameters
    ----------
    n_pairs : float
        Number of pairs, > 0.
    risk_difference : float
        ``p10 - p01`` = ``rate_A - rate_B`` to detect; ``|.| <= discordance``.
    discordance : float
        Expected share of discordant pairs ``psi = p10 + p01`` in (0, 1].
    alpha : float, default 0.05
    cluster_size, icc : float
        Design effect inputs, see :func:`design_effect`.

    Returns
    -------
    PowerResult

    Raises
    ------
    ValueError
        For values outside the ranges above.

    References
    ----------
    Connor, R. J. (1987). Sample size for testing differences in
    proportions for the paired-sample design. *Biometrics*, 43, 207-211.
    """
    a = _check_alpha(alpha)
    delta, psi = _check_mcnemar_effect(risk_difference, discordance)
    if not float(n_pairs) > 0:
        raise ValueError(f"n_pairs must be > 0; got {n_pairs!r}")
    return _result("mcnemar", delta, psi, float(n_pairs), a, cluster_size, icc)


def paired_power(
    n_pairs: float,
    effect_size: float,
    *,
    test: str = "t",
    alpha: float = 0.05,
    cluster_size: float = 1,
    icc: float = 0.05,
) -> PowerResult:
    """Power of the two-sided paired t-test or Wilcoxon signed-rank test.

    Parameters
    ----------
    n_pairs : float
        Number of pairs, > 1.
    effect_size : float
        Standardised mean difference ``d_z = mean(x - y) / sd(x - y)``.
    test : {"t", "wilcoxon"}, default "t"
    alpha : float, default 0.05
    cluster_size, icc : float
        See :func:`design_effect`.

    Returns
    -------
    PowerResult
        For ``test="t"`` and no clustering the power equals
        ``statsmodels.stats.power.TTestPower().power(effect_size, n_pairs, alpha)``.

    References
    ----------
    Lehmann, E. L. (1975). *Nonparametrics: Statistical Methods Based on
    Ranks*. Holden-Day. Noether, G. E. (1987). Sample size determination for
    some common nonparametric tests. *JASA*, 82, 645-647.
    """
    check_choice("test", test, ("t", "wilcoxon"))
    a = _check_alpha(alpha)
    if not float(n_pairs) > 1:
        raise ValueError(f"n_pairs must be > 1; got {n_pairs!r}")
    return _result(test, float(effect_size), None, float(n_pairs), a, cluster_size, icc)


def pairs_needed(
    effect: float,
    *,
    test: str = "mcnemar",
    discordance: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    cluster_size: float = 1,
    icc: float = 0.05,
) -> PowerResult:
    """Smallest whole number of pairs reaching ``power``.

    Parameters
    ----------
    effect : float
        Risk difference (``test="mcnemar"``) or ``d_z`` (``"t"``,
        ``"wilcoxon"``); non-zero.
    test : {"mcnemar", "t", "wilcoxon"}, default "mcnemar"
    discordance : float, optional
        Required for McNemar: expected share of discordant pairs.
    alpha : float, default 0.05
    power : float, default 0.8
    cluster_size, icc : float
        The returned ``n_pairs`` already includes the design effect.

    Returns
    -------
    PowerResult
        ``n_pairs`` is an integer and ``power`` the achieved power. For
        McNemar it is ``ceil(DE * n_Connor)`` with Connor's closed form.

    Raises
    ------
    ValueError
        For a zero effect or values outside their ranges.

    References
    ----------
    Connor (1987); Noether (1987). See :func:`mcnemar_power`, :func:`paired_power`.
    """
    check_choice("test", test, _TESTS)
    a = _check_alpha(alpha)
    target = check_level(power, "power")
    de = design_effect(cluster_size, icc)
    if test == "mcnemar":
        delta, psi = _check_mcnemar_effect(effect, discordance)
        if delta == 0:
            raise ValueError("effect must be non-zero")
        za, zb = special.ndtri(1.0 - a / 2.0), special.ndtri(target)
        n0 = (za * math.sqrt(psi) + zb * math.sqrt(max(psi - delta * delta, 0.0))) ** 2 / delta**2
        n = math.ceil(n0 * de - 1e-9)
        return _result("mcnemar", delta, psi, float(n), a, cluster_size, icc)
    d = float(effect)
    if d == 0 or not np.isfinite(d):
        raise ValueError(f"effect must be non-zero and finite; got {effect!r}")
    scale = de / (ARE_WILCOXON if test == "wilcoxon" else 1.0)
    # Solve power(n_eff) = target over effective pairs, then scale back.
    f = lambda n_eff: _t_power(d, n_eff, a) - target  # noqa: E731
    hi = 4.0
    while f(hi) < 0:
        hi *= 2.0
        if hi > 1e12:
            raise ValueError("effect too small: more than 1e12 pairs needed")
    n_eff = optimize.brentq(f, 2.0, hi, xtol=1e-10) if f(2.0) < 0 else 2.0
    n = max(math.ceil(n_eff * scale - 1e-9), 2)
    return _result(test, d, None, float(n), a, cluster_size, icc)


def min_detectable_effect(
    n_pairs: float,
    *,
    test: str = "mcnemar",
    discordance: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    cluster_size: float = 1,
    icc: float = 0.05,
) -> PowerResult:
    """Smallest effect detectable with ``power`` at ``n_pairs`` pairs.

    Parameters
    ----------
    n_pairs : float
        Pairs available (> 1).
    test : {"mcnemar", "t", "wilcoxon"}, default "mcnemar"
    discordance : float, optional
        Required for McNemar: expected share of discordant pairs. The
        risk difference cannot exceed it.
    alpha, power, cluster_size, icc
        As in :func:`pairs_needed`.

    Returns
    -------
    PowerResult
        ``effect`` is the minimal detectable risk difference (McNemar, > 0)
        or ``d_z`` (t, Wilcoxon). NaN with a note when even
        ``|delta| = discordance`` falls short of the power.
    """
    check_choice("test", test, _TESTS)
    a = _check_alpha(alpha)
    target = check_level(power, "power")
    n = float(n_pairs)
    if not n > 1:
        raise ValueError(f"n_pairs must be > 1; got {n_pairs!r}")
    de = design_effect(cluster_size, icc)
    if test == "mcnemar":
        _, psi = _check_mcnemar_effect(None, discordance)
        n_eff = n / de
        f = lambda delta: _connor_power(delta, psi, n_eff, a) - target  # noqa: E731
        if f(psi) < 0:
            return PowerResult("mcnemar", np.nan, n, np.nan, a, psi, float(cluster_size), float(icc), de, n_eff,
                               _METHODS["mcnemar"], "power not reachable: too few pairs for this discordance")
        delta = optimize.brentq(f, 1e-12, psi, xtol=1e-14)
        return _result("mcnemar", float(delta), psi, n, a, cluster_size, icc)
    n_eff = n / de * (ARE_WILCOXON if test == "wilcoxon" else 1.0)
    if n_eff <= 1:
        raise ValueError("too few effective pairs (n_pairs / design effect must exceed 1)")
    f = lambda d: _t_power(d, n_eff, a) - target  # noqa: E731
    hi = 1.0
    while f(hi) < 0:
        hi *= 2.0
    d = optimize.brentq(f, 1e-12, hi, xtol=1e-14)
    return _result(test, float(d), None, n, a, cluster_size, icc)


def min_detectable_risk_difference(
    n_pairs: float,
    discordance: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    cluster_size: float = 1,
    icc: float = 0.05,
) -> PowerResult:
    """Minimal detectable risk difference for McNemar's test (Connor 1987).

    Shorthand for ``min_detectable_effect(n_pairs, test="mcnemar",
    discordance=discordance, ...)``.
    """
    return min_detectable_effect(n_pairs, test="mcnemar", discordance=discordance, alpha=alpha, power=power,
                                 cluster_size=cluster_size, icc=icc)
