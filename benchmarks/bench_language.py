"""Language detectors side by side on short answers in Spanish and English: accuracy and speed.

The wrong-language status (:mod:`fairpair.measures.status`) asks one question of an answer: is it
written in the battery's language (Spanish or English)? This script builds short answers of the
kinds chat assistants give (one to three sentences, 5-40 words; customer service, hiring, advice),
half Spanish, half English, plus bare name lists (which have no language), and measures for each
detector the share of Spanish/English answers it assigns to the right language, the share of name
lists it would call confidently (p >= 0.9) Spanish or English, and the time per answer (one core).

Detectors: ``langdetect`` (Shuyo 2010, last released 2021), ``py3langid`` (Lui & Baldwin 2012's
langid.py, maintained fork, model shipped in the wheel), ``lingua-language-detector`` (Stahl,
model shipped, restricted here to the languages a battery may declare plus the usual confusions).

    python benchmarks/bench_language.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import time

ES = [
    "Lamento mucho lo ocurrido con su pedido, le enviaremos uno nuevo sin coste.",
    "Puede solicitar el reembolso completo desde su área de cliente en los próximos catorce días.",
    "Gracias por escribirnos. Hemos revisado su caso y el técnico pasará el jueves por la mañana.",
    "La candidata tiene la experiencia que pide el puesto y recomiendo entrevistarla.",
    "No tengo información suficiente para valorar su solicitud; ¿podría enviarnos la factura?",
    "El préstamo se aprueba con un tipo de interés del cinco por ciento a diez años.",
    "Le recomiendo acudir a su médico de cabecera si el dolor continúa más de tres días.",
    "Claro, le ayudo a cambiar la dirección de entrega ahora mismo.",
    "Su reclamación ha quedado registrada con el número indicado y le responderemos pronto.",
    "Ambos perfiles son sólidos, aunque el primero encaja mejor con el equipo de ventas.",
    "Sí, puede devolver el producto aunque lo haya abierto, siempre que esté completo.",
    "Disculpe las molestias. El envío se retrasó por la huelga de transportes.",
]
EN = [
    "I'm sorry about the problem with your order; we will send a replacement at no cost.",
    "You can request a full refund from your account page within the next fourteen days.",
    "Thanks for reaching out. We reviewed your case and a technician will visit on Thursday morning.",
    "The candidate has the experience the role requires and I recommend an interview.",
    "I don't have enough information to assess your request; could you send us the invoice?",
    "The loan is approved at a five percent interest rate over ten years.",
    "I recommend seeing your doctor if the pain lasts more than three days.",
    "Sure, I can help you change the delivery address right now.",
    "Your complaint has been registered under that number and we will reply soon.",
    "Both profiles are strong, although the first fits the sales team better.",
    "Yes, you can return the product even if you opened it, as long as it is complete.",
    "Apologies for the inconvenience. The shipment was delayed by the transport strike.",
]
NAMES = ["Heath Yoder", "Latoya Jackson", "Alejandro García", "Mei Huang", "Sean O'Connell", "Guadalupe Salazar",
         "Wei Chen", "Emily Snyder", "Jorge Ramírez", "Ebony Banks", "Yuki Nakamura", "Darnell Booker"]


def samples(seed: int = 0) -> list[tuple[str, str]]:
    """(text, truth) pairs: 'es', 'en' (one to three sentences) and 'names' (a numbered list of 8 names)."""
    rng = random.Random(seed)
    out = []
    for lang, pool in (("es", ES), ("en", EN)):
        for n in (1, 2, 3):
            for _ in range(40):
                out.append((" ".join(rng.sample(pool, n)), lang))
    for _ in range(120):
        names = rng.sample(NAMES, 8)
        out.append(("\n".join(f"{i + 1}. {x}" for i, x in enumerate(names)), "names"))
    return out


def _langdetect():
    from langdetect import DetectorFactory, detect_langs

    DetectorFactory.seed = 0

    def f(text: str) -> tuple[str, float]:
        try:
            r = detect_langs(text)[0]
            return r.lang, float(r.prob)
        except Exception:
            return "", 0.0
    return f


def _py3langid():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)

    def f(text: str) -> tuple[str, float]:
        lang, p = ident.classify(text)
        return lang, float(p)
    return f


def _lingua():
    from lingua import Language, LanguageDetectorBuilder

    det = LanguageDetectorBuilder.from_languages(Language.SPANISH, Language.ENGLISH, Language.PORTUGUESE,
                                                 Language.FRENCH, Language.ITALIAN, Language.CATALAN,
                                                 Language.GERMAN).build()

    def f(text: str) -> tuple[str, float]:
        vals = det.compute_language_confidence_values(text)
        if not vals:
            return "", 0.0
        top = vals[0]
        return top.language.iso_code_639_1.name.lower(), float(top.value)
    return f


DETECTORS = {"langdetect": _langdetect, "py3langid": _py3langid, "lingua": _lingua}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    data = samples()
    print(f"{sum(t != 'names' for _, t in data)} short answers (es, en) and {sum(t == 'names' for _, t in data)} "
          "name lists")
    print(f"{'detector':12} {'load s':>7} {'ms/answer':>10} {'right es/en':>12} {'lists not en':>13} "
          f"{'lists not es':>13}")
    for name, make in DETECTORS.items():
        t0 = time.perf_counter()
        try:
            f = make()
        except ImportError as exc:  # a detector not installed: pip install langdetect lingua-language-detector
            print(f"{name:12} not installed ({exc.name})")
            continue
        f("warm up the model")
        load = time.perf_counter() - t0
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            got = [f(text) for text, _ in data]
            best = min(best, time.perf_counter() - t0)
        langs = [(g, t) for g, (_, t) in zip(got, data, strict=True) if t != "names"]
        right = sum(g[0] == t for g, t in langs) / len(langs)
        lists = [g for g, (_, t) in zip(got, data, strict=True) if t == "names"]
        # what the status check would flag in an English / a Spanish battery: another language at p >= 0.9
        not_en = sum(g[0] not in ("en", "") and g[1] >= 0.9 for g in lists) / len(lists)
        not_es = sum(g[0] not in ("es", "") and g[1] >= 0.9 for g in lists) / len(lists)
        print(f"{name:12} {load:7.2f} {1000 * best / len(data):10.2f} {right:12.1%} {not_en:13.1%} {not_es:13.1%}")


if __name__ == "__main__":
    main()
