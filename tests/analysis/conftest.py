"""Fixtures of the analysis tests: mock runs (helpers in analysis_runs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis_runs import battery_dict, make_run


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("runs")
    return {
        "biased": make_run(tmp, "biased", battery_dict(bias={"magreb": {"refund": 0.3, "words_factor": 0.8}})),
        "fair": make_run(tmp, "fair", battery_dict(templates=30, repetitions=3)),
    }
