"""A read-only run directory and a full disk: a clear error, exit 2, nothing stored lost.

How the conditions are made (tests run as root, where ``chmod a-w`` stops no
write): a read-only bind mount of the run directory, or a 600 kB tmpfs, each in
a private mount namespace (``unshare -m``) so nothing leaks to the host; both
are skipped where mounting is not allowed. A full disk is also simulated in
process, everywhere, with SQLite's ``PRAGMA max_page_count`` (SQLITE_FULL, the
error a full disk gives).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fairpair.run import Store

from .conftest import demo_battery, fairpair_cmd, ok_counts, query


def _can_mount() -> bool:
    if not shutil.which("unshare") or not sys.platform.startswith("linux"):
        return False
    p = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                       check=False, capture_output=True)
    return p.returncode == 0


needs_mount = pytest.mark.skipif(not _can_mount(), reason="cannot create a private mount namespace here")


def _digest(d: Path) -> dict[str, str]:
    return {str(f.relative_to(d)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(d.rglob("*")) if f.is_file()}


def _in_namespace(script: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(["unshare", "-m", "sh", "-c", script], check=False, capture_output=True, text=True,
                          timeout=timeout,
                          env=env)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A complete demo run (mock target, mock judge): answered, measured, analyzed, reported."""
    from fairpair.cli import main

    tmp = tmp_path_factory.mktemp("ro")
    battery = demo_battery(tmp / "b", {"kind": "mock"})
    try:
        main(["run", str(battery), "--out", str(tmp / "run"), "-q"])
    except SystemExit as exc:
        assert not exc.code
    return battery, tmp / "run"


@needs_mount
def test_read_only_run_directory(finished_run, tmp_path):
    battery, src = finished_run
    run = tmp_path / "run"
    shutil.copytree(src, run)
    before = _digest(run)
    q = shlex.quote
    cmds = {
        "run": fairpair_cmd("run", battery, "--out", run, "-q"),
        "measure": fairpair_cmd("measure", run),
        "report": fairpair_cmd("report", run),
        "export": fairpair_cmd("export", run),
    }
    cmds["report-elsewhere"] = fairpair_cmd("report", run, "-o", tmp_path / "rep")  # reading still works
    logs = tmp_path / "logs"
    logs.mkdir()
    script = f"mount --bind {q(str(run))} {q(str(run))} && mount -o remount,bind,ro {q(str(run))} || exit 99\n"
    for name, cmd in cmds.items():  # in parallel, each with its own log and exit code
        log = q(str(logs / name))
        script += f"({' '.join(map(q, cmd))} >{log} 2>&1; echo $? >{log}.rc) &\n"
    script += "wait\n"
    p = _in_namespace(script)
    assert p.returncode != 99, p.stderr
    for name in cmds:
        code = int((logs / f"{name}.rc").read_text())
        out = (logs / name).read_text()
        assert "Traceback" not in out and "internal error" not in out, (name, out)
        if name == "report-elsewhere":
            assert code == 0, out
            continue
        assert code == 2, (name, out)
        assert "Read-only file system" in out or "read-only" in out, (name, out)
        assert str(run) in out, (name, out)
    assert (tmp_path / "rep" / "report.html").exists()
    assert _digest(run) == before  # nothing changed, nothing lost


@needs_mount
def test_disk_full_on_a_tiny_tmpfs_then_resume(tmp_path):
    battery = demo_battery(tmp_path / "b", {"kind": "mock"}, repetitions=40)  # 1,440 cases
    small, saved = tmp_path / "small", tmp_path / "saved"
    small.mkdir()
    run = small / "run"
    q = shlex.quote
    cmd = " ".join(map(q, fairpair_cmd("run", battery, "--out", run, "--no-measure", "-q")))
    p = _in_namespace(f"mount -t tmpfs -o size=600k tmpfs {q(str(small))} || exit 99\n"
                      f"{cmd}; echo \"rc=$?\"; cp -a {q(str(run))} {q(str(saved))}")
    assert p.returncode != 99, p.stderr
    assert "rc=2" in p.stdout, p.stdout + p.stderr
    assert "cannot write the run store: the disk is full" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    kept = {i: t for i, t in query(saved, "SELECT id, text FROM responses WHERE status='ok'")}
    assert query(saved, "PRAGMA integrity_check") == [("ok",)]
    assert not [f for f in saved.rglob("*") if f.name.endswith(".tmp")]  # no 0-byte leftovers (issue 28)
    # resume where there is room: everything stored before the disk filled is still there, once
    r = subprocess.run(fairpair_cmd("run", battery, "--out", saved, "--no-measure", "-q"), check=False,
                       capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    after = {i: t for i, t in query(saved, "SELECT id, text FROM responses WHERE status='ok'")}
    assert all(after.get(i) == t for i, t in kept.items())
    counts = ok_counts(saved)
    assert len(counts) == 1440 and set(counts.values()) == {1}


def _limit_pages(monkeypatch, extra_pages: int) -> None:
    """Every store opened from now on may grow by at most ``extra_pages`` pages (SQLITE_FULL beyond)."""
    real_open = Store.open.__func__

    def open_small(cls, run_dir, **kw):
        store = real_open(cls, run_dir, **kw)
        n = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {n + extra_pages}")
        return store

    monkeypatch.setattr(Store, "open", classmethod(open_small))


def test_database_full_during_the_run_exits_2_and_keeps_the_answers(tmp_path, monkeypatch, cli):
    battery = demo_battery(tmp_path / "b", {"kind": "mock"}, repetitions=10)  # 360 cases
    run = tmp_path / "run"
    first = cli("run", battery, "--out", run, "--no-measure", "-q")  # creates the store, fills it
    assert first.code == 0
    kept = {i: t for i, t in query(run, "SELECT id, text FROM responses WHERE status='ok'")}
    # a second battery's worth of cases cannot fit: the run stops with a clear message
    bigger = demo_battery(tmp_path / "b2", {"kind": "mock"}, repetitions=30)
    _limit_pages(monkeypatch, 40)
    r = cli("run", bigger, "--out", run, "--no-measure", "-q")
    assert r.code == 2, r.output
    assert "cannot write the run store: the disk is full (database or disk is full)" in r.err
    assert str(run / "store.sqlite") in r.err and "Traceback" not in r.output
    monkeypatch.undo()
    assert query(run, "PRAGMA integrity_check") == [("ok",)]
    after = {i: t for i, t in query(run, "SELECT id, text FROM responses WHERE status='ok'")}
    assert {i: after.get(i) for i in kept} == kept
    # with room again, the same command completes the run
    assert cli("run", bigger, "--out", run, "--no-measure", "-q").code == 0
    counts = ok_counts(run)
    assert len(counts) == 1080 and set(counts.values()) == {1}


def test_database_full_during_measure_exits_2_and_resumes(tmp_path, monkeypatch, cli):
    battery = demo_battery(tmp_path / "b", {"kind": "mock"}, repetitions=4)
    run = tmp_path / "run"
    assert cli("run", battery, "--out", run, "--no-measure", "-q").code == 0
    _limit_pages(monkeypatch, 3)
    r = cli("measure", run)
    assert r.code == 2, r.output
    assert "the disk is full" in r.err and "Traceback" not in r.output
    monkeypatch.undo()
    stored = query(run, "SELECT COUNT(*) FROM measurements")[0][0]
    assert stored > 0
    assert cli("measure", run).code == 0
    dup = query(run, "SELECT 1 FROM measurements WHERE status IN ('ok','missing') "
                     "GROUP BY target, case_id, measure HAVING COUNT(*) > 1")
    assert dup == [] and query(run, "PRAGMA integrity_check") == [("ok",)]
    assert query(run, "SELECT COUNT(DISTINCT measure || case_id) FROM measurements "
                      "WHERE status IN ('ok','missing')") == [(144 * 7,)]


def test_a_full_disk_leaves_no_temporary_file(tmp_path, monkeypatch):
    """Every file fairpair writes whole (manifest, results.json, report, exports, cases.jsonl) goes
    through fairpair._files.atomic_path: a write that fails (ENOSPC here) leaves the earlier file as
    it was and no ``.tmp`` file behind (a full disk used to leave 0-byte ones)."""
    import errno

    from fairpair._files import atomic_path, atomic_write_text
    from fairpair.store import write_results

    target = tmp_path / "results.json"
    target.write_text("earlier", encoding="utf-8")
    real = Path.write_text

    def full(self, *a, **kw):
        real(self, "", encoding="utf-8")  # the file is created, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(OSError):
        atomic_write_text(target, "new")
    from fairpair.errors import FairpairError

    with pytest.raises(FairpairError, match="cannot write results.json"):
        write_results(tmp_path, "new")
    monkeypatch.setattr(Path, "write_text", real)
    with pytest.raises(KeyboardInterrupt), atomic_path(tmp_path / "cases.jsonl") as tmp:
        tmp.write_text("half", encoding="utf-8")
        raise KeyboardInterrupt
    assert target.read_text(encoding="utf-8") == "earlier"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["results.json", "results.previous"]
