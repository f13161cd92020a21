"""Nine identical yes/no pairs must not establish equivalence (the bootstrap collapses there)."""

import numpy as np

from fairpair.analysis._paired import PairData, analyze_pairs, finish
from fairpair.stats import mcnemar


def _verdict(x, y, clusters):
    pd = PairData(x=np.asarray(x, float), y=np.asarray(y, float), clusters=np.asarray(clusters),
                  variants=np.zeros(len(x), dtype=int))
    pa = analyze_pairs(pd, scale="binary", alpha=0.05, confidence_level=0.95, exact_threshold=25,
                       n_resamples=500, seed=0)
    res = finish(pa, pvalue_adjusted=pa.pvalue, correction="holm", family_size=1, margin=0.03, alpha=0.05,
                 id="c", target="t", measure="m", attribute="a", design="d", group_a="g1", group_b="g2",
                 primary=True)
    return pa, res


def test_no_discordant_pairs_is_inconclusive_with_newcombe_interval():
    pa, res = _verdict([1] * 9, [1] * 9, [0, 0, 0, 1, 1, 1, 2, 2, 2])
    lo, hi = mcnemar(np.ones(9), np.ones(9)).confidence_interval(0.95)
    assert res.ci == [lo, hi] and hi - lo > 0.2          # not the bootstrap's zero-width [0, 0]
    assert res.verdict == "inconclusive"
    assert "Newcombe" in res.note


def test_many_pairs_keep_the_bootstrap_interval():
    rng = np.random.default_rng(1)
    x = (rng.random(600) < 0.7).astype(float)
    y = np.where(rng.random(600) < 0.8, x, 1 - x)
    pa, res = _verdict(x, y, np.repeat(np.arange(20), 30))
    assert "Newcombe" not in (res.note or "")
