"""Values as written: every text value of a battery reaches the model as the user typed it.

YAML 1.1 (PyYAML's default) reads ``02142`` as 2142, ``0777`` as 511, ``12:30`` as
750, ``0x1F`` as 31 and ``NO``/``off``/``yes`` as booleans. Each value below is
checked in the rendered prompt (system, context message, user turn) and in the
exact body the ``openai`` target would send.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairpair.battery import load_battery
from fairpair.battery._yaml import plain_scalar
from fairpair.cases import expand
from fairpair.errors import BatteryError
from fairpair.run._engine import request_for
from fairpair.targets.openai import OpenAITarget

CASES = ["02142", "0777", "12:30", "0x1F", "NO", "off", "yes", "~", "1e3", ".inf", "89.00", "True", "+5", "-0"]

BATTERY = """\
schema_version: 1
name: escrito
seed: 3
repetitions: 2
attributes:
  cp:
    signal: postal_code
    slot: cp
    context_field: crm.cp
    neutral: 28045
    groups:
      a: {{variants: [{value}]}}
      b: {{variants: [28001]}}
slots:
  hora: {value}
context_channels:
  message: {{content: "CRM: {{crm}}"}}
templates:
  - id: t
    system: "Código {{cp}} / {{crm.cp}} / {{crm.extra}} / {{hora}}"
    context: {{crm: {{extra: {value}, lista: [{value}]}}}}
    turns: ["Mi código postal es {{cp}}, a las {{hora}}."]
designs:
  - kind: counterfactual
    attribute: cp
analysis:
  comparisons:
    - {{measure: m, attribute: cp, margin: 0.030}}
measures:
  m: {{kind: word_count}}
"""


def _load(tmp_path: Path, value: str):
    p = tmp_path / "b.yaml"
    p.write_text(BATTERY.format(value=value), encoding="utf-8")
    return load_battery(p)


@pytest.mark.parametrize("value", CASES)
def test_value_reaches_the_model_as_written(tmp_path, value):
    lb = _load(tmp_path, value)
    case = next(c for c in expand(lb) if c.groups["cp"] == "a")
    assert case.variants["cp"] == value
    assert case.turns == [f"Mi código postal es {value}, a las {value}."]
    assert case.messages[0]["content"] == f"Código {value} / {value} / {value} / {value}"
    assert case.messages[1]["content"].startswith("CRM: extra: ")
    assert case.context["crm"] == {"extra": value, "lista": [value], "cp": value}
    # the exact bytes the openai target would send carry the text as written
    t = OpenAITarget({"model": "m", "api_key_env": None})
    req = request_for(case, [*case.messages, {"role": "user", "content": case.turns[0]}])
    body = json.loads(t.preview(req)["body"])
    assert body["messages"][-1]["content"] == f"Mi código postal es {value}, a las {value}."
    assert f"cp: {value}" in body["messages"][1]["content"] or f"cp: '{value}'" in body["messages"][1]["content"]


def test_yaml_block_keeps_bare_values_bare(tmp_path):
    lb = _load(tmp_path, "02142")
    case = next(c for c in expand(lb) if c.groups["cp"] == "a")
    assert case.messages[1]["content"] == "CRM: extra: 02142\nlista:\n- 02142\ncp: 02142"


def test_numbers_stay_numbers_where_the_schema_wants_them(tmp_path):
    lb = _load(tmp_path, "02142")
    b = lb.battery
    assert b.repetitions == 2 and b.seed == 3
    assert b.analysis.comparisons[0].margin == 0.03
    assert b.attributes["cp"].neutral == "28045"


def test_a_number_field_refuses_a_hex_text(tmp_path):
    p = tmp_path / "b.yaml"
    p.write_text(BATTERY.format(value="1").replace("seed: 3", "seed: 0x1F"), encoding="utf-8")
    with pytest.raises(BatteryError) as exc:
        load_battery(p)
    assert exc.value.key == "seed" and exc.value.line == 3


@pytest.mark.parametrize("written,what", [("true", "a boolean"), ("false", "a boolean"), ("null", "null (no value)")])
def test_a_value_that_must_be_quoted_says_so(tmp_path, written, what):
    p = tmp_path / "b.yaml"
    p.write_text(BATTERY.format(value="1").replace("b: {variants: [28001]}", f"b: {{variants: [{written}]}}"),
                 encoding="utf-8")
    with pytest.raises(BatteryError) as exc:
        load_battery(p)
    e = exc.value
    assert f"{written} is read by YAML as {what}, not as text" in str(e)
    assert e.hint == f'quote it to keep the text: - "{written}"'
    assert e.line == 13 and e.key == "attributes.cp.groups.b.variants[0]"


def test_a_quoted_slot_hint_names_the_key(tmp_path):
    p = tmp_path / "b.yaml"
    p.write_text(BATTERY.format(value="1").replace("  hora: 1", "  hora: true"), encoding="utf-8")
    with pytest.raises(BatteryError) as exc:
        load_battery(p)
    assert exc.value.hint == 'quote it to keep the text: hora: "true"' and exc.value.line == 15


@pytest.mark.parametrize("text,value", [("7", 7), ("-3", -3), ("0.15", 0.15), ("true", True), ("false", False),
                                        ("null", None), ("", None), ("02142", "02142"), ("1e3", "1e3"),
                                        ("12:30", "12:30"), ("~", "~"), ("0o17", "0o17"), ("2021-03-14", "2021-03-14")])
def test_plain_scalar_round_trip_rule(text, value):
    got = plain_scalar(text)
    assert got == value and type(got) is type(value)


def test_keys_are_text_as_written(tmp_path):
    p = tmp_path / "b.yaml"
    p.write_text(BATTERY.format(value="1").replace("  hora: 1", "  hora: 1\n  0777: x"), encoding="utf-8")
    lb = load_battery(p)
    assert "0777" in lb.battery.slots


def test_lexicon_entries_are_text():
    from fairpair.battery._lexicons import all_lexicons

    assert all(isinstance(n, str) for spec in all_lexicons().values() for n in spec["names"])
