"""Noise-corrected dispersion against statsmodels' two-way ANOVA and by simulation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from fairpair.stats import (
    cell_means,
    corrected_dispersion,
    dispersion,
    dispersion_bootstrap,
    dispersion_permutation_test,
)


def _long(rng, scenes, subs, res, *, cell_sd, noise_sd, scene_sd=0.3, reps=1, conditions=("none",)):
    rows = []
    effects = {}
    for cond in conditions:
        for s in range(scenes):
            u = rng.normal(0, scene_sd)
            for a in subs:
                for b in res:
                    eff = effects.setdefault((cond, a, b), rng.normal(0, cell_sd))
                    for _ in range(reps):
                        sd = noise_sd[cond] if isinstance(noise_sd, dict) else noise_sd
                        rows.append({"scene": f"s{s}", "axis": "race", "sub": a, "res": b, "condition": cond,
                                     "value": 0.5 + u + eff + rng.normal(0, sd)})
    return pd.DataFrame(rows)


def test_matches_two_way_anova_residual_mean_square():
    rng = np.random.default_rng(1)
    df = _long(rng, 12, ["a", "b", "c"], ["x", "y"], cell_sd=0.05, noise_sd=0.1)
    res = corrected_dispersion(df)
    df["cell"] = df["sub"] + "|" + df["res"]
    fit = smf.ols("value ~ C(scene) + C(cell)", data=df).fit()
    m = df.groupby("cell")["value"].mean()
    ref = np.sqrt(max(m.var(ddof=1) - fit.mse_resid / 12, 0.0))
    assert res.per_axis["race"] == pytest.approx(ref, rel=1e-10)
    assert res.noise_per_axis["race"] == pytest.approx(fit.mse_resid / 12, rel=1e-10)
    assert res.raw_per_axis["race"] == pytest.approx(dispersion(cell_means(df), ddof=1).per_axis["race"], rel=1e-10)
    assert res.statistic == res.per_axis["race"] and res.n_scenes == {"race": 12}
    boot = dispersion_bootstrap(df, ddof=1, corrected=True, n_resamples=200, seed=3)
    assert boot.statistic == pytest.approx(res.statistic, rel=1e-12)


def test_repetitions_are_averaged_within_scene_and_cell():
    rng = np.random.default_rng(2)
    df = _long(rng, 8, ["a", "b"], ["x", "y"], cell_sd=0.1, noise_sd=0.2, reps=3)
    res = corrected_dispersion(df)
    df["cell"] = df["sub"] + "|" + df["res"]
    agg = df.groupby(["scene", "cell"], as_index=False)["value"].mean()
    fit = smf.ols("value ~ C(scene) + C(cell)", data=agg).fit()
    m = agg.groupby("cell")["value"].mean()
    assert res.per_axis["race"] == pytest.approx(np.sqrt(max(m.var(ddof=1) - fit.mse_resid / 8, 0)), rel=1e-10)


def test_noise_alone_inflates_the_raw_statistic_not_the_corrected_one():
    rng = np.random.default_rng(3)
    raw, corr = {}, {}
    for scenes in (5, 80):
        r, c = [], []
        for _ in range(60):
            df = _long(rng, scenes, ["a", "b", "c"], ["x", "y", "z"], cell_sd=0.0, noise_sd=0.1)
            out = corrected_dispersion(df)
            r.append(out.raw_per_axis["race"])
            c.append(out.per_axis["race"])
        raw[scenes], corr[scenes] = np.mean(r), np.mean(c)
    # the raw SD shrinks like 0.1 / sqrt(scenes); the corrected one is near 0 at both sizes
    assert raw[5] == pytest.approx(0.1 / np.sqrt(5), rel=0.2)
    assert raw[5] > 3 * raw[80]
    assert corr[5] < 0.5 * raw[5] and corr[80] < 0.5 * raw[80]


def test_permutation_test_on_the_corrected_dispersion_when_only_noise_differs():
    rng = np.random.default_rng(4)
    rejections_raw = rejections_corr = 0
    n = 40
    for k in range(n):
        df = _long(rng, 20, ["a", "b", "c"], ["x", "y"], cell_sd=0.0, noise_sd={"power": 0.2, "none": 0.05},
                   conditions=("power", "none"))
        kw = dict(ddof=1, conditions=("power", "none"), n_resamples=199, seed=k)
        rejections_raw += dispersion_permutation_test(df, **kw).pvalue < 0.05
        res = dispersion_permutation_test(df, corrected=True, **kw)
        rejections_corr += res.pvalue < 0.05
    assert "noise-corrected" in res.method
    assert rejections_raw / n > 0.5  # the raw statistic "finds" a power effect in pure noise
    assert rejections_corr / n <= 0.2
