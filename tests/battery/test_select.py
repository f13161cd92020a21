"""--templates / --axes: running part of a battery."""

from pathlib import Path

import pytest

from fairpair.battery import load_battery, select
from fairpair.cases import expand, plan
from fairpair.cli import main
from fairpair.errors import BatteryError

ROOT = Path(__file__).resolve().parents[2]
PERSONA = ROOT / "examples" / "persona_power" / "battery.yaml"
DEMO = ROOT / "examples" / "tienda_online" / "demo.yaml"


def test_scene_and_axis_selection_keeps_matched_pair_and_axis():
    full = load_battery(PERSONA)
    sub = select(full, templates=["work-promotion"], axes=["age"])
    # the scene is written twice (power disparity and equal footing): both are kept
    assert {t.meta["power"] for t in sub.battery.templates} == {"disparity", "equal"}
    p = plan(sub)
    # 2 templates x (3 x 3 age cells + 1 baseline)
    assert p.conversations == 2 * (9 + 1)
    assert sub.selection == {"templates": ["work-promotion"], "axes": ["age"], "templates_kept": 2,
                             "templates_total": len(full.battery.templates)}


def test_selected_cases_are_the_same_cases_as_in_the_full_battery():
    full = load_battery(PERSONA)
    sub = select(full, templates=["work-promotion"], axes=["age"])
    full_ids = {c.id for c in expand(full)}
    sub_ids = [c.id for c in expand(sub)]
    assert len(sub_ids) == 20 and set(sub_ids) <= full_ids


def test_selection_that_matches_nothing_is_a_clear_error(capsys):
    with pytest.raises(BatteryError, match="matches no template"):
        select(load_battery(DEMO), templates=["nope-*"])
    with pytest.raises(SystemExit) as exc:
        main(["plan", str(DEMO), "--axes", "edad"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown attribute(s) edad" in err and "Traceback" not in err
