"""The report costs what it needs (issue 14, point 10): no masking pattern without evidence to quote."""

from __future__ import annotations

from fairpair.battery import load_battery
from fairpair.measures import _mask
from fairpair.report._data import load_report_data
from fairpair.report._render import write_report
from fairpair.run import RunSettings, execute_run
from fairpair.testing import write_battery


def test_no_masker_is_built_without_evidence(tmp_path, monkeypatch):
    names = {"a": [f"Nombrea{i:03d}" for i in range(60)], "b": [f"Nombreb{i:03d}" for i in range(60)]}
    b = write_battery(tmp_path, {"kind": "mock"}, templates=1, names=names)
    execute_run(load_battery(b), tmp_path / "run", RunSettings(concurrency=8))
    built = []

    class Spy(_mask.Masker):
        def __init__(self, *a, **kw):
            built.append(1)
            super().__init__(*a, **kw)

    monkeypatch.setattr(_mask, "Masker", Spy)
    data = load_report_data(tmp_path / "run")
    paths = write_report(tmp_path / "run", data=data)
    assert paths["html"].exists() and data.n_cases == 120
    assert built == []
    assert "Nombrea001" in data.mask_values  # still known for the report's masking notes
