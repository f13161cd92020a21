"""The self-judging check of ``fairpair measure`` compares the targets' identities recorded when the
run started: an API target whose key is unset now (its answers are stored) no longer stops a measure
stage whose judge is another system, and a judge that is the target is still refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairpair.testing import openai_target, serve_openai, write_battery
from run_helpers import run_cli

JUDGE = ("from fairpair.testing import judge_reply\n\n"
         "def judge(messages, context=None):\n    return judge_reply(messages)\n")


def _python_judge(tmp: Path, target: dict) -> dict:
    return {"kind": "python", "callable": "fp_s3_judge:judge", "path": str(tmp / "j")}


def _run(tmp: Path, monkeypatch, capsys, judge) -> Path:
    """A run of an ``openai`` target keyed by FP_S3_KEY with a 'tone' judge measure, answered with the key
    set; the key is unset afterwards and the manifest's target identities dropped (a manifest without
    them: only the store's record of the targets is left)."""
    (tmp / "j").mkdir(parents=True)
    (tmp / "j" / "fp_s3_judge.py").write_text(JUDGE, encoding="utf-8")
    monkeypatch.setenv("FP_S3_KEY", "k")
    with serve_openai(api_key="k") as srv:
        target = openai_target(srv.url, api_key_env="FP_S3_KEY")
        path = write_battery(tmp, target)
        battery = json.loads(path.read_text(encoding="utf-8"))
        battery.update(measures={"tone": {"kind": "judge"}}, judge_self_test="warn",
                       judge=judge(tmp, target))
        path.write_text(json.dumps(battery), encoding="utf-8")
        code, out, err = run_cli(["run", path, "--out", tmp / "run", "--no-measure", "--no-analyze",
                                  "--no-report"], capsys)
        assert code == 0, out + err
    monkeypatch.delenv("FP_S3_KEY")
    manifest = tmp / "run" / "manifest.json"
    m = json.loads(manifest.read_text(encoding="utf-8"))
    assert m.pop("targets")["openai"]["api_key_env"] == "FP_S3_KEY"
    manifest.write_text(json.dumps(m), encoding="utf-8")
    return tmp / "run"


def test_a_python_judge_measures_a_run_whose_target_key_is_unset(tmp_path, monkeypatch, capsys):
    """Before: 'target 'openai': environment variable FP_S3_KEY is not set', exit 2, nothing judged."""
    run = _run(tmp_path, monkeypatch, capsys, _python_judge)
    code, out, err = run_cli(["measure", run], capsys)
    assert code == 0, out + err
    assert "FP_S3_KEY" not in out + err
    from fairpair.store import Store

    with Store.open(run, create=False) as s:
        scores = [m.value for m in s.measurements("tone.courtesy", status="ok")]
    assert len(scores) == 16 and set(scores) == {4}  # 2 templates x 8 names, judge_reply's courtesy


def test_the_target_as_its_own_judge_is_still_refused_without_the_key(tmp_path, monkeypatch, capsys):
    from fairpair.battery import TargetSpec
    from fairpair.errors import FairpairError
    from fairpair.measures import measure_run
    from fairpair.run import build_target

    run = _run(tmp_path, monkeypatch, capsys, _python_judge)
    target = json.loads((tmp_path / "battery.yaml").read_text(encoding="utf-8"))["target"]
    monkeypatch.setenv("FP_S3_KEY", "k")
    same = build_target("judge", TargetSpec.model_validate(target))  # the target's own block as the judge
    monkeypatch.delenv("FP_S3_KEY")
    with pytest.raises(FairpairError, match="the judge is the same system as target 'openai'"):
        measure_run(run, judge=same)


def test_a_target_known_only_by_its_battery_block_is_compared_on_kind_model_and_url():
    from fairpair.measures._runner import _FROM_BATTERY, _same_system

    block = {"kind": "openai", "model": "m", "base_url": "http://h/v1", _FROM_BATTERY: True}
    judge = {"kind": "openai", "model": "m", "base_url": "http://h/v1", "api_key_env": "K", "client": "x"}
    assert _same_system(block, judge)
    assert not _same_system(block, {**judge, "model": "other"})
    assert _same_system({"kind": "openai", "model": "m", _FROM_BATTERY: True}, judge)  # no url: any url
