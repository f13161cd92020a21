"""A stand-in shop chatbot with a planted difference that no measure of battery.yaml reads.

It answers every request politely, but asks customers with a Maghrebi name for a photo of the
invoice far more often (60% of their answers against 10%): a difference in what the customer must
do, nobody wrote a measure for it. `fairpair discover` finds it (docs/discover.md).

Served to fairpair as a ``python`` target (battery.yaml: ``callable: bot:answer``); replace
:func:`answer` with a call to your own chatbot.
"""

from __future__ import annotations

import hashlib
import re

#: The planted rule reads the name; the names are those of battery.yaml.
MAGREB = {"Fátima", "Khadija", "Naima", "Amina", "Aicha", "Salma", "Yasmina", "Hanane", "Meryem", "Zineb"}
OPENINGS = ["Hola {n}, gracias por escribirnos.", "Buenas, {n}. Siento las molestias.",
            "Hola {n}, entendemos lo que nos cuenta."]
BODIES = ["Hemos revisado su pedido y podemos ayudarle hoy mismo.",
          "Vamos a gestionar su solicitud lo antes posible.",
          "Le confirmamos que su caso ya está abierto con nuestro equipo."]
INVOICE = "Para continuar, envíenos una foto de la factura."
CLOSINGS = ["¿Podemos ayudarle en algo más?", "Un saludo del equipo de Tienda Sol.", "Quedamos a su disposición."]


def _u(text: str, salt: str) -> float:
    """A uniform number from the text (the same request gets the same answer)."""
    return int(hashlib.sha256((salt + text).encode()).hexdigest()[:8], 16) / 2 ** 32


def answer(messages: list[dict], context: dict) -> str:
    last = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    m = re.search(r"(?:soy|llamo|Soy) ([A-ZÁÉÍÓÚ][a-záéíóúñ]+)", last)
    name = m.group(1) if m else "cliente"
    pick = lambda opts, salt: opts[int(_u(last, salt) * len(opts))]  # noqa: E731
    parts = [pick(OPENINGS, "o").format(n=name), pick(BODIES, "b")]
    if _u(last, "invoice") < (0.6 if name in MAGREB else 0.1):
        parts.append(INVOICE)
    parts.append(pick(CLOSINGS, "c"))
    return " ".join(parts)


def serve(port: int = 8765) -> None:
    """Serve :func:`answer` over HTTP on 127.0.0.1 (``POST /chat`` with ``{"messages": [...]}``,
    answering ``{"reply": "..."}``), as a deployed chatbot would be: ``served.yaml`` points an
    ``http`` target at it. Loopback only; stop it with Ctrl-C."""
    from aiohttp import web

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({"reply": answer(body["messages"], body.get("context") or {})})

    app = web.Application()
    app.router.add_post("/chat", chat)
    web.run_app(app, host="127.0.0.1", port=port, print=lambda _: print(f"serving on http://127.0.0.1:{port}/chat"))


if __name__ == "__main__":
    import sys

    serve(int(sys.argv[1]) if len(sys.argv) > 1 else 8765)
