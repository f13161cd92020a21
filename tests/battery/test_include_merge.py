"""``include:`` merges an included battery underneath: mappings key by key, and a block of another ``kind``
replaces the included one whole (its options mean nothing for the new kind)."""

from __future__ import annotations

import json

from fairpair.battery import load_battery
from fairpair.testing import small_battery


def test_a_target_of_another_kind_replaces_the_included_one_and_of_the_same_kind_merges(tmp_path):
    base = small_battery(name="base", target={"kind": "mock", "latency": 0.0, "fail_rate": 0.0},
                         judge={"kind": "local", "temperature": 0.0, "max_tokens": 256},
                         measures={"tono": {"kind": "judge"}})
    (tmp_path / "battery.yaml").write_text(json.dumps(base), encoding="utf-8")
    (tmp_path / "audit.yaml").write_text(json.dumps({
        "include": ["battery.yaml"], "name": "audit",
        "target": {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None},
        "judge": {"kind": "local", "max_tokens": 64}}), encoding="utf-8")
    b = load_battery(tmp_path / "audit.yaml").battery
    assert b.name == "audit"
    assert b.target.kind == "openai" and b.target.options() == {
        "model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None}
    assert b.judge.kind == "local" and b.judge.options() == {"temperature": 0.0, "max_tokens": 64}
