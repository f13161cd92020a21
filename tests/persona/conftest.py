"""Fixtures: synthetic results in the column layout of Tan & Lee's (2025) release (see tan_lee_synth)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tan_lee_synth import synthetic_release


@pytest.fixture(scope="session")
def release_frame() -> pd.DataFrame:
    return synthetic_release()


@pytest.fixture(scope="session")
def release_files(tmp_path_factory, release_frame) -> list[Path]:
    """One CSV per model, as the release splits them."""
    d = tmp_path_factory.mktemp("tan_lee_release")
    out = []
    for model, g in release_frame.groupby("model_abbrv", sort=True):
        p = d / f"{model}_data.csv"
        g.to_csv(p, index=False)
        out.append(p)
    return out
