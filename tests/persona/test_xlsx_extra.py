"""openpyxl is behind the ``[xlsx]`` extra: without it, an .xlsx scene table names the install line."""

from __future__ import annotations

import sys

import pytest

from fairpair.errors import FairpairError
from fairpair.persona import read_scenes


def test_xlsx_without_openpyxl_names_the_extra(tmp_path, monkeypatch):
    openpyxl = pytest.importorskip("openpyxl")  # to write the workbook (the [dev] extra has it)
    sheet = tmp_path / "scenes.xlsx"
    wb = openpyxl.Workbook()
    wb.active.append(["Domain", "Scenario", "Prompt"])
    wb.save(sheet)
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # what an install without the extra looks like
    with pytest.raises(FairpairError) as ei:
        read_scenes(sheet)
    assert ei.value.file == str(sheet)
    assert "needs openpyxl" in ei.value.message
    assert ei.value.hint == "pip install 'fairpair[xlsx]' (or save the sheet as CSV)"
