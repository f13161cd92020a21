"""Judge comparisons corrected by human labels (issue 31): ``fairpair analyze`` on a run with stored labels.

Reference values are computed here from the labels themselves (the crossed inference on the human
values, :func:`fairpair.stats.crossed_difference`), never taken from the corrected output.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from fairpair.analysis import analyze_run
from fairpair.battery import load_battery
from fairpair.measures import measure_run
from fairpair.run import RunSettings, execute_run
from fairpair.stats import crossed_difference
from fairpair.store import Run

sys.path.insert(0, str(Path(__file__).parents[1] / "measures"))
from labelling import NAMES, YesNoHashJudge  # noqa: E402

MEASURE = "tone.courtesy"


def _battery(tmp: Path) -> Path:
    b = {"schema_version": 1, "name": "ppi", "language": "es", "seed": 5, "repetitions": 3,
         "attributes": {"origen": {"signal": "name", "slot": "nombre", "neutral": "un cliente", "groups": {
             "espana": {"variants": NAMES[:2]}, "magreb": {"variants": NAMES[2:]}}}},
         "templates": [{"id": f"t{i}", "turns": [f"Hola, soy {{nombre}}. Caso {i}: mi pedido llegó roto."]}
                       for i in range(8)],
         "designs": [{"kind": "counterfactual", "attribute": "origen"}],
         "target": {"kind": "mock"},
         "measures": {"tone": {"kind": "judge", "mode": "per_dimension", "scoring": "yes_no"}},
         "judge_self_test": "off",
         "analysis": {"generalize": {"names": "fixed"},
                      "comparisons": [{"id": "courtesy", "measure": MEASURE, "attribute": "origen",
                                       "reference": "espana", "margin": 1.0}]}}
    p = tmp / "ppi.yaml"
    p.write_text(json.dumps(b, ensure_ascii=False), encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ppi")
    run_dir = tmp / "run"
    execute_run(load_battery(_battery(tmp)), run_dir, RunSettings())
    measure_run(run_dir, judge=YesNoHashJudge())
    return run_dir


def _copy(run_dir: Path, tmp: Path) -> Path:
    import shutil

    out = tmp / "run"
    shutil.copytree(run_dir, out)
    return out


def _label(run_dir: Path, human, keep=lambda i, case: True) -> list[tuple[str, str, float, float]]:
    """Store ``human(judge value, group)`` as rater ana's label of every kept answer; returns the rows."""
    rows = []
    with Run.open(run_dir, "w") as run:
        st = run.store
        cases = {c.id: c for c in st.iter_cases()}
        for i, m in enumerate(st.measurements(MEASURE, status="ok")):
            c = cases[m.case_id]
            g = c.groups["origen"]
            rows.append((m.case_id, g, float(m.value), c.template, c.variants["origen"]))
            if keep(i, c):
                st.add_label(target=m.target, case_id=m.case_id, measure=MEASURE, rater="ana",
                             value=human(float(m.value), g))
    return rows


def _comparison(run_dir: Path):
    res = analyze_run(run_dir, write=False)
    (c,) = [c for c in res.comparisons if c.measure == MEASURE]
    return c


def test_every_answer_labelled_gives_the_human_estimate(judged, tmp_path):
    """All answers labelled (pi = 1): the corrected difference is the crossed difference of the human
    labels, whatever lambda, and the judge's own figures stay in ``label_correction``."""
    run_dir = _copy(judged, tmp_path)
    harsh = lambda v, g: v + (1.0 if g == "magreb" else 0.0)  # noqa: E731 - the judge was 1 point harsher on magreb
    rows = _label(run_dir, harsh)
    c = _comparison(run_dir)
    hv = np.array([harsh(v, g) for _, g, v, _, _ in rows])
    grp = [g for _, g, _, _, _ in rows]
    want = crossed_difference(hv, [r[3] for r in rows], [r[4] for r in rows], grp, groups=("magreb", "espana"),
                              names="fixed")
    raw = crossed_difference([r[2] for r in rows], [r[3] for r in rows], [r[4] for r in rows], grp,
                             groups=("magreb", "espana"), names="fixed")
    lc = c.label_correction
    assert lc is not None and lc.n_labels == len(rows) == 96
    assert c.estimate == pytest.approx(want.estimate, abs=1e-12)
    assert c.estimate == pytest.approx(raw.estimate + 1.0, abs=1e-12)
    assert lc.raw_estimate == pytest.approx(raw.estimate, abs=1e-12)
    assert lc.judge_error_a == pytest.approx(-1.0) and lc.judge_error_b == pytest.approx(0.0)
    assert c.ci[0] == pytest.approx(want.confidence_interval(0.95).low, abs=1e-9)
    assert c.verdict != "insufficient labels" and c.labels_reason is None


def test_perfect_judge_gives_the_raw_estimate(judged, tmp_path):
    run_dir = _copy(judged, tmp_path)
    _label(run_dir, lambda v, g: v)
    c = _comparison(run_dir)
    assert c.estimate == pytest.approx(c.label_correction.raw_estimate, abs=1e-12)
    assert c.ci == pytest.approx(c.label_correction.raw_ci, abs=1e-9)


def test_too_few_labels_is_insufficient_labels(judged, tmp_path):
    run_dir = _copy(judged, tmp_path)
    _label(run_dir, lambda v, g: v, keep=lambda i, c: i < 10)
    c = _comparison(run_dir)
    assert c.verdict == "insufficient labels"
    assert c.reasons[0] == "insufficient labels"
    assert "10 labelled answers" in c.reason and "at least 50" in c.reason
    assert c.label_correction.n_labels == 10


def test_several_raters_count_as_their_mean(judged, tmp_path):
    run_dir = _copy(judged, tmp_path)
    rows = _label(run_dir, lambda v, g: v + 1.0)
    with Run.open(run_dir, "w") as run:
        for m in run.store.measurements(MEASURE, status="ok"):
            run.store.add_label(target=m.target, case_id=m.case_id, measure=MEASURE, rater="bea", value=m.value - 1.0)
    c = _comparison(run_dir)
    assert c.label_correction.n_labels == len(rows)  # one answer, two raters: one label, their mean (= the judge's)
    assert c.estimate == pytest.approx(c.label_correction.raw_estimate, abs=1e-12)
