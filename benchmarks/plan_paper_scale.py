"""The paper-scale plan: what the second seed's study costs in time on N GPUs
(``python benchmarks/plan_paper_scale.py``).

The study: 5 models x 11,200 conversations (56,000 answers: 11,100
demographic conditions and 100 baselines per model), each demographic answer
judged against its baseline by an LLM judge in both orders (Helpful-Honest-
Harmless preference: 2 x 55,500 = 111,000 judge calls) and embedded
(all-mpnet-base-v2: 56,000 texts). fairpair runs it as two stages, ``run``
(the answers) then ``measure`` (judge and embeddings), each on the Ray engine
with vLLM behind it (one vLLM server per GPU, or ``vllm serve MODEL
--data-parallel-size N``; the five models and the judge served in turn, each
on all N GPUs).

Inputs (flags; defaults in brackets):

* measured here, by ``benchmarks/bench_ray.py`` / ``bench_overhead.py`` /
  ``bench_store.py`` / ``bench_ray_measures.py`` (see ``benchmarks/HISTORY.md``):
  the driver's CPU per answer (``--driver-ms-answer`` [0.50 ms]: bench_ray,
  chunks of 8) and per judge call (``--driver-ms-judge`` [3.9 ms:
  bench_ray_measures, 4 actors, at load 9 on 2 cores; it includes masking,
  prompts, parsing and the commits of that call's rows, counted again below,
  so the figure errs long]), the store's commit costs, wall time per commit
  (``--commit-ms-answer`` [0.70 ms], ``--commit-ms-row`` [0.67 ms]:
  bench_store at load 9.8), and the measurement rows per judged answer
  (``--rows`` [2: the HHH score and the distance]);
* assumptions, not measured here: vLLM's output throughput per GPU
  (``--gpu-out-tok-s`` [5,103 tokens/s: Red Hat's MLPerf Inference v5.1
  submission, Llama 3.1 8B FP8 on one H100 with vLLM 0.10.0, Server
  scenario; 5,777 Offline]); its prefill rate (``--gpu-prefill-tok-s``
  [20,000 tokens/s, about 40 % of an H100's dense FP8 peak at 16 GFLOP per
  token of an 8B model]); token counts per answer (``--answer-in``
  [250], ``--answer-out`` [300]) and per judge call (``--judge-in`` [900:
  criteria and both answers], ``--judge-out`` [60]); the embedder's rate per
  GPU (``--embed-s`` [2,800 texts/s, the all-mpnet-base-v2 speed of the
  sentence-transformers pretrained-models table, V100]).

Each stage takes the longer of: the GPUs' work divided by N; the driver's
time (one process, one core: every request passes through it, and it is the
store's single writer, so its CPU per request and the commits add up). The
script prints one row per N and which of the two limits each stage, then
where the single driver stops the scaling and the store's share of it; ``--simulate`` also runs a
discrete-event schedule of the requests (lengths drawn around the means, the GPUs shared by continuous
batching, the driver and the store as single servers) and prints its
makespan beside the closed form.
"""

from __future__ import annotations

import argparse
import heapq
import random

MODELS, CONVERSATIONS, BASELINES = 5, 11_200, 100


def stage_times(n_gpus: int, a: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Seconds per stage and limit (``gpu``, ``driver``, ``store``) on ``n_gpus`` GPUs."""
    answers = MODELS * CONVERSATIONS
    judged = MODELS * (CONVERSATIONS - BASELINES)
    judge_calls = 2 * judged
    t_answer = a.answer_out / a.gpu_out_tok_s + a.answer_in / a.gpu_prefill_tok_s  # GPU-seconds per answer
    t_judge = a.judge_out / a.gpu_out_tok_s + a.judge_in / a.gpu_prefill_tok_s
    # the driver is the store's writer: its CPU per request and the commits add up in one process
    run = {"gpu": answers * t_answer / n_gpus,
           "driver": answers * (a.driver_ms_answer + a.commit_ms_answer) / 1000}
    measure = {"gpu": (judge_calls * t_judge + answers / a.embed_s) / n_gpus,
               "driver": (judge_calls * a.driver_ms_judge + judged * a.rows * a.commit_ms_row) / 1000}
    return {"run": run, "measure": measure}


def store_seconds(a: argparse.Namespace) -> dict[str, float]:
    """Seconds of commits alone per stage (the part of the driver's time the store takes)."""
    judged = MODELS * (CONVERSATIONS - BASELINES)
    return {"run": MODELS * CONVERSATIONS * a.commit_ms_answer / 1000,
            "measure": judged * a.rows * a.commit_ms_row / 1000}


def simulate(n_gpus: int, a: argparse.Namespace, seed: int = 0) -> float:
    """Makespan (s) of a discrete-event schedule of both stages on ``n_gpus`` GPUs.

    Each GPU runs ``--slots`` requests at once, each at ``1 / slots`` of the GPU's rate (continuous
    batching as processor sharing, approximated by fixed slots); request lengths are exponential
    around the means (the tokens' spread); the driver, one process, spends its CPU per request plus
    the commits on each request before the next can start. The measure stage starts when the
    last answer is stored, as ``fairpair measure`` after ``fairpair run``.
    """
    rng = random.Random(seed)
    answers = MODELS * CONVERSATIONS
    judged = MODELS * (CONVERSATIONS - BASELINES)

    def one_stage(n_req: int, t_mean: float, driver_s: float, t_start: float) -> float:
        slots = [(t_start, g) for g in range(n_gpus * a.slots)]  # (free at, slot)
        heapq.heapify(slots)
        driver_free = t_start
        finish: list[float] = []
        for _ in range(n_req):
            free, s = heapq.heappop(slots)
            # the driver (one process) spends driver_s on each request: sending it, collecting and
            # committing its result; a slot's next request waits for the slot and for the driver
            start = max(free, driver_free)
            driver_free = start + driver_s
            done = start + rng.expovariate(1 / (t_mean * a.slots))
            heapq.heappush(slots, (done, s))
            finish.append(done)
        return max(max(finish), driver_free)

    t_answer = a.answer_out / a.gpu_out_tok_s + a.answer_in / a.gpu_prefill_tok_s
    t_judge = a.judge_out / a.gpu_out_tok_s + a.judge_in / a.gpu_prefill_tok_s
    end_run = one_stage(answers, t_answer, (a.driver_ms_answer + a.commit_ms_answer) / 1000, 0.0)
    per_judge = (a.driver_ms_judge + a.rows * a.commit_ms_row / 2) / 1000  # 2 calls per judged answer
    end_judge = one_stage(2 * judged, t_judge, per_judge, end_run)
    return end_judge + answers / a.embed_s / n_gpus


def _fmt(s: float) -> str:
    return f"{s / 3600:.2f} h" if s >= 3600 else f"{s / 60:.1f} min"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpus", default="1,2,4,8,16,32,64,128")
    ap.add_argument("--gpu-out-tok-s", type=float, default=5103.0)
    ap.add_argument("--gpu-prefill-tok-s", type=float, default=20_000.0)
    ap.add_argument("--answer-in", type=float, default=250)
    ap.add_argument("--answer-out", type=float, default=300)
    ap.add_argument("--judge-in", type=float, default=900)
    ap.add_argument("--judge-out", type=float, default=60)
    ap.add_argument("--embed-s", type=float, default=2800.0)
    ap.add_argument("--driver-ms-answer", type=float, default=0.50)
    ap.add_argument("--driver-ms-judge", type=float, default=3.9)
    ap.add_argument("--commit-ms-answer", type=float, default=0.70)
    ap.add_argument("--commit-ms-row", type=float, default=0.67)
    ap.add_argument("--rows", type=int, default=2, help="measurement rows per judged answer")
    ap.add_argument("--simulate", action="store_true")
    ap.add_argument("--slots", type=int, default=64, help="--simulate: requests in flight per GPU")
    a = ap.parse_args()

    answers = MODELS * CONVERSATIONS
    judged = MODELS * (CONVERSATIONS - BASELINES)
    print(f"study: {answers:,} answers, {2 * judged:,} judge calls (both orders), {answers:,} embeddings; "
          f"vLLM {a.gpu_out_tok_s:,.0f} output tok/s + {a.gpu_prefill_tok_s:,.0f} prefill tok/s per GPU (assumed); "
          f"driver {a.driver_ms_answer} ms/answer, {a.driver_ms_judge} ms/judge call; store "
          f"{a.commit_ms_answer} ms/answer, {a.commit_ms_row} ms/row (measured)")
    head = f"{'GPUs':>5} | {'run (answers)':>22} | {'measure (judge+embed)':>24} | {'total':>9}"
    if a.simulate:
        head += f" | {'simulated':>9}"
    print(head)
    print("-" * len(head))
    for n in (int(x) for x in a.gpus.split(",")):
        st = stage_times(n, a)
        cells, total = [], 0.0
        for stage in ("run", "measure"):
            limit = max(st[stage], key=st[stage].get)
            t = st[stage][limit]
            total += t
            cells.append(f"{_fmt(t):>9} ({limit:>6})")
        line = f"{n:>5} | {cells[0]:>22} | {cells[1]:>24} | {_fmt(total):>9}"
        if a.simulate:
            line += f" | {_fmt(simulate(n, a)):>9}"
        print(line)
    # where the single driver (and writer) stops the scaling
    st1, commits = stage_times(1, a), store_seconds(a)
    for stage in ("run", "measure"):
        cap = st1[stage]["driver"]
        print(f"{stage}: the single driver caps the stage at {_fmt(cap)} (the store's commits {_fmt(commits[stage])} "
              f"of it); the GPUs reach that at {st1[stage]['gpu'] / cap:.0f} GPUs")


if __name__ == "__main__":
    main()
