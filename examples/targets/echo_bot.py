"""A stand-in chatbot for the ``python`` target (examples/targets/python.yaml).

Replace the body of :func:`answer` with a call to your own chain or client.
"""


def answer(messages: list[dict], context: dict) -> str:
    """Reply to the last user message; ``context`` holds the case's fields (e.g. the CRM record)."""
    name = (context.get("crm") or {}).get("nombre") or (context.get("crm") or {}).get("name") or "cliente"
    last = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    return f"Hola {name}, hemos recibido su mensaje ({len(last)} caracteres) y lo revisamos enseguida."
