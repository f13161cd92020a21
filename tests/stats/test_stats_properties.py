"""Property-based checks (hypothesis) and import hygiene."""

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

from fairpair.stats import adjust, mcnemar_table, wilcoxon

counts = st.integers(min_value=0, max_value=400)


@settings(max_examples=150, deadline=None)
@given(counts, counts, counts, counts)
def test_mcnemar_table_properties(a, b, c, d):
    res = mcnemar_table([[a, b], [c, d]])
    swapped = mcnemar_table([[a, c], [b, d]])  # exchange the groups
    if a + b + c + d == 0:
        assert np.isnan(res.pvalue)
        return
    assert 0.0 <= res.pvalue <= 1.0
    assert res.pvalue == swapped.pvalue
    assert res.risk_difference == -swapped.risk_difference
    ci = res.confidence_interval()
    assert -1.0 <= ci.low <= res.risk_difference <= ci.high <= 1.0
    if b != c:
        ref = sm_mcnemar([[a, b], [c, d]], exact=res.exact, correction=False)
        assert abs(res.pvalue - ref.pvalue) < 1e-10


@settings(max_examples=20, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.just(np.nan)), min_size=1, max_size=40))
def test_adjust_properties(p):
    p = np.array(p)
    for method, sm in (("holm", "holm"), ("bh", "fdr_bh")):
        out = adjust(p, method)
        finite = ~np.isnan(p)
        assert np.array_equal(np.isnan(out), ~finite)
        assert np.all(out[finite] >= p[finite] - 1e-15) and np.all(out[finite] <= 1)
        if finite.any():
            np.testing.assert_allclose(out[finite], multipletests(p[finite], method=sm)[1], atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=2, max_size=60), st.integers(-3, 3))
def test_wilcoxon_shift_equivariance(values, shift):
    x = np.array(values, dtype=float)
    y = np.zeros_like(x)
    r0 = wilcoxon(x, y)
    r1 = wilcoxon(x + shift, y)
    assert r1.hodges_lehmann == r0.hodges_lehmann + shift
    assert -1.0 <= r0.rank_biserial <= 1.0
    ci = r0.confidence_interval()
    assert ci.low <= r0.hodges_lehmann <= ci.high


def test_import_is_light():
    code = ("import sys, fairpair.stats; "
            "print('pandas' in sys.modules, 'statsmodels' in sys.modules, 'scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]


def test_public_api_is_complete():
    import fairpair.stats as fs

    for name in fs.__all__:
        assert getattr(fs, name) is not None
    assert "pandas" not in fs.__all__
