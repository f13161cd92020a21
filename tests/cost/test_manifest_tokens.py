"""The manifest records the tokens actually used, from the providers' ``usage`` fields: the answers' (every
turn of a multi-turn case summed) and the judge's per measure (added up over measure sessions)."""

from __future__ import annotations

import json

import yaml
from tests.cost.conftest import TINY

from fairpair import pipeline
from fairpair.battery import load_battery
from fairpair.measures import measure_run
from fairpair.run import RunSettings, open_run
from fairpair.testing import ScriptedJudge


def test_manifest_tokens(tmp_path):
    data = yaml.safe_load(TINY)
    data.update(repetitions=2, target={"kind": "mock", "model": "m-1", "language": "en"},
                judge_self_test="off", measures={"tone": {"kind": "judge"}})
    data["templates"][0]["turns"] = ["Hi, I am {name}.", "Thanks."]
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    run_dir = tmp_path / "run"
    pipeline.run(run_dir, pipeline.Settings(battery=load_battery(path), calls=RunSettings(preflight=False)))

    # what the mock reported, turn by turn: prompt characters // 4 and reply characters // 4 (targets/mock.py)
    want_in = want_out = 0
    with open_run(run_dir, readonly=True) as store:
        answers = [a for a in store.responses("mock") if a.status == "ok"]
        for a in answers:
            case = store.case(a.case_id)
            replies = [*a.turns, a.text]
            sent = [m["content"] for m in case.messages]
            for turn, reply in zip(case.turns, replies, strict=True):
                sent.append(turn)
                want_in += sum(map(len, sent)) // 4
                want_out += len(reply) // 4
                sent.append(reply)
    assert len(answers) == 4
    tokens = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))["tokens"]
    assert tokens["answers"] == {"mock": {"calls": 4, "input_tokens": want_in, "output_tokens": want_out,
                                          "without_usage": 0}}

    # the scripted judge reports 1 input and 1 output token a call; one tone call per answer
    measure_run(run_dir, judge=ScriptedJudge())
    tokens = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))["tokens"]
    assert tokens["judge"] == {"tone": {"calls": 4, "input_tokens": 4, "output_tokens": 4, "without_usage": 0,
                                        "model": "judge-1"}}
    assert tokens["answers"]["mock"]["calls"] == 4  # kept, recounted from the store
