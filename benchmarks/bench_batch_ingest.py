"""Benchmark: 50,000 judge requests through provider batches (``python benchmarks/bench_batch_ingest.py``).

For each batch format, OpenAI's files + batches and Anthropic's Message Batches, 50,000 distinct
tone-judge requests (the judge's system prompt, a masked question and a masked answer of about 600
characters each) go through :class:`fairpair.run._batchcalls.BatchCalls`, the judge's caller in
``fairpair measure --batch``, against the loopback server of that format
(:func:`fairpair.testing._aio.serve_batch_api`, :func:`~fairpair.testing._aio.serve_anthropic_api`,
in a process of its own so this process's memory is fairpair's alone), with the store of a real run:

1. **write + submit**: every call deferred (its line written for the batch), the JSONL file written,
   submitted (OpenAI: uploaded, the batch created; Anthropic: the requests sent in one
   ``messages.batches.create``), recorded;
2. the server answers every request (1 in 50 an error) on the first poll;
3. **poll + ingest**: the results downloaded and every line stored in ``batch_calls`` in one
   transaction;
4. **replay**: the 50,000 calls again, answered from the store (what the measure pass does next).

Each step runs in a process of its own (the SDK imported and the judge built before the clock
starts), so its peak RSS (``VmHWM``) is its own. It prints the seconds of each step, the ingest
rate (lines per second, the download included), each step's peak RSS, and checks the store: one
row per request, failures as planted.

Goals (issue 33): ingest >= 2,000 lines/s, peak RSS of the ingest < 200 MiB.
Options: ``--n N``, ``--fail-every K``, ``--format openai|anthropic`` (default both).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path

from bench_batch import _peak_mib, _reset_peak  # VmHWM, reset through /proc/self/clear_refs

#: about 600 characters of a customer-service answer, masked
_ANSWER = ("Hola [MASK], lamento mucho lo ocurrido con su pedido. He revisado su caso y puedo ofrecerle dos "
           "opciones: la devolución del importe completo en un plazo de 3 a 5 días hábiles, o el envío de un "
           "producto nuevo sin coste adicional, que llegaría en 48 horas. Si prefiere la primera opción, solo "
           "tiene que confirmarlo en este chat y tramitaré el reembolso de inmediato. Para la segunda, necesito "
           "que me confirme la dirección de entrega que tenemos registrada. Le pido disculpas de nuevo por las "
           "molestias y quedo a su disposición para cualquier otra consulta. Un saludo cordial.")


def _serve(fmt: str, fail_every: int, conn) -> None:
    from fairpair.testing._aio import BatchBehaviour, serve_anthropic_api, serve_batch_api

    serve = serve_batch_api if fmt == "openai" else serve_anthropic_api
    with serve(BatchBehaviour(fail_every=fail_every)) as (server, api):
        conn.send(server.base_url)
        conn.recv()


def _requests(n: int):
    from fairpair.measures.judge import _prompt
    from fairpair.targets import ChatRequest

    system_t, user_t = _prompt("tone", "es")
    system = system_t.safe_substitute(rubric="courtesy, condescension, distrust: 1-5")
    for i in range(n):
        user = user_t.safe_substitute(prompt=f"Hola, soy [MASK]. Mi pedido {100000 + i} llegó roto.", answer=_ANSWER)
        yield ChatRequest(messages=({"role": "system", "content": system}, {"role": "user", "content": user}),
                          seed=i, case_id=f"c{i}")


async def _pass(calls, n: int) -> tuple[int, int, int]:
    from fairpair._calls import CallDeferred

    ok = failed = deferred = 0
    for req in _requests(n):
        try:
            out = await calls.call(req)
        except CallDeferred:
            deferred += 1
            continue
        ok += out.ok
        failed += not out.ok
    return ok, failed, deferred


def _judge(fmt: str, base_url: str):
    if fmt == "openai":
        from fairpair.targets.openai import OpenAITarget

        return OpenAITarget({"base_url": base_url, "model": "judge-1", "api_key_env": None}, name="judge")
    from fairpair.targets.anthropic import AnthropicTarget

    os.environ.setdefault("BENCH_ANTHROPIC_KEY", "sk-ant-loopback")
    judge = AnthropicTarget({"base_url": base_url.removesuffix("/v1"), "model": "judge-1",
                             "api_key_env": "BENCH_ANTHROPIC_KEY"}, name="judge")
    judge.client()  # the SDK's import (seconds on a loaded machine) is not the batch's time
    return judge


async def _phase(phase: str, fmt: str, base_url: str, run: Path, n: int) -> dict:
    """One step in this (fresh) process: ``submit``, ``ingest`` or ``replay``; its seconds and peak RSS."""
    from fairpair.run._batchcalls import BatchCalls, batch_api_of
    from fairpair.store import Store

    judge = _judge(fmt, base_url)
    out: dict = {"clear": _reset_peak()}
    with Store.open(run) as store:
        t0 = time.perf_counter()
        async with BatchCalls(store, run, "measure", "judge", batch_api_of(judge),
                              resubmit=phase == "submit") as calls:
            await calls.poll(calls.summary)
            if phase == "submit":
                out["deferred"] = (await _pass(calls, n))[2]
                await calls.flush(calls.summary)
                out["batches"] = len(calls.summary.submitted)
                out["input_mib"] = sum((run / "batches" / b["input_file"]).stat().st_size
                                       for b in calls.summary.submitted) / 2**20
            elif phase == "ingest":
                out["ingested"] = calls.summary.ingested
            else:
                out["replay"] = await _pass(calls, n)
        out["s"], out["peak"] = time.perf_counter() - t0, _peak_mib()
        if phase == "ingest":
            out["rows"] = store.conn.execute("SELECT status, COUNT(*), COUNT(DISTINCT key) FROM batch_calls"
                                             " GROUP BY status").fetchall()
    if hasattr(judge, "aclose"):
        await judge.aclose()
    return out


def _child(phase: str, fmt: str, base_url: str, run: str, n: int, conn) -> None:
    conn.send(asyncio.run(_phase(phase, fmt, base_url, Path(run), n)))


def _in_process(phase: str, fmt: str, base_url: str, run: Path, n: int) -> dict:
    """:func:`_phase` in a spawned process, so each step's peak RSS is its own."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_child, args=(phase, fmt, base_url, str(run), n, child))
    proc.start()
    out = parent.recv()
    proc.join()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--fail-every", type=int, default=50)
    ap.add_argument("--format", choices=["openai", "anthropic"], action="append")
    a = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    for fmt in a.format or ["openai", "anthropic"]:
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(fmt, a.fail_every, child), daemon=True)
        proc.start()
        base_url = parent.recv()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                run = Path(tmp) / "run"
                r = {p: _in_process(p, fmt, base_url, run, a.n) for p in ("submit", "ingest", "replay")}
        finally:
            parent.send("stop")
            proc.join(5)
            proc.kill()
        (ing,) = r["ingest"]["ingested"]
        by = {st: (k, d) for st, k, d in r["ingest"]["rows"]}
        planted = a.n // a.fail_every if a.fail_every else 0
        note = "" if r["submit"]["clear"] else " (process peak)"
        sub, inj, rep = r["submit"], r["ingest"], r["replay"]
        print(f"[{fmt}] {a.n} judge requests in {sub['batches']} batch(es), input {sub['input_mib']:.1f} MiB")
        print(f"[{fmt}] write + submit: {sub['s']:7.2f} s, {a.n / sub['s']:,.0f} requests/s; "
              f"peak RSS {sub['peak']:.0f} MiB{note}")
        print(f"[{fmt}] poll + ingest:  {inj['s']:7.2f} s (download included), {a.n / inj['s']:,.0f} lines/s; "
              f"peak RSS {inj['peak']:.0f} MiB (goals: >= 2,000 lines/s, < 200 MiB)")
        print(f"[{fmt}] replay from the store: {rep['s']:7.2f} s, {a.n / rep['s']:,.0f} calls/s; "
              f"peak RSS {rep['peak']:.0f} MiB; answered {rep['replay'][0]}, waiting for the next --batch "
              f"{rep['replay'][2]} (the failed)")
        ok, failed = by.get("ok", (0, 0)), by.get("failed", (0, 0))
        print(f"[{fmt}] stored {ing['answered']} answers, {ing['failed']} failures; one row per request: "
              f"{ok[0] == ok[1] and failed[0] == failed[1] and ok[0] + failed[0] == a.n}; "
              f"failures as planted ({planted}): {failed[0] == planted}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
