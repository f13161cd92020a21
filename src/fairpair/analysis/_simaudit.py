"""Whole-audit simulation under crossed dependence, through the analysis code that writes ``results.json``.

Each simulated audit has ``templates`` templates, ``names`` names per
group (the same names in every template), ``reps`` repetitions per
template x name cell, and the pairs of :mod:`fairpair.cases` (group A's k-th
name vs group B's k-th name in the same template and repetition). Answers
come from a latent normal score (total variance 1)::

    eta = mu_g + a_t + g_{t,g} + b_n + c_{t,n} + s_{t,r} + e

with template effects ``a`` (shared by the groups), template x group bias
``g`` (averaging zero), name effects ``b`` shared across templates,
repetitions of a cell sharing ``c`` (intra-cell correlation ``rho`` of the
rest), a matched-set effect ``s`` shared by the two sides of a pair (the
mock target's common random numbers) and independent noise ``e``. The
measure is the latent score (``continuous``), ``eta > cut`` (``binary``,
base rate 0.7), ``Poisson(exp(0.3 + 0.5 eta))`` (``count``) or the latent
cut at four thresholds (``ordinal``, a 1-5 judge score). ``mu_A`` is solved
so that the true difference on the measure's scale is exactly ``delta``
(over the population of names: the names-random estimand); for names fixed
the truth is recomputed given the drawn name effects.

Each audit goes through :func:`fairpair.analysis._paired.analyze_pairs`,
:func:`fairpair.stats.adjust` (for plans of several comparisons) and
:func:`~fairpair.analysis._paired.finish`: the code path of
``fairpair analyze``. Used by ``benchmarks/sim_audits.py`` and its test.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from fairpair.analysis._paired import PairData, analyze_pairs, finish
from fairpair.stats import adjust

__all__ = ["Gen", "Row", "JudgeSim", "true_mean", "true_spread", "run_row", "MARGINS", "judge_and_labels",
           "stratified_sample", "PolicyRow", "policy_audit", "run_policy_row"]

#: Margin of each measure kind, in its units (0.10 = 10 points for yes/no; ``score``: a 0-100-like score
#: in points, ten times the latent score, so 2 points are 0.2 latent standard deviations).
MARGINS = {"binary": 0.10, "continuous": 0.25, "count": 0.30, "ordinal": 0.25, "score": 2.0, "ceiling": 0.10,
           "rare": 0.01}
#: The scale each measure kind is analysed on (``ceiling``: a 1-5 score with ~95% fives; ``rare``: yes/no at 1%).
SCALE = {"score": "continuous", "ceiling": "ordinal", "rare": "binary"}
#: Direction of the true difference (group A minus the reference): a ceiling score can only fall.
SIGN = {"ceiling": -1.0}
_CUTS = np.array([-1.2, -0.4, 0.4, 1.2])
_CEIL_CUTS = np.array([-2.9, -2.5, -2.1, float(stats.norm.ppf(0.05))])  # P(5) = 0.95 at mu = 0
_BIN_CUT = float(stats.norm.ppf(0.3))  # P(eta > cut) = 0.7 at mu = 0
_RARE_CUT = float(stats.norm.ppf(0.99))  # P(eta > cut) = 0.01 at mu = 0
_LINEAR = ("continuous", "score")


@dataclass(frozen=True)
class Gen:
    """A generator: variance shares of the latent score (the rest is independent noise)."""

    label: str
    template: float = 0.3  # a_t
    template_group: float = 0.0  # g_{t,g}
    name: float = 0.0  # b_n
    rho: float = 0.0  # share of the within-cell remainder shared by a cell's repetitions
    matched_set: float = 0.1  # s_{t,r}
    #: sparse bias: each template carries a difference (group A minus B) of ``sparse_shift`` in the measure's
    #: units with probability ``sparse``, the others none (``score`` measures; the truth is then carried by the
    #: sparse shift: at the margin ``sparse * shift`` = the margin)
    sparse: float = 0.0
    sparse_shift: float = 0.0
    #: skewed template x group bias: groups 1.. draw ``g`` from a centred exponential (skewness 2) of variance
    #: ``template_group`` instead of a normal (issue 30), so the template differences are skewed, mean 0
    skew: bool = False
    #: spread effects (issue 32): the within-cell noise of a cell is multiplied by ``exp(X - var X)`` (mean
    #: square 1), ``X`` the sum of normal template, name and template x group effects with these SDs, and
    #: by ``spread_ratio`` for groups 1.. (1: the groups' spreads do not differ)
    spread_template: float = 0.0
    spread_name: float = 0.0
    spread_tg: float = 0.0
    spread_ratio: float = 1.0


@dataclass(frozen=True)
class JudgeSim:
    """A judge scoring every answer and human raters labelling a sample (issue 31; ``benchmarks/sim_labels.py``).

    The simulated measure is the *human* score ``h*``; the judge gives ``h* + bias [group A] + N(0, sd^2)``
    and each of ``raters`` raters ``h* + N(0, rater_sd^2)`` on ``labels`` answers drawn evenly from the
    (group, template) strata (a random set of strata takes one more); the verdict comes from the
    prediction-powered values (:func:`fairpair.analysis._corrected.analyze_corrected`).
    """

    label: str
    bias: float = 0.0
    sd: float = 0.5
    labels: int = 100
    raters: int = 2
    rater_sd: float = 0.7


def stratified_sample(n: int, t: int, per_stratum: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` answers drawn evenly over the ``2 t`` (group, template) strata of ``per_stratum`` answers each
    (``n // 2t`` each, a random set of strata one more); returns the labelled mask ``[2, t, per_stratum]``."""
    strata = 2 * t
    take = np.full(strata, n // strata)
    take[rng.choice(strata, n - take.sum(), replace=False)] += 1
    ranks = rng.random((strata, per_stratum)).argsort(axis=1).argsort(axis=1)
    return (ranks < take[:, None]).reshape(2, t, per_stratum)


def judge_and_labels(js: JudgeSim, y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The judge's scores ``f[g, t, k, r]`` of the human scores ``y`` (group 1 is A, the compared one) and
    the raters' mean label ``h`` (NaN where unlabelled)."""
    _, t, k, r = y.shape
    f = y + rng.normal(0.0, js.sd, y.shape)
    f[1] += js.bias
    lab = stratified_sample(js.labels, t, k * r, rng).reshape(2, t, k, r)
    h = np.where(lab, y + rng.normal(0.0, js.rater_sd, (js.raters, *y.shape)).mean(axis=0), np.nan)
    return f, h


@dataclass(frozen=True)
class Row:
    """One row of the table: a generator, a measure kind and a design."""

    gen: Gen
    measure: str = "binary"
    templates: int = 20
    names: int = 3
    reps: int = 5
    estimand: str = "random"
    missing: float = 0.0
    comparisons: int = 1  # > 1: groups B, C, ... each vs A (the reference), one family
    correction: str = "holm"
    alpha: float = 0.05
    templates_estimand: str = "random"
    #: informative failures (yes/no measures): the reference group's (group 0's) "yes" answers are lost with the
    #: first probability, its "no" answers with the second (issue 30: 0.3 and 0.1)
    informative: tuple[float, float] | None = None
    #: a judge measures the answers and human labels correct it (the verdict is the corrected one)
    judge: JudgeSim | None = None

    @property
    def label(self) -> str:
        extra = f", {self.missing:.0%} missing" if self.missing else ""
        fam = f", plan of {self.comparisons} ({self.correction})" if self.comparisons > 1 else ""
        tf = ", templates fixed" if self.templates_estimand == "fixed" else ""
        if self.informative:
            tf += f", reference loses {self.informative[0]:.0%} of yes / {self.informative[1]:.0%} of no"
        if self.judge:
            tf += f", judge {self.judge.label} corrected by {self.judge.labels} labels"
        return (f"{self.gen.label}; {self.measure}; {self.templates}T x {self.names}N x {self.reps}R; "
                f"names {self.estimand}{tf}{extra}{fam}")


def _mean_given(measure: str, mu: np.ndarray, sd: float) -> np.ndarray:
    """E[measure] when eta ~ N(mu, sd^2)."""
    if measure == "continuous":
        return mu
    if measure == "score":
        return 10.0 * mu
    if measure in ("binary", "rare"):
        return special.ndtr((mu - (_BIN_CUT if measure == "binary" else _RARE_CUT)) / sd)
    if measure == "count":
        return np.exp(0.3 + 0.5 * mu + 0.125 * sd ** 2)
    cuts = _CEIL_CUTS if measure == "ceiling" else _CUTS
    return 1.0 + special.ndtr((np.asarray(mu)[..., None] - cuts) / sd).sum(axis=-1)


def true_mean(measure: str, mu: float) -> float:
    """Population mean of the measure at latent mean ``mu`` (total latent variance 1)."""
    return float(_mean_given(measure, np.asarray(mu), 1.0))


@cache
def _mu_for(measure: str, delta: float) -> float:
    base = true_mean(measure, 0.0)
    if delta == 0:
        return 0.0
    sign = SIGN.get(measure, 1.0)
    return float(optimize.brentq(lambda m: true_mean(measure, m) - base - sign * delta, -5, 5, xtol=1e-12))


def _measure(measure: str, eta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if measure == "continuous":
        return eta
    if measure == "score":
        return 10.0 * eta
    if measure in ("binary", "rare"):
        return (eta > (_BIN_CUT if measure == "binary" else _RARE_CUT)).astype(float)
    if measure == "count":
        return rng.poisson(np.exp(0.3 + 0.5 * eta)).astype(float)
    return 1.0 + (eta[..., None] > (_CEIL_CUTS if measure == "ceiling" else _CUTS)).sum(axis=-1).astype(float)


def _draw(row: Row, mus: np.ndarray, rng: np.random.Generator, delta: float = 0.0,
          margin: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Answers ``y[g, t, k, r]`` of ``len(mus)`` groups; the truth given the names ``[g]``; each group's
    truth per template ``[g, t]`` (given the template effects; given the names with names fixed); which
    templates carry the sparse bias ``[t]``.

    With ``templates_estimand == "fixed"`` the groups' latent means (``mus[1:]``) are re-solved for this
    audit so that the difference averaged over *these* templates is exactly ``delta`` (the
    templates-fixed estimand; also given the names with names fixed).
    """
    g, t, k, r = len(mus), row.templates, row.names, row.reps
    gen = row.gen
    rest = 1.0 - gen.template - gen.template_group - gen.name - gen.matched_set
    cell, noise = rest * gen.rho, rest * (1 - gen.rho)
    b = rng.normal(0, np.sqrt(gen.name), (g, 1, k, 1))
    a_t = rng.normal(0, np.sqrt(gen.template), (1, t, 1, 1))
    g_t = rng.normal(0, np.sqrt(gen.template_group), (g, t, 1, 1))
    if gen.skew:
        g_t[1:] = np.sqrt(gen.template_group) * (rng.exponential(1.0, (g - 1, t, 1, 1)) - 1.0)
    fixed_names = row.estimand == "fixed"
    sd_t = np.sqrt(1.0 - gen.template - gen.template_group - (gen.name if fixed_names else 0.0))

    def per_template(m: float, j: int) -> np.ndarray:  # [t]: group j's E[measure | template effects (, names)]
        lat = m + a_t[0, :, 0, 0][:, None] + g_t[j, :, 0, 0][:, None] + (b[j, 0, :, 0][None, :] if fixed_names
                                                                          else 0.0)
        return np.asarray(_mean_given(row.measure, lat, sd_t)).mean(axis=1)

    if row.templates_estimand == "fixed":
        base = per_template(mus[0], 0).mean()
        for j in range(1, g):
            # a bounded measure may not reach base + delta in these templates: then base - delta (the rules
            # are symmetric in the sign)
            sign = 1.0 if per_template(8.0, j).mean() - base - delta > 0 else -1.0
            mus[j] = optimize.brentq(lambda m, j=j, sign=sign: per_template(m, j).mean() - base - sign * delta,
                                     -8, 8, xtol=1e-12)
    eta = (mus[:, None, None, None] + a_t + g_t + b
           + rng.normal(0, np.sqrt(cell), (g, t, k, 1)) + rng.normal(0, np.sqrt(gen.matched_set), (1, t, 1, r))
           + rng.normal(0, np.sqrt(noise), (g, t, k, r)) * _spread_scale(gen, rng, g, t, k))
    y = _measure(row.measure, eta, rng)
    biased = np.zeros(t, dtype=bool)
    truth_t = np.stack([per_template(mus[j], j) for j in range(g)])
    if gen.sparse:
        biased = rng.random(t) < gen.sparse
        shift = gen.sparse_shift * (delta / margin)
        y[1:, biased] += shift  # groups 1.. (compared with group 0) carry it in the biased templates
        truth_t[1:, biased] += shift
    if row.missing:
        y[rng.random(y.shape) < row.missing] = np.nan
    if row.informative:
        lose = np.where(y[0] == 1, row.informative[0], row.informative[1])
        y[0][rng.random(y[0].shape) < lose] = np.nan
    sd_given = np.sqrt(1.0 - gen.name)
    truth = _mean_given(row.measure, mus[:, None] + b[:, 0, :, 0], sd_given).mean(axis=1)
    return y, truth, truth_t, biased


def _spread_scale(gen: Gen, rng: np.random.Generator, g: int, t: int, k: int) -> np.ndarray | float:
    """Each cell's multiplier of the within-cell noise, shape (g, t, k, 1) (1.0 without spread effects)."""
    var = gen.spread_template ** 2 + gen.spread_name ** 2 + gen.spread_tg ** 2
    if var == 0 and gen.spread_ratio == 1.0:
        return 1.0
    x = (rng.normal(0, gen.spread_template, (1, t, 1, 1)) + rng.normal(0, gen.spread_name, (g, 1, k, 1))
         + rng.normal(0, gen.spread_tg, (g, t, 1, 1)))
    ratio = np.where(np.arange(g) > 0, gen.spread_ratio, 1.0)[:, None, None, None]
    return np.exp(x - var) * ratio


@cache
def true_spread(gen: Gen) -> float:
    """The true log ratio of the mean within-cell SDs (groups 1.. over group 0) of a linear measure.

    A cell's answers vary by the matched-set effect and the scaled noise: its SD is
    ``sqrt(ms + noise m^2 exp(2 X - 2 var X))`` with ``m`` the group's ``spread_ratio``; the mean over
    cells is its expectation over ``X ~ N(0, var X)`` (Gauss-Hermite, 80 nodes).
    """
    rest = 1.0 - gen.template - gen.template_group - gen.name - gen.matched_set
    noise = rest * (1 - gen.rho)
    var = gen.spread_template ** 2 + gen.spread_name ** 2 + gen.spread_tg ** 2
    z, w = np.polynomial.hermite_e.hermegauss(80)
    x = np.sqrt(var) * z
    mean_sd = [float(np.sum(w * np.sqrt(gen.matched_set + noise * m ** 2 * np.exp(2 * x - 2 * var))) / w.sum())
               for m in (gen.spread_ratio, 1.0)]
    return float(np.log(mean_sd[0] / mean_sd[1]))


def _pairs(y: np.ndarray, ga: int, gb: int) -> PairData:
    _, t, k, r = y.shape
    tt, kk, _rr = np.meshgrid(np.arange(t), np.arange(k), np.arange(r), indexing="ij")
    x = y[ga].reshape(-1)
    yy = y[gb].reshape(-1)
    name = kk.reshape(-1).astype(np.intp)
    return PairData(x, yy, tt.reshape(-1).astype(np.intp), name, ("v",) * k, name_a=name, name_b=name,
                    template_labels=tuple(range(t)))


@dataclass
class Tally:
    """Counts over audits for one truth (``delta``) of a row."""

    n: int = 0
    fail_nomargin: int = 0  # verdict fail, no margin
    fail_margin: int = 0  # verdict fail, with the margin
    pass_margin: int = 0
    insufficient: int = 0
    raw_reject: int = 0  # crossed p < alpha ignoring the design rule
    cov95: int = 0
    cov90: int = 0
    n_cov: int = 0  # audits with a verdict (coverage denominator)
    raw_cov95: int = 0
    n_raw: int = 0
    pass_each: int = 0  # pass verdicts over comparisons (per comparison, not family-wise)
    n_each: int = 0
    guarded: int = 0  # comparisons whose pass the heterogeneity guard turned into inconclusive (per comparison)
    scen_false: int = 0  # audits where a scenario whose true difference is within the margin fails
    scen_sampled: int = 0  # audits that sampled at least one sparse-biased scenario
    scen_found: int = 0  # ... and named one (scenario-level verdict fail)
    tail: int = 0  # comparisons whose raw p-value is below alpha / (comparisons in the plan)
    sp_n: int = 0  # comparisons with a spread statistic (counted at a true difference of 0 only)
    sp_fail: int = 0  # ... whose spread verdict is fail
    sp_cov: int = 0  # ... whose 95% interval of the log SD ratio covers the truth (linear measures)
    sp_ncov: int = 0

    def add(self, o: Tally) -> None:
        for f in self.__dataclass_fields__:
            setattr(self, f, getattr(self, f) + getattr(o, f))


def _one(row: Row, delta: float, margin: float, rng: np.random.Generator, seed: int) -> Tally:
    ng = row.comparisons + 1
    mus = np.zeros(ng)
    if not row.gen.sparse:  # sparse rows: the difference is carried by the sparse templates alone
        mus[1:] = _mu_for(row.measure, delta)  # groups 1.. vs group 0 (the reference), each truly delta apart
    y, truth, truth_t, biased = _draw(row, mus, rng, delta, margin)
    scale = SCALE.get(row.measure, row.measure)
    sign = SIGN.get(row.measure, 1.0)
    tl = Tally()
    pas = []
    kw: dict[str, Any] = dict(alpha=row.alpha, confidence_level=1 - row.alpha, exact_threshold=25, n_resamples=0,
                              seed=seed, heterogeneity=False, names=row.estimand, secondary=False,
                              templates=row.templates_estimand)
    for j in range(1, ng):
        if row.judge is not None:  # the judge's scores, corrected by the labels (group j is A)
            from fairpair.analysis._corrected import analyze_corrected

            scores, h = judge_and_labels(row.judge, y[[0, j]], rng)
            pd = _pairs(scores, 1, 0)
            judged = analyze_pairs(pd, scale=scale, **kw)
            pas.append(analyze_corrected(pd, judged, h[1].reshape(-1), h[0].reshape(-1), scale=scale, **kw))
            continue
        pd = _pairs(y, j, 0)
        pas.append(analyze_pairs(pd, scale=scale, **kw))
    raw = np.array([np.nan if p.pvalue is None else p.pvalue for p in pas])
    adj = adjust(raw, row.correction if ng > 2 else "none")
    raw_m = np.array([np.nan if (q := p.pvalue_beyond(margin)) is None else q for p in pas])
    adj_m = adjust(raw_m, row.correction if ng > 2 else "none")
    ident: dict[str, Any] = dict(id="sim", target="sim", measure="m", attribute="a", design="d", group_a="A",
                                 group_b="B", primary=True)
    # the spread tests: their own family, with the plan's correction (as analyze_run)
    sp_raw = np.array([np.nan if p.within_spread is None else p.within_spread.pvalue for p in pas], dtype=float)
    sp_adj = adjust(sp_raw, row.correction if ng > 2 else "none")
    verdict_nm, verdict_m = [], []
    guarded = 0
    scen_false = found = False
    for j, (pa, pj, pmj) in enumerate(zip(pas, adj, adj_m, strict=True)):
        if delta != 0:  # the spread is tallied at a true difference of 0 only: its Fieller interval costs
            pa.within_spread = None
        if row.templates_estimand == "fixed" or row.gen.sparse:
            true = float((truth_t[j + 1] - truth_t[0]).mean()) if row.templates_estimand == "fixed" else delta
        else:
            true = truth[j + 1] - truth[0] if row.estimand == "fixed" else sign * delta
        r0 = finish(pa, pvalue_adjusted=pj, correction="x", family_size=len(pas), margin=None, alpha=row.alpha,
                    **ident)
        r1 = finish(pa, pvalue_adjusted=pj, correction="x", family_size=len(pas), margin=margin,
                    alpha=row.alpha, pvalue_margin_adjusted=pmj, spread_adjusted=(sp_adj[j], "x", len(pas)), **ident)
        verdict_nm.append(r0.verdict)
        verdict_m.append(r1.verdict)
        sp = r1.spread
        if delta == 0:
            tl.tail += pa.pvalue is not None and pa.pvalue < row.alpha / len(pas)
            if sp is not None and sp.verdict != "insufficient design":
                tl.sp_n += 1
                tl.sp_fail += sp.verdict == "fail"
                if row.measure in _LINEAR and sp.ci is not None:  # a None limit: Fieller's unbounded side
                    lo = -np.inf if sp.ci[0] is None else float(sp.ci[0])
                    hi = np.inf if sp.ci[1] is None else float(sp.ci[1])
                    tl.sp_ncov += 1
                    tl.sp_cov += lo <= true_spread(row.gen) <= hi
        sc = r1.scenarios
        if sc is not None:
            guarded += sc.heterogeneous and "heterogeneous average" in r1.verdict_rule
            d_t = truth_t[j + 1] - truth_t[0]
            for srow in sc.rows:
                tt = int(srow.template)
                scen_false |= srow.verdict == "fail" and abs(d_t[tt]) <= margin
                found |= srow.verdict == "fail" and bool(biased[tt])
        f = pa.fields
        # raw (ungated) coverage and rejection, to show why the design rule exists
        if f["se"] is not None and f["df"] is not None and f["estimate"] is not None:
            q95 = special.stdtrit(f["df"], 0.975) * f["se"]
            tl.n_raw += 1
            tl.raw_cov95 += abs(f["estimate"] - true) <= q95
            tl.raw_reject += (abs(f["estimate"]) > q95) if delta == 0 else 0
        if r0.verdict != "insufficient design" and pa.ci_alpha is not None:
            tl.n_cov += 1
            tl.cov95 += pa.ci_alpha[0] <= true <= pa.ci_alpha[1]
            eq = pa.ci_equivalence if pa.ci_equivalence is not None else pa.ci_alpha  # zero variance: no pass interval
            tl.cov90 += eq[0] <= true <= eq[1]
    tl.n = 1
    # family-wise: an audit counts once (any comparison)
    tl.fail_nomargin = int("fail" in verdict_nm)
    tl.fail_margin = int("fail" in verdict_m)
    tl.pass_margin = int("pass" in verdict_m)
    tl.pass_each = sum(v == "pass" for v in verdict_m)
    tl.n_each = len(verdict_m)
    tl.insufficient = int(all(v == "insufficient design" for v in verdict_nm))
    tl.guarded = int(guarded)  # over tl.n_each comparisons
    tl.scen_false = int(scen_false)
    tl.scen_sampled = int(biased.any())
    tl.scen_found = int(found and biased.any())
    return tl


def run_row(row: Row, audits: int, *, seed: int = 0) -> dict[str, Tally]:
    """Simulate ``audits`` audits of ``row`` at three truths: 0, the margin and twice the margin."""
    m = MARGINS[row.measure]
    out = {}
    for i, (key, delta) in enumerate((("null", 0.0), ("margin", m), ("power", 2 * m))):
        rng = np.random.default_rng([seed, i])
        tot = Tally()
        for a in range(audits):
            tot.add(_one(row, delta, m, rng, a))
        out[key] = tot
    return out


def with_estimand(row: Row, estimand: str) -> Row:
    return replace(row, estimand=estimand)


@dataclass(frozen=True)
class PolicyRow:
    """Audits in which the chatbot follows a policy: in each pair, with probability ``q``, group A gets
    "no" and group B "yes", else both get the same answer (yes or no, half and half); true difference
    ``-q``. At ``q`` near 1 every pair of an audit often disagrees the same way (the sign-flip case:
    :func:`fairpair.analysis._paired.sign_flip_interval`). ``templates`` x ``names`` x ``reps``, names
    fixed, yes/no measure, margin 5 points."""

    templates: int = 8
    q: float = 0.97
    names: int = 3
    reps: int = 2
    margin: float = 0.05
    alpha: float = 0.05

    @property
    def label(self) -> str:
        return (f"policy followed {self.q:.0%} of the time (A no, B yes); binary; {self.templates}T x "
                f"{self.names}N x {self.reps}R; names fixed")


def policy_audit(row: PolicyRow, rng: np.random.Generator) -> tuple[bool, bool | None, bool | None, str]:
    """One audit of ``row`` through ``analyze_pairs`` and ``finish``: (every pair disagrees the same way,
    the 95% interval covers ``-q`` (None without one), the 90% one does, verdict with the margin)."""
    T, k, r = row.templates, row.names, row.reps
    n = T * k * r
    disc = rng.random(n) < row.q
    same = (rng.random(n) < 0.5).astype(float)
    x = np.where(disc, 0.0, same)  # group A
    y = np.where(disc, 1.0, same)  # group B
    names = np.tile(np.repeat(np.arange(k), r), T)
    pd = PairData(x=x, y=y, clusters=np.repeat(np.arange(T), k * r), variants=names, name_a=names, name_b=names)
    pa = analyze_pairs(pd, scale="binary", alpha=row.alpha, confidence_level=1 - row.alpha, exact_threshold=25,
                       n_resamples=0, seed=0, names="fixed", secondary=False, heterogeneity=False)
    res = finish(pa, pvalue_adjusted=pa.pvalue, pvalue_margin_adjusted=pa.pvalue_beyond(row.margin),
                 correction="holm", family_size=1, margin=row.margin, alpha=row.alpha, id="c", target="t",
                 measure="m", attribute="a", design="d", group_a="A", group_b="B", primary=True)
    all_eq = res.se == 0 and res.estimate not in (None, 0)

    def covers(ci) -> bool | None:
        return None if not ci or None in ci else bool(ci[0] - 1e-12 <= -row.q <= ci[1] + 1e-12)

    return all_eq, covers(res.ci), covers(res.equivalence_ci), res.verdict


@dataclass
class PolicyTally:
    """Counts over the audits of a :class:`PolicyRow`."""

    n: int = 0
    all_eq: int = 0  # audits in the sign-flip case
    n_cov: int = 0
    cov95: int = 0
    cov90: int = 0
    n_cov_eq: int = 0  # ... in the sign-flip case
    cov95_eq: int = 0
    fail: int = 0
    insufficient: int = 0


def run_policy_row(row: PolicyRow, audits: int, *, seed: int = 0) -> PolicyTally:
    """Simulate ``audits`` audits of ``row`` (seeded by ``seed``)."""
    rng = np.random.default_rng(seed)
    t = PolicyTally()
    for _ in range(audits):
        eq, c95, c90, verdict = policy_audit(row, rng)
        t.n += 1
        t.all_eq += eq
        t.fail += verdict == "fail"
        t.insufficient += verdict == "insufficient design"
        if c95 is not None and verdict != "insufficient design":
            t.n_cov += 1
            t.cov95 += c95
            t.cov90 += bool(c90)
            if eq:
                t.n_cov_eq += 1
                t.cov95_eq += c95
    return t
