"""``RankingResult``: a ranking section of results.json read back with its types, every key typed."""

from __future__ import annotations

import yaml

from fairpair.analysis import analyze_run
from fairpair.battery import load_battery
from fairpair.measures import measure_run
from fairpair.records import ComparisonResult, RankingResult, Results
from fairpair.run import RunSettings, execute_run
from fairpair.store import Run
from fairpair.testing._ranking import ranking_battery


def _extras(model) -> list[str]:
    """Keys of the section (and its nested records) that no field of the typed model holds."""
    out = [f"{type(model).__name__}.{k}" for k in (model.model_extra or {})]
    for name in type(model).model_fields:
        v = getattr(model, name)
        for x in (v if isinstance(v, list) else [v]):
            if hasattr(x, "model_extra") and not isinstance(x, ComparisonResult):
                out += _extras(x)
    return out


def test_a_ranking_section_reads_back_typed(tmp_path):
    b = ranking_battery(k=3, templates=4, names=3, repetitions=3, seed=5, selection={"g1": 1.0, "g2": 0.5},
                        position=[1.5, 1.0, 1.0])
    p = tmp_path / "rk.yaml"
    p.write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False), encoding="utf-8")
    run_dir = tmp_path / "run"
    execute_run(load_battery(p), run_dir, RunSettings(concurrency=8))
    measure_run(run_dir)
    res = analyze_run(run_dir)
    with Run.open(run_dir) as run:
        read = run.results()
    assert isinstance(read, Results)
    (typed,) = read.ranking_results()
    raw = res.rankings[0]
    assert isinstance(typed, RankingResult) and _extras(typed) == []  # every key of the section is a field
    assert (typed.measure, typed.design, typed.k, typed.n_sets) == (raw["measure"], raw["design"], 3, raw["n_sets"])
    assert [s.group for s in typed.selection] == [s["group"] for s in raw["selection"]]
    assert [s.rate for s in typed.selection] == [s["rate"] for s in raw["selection"]]
    assert [r.ratio for r in typed.ratios] == [r["ratio"] for r in raw["ratios"]]
    assert typed.position.expected_rate == 1 / 3 and len(typed.position.slots) == 3
    assert all(isinstance(c, ComparisonResult) for c in typed.pairs) and len(typed.pairs) == len(raw["pairs"])
    assert typed.model_dump(mode="json") == raw
