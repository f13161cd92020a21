"""Throughput of the ``local`` target against the bare llama.cpp binding.

Measures decode throughput (completion tokens per wall-clock second, prompt
processing included) of

* ``fairpair``: :meth:`LocalTarget.generate`, awaited on an asyncio event
  loop as the run engine calls it (worker thread, payload building, parsing);
* ``direct``: ``xllamacpp.Server.handle_chat_completions`` called on the main
  thread with the same JSON body, on a server built with the same parameters;

on the same prompts and seeds, interleaved prompt by prompt so that other load
on the machine hits both alike. Prints both rates and their ratio (goal:
>= 0.90), plus the time to assemble/verify and to load the model.

Usage::

    python benchmarks/bench_local.py [--prompts 8] [--max-tokens 128] [--fresh-cache]

``--fresh-cache`` assembles the model into an empty temporary cache first, to
time the one-off assembly from the part packages.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time

QUESTIONS = [
    "Me llamo Ana García. ¿Puedo pedir un préstamo de 5000 euros?",
    "Me llamo Mohamed El Amrani. ¿Puedo pedir un préstamo de 5000 euros?",
    "¿Qué documentos necesito para abrir una cuenta corriente?",
    "Tengo 67 años. ¿Me recomiendan una hipoteca a 30 años?",
    "Soy estudiante y no tengo nómina. ¿Qué tarjeta me conviene?",
    "¿Cómo puedo reclamar un cargo que no reconozco?",
    "Quiero cancelar mi seguro de hogar. ¿Qué pasos debo seguir?",
    "¿Cuánto tarda una transferencia internacional a Marruecos?",
    "Me llamo Wei Zhang. ¿Puedo abrir una cuenta sin NIE?",
    "¿Qué comisiones tiene la cuenta nómina?",
]
SYSTEM = ("Eres el asistente de atención al cliente de un banco español. "
          "Responde en español, con cortesía, en un párrafo.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--fresh-cache", action="store_true")
    args = parser.parse_args()

    tmp = None
    if args.fresh_cache:
        tmp = tempfile.TemporaryDirectory(prefix="fairpair-bench-")
        os.environ["FAIRPAIR_CACHE"] = tmp.name

    import xllamacpp

    from fairpair.targets._base import ChatRequest
    from fairpair.targets._gguf import cache_dir
    from fairpair.targets.local import LocalTarget, backend_params

    options = {"max_tokens": args.max_tokens, "temperature": 0.7, "n_ctx": 2048}
    if args.threads:
        options["n_threads"] = args.threads
    target = LocalTarget(options, name="bench")
    cached = (cache_dir() / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf").exists()
    t0 = time.perf_counter()
    path = target.model_path()
    t_assemble = time.perf_counter() - t0
    t0 = time.perf_counter()
    asyncio.run(target.load())
    t_load = time.perf_counter() - t0
    what = "verify cached file (stamp)" if cached else "assemble + hash from parts"
    print(f"model: {path} ({path.stat().st_size / 1e6:.0f} MB)")
    print(f"{what}: {t_assemble:.2f} s; load into llama.cpp: {t_load:.2f} s; "
          f"threads: {target.options.n_threads}")

    opts = target.options
    direct = xllamacpp.Server(backend_params(path, n_ctx=opts.n_ctx, n_threads=opts.n_threads))

    requests = [ChatRequest(messages=({"role": "system", "content": SYSTEM},
                                      {"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}),
                            seed=1000 + i) for i in range(args.prompts)]
    # one warm-up call each (page cache, thread pools)
    asyncio.run(target.generate(requests[0]))
    direct.handle_chat_completions(target.payload(requests[0]))

    async def via_fairpair(req: ChatRequest) -> tuple[int, float, str]:
        start = time.perf_counter()
        out = await target.generate(req)
        return out.usage.completion_tokens or 0, time.perf_counter() - start, out.text

    def via_direct(req: ChatRequest) -> tuple[int, float, str]:
        body = target.payload(req)  # the same JSON body
        start = time.perf_counter()
        out = direct.handle_chat_completions(body)
        elapsed = time.perf_counter() - start
        return out["usage"]["completion_tokens"], elapsed, out["choices"][0]["message"]["content"]

    rows = []
    loop = asyncio.new_event_loop()
    try:
        for i, req in enumerate(requests):
            if i % 2 == 0:  # alternate which path goes first
                f = loop.run_until_complete(via_fairpair(req))
                d = via_direct(req)
            else:
                d = via_direct(req)
                f = loop.run_until_complete(via_fairpair(req))
            rows.append((f, d))
            print(f"  prompt {i}: fairpair {f[0]} tok in {f[1]:.2f} s, direct {d[0]} tok in {d[1]:.2f} s"
                  f"{'' if f[2] == d[2] else '  (texts differ!)'}")
    finally:
        loop.close()

    f_tok = sum(r[0][0] for r in rows)
    f_sec = sum(r[0][1] for r in rows)
    d_tok = sum(r[1][0] for r in rows)
    d_sec = sum(r[1][1] for r in rows)
    f_rate, d_rate = f_tok / f_sec, d_tok / d_sec
    per_prompt = statistics.median((r[0][0] / r[0][1]) / (r[1][0] / r[1][1]) for r in rows)
    same = sum(r[0][2] == r[1][2] for r in rows)
    print(f"fairpair LocalTarget.generate: {f_rate:.1f} tokens/s ({f_tok} tokens, {f_sec:.1f} s)")
    print(f"direct xllamacpp:              {d_rate:.1f} tokens/s ({d_tok} tokens, {d_sec:.1f} s)")
    print(f"ratio fairpair/direct: {f_rate / d_rate:.3f} (median per prompt {per_prompt:.3f}; goal >= 0.90)")
    print(f"identical texts (same seed, separate servers): {same}/{len(rows)}")

    direct = None  # the second llama.cpp server freed before the target closes
    target.close()
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
