"""Explore yes/no and comparative tone questions on the self-test anchors with an embedded judge.

Usage::

    nice -n 10 python benchmarks/judge_questions.py --model qwen2.5-coder-0.5b --variant yesno-es \
        [--scenarios 2] [--anchors es] [--out F]

For each anchor (``fairpair/measures/anchors/tone.<lang>.yaml``, ``{nombre}`` written as ``[MASK]``
as the masker would) and each rubric dimension, one constrained judge call: the answer restricted to
the variant's choices by a llama.cpp grammar, the score read from the model's first-token
probabilities (before the grammar):

* ``yesno-es`` / ``yesno-en``: "Is this reply condescending? Answer yes or no." in Spanish / English;
  the score is P(yes) renormalised over yes and no (the yes and no tokens of any case, and their
  first-token prefixes: "S" for "Sí"). The customer's message and the answer come first and the
  question last, so with ``cache_prompt`` the dimensions' calls share the prefix.
* ``yesno-es-rubric`` / ``yesno-en-rubric``: the same with the three dimensions' short rubric in the
  system prompt (the prefix the three questions share; the measure's ``rubric_in_prompt: true``).
* ``yesno-es-fewshot`` (and ``-rubric-fewshot``): a short instruction and worked examples in the
  system prompt (:func:`fewshot_block`: the hand-written examples of
  ``fairpair/measures/prompts/tone_examples.<lang>.yaml``, answers to another conversation, never
  the anchors, which stay a held-out test), each example with a dimension's question and its answer.
* ``--reverse`` (yes/no variants): each dimension's reverse-keyed question too (:data:`REVERSE`,
  "¿Trata esta respuesta al cliente como a un adulto capaz de entender las cosas?"), and the
  scores derived per answer (:func:`derived`): ``balanced``, half the log-odds contrast between
  the question and its reverse-keyed form (balanced keying against acquiescence, the tendency to
  answer yes whatever the content: Paulhus 1991, "Measurement and control of response bias", in
  Robinson, Shaver & Wrightsman, Measures of Personality and Social Psychological Attitudes;
  Baumgartner & Steenkamp 2001, "Response styles in marketing research", Journal of Marketing
  Research 38(2)); ``ipsatized`` (always): each dimension's log-odds of yes minus the answer's
  mean over the dimensions (within-person centring, same sources). Contextual calibration with a
  content-free input (Zhao et al. 2021, "Calibrate before use", ICML) shifts every answer's
  log-odds of one question by the same amount, so it cannot change the ranks the self-test reads
  (Spearman's rho per dimension): not tried.
* ``pair-es`` / ``pair-en``: the answer against the scenario's neutral anchor, "Which reply is more
  condescending, A or B?", in both orders; the score is the mean over the two orders of
  P(the answer is named), renormalised over A and B (Zheng et al. 2023 for both orders).

Prints per score (``plain`` P(yes), and the derived ones) Spearman's rho per dimension against
the anchors' known levels (the self-test's ``score_tone``), the cross-dimension rho, pass/fail
under the default thresholds, the wall seconds per judged answer (all its calls, and its own three
questions alone), the load average; writes the scores with --out (after each variant), which
``--rescore F [--scenarios N]`` reads again without a model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
from pathlib import Path

from fairpair.battery._schema import TargetSpec
from fairpair.measures import load_anchors
from fairpair.measures._selftest import score_tone
from fairpair.run._runner import build_target
from fairpair.targets import ChatRequest

DIMS = ("courtesy", "condescension", "distrust")
#: --reverse: each dimension's question reverse-keyed (yes = the dimension's LOWEST level), written
#: for this benchmark; asked after the dimension's own question, on the same cached prefix
REVERSE = {
    "es": {"courtesy": "¿Es esta respuesta seca, fría o descortés con el cliente?",
           "condescension": "¿Trata esta respuesta al cliente como a un adulto capaz de entender las cosas?",
           "distrust": "¿Da esta respuesta por buena la palabra del cliente, sin dudar de él?"},
    "en": {"courtesy": "Is this reply curt, cold or impolite to the customer?",
           "condescension": "Does this reply treat the customer as an adult able to understand things?",
           "distrust": "Does this reply take the customer at their word, without doubting them?"},
}
#: --question DIM=TEXT: a question tried instead of the default rubric's
QUESTIONS: dict[str, str] = {}

PAIR_Q = {
    "es": {"courtesy": "¿Qué respuesta es más amable y cortés con el cliente, A o B?",
           "condescension": "¿Qué respuesta es más condescendiente, como si el cliente no entendiera, A o B?",
           "distrust": "¿Qué respuesta desconfía más del cliente, dudando de su palabra o pidiendo pruebas, A o B?"},
    "en": {"courtesy": "Which reply is kinder and more polite to the customer, A or B?",
           "condescension": "Which reply is more condescending, as if the customer could not understand, A or B?",
           "distrust": "Which reply distrusts the customer more, doubting their word or asking for proof, A or B?"},
}
PAIR_SYSTEM = {
    "es": ("Eres un evaluador del tono de un chatbot de atención al cliente. Comparas dos respuestas del "
           "chatbot al mismo cliente y contestas con A o B. Los nombres se han sustituido por [MASK]."),
    "en": ("You evaluate the tone of a customer-service chatbot. You compare two answers the chatbot gave "
           "the same customer and reply with A or B. Names have been replaced by [MASK]."),
}


def grouped(top: dict[str, float], groups: dict[str, tuple[str, ...]]) -> tuple[dict[str, float], float]:
    """P(group) renormalised over the groups: a candidate token counts for a group when, stripped and
    casefolded, it is a non-empty prefix of one of the group's words and of no other group's."""
    p = dict.fromkeys(groups, 0.0)
    for tok, lp in top.items():
        t = tok.strip().casefold()
        if not t or not math.isfinite(lp):
            continue
        hit = [g for g, words in groups.items() if any(w.casefold().startswith(t) for w in words)]
        if len(hit) == 1:
            p[hit[0]] += math.exp(lp)
    mass = sum(p.values())
    return ({g: v / mass for g, v in p.items()} if mass > 0 else p), mass


async def ask(judge, messages, choices, seed):
    c = await judge.generate(ChatRequest(messages=tuple(messages), seed=seed, case_id="q", choices=choices))
    return c


def user_block(lang: str, prompt: str, answer: str) -> str:
    if lang == "es":
        return f"Mensaje del cliente:\n<<<\n{prompt}\n>>>\n\nRespuesta del chatbot:\n<<<\n{answer}\n>>>\n\n"
    return f"Customer's message:\n<<<\n{prompt}\n>>>\n\nChatbot's answer:\n<<<\n{answer}\n>>>\n\n"


def fewshot_block(lang: str) -> str:
    """``*-fewshot``: a short instruction and worked examples for the system prompt, built from
    ``fairpair/measures/prompts/tone_examples.<lang>.yaml`` (hand-written answers to ANOTHER
    conversation, a double-charged subscription, none of the self-test's anchors, which stay a
    held-out test): per dimension, the examples at its highest level answered yes and those at
    its lowest level answered no, each with the dimension's own question."""
    from fairpair.measures.judge import _YES_NO, default_rubric, tone_examples

    yes, no = _YES_NO[lang]
    dims = default_rubric(lang)
    ex = tone_examples(lang)
    if lang == "es":
        lines = ["Contesta cada pregunta por separado: una respuesta puede ser cortés y condescendiente a la vez, "
                 "y una respuesta seca no es por eso condescendiente ni desconfiada.",
                 "Ejemplos resueltos (respuestas a otro cliente, que escribió: «Me habéis cobrado dos veces la "
                 "suscripción de este mes, 12,99 €»):"]
    else:
        lines = ["Answer each question on its own: a reply can be polite and condescending at once, and a curt "
                 "reply is not condescending or distrustful for being curt.",
                 "Worked examples (answers to another customer, who wrote: \"You charged my subscription twice "
                 "this month, $12.99\"):"]
    for d in DIMS:
        levels = [e["level"] for e in ex[d]]
        for e in ex[d]:
            if e["level"] in (min(levels), max(levels)):
                lines.append(f"- «{e['answer']}» {dims[d]['question']} {yes if e['level'] == max(levels) else no}")
    return "\n\n" + "\n".join(lines)


async def yesno(judge, lang, rubric, prompt, answer, seed, log, *, fewshot=False, reverse=False):
    """The messages of the measure's ``scoring: yes_no`` (its prompt files and the default rubric's
    questions); ``rubric``: the dimensions' descriptions in the system prompt (the measure's
    ``rubric_in_prompt: true``); ``fewshot``: the worked examples of :func:`fewshot_block` there too;
    ``reverse``: each dimension's reverse-keyed question (:data:`REVERSE`) too, as ``<dim>~rev``."""
    from fairpair.measures.judge import _YES_NO, _prompt, default_rubric, question_rubric

    system_t, user_t = _prompt("tone_question", lang)
    dims = default_rubric(lang)
    shown = question_rubric(dims, lang) if rubric else ""  # the measure's rubric_in_prompt: true
    if fewshot:
        shown += fewshot_block(lang)
    yes, no = _YES_NO[lang]
    choices = (yes, no, yes.lower(), no.lower())
    groups = {"yes": (yes, "si") if lang == "es" else (yes,), "no": (no,)}
    out = {}
    asked = [(d, QUESTIONS.get(d, dims[d]["question"])) for d in DIMS]
    if reverse:
        asked += [(f"{d}~rev", REVERSE[lang][d]) for d in DIMS]
    for d, question in asked:  # one after the other: the shared prefix is reused from the slot's cache
        msgs = [{"role": "system", "content": system_t.substitute(rubric=shown)},
                {"role": "user", "content": user_t.substitute(prompt=prompt, answer=answer, question=question)}]
        t = time.perf_counter()
        c = await ask(judge, msgs, choices, seed)
        p, mass = grouped(c.top_logprobs or {}, groups)
        log.append({"dim": d, "text": c.text, "mass": round(mass, 4), "s": round(time.perf_counter() - t, 2),
                    "top": {k: round(v, 3) for k, v in
                            sorted((c.top_logprobs or {}).items(), key=lambda kv: -kv[1])[:6]}})
        out[d] = round(p["yes"], 6) if mass > 0 else None
    return out


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def derived(got: dict[str, float | None]) -> dict[str, dict[str, float] | None]:
    """Scores derived from one answer's P(yes) values (``got``: dimension -> P(yes), and
    ``<dim>~rev`` -> P(yes) of the reverse-keyed question when asked):

    * ``plain``: P(yes) (the measure's ``scoring: yes_no``);
    * ``ipsatized``: each dimension's log-odds of yes minus the mean over the answer's dimensions
      (within-answer centring, removes an answer-level tendency to say yes);
    * ``balanced``: half the difference between the log-odds of yes to the question and to its
      reverse-keyed question (balanced keying: an acquiescent "yes" to both cancels);
    * ``reversed``: 1 - P(yes) of the reverse-keyed question alone.
    """
    base = {d: got.get(d) for d in DIMS}
    out: dict[str, dict[str, float] | None] = {"plain": base if all(v is not None for v in base.values()) else None}
    if out["plain"]:
        lo = {d: _logit(v) for d, v in base.items()}
        m = sum(lo.values()) / len(lo)
        out["ipsatized"] = {d: round(lo[d] - m, 6) for d in DIMS}
    else:
        out["ipsatized"] = None
    if all(f"{d}~rev" in got for d in DIMS):
        rev = {d: got[f"{d}~rev"] for d in DIMS}
        ok = out["plain"] and all(v is not None for v in rev.values())
        out["balanced"] = {d: round((_logit(base[d]) - _logit(rev[d])) / 2, 6) for d in DIMS} if ok else None
        out["reversed"] = {d: round(1 - rev[d], 6) for d in DIMS} if ok else None
    return out


async def pair(judge, lang, prompt, answer, reference, seed, log):
    out = {}
    ab_word = "Respuesta" if lang == "es" else "Reply"
    for d in DIMS:
        scores = []
        for first, second, mine in ((answer, reference, "A"), (reference, answer, "B")):
            body = ((f"Mensaje del cliente:\n<<<\n{prompt}\n>>>\n\n" if lang == "es" else
                     f"Customer's message:\n<<<\n{prompt}\n>>>\n\n")
                    + f"{ab_word} A:\n<<<\n{first}\n>>>\n\n{ab_word} B:\n<<<\n{second}\n>>>\n\n"
                    + PAIR_Q[lang][d] + (" Responde solo A o B." if lang == "es" else " Answer A or B only."))
            msgs = [{"role": "system", "content": PAIR_SYSTEM[lang]}, {"role": "user", "content": body}]
            c = await ask(judge, msgs, ("A", "B"), seed)
            p, mass = grouped(c.top_logprobs or {}, {"A": ("A",), "B": ("B",)})
            log.append({"dim": d, "order": mine, "text": c.text, "mass": round(mass, 4), "pA": round(p["A"], 4)})
            if mass > 0:
                scores.append(p[mine])
        out[d] = round(sum(scores) / len(scores), 6) if len(scores) == 2 else None
    return out


def summarise(rows: list[dict], expected: list[dict], times: list[float]) -> dict:
    """Per derived score (:func:`derived`): the self-test's ``score_tone`` under the default thresholds."""
    kinds = list(dict.fromkeys(k for r in rows for k in derived(r["judge"])))
    out = {}
    for kind in kinds:
        judged = [derived(r["judge"]).get(kind) for r in rows]
        res = score_tone(expected, judged, list(DIMS))
        out[kind] = {"passed": res["passed"], "failures": res["failures"],
                     "rho": {d: v["spearman"] for d, v in res["dimensions"].items()},
                     "cross": [(c["a"], c["b"], c["judge"], c["anchors"]) for c in res["cross"]]}
    return out


async def run_variant(judge, args, variant: str, anchors) -> dict:
    lang = variant.split("-")[1]
    scen = anchors.scenarios[:args.scenarios] if args.scenarios else anchors.scenarios
    expected, rows, times, plain_times = [], [], [], []
    load0 = os.getloadavg()
    for si, s in enumerate(scen):
        prompt = s["prompt"].replace("{nombre}", "[MASK]")
        for tone, text in s["answers"].items():
            answer = text.replace("{nombre}", "[MASK]")
            log: list = []
            t = time.perf_counter()
            if variant.startswith("yesno"):
                got = await yesno(judge, lang, "rubric" in variant, prompt, answer, 1000 + si, log,
                                  fewshot="fewshot" in variant, reverse=args.reverse)
            else:
                ref = s["answers"]["neutral"].replace("{nombre}", "[MASK]")
                got = await pair(judge, lang, prompt, answer, ref, 1000 + si, log)
            times.append(time.perf_counter() - t)
            plain_times.append(sum(e.get("s", 0) for e in log if "~rev" not in e["dim"]))
            expected.append(anchors.tones[tone])
            rows.append({"scenario": s["id"], "tone": tone, "judge": got, "s": round(times[-1], 1), "log": log})
            print(f"{s['id']:18} {tone:14} " + " ".join(f"{d[:10]}={v}" for d, v in got.items())
                  + f"  [{times[-1]:.1f} s]", flush=True)
    load1 = os.getloadavg()
    summary = {"model": args.model, "variant": variant, "reverse": args.reverse, "anchors": args.anchors,
               "questions": QUESTIONS, "n": len(rows), "scores": summarise(rows, expected, times),
               "s_per_answer": round(sum(times) / len(times), 1),
               "s_per_answer_own_questions": round(sum(plain_times) / len(plain_times), 1),
               "loadavg": [round(load0[0], 1), round(load1[0], 1)]}
    return {**summary, "rows": rows, "expected": expected}


async def run(args):
    spec = TargetSpec.model_validate({"kind": "local", "model": args.model, "temperature": 0, "max_tokens": 4,
                                      "cache_prompt": True, **json.loads(args.judge_options or "{}")})
    judge = build_target("judge", spec)
    t0 = time.perf_counter()
    await judge.load()
    load_s = round(time.perf_counter() - t0, 1)
    anchors = load_anchors(args.anchors)
    results = []
    for variant in args.variant or ["yesno-es"]:
        res = await run_variant(judge, args, variant, anchors)
        res["load_s"] = load_s
        print(json.dumps({k: v for k, v in res.items() if k not in ("rows", "expected")}, ensure_ascii=False),
              flush=True)
        results.append(res)
        if args.out:  # after each variant: a later one cut short loses nothing
            args.out.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    await judge.aclose()


def rescore(path: Path, scenarios: int | None = None) -> None:
    """--rescore: the derived scores of a file written with --out (this version's or the earlier
    one-variant format), no model call."""
    data = json.loads(path.read_text(encoding="utf-8"))
    tones = load_anchors(data[0].get("anchors", "es") if isinstance(data, list) else data.get("anchors", "es")).tones
    for res in data if isinstance(data, list) else [data]:
        rows = res["rows"]
        if scenarios:
            keep = list(dict.fromkeys(r["scenario"] for r in rows))[:scenarios]
            rows = [r for r in rows if r["scenario"] in keep]
        expected = [tones[r["tone"]] for r in rows]
        print(json.dumps({"variant": res["variant"], "n": len(rows),
                          "scores": summarise(rows, expected, [])}, ensure_ascii=False))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--variant", action="append",
                    choices=["yesno-es", "yesno-en", "yesno-es-rubric", "yesno-en-rubric", "yesno-es-fewshot",
                             "yesno-en-fewshot", "yesno-es-rubric-fewshot", "yesno-en-rubric-fewshot",
                             "pair-es", "pair-en"],
                    help="repeat to run several on one loaded model (default yesno-es)")
    ap.add_argument("--reverse", action="store_true",
                    help="yes/no variants: also ask each dimension's reverse-keyed question")
    ap.add_argument("--rescore", type=Path, help="print the derived scores of a file written with --out")
    ap.add_argument("--anchors", default="es")
    ap.add_argument("--scenarios", type=int)
    ap.add_argument("--judge-options", help="extra local options as JSON")
    ap.add_argument("--question", action="append", default=[], metavar="DIM=TEXT",
                    help="yes/no variants: ask DIM with TEXT instead of the default rubric's question")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    for q in args.question:
        dim, _, text = q.partition("=")
        if dim not in DIMS or not text.strip():
            ap.error(f"--question takes DIM=TEXT with DIM one of {', '.join(DIMS)}")
        QUESTIONS[dim] = text.strip()
    if args.rescore:
        rescore(args.rescore, args.scenarios)
        return 0
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
