"""The mock follows the battery's language when its block gives none (issue 14, point 3: an English battery
answered in Spanish read 0% on every English keyword)."""

from __future__ import annotations

import json
import sqlite3

from fairpair.battery import load_battery
from fairpair.run import RunSettings, execute_run
from fairpair.testing import write_battery


def test_english_battery_gets_english_mock_answers(tmp_path):
    path = write_battery(tmp_path, {"kind": "mock", "refund": 0.5}, templates=2)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["language"] = "en"
    data["measures"] = {"refund": {"kind": "keywords", "any_of": ["full refund"]}}
    path.write_text(json.dumps(data), encoding="utf-8")
    lb = load_battery(path)
    execute_run(lb, tmp_path / "run", RunSettings(concurrency=2))
    con = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    texts = [t for (t,) in con.execute("SELECT text FROM responses WHERE status='ok'")]
    con.close()
    assert len(texts) == 16
    assert all(t.startswith("Hello") for t in texts)
    assert 0 < sum("full refund" in t for t in texts) < 16  # the keyword measure can vary
