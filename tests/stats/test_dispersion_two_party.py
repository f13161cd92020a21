"""Two-party statistics: unpaired dispersion test (vs scipy), cell-mean CIs and least-change identity (vs pandas)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairpair.stats import (
    cell_means_bootstrap,
    least_change_identity,
    unpaired_dispersion_permutation_test,
)

AXES = {"race": ["a", "b", "c"], "gender": ["f", "m"]}


def _unmatched(seed, n_power=3, n_equal=4, bump=0.8):
    """Scenes p0.. only under 'power', e0.. only under 'equal' (different situations, as in Tan & Lee's release)."""
    rng = np.random.default_rng(seed)
    rows = []
    for cond, n in (("power", n_power), ("equal", n_equal)):
        for s in range(n):
            for axis, groups in AXES.items():
                for sub in groups:
                    for res in groups:
                        b = bump if (cond == "power" and res == groups[0]) else 0.0
                        rows.append((f"{cond[0]}{s}", axis, sub, res, rng.normal(b, 1), cond))
    return pd.DataFrame(rows, columns=["scene", "axis", "sub", "res", "value", "condition"])


def _disp(frame, ddof):
    cells = frame.groupby(["axis", "sub", "res"])["value"].mean()
    return cells.groupby(level="axis").std(ddof=ddof).mean()


@pytest.mark.parametrize(("seed", "ddof"), [(1, 1), (2, 0), (3, 1)])
def test_unpaired_matches_scipy_exact_independent_permutation(seed, ddof):
    """3 + 4 scenes: scipy enumerates the 35 splits; our Monte Carlo null has the same support and p within MC error."""
    df = _unmatched(seed)
    names = np.array(sorted(df.scene.unique(), key=lambda s: (s[0] != "p", s)))  # p0 p1 p2 e0 .. e3
    by_scene = {s: g for s, g in df.groupby("scene")}

    def statistic(x, y):
        return (_disp(pd.concat([by_scene[s] for s in names[x.astype(int)]]), ddof)
                - _disp(pd.concat([by_scene[s] for s in names[y.astype(int)]]), ddof))

    for alternative in ("two-sided", "less", "greater"):
        ref = stats.permutation_test((np.arange(3.0), np.arange(3.0, 7.0)), statistic, permutation_type="independent",
                                     vectorized=False, n_resamples=np.inf, alternative=alternative)
        ours = unpaired_dispersion_permutation_test(df, ddof=ddof, conditions=("power", "equal"), n_resamples=20_000,
                                                    seed=seed, alternative=alternative)
        assert ours.statistic == pytest.approx(ref.statistic, abs=1e-12)
        assert ours.statistic == pytest.approx(_disp(df[df.condition == "power"], ddof)
                                               - _disp(df[df.condition == "equal"], ddof), abs=1e-12)
        assert ours.n == 7 and not ours.exact and ours.n_resamples == 20_000 and ours.alternative == alternative
        assert abs(ours.pvalue - ref.pvalue) < 0.015  # MC standard error <= 0.0036
        support = np.unique(np.round(ref.null_distribution, 10))
        assert np.isin(np.round(ours.null_distribution, 10), support).all()
        assert len(np.unique(np.round(ours.null_distribution, 10))) == support.size


def test_unpaired_seed_and_other_conditions():
    df = _unmatched(4)
    extra = df[df.condition == "equal"].assign(condition="other", scene=lambda d: "o" + d.scene)
    a = unpaired_dispersion_permutation_test(df, ddof=1, conditions=("power", "equal"), n_resamples=500, seed=9)
    b = unpaired_dispersion_permutation_test(pd.concat([df, extra]), ddof=1, conditions=("power", "equal"),
                                             n_resamples=500, seed=9)
    assert a.pvalue == b.pvalue and a.statistic == pytest.approx(b.statistic, abs=1e-12) and a.seed == 9
    np.testing.assert_array_equal(a.null_distribution, b.null_distribution)


def test_unpaired_errors_and_undefined_statistic():
    df = _unmatched(5)
    shared = df.assign(scene=df.scene.str[1:])  # p0 and e0 become the same scene "0"
    with pytest.raises(ValueError, match="both conditions"):
        unpaired_dispersion_permutation_test(shared, ddof=1, conditions=("power", "equal"))
    with pytest.raises(ValueError, match="pair"):
        unpaired_dispersion_permutation_test(df, ddof=1, conditions=("power",))
    with pytest.raises(ValueError, match="not found"):
        unpaired_dispersion_permutation_test(df, ddof=1, conditions=("power", "nope"))
    # one cell per axis: the SD with ddof=1 is undefined everywhere -> NaN statistic and p, not p = 1
    one = df[(df["sub"] == "a") | (df["sub"] == "f")]
    one = one[(one.res == "a") | (one.res == "f")]
    r = unpaired_dispersion_permutation_test(one, ddof=1, conditions=("power", "equal"), n_resamples=50)
    assert np.isnan(r.statistic) and np.isnan(r.pvalue)


# ------------------------------------------------------------ cell means


def test_cell_means_bootstrap_matches_pandas_resample_by_resample():
    df = _unmatched(6, n_power=5, n_equal=3)
    df = df[~((df.axis == "gender") & (df["sub"] == "m") & (df.res == "m") & (df.condition == "power"))]
    df.loc[df.index[::11], "value"] = np.nan
    r = cell_means_bootstrap(df, condition="power", n_resamples=120, confidence_level=0.9, seed=8)
    g = df[df.condition == "power"].dropna(subset=["value"])
    ref = g.groupby(["axis", "sub", "res"])["value"].agg(["mean", "size"])
    # cells with data only, sorted; (m, m) left out
    assert list(zip(r.axis, r.sub, r.res, strict=True)) == list(ref.index)
    np.testing.assert_allclose(r.mean, ref["mean"], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(r.n, ref["size"])
    scenes = sorted(g.scene.unique())
    by_scene = {s: x for s, x in g.groupby("scene")}
    idx = np.random.default_rng(8).integers(0, len(scenes), size=(120, len(scenes)))
    boot = pd.DataFrame([pd.concat([by_scene[scenes[i]] for i in row]).groupby(["axis", "sub", "res"])["value"].mean()
                         for row in idx])
    lo, hi = boot.quantile(0.05).to_numpy(), boot.quantile(0.95).to_numpy()
    np.testing.assert_allclose(r.ci_low, lo, atol=1e-12)
    np.testing.assert_allclose(r.ci_high, hi, atol=1e-12)
    assert r.n_scenes == 5 and r.n_resamples == 120 and r.seed == 8 and r.confidence_level == 0.9
    one = cell_means_bootstrap(df[df.scene == "e0"], condition="equal", n_resamples=10)
    assert one.n_scenes == 1 and np.isnan(one.ci_low).all() and np.isfinite(one.mean).all()
    with pytest.raises(ValueError, match="not found"):
        cell_means_bootstrap(df, condition="nope")


# ------------------------------------------------------------ least change


def _persona(seed, n_scenes=8, low="b", side="sub"):
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_scenes):
        for cond in ("power", "equal"):
            for axis, groups in AXES.items():
                for sub in groups:
                    for res in groups:
                        shift = -0.3 if {"sub": sub, "res": res}[side] == low else 0.0
                        rows.append((f"s{s}", axis, sub, res, 1.0 + shift + rng.normal(0, 0.4), cond))
    return pd.DataFrame(rows, columns=["scene", "axis", "sub", "res", "value", "condition"])


@pytest.mark.parametrize("condition", [None, "power"])
def test_least_change_identity_matches_pandas(condition):
    df = _persona(1)
    df.loc[df.index[::7], "value"] = np.nan  # NaN values are ignored
    r = least_change_identity(df, axis="race", side="sub", condition=condition, n_resamples=0, n_permutations=0)
    g = df[(df.axis == "race") & ((df.condition == condition) if condition else True)].dropna(subset=["value"])
    means = g.groupby("sub")["value"].mean().sort_values()
    assert r.identity == means.index[0] == "b" and r.runner_up == means.index[1]
    assert r.mean == pytest.approx(means.iloc[0], abs=1e-12)
    assert r.runner_up_mean == pytest.approx(means.iloc[1], abs=1e-12)
    assert r.means == pytest.approx(means.to_dict(), abs=1e-12)
    assert r.stability is None and r.test is None and r.n_scenes == 8 and r.condition == condition


def test_least_change_stability_by_hand():
    """Each resample draws 8 scenes with replacement (the cluster bootstrap's draws); pandas recomputes the means."""
    df = _persona(2, low="c", side="res")
    r = least_change_identity(df, axis="race", side="res", condition="equal", n_resamples=150, seed=5,
                              n_permutations=0)
    g = df[(df.axis == "race") & (df.condition == "equal")]
    scenes = sorted(g.scene.unique())
    by_scene = {s: x for s, x in g.groupby("scene")}
    idx = np.random.default_rng(5).integers(0, len(scenes), size=(150, len(scenes)))
    wins = [pd.concat([by_scene[scenes[i]] for i in row]).groupby("res")["value"].mean().idxmin() == r.identity
            for row in idx]
    assert r.identity == "c" and r.stability == pytest.approx(np.mean(wins), abs=1e-12)
    assert 0.5 < r.stability <= 1 and r.n_resamples == 150 and r.seed == 5


def test_least_change_runner_up_test_matches_scipy_exact():
    df = _persona(3, n_scenes=7, low="m")
    r = least_change_identity(df, axis="gender", side="sub", n_resamples=10, seed=0, n_permutations=9999)
    per_scene = df[df.axis == "gender"].groupby(["scene", "sub"])["value"].mean().unstack()
    a, b = per_scene[r.identity].to_numpy(), per_scene[r.runner_up].to_numpy()
    ref = stats.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                                 n_resamples=np.inf, vectorized=True)
    assert r.identity == "m" and r.runner_up == "f"
    assert r.test.exact and r.test.n == 7
    assert r.test.statistic == pytest.approx(ref.statistic, abs=1e-12)
    assert r.test.pvalue == pytest.approx(ref.pvalue, abs=1e-12)


def test_least_change_degenerate_and_errors():
    df = _persona(4)
    single = df[df["sub"] == "a"]
    r = least_change_identity(single, axis="race", side="sub", n_resamples=20)
    assert r.identity == "a" and r.runner_up is None and r.runner_up_mean is None and r.test is None
    assert r.stability == 1.0
    one_scene = df[df.scene == "s0"]
    r1 = least_change_identity(one_scene, axis="race", side="res", n_resamples=20, n_permutations=0)
    assert r1.stability is None and r1.n_scenes == 1
    with pytest.raises(ValueError, match="side"):
        least_change_identity(df, axis="race", side="both")
    with pytest.raises(ValueError, match="no rows"):
        least_change_identity(df, axis="religion", side="sub")
    with pytest.raises(ValueError, match="no rows"):
        least_change_identity(df, axis="race", side="sub", condition="nope")
    with pytest.raises(ValueError, match="seed"):
        least_change_identity(df, axis="race", side="sub", seed=-1)
    with pytest.raises(ValueError, match="n_resamples"):
        least_change_identity(df, axis="race", side="sub", n_resamples=-1)
    r2 = least_change_identity(df, axis="race", side="sub", n_resamples=5, seed=None, n_permutations=0)
    assert isinstance(r2.seed, int)
