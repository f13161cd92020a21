"""The one Wilson and one t interval of fairpair.stats, against statsmodels and scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from fairpair.stats import t_interval, wilson_interval


@pytest.mark.parametrize("count,n", [(0, 10), (3, 10), (10, 10), (17, 40), (1, 1), (250, 1000)])
@pytest.mark.parametrize("level", [0.90, 0.95, 0.99])
def test_wilson_equals_statsmodels(count, n, level):
    lo, hi = proportion_confint(count, n, alpha=1 - level, method="wilson")
    assert wilson_interval(count, n, level) == pytest.approx((lo, hi), abs=1e-12)


def test_wilson_without_cases_is_nan():
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
@pytest.mark.parametrize("level", [0.90, 0.95])
def test_t_interval_equals_scipy_ttest_rel(alternative, level):
    rng = np.random.default_rng(11)
    x, y = rng.normal(3, 1, 25), rng.normal(2.6, 1, 25)
    d = x - y
    ref = stats.ttest_rel(x, y, alternative=alternative).confidence_interval(level)
    got = t_interval(float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)), d.size - 1, level, alternative)
    assert got == pytest.approx((ref.low, ref.high), rel=1e-12)


def test_t_interval_undefined_inputs_are_nan():
    assert all(math.isnan(v) for v in t_interval(1.0, 0.5, 0))
    assert all(math.isnan(v) for v in t_interval(float("nan"), 0.5, 5))
    assert t_interval(2.0, 0.0, 5) == (2.0, 2.0)
