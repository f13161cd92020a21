"""Cluster bootstrap: determinism, agreement of the two engines, coverage."""

import numpy as np
import pytest

from fairpair.stats import (
    BootstrapResult,
    cluster_bootstrap,
    cluster_bootstrap_mean_difference,
    cluster_bootstrap_risk_difference,
)

# small cluster counts are the point of several tests here; the warning itself is tested below
pytestmark = pytest.mark.filterwarnings("ignore::fairpair.stats._bootstrap.FewClustersWarning")


def _clustered(seed, n_clusters=40, per=12, effect=0.1, binary=False):
    rng = np.random.default_rng(seed)
    clusters = np.repeat(np.arange(n_clusters), per)
    u = rng.normal(0, 1, n_clusters)[clusters]  # template effect shared by both groups
    v = rng.normal(0, 0.5, n_clusters)[clusters]  # template-specific gap
    x = u + v / 2 + rng.normal(0, 1, clusters.size) + effect / 2
    y = u - v / 2 + rng.normal(0, 1, clusters.size) - effect / 2
    if binary:
        x, y = (x > 0).astype(float), (y > 0).astype(float)
    return x, y, clusters


def test_same_seed_same_interval():
    x, y, cl = _clustered(1)
    a = cluster_bootstrap_mean_difference(x, y, cl, n_resamples=500, seed=11)
    b = cluster_bootstrap_mean_difference(x, y, cl, n_resamples=500, seed=11)
    c = cluster_bootstrap_mean_difference(x, y, cl, n_resamples=500, seed=12)
    assert isinstance(a, BootstrapResult)
    assert (a.ci.low, a.ci.high, a.standard_error) == (b.ci.low, b.ci.high, b.standard_error)
    np.testing.assert_array_equal(a.bootstrap_distribution, b.bootstrap_distribution)
    assert (a.ci.low, a.ci.high) != (c.ci.low, c.ci.high)
    assert a.seed == 11 and a.n_resamples == 500 and a.n_clusters == 40 and a.n_observations == 480


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
def test_generic_engine_equals_vectorised_engine(method):
    x, y, cl = _clustered(2, n_clusters=25, per=7)
    cl = np.array([f"template-{c}" for c in cl])
    fast = cluster_bootstrap_mean_difference(x, y, cl, n_resamples=300, seed=5, method=method)
    slow = cluster_bootstrap(x - y, np.mean, cl, n_resamples=300, seed=5, method=method)
    np.testing.assert_allclose(fast.bootstrap_distribution, slow.bootstrap_distribution, rtol=0, atol=1e-12)
    assert fast.statistic == pytest.approx(np.mean(x - y), abs=1e-14)
    assert fast.ci.low == pytest.approx(slow.ci.low, abs=1e-12)
    assert fast.ci.high == pytest.approx(slow.ci.high, abs=1e-12)


def test_percentile_and_basic_definitions():
    x, y, cl = _clustered(3)
    res = cluster_bootstrap_mean_difference(x, y, cl, n_resamples=400, seed=0)
    boot = res.bootstrap_distribution
    q = np.quantile(boot, [0.025, 0.975])
    assert (res.ci.low, res.ci.high) == pytest.approx((q[0], q[1]), abs=1e-15)
    assert res.standard_error == pytest.approx(boot.std(ddof=1))
    basic = cluster_bootstrap_mean_difference(x, y, cl, n_resamples=400, seed=0, method="basic")
    assert basic.ci.low == pytest.approx(2 * res.statistic - q[1])
    ci90 = res.confidence_interval(0.9)
    assert tuple(ci90) == pytest.approx(tuple(np.quantile(boot, [0.05, 0.95])), abs=1e-15)
    assert res.confidence_interval() is res.ci


def test_resamples_whole_clusters():
    # Every resample keeps clusters intact: with one pair per cluster value pattern, each
    # bootstrap mean is a mean of G cluster means drawn with replacement.
    cl = np.repeat(np.arange(4), [1, 2, 3, 4])
    d = np.repeat([1.0, 2.0, 3.0, 4.0], [1, 2, 3, 4])
    res = cluster_bootstrap(d, np.mean, cl, n_resamples=200, seed=1)
    assert set(np.round(res.bootstrap_distribution, 12)) <= {
        round(float(np.sum(np.array(c) * np.array(c))) / float(np.sum(c)), 12)
        for c in np.array(np.meshgrid(*[[1, 2, 3, 4]] * 4)).reshape(4, -1).T
    }


def test_tuple_data_generic():
    x, y, cl = _clustered(4, n_clusters=15, per=5)
    res = cluster_bootstrap((x, y), lambda a, b: np.mean(a) - np.mean(b), cl, n_resamples=200, seed=3)
    fast = cluster_bootstrap_mean_difference(x, y, cl, n_resamples=200, seed=3)
    np.testing.assert_allclose(res.bootstrap_distribution, fast.bootstrap_distribution, atol=1e-12)


def test_risk_difference_binary_and_missing():
    x, y, cl = _clustered(5, binary=True)
    x[3] = np.nan
    y[10] = np.nan
    res = cluster_bootstrap_risk_difference(x, y, cl, n_resamples=300, seed=2)
    keep = ~(np.isnan(x) | np.isnan(y))
    assert res.n_missing == 2 and res.n_observations == keep.sum()
    assert res.statistic == pytest.approx(np.mean(x[keep]) - np.mean(y[keep]))
    with pytest.raises(ValueError, match="binary"):
        cluster_bootstrap_risk_difference([0.5, 1], [0, 1], [0, 1])


def test_degenerate_inputs():
    one = cluster_bootstrap_mean_difference([1.0, 2.0, 3.0], [0.0, 0.0, 1.0], [7, 7, 7], n_resamples=50)
    assert one.n_clusters == 1 and "only one cluster" in one.note
    assert one.ci.low == one.ci.high == pytest.approx(5 / 3)
    empty = cluster_bootstrap_mean_difference([np.nan], [1.0], [0], n_resamples=50)
    assert np.isnan(empty.statistic) and empty.note == "no complete pairs"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"method": "studentized"}, "'percentile', 'basic', 'bca'"),
        ({"n_resamples": 0}, "n_resamples"),
        ({"confidence_level": 95}, r"\(0, 1\)"),
        ({"seed": "abc"}, "seed"),
    ],
)
def test_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cluster_bootstrap_mean_difference([1.0, 2.0], [0.0, 1.0], [0, 1], **kwargs)
    with pytest.raises(ValueError, match="clusters"):
        cluster_bootstrap_mean_difference([1.0, 2.0], [0.0, 1.0], [0])


@pytest.mark.slow
@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_coverage_simulation(method):
    # 300 clustered studies with true mean difference 0.1; nominal 90% intervals.
    rng = np.random.default_rng(20240501)
    hits = 0
    reps = 300
    for r in range(reps):
        x, y, cl = _clustered(int(rng.integers(1 << 30)), n_clusters=30, per=10, effect=0.1)
        ci = cluster_bootstrap_mean_difference(x, y, cl, n_resamples=1000, seed=r, confidence_level=0.9,
                                               method=method).ci
        hits += ci.low <= 0.1 <= ci.high
    coverage = hits / reps
    # binomial sd at 0.9 with 300 reps is 0.017; cluster bootstrap with 30 clusters undercovers slightly
    assert 0.83 <= coverage <= 0.96, coverage


@pytest.mark.slow
def test_ignoring_clusters_undercovers():
    # The point of resampling templates: an iid bootstrap of pairs is too narrow here.
    x, y, cl = _clustered(9, n_clusters=30, per=20)
    clustered = cluster_bootstrap_mean_difference(x, y, cl, n_resamples=2000, seed=0)
    iid = cluster_bootstrap_mean_difference(x, y, np.arange(x.size), n_resamples=2000, seed=0)
    # design effect here is about 1 + 19 * 0.11 = 3.1, i.e. a standard-error ratio near 1.76
    assert clustered.standard_error > 1.3 * iid.standard_error


def test_few_clusters_warns_and_twenty_do_not():
    import warnings

    from fairpair.stats import MIN_CLUSTERS_FOR_INTERVAL, FewClustersWarning, cluster_bootstrap

    rng = np.random.default_rng(3)
    assert MIN_CLUSTERS_FOR_INTERVAL == 20
    for g, warns in ((5, True), (19, True), (20, False)):
        cl = np.repeat(np.arange(g), 4)
        x = rng.normal(size=cl.size)
        y = rng.normal(size=cl.size)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            cluster_bootstrap_mean_difference(x, y, cl, n_resamples=50)
            cluster_bootstrap_risk_difference(x > 0, y > 0, cl, n_resamples=50)
            cluster_bootstrap(x, np.mean, cl, n_resamples=20)
        few = [w for w in rec if issubclass(w.category, FewClustersWarning)]
        assert len(few) == (3 if warns else 0)
        if warns:
            assert f"from {g} clusters" in str(few[0].message) and few[0].filename == __file__
