"""A scripted judge and a hash embedder for tests and benchmarks (no model, no network).

:func:`judge_reply` is a ``python`` target callable (``judge: {kind: python, callable:
"fairpair.testing:judge_reply"}``) and :class:`ScriptedJudge` a target instance with a fixed
``latency`` (seconds per call, a latency-bound endpoint): both answer the default ``judge``
(tone) measure with ``{"courtesy": 4, "condescension": 1, "distrust": 2}`` and the ``pairwise``
measure with ``{"winner": "A"}``. :func:`hash_embedder` stands for
:func:`fairpair.measures.embed.get_embedder`: a 16-dimension vector seeded by each text's SHA-256.
All are importable on Ray workers (``fairpair.testing``), so the Ray engine's tests use them there.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import numpy as np

from fairpair.targets._base import ChatRequest, Completion, Usage

__all__ = ["ScriptedJudge", "HashEmbedder", "hash_embedder", "judge_reply"]

TONE = {"courtesy": 4, "condescension": 1, "distrust": 2, "reason": "ok"}


def judge_reply(messages: list[dict[str, Any]], context: dict[str, Any] | None = None) -> str:
    """The scripted verdict for a judge prompt: ``{"winner": "A"}`` for a pairwise prompt (``Answer A:`` /
    ``Respuesta A:``), the fixed tone scores otherwise (a JSON string)."""
    user = str(messages[-1].get("content") or "") if messages else ""
    if "Respuesta A:" in user or "Answer A:" in user:
        return json.dumps({"winner": "A"})
    return json.dumps(TONE)


class ScriptedJudge:
    """A judge target answering :func:`judge_reply` after ``latency`` seconds; ``calls`` counts them."""

    max_concurrency = None

    def __init__(self, latency: float = 0.0, *, name: str = "judge") -> None:
        self.latency = latency
        self.name = name
        self.calls = 0

    async def generate(self, request: ChatRequest) -> Completion:
        self.calls += 1
        if self.latency:
            await asyncio.sleep(self.latency)
        return Completion(text=judge_reply(list(request.messages)), usage=Usage(prompt_tokens=1, completion_tokens=1))

    def identity(self) -> dict[str, Any]:
        return {"kind": "scripted", "model": "judge-1", "latency": self.latency}

    async def aclose(self) -> None:
        return None


class HashEmbedder:
    """Unit vectors (16 dimensions, float32) seeded by each text's SHA-256: equal texts, equal vectors."""

    name = "hash"

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 16), dtype=np.float32)
        for i, t in enumerate(texts):
            v = np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(size=16)
            out[i] = v / np.linalg.norm(v)
        return out

    def identity(self) -> dict[str, Any]:
        return {"name": "hash", "dim": 16}


def hash_embedder(name: str | None = None, *, language: str = "es") -> HashEmbedder:
    """A :class:`HashEmbedder`, whatever ``name`` and ``language`` (the signature of ``get_embedder``)."""
    return HashEmbedder()
