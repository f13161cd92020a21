"""``--address``: ``fairpair run --engine ray`` joins a Ray cluster it did not start (issue 16).

The slow test starts a one-node cluster the way a user does on the cluster's head
(``ray start --head --block``, two CPUs, its own ``--temp-dir`` so no other Ray on this machine
sees it), then runs ``fairpair run ... --engine ray --address auto`` in a subprocess whose
``RAY_ADDRESS`` names that head (as on a node of the cluster, or under ``ray job submit``), and
through Ray Client (``--address ray://127.0.0.1:PORT``). The cluster is stopped by signalling the
``ray start`` process group the test started (never ``ray stop``, which would stop every Ray of the user).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from fairpair.testing import write_battery

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(run_dir: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(run_dir / "store.sqlite")
    try:
        return sorted(con.execute("SELECT case_id, status FROM responses").fetchall())
    finally:
        con.close()


@pytest.fixture
def ray_cluster():
    """A one-node Ray cluster started with ``ray start --head``: yields (gcs address, client port, env)."""
    pytest.importorskip("ray")
    ray_bin = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    if ray_bin is None:
        pytest.skip("the 'ray' command is not installed")
    port, client_port = _free_port(), _free_port()
    temp = tempfile.mkdtemp(prefix="fpray")  # short: Ray's socket paths live under it
    # token authentication (Ray's default for new clusters) with a token of this test's own, given to the
    # head and to the driver as a user gives the cluster's token to the machine that runs fairpair
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env.pop("RAY_ADDRESS", None)
    head = subprocess.Popen(
        [ray_bin, "start", "--head", "--block", "--num-cpus", "2", "--port", str(port), "--node-ip-address",
         "127.0.0.1", "--ray-client-server-port", str(client_port), "--include-dashboard", "false",
         "--temp-dir", temp, "--disable-usage-stats"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the head is up when its address file is written
            if head.poll() is not None:
                pytest.fail(f"ray start exited {head.returncode}: {head.stdout.read()[-2000:]}")
            if Path(temp, "ray_current_cluster").exists():
                break
            time.sleep(0.5)
        else:
            pytest.fail("the Ray head did not start within 120 s")
        yield address, client_port, env
    finally:
        try:
            os.killpg(head.pid, signal.SIGTERM)  # ray start --block stops what it started
            head.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(head.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(temp, ignore_errors=True)


def _run(battery: Path, out: Path, address: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "fairpair.cli", "run", str(battery), "--out", str(out), "-q", "--engine", "ray",
           "--address", address, "--actors", "2", "--concurrency", "4", "--no-measure", "--no-analyze",
           "--no-report"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_run_joins_a_cluster_started_with_ray_start_through_address_auto_and_ray_client(tmp_path, ray_cluster):
    address, client_port, env = ray_cluster
    battery = write_battery(tmp_path, {"kind": "mock", "refund": 0.6, "latency": 0.01}, templates=2)  # 16 cases
    auto = _run(battery, tmp_path / "auto", "auto", {**env, "RAY_ADDRESS": address})
    assert auto.returncode == 0, auto.stdout[-2000:] + auto.stderr[-2000:]
    rows = _answers(tmp_path / "auto")
    assert len(rows) == 16 and {s for _, s in rows} == {"ok"}
    manifest = json.loads((tmp_path / "auto" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["settings"]["engine"] == "ray" and manifest["settings"]["address"] == "auto"

    client = _run(battery, tmp_path / "client", f"ray://127.0.0.1:{client_port}", env)
    assert client.returncode == 0, client.stdout[-2000:] + client.stderr[-2000:]
    assert _answers(tmp_path / "client") == rows  # the same cases, each answered once
