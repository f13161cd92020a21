"""Helpers of the reliability tests: the demo battery pointed at any target, the CLI in or out of process."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from run_helpers import rows, run_cli

ROOT = Path(__file__).resolve().parents[2]
#: the online-shop demo of before issue 34 (origin by first name, 36 conversations per repetition)
DEMO = ROOT / "tests" / "data" / "demo_origin.yaml"

#: The tone rubric's dimensions (the default rubric of the ``judge`` measure).
TONE = ("courtesy", "condescension", "distrust")


def demo_battery(directory: Path, target: dict[str, Any] | None = None, *, judge: dict[str, Any] | None = None,
                 repetitions: int = 1, measures: dict[str, Any] | None = None, analysis: dict[str, Any] | None = None,
                 name: str | None = None, **extra: Any) -> Path:
    """A copy of tests/data/demo_origin.yaml with an absolute ``system_file`` and the given
    target / judge / measures; 36 conversations per repetition."""
    data = yaml.safe_load(DEMO.read_text(encoding="utf-8"))
    system = (ROOT / "examples" / "tienda_online" / "system_prompt.md").resolve()
    for t in data["templates"]:
        if "system_file" in t:
            t["system_file"] = str(system)
    data["target"] = target or {"kind": "mock"}
    data["repetitions"] = repetitions
    data["judge"] = judge or {"kind": "mock", "model": "judge-mock"}
    data["allow_self_judging"] = True
    data.setdefault("judge_self_test", "off")  # scripted judges with constant scores
    if measures is not None:
        data["measures"] = measures
    if analysis is not None:
        data["analysis"] = analysis
    if name:
        data["name"] = name
    data.update(extra)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "battery.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


#: A scripted judge with constant, valid tone scores (see :func:`scripted_judge`).
SCRIPTED_JUDGE = '''
import json

def judge(messages, context):
    return json.dumps({"courtesy": 4, "condescension": 1, "distrust": 2, "reason": "ok"})
'''


def scripted_judge(directory: Path, module: str) -> dict[str, Any]:
    """Write :data:`SCRIPTED_JUDGE` as ``directory/module.py``; return its ``python`` judge block."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{module}.py").write_text(SCRIPTED_JUDGE, encoding="utf-8")
    return {"kind": "python", "callable": f"{module}:judge", "path": str(directory)}


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def output(self) -> str:
        return self.out + self.err


@pytest.fixture
def cli(capsys):
    """Run ``fairpair ARGS`` in this process; returns exit code, stdout and stderr."""

    def run(*args: Any) -> Result:
        return Result(*run_cli(args, capsys, collapse=False))

    return run


def fairpair_cmd(*args: Any) -> list[str]:
    return [sys.executable, "-m", "fairpair.cli", *[str(a) for a in args]]


def run_sub(*args: Any, timeout: float = 120, **kw: Any) -> Result:
    env = {**os.environ, "COLUMNS": "200", **kw.pop("env", {})}
    p = subprocess.run(fairpair_cmd(*args), check=False, capture_output=True, text=True, timeout=timeout, env=env, **kw)
    return Result(p.returncode, p.stdout, p.stderr)


query = rows  # the store read with sqlite3 alone (tests/run_helpers.py)


def ok_counts(run_dir: Path) -> dict[tuple[str, str], int]:
    return {(t, c): n for t, c, n in query(
        run_dir, "SELECT target, case_id, COUNT(*) FROM responses WHERE status='ok' GROUP BY target, case_id")}
