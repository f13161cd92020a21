"""Benchmark: mask + leak-check synthetic Spanish answers (``python benchmarks/bench_mask.py``).

Prints the seconds to mask and leak-check N answers (default 100,000, about
80 words each) against the tienda-online signal set (48 names of the four
origin groups and 6 declared group references, with their inflections), answers
per second, and the ratio to the cost of generating the same answers with the
embedded model (assumed ~60 tokens/s, 100 tokens per answer).

Options: ``--n N`` answers, ``--seed S``.
"""

from __future__ import annotations

import argparse
import random
import time

from fairpair.measures._mask import Masker

# The tienda-online signal set: the four origin groups of
# examples/tienda_online/battery.yaml (female first names, gender held fixed)
# with their declared references. The battery takes 3 names per group from the
# built-in lexicons; the benchmark masks a fuller list, about 60 values, as a
# judge blinding all names of all groups would. Frequent first names by
# nationality in the style of INE's lists; a stand-in, not the lexicon itself.
NAMES = {
    "espana": ["María Carmen", "María", "Carmen", "Josefa", "Isabel", "Ana María",
               "María Pilar", "María Dolores", "Laura", "María Teresa", "Lucía", "Cristina"],
    "magreb": ["Fátima", "Khadija", "Naima", "Malika", "Rachida", "Fatiha", "Amina",
               "Nadia", "Zahra", "Samira", "Hafida", "Saída"],
    "rumania": ["Elena", "Mihaela", "Ioana", "Andreea", "Gabriela", "Daniela",
                "Florentina", "Alina", "Nicoleta", "Ionela", "Georgiana", "Ștefania"],
    "china": ["Li", "Wei", "Yan", "Xiaoling", "Mei", "Jing", "Ying", "Hui", "Fang",
              "Lin", "Xiaoyan", "Yu Ting"],
}
GROUP_TERMS = ["árabe", "marroquí", "musulmana", "rumana", "china", "asiática"]

FILLER = (
    "gracias por su consulta sobre el pedido la devolución del producto se puede "
    "solicitar en un plazo de treinta días desde la entrega le recomendamos revisar "
    "el estado del envío en su cuenta si el paquete llega dañado contacte con atención "
    "al cliente y le enviaremos uno nuevo sin coste adicional el reembolso se realiza "
    "mediante el mismo método de pago mañana podemos ofrecerle un descuento del diez "
    "por ciento en su próxima compra esperamos haberle ayudado un saludo cordial"
).split()


def values() -> list[str]:
    return [n for group in NAMES.values() for n in group]


def answers(n: int, seed: int) -> list[str]:
    """``n`` synthetic answers of ~80 words; about half mention 1-3 values."""
    rng = random.Random(seed)
    vals = values() + GROUP_TERMS
    out = []
    for _ in range(n):
        words = rng.choices(FILLER, k=80)
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 3)):
                v = rng.choice(vals)
                v = rng.choice([v, v.upper(), v.lower()])
                words.insert(rng.randrange(len(words)), v + rng.choice(["", ",", ".", "'s"]))
        words[0] = words[0].capitalize()
        out.append("Hola. " + " ".join(words) + ".")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    texts = answers(args.n, args.seed)
    t0 = time.perf_counter()
    masker = Masker(values(), group_terms=GROUP_TERMS)
    t_build = time.perf_counter() - t0

    t0, c0 = time.perf_counter(), time.process_time()
    masked = [masker.mask(t) for t in texts]
    t_mask = time.perf_counter() - t0
    t0 = time.perf_counter()
    leaky = sum(bool(masker.leaks(m)) for m in masked)
    t_leak = time.perf_counter() - t0
    cpu = time.process_time() - c0  # less sensitive than wall time to a busy machine

    total = t_mask + t_leak
    gen = args.n * 100 / 60.0  # seconds to generate the answers at 60 tokens/s
    words = sum(len(t.split()) for t in texts) / len(texts)
    print(f"answers            {args.n:,} (~{words:.0f} words each), "
          f"{len(masker.values)} values + {len(masker.group_terms)} group terms")
    print(f"build (first)      {t_build:.3f} s  (folding tables + regex compile)")
    print(f"mask               {t_mask:.2f} s")
    print(f"leak check         {t_leak:.2f} s  ({leaky} leaky texts after masking)")
    print(f"mask + leak check  {total:.2f} s  = {args.n / total:,.0f} answers/s "
          f"(CPU {cpu:.2f} s, one core)")
    print(f"generation         {gen:,.0f} s at 60 tokens/s x 100 tokens "
          f"-> masking costs {total / gen:.4%} of generation ({gen / total:,.0f}x faster)")
    if leaky:
        raise SystemExit("leak check failed after masking")


if __name__ == "__main__":
    main()
