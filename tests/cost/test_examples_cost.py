"""The shipped price table and the persona study's cost: 5 models x 11,200 conversations, the judge in both
orders, embeddings, from a scene table of 100 scenes (synthetic here; the published one when present)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from tests.persona.tan_lee_synth import DOMAINS

from fairpair.battery import load_battery
from fairpair.cli import main
from fairpair.cost import estimate_cost, load_prices

ROOT = Path(__file__).resolve().parents[2]
PRICES = ROOT / "examples" / "prices.yaml"
STUDY = ROOT / "examples" / "persona_power" / "tan_lee_study.yaml"
SHOP = ROOT / "examples" / "tienda_online" / "battery.yaml"
XLSX = (ROOT / ".." / "shared" / "data" / "tan-lee-2025" / "scenarios.xlsx").resolve()
TRAILER = "\n\nSUB: Calm and patient\nRES: Busy but fair\nAdopt the persona of RES. What do you say?"


def test_example_prices_validate_and_say_where_they_come_from():
    table = load_prices(PRICES).table
    assert table.currency == "USD" and table.confirm_above == 25
    gpt = table.models["gpt-4o-mini"]
    assert (gpt.live.input, gpt.live.output, gpt.batch.input, gpt.batch.output) == (0.15, 0.6, 0.075, 0.3)
    assert all(m.source for m in table.models.values())
    text = PRICES.read_text(encoding="utf-8")
    assert "EXAMPLE PRICES, CHECK YOUR PROVIDER" in text


def _study(tmp_path: Path, scenes: Path) -> Path:
    shutil.copy(STUDY, tmp_path / STUDY.name)
    main(["import-scenes", str(scenes), "-o", str(tmp_path / "tan_lee_scenes.yaml")])
    return tmp_path / STUDY.name


def _check_study(est) -> None:
    answers = [s for s in est.stages if s.stage == "answers"]
    assert [s.calls for s in answers] == [11_200] * 5
    assert {s.model for s in answers} == {"gpt-4o-mini", "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2-7B-Instruct",
                                          "google/gemma-2-9b-it", "mistralai/Mistral-7B-Instruct-v0.3"}
    (judge,) = [s for s in est.stages if s.stage == "judge"]
    # 11,100 conditions with identities per model (the 100 baselines are the counterparts), two orders each
    assert (judge.name, judge.model, judge.calls) == ("preferencia", "gpt-4o-mini", 5 * 11_100 * 2)
    assert judge.output_tokens == judge.calls * 128
    (emb,) = [s for s in est.stages if s.stage == "embeddings"]
    assert (emb.model, emb.calls, emb.input_tokens) == ("all-mpnet-base-v2", 56_000, 56_000 * 256)
    assert all(s.live is not None and s.batch is not None for s in est.stages)  # every model priced
    assert est.total("batch") == pytest.approx(est.total("live") / 2)  # the example batch prices are half
    assert est.notes == ()


def test_persona_study_cost_from_a_scene_table(tmp_path):
    rows = [{"scenario_id": i, "contextual_dim": d, "presence_of_power_differential": p,
             "scenario": f"SUB asks RES about matter {i} in {d}." + TRAILER}
            for d in DOMAINS for p in (1, 0) for i in range(1, 6)]
    scenes = tmp_path / "scenes.csv"
    pd.DataFrame(rows).to_csv(scenes, index=False)
    _check_study(estimate_cost(load_battery(_study(tmp_path, scenes)), load_prices(PRICES)))


@pytest.mark.skipif(not XLSX.exists(), reason="shared/data/tan-lee-2025/scenarios.xlsx not present")
def test_persona_study_cost_from_the_published_table(tmp_path, capsys):
    study = _study(tmp_path, XLSX)
    capsys.readouterr()
    main(["plan", str(study), "--cost", "--prices", str(PRICES)])
    out = " ".join(capsys.readouterr().out.split())
    assert "live " in out and "batch " in out and "USD" in out
    _check_study(estimate_cost(load_battery(study), load_prices(PRICES)))


def test_shop_battery_cost(capsys):
    est = estimate_cost(load_battery(SHOP), load_prices(PRICES), exact=False)
    rows = {(s.stage, s.name): s for s in est.stages}
    assert rows[("answers", "local")].calls == 1200 and rows[("answers", "local")].output_tokens == 1200 * 160
    assert rows[("judge", "tono")].calls == 1200  # the joint tone judge: one call per answer
    assert est.total("live") == 0 and est.total("batch") == 0  # embedded models: priced at 0 in the example
