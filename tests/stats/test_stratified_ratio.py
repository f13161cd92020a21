"""The four-fifths ratio with templates fixed (one posting, or these postings): the point estimate is
statsmodels' Mantel-Haenszel risk ratio for equal requests per posting, its standard error with one
posting Nam & Blackwelder's matched-pairs variance, with several the stratified sum written out by
hand; through the ranking analysis a single posting's ratios get verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import StratifiedTable

from fairpair.analysis import analyze_ranking
from fairpair.analysis._simranking import RankingScenario, simulate_ranking_frame
from fairpair.stats import ratio_to_best, selection_ratio, set_mean


def _picks(rng: np.random.Generator, n: int, p: list[float]) -> np.ndarray:
    """(n, k) top-pick table: one 1 per row, drawn with probabilities ``p``."""
    top = np.zeros((n, len(p)))
    top[np.arange(n), rng.choice(len(p), size=n, p=p)] = 1.0
    return top


def test_equal_requests_per_posting_give_the_mantel_haenszel_risk_ratio():
    rng = np.random.default_rng(3)
    t, n = 4, 150
    tmpl = np.repeat(np.arange(t), n)
    top = np.vstack([_picks(rng, n, p) for p in ([0.4, 0.2, 0.2, 0.2], [0.3, 0.3, 0.2, 0.2],
                                                   [0.35, 0.15, 0.25, 0.25], [0.3, 0.2, 0.3, 0.2])])
    r = selection_ratio(top, tmpl, columns=(1, 0), templates="fixed")
    tables = np.dstack([[[top[tmpl == s, 1].sum(), n - top[tmpl == s, 1].sum()],
                         [top[tmpl == s, 0].sum(), n - top[tmpl == s, 0].sum()]] for s in range(t)])
    assert r.ratio == pytest.approx(StratifiedTable(tables).riskratio_pooled)
    assert r.templates == "fixed" and "stratified" in r.method


def test_one_posting_is_the_matched_pairs_ratio_of_nam_and_blackwelder():
    """var(log RR) = (b + c) / ((a + b)(a + c)) of the paired 2 x 2 table (Nam & Blackwelder 2002), times
    n / (n - 1) (the sample variance of the linearised values), with the one-sample t's n - 1 df."""
    rng = np.random.default_rng(8)
    n = 400
    top = _picks(rng, n, [0.2, 0.3, 0.25, 0.25])
    top[:7] = np.nan  # unread answers are left out
    r = selection_ratio(top, np.zeros(n), columns=(0, 1), templates="fixed")
    keep = ~np.isnan(top[:, 0])
    x, y = top[keep, 0], top[keep, 1]
    m = int(keep.sum())
    a, b, c = np.sum((x == 1) & (y == 1)), np.sum((x == 1) & (y == 0)), np.sum((x == 0) & (y == 1))
    assert r.ratio == pytest.approx((a + b) / (a + c))
    assert r.log_se == pytest.approx(math.sqrt((b + c) / ((a + b) * (a + c)) * m / (m - 1)))
    assert r.df == pytest.approx(m - 1)
    q = stats.t.ppf(0.975, m - 1)
    ci = r.confidence_interval(0.95)
    assert (ci.low, ci.high) == (pytest.approx(r.ratio * math.exp(-q * r.log_se)),
                                 pytest.approx(r.ratio * math.exp(q * r.log_se)))


def test_several_postings_add_their_variances_stratified():
    """se(log R)^2 = sum_t s_t^2 / (n_t T^2) of the linearised x / r_a - y / r_b, r the mean over postings of
    the posting rates, each s_t^2 written from the posting's picks (x y = 0: one top pick per answer)."""
    rng = np.random.default_rng(21)
    sizes = [60, 90, 120]
    tmpl = np.repeat(np.arange(3), sizes)
    top = np.vstack([_picks(rng, n, p) for n, p in zip(sizes, ([0.3, 0.3, 0.4], [0.2, 0.4, 0.4],
                                                                 [0.25, 0.35, 0.4]), strict=True)])
    r = selection_ratio(top, tmpl, columns=(0, 1), templates="fixed")
    pa = np.array([top[tmpl == s, 0].mean() for s in range(3)])
    pb = np.array([top[tmpl == s, 1].mean() for s in range(3)])
    ra, rb = pa.mean(), pb.mean()
    n = np.array(sizes, dtype=float)
    s2 = n / (n - 1) * (pa / ra**2 + pb / rb**2 - (pa / ra - pb / rb) ** 2)
    assert r.ratio == pytest.approx(ra / rb)
    assert r.log_se == pytest.approx(math.sqrt(np.sum(s2 / n) / 9))
    w = s2 / n / 9
    assert r.df == pytest.approx(w.sum() ** 2 / np.sum(w**2 / (n - 1)))


def test_set_mean_fixed_is_the_mean_of_the_posting_means():
    v = np.array([1, 0, 0, 1, 1, 0, 0, 0, np.nan], dtype=float)
    t = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    r = set_mean(v, t, templates="fixed")
    assert r.estimate == pytest.approx((0.5 + 0.25) / 2)
    assert r.se == pytest.approx(math.sqrt((np.var([1, 0, 0, 1], ddof=1) / 4 + np.var([1, 0, 0, 0], ddof=1) / 4) / 4))
    assert r.n_templates == 2 and r.n_values == 8
    with pytest.raises(ValueError, match="templates"):
        set_mean(v, t, templates="these")


def test_ratio_to_best_fixed_with_a_given_reference_is_the_pairwise_ratio():
    rng = np.random.default_rng(4)
    top = _picks(rng, 300, [0.4, 0.3, 0.3])
    rows = ratio_to_best(top, np.zeros(300), labels=["a", "b", "c"], reference="a", templates="fixed")
    r = selection_ratio(top, np.zeros(300), columns=(1, 0), templates="fixed")
    b = next(x for x in rows if x.group == "b")
    assert b.ratio == pytest.approx(r.ratio)
    assert (b.ci.low, b.ci.high) == (pytest.approx(r.confidence_interval(0.95).low),
                                     pytest.approx(r.confidence_interval(0.95).high))


def test_one_posting_gives_four_fifths_verdicts_with_templates_fixed():
    sc = RankingScenario(k=4, templates=1, names=1, reps=1200, group_worth=(0.0, -0.9, 0.0, 0.0),
                         sd_name=0.0, sd_template_group=0.0, sd_template_name=0.0)
    frame = simulate_ranking_frame(sc, np.random.default_rng(6))
    frame["variant"] = frame["case_id"]  # every request its own name set, as in a published hiring audit
    random_ = analyze_ranking(frame, secondary=False)
    fixed = analyze_ranking(frame, templates="fixed", secondary=False)
    assert {r.verdict for r in random_.ratios} == {"insufficient design"}
    verdicts = {r.group: r.verdict for r in fixed.ratios}
    assert verdicts["g2"] == "fail"  # planted well below four fifths of the others
    assert "insufficient design" not in verdicts.values()
    assert fixed.templates == "fixed" and "these scenarios" in fixed.estimand
    assert all(s.rate_ci is not None and None not in s.rate_ci for s in fixed.selection)
