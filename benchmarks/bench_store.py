"""Benchmark: the run store's write rate (``python benchmarks/bench_store.py``).

The store is written by one process (the driver, whatever the engine), one
transaction per answer and one per measurement row, as ``fairpair run`` and
``fairpair measure`` do (WAL journal, ``synchronous=NORMAL``:
:mod:`fairpair.store`). This script times, on a fresh store holding ``--n``
cases of a generated battery:

* answers: :func:`fairpair.run._engine.record_outcome` (the one writer of
  answers for every engine) with a realistic answer (``--words`` words of
  Spanish text, token counts, latency), one commit each;
* measurements: ``Store.add_measurement`` with the rows a paper-scale answer
  gets (``--rows-per-answer``, default 5: three tone dimensions, the pairwise
  HHH preference, the semantic distance), one commit each.

It prints committed answers/s and measurement rows/s, the combined rate in
"answers with their measurements per second", and its ratio to the rate the
paper-scale study needs: 5 models x 11,200 answers (56,000) and their
measurement rows written within ``--budget-h`` hours (default 1 h, a
deliberately tight budget: the plan in ``benchmarks/HISTORY.md`` finds the
GPUs need several hours at any fleet size below ~50 GPUs). A ratio above 1
means the single writer is not what limits the study.
"""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
import time
from pathlib import Path

from fairpair.battery import load_battery
from fairpair.cases import expand
from fairpair.run import Store
from fairpair.run._engine import TargetRunStats, record_outcome
from fairpair.targets import Completion, Usage
from fairpair.testing import write_battery

#: 5 models x 11,200 conversations (the second seed's study)
PAPER_ANSWERS = 5 * 11_200

WORDS = ("Lamentamos mucho que su pedido haya llegado dañado. Le ofrecemos el reembolso completo o un "
         "cambio sin coste; indíquenos qué prefiere y le enviaremos la etiqueta de devolución hoy mismo. ").split()


def _answer(words: int) -> str:
    return " ".join(itertools.islice(itertools.cycle(WORDS), words))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=5000, help="answers to commit (and cases in the store)")
    ap.add_argument("--words", type=int, default=150, help="words per answer")
    ap.add_argument("--rows-per-answer", type=int, default=5, help="measurement rows per answer")
    ap.add_argument("--budget-h", type=float, default=1.0, help="hours the paper-scale study's writes may take")
    ap.add_argument("--dir", default=None, help="where to create the store (default: a temporary directory)")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        tmp = Path(d)
        templates = max(1, round(a.n / 8 / 10))
        lb = load_battery(write_battery(tmp / "b", {"kind": "mock"}, templates=templates,
                                        repetitions=-(-a.n // (templates * 8))))
        cases = list(itertools.islice(expand(lb), a.n))
        store = Store.open(tmp / "run")
        store.add_cases(cases)
        text = _answer(a.words)
        completion = Completion(text=text, usage=Usage(prompt_tokens=180, completion_tokens=int(a.words * 1.6)),
                                finish_reason="stop", model="llama-3.1-8b-instruct", system_fingerprint="fp_1")
        stats = TargetRunStats()
        t0, c0 = time.perf_counter(), time.process_time()
        for case in cases:
            record_outcome(store, "model_a", case, completion, None, 1, [text], 0.8123, stats)
        wall_a, cpu_a = time.perf_counter() - t0, time.process_time() - c0
        rows = ("tone.courtesy", "tone.condescension", "tone.distrust", "hhh", "drift", "extra1", "extra2",
                "extra3")[:a.rows_per_answer] if a.rows_per_answer <= 8 else \
            tuple(f"m{i}" for i in range(a.rows_per_answer))
        detail = {"raw": '{"courtesy": 4, "condescension": 1, "distrust": 2, "reason": "cortés y resolutivo"}',
                  "judge_model": "qwen2.5-7b-instruct"}
        t0, c0 = time.perf_counter(), time.process_time()
        for case in cases:
            for r in rows:
                store.add_measurement(target="model_a", case_id=case.id, measure=r, status="ok", value=4,
                                      detail=detail)
        wall_m, cpu_m = time.perf_counter() - t0, time.process_time() - c0
        assert stats.answered == a.n and store.counts("model_a")["answered"] == a.n
        size = (tmp / "run" / "store.sqlite").stat().st_size
        store.close()

    ans_s = a.n / wall_a
    row_s = a.n * len(rows) / wall_m
    per_answer = 1 / ans_s + len(rows) / row_s  # seconds of the writer per answer with its rows
    combined = 1 / per_answer
    need = PAPER_ANSWERS / (a.budget_h * 3600)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {a.n} answers of {a.words} words, "
          f"{len(rows)} measurement rows each; one commit per answer and per row")
    print(f"answers      : {ans_s:8.0f} committed/s ({wall_a:.2f} s wall, {cpu_a / a.n * 1000:.3f} ms CPU each)")
    print(f"measurements : {row_s:8.0f} rows committed/s ({wall_m:.2f} s wall, "
          f"{cpu_m / (a.n * len(rows)) * 1000:.3f} ms CPU each)")
    print(f"answers with their {len(rows)} rows: {combined:.0f}/s ({per_answer * 1000:.2f} ms of the writer each); "
          f"store {size / a.n / 1024:.1f} KiB per answer")
    print(f"paper scale: {PAPER_ANSWERS:,} answers (+{PAPER_ANSWERS * len(rows):,} rows) in {a.budget_h:g} h "
          f"needs {need:.1f} answers with rows/s; the store writes {combined:.0f}/s: ratio {combined / need:.1f} "
          f"(> 1: the single writer is not the limit); all of it would take the writer "
          f"{PAPER_ANSWERS * per_answer / 60:.1f} min")


if __name__ == "__main__":
    main()
