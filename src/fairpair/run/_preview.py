"""``fairpair run --dry-run``: the exact request each target would send, nothing sent.

For every target and the first case of every template, the request of the
case's first turn is built exactly as the run builds it (the same
:func:`~fairpair.run._engine.request_for`, the battery's tools and the
context tool) and handed to the target's ``preview(request)``: method, URL,
headers (every secret as ``***``) and the body bytes. A target kind without a
wire format (``mock``, ``python``, third-party plugins without ``preview``)
shows the :class:`~fairpair.targets._base.ChatRequest` it receives, as JSON.
For the ``local`` target, when the ``[local]`` extra is installed, the prompt
as the model reads it (the GGUF's chat template applied by llama.cpp, tools
included) is shown too; this loads the model once.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from fairpair.errors import FairpairError

__all__ = ["RequestPreview", "preview_requests"]


@dataclass
class RequestPreview:
    """One previewed request (``body`` is the exact bytes sent)."""

    target: str
    kind: str
    template: str
    case_id: str
    turns: int
    method: str
    url: str
    headers: dict[str, str]
    body: bytes
    notes: list[str] = field(default_factory=list)
    #: ``local`` only, when the [local] extra is installed: the text after the GGUF's chat template
    rendered: str | None = None


def _env_refs(options: Any, key: str = "") -> list[str]:
    out: list[str] = []
    if isinstance(options, dict):
        for k, v in options.items():
            out += _env_refs(v, k)
    elif isinstance(options, list):
        for v in options:
            out += _env_refs(v, key)
    elif isinstance(options, str):
        if key.endswith("_env"):
            out.append(options)
        out += re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", options)
    return out


def _with_defaults(spec) -> dict[str, Any]:
    """The target's options with its defaults (``api_key_env: OPENAI_API_KEY`` when not written)."""
    from fairpair._plugins import load_plugin

    options = spec.options()
    try:
        model = getattr(load_plugin("fairpair.targets", spec.kind), "Options", None)
        if model is not None:
            return {**model.model_validate(options).model_dump(mode="json"), **options}
    except Exception:  # noqa: BLE001 - bad options are reported when the target is built
        pass
    return options


def preview_requests(loaded, *, only_targets: list[str] | None = None) -> Iterator[RequestPreview]:
    """Yield the request of the first case of each template, for each target.

    An environment variable a target needs but that is not set is shown as
    ``***`` and noted (the real run would stop on it).

    Raises
    ------
    FairpairError
        A target cannot be built for another reason (bad options).
    """
    from fairpair.cases import expand
    from fairpair.run._engine import _tool_results, request_for
    from fairpair.run._runner import build_target

    b = loaded.battery
    firsts: dict[str, Any] = {}
    for case in expand(loaded):
        firsts.setdefault(case.template, case)
    tools = b.all_tools() or None
    tool_map = b.all_tool_results()
    for name, spec in b.target_specs().items():
        if only_targets and name not in only_targets:
            continue
        missing = sorted({n for n in _env_refs(_with_defaults(spec)) if not os.environ.get(n)})
        notes = [f"environment variable {n} is not set: shown as ***; the run would stop here" for n in missing]
        with mock.patch.dict(os.environ, {n: "***" for n in missing}):
            target = build_target(name, spec, base_dir=loaded.path.parent, context_format=b.context_channels.format)
            try:
                for template, case in firsts.items():
                    messages = [*case.messages, {"role": "user", "content": case.turns[0]}]
                    req = request_for(case, messages, tools=tools,
                                      tool_results=_tool_results(case, tool_map) if tool_map else None)
                    rendered = None
                    if hasattr(target, "preview"):
                        p = target.preview(req)
                        extra: list[str] = []
                        if hasattr(target, "render_prompt") and importlib.util.find_spec("xllamacpp"):
                            try:
                                rendered = target.render_prompt(req)
                            except Exception as exc:  # noqa: BLE001 - a preview notes it and goes on
                                extra.append(f"the chat template could not be applied: {exc}")
                    else:
                        if hasattr(target, "request"):  # its own system prompt (fairpair.run._system)
                            req = target.request(req)
                        body = {"messages": list(req.messages), "context": req.context,
                                "tools": list(req.tools or ()), "tool_results": req.tool_results, "seed": req.seed}
                        p = {"method": "CALL", "url": f"{spec.kind} target {name} (Python)", "headers": {},
                             "body": json.dumps(body, ensure_ascii=False, indent=1, default=str).encode("utf-8")}
                        extra = [f"a '{spec.kind}' target has no wire format: this is the request object it receives"]
                    rk = (case.meta or {}).get("ranking")
                    if isinstance(rk, dict) and rk.get("slots"):  # a ranking case: who sits in which slot
                        extra.append(f"ranking design {case.design} ({rk.get('order')}, order "
                                     f"{int(rk.get('order_index', 0)) + 1}): " + ", ".join(
                                         f"slot {s['slot']} = {s['group']} ({s['variant']})" for s in rk["slots"]))
                    yield RequestPreview(name, spec.kind, template, case.id, len(case.turns), p["method"], p["url"],
                                         dict(p["headers"]), p["body"], notes + extra, rendered)
            finally:
                close = getattr(target, "close", None)
                if callable(close) and spec.kind == "local":
                    close()
    if not b.target_specs():
        raise FairpairError("the battery declares no target, so there is no request to show",
                            key="target", hint="add a target: block (e.g. target: {kind: local})")
