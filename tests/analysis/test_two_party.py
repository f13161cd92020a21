"""Two-party (SUB x RES) block: cell means, Tan & Lee dispersion, least-changing prompt; checked with pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from fairpair.analysis import analyze_run
from fairpair.battery import load_battery
from fairpair.run import RunSettings, execute_run
from fairpair.store import Store

GROUPS = {"race": ["Asian", "Black", "White"], "religion": ["atheist", "Muslim"]}


def _battery(scenes: int, matched: bool) -> dict:
    templates = []
    for s in range(scenes):
        for power in ("disparity", "equal"):
            scene = f"s{s}" if matched else f"s{s}-{power}"
            templates.append({"id": f"{scene}-{power}".replace("-disparity-disparity", "-disparity"),
                              "turns": [f"Scene {s} ({power}): {{sub_persona}} talks to {{res_persona}}."],
                              "baseline_turns": [f"Scene {s} ({power}): a person talks to a person."],
                              "meta": {"scene": scene, "power": power}})
    return {
        "schema_version": 1, "name": "two_party_test", "language": "en", "seed": 1,
        "attributes": {axis: {"signal": "identity", "slot": f"id_{axis}",
                              "groups": {g: {"variants": [g]} for g in gs}} for axis, gs in GROUPS.items()},
        "templates": templates,
        "designs": [{"kind": "two_party", "axes": list(GROUPS)}],
        "target": {"kind": "mock"},
        "analysis": {"bootstrap_resamples": 400},
    }


def _run(tmp_path, name, matched):
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(_battery(8, matched)), encoding="utf-8")
    run = tmp_path / name
    execute_run(load_battery(p), run, RunSettings(concurrency=16))
    rng = np.random.default_rng(3)
    rows = []
    with Store.open(run) as s:
        cases = {c.id: c for c in s.iter_cases()}
        for r in s.responses():
            c = cases[r.case_id]
            if c.baseline:
                continue
            shift = 0.05 * (c.groups["sub"] in ("White", "atheist")) + (0.1 if c.meta["power"] == "disparity"
                                                                         and c.groups["res"] == "Black" else 0)
            v = float(0.3 - shift + rng.normal(0, 0.02))
            s.add_measurement(target=r.target, case_id=r.case_id, measure="distance", status="ok", value=v)
            rows.append({"scene": c.meta["scene"], "power": c.meta["power"], "axis": c.axis, "sub": c.groups["sub"],
                         "res": c.groups["res"], "value": v})
    return run, pd.DataFrame(rows)


def test_two_party_block_matches_pandas(tmp_path):
    run, df = _run(tmp_path, "tp", matched=True)
    res = analyze_run(run)
    (block,) = res.two_party
    assert block.measure == "distance" and block.design == "two_party"
    assert len(block.cells) == 2 * (9 + 4)
    cm = df.groupby(["power", "axis", "sub", "res"])["value"].mean()
    for c in block.cells:
        assert c.mean == pytest.approx(cm[(c.condition, c.axis, c.sub, c.res)])
        assert c.ci[0] <= c.mean <= c.ci[1]
    for row in block.dispersion:
        sub = cm[row.condition]
        per_axis = {ax: sub[ax].std(ddof=1) for ax in GROUPS}
        assert row.ddof == 1 and row.n_scenes == 8
        assert row.per_axis == pytest.approx(per_axis)
        assert row.statistic == pytest.approx(np.mean(list(per_axis.values())))
    tc, t = block.dispersion_tests  # the noise-corrected test first, then the paper's raw statistic
    assert (tc.statistic_kind, t.statistic_kind) == ("noise-corrected", "raw")
    assert t.paired is True and t.n_scenes == 8 and (t.condition_a, t.condition_b) == ("disparity", "equal")
    d = {r.condition: r.statistic for r in block.dispersion}
    assert t.statistic == pytest.approx(d["disparity"] - d["equal"])
    assert t.pvalue < 0.05  # planted: Black respondents shifted only under disparity
    dc = {r.condition: r.corrected for r in block.dispersion}
    assert tc.statistic == pytest.approx(dc["disparity"] - dc["equal"]) and tc.pvalue < 0.05
    for row in block.dispersion:  # the corrected figure is the raw one less the noise of the cell means
        for ax, raw in row.per_axis.items():
            corr = max(raw**2 - row.noise_per_axis[ax], 0.0) ** 0.5
            assert row.corrected_per_axis[ax] == pytest.approx(corr, abs=1e-12)
        assert row.corrected <= row.statistic and row.corrected_ci is not None
    mins = {(m.axis, m.side, m.condition): m for m in block.minimum}
    m = mins[("race", "sub", "equal")]
    means = df[(df.axis == "race") & (df.power == "equal")].groupby("sub")["value"].mean()
    assert m.identity == means.idxmin() == "White" and m.mean == pytest.approx(means.min())
    assert m.stability > 0.9 and "changes the answer least" in m.wording and m.pvalue < 0.05


def test_unmatched_scenes_use_an_unpaired_test(tmp_path):
    run, _ = _run(tmp_path, "tu", matched=False)
    (t,) = analyze_run(run).two_party[0].dispersion_tests
    assert t.paired is False and "not matched" in t.note and 0 < t.pvalue <= 1
