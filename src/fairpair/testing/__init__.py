"""Loopback servers for tests and benchmarks (no network beyond 127.0.0.1).

:func:`serve_openai` runs an OpenAI-compatible ``/v1/chat/completions`` server
that answers like the ``mock`` target (planted bias included) and can inject
faults (429, 5xx, hangs, dropped connections, broken bodies) at a seeded rate.
:func:`serve_json` runs a tiny JSON endpoint driven by a Python function, for
the ``http`` target. :func:`serve_batch_api` and :func:`serve_anthropic_api` run the OpenAI
Batch API and Anthropic's Message Batches on loopback (``examples/batch/server.py``).
:class:`ScriptedJudge`, :func:`judge_reply` and :func:`hash_embedder` stand for the judge and the
embedder (importable on Ray workers).
"""

from fairpair._lazy import lazy_getattr
from fairpair.testing._battery import names_table, openai_target, small_battery, write_battery
from fairpair.testing._judge import HashEmbedder, ScriptedJudge, hash_embedder, judge_reply
from fairpair.testing._server import Fault, LoopbackServer, Received, Reply, serve_json, serve_openai

__all__ = ["Fault", "HashEmbedder", "LoopbackServer", "ScriptedJudge", "hash_embedder", "judge_reply", "Received",
           "Reply", "names_table", "openai_target", "serve_json", "serve_openai", "small_battery", "write_battery"]

# the loopback batch APIs (aiohttp), imported on first use
_LAZY_EXPORTS = {"BatchBehaviour": "fairpair.testing._aio", "serve_batch_api": "fairpair.testing._aio",
                 "serve_anthropic_api": "fairpair.testing._aio"}
__getattr__ = lazy_getattr(__name__, _LAZY_EXPORTS, globals())
__all__ += list(_LAZY_EXPORTS)
