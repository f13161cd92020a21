"""Measure a judge on the self-test anchors (``fairpair.measures._selftest``), as ``measure`` would.

Usage::

    python benchmarks/judge_selftest.py BATTERY.yaml [--measure tono] [--judge '{"kind": "local", ...}']
        [--scenarios N] [--scripted KIND] [--options '{"mode": "per_dimension"}'] [--no-shuffled] [--out F]

Prints the self-test table (per dimension Spearman/Kendall, cross-dimension rho, identical share,
pass/fail under the default thresholds), the model's load time, the wall and CPU time, the seconds
per judged answer (all its dimensions) and the load average. ``--scripted`` runs one of the scripted
judges of the tests instead (``rubric``, ``one_number``, ``constant``, ``random``, ``first``), the
incapable and capable references the thresholds were chosen from.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import sys
import time
from pathlib import Path

from fairpair.battery import load_battery
from fairpair.battery._schema import TargetSpec
from fairpair.measures import load_anchors
from fairpair.measures._runner import MeasureContext, build_measures
from fairpair.measures._selftest import self_test, summary_line
from fairpair.run._engine import RunSettings
from fairpair.run._runner import build_target
from fairpair.targets._base import Completion


class Scripted:
    """The scripted judges of tests/measures/test_selftest.py."""

    max_concurrency = None
    name = "scripted"

    def __init__(self, kind: str, language: str):
        self.kind = kind
        self.rng = random.Random(0)
        a = load_anchors(language)
        self.by_text = {s["answers"][t].strip()[-40:]: t for s in a.scenarios for t in s["answers"]}
        self.tones = a.tones

    def _tone(self, text: str) -> str:
        for t, tone in self.by_text.items():
            if t in text:
                return tone
        return "neutral"

    async def generate(self, request):
        user = request.messages[-1]["content"]
        if "winner" in request.messages[0]["content"]:
            return Completion(text=json.dumps({"winner": "A"}))
        if request.choices:  # scoring: probabilities, one dimension per call
            return self._choice(request)
        if self.kind == "rubric":
            sc = self.tones[self._tone(user.split(">>>")[-2])]
        elif self.kind == "one_number":
            n = self.tones[self._tone(user.split(">>>")[-2])]["courtesy"]
            sc = {"courtesy": n, "condescension": n, "distrust": n}
        elif self.kind == "constant":
            sc = {"courtesy": 4, "condescension": 1, "distrust": 2}
        else:
            sc = {d: self.rng.randint(1, 5) for d in ("courtesy", "condescension", "distrust")}
        return Completion(text=json.dumps({**sc, "reason": "scripted"}))

    def _choice(self, request):
        from fairpair.measures.judge import default_rubric

        system, user = request.messages[0]["content"], request.messages[-1]["content"]
        if request.choices[0] in ("Sí", "Yes"):  # scoring: yes_no: the question ends the user message
            last = user.rstrip().rsplit("\n", 1)[-1]
            dim = next(d for lang in ("es", "en") for d, spec in default_rubric(lang).items()
                       if last.startswith(spec["question"]))
            known = self.tones[self._tone(user.split(">>>")[-2])]
            level = {"rubric": known[dim], "one_number": known["courtesy"], "constant": 3}.get(
                self.kind, self.rng.randint(1, 5))
            p_yes = 0.1 + 0.8 * (level - 1) / 4
            yes, no = request.choices[:2]
            return Completion(text=yes if p_yes >= 0.5 else no,
                              top_logprobs={yes: math.log(p_yes), no: math.log(1 - p_yes)})
        dim = next(d for d, spec in default_rubric("es" if "Dimensión" in system else "en").items()
                   if spec["description"] in system)
        known = self.tones[self._tone(user.split(">>>")[-2])]
        level = {"rubric": known[dim], "one_number": known["courtesy"], "constant": 3}.get(
            self.kind, self.rng.randint(1, 5))
        top = {str(level): 0.7, str(level - 1): 0.1, str(level + 1): 0.1}
        return Completion(text=str(level), top_logprobs={t: math.log(p) for t, p in top.items()
                                                         if t in request.choices})

    def identity(self):
        return {"kind": "scripted", "model": self.kind}

    async def aclose(self):
        return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("battery")
    ap.add_argument("--measure")
    ap.add_argument("--judge", help="a judge block as JSON (default: the battery's)")
    ap.add_argument("--scenarios", type=int)
    ap.add_argument("--scripted")
    ap.add_argument("--options", help="measure options to override, as JSON (e.g. '{\"mode\": \"per_dimension\"}')")
    ap.add_argument("--no-shuffled", action="store_true", help="skip the word-shuffled copies")
    ap.add_argument("--out", type=Path, help="also write the results (JSON) to this file")
    args = ap.parse_args()
    lb = load_battery(Path(args.battery))
    b = lb.battery
    ms = build_measures(b, [args.measure] if args.measure else None)
    if args.options:
        for m in ms.values():
            if m.uses_judge:
                m.options = type(m.options).model_validate(
                    {**m.options.model_dump(by_alias=True, exclude_unset=True), **json.loads(args.options)})
    if args.scripted:
        judge = Scripted(args.scripted, b.language)
    else:
        spec = TargetSpec.model_validate(json.loads(args.judge)) if args.judge else b.judge
        judge = build_target("judge", spec)
    ctx = MeasureContext(battery=b, judge=judge, settings=RunSettings(concurrency=1, timeout=600))
    out = {}
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    load_s = None
    if hasattr(judge, "load"):  # the model's load (assembly checked, weights read) timed on its own
        asyncio.run(judge.load())
        load_s = round(time.perf_counter() - t0, 1)
        print(f"judge loaded in {load_s} s")
    for name, m in ms.items():
        if not m.uses_judge:
            continue
        t = time.perf_counter()
        cpu = time.process_time()
        res = asyncio.run(self_test(m, ctx, scenarios=args.scenarios, shuffled=not args.no_shuffled))
        res["wall_s"] = round(time.perf_counter() - t, 1)
        res["cpu_s"] = round(time.process_time() - cpu, 1)
        items = len(res.get("outputs") or [])
        res["s_per_item"] = round(res["wall_s"] / items, 2) if items else None
        out[name] = res
        print(summary_line(res), f"[{res['wall_s']} s wall, {res['cpu_s']} s CPU, {items} judged answers: "
                                 f"{res['s_per_item']} s per answer]")
        for k in ("dimensions", "cross", "identical_share", "accuracy", "both_orders", "first_share", "failures",
                  "flags"):
            if k in res:
                print(f"  {k}: {json.dumps(res[k], ensure_ascii=False)}")
    load1 = os.getloadavg()
    print(f"load average (1 min) {load0[0]:.1f} at the start, {load1[0]:.1f} at the end")
    summary = {"judge": judge.identity(), "total_s": round(time.perf_counter() - t0, 1), "load_s": load_s,
               "loadavg_start": load0, "loadavg_end": load1, "results": out}
    print(json.dumps(summary, ensure_ascii=False, default=str), file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(summary, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
