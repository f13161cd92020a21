"""``fairpair export``: tables that open in pandas, with spreadsheet formulas neutralised."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from fairpair.cli import main
from fairpair.errors import FairpairError
from fairpair.report import export_run, write_report

FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _text_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if df[c].dtype == object or str(df[c].dtype).startswith("str")]


def test_csv_export_opens_in_pandas_and_neutralises_formulas(hostile_run, copy_run, capsys):
    run = copy_run(hostile_run)
    main(["export", str(run), "--format", "csv"])
    assert "answers:" in capsys.readouterr().out
    answers = pd.read_csv(run / "export" / "answers.csv")
    with sqlite3.connect(run / "store.sqlite") as conn:
        n = conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        raw = [r[0] for r in conn.execute("SELECT text FROM responses WHERE status='ok'")]
    assert len(answers) == n == 10 * 2 * 3 * 3
    assert answers["repetition"].dtype.kind == "i" and set(answers["group:origen"]) == {"espana", "magreb", "rumania"}
    for col in _text_columns(answers):
        for v in answers[col].dropna().astype(str):
            assert not v.startswith(FORMULA), (col, v)
            assert "\x00" not in v and "\x1b" not in v
    texts = list(answers["text"])
    assert any(t.startswith("'=HYPERLINK(") for t in texts)
    assert any(t.startswith("'+1+1") for t in texts) and any(t.startswith("'-2+3") for t in texts)
    assert any(t.startswith("'@SUM(A1:A2)") for t in texts) and any(t.startswith("'\t=1+1") for t in texts)
    assert sum(r.startswith("=") for r in raw) == sum(t.startswith("'=") for t in texts) > 0
    meas = pd.read_csv(run / "export" / "measurements.csv")
    assert set(meas["measure"]) == {"reembolso"} and set(meas["value_num"]) <= {0.0, 1.0}
    res = pd.read_csv(run / "export" / "results.csv")
    fail = res[(res["group_a"] == "magreb")].iloc[0]
    assert fail["verdict"] == "fail" and fail["ci_low"] < fail["ci_high"] < 0 and fail["b"] >= 0


def test_parquet_export_keeps_types_and_text(hostile_run, tmp_path):
    pytest.importorskip("pyarrow")
    paths = export_run(hostile_run, fmt="parquet", out=tmp_path)
    answers = pd.read_parquet(paths["answers"])
    assert len(answers) == 180 and answers["repetition"].dtype.kind == "i"
    texts = list(answers["text"])
    assert any(t.startswith("=HYPERLINK(") for t in texts)  # typed cells: no quote prefix needed
    assert not any("\x00" in t or "\x1b" in t for t in texts)
    verdicts = set(pd.read_parquet(paths["results"])["verdict"])
    assert "fail" in verdicts and verdicts <= {"fail", "pass", "inconclusive", "insufficient design"}


def test_invalid_utf8_and_nul_in_the_store(hostile_run, copy_run):
    run = copy_run(hostile_run)
    with sqlite3.connect(run / "store.sqlite") as conn:  # a row written by another tool
        case = conn.execute("SELECT case_id FROM cases LIMIT 1").fetchone()[0]
        conn.execute("INSERT INTO responses (target, case_id, status, text, attempts, created_at, model) "
                     "VALUES ('otro', ?, 'ok', CAST(? AS TEXT), 1, '2026-01-01', ?)",
                     (case, b"=bad \xff\xfe bytes", "m\x00odel"))
    paths = export_run(run, fmt="csv")
    answers = pd.read_csv(paths["answers"])
    row = answers[answers["target"] == "otro"].iloc[0]
    assert row["text"] == "'=bad \ufffd\ufffd bytes" and row["model"] == "model"
    html = write_report(run, language="en")["html"].read_text(encoding="utf-8")
    assert "\x00" not in html and "otro" in html


def test_unknown_format_is_a_user_error(hostile_run):
    with pytest.raises(FairpairError, match="unknown export format"):
        export_run(hostile_run, fmt="xlsx")


def test_parquet_without_pyarrow_is_a_user_error(hostile_run, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if not installed: the import raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(FairpairError, match=r"Parquet export needs pyarrow: pip install 'fairpair\[parquet\]'"):
        export_run(hostile_run, fmt="parquet", out=tmp_path / "pq")
    assert not list(tmp_path.rglob("*.parquet"))
