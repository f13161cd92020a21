"""``fairpair validate`` / ``plan`` warn before anything is sent when a ranking design's verdicts will be
`insufficient design`, by the estimand the plan declares: one job posting is too few for templates
random, enough for templates fixed (the claim is about that posting)."""

from __future__ import annotations

import yaml

from fairpair.analysis import plan_warnings
from fairpair.battery import load_battery
from fairpair.cases import plan as make_plan
from fairpair.testing._ranking import ranking_battery


def _warnings(tmp_path, templates: str) -> list[str]:
    b = ranking_battery(k=3, templates=1, names=6, repetitions=4)
    b["analysis"]["generalize"]["templates"] = templates
    p = tmp_path / f"rk-{templates}.yaml"
    p.write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False), encoding="utf-8")
    lb = load_battery(p)
    return [w for w in plan_warnings(lb, make_plan(lb)) if w.startswith("ranking design")]


def test_one_posting_warns_with_templates_random(tmp_path):
    (w,) = _warnings(tmp_path, "random")
    assert "1 template(s): too few scenarios" in w and "use at least 8" in w


def test_one_posting_is_enough_with_templates_fixed(tmp_path):
    assert _warnings(tmp_path, "fixed") == []
