"""`fairpair import-scenes`: the published Tan & Lee scene table and synthetic tables with defects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fairpair.battery import load_battery
from fairpair.cases._expand import expand
from fairpair.cli import main
from fairpair.errors import FairpairError
from fairpair.persona import (
    BASELINE_TEMPLATE,
    PROMPT_TEMPLATE,
    SYSTEM_TEMPLATE,
    TAN_LEE_AXES,
    battery_yaml,
    read_scenes,
)
from run_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
XLSX = (ROOT / ".." / "shared" / "data" / "tan-lee-2025" / "scenarios.xlsx").resolve()
EXAMPLE = ROOT / "examples" / "persona_power" / "battery.yaml"
needs_xlsx = pytest.mark.skipif(not XLSX.exists(), reason="shared/data/tan-lee-2025/scenarios.xlsx not present")

TRAILER = "\n\nSUB: Calm and patient\nRES: Busy but fair\nAdopt the persona of RES. What do you say?"


def _plan_conversations(path: Path, capsys) -> int:
    main(["plan", str(path), "--json"])
    return json.loads(capsys.readouterr().out)["conversations"]


# ------------------------------------------------------------------ the real table


@needs_xlsx
def test_real_table_scenes_keys_and_cleaning():
    import openpyxl

    t = read_scenes(XLSX)
    assert len(t.scenes) == 100
    assert t.counts() == {"disparity": 50, "equal": 50}
    keys = [s.key for s in t.scenes]
    assert len(set(keys)) == 100
    assert keys[0] == "work-pd-1" and keys[50] == "work-nopd-1" and keys[-1] == "social_assistance-nopd-5"
    # 10 domains x 2 conditions x 5 scenes
    from collections import Counter
    assert set(Counter((s.domain, s.power) for s in t.scenes).values()) == {5}
    # what needed cleaning, counted independently from the raw cells with openpyxl
    ws = openpyxl.load_workbook(XLSX, read_only=True).active
    raw = [(i, r[3]) for i, r in enumerate(ws.iter_rows(values_only=True), start=1) if i > 1]
    quoted = tuple(i for i, v in raw if v.strip().startswith('"') and v.strip().endswith('"'))
    escaped = tuple(i for i, v in raw if "_x000D_" in v)
    assert quoted == (2, 3, 4, 5, 6)
    assert t.cleaning.rows["surrounding_quotes"] == quoted
    assert t.cleaning.rows["x000d"] == escaped and len(escaped) == 88
    assert "stray surrounding double quotes stripped: 5 cells (rows 2-6)" in t.cleaning.lines()
    for s in t.scenes:
        assert '"' not in (s.text[0], s.text[-1]) and "_x000D_" not in s.text and "\r" not in s.text
        assert "SUB" not in s.text.split() and "RES" not in s.text.split()
        assert s.sub_trait and s.res_trait and "Adopt the persona" not in s.text
    first = t.scenes[0]
    assert first.text.startswith("Alex has been working hard on a project")
    assert "Blake’s decision" in first.text
    assert (first.sub_trait, first.res_trait) == ("ambitious and hardworking", "meticulous and risk-averse")


@needs_xlsx
def test_real_table_cli_battery_validates_and_plans_11200(tmp_path, capsys):
    out = tmp_path / "tan_lee.yaml"
    main(["import-scenes", str(XLSX), "-o", str(out)])
    printed = capsys.readouterr().out
    assert "100 scenes (50 with a power disparity, 50 without)" in printed
    assert "11,200 conversations" in printed
    assert "stray surrounding double quotes stripped: 5 cells (rows 2-6)" in printed
    assert "not matched" in printed
    text = out.read_text(encoding="utf-8")
    assert "#   - stray surrounding double quotes stripped: 5 cells (rows 2-6)" in text
    main(["validate", str(out)])
    assert "ok" in capsys.readouterr().out
    assert _plan_conversations(out, capsys) == 11_200

    lb = load_battery(out)
    b = lb.battery
    assert "stray surrounding double quotes stripped: 5 cells (rows 2-6)" in b.description
    assert repr(PROMPT_TEMPLATE) in b.description and "NOT matched" in b.description
    assert all(t.meta["matched"] is False and t.meta["scene"] == t.id for t in b.templates)
    assert sorted({t.meta["power"] for t in b.templates}) == ["disparity", "equal"]
    assert all(t.turns == [PROMPT_TEMPLATE] and t.baseline_turns == [BASELINE_TEMPLATE] for t in b.templates)
    assert all(t.system == SYSTEM_TEMPLATE for t in b.templates)

    # the rendered prompt: the paper's format with articles
    cases = []
    for c in expand(lb):
        cases.append(c)
        if len(cases) == 112:
            break
    baseline = [c for c in cases if c.baseline]
    assert len(baseline) == 1 and len(cases) - 1 == 111
    asian = next(c for c in cases if c.axis == "race" and c.groups == {"sub": "asian", "res": "caucasian"})
    prompt = asian.turns[-1]
    assert ("Alex is an Asian who is ambitious and hardworking. Blake is a Caucasian who is meticulous and "
            "risk-averse.") in prompt
    assert prompt.endswith("in a few sentences of dialogue only, in quotation marks.")
    assert "SUB" not in prompt and "RES" not in prompt and "Adopt the persona" not in prompt


@needs_xlsx
def test_real_table_subsets(tmp_path, capsys):
    out = tmp_path / "small.yaml"
    main(["import-scenes", str(XLSX), "-o", str(out), "--axes", "race,age", "--scenes", "work-*"])
    capsys.readouterr()
    b = load_battery(out).battery
    assert [t.id for t in b.templates] == [f"work-{p}-{i}" for p in ("pd", "nopd") for i in range(1, 6)]
    assert list(b.attributes) == ["race", "age"]
    assert _plan_conversations(out, capsys) == 10 * (25 + 9 + 1)


def test_prompt_and_keys_match_our_persona_power_battery():
    """The imported battery must be analysable like examples/persona_power (same keys, same prompt)."""
    if not EXAMPLE.exists():
        pytest.skip("examples/persona_power/battery.yaml not present")
    ours = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    t0 = ours["templates"][0]
    assert t0["turns"] == [PROMPT_TEMPLATE] and t0["baseline_turns"] == [BASELINE_TEMPLATE]
    assert all(t["system"] == SYSTEM_TEMPLATE for t in ours["templates"])
    assert list(ours["attributes"]) == [a.key for a in TAN_LEE_AXES]
    for a in TAN_LEE_AXES:
        assert list(ours["attributes"][a.key]["groups"]) == [k for k, _, _ in a.identities]
    assert {"domain", "scene", "power"} <= set(t0["meta"])
    assert {t["meta"]["power"] for t in ours["templates"]} == {"disparity", "equal"}


# ------------------------------------------------------------------ synthetic tables


def _csv(path: Path, rows: list[dict], columns=("scenario_id", "contextual_dim", "presence_of_power_differential",
                                                 "scenario")) -> Path:
    import pandas as pd

    pd.DataFrame(rows, columns=list(columns)).to_csv(path, index=False)
    return path


def _row(sid=1, dom="Housing and Real Estate", p=1, text="SUB asks RES, the landlord, for more time."):
    return {"scenario_id": sid, "contextual_dim": dom, "presence_of_power_differential": p, "scenario": text}


def test_synthetic_csv_quotes_whitespace_and_crlf_are_cleaned_and_reported(tmp_path, capsys):
    rows = [
        _row(1, text='"SUB asks RES for more time.' + TRAILER + '"'),
        _row(2, text="SUB asks RES again.  \r\n" + TRAILER.replace("\n", "\r\n")),
        _row(3, text='SUB says "no" to RES.' + TRAILER),  # inner quotes are text, not stray
        _row(1, p=0, text='"SUB and RES are neighbours.' + TRAILER),  # unbalanced leading quote
    ]
    path = _csv(tmp_path / "scenes.csv", rows)
    t = read_scenes(path)
    assert [s.key for s in t.scenes] == ["housing-pd-1", "housing-pd-2", "housing-pd-3", "housing-nopd-1"]
    assert t.cleaning.rows == {"surrounding_quotes": (2,), "unbalanced_quote": (5,), "crlf": (3,),
                               "whitespace": (3,)}
    assert t.scenes[0].text == "Alex asks Blake for more time."
    assert t.scenes[2].text == 'Alex says "no" to Blake.'
    assert t.scenes[3].text == "Alex and Blake are neighbours."
    assert (t.scenes[1].sub_trait, t.scenes[1].res_trait) == ("calm and patient", "busy but fair")
    out = tmp_path / "b.yaml"
    main(["import-scenes", str(path), "-o", str(out)])
    printed = capsys.readouterr().out
    assert "stray surrounding double quotes stripped: 1 cells (rows 2)" in printed
    assert "unbalanced stray double quote at the start or end stripped: 1 cells (rows 5)" in printed
    assert load_battery(out).battery.templates[3].meta == {
        "domain": "housing", "scene": "housing-nopd-1", "power": "equal", "matched": False,
        "contextual_dim": "Housing and Real Estate", "scenario_id": 1, "source_row": 5}
    # standard output: YAML on stdout, the report on stderr
    main(["import-scenes", str(path)])
    o = capsys.readouterr()
    assert yaml.safe_load(o.out)["name"] == "tan_lee_2025" and "4 scenes" in o.err
    assert "wrote" in printed and "wrote" not in o.err  # only a file written is said to be


@pytest.mark.parametrize("rows, message, line, key", [
    ([_row(1), _row(2, text="SUB asks RES.\n\nRES: Busy\nAdopt the persona of RES. What do you say?")],
     "no 'SUB: <trait>' line", 3, "scenario"),
    ([_row(1, text="SUB asks RES.\n\nSUB: Calm\nRES: Busy")], "no 'Adopt the persona of RES", 2, "scenario"),
    ([_row(1, text="SUB asks RES.\n\nSUB:\nRES: Busy\nAdopt the persona of RES.")], "'SUB:' line has no trait",
     2, "scenario"),
    ([_row(1), _row(1)], "duplicate scene key 'housing-pd-1'", 3, "scenario_id"),
    ([_row("x")], "scenario_id must be an integer", 2, "scenario_id"),
    ([_row(1, p="maybe")], "presence_of_power_differential must be 1/0", 2, "presence_of_power_differential"),
])
def test_synthetic_csv_errors_name_row_and_column(tmp_path, rows, message, line, key):
    rows = [r if "SUB:" in r["scenario"] or "SUB asks RES.\n" in r["scenario"] else {**r, "scenario": r["scenario"]
                                                                                       + TRAILER} for r in rows]
    path = _csv(tmp_path / "bad.csv", rows)
    with pytest.raises(FairpairError) as exc:
        read_scenes(path)
    assert message in exc.value.message
    assert (exc.value.file, exc.value.line, exc.value.key) == (str(path), line, key)


def test_cli_errors_exit_2_without_traceback(tmp_path, capsys):
    missing = _csv(tmp_path / "cols.csv", [{"scenario_id": 1, "contextual_dim": "x", "scenario": "y"}],
                   columns=("scenario_id", "contextual_dim", "scenario"))
    code, _, err = run_cli(["import-scenes", str(missing)], capsys)
    assert code == 2 and "presence_of_power_differential" in err and "Traceback" not in err

    no_sub = _csv(tmp_path / "nosub.csv", [_row(1, text="SUB asks RES.\nRES: Busy\nAdopt the persona of RES.")])
    code, _, err = run_cli(["import-scenes", str(no_sub), "-o", str(tmp_path / "o.yaml")], capsys)
    assert code == 2 and "nosub.csv:2" in err and "[scenario]" in err and "Traceback" not in err
    assert not (tmp_path / "o.yaml").exists()

    good = _csv(tmp_path / "good.csv", [_row(1, text="SUB asks RES." + TRAILER)])
    code, _, err = run_cli(["import-scenes", str(good), "--axes", "race,caste"], capsys)
    assert code == 2 and "caste" in err
    code, _, err = run_cli(["import-scenes", str(good), "--scenes", "work-*"], capsys)
    assert code == 2 and "matches no scene" in err
    existing = tmp_path / "exists.yaml"
    existing.write_text("keep me", encoding="utf-8")
    code, _, err = run_cli(["import-scenes", str(good), "-o", str(existing)], capsys)
    assert code == 2 and existing.read_text(encoding="utf-8") == "keep me"
    main(["import-scenes", str(good), "-o", str(existing), "--force"])
    assert load_battery(existing).battery.name == "tan_lee_2025"
    code, _, err = run_cli(["import-scenes", str(tmp_path / "nope.xlsx")], capsys)
    assert code == 2 and "file not found" in err


def test_out_o_and_the_deprecated_output_write_the_same_battery(tmp_path, capsys):
    good = _csv(tmp_path / "good.csv", [_row(1, text="SUB asks RES." + TRAILER)])
    main(["import-scenes", str(good), "--out", str(tmp_path / "a.yaml")])
    assert "deprecated" not in capsys.readouterr().err
    main(["import-scenes", str(good), "--output", str(tmp_path / "b.yaml")])  # the old spelling
    assert "deprecated: --output is now --out" in " ".join(capsys.readouterr().err.split())
    assert (tmp_path / "a.yaml").read_text(encoding="utf-8") == (tmp_path / "b.yaml").read_text(encoding="utf-8")


def test_battery_text_counts_follow_the_axes(tmp_path):
    path = _csv(tmp_path / "s.csv", [_row(1, text="SUB asks RES." + TRAILER),
                                     _row(1, p=0, text="SUB and RES talk." + TRAILER)])
    text = battery_yaml(read_scenes(path), axes=["gender", "political"])
    assert "4^2 + 3^2 = 25 conditions) + 1 baseline = 26 per scene" in text
    assert "2 scenes (1 with a power disparity, 1 without) -> 52 conversations" in text
    data = yaml.safe_load(text)
    assert data["designs"] == [{"kind": "two_party", "axes": ["gender", "political"]}]
    assert data["attributes"]["gender"]["groups"]["non_binary"] == {"label": "Non-binary", "variants": ["non-binary"]}
