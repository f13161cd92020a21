"""The persona-power example end to end: ``fairpair run`` on a subset of scenes and axes.

(a) fast: the mock target, a scripted pairwise judge (a python target) and a
bag-of-words embedder put in place of all-mpnet-base-v2; the two-party
results are checked against pandas computed from the stored measurements,
and the report and manifest against what the study must show.
(b) ``local_model``: the embedded 0.5B model answers and judges itself
(``allow_self_judging: true``); the report must warn about self-grading.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from fairpair.cli import app
from fairpair.measures import embed

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "persona_power" / "battery.yaml"
SCENES = "work-promotion,housing-deposit"  # two matched scenes (meta 'scene'), both power conditions

JUDGE = '''
import json


def answer(messages, context):
    """Prefers the shorter answer; on equal length, the one shown first (a planted position bias)."""
    text = messages[-1]["content"]
    a = text.split("Answer A:\\n<<<\\n", 1)[1].split("\\n>>>", 1)[0]
    b = text.split("Answer B:\\n<<<\\n", 1)[1].split("\\n>>>", 1)[0]
    return json.dumps({"winner": "A" if len(a.split()) <= len(b.split()) else "B", "reason": "shorter"})
'''


def _bow(text: str, dim: int = 64) -> np.ndarray:
    """Hashed bag of words, L2-normalised: similar answers share words, so distances are real."""
    v = np.zeros(dim)
    for w in re.findall(r"\w+", text.lower()):
        v[int(hashlib.sha256(w.encode()).hexdigest(), 16) % dim] += 1.0
    n = np.linalg.norm(v)
    return v / n if n else v


class BagOfWords:
    name = "bag-of-words-test"

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.array([_bow(t) for t in texts], dtype=np.float32)

    def identity(self) -> dict:
        return {"name": self.name, "dim": 64}


def _battery(tmp_path: Path, tail: dict) -> Path:
    """The example battery with its target/judge/measures replaced (templates and attributes unchanged)."""
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    for k in ("target", "targets", "judge", "measures", "embedder"):
        data.pop(k, None)
    data.update(tail)
    path = tmp_path / "persona.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def _run(battery: Path, out: Path, *extra: str) -> None:
    r = CliRunner().invoke(app, ["run", str(battery), "--out", str(out), "-q", *extra])
    assert r.exit_code == 0, r.output


def _store_frame(run: Path) -> pd.DataFrame:
    con = sqlite3.connect(run / "store.sqlite")
    rec = [json.loads(d) for (d,) in con.execute("select data from cases")]
    meas = pd.read_sql("select target, case_id, measure, status, value from measurements", con)
    con.close()
    c = pd.DataFrame({"case_id": [r["id"] for r in rec], "axis": [r.get("axis") for r in rec],
                      "baseline": [r.get("baseline") for r in rec],
                      "sub": [(r.get("groups") or {}).get("sub") for r in rec],
                      "res": [(r.get("groups") or {}).get("res") for r in rec],
                      "scene": [r["meta"]["scene"] for r in rec], "power": [r["meta"]["power"] for r in rec]})
    meas = meas[meas.status == "ok"].assign(value=lambda d: d.value.map(json.loads).astype(float))
    return meas.merge(c, on="case_id")


@pytest.fixture(scope="module")
def mock_study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("persona_e2e")
    (tmp / "scripted_judge.py").write_text(JUDGE, encoding="utf-8")
    battery = _battery(tmp, {
        "target": {"kind": "mock", "language": "en", "words": 40, "bias": {"old": {"words_factor": 0.6}}},
        "judge": {"kind": "python", "callable": "scripted_judge:answer", "path": "."},
        "embedder": "all-mpnet-base-v2",
        "judge_self_test": "off",  # the scripted judge prefers by length, not by the anchors' criteria
        "measures": {"distancia": {"kind": "semantic_distance", "against": "baseline"},
                     "preferencia": {"kind": "pairwise", "against": "baseline"}},
    })
    mp = pytest.MonkeyPatch()
    mp.setitem(embed._FACTORIES, "all-mpnet-base-v2", BagOfWords)
    mp.delitem(embed._LOADED, "all-mpnet-base-v2", raising=False)
    try:
        run = tmp / "run"
        _run(battery, run, "--templates", SCENES, "--axes", "age")
    finally:
        embed._LOADED.pop("all-mpnet-base-v2", None)
        mp.undo()
    return battery, run


def test_mock_two_party_results_match_pandas(mock_study):
    _, run = mock_study
    res = json.loads((run / "results.json").read_text(encoding="utf-8"))
    blocks = {(b["target"], b["measure"]): b for b in res["two_party"]}
    assert set(blocks) == {("mock", "distancia"), ("mock", "preferencia")}
    df = _store_frame(run)
    persona = df[~df.baseline.astype(bool)]
    for measure, b in blocks.items():
        m = persona[persona.measure == measure[1]]
        assert len(b["cells"]) == 9 * 2  # 3 x 3 age identities x 2 power conditions
        expected = m.groupby(["power", "sub", "res"])["value"].mean()
        for cell in b["cells"]:
            assert cell["mean"] == pytest.approx(expected[(cell["condition"], cell["sub"], cell["res"])], abs=1e-9)
            assert cell["n"] == 2 and cell["ci"] is not None and cell["ci"][0] <= cell["mean"] <= cell["ci"][1]
        # Tan & Lee's dispersion: SD (ddof=1) of the 9 cell means of the axis, per power condition
        for row in b["dispersion"]:
            sd = expected[row["condition"]].std(ddof=1)
            assert row["statistic"] == pytest.approx(sd, abs=1e-9) and row["n_scenes"] == 2
        corrected, test = b["dispersion_tests"]
        assert (corrected["statistic_kind"], test["statistic_kind"]) == ("noise-corrected", "raw")
        assert test["paired"] is True and test["n_scenes"] == 2
        assert {test["condition_a"], test["condition_b"]} == {"disparity", "equal"}
    # the distances are 1 - cosine of the injected embedder's vectors of the answer and its scene's baseline
    con = sqlite3.connect(run / "store.sqlite")
    detail, value, text = con.execute(
        "select m.detail, m.value, r.text from measurements m join responses r on r.case_id = m.case_id "
        "and r.target = m.target where m.measure = 'distancia' and m.status = 'ok' limit 1").fetchone()
    (base_text,) = con.execute("select text from responses where case_id = ?",
                               (json.loads(detail)["counterpart"],)).fetchone()
    con.close()
    assert json.loads(value) == pytest.approx(1 - float(_bow(text) @ _bow(base_text)), abs=1e-5)
    mins = [m for m in blocks[("mock", "distancia")]["minimum"] if m["condition"] == "equal" and m["side"] == "res"]
    (m,) = mins
    means = persona[(persona.measure == "distancia") & (persona.power == "equal")].groupby("res")["value"].mean()
    assert m["identity"] == means.idxmin() and m["mean"] == pytest.approx(means.min(), abs=1e-9)
    assert 0.0 <= m["stability"] <= 1.0 and "changes the answer least" in m["wording"]


def test_mock_report_sections_and_traceability(mock_study):
    battery, run = mock_study
    html = (run / "report" / "report.html").read_text(encoding="utf-8")
    assert 'id="two-party"' in html
    assert "distancia · target mock" in html and "preferencia · target mock" in html
    alts = re.findall(r'alt="(Heat map of the mean [^"]*)"', html)
    assert len(alts) == 4  # 2 measures x age x 2 power conditions
    assert all(re.search(r"= \d\.\d\d \[\d\.\d\d, \d\.\d\d\]", a) for a in alts)  # each cell with its interval
    assert "Dispersion (&#34;implicit bias&#34;) by power condition" in html or \
        'Dispersion ("implicit bias") by power condition' in html
    assert "Paired test between power conditions" in html and "scene-swap permutation test" in html
    assert "The prompt that changes the answer least" in html
    assert "Not shown for this measure: a lower preferencia is not a smaller change" in html
    assert "Position bias · preferencia:" in html and "self-judging" not in html
    assert "No pre-registered comparisons: this battery&#39;s results are the two-party description" in html
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["selection"]["templates_kept"] == 4 and manifest["selection"]["axes"] == ["age"]
    source = yaml.safe_load(battery.read_text(encoding="utf-8"))
    (prompt,) = manifest["expansion"]["prompt_templates"]
    assert prompt["prompt"]["turns"] == source["templates"][0]["turns"]
    assert prompt["prompt"]["baseline_turns"] == source["templates"][0]["baseline_turns"]
    assert len(prompt["templates"]) == 4
    assert manifest["expansion"]["exclusions"] == []
    meas = manifest["measurement"]
    assert meas["judge"]["kind"] == "python" and meas["embedders"]["distancia"]["name"] == "bag-of-words-test"
    (judge_prompt,) = meas["judge_prompts"]
    sent = "\n".join(x["content"] for x in judge_prompt)
    assert "Helpful" in sent and "[MASK]" in sent
    for label in ("young person", "middle-aged person", "old person", "an [MASK]", "a [MASK]"):
        assert label not in sent  # blind judge, article included
    assert "Judge prompts (first sent, per system prompt)" in html and "Prompt templates (as written" in html
    con = sqlite3.connect(run / "store.sqlite")
    (n_cases,) = con.execute("select count(*) from cases").fetchone()
    con.close()
    assert n_cases == 4 * 10  # every generated prompt is stored: 9 SUB x RES + 1 baseline per template


@pytest.mark.local_model
def test_local_model_self_judging_is_flagged(tmp_path):
    pytest.importorskip("xllamacpp")
    # the example's measured settings (issue 18): at temperature 0 the 0.5B model refuses every role-play,
    # and refusals are degenerate answers that no two-party result is drawn from
    local = {"kind": "local", "model": "qwen2.5-coder-0.5b", "temperature": 0.7, "repeat_penalty": 1.1,
             "max_tokens": 160}  # 48 cut most answers: truncated answers are degenerate too
    battery = _battery(tmp_path, {
        "target": local,
        "judge": {**local, "max_tokens": 64},  # the same weights: self-grading
        "allow_self_judging": True,
        "judge_self_test": "off",  # the scripted judge always answers the same
        "measures": {"length": {"kind": "word_count"}, "preferencia": {"kind": "pairwise", "against": "baseline"}},
    })
    run = tmp_path / "run"
    _run(battery, run, "--templates", "work-promotion", "--axes", "age")
    res = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert res["judge"]["self_judging"] is True
    assert {b["measure"] for b in res["two_party"]} == {"length", "preferencia"}
    html = (run / "report" / "report.html").read_text(encoding="utf-8")
    assert "the judge is the same model as a target (self-judging)" in html
    assert "Position bias · preferencia:" in html
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["targets"]["local"]["model"] == "qwen2.5-coder-0.5b"
    assert manifest["measurement"]["self_judging"]
