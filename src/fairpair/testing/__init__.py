"""Loopback servers for tests and benchmarks (no network beyond 127.0.0.1).

:func:`serve_openai` runs an OpenAI-compatible ``/v1/chat/completions`` server
that answers like the ``mock`` target (planted bias included) and can inject
faults (429, 5xx, hangs, dropped connections, broken bodies) at a seeded rate.
:func:`serve_json` runs a tiny JSON endpoint driven by a Python function, for
the ``http`` target. :class:`ScriptedJudge`, :func:`judge_reply` and :func:`hash_embedder`
stand for the judge and the embedder (importable on Ray workers).
"""

from fairpair.testing._battery import names_table, openai_target, small_battery, write_battery
from fairpair.testing._judge import HashEmbedder, ScriptedJudge, hash_embedder, judge_reply
from fairpair.testing._server import Fault, LoopbackServer, Received, Reply, serve_json, serve_openai

__all__ = ["Fault", "HashEmbedder", "LoopbackServer", "ScriptedJudge", "hash_embedder", "judge_reply", "Received",
           "Reply", "names_table", "openai_target", "serve_json", "serve_openai", "small_battery", "write_battery"]
