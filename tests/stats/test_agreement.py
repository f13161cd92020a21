"""Tests for fairpair.stats' agreement statistics (Cohen, Fleiss, Krippendorff); reference values from
sklearn, statsmodels, the krippendorff package and published examples."""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion_matrix
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from fairpair.stats import (
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    krippendorff_alpha,
    landis_koch,
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


def _sk_kappa(a, b, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cohen_kappa_score(a, b, **kw)


# -- Cohen's kappa ----------------------------------------------------------------------


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("name", list(PAIRS))
def test_cohen_kappa_equals_sklearn(name, weights):
    a, b = PAIRS[name]
    if weights and isinstance(a[0], str):
        pytest.skip("weighted kappa on unordered strings is not meaningful")
    res = cohen_kappa(a, b, weights=weights)
    assert res.statistic == pytest.approx(_sk_kappa(a, b, weights=weights), abs=1e-12)
    assert res.n == len(a)


def test_cohen_kappa_known_value():
    # 2x2 table [[20, 5], [10, 15]]: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    a = [1] * 25 + [0] * 25
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    res = cohen_kappa(a, b)
    assert res.observed_agreement == pytest.approx(0.7)
    assert res.expected_agreement == pytest.approx(0.5)
    assert res.statistic == pytest.approx(0.4)
    assert res.interpretation == "fair"


def test_cohen_kappa_explicit_labels_change_weighted_kappa():
    a, b = [1, 2, 2, 4], [1, 2, 4, 4]
    res = cohen_kappa(a, b, weights="linear", labels=[1, 2, 3, 4])
    assert res.labels == (1, 2, 3, 4)
    assert res.statistic == pytest.approx(_sk_kappa(a, b, weights="linear", labels=[1, 2, 3, 4]))
    assert res.statistic != pytest.approx(cohen_kappa(a, b, weights="linear").statistic)


def test_cohen_kappa_undefined_when_one_category():
    res = cohen_kappa(["ok"] * 6, ["ok"] * 6)
    assert math.isnan(res.statistic)
    assert math.isnan(_sk_kappa(["ok"] * 6, ["ok"] * 6))
    assert "undefined" in res.note and res.observed_agreement == 1.0
    assert res.interpretation == "undefined"


def test_cohen_kappa_missing_pairs_dropped():
    res = cohen_kappa([1, 2, None, 2, float("nan")], [1, 2, 1, 1, 2])
    assert res.n == 3
    assert res.statistic == pytest.approx(_sk_kappa([1, 2, 2], [1, 2, 1]))
    assert "2 pair(s)" in res.note


def test_cohen_kappa_errors():
    with pytest.raises(ValueError, match="weights must be one of"):
        cohen_kappa([1, 2], [1, 2], weights="cubic")
    with pytest.raises(ValueError, match="differ in length"):
        cohen_kappa([1, 2], [1])
    with pytest.raises(ValueError, match="not in labels"):
        cohen_kappa([1, 2], [1, 3], labels=[1, 2])
    with pytest.raises(ValueError, match="no pair"):
        cohen_kappa([None], [1])


@pytest.mark.parametrize(
    "value, band",
    [(-0.1, "poor"), (0.0, "slight"), (0.2, "slight"), (0.35, "fair"), (0.5, "moderate"),
     (0.7, "substantial"), (0.81, "almost perfect"), (1.0, "almost perfect"), (math.nan, "undefined")],
)
def test_landis_koch(value, band):
    assert landis_koch(value) == band


# -- confusion matrix ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["likert_close", "strings", "binary"])
def test_confusion_matrix_equals_sklearn(name):
    judge, human = PAIRS[name]
    res = confusion_matrix(judge, human)
    expected = sk_confusion_matrix(human, judge, labels=list(res.labels))
    np.testing.assert_array_equal(res.matrix, expected)
    assert res.agreement == pytest.approx(np.trace(expected) / expected.sum())
    frame = res.to_frame()
    assert frame.index.name == "human" and frame.columns.name == "judge"


def test_confusion_matrix_with_labels():
    res = confusion_matrix(["a", "b"], ["a", "a"], labels=["a", "b", "c"])
    np.testing.assert_array_equal(res.matrix, [[1, 1, 0], [0, 0, 0], [0, 0, 0]])


# -- Fleiss' kappa --------------------------------------------------------------------------


def _sm_fleiss(r):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm_fleiss_kappa(aggregate_raters(np.asarray(r))[0])


FLEISS_SETS = {
    "random_3cat_4raters": rng.integers(0, 3, (40, 4)),
    "mostly_agree": np.column_stack([_A, _A, _B, _A]),
    "two_raters": np.column_stack([_A, _B]),
    "strings": np.array([["ok", "ok", "no"], ["no", "no", "no"], ["ok", "no", "no"],
                         ["ok", "ok", "ok"], ["no", "ok", "no"]]),
}


@pytest.mark.parametrize("name", list(FLEISS_SETS))
def test_fleiss_kappa_equals_statsmodels(name):
    r = FLEISS_SETS[name]
    res = fleiss_kappa(r)
    assert res.statistic == pytest.approx(_sm_fleiss(r), abs=1e-12)
    assert (res.n_items, res.n_raters) == r.shape


def test_fleiss_kappa_published_example():
    # Fleiss (1971) table as reproduced on Wikipedia: 10 items, 14 raters, kappa = 0.210.
    table = np.array([
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ])
    ratings = np.array([np.repeat(np.arange(5), row) for row in table])
    res = fleiss_kappa(ratings)
    assert res.statistic == pytest.approx(0.2099, abs=1e-4)
    assert res.statistic == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)


def test_fleiss_kappa_all_one_category_is_undefined():
    r = np.full((5, 3), "ok")
    res = fleiss_kappa(r)
    assert math.isnan(res.statistic) and math.isnan(_sm_fleiss(np.full((5, 3), 1)))
    assert "undefined" in res.note


def test_fleiss_kappa_drops_incomplete_rows_and_validates():
    r = np.array([[1, 1, 2], [2, 2, 2], [1, np.nan, 1], [1, 2, 1]], dtype=float)
    res = fleiss_kappa(r)
    assert res.n_items == 3 and "1 item(s)" in res.note
    assert res.statistic == pytest.approx(_sm_fleiss(r[[0, 1, 3]].astype(int)))
    with pytest.raises(ValueError, match="at least 2 raters"):
        fleiss_kappa([[1], [2]])
    with pytest.raises(ValueError, match="two-dimensional"):
        fleiss_kappa([1, 2, 3])


# -- Krippendorff's alpha --------------------------------------------------------------------

# Krippendorff (2011), the worked example with missing data (4 coders x 12 units).
K2011 = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
    [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
])
_R = rng.integers(1, 5, (3, 25)).astype(float)
_R[0, :4] = np.nan
_R[2, 10] = np.nan
KRIPP_SETS = {"k2011": K2011, "random_missing": _R, "two_raters": np.vstack([_A, _B]).astype(float)}


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("name", list(KRIPP_SETS))
def test_krippendorff_alpha_equals_package(name, level):
    data = KRIPP_SETS[name]
    res = krippendorff_alpha(data, level)
    assert res.statistic == pytest.approx(krippendorff.alpha(data, level_of_measurement=level), abs=1e-10)


def test_krippendorff_alpha_published_values():
    # Krippendorff (2011): nominal 0.743, ordinal 0.815, interval 0.849.
    assert krippendorff_alpha(K2011, "nominal").statistic == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(K2011, "ordinal").statistic == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(K2011, "interval").statistic == pytest.approx(0.849, abs=5e-4)
    res = krippendorff_alpha(K2011, "nominal")
    assert res.n_units == 11 and res.n_values == 40  # unit 12 has one value only


def test_krippendorff_alpha_string_labels_with_order():
    data = np.array([["bajo", "medio", "alto", None], ["bajo", "alto", "alto", "medio"]], dtype=object)
    order = ["bajo", "medio", "alto"]
    res = krippendorff_alpha(data, "ordinal", labels=order)
    coded = np.array([[0, 1, 2, np.nan], [0, 2, 2, 1]])
    assert res.statistic == pytest.approx(krippendorff.alpha(coded, level_of_measurement="ordinal"))
    with pytest.raises(ValueError, match="numeric"):
        krippendorff_alpha(data, "interval")


def test_krippendorff_alpha_degenerate():
    same = np.array([[2, 2, 2, np.nan], [2, 2, 2, 2]])
    with pytest.raises(ValueError):
        krippendorff.alpha(same, level_of_measurement="nominal")  # the package refuses
    res = krippendorff_alpha(same)
    assert math.isnan(res.statistic) and "undefined" in res.note
    lonely = np.array([[1, np.nan], [np.nan, 2]])
    assert "fewer than two" in krippendorff_alpha(lonely).note
    with pytest.raises(ValueError, match="level must be one of"):
        krippendorff_alpha(same, "ratio")


def test_measures_keeps_the_old_names():
    import fairpair.stats as st
    from fairpair.measures import _calibration as cal

    for name in ("cohen_kappa", "fleiss_kappa", "krippendorff_alpha", "confusion_matrix", "landis_koch",
                 "CohenKappaResult", "FleissKappaResult", "KrippendorffAlphaResult", "ConfusionMatrixResult"):
        assert getattr(cal, name) is getattr(st, name)


def test_stats_import_does_not_load_pandas():
    import subprocess
    import sys

    code = "import sys, fairpair.stats as s; s.cohen_kappa; s.krippendorff_alpha; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
