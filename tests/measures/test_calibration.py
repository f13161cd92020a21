"""Tests for fairpair.measures._calibration; reference values from sklearn,
statsmodels, the krippendorff package and published examples."""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion_matrix
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from fairpair.measures._calibration import (
    CalibrationReport,
    disagreement_by_group,
    score_labels,
)

rng = np.random.default_rng(20260211)
_A = rng.integers(1, 6, 80)
_B = np.clip(_A + rng.integers(-1, 2, 80), 1, 5)

PAIRS = {
    "likert_close": (_A, _B),
    "likert_random": (rng.integers(1, 6, 60), rng.integers(1, 6, 60)),
    "binary": ([0, 1, 1, 0, 1, 1, 0, 0, 1, 1], [0, 1, 0, 0, 1, 1, 1, 0, 1, 1]),
    "strings": (["ok", "ok", "refuse", "partial", "ok", "refuse", "partial", "ok"],
                ["ok", "partial", "refuse", "partial", "ok", "ok", "partial", "refuse"]),
    "perfect": ([1, 2, 3, 1, 2, 3], [1, 2, 3, 1, 2, 3]),
    "opposite": ([0, 1, 0, 1], [1, 0, 1, 0]),
    "one_rater_constant": ([1, 1, 1, 1, 1], [1, 2, 1, 2, 1]),
}


def _sm_fleiss(r):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm_fleiss_kappa(aggregate_raters(np.asarray(r))[0])


def _sk_kappa(a, b, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cohen_kappa_score(a, b, **kw)


# -- disagreement by group ---------------------------------------------------------------------


def test_disagreement_two_groups_fisher():
    human = [1] * 40
    judge = [1] * 18 + [0] * 2 + [1] * 10 + [0] * 10  # group a: 2/20 wrong, group b: 10/20
    groups = ["a"] * 20 + ["b"] * 20
    res = disagreement_by_group(judge, human, groups)
    assert res.table.loc["a", "disagreements"] == 2 and res.table.loc["b", "disagreements"] == 10
    assert res.table.loc["b", "disagreement_rate"] == pytest.approx(0.5)
    expected = stats.fisher_exact([[2, 18], [10, 10]])
    assert res.rate_test.name == "fisher_exact"
    assert res.rate_test.pvalue == pytest.approx(expected.pvalue)
    assert res.rate_test.statistic == pytest.approx(expected.statistic)
    assert res.max_rate_difference == pytest.approx(0.4)
    assert res.error_test is None


def test_disagreement_three_groups_chi2_and_kruskal():
    groups = np.repeat(["es", "ma", "ro"], 30)
    human = np.tile([1, 2, 3, 4, 5], 18)
    shift = np.concatenate([np.zeros(30), rng.integers(0, 3, 30), rng.integers(0, 2, 30)])
    judge = np.clip(human + shift, 1, 5).astype(int)
    res = disagreement_by_group(judge, human, groups, ordinal=True)
    dis = (judge != human).astype(int)
    table = np.array([[30 - dis[groups == g].sum(), dis[groups == g].sum()] for g in ["es", "ma", "ro"]])
    chi = stats.chi2_contingency(table, correction=False)
    assert res.rate_test.name == "chi2" and res.rate_test.dof == 2
    assert res.rate_test.statistic == pytest.approx(chi.statistic)
    assert res.rate_test.pvalue == pytest.approx(chi.pvalue)
    err = np.abs(judge - human)
    kw = stats.kruskal(*(err[groups == g] for g in ["es", "ma", "ro"]))
    assert res.error_test.statistic == pytest.approx(kw.statistic)
    assert res.error_test.pvalue == pytest.approx(kw.pvalue)
    assert res.table.loc["es", "mean_abs_error"] == 0.0


def test_disagreement_nothing_to_test():
    res = disagreement_by_group([1, 2, 1, 2], [1, 2, 1, 2], ["a", "a", "b", "b"], ordinal=True)
    assert res.rate_test.pvalue == 1.0 and "identical" in res.rate_test.note
    assert res.error_test.pvalue == 1.0 and res.error_test.note
    assert res.max_rate_difference == 0.0
    with pytest.raises(ValueError, match="two groups"):
        disagreement_by_group([1, 2], [1, 1], ["a", "a"])


# -- score_labels -----------------------------------------------------------------------------


@pytest.fixture
def labels_df() -> pd.DataFrame:
    n = 60
    h1 = rng.integers(1, 6, n)
    h2 = np.clip(h1 + rng.integers(-1, 2, n), 1, 5)
    h3 = np.clip(h1 + rng.integers(-1, 2, n), 1, 5).astype(float)
    h3[:5] = np.nan
    judge = np.clip(h1 + rng.integers(-1, 2, n), 1, 5)
    return pd.DataFrame({"judge": judge, "h1": h1, "h2": h2, "h3": h3,
                         "group": np.tile(["espana", "magreb", "rumania", "china"], n // 4)})


def test_score_labels_ordinal(labels_df):
    df = labels_df
    rep = score_labels(df, "judge", ["h1", "h2", "h3"], "group", ordinal=True)
    assert isinstance(rep, CalibrationReport)
    assert rep.labels == (1, 2, 3, 4, 5) and rep.n_items == 60
    for col in ["h1", "h2"]:
        assert rep.kappa_by_rater[col].statistic == pytest.approx(
            _sk_kappa(df["judge"], df[col], weights="quadratic"))
    keep = df["h3"].notna()
    assert rep.kappa_by_rater["h3"].statistic == pytest.approx(
        _sk_kappa(df.loc[keep, "judge"], df.loc[keep, "h3"].astype(int), weights="quadratic"))
    assert rep.mean_kappa == pytest.approx(np.mean([k.statistic for k in rep.kappa_by_rater.values()]))
    complete = df[keep]
    assert rep.fleiss_humans.statistic == pytest.approx(
        _sm_fleiss(complete[["h1", "h2", "h3"]].to_numpy().astype(int)))
    assert rep.fleiss_with_judge.statistic == pytest.approx(
        _sm_fleiss(complete[["h1", "h2", "h3", "judge"]].to_numpy().astype(int)))
    assert rep.krippendorff_humans.statistic == pytest.approx(krippendorff.alpha(
        df[["h1", "h2", "h3"]].to_numpy(dtype=float).T, level_of_measurement="ordinal"))
    assert rep.krippendorff_with_judge.statistic == pytest.approx(krippendorff.alpha(
        df[["h1", "h2", "h3", "judge"]].to_numpy(dtype=float).T, level_of_measurement="ordinal"))
    assert rep.confusion.n == rep.n_consensus <= 60
    assert set(rep.disagreement.table.index) == {"espana", "magreb", "rumania", "china"}
    assert rep.disagreement.error_test.name == "kruskal"
    summary = rep.summary()
    assert list(summary.columns) == ["measure", "value", "interpretation"]
    assert "Fleiss kappa humans + judge" in set(summary["measure"])


def test_score_labels_nominal_single_rater_no_group():
    df = pd.DataFrame({"judge": ["ok", "ok", "refuse", "ok"], "human": ["ok", "refuse", "refuse", "ok"]})
    rep = score_labels(df, "judge", ["human"])
    assert rep.kappa_by_rater["human"].statistic == pytest.approx(_sk_kappa(df["judge"], df["human"]))
    assert rep.fleiss_humans is None and rep.krippendorff_humans is None and rep.mean_human_kappa is None
    assert rep.disagreement is None
    np.testing.assert_array_equal(rep.confusion.matrix, sk_confusion_matrix(df["human"], df["judge"]))


def test_score_labels_degenerate_all_agree_one_category():
    df = pd.DataFrame({"judge": ["ok"] * 6, "h1": ["ok"] * 6, "h2": ["ok"] * 6, "g": ["a", "b"] * 3})
    rep = score_labels(df, "judge", ["h1", "h2"], "g")
    assert math.isnan(rep.mean_kappa) and math.isnan(rep.fleiss_with_judge.statistic)
    assert math.isnan(rep.krippendorff_with_judge.statistic)
    assert rep.disagreement.rate_test.pvalue == 1.0
    assert any("undefined" in n for n in rep.notes)


def test_score_labels_validates_columns(labels_df):
    with pytest.raises(ValueError, match="not in the table"):
        score_labels(labels_df, "judge", ["h9"])
    with pytest.raises(ValueError, match="also listed"):
        score_labels(labels_df, "judge", ["judge", "h1"])
    with pytest.raises(ValueError, match="at least one"):
        score_labels(labels_df, "judge", [])
