"""Tan & Lee dispersion, permutation tests (vs scipy) and variant heterogeneity (vs scipy)."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairpair.stats import (
    cell_means,
    dispersion,
    dispersion_bootstrap,
    dispersion_permutation_test,
    paired_permutation_test,
    variant_heterogeneity,
)


def _long(seed, n_scenes=8, conditions=("power", "no_power"), bump_size=0.3):
    rng = np.random.default_rng(seed)
    rows = []
    axes = {"race": ["a", "b", "c"], "gender": ["f", "m"], "age": ["young", "mid", "old"]}
    for scene in range(n_scenes):
        for cond in conditions:
            for axis, groups in axes.items():
                for sub in groups:
                    for res in groups:
                        bump = bump_size if (cond == "power" and sub == groups[0]) else 0.0
                        rows.append((f"s{scene}", axis, sub, res, rng.normal(bump, 1), cond))
    return pd.DataFrame(rows, columns=["scene", "axis", "sub", "res", "value", "condition"])


@pytest.mark.parametrize("ddof", [0, 1])
def test_dispersion_matches_pandas_groupby(ddof):
    df = _long(1)
    sub = df[df.condition == "power"]
    means = sub.groupby(["axis", "sub", "res"])["value"].mean()
    per_axis = means.groupby(level="axis").std(ddof=ddof)
    res = dispersion(cell_means(df, condition="power"), ddof=ddof)
    assert res.statistic == pytest.approx(per_axis.mean(), abs=1e-12)
    for axis, sd in per_axis.items():
        assert res.per_axis[axis] == pytest.approx(sd, abs=1e-12)
    assert res.n_cells == {"age": 9, "gender": 4, "race": 9}
    assert res.ddof == ddof


def test_dispersion_requires_ddof_and_handles_small_axes():
    with pytest.raises(TypeError):
        dispersion({"a": [1.0, 2.0]})  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="0, 1"):
        dispersion({"a": [1.0, 2.0]}, ddof=2)
    res = dispersion({"a": [1.0, 3.0], "b": [5.0], "c": [np.nan, 2.0, 4.0]}, ddof=1)
    assert np.isnan(res.per_axis["b"]) and "['b']" in res.note
    assert res.statistic == pytest.approx(np.mean([np.std([1, 3], ddof=1), np.std([2, 4], ddof=1)]))
    constant = dispersion({"a": [2.0, 2.0, 2.0]}, ddof=0)
    assert constant.statistic == 0.0


def test_dispersion_bootstrap_statistic_and_determinism():
    df = _long(2)
    data = {c: df[c].to_numpy() for c in df.columns}  # plain mapping works too
    a = dispersion_bootstrap(data, ddof=1, condition="power", n_resamples=300, seed=4)
    b = dispersion_bootstrap(df, ddof=1, condition="power", n_resamples=300, seed=4)
    assert a.statistic == pytest.approx(dispersion(cell_means(df, condition="power"), ddof=1).statistic, abs=1e-12)
    np.testing.assert_array_equal(a.bootstrap_distribution, b.bootstrap_distribution)
    assert a.n_clusters == 8 and a.ci.low < a.statistic < a.ci.high
    # one resample by hand: scenes drawn with replacement -> recompute from rows
    rng = np.random.default_rng(4)
    idx = rng.integers(0, 8, size=(300, 8))[0]
    scenes = [f"s{i}" for i in range(8)]
    sub = df[df.condition == "power"]
    parts = pd.concat([sub[sub.scene == scenes[i]] for i in idx])
    by_hand = parts.groupby(["axis", "sub", "res"])["value"].mean().groupby(level="axis").std(ddof=1).mean()
    assert a.bootstrap_distribution[0] == pytest.approx(by_hand, abs=1e-12)
    with pytest.raises(ValueError, match="not found"):
        dispersion_bootstrap(df, ddof=1, condition="other")


@pytest.mark.parametrize("seed", range(20))
def test_paired_permutation_exact_matches_scipy(seed):
    rng = np.random.default_rng(6000 + seed)
    n = int(rng.integers(3, 11))
    a = rng.normal(0, 1, n)
    b = a + rng.normal(rng.normal(0, 0.5), 1, n)
    if seed % 5 == 0:
        b = a.copy()  # all differences zero
    for alternative in ("two-sided", "less", "greater"):
        res = paired_permutation_test(a, b, alternative=alternative)
        ref = stats.permutation_test(
            (a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
            alternative=alternative, n_resamples=np.inf, vectorized=True,
        )
        assert res.exact and res.n_resamples == 2**n
        assert res.statistic == pytest.approx(ref.statistic, abs=1e-12)
        assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-12)
        np.testing.assert_allclose(np.sort(res.null_distribution), np.sort(ref.null_distribution), atol=1e-12)


def test_paired_permutation_monte_carlo():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.5, 1, 40), rng.normal(0, 1, 40)
    r1 = paired_permutation_test(a, b, n_resamples=5000, seed=1)
    r2 = paired_permutation_test(a, b, n_resamples=5000, seed=1)
    assert not r1.exact and r1.pvalue == r2.pvalue
    assert r1.pvalue == pytest.approx(stats.ttest_rel(a, b).pvalue, abs=0.02)
    assert r1.pvalue >= 2 / 5001


def test_dispersion_permutation_exact_by_brute_force():
    df = _long(5, n_scenes=4)
    res = dispersion_permutation_test(df, ddof=1, conditions=("power", "no_power"), n_resamples=100)
    assert res.exact and res.n_resamples == 16 and res.n == 4

    def disp(frame, cond):
        sub = frame[frame.condition == cond]
        return sub.groupby(["axis", "sub", "res"])["value"].mean().groupby(level="axis").std(ddof=1).mean()

    observed = disp(df, "power") - disp(df, "no_power")
    assert res.statistic == pytest.approx(observed, abs=1e-12)
    null = []
    for flips in itertools.product([0, 1], repeat=4):
        swapped = df.copy()
        for i, f in enumerate(flips):
            if f:
                m = swapped.scene == f"s{i}"
                swapped.loc[m, "condition"] = swapped.loc[m, "condition"].map({"power": "no_power",
                                                                               "no_power": "power"})
        null.append(disp(swapped, "power") - disp(swapped, "no_power"))
    np.testing.assert_allclose(np.sort(res.null_distribution), np.sort(null), atol=1e-12)
    null = np.array(null)
    gamma = abs(observed) * 100 * np.finfo(float).eps
    p = min(1.0, 2 * min(np.mean(null <= observed + gamma), np.mean(null >= observed - gamma)))
    assert res.pvalue == pytest.approx(p, abs=1e-12)


def test_dispersion_permutation_detects_power_effect():
    df = _long(7, n_scenes=30, bump_size=1.0)
    res = dispersion_permutation_test(df, ddof=1, conditions=("power", "no_power"), n_resamples=2000, seed=0)
    assert not res.exact and res.statistic > 0 and res.pvalue < 0.05


def test_unmatched_scene_dropped():
    df = _long(8, n_scenes=3)
    df = df[~((df.scene == "s2") & (df.condition == "no_power"))]
    res = dispersion_permutation_test(df, ddof=0, conditions=("power", "no_power"))
    assert res.n == 2 and "1 scenes" in res.note


# ------------------------------------------------------------ heterogeneity


def _variants(seed, binary=True):
    rng = np.random.default_rng(7000 + seed)
    k = int(rng.integers(2, 6))
    variant = rng.integers(0, k, 600)
    effect = rng.normal(0, 0.15, k)[variant]
    x = rng.random(600) < 0.5 + effect / 2 if binary else rng.normal(effect, 1)
    y = rng.random(600) < 0.5 - effect / 2 if binary else rng.normal(0, 1, 600)
    names = np.array([f"name{v}" for v in variant])
    return x.astype(float), y.astype(float), names


@pytest.mark.parametrize("seed", range(20))
def test_binary_heterogeneity_matches_chi2_contingency(seed):
    x, y, names = _variants(seed)
    res = variant_heterogeneity(x, y, names, kind="binary")
    labels = np.unique(names)
    table = np.array([[np.sum((x == 1) & (y == 0) & (names == v)), np.sum((x == 0) & (y == 1) & (names == v))]
                      for v in labels])
    ref = stats.chi2_contingency(table, correction=False)
    assert res.statistic == pytest.approx(ref.statistic, abs=1e-10)
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-10)
    assert res.df == ref.dof
    for e, v in zip(res.variants, labels, strict=True):
        sel = names == v
        assert e.variant == v and e.n == sel.sum()
        assert e.effect == pytest.approx(x[sel].mean() - y[sel].mean(), abs=1e-12)
        assert e.ci.low <= e.effect <= e.ci.high


@pytest.mark.parametrize("seed", range(20))
def test_continuous_heterogeneity_matches_kruskal(seed):
    x, y, names = _variants(seed, binary=False)
    res = variant_heterogeneity(x, y, names, kind="continuous")
    d = x - y
    ref = stats.kruskal(*[d[names == v] for v in np.unique(names)])
    assert res.statistic == pytest.approx(ref.statistic, abs=1e-10)
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-10)
    np.testing.assert_allclose(res.effects, [d[names == v].mean() for v in np.unique(names)], atol=1e-12)


def test_heterogeneity_degenerate():
    x = np.array([1, 1, 0, 0, 1, 0], dtype=float)
    res = variant_heterogeneity(x, x.copy(), ["a", "a", "b", "b", "c", "c"])
    assert res.pvalue == 1.0 and "nothing to compare" in res.note
    one_way = variant_heterogeneity([1, 1, 1, 1], [0, 0, 1, 0], ["a", "a", "b", "b"])
    assert one_way.pvalue == 1.0 and "same group" in one_way.note
    flat = variant_heterogeneity([1.0, 2.0, 3.0], [0.0, 1.0, 2.0], ["a", "b", "c"], kind="continuous")
    assert flat.pvalue == 1.0 and flat.note == "all paired differences are equal"
    with pytest.raises(ValueError, match="'binary', 'continuous'"):
        variant_heterogeneity([1], [0], ["a"], kind="ordinal")
