"""Power and sample size for paired audits, with a design effect for clustering.

Formulas
--------
McNemar: with discordance ``psi = p10 + p01`` (share of pairs whose
outcomes differ) and risk difference ``delta = p10 - p01``, the power is
that of the test the analysis runs (exact binomial below 25 discordant
pairs, uncorrected chi-square above), summed exactly over the binomial
number of discordant pairs ``D ~ Bin(n, psi)`` and ``b | D ~ Bin(D, (psi +
delta) / (2 psi))``. At ``delta = 0`` it is the test's true size (at most
alpha; the exact test is conservative). Connor's (1987) closed form

    n = [z_{1-a/2} sqrt(psi) + z_{1-b} sqrt(psi - delta^2)]^2 / delta^2

starts the search for the pairs needed.

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

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from fairpair.stats._common import check_choice, check_level

__all__ = [
    "CrossedPowerResult",
    "VarianceComponents",
    "crossed_power",
    "crossed_variance",
    "estimate_variance_components",
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


#: Discordant pairs below which the analysis uses the exact binomial McNemar test.
EXACT_THRESHOLD = 25


def _hybrid_power_int(delta: float, psi: float, n: int, alpha: float, exact_threshold: int) -> float:
    if n <= 0:
        return 0.0
    lo = int(max(stats.binom.ppf(1e-13, n, psi) - 1, 0))
    hi = int(min(stats.binom.isf(1e-13, n, psi) + 1, n))
    d = np.arange(lo, hi + 1)
    w = stats.binom.pmf(d, n, psi)
    p = min(max((psi + delta) / (2.0 * psi), 0.0), 1.0)  # P(b | discordant)
    # lower rejection bound kl (reject b <= kl) and upper ku (reject b >= ku), per count of discordant pairs
    kl = np.full(d.size, -1.0)
    ku = d.astype(float) + 1.0
    ex = d < exact_threshold
    for i in np.nonzero(ex & (d > 0))[0]:
        dd = int(d[i])
        cdf = stats.binom.cdf(np.arange(dd + 1), dd, 0.5)
        ok = np.nonzero(2.0 * cdf < alpha)[0]  # exact two-sided p = min(1, 2 P(X <= min(b, D - b)))
        if ok.size:
            kl[i] = ok[-1]
            ku[i] = dd - ok[-1]
    ch = ~ex & (d > 0)
    q = np.sqrt(d[ch] * stats.chi2.isf(alpha, 1))  # reject |2b - D| > q (uncorrected chi-square)
    kl[ch] = np.ceil((d[ch] - q) / 2.0) - 1.0
    ku[ch] = np.floor((d[ch] + q) / 2.0) + 1.0
    rej = stats.binom.cdf(kl, d, p) + stats.binom.sf(ku - 1.0, d, p)
    return float(min(max(np.dot(w, np.where(d > 0, rej, 0.0)), 0.0), 1.0))


def _hybrid_power(delta: float, psi: float, n_eff: float, alpha: float,
                  exact_threshold: int = EXACT_THRESHOLD) -> float:
    """Power of the test the analysis uses: exact McNemar below ``exact_threshold`` discordant pairs, else chi-square.

    Summed exactly over the binomial number of discordant pairs (``Bin(n,
    psi)``) and of ``b`` among them (``Bin(D, (psi + delta) / (2 psi))``);
    a fractional ``n_eff`` is interpolated linearly between its neighbours.
    """
    lo = math.floor(n_eff)
    frac = n_eff - lo
    p_lo = _hybrid_power_int(delta, psi, lo, alpha, exact_threshold)
    if frac < 1e-9:
        return p_lo
    return (1.0 - frac) * p_lo + frac * _hybrid_power_int(delta, psi, lo + 1, alpha, exact_threshold)


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
        if psi is None:
            raise ValueError("McNemar power needs psi, the expected share of discordant pairs")
        return _hybrid_power(effect, psi, n_eff, alpha), n_eff
    if test == "wilcoxon":
        n_eff = n_eff * ARE_WILCOXON
    return _t_power(effect, n_eff, alpha), n_eff


_METHODS = {
    "mcnemar": ("exact power of McNemar's test as the analysis runs it (exact binomial below 25 discordant "
                "pairs, uncorrected chi-square above)"),
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
    """Power of the two-sided McNemar test as the analysis runs it (exact below 25 discordant pairs).

    The power is summed exactly over the number of discordant pairs and of
    ``b`` among them (see the module notes), so it matches a simulation of
    the test also below 25 discordant pairs, where the exact binomial test
    is used; at ``risk_difference = 0`` it is the test's size (about
    ``alpha``, lower where the exact test is conservative). Connor's (1987)
    normal approximation was one-tailed and gave ``alpha / 2`` there.

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
        McNemar it is the smallest count whose exact power (see
        :func:`mcnemar_power`) reaches ``power``, searched from Connor's
        closed form.

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
        n = max(math.ceil(n0 * de - 1e-9), 1)

        def ok(k: int) -> bool:
            return _hybrid_power(delta, psi, k / de, a) >= target

        lo, hi = max(n // 2, 0), n  # exact power is near Connor's; widen until the bracket holds
        while not ok(hi):
            lo, hi = hi, hi * 2
            if hi > 10**9:
                raise ValueError("effect too small: more than 1e9 pairs needed")
        while lo > 1 and ok(lo):
            hi, lo = lo, lo // 2
        while hi - lo > 1:  # smallest k with ok(k) (nearly monotone; a tiny saw-tooth is ignored)
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        return _result("mcnemar", delta, psi, float(hi), a, cluster_size, icc)
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
        f = lambda delta: _hybrid_power(delta, psi, n_eff, a) - target  # noqa: E731
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
    """Minimal detectable risk difference for McNemar's test (exact power, see :func:`mcnemar_power`).

    Shorthand for ``min_detectable_effect(n_pairs, test="mcnemar",
    discordance=discordance, ...)``.
    """
    return min_detectable_effect(n_pairs, test="mcnemar", discordance=discordance, alpha=alpha, power=power,
                                 cluster_size=cluster_size, icc=icc)


# ------------------------------------------------------------ crossed designs
#
# An audit comparison crosses templates (T) with names (n_A of group A, n_B of
# group B, the same names in every template) and nests r repetitions in each
# template x name cell. The analysis estimates the group difference from the
# cell means m[t, n] as D = mean_t(mean_{n in A} m[t, n] - mean_{n in B} m[t, n]),
# with the method-of-moments variance of the crossed random-effects model
# (Clark 1973; Judd, Westfall & Kenny 2012; Westfall, Kenny & Judd 2014) and a
# t test on Satterthwaite degrees of freedom. The functions below give the
# power of exactly that test from the variance components.


@dataclass(frozen=True)
class VarianceComponents:
    """Variance components of one comparison's crossed design (units of the measure, squared).

    Model for the answer of group ``g``, template ``t``, name ``n`` (nested
    in ``g``), repetition ``k``: ``y = mu_g + a_t + (ag)_tg + b_n + (ab)_tn +
    e_tnk``.

    Attributes
    ----------
    template_group : float
        Variance across templates of the group difference ``(ag)_tA -
        (ag)_tB`` (a template that favours one group).
    name : float
        Variance of the name effects ``b_n`` within a group (a name's own
        quirk, shared by every template).
    template_name : float
        Template x name interaction ``(ab)_tn``.
    repetition : float
        Variance of one answer around its cell mean (``e``); NaN when it
        could not be separated from ``template_name`` (one repetition).
    source : str
        ``"assumed"`` or where the estimate came from.
    templates, names_a, names_b : int
        Design of the run it was estimated from (0 when assumed).
    repetitions : float
        Mean repetitions per cell of that run (0 when assumed).
    note : str or None
    """

    template_group: float
    name: float
    template_name: float
    repetition: float
    source: str = "assumed"
    templates: int = 0
    names_a: int = 0
    names_b: int = 0
    repetitions: float = 0.0
    note: str | None = None

    def cell(self, repetitions: float) -> float:
        """Variance of a cell mean around the name's and template's effects: ``template_name + repetition / r``.

        With the repetition variance unknown (NaN), the cell variance
        estimated from the run is returned whatever ``r`` (adding
        repetitions is then assumed to buy nothing: conservative).
        """
        r = float(repetitions)
        if not r >= 1:
            raise ValueError(f"repetitions must be >= 1; got {repetitions!r}")
        if not math.isfinite(self.repetition):
            return self.template_name
        return self.template_name + self.repetition / r

    def as_dict(self) -> dict[str, Any]:
        return {"template_group": self.template_group, "name": self.name, "template_name": self.template_name,
                "repetition": None if not math.isfinite(self.repetition) else self.repetition,
                "source": self.source, "templates": self.templates, "names_a": self.names_a,
                "names_b": self.names_b, "repetitions": self.repetitions, "note": self.note}

    @classmethod
    def assumed(cls, answer_variance: float, *, share: float = 0.05) -> VarianceComponents:
        """Planning defaults: each structured component takes ``share`` of an answer's variance.

        ``template_group`` takes ``2 * share`` (it is the variance of a
        difference of two groups' template effects), ``name`` and
        ``template_name`` ``share`` each, ``repetition`` the rest. With
        ``share = 0.05``, the usual planning intraclass correlation
        (Killip, Mahfoud & Pearce 2004). For a yes/no measure with
        discordance ``psi`` an answer's variance is ``psi / 2`` (so that two
        independent answers differ in a share ``psi`` of pairs).

        Raises
        ------
        ValueError
            For a non-positive variance or a share outside [0, 0.3].
        """
        v = float(answer_variance)
        s = float(share)
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"answer_variance must be > 0; got {answer_variance!r}")
        if not 0.0 <= s <= 0.3:
            raise ValueError(f"share must be in [0, 0.3]; got {share!r}")
        return cls(2 * s * v, s * v, s * v, (1.0 - 2.0 * s) * v, source=f"assumed ({s:g} of an answer's variance each)")


def estimate_variance_components(values: Any, template: Any, name: Any, group: Any, *,
                                 source: str = "estimated") -> VarianceComponents:
    """Moment estimates of the crossed design's variance components from one comparison's answers.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        One answer's measurement each (NaN: missing, dropped).
    template, name : array_like, shape (n,)
        Template and name (variant) label of each answer; names must be
        distinct between the groups.
    group : array_like of bool, shape (n,)
        True for group A, False for group B.
    source : str
        Recorded in the result (e.g. the run directory).

    Returns
    -------
    VarianceComponents
        From the cell means ``m[t, n]`` of the templates where every name of
        both groups was answered: the per-template difference's variance
        ``S_T^2``, the name means' variance ``S_N,g^2`` and the template x
        name interaction mean square ``MS_res,g`` of each group, and the
        pooled within-cell variance ``s_w^2`` of the repetitions, with
        ``E[MS_res] = template_name + repetition / r``,
        ``E[S_N^2] = name + E[MS_res] / T`` and
        ``E[S_T^2] = template_group + E[MS_res] (1/n_A + 1/n_B)``, each
        solved and truncated at 0 (Searle, Casella & McCulloch 1992, ch. 4;
        Westfall, Kenny & Judd 2014).

    Raises
    ------
    ValueError
        For mismatched lengths, fewer than 2 templates with complete cells
        or fewer than 2 names in a group.
    """
    y = np.asarray(values, dtype=float)
    t = np.asarray(template, dtype=object)
    nm = np.asarray(name, dtype=object)
    g = np.asarray(group, dtype=bool)
    if not (y.shape == t.shape == nm.shape == g.shape) or y.ndim != 1:
        raise ValueError("values, template, name and group must be 1-D of the same length")
    keep = np.isfinite(y)
    y, t, nm, g = y[keep], t[keep], nm[keep], g[keep]
    if np.intersect1d(nm[g].astype(str), nm[~g].astype(str)).size:
        raise ValueError("a name appears in both groups")
    tl, tc = np.unique(t.astype(str), return_inverse=True)
    nl, nc = np.unique(nm.astype(str), return_inverse=True)
    cnt = np.zeros((tl.size, nl.size))
    tot = np.zeros_like(cnt)
    sq = np.zeros_like(cnt)
    np.add.at(cnt, (tc, nc), 1.0)
    np.add.at(tot, (tc, nc), y)
    np.add.at(sq, (tc, nc), y * y)
    in_a = np.zeros(nl.size, dtype=bool)
    in_a[np.unique(nc[g])] = True
    full = np.all(cnt > 0, axis=1)
    n_t = int(full.sum())
    na, nb = int(in_a.sum()), int((~in_a).sum())
    if n_t < 2:
        raise ValueError(f"{n_t} templates have an answer for every name: at least 2 are needed")
    if na < 2 or nb < 2:
        raise ValueError(f"{na} and {nb} names in the groups: at least 2 per group are needed")
    cnt, tot, sq = cnt[full], tot[full], sq[full]
    m = tot / cnt
    d_t = m[:, in_a].mean(axis=1) - m[:, ~in_a].mean(axis=1)
    s_t = float(np.var(d_t, ddof=1))
    s_n, ms_res, dfs = [], [], []
    for sel in (in_a, ~in_a):
        mg = m[:, sel]
        s_n.append(float(np.var(mg.mean(axis=0), ddof=1)))
        resid = mg - mg.mean(axis=0, keepdims=True) - mg.mean(axis=1, keepdims=True) + mg.mean()
        df = (n_t - 1) * (mg.shape[1] - 1)
        ms_res.append(float((resid**2).sum() / df))
        dfs.append(df)
    c_hat = float(np.dot(ms_res, dfs) / sum(dfs))
    s_n_pooled = float(np.dot(s_n, [na - 1, nb - 1]) / (na + nb - 2))
    within_df = float((cnt - 1).sum())
    reps = float(cnt.mean())
    notes = []
    if within_df > 0:
        ss_w = float((sq - tot**2 / cnt).sum())
        s_w = max(ss_w / within_df, 0.0)
        # the cells' harmonic mean of repetitions is what E[MS_res] carries
        r_h = float(1.0 / np.mean(1.0 / cnt))
        tn = max(c_hat - s_w / r_h, 0.0)
    else:
        s_w, tn = math.nan, c_hat
        notes.append("one repetition per cell: repetition noise and the template x name interaction cannot be "
                     "told apart (more repetitions are assumed to buy nothing)")
    if n_t < len(tl):
        notes.append(f"{len(tl) - n_t} templates with a missing name left out")
    return VarianceComponents(
        template_group=max(s_t - c_hat * (1.0 / na + 1.0 / nb), 0.0),
        name=max(s_n_pooled - c_hat / n_t, 0.0),
        template_name=tn, repetition=s_w, source=source, templates=n_t, names_a=na, names_b=nb,
        repetitions=reps, note="; ".join(notes) or None)


@dataclass(frozen=True)
class CrossedPowerResult:
    """Operating characteristics of one comparison of a crossed design (see :func:`crossed_power`).

    Attributes
    ----------
    effect : float
        Assumed true difference ``A - B`` (units of the measure).
    templates, names_a, names_b : int
    repetitions : float
    names : {"random", "fixed"}
    alpha : float
        Level of the test (two-sided) and of the ``fail`` interval.
    equivalence_alpha : float
        Level of each one-sided test of the ``pass`` (TOST) rule.
    margin : float or None
    standard_error : float
        ``sqrt(Var(D))`` under the components.
    df : float
        Satterthwaite degrees of freedom of the test.
    power : float
        Probability that the test rejects ``D = 0``.
    power_fail : float or None
        Probability of a ``fail`` beyond the margin: the ``1 - alpha``
        interval lies beyond ``+/- margin`` (``None`` without a margin).
    power_pass : float or None
        Probability of a ``pass`` under the verdict's rule: the ``1 - 2 *
        equivalence_alpha`` interval, the hull of the symmetric t interval
        and Hall's (1992) skewness-corrected t
        (:meth:`fairpair.stats.CrossedDifferenceResult.equivalence_interval`),
        lies inside ``(-margin, margin)``; names pooled by the analysis's
        preliminary test as it pools them. By 16,384 simulated audits of the
        normal components model (fixed seed), see ``crossed_power``. The
        model's template differences are symmetric, so the hull costs only
        what the noise in the estimated skewness costs; yes/no answers near
        a 0% or 100% rate have skewed template differences and pass less
        often than this (``benchmarks/sim_audits.py``).
    variance_terms : dict
        ``Var(D)`` split into its template, name and cell (template x name
        plus repetition) parts.
    """

    effect: float
    templates: int
    names_a: int
    names_b: int
    repetitions: float
    names: str
    alpha: float
    equivalence_alpha: float
    margin: float | None
    standard_error: float
    df: float
    power: float
    power_fail: float | None
    power_pass: float | None
    variance_terms: dict


def crossed_variance(components: VarianceComponents, *, templates: int, names_a: int, names_b: int,
                     repetitions: float, names: str = "random") -> tuple[float, float, dict]:
    """``Var(D)`` and the Satterthwaite df of its moment estimate, for a crossed design.

    ``Var(D) = template_group / T + name (1/n_A + 1/n_B) + cell (1/n_A + 1/n_B) / T``
    with ``cell = template_name + repetition / r`` (names random); the
    ``name`` term is left out for ``names="fixed"``, whose estimate
    ``S_T^2 / T`` has ``T - 1`` df. For names random the estimate
    ``S_T^2/T + sum_g (S_N,g^2 - MS_res,g / T) / n_g`` is a combination of
    mean squares whose df follow Satterthwaite (1946).

    Returns
    -------
    (variance, df, terms)

    Raises
    ------
    ValueError
        For fewer than 2 templates, fewer than 1 name a group (2 for names
        random) or an unknown ``names``.
    """
    check_choice("names", names, ("random", "fixed"))
    t, na, nb = int(templates), int(names_a), int(names_b)
    if t < 2:
        raise ValueError(f"templates must be >= 2; got {templates!r}")
    if min(na, nb) < (2 if names == "random" else 1):
        raise ValueError(f"names per group must be >= {2 if names == 'random' else 1} for names {names}; "
                         f"got {na} and {nb}")
    c = components.cell(repetitions)
    h = 1.0 / na + 1.0 / nb
    tg = components.template_group
    terms = {"templates": tg / t, "names": components.name * h if names == "random" else 0.0, "cells": c * h / t}
    var = sum(terms.values())
    # Satterthwaite: sum of k_i E[MS_i] with df_i
    parts = [(tg + c * h) / t, t - 1]
    pieces = [parts]
    if names == "random":
        for n_g in (na, nb):
            pieces.append([(components.name + c / t) / n_g, n_g - 1])
            pieces.append([-c / (n_g * t), (t - 1) * (n_g - 1)])
    denom = sum(k * k / df for k, df in pieces)
    df = var * var / denom if denom > 0 else float(t - 1)
    return float(var), float(df), terms


#: Draws of the mean squares for the power with names random (fixed seed: the result is deterministic;
#: Monte Carlo error of a power below 0.004).
_SE_DRAWS = 1 << 14


@functools.lru_cache(maxsize=512)
def _critical_draws(vc: VarianceComponents, t: int, na: int, nb: int, r: float,
                    a: float) -> tuple[np.ndarray, np.ndarray]:
    """Drawn SEs with their two-sided t critical values (cached: planning calls it often)."""
    s_hat, df_hat = _random_names_se_draws(vc, t, na, nb, r)
    return s_hat, stats.t.isf(a / 2.0, df_hat)


def _random_names_se_draws(vc: VarianceComponents, t: int, na: int, nb: int,
                           r: float) -> tuple[np.ndarray, np.ndarray]:
    """Sampling distribution of the analysis's SE and df with names random.

    Under the balanced normal model the per-template difference variance
    ``S_T^2``, each group's name-mean variance ``S_N,g^2`` and interaction
    mean square ``MS_res,g`` are independent scaled chi-squares, independent
    of ``D``. The estimate is formed as the analysis forms it: ``S_T^2 / T
    + sum_g max(0, (S_N,g^2 - MS_res,g / T) / n_g)``, a group's terms left
    out of the Satterthwaite df when its name variance is truncated.
    """
    rng = np.random.default_rng(20140101)
    c = vc.cell(r)
    h = 1.0 / na + 1.0 / nb
    k = _SE_DRAWS
    e_t = vc.template_group + c * h
    st = e_t * rng.chisquare(t - 1, k) / (t - 1)
    var = st / t
    num_terms = [(st / t) ** 2 / (t - 1)]
    for n_g in (na, nb):
        dfn, dfr = n_g - 1, (t - 1) * (n_g - 1)
        sn = (vc.name + c / t) * rng.chisquare(dfn, k) / dfn
        ms = c * rng.chisquare(dfr, k) / dfr if c > 0 else np.zeros(k)
        val = (sn - ms / t) / n_g
        pos = val > 0
        var = var + np.where(pos, val, 0.0)
        num_terms.append(np.where(pos, (sn / n_g) ** 2 / dfn + (ms / (n_g * t)) ** 2 / dfr, 0.0))
    den = sum(num_terms)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(den > 0, var * var / den, t - 1.0)
    return np.sqrt(var), df


#: Simulated audits behind ``power_pass`` (fixed seed: deterministic; Monte Carlo SE of a pass probability
#: below 0.004, less where the probability is near 0 or 1).
_PASS_DRAWS = 1 << 14
_PASS_SEED = 19920101


@functools.lru_cache(maxsize=256)
def _pass_draws(vc: VarianceComponents, t: int, na: int, nb: int, r: float, names: str,
                ea: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drawn ``(s, A, B)`` of the ``pass`` rule: its interval is ``(D - A s, D + B s)``.

    Simulates ``_PASS_DRAWS`` audits of the balanced normal model, the
    way the analysis forms the statistics (:func:`fairpair.stats.crossed_from_cells`):
    the ``T`` template differences' residuals give ``S_T^2`` and the
    third k-statistic ``k3`` (so Hall's skewness ``l = k3 / T^2 / s^3``);
    with names random each group's ``S_N,g^2`` and ``MS_res,g`` are
    scaled chi-squares, the name terms are truncated at 0, and pooled
    into the template term when the preliminary F test has ``p > 0.25``
    (``POOL``), with the Satterthwaite df of what is kept. ``A`` and ``B``
    are the hull of the symmetric t (``q = t_df(1 - ea)``) and Hall's
    ``g^-1(+/-q)`` (:meth:`~fairpair.stats.CrossedDifferenceResult.equivalence_interval`).
    Under that model the estimate ``D`` is independent of all of them
    (the sample mean of normal draws is independent of their residuals,
    Basu 1955; the ANOVA mean squares are independent), so the caller
    integrates it out in closed form.
    """
    from fairpair.stats._crossed import POOL

    rng = np.random.default_rng(_PASS_SEED)
    c = vc.cell(r)
    h = 1.0 / na + 1.0 / nb
    sd_t = math.sqrt(vc.template_group + c * h)  # SD of one template difference around D
    k = _PASS_DRAWS
    chunk = max(1, 4_000_000 // t)
    s2t, k3 = np.empty(k), np.empty(k)
    for lo in range(0, k, chunk):
        w = rng.normal(0.0, sd_t, (min(chunk, k - lo), t))
        dev = w - w.mean(axis=1, keepdims=True)
        s2t[lo:lo + w.shape[0]] = (dev ** 2).sum(axis=1) / (t - 1)
        k3[lo:lo + w.shape[0]] = t * (dev ** 3).sum(axis=1) / ((t - 1) * (t - 2)) if t >= 3 else np.nan
    var = s2t / t
    den = (s2t / t) ** 2 / (t - 1)
    if names == "random":
        sn, ms, dfs = [], [], []
        for n_g in (na, nb):
            dfn, dfr = n_g - 1, (t - 1) * (n_g - 1)
            sn.append((vc.name + c / t) * rng.chisquare(dfn, k) / dfn)
            ms.append(c * rng.chisquare(dfr, k) / dfr if c > 0 else np.zeros(k))
            dfs.append((dfn, dfr))
        df_n = sum(d[0] for d in dfs)
        df_r = sum(d[1] for d in dfs)
        f_num = sum(s * t * d[0] for s, d in zip(sn, dfs, strict=True)) / df_n
        f_den = sum(m * d[1] for m, d in zip(ms, dfs, strict=True)) / df_r
        with np.errstate(divide="ignore", invalid="ignore"):
            pre = np.where(f_den > 0, special.fdtrc(df_n, df_r, f_num / np.where(f_den > 0, f_den, 1.0)), np.nan)
        keep = ~(pre > POOL)  # NaN (no error variance) is not pooled, as in the analysis
        for s, m, (dfn, dfr), n_g in zip(sn, ms, dfs, (na, nb), strict=True):
            val = (s - m / t) / n_g
            pos = keep & (val > 0)
            var = var + np.where(pos, val, 0.0)
            den = den + np.where(pos, (s / n_g) ** 2 / dfn + (m / (n_g * t)) ** 2 / dfr, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(den > 0, var * var / den, np.nan)
        s = np.sqrt(var)
        q = special.stdtrit(df, 1.0 - ea)
        lam = k3 / t ** 2 / s ** 3
    a_side, b_side = q.copy(), q.copy()
    ok = np.isfinite(lam) & (lam != 0) & np.isfinite(q)
    if ok.any():
        lm, qq = lam[ok], q[ok]
        inv = []
        for z in (qq, -qq):  # g^-1(z) = 3 (z - l/6) / (c^2 + c + 1), c = cbrt(1 + l (z - l/6))
            cc = np.cbrt(1.0 + lm * (z - lm / 6.0))
            inv.append(3.0 * (z - lm / 6.0) / (cc * cc + cc + 1.0))
        a_side[ok] = np.maximum(qq, inv[0])
        b_side[ok] = np.maximum(qq, -inv[1])
    return s, a_side, b_side


def crossed_power(effect: float, components: VarianceComponents, *, templates: int, names_a: int, names_b: int,
                  repetitions: float, alpha: float = 0.05, margin: float | None = None,
                  equivalence_alpha: float | None = None, names: str = "random") -> CrossedPowerResult:
    """Power of the cluster-aware paired test of a crossed audit design (Westfall, Kenny & Judd 2014).

    Parameters
    ----------
    effect : float
        True difference ``A - B`` in the measure's units.
    components : VarianceComponents
        Assumed (:meth:`VarianceComponents.assumed`) or estimated from a
        pilot (:func:`estimate_variance_components`).
    templates, names_a, names_b : int
        Templates; names per group (the same in every template).
    repetitions : float
        Repetitions per template x name cell, >= 1.
    alpha : float, default 0.05
        Two-sided level of the test and of the ``fail`` interval (give the
        per-test level after a multiplicity correction).
    margin : float, optional
        The comparison's margin (> 0) for the ``fail`` and ``pass`` rules.
    equivalence_alpha : float, optional
        Level of each one-sided test of TOST (default ``alpha``).
    names : {"random", "fixed"}, default "random"
        The estimand: generalise over names (random) or only to these names.

    Returns
    -------
    CrossedPowerResult
        With names fixed the test is the one-sample t on the ``T`` template
        differences: ``power`` is the exact noncentral-t power, equal to
        ``statsmodels.stats.power.TTestPower().power(effect / sd_T,
        templates, alpha)`` with ``sd_T = SE * sqrt(T)``, and
        ``power_fail`` is a noncentral-t tail too. With names random the
        estimated SE and its Satterthwaite df vary from audit to audit
        (a negative name-variance estimate is truncated at 0, as the
        analysis does), so the probabilities are averaged over 16,384
        draws of the independent mean squares (fixed seed; deterministic);
        ``df`` reports the Satterthwaite df at the expected mean squares
        (Westfall, Kenny & Judd 2014 use that one in a noncentral t, which
        overstates the power by up to 6 points at 4 names a group).
        ``power_fail`` = ``P(D - t s > m or D + t s < -m)`` with ``t =
        t_{1-alpha/2}``. ``power_pass`` follows the verdict's rule, ``P(D
        - A s > -m and D + B s < m)``, where ``(D - A s, D + B s)`` is the
        hull of ``D +/- t' s`` (``t' = t_{1-equivalence_alpha}``) and Hall's
        (1992) interval ``(D - s g^-1(t'), D - s g^-1(-t'))`` with the
        skewness ``l`` estimated from the template differences: there is
        no closed form, so ``(s, A, B)`` are drawn from 16,384 simulated
        audits (fixed seed; deterministic; the template differences drawn
        one by one, the name mean squares as chi-squares, the name component
        pooled when the analysis's preliminary F test has ``p > 0.25``) and
        ``D ~ N(effect, SE^2)``, independent of them, is integrated in
        closed form. ``power`` and ``power_fail`` use the unpooled name
        terms. All three are checked against simulated audits in
        ``tests/stats/test_stats_crossed_power.py`` (``power_pass`` against
        a brute-force simulation of whole tables of cell means through the
        hull rule).

    Raises
    ------
    ValueError
        For a design or level outside the ranges above.

    References
    ----------
    Westfall, J., Kenny, D. A., & Judd, C. M. (2014). Statistical power and
    optimal design in experiments in which samples of participants respond
    to samples of stimuli. *JEP: General*, 143, 2020-2045.
    Judd, C. M., Westfall, J., & Kenny, D. A. (2012). Treating stimuli as a
    random factor in social psychology. *JPSP*, 103, 54-69.
    Satterthwaite, F. E. (1946). An approximate distribution of estimates of
    variance components. *Biometrics Bulletin*, 2, 110-114.
    Schuirmann, D. J. (1987). A comparison of the two one-sided tests
    procedure and the power approach for assessing the equivalence of
    average bioavailability. *J Pharmacokinet Biopharm*, 15, 657-680.
    """
    a = _check_alpha(alpha)
    ea = a if equivalence_alpha is None else check_level(equivalence_alpha, "equivalence_alpha")
    if margin is not None and not (math.isfinite(float(margin)) and float(margin) > 0):
        raise ValueError(f"margin must be > 0; got {margin!r}")
    delta = float(effect)
    var, df, terms = crossed_variance(components, templates=templates, names_a=names_a, names_b=names_b,
                                      repetitions=repetitions, names=names)
    se = math.sqrt(var)
    if se == 0:
        raise ValueError("all variance components are zero: the power is not defined")
    p_fail = p_pass = None
    m = None if margin is None else float(margin)
    if names == "fixed":
        # S_T^2 / T is a scaled chi-square on T - 1 df: exact noncentral t
        crit = float(stats.t.isf(a / 2.0, df))
        nc = delta / se
        pw = float(1.0 - special.nctdtr(df, nc, crit) + special.nctdtr(df, nc, -crit))
        if m is not None:
            p_fail = float(1.0 - special.nctdtr(df, (delta - m) / se, crit)
                           + special.nctdtr(df, (delta + m) / se, -crit))
    else:
        s_hat, crits = _critical_draws(components, int(templates), int(names_a), int(names_b),
                                       float(repetitions), a)
        pw = float(np.mean(special.ndtr((delta - crits * s_hat) / se) + special.ndtr((-delta - crits * s_hat) / se)))
        if m is not None:
            p_fail = float(np.mean(special.ndtr((delta - m - crits * s_hat) / se)
                                   + special.ndtr((-delta - m - crits * s_hat) / se)))
    if m is not None:
        # the verdict's pass rule: (D - A s, D + B s) inside (-m, m), D ~ N(delta, se^2) independent of (s, A, B)
        s_p, a_p, b_p = _pass_draws(components, int(templates), int(names_a), int(names_b), float(repetitions),
                                    names, ea)
        with np.errstate(invalid="ignore"):
            inside = special.ndtr((m - b_p * s_p - delta) / se) - special.ndtr((-m + a_p * s_p - delta) / se)
        p_pass = float(np.mean(np.where(np.isfinite(inside), np.maximum(inside, 0.0), 0.0)))
    return CrossedPowerResult(delta, int(templates), int(names_a), int(names_b), float(repetitions), names, a, ea,
                              None if margin is None else float(margin), se, df, pw, p_fail, p_pass, terms)
