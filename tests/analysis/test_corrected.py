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


def test_terminal_and_report_show_corrected_and_raw(judged, tmp_path):
    import io

    from rich.console import Console

    from fairpair.report import write_report

    run_dir = _copy(judged, tmp_path)
    _label(run_dir, lambda v, g: v + (1.0 if g == "magreb" else 0.0))
    buf = io.StringIO()
    res = analyze_run(run_dir, console=Console(file=buf, width=200))
    c = next(c for c in res.comparisons if c.measure == MEASURE)
    out = buf.getvalue()
    assert f"corrected by 96 human labels (lambda {c.label_correction.lam:.2f})" in out
    assert f"the judge alone: {c.label_correction.raw_estimate:+.3f}" in out and "magreb -1.000" in out
    files = write_report(run_dir, language="en")
    md = Path(files["md"]).read_text(encoding="utf-8")
    assert "Judge measures corrected by human labels" in md
    assert "96 labelled answers" in md and "the judge's error (judge − human)" in md
    es = Path(write_report(run_dir, language="es", out=tmp_path / "es")["md"]).read_text(encoding="utf-8")
    assert "Medidas del juez corregidas con etiquetas humanas" in es


def test_report_words_insufficient_labels(judged, tmp_path):
    from fairpair.report import write_report

    run_dir = _copy(judged, tmp_path)
    _label(run_dir, lambda v, g: v, keep=lambda i, c: i < 10)
    analyze_run(run_dir)
    md = Path(write_report(run_dir, language="en")["md"]).read_text(encoding="utf-8")
    assert "INSUFFICIENT LABELS" in md and "the corrected verdict needs at least 50" in md


def test_yes_no_judge_gets_rogan_gladen_by_group():
    """A yes/no judge that misses a third of group A's yes answers: the prediction-powered risk difference
    with every answer labelled is the humans' own, and Rogan-Gladen's sensitivity for A is the share of A's
    human yes the judge said yes to (computed here)."""
    from fairpair.analysis._corrected import analyze_corrected
    from fairpair.analysis._paired import PairData, analyze_pairs

    rng = np.random.default_rng(0)
    t, k, r = 10, 3, 4
    tt, kk, _ = (a.reshape(-1) for a in np.meshgrid(np.arange(t), np.arange(k), np.arange(r), indexing="ij"))
    hx = (rng.random(tt.size) < 0.6).astype(float)
    hy = (rng.random(tt.size) < 0.6).astype(float)
    miss = rng.random(tt.size) < 1 / 3
    fx = np.where((hx == 1) & miss, 0.0, hx)
    pd = PairData(fx, hy.copy(), tt, kk, ("v",) * k, name_a=kk, name_b=kk,
                  case_a=np.array([f"a{i}" for i in range(tt.size)], dtype=object),
                  case_b=np.array([f"b{i}" for i in range(tt.size)], dtype=object))
    kw = dict(alpha=0.05, confidence_level=0.95, exact_threshold=25, n_resamples=0, seed=0, heterogeneity=False,
              names="random")
    raw = analyze_pairs(pd, scale="binary", **kw)
    pa = analyze_corrected(pd, raw, hx, hy, scale="binary", **kw)
    want = crossed_difference(np.concatenate([hx, hy]), np.concatenate([tt, tt]),
                              np.concatenate([np.char.add("a", kk.astype(str)), np.char.add("b", kk.astype(str))]),
                              np.repeat(["A", "B"], tt.size), groups=("A", "B"))
    assert pa.fields["estimate"] == pytest.approx(want.estimate, abs=1e-12)
    assert pa.fields["value_kind"] == "rate" and pa.fields["scale"] == "binary"
    lc = pa.fields["label_correction"]
    assert lc.sensitivity_a == pytest.approx(fx[hx == 1].mean()) and lc.specificity_a == 1.0
    assert lc.sensitivity_b == 1.0 and lc.specificity_b == 1.0
    assert lc.rogan_gladen_estimate == pytest.approx(want.estimate, abs=1e-9)  # each group's true rate, recovered


def test_the_page_samples_probabilities_weight_the_labels(judged, tmp_path):
    """Labels of the page's sample (drawn where the judge is least certain: unequal probabilities) are
    weighted by the sample's inclusion probabilities: the estimate is fairpair.stats.ppi_difference's on
    the same answers with those probabilities, not with the strata's shares."""
    from fairpair.battery import recorded_battery
    from fairpair.measures._labelsample import draw_label_sample, label_measure
    from fairpair.stats import ppi_difference, stratum_inclusion

    run_dir = _copy(judged, tmp_path)
    with Run.open(run_dir, "w") as run:
        lm = label_measure(recorded_battery(run).battery, MEASURE)
        sample = run.store.add_label_sample(draw_label_sample(run.store, lm, n=60, seed=1))
    assert sample.design == "uncertainty"
    drawn = {a.case_id for a in sample.answers}
    rows = _label(run_dir, lambda v, g: v + (1.0 if g == "magreb" else 0.0), keep=lambda i, c: c.id in drawn)
    c = _comparison(run_dir)
    pi = sample.labelled_probabilities({(a.target, a.case_id) for a in sample.answers})
    ids = [r[0] for r in rows]
    f = np.array([r[2] for r in rows])
    grp = np.array([r[1] for r in rows])
    h = np.array([v + (1.0 if g == "magreb" else 0.0) if i in drawn else np.nan for i, g, v, _, _ in rows])
    p = np.array([pi.get(("mock", i), np.nan) for i in ids])
    want = ppi_difference(f, h, [r[3] for r in rows], [r[4] for r in rows], grp, inclusion=p,
                          groups=("magreb", "espana"), names="fixed")
    strata = [f"{g}|{r[3]}" for g, r in zip(grp, rows, strict=True)]
    shares = ppi_difference(f, h, [r[3] for r in rows], [r[4] for r in rows], grp, names="fixed",
                            inclusion=stratum_inclusion(~np.isnan(h), strata),
                            groups=("magreb", "espana"))
    assert c.label_correction.n_labels == 60
    assert c.estimate == pytest.approx(want.estimate, abs=1e-9)
    assert abs(want.estimate - shares.estimate) > 1e-6  # the probabilities matter here


def test_plan_power_says_how_many_labels(judged, tmp_path):
    """``plan --power``: the labels a corrected 95% interval of half the margin needs, 4 s^2 / (h/z)^2 with the
    residual SD from the run's labels (here computed by hand), never below the simulation's 50."""
    from fairpair.analysis.power import label_residuals_from_run, power_plan
    from fairpair.battery import load_battery
    from fairpair.cases import plan as make_plan

    run_dir = _copy(judged, tmp_path)
    rng = np.random.default_rng(3)
    noise = {}
    rows = _label(run_dir, lambda v, g: v + noise.setdefault(len(noise), float(rng.normal(0, 2.0))))
    resid = label_residuals_from_run(run_dir)
    by = {}
    for i, (_, g, _v, _, _) in enumerate(rows):
        by.setdefault(g, []).append(noise[i])
    dev = np.concatenate([np.asarray(v) - np.mean(v) for v in by.values()])
    sd = float(np.sqrt((dev ** 2).sum() / (dev.size - 2)))
    assert resid[MEASURE] == pytest.approx(sd)
    lb = load_battery(_battery(tmp_path))
    out = power_plan(lb, make_plan(lb), label_residual_sd=resid)
    row = out["labels"]["courtesy"]
    z = 1.959963984540054
    n_answers = 2 * 8 * 2 * 3
    want = 4 * sd ** 2 / ((0.5 / z) ** 2 + 4 * sd ** 2 / n_answers)
    assert row["labels_needed"] == max(50, int(np.ceil(want)))
    assert any("human labels for a corrected 95% interval of +/-0.5" in line for line in out["lines"])


def test_a_probability_judge_says_why_there_is_no_rogan_gladen(judged, tmp_path):
    """A yes/no judge scores P(yes), not a hard 0/1: Rogan-Gladen's fields stay empty and results and report
    say why (the newcomer saw empty fields and no word)."""
    from fairpair.analysis._corrected import RG_PROBABILITIES
    from fairpair.report import write_report

    run_dir = _copy(judged, tmp_path)
    _label(run_dir, lambda v, g: 5.0 if v >= 3 else 1.0)
    analyze_run(run_dir)
    (c,) = [c for c in json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["comparisons"]
            if c["measure"] == MEASURE]
    lc = c["label_correction"]
    assert lc["rogan_gladen_estimate"] is None and lc["rogan_gladen_note"] == RG_PROBABILITIES
    md = Path(write_report(run_dir, language="en")["md"]).read_text(encoding="utf-8")
    assert "no Rogan-Gladen figure: the judge gives a probability of yes, not a hard yes/no" in md
