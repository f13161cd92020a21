"""``fairpair schema`` includes every target and measure option (issue 14, point 9)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from fairpair._plugins import plugin_names
from fairpair.battery._init import InitChoices, starter_battery
from fairpair.battery._jsonschema import battery_json_schema

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def schema():
    return battery_json_schema()


def test_every_kind_and_its_options_are_listed(schema):
    d = schema["$defs"]
    for kind in plugin_names("fairpair.targets"):
        assert {"$ref": f"#/$defs/Target_{kind}"} in d["TargetSpec"]["oneOf"]
    for kind in plugin_names("fairpair.measures"):
        assert {"$ref": f"#/$defs/Measure_{kind}"} in d["MeasureSpec"]["oneOf"]
    assert {"base_url", "api_key_env", "model", "timeout", "extra_headers"} <= set(d["Target_openai"]["properties"])
    assert {"url", "reply_path", "headers", "body"} <= set(d["Target_http"]["properties"])
    assert {"bias", "language", "fail_rate"} <= set(d["Target_mock"]["properties"])
    assert "rubric" in d["Measure_judge"]["properties"]
    assert d["Target_openai"]["additionalProperties"] is False


@pytest.mark.parametrize("path", ["examples/tienda_online/demo.yaml", "examples/tienda_online/battery.yaml"])
def test_the_examples_are_valid_against_it(schema, path):
    data = yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))
    data.pop("include", None)
    jsonschema.validate(data, schema)


def test_a_misspelt_target_option_is_invalid(schema):
    data = yaml.safe_load(starter_battery(InitChoices(target="ollama")))
    jsonschema.validate(data, schema)
    data["target"]["base_ulr"] = data["target"].pop("base_url")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)
