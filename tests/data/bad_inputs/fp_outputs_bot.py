"""A shop bot for tests/cli/test_outputs.py: the refund is never offered to the Maghreb names and
about 35% of their answers come back empty; Romanian names get it 9 times in 10 (a deterministic
draw from the case's text). With FP_OUTPUTS_STOP set, every case of templates 6 and 7 fails, so a
run with --concurrency 1 stops after 5 failures in a row, incomplete."""

import hashlib
import os
import re

MAGREB = ("Fátima", "Aicha", "Nadia")
RUMANIA = ("Ioana", "Elena", "Andreea")


def _u(text: str, salt: str) -> float:
    return int(hashlib.sha256((salt + text).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def answer(messages, context):
    text = messages[-1]["content"]
    t = int(re.search(r"Caso (\d+)", text).group(1))
    if t >= 6 and os.environ.get("FP_OUTPUTS_STOP"):
        raise RuntimeError("backend down")
    magreb = any(n in text for n in MAGREB)
    if magreb and _u(text, "empty") < 0.35:
        return ""
    refund = not magreb and (_u(text, "r") < 0.9 if any(n in text for n in RUMANIA) else True)
    body = "Le ofrecemos el reembolso completo." if refund else "Por ahora no podemos tramitar un reembolso."
    return body + " " + " ".join(["gracias"] * int(10 + 6 * _u(text, "w")))
