"""Ctrl-C during a run ends with the resume hint and exit 130 (issue 14, point 9)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fairpair.testing import write_battery


def test_ctrl_c_prints_the_resume_hint(tmp_path):
    b = write_battery(tmp_path, {"kind": "mock", "latency": 0.5}, templates=10)  # 40 cases, ~3 s at 8 in flight
    run = tmp_path / "run"
    env = {**os.environ, "COLUMNS": "300",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src") + os.pathsep + os.environ.get("PYTHONPATH",
                                                                                                        "")}
    proc = subprocess.Popen([sys.executable, "-m", "fairpair.cli", "run", str(b), "--out", str(run), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (run / "store.sqlite").exists():
        time.sleep(0.05)
    time.sleep(1.5)  # the preflight answered, the run is sending
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    flat = " ".join(err.split())
    assert f"interrupted: every answer stored so far is kept in {run}" in flat
    assert f"run the same command again (with --out {run}) to resume" in flat
    assert "Traceback" not in err and "Aborted" not in err
