"""Fixtures shared by the run engine's tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray (2 CPUs, no dashboard) whose workers import this checkout's ``src``; one per test module."""
    ray = pytest.importorskip("ray")
    src = str(Path(__file__).resolve().parents[2] / "src")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": src}})
    yield ray
    ray.shutdown()
