"""Fixtures of the importer tests: one mock run (measured and analysed) shared by the session."""

from __future__ import annotations

from pathlib import Path

import pytest

from import_helpers import make_mock_run


@pytest.fixture(scope="session")
def mock_run(tmp_path_factory) -> Path:
    from fairpair.analysis import analyze_run
    from fairpair.measures import measure_run

    run = make_mock_run(tmp_path_factory.mktemp("mock"))
    measure_run(run)
    analyze_run(run)
    return run
