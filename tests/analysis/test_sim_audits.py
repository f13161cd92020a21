"""A tiny, seeded run of benchmarks/sim_audits.py's simulation (the full table lives in benchmarks/HISTORY.md)."""

from __future__ import annotations

import numpy as np

from fairpair.analysis._simaudit import MARGINS, Gen, Row, run_row, true_mean


def test_true_means_are_exact():
    # binary: P(eta > cut) with eta ~ N(0, 1) is the base rate 0.7; continuous: the latent mean itself
    assert np.isclose(true_mean("binary", 0.0), 0.7) and true_mean("continuous", 0.3) == 0.3


def test_small_simulation_is_deterministic_and_calibrated():
    row = Row(Gen("reps rho 0.5", rho=0.5), "binary", templates=20, names=5, reps=3, estimand="random")
    a = run_row(row, 60, seed=3)
    b = run_row(row, 60, seed=3)
    assert a["null"] == b["null"] and a["power"] == b["power"]
    nul, pw = a["null"], a["power"]
    assert nul.insufficient == 0 and nul.fail_nomargin <= 8  # 60 audits at alpha 0.05: at most 8 by chance
    cov = (nul.cov95 + a["margin"].cov95 + pw.cov95) / (nul.n_cov + a["margin"].n_cov + pw.n_cov)
    assert 0.85 <= cov <= 1.0
    assert pw.fail_margin > nul.fail_margin  # twice the margin is found more often than nothing
    assert MARGINS["binary"] == 0.10


def test_small_designs_get_insufficient_design():
    row = Row(Gen("independent"), "binary", templates=3, names=3, reps=1, estimand="fixed")
    out = run_row(row, 10, seed=0)
    assert out["null"].insufficient == 10 and out["null"].fail_nomargin == 0 and out["null"].pass_margin == 0
