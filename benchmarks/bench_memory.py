"""Benchmark: a million-case battery streams through every stage in < 1 GiB each.

A battery of ``T`` one-turn templates x 2 origin groups x 4 names x ``R``
repetitions (default 50 x 8 x 2,500 = 1,000,000 cases) with the ``mock``
target (zero latency), two measures (a keyword list and a word count) and a
pre-registered comparison of each, goes through the CLI stages one after
another, each in its own process:

1. ``fairpair expand``  -> cases.jsonl
2. ``fairpair run --no-measure --no-analyze --no-report``  (expand again, store, answer)
3. ``fairpair measure``
4. ``fairpair analyze``

The peak resident memory of each stage's process (``ru_maxrss`` from
``os.wait4``, the kernel's high-water mark, in KiB on Linux) is printed with
its wall time and its ratio to the goal (1 GiB); the script exits 1 if a
stage fails or goes over the goal. Every stage must stream: memory that grows
with the number of cases shows up here as a peak that grows with ``--n``
(compare ``--n 100000`` with the default). A stage whose memory passes 2 GiB
is stopped (it has failed already; the machine is shared); when that stage is
``measure``, the two measurements of every answer are written with SQL
instead, so that ``analyze`` is still measured.

Usage: ``python benchmarks/bench_memory.py [--n 1000000] [--keep DIR] [--stages measure,analyze]``
(``--stages`` resumes on a ``--keep`` directory of an earlier call)
(``--n`` is rounded up to a multiple of 400: 50 templates x 8 names).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_MEM = 1 << 30
#: a stage is stopped when its RSS passes this (it has failed the goal already)
STOP_MEM = 2 * GOAL_MEM
NAMES = {"espana": ["Lucía", "María", "Carmen", "Laura"], "magreb": ["Fátima", "Khadija", "Naima", "Amina"]}
TEMPLATES = 50
#: the console script installed next to this interpreter
FAIRPAIR = str(Path(sys.executable).with_name("fairpair"))


def battery(reps: int) -> dict:
    """A counterfactual battery of ``TEMPLATES * 8 * reps`` cases answered by the mock target."""
    return {
        "schema_version": 1, "name": "bench_memory", "language": "es", "seed": 3, "repetitions": reps,
        "attributes": {"origen": {"signal": "name", "slot": "nombre", "context_field": "crm.nombre",
                                  "groups": {g: {"variants": v} for g, v in NAMES.items()}}},
        "templates": [{"id": f"t{i:02d}", "system": "Eres el asistente de una tienda online.",
                       "context": {"crm": {"pedidos": i + 1}},
                       "turns": [f"Hola, soy {{nombre}}. Mi pedido {48000 + i} llegó roto; ¿qué hago?"]}
                      for i in range(TEMPLATES)],
        "designs": [{"kind": "counterfactual", "attribute": "origen"}],
        "target": {"kind": "mock", "bias": {"magreb": {"refund": 0.62}}},
        "measures": {"reembolso": {"kind": "keywords", "any_of": ["reembolso completo"]},
                     "palabras": {"kind": "word_count"}},
        "analysis": {"bootstrap_resamples": 200, "comparisons": [
            {"measure": "reembolso", "attribute": "origen", "reference": "espana", "margin": 0.03},
            {"measure": "palabras", "attribute": "origen", "reference": "espana", "margin": 5}]},
    }


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next((int(line.split()[1]) * 1024 for line in fh if line.startswith("VmRSS:")), 0)
    except OSError:
        return 0


def stage(args: list[str], log: Path) -> tuple[float, float, int, int, bool]:
    """Run ``fairpair <args>`` in a child process.

    Returns (wall s, CPU s, peak RSS bytes, exit status, stopped): a stage whose
    RSS passes ``STOP_MEM`` is killed (``stopped``) to spare the machine.
    """
    t0 = time.perf_counter()
    stopped = False
    with open(log, "w") as fh:
        proc = subprocess.Popen([FAIRPAIR, *args], stdout=fh, stderr=subprocess.STDOUT)
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if not stopped and _rss(proc.pid) > STOP_MEM:
                proc.kill()
                stopped = True
            time.sleep(0.5)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, code, stopped


def fill_measurements(run_dir: Path) -> int:
    """Write both measures of every stored answer with SQL, streaming (when ``measure`` could not).

    The values follow the measures' definitions closely enough for the
    analysis' memory and time (``reembolso``: the phrase occurs, case-folded;
    ``palabras``: whitespace-separated words), not for its verdicts.
    """
    import sqlite3

    con = sqlite3.connect(run_dir / "store.sqlite")
    read = sqlite3.connect(run_dir / "store.sqlite")
    now = "2026-01-01T00:00:00+00:00"
    n = 0
    cur = read.execute("SELECT target, case_id, text FROM responses WHERE status='ok' AND (SELECT COUNT(*)"
                       " FROM measurements m WHERE m.target=responses.target AND m.case_id=responses.case_id AND"
                       " m.status='ok' AND m.measure IN ('reembolso', 'palabras')) < 2")
    while rows := cur.fetchmany(20_000):
        out = []
        for t, c, text in rows:
            out.append((t, c, "reembolso", "ok", json.dumps("reembolso completo" in (text or "").lower()),
                        None, None, now))
            out.append((t, c, "palabras", "ok", json.dumps(len((text or "").split())), None, None, now))
        con.execute("BEGIN")
        con.executemany("INSERT OR IGNORE INTO measurements (target, case_id, measure, status, value, detail,"
                        " error, created_at) VALUES (?,?,?,?,?,?,?,?)", out)
        con.execute("COMMIT")
        n += len(rows)
    read.close()
    con.close()
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="cases (rounded up to a multiple of 400)")
    ap.add_argument("--keep", type=Path, help="work in this directory and keep it")
    ap.add_argument("--stages", default="expand,run,measure,analyze",
                    help="comma-separated stages to run (later ones on a --keep directory from an earlier call)")
    args = ap.parse_args()
    wanted = args.stages.split(",")
    per_rep = TEMPLATES * sum(len(v) for v in NAMES.values())
    reps = max(1, -(-args.n // per_rep))
    n = reps * per_rep
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-memory-"))
    root.mkdir(parents=True, exist_ok=True)
    bpath = root / "battery.yaml"
    bpath.write_text(json.dumps(battery(reps), ensure_ascii=False, indent=1), encoding="utf-8")
    run_dir = root / "run"
    if "run" in wanted and run_dir.exists():
        shutil.rmtree(run_dir)
    stages = [
        ("expand", ["expand", str(bpath), "-o", str(root / "cases.jsonl"), "--yes"]),
        ("run", ["run", str(bpath), "--out", str(run_dir), "--concurrency", "8", "--no-measure", "--no-analyze",
                 "--no-report", "--quiet", "--yes"]),
        ("measure", ["measure", str(run_dir)]),
        ("analyze", ["analyze", str(run_dir)]),
    ]
    print(f"battery: {n:,} cases ({TEMPLATES} templates x 8 names x {reps:,} repetitions), mock target, "
          f"{os.cpu_count()} cores; work dir {root}")
    worst = 0.0
    failed = False
    try:
        for name, cmd in stages:
            if name not in wanted:
                continue
            wall, cpu, rss, code, stopped = stage(cmd, root / f"{name}.log")
            worst = max(worst, rss / GOAL_MEM)
            note = "" if code == 0 else f"  EXIT {code}: see {root / (name + '.log')}"
            if stopped:
                note = f"  STOPPED at {STOP_MEM / 2**30:.0f} GiB (holds what it streams in memory)"
            failed |= code != 0
            print(f"{name:8s} {wall:8.1f} s (CPU {cpu:7.1f} s)  {n / wall:7.0f} cases/s  peak {rss / 2**20:7.0f} MiB  "
                  f"(ratio to 1 GiB {rss / GOAL_MEM:.3f}){note}", flush=True)
            if stopped and name == "measure":
                t0 = time.perf_counter()
                k = fill_measurements(run_dir)
                print(f"         measurements of {k:,} answers written with SQL instead "
                      f"({time.perf_counter() - t0:.0f} s), so that analyze can be measured", flush=True)
                continue
            if code != 0:
                break
        if not failed:
            import sqlite3

            con = sqlite3.connect(run_dir / "store.sqlite")
            ok = con.execute("SELECT COUNT(*) FROM responses WHERE status='ok'").fetchone()[0]
            meas = con.execute("SELECT COUNT(*) FROM measurements WHERE status='ok'").fetchone()[0]
            con.close()
            with open(root / "cases.jsonl", "rb") as fh:
                lines = sum(1 for _ in fh)
            print(f"stored: {lines:,} lines in cases.jsonl, {ok:,} answers, {meas:,} measurements; "
                  f"store {(run_dir / 'store.sqlite').stat().st_size / 2**20:.0f} MiB")
            failed |= not (lines == ok == n and meas >= 2 * n)
        print(f"largest peak / 1 GiB: {worst:.3f} (goal < 1){'' if not failed else '; A STAGE FAILED'}")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    sys.exit(1 if failed or worst >= 1 else 0)


if __name__ == "__main__":
    main()
