"""Counting prompt tokens before anything is sent, without downloading anything.

A count is exact only with the model's own tokenizer, and fairpair may use a tokenizer only when its
files ship inside an installed package (nothing is downloaded at run time: ``tiktoken``'s encodings,
for instance, are fetched on first use, so they do not qualify). Of the tokenizers fairpair can reach,
only the embedded ``local`` models' qualify: the GGUF file that the ``[local]`` / ``[local-large]``
extra installs carries its tokenizer, which llama.cpp applies with the model's chat template
(:meth:`fairpair.targets.local.LocalTarget.count_tokens`). Every other model is counted as
characters / 4 (OpenAI's rule of thumb for English; Spanish runs a little higher), labelled as an
approximation wherever it is shown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from fairpair.cases import CHARS_PER_TOKEN

__all__ = ["TokenCounter", "CharsPerToken", "LocalTokenizer", "counter_for", "APPROXIMATE"]

#: How an approximate count is labelled wherever it is shown.
APPROXIMATE = f"approximation: characters / {CHARS_PER_TOKEN:g}"


class TokenCounter(Protocol):
    """Counts the prompt tokens of a list of chat messages (``[{role, content}]``) for one model.

    ``label`` says how (shown beside every figure it produced); ``exact`` whether it is the model's
    own tokenizer."""

    label: str
    exact: bool

    def count(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()) -> float: ...


class CharsPerToken:
    """Characters of the messages' contents (and of the tools' JSON) / :data:`CHARS_PER_TOKEN`. A
    fraction, summed over calls before rounding; the roles and a chat template's markers are not counted."""

    label = APPROXIMATE
    exact = False

    def count(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()) -> float:
        chars = sum(len(m.get("content") or "") for m in messages)
        if tools:
            chars += len(json.dumps(list(tools), ensure_ascii=False))
        return chars / CHARS_PER_TOKEN


class LocalTokenizer:
    """The embedded model's own tokenizer with its chat template (llama.cpp, loopback, in this process).

    Counts are cached by the messages' text: a judge reads masked prompts, which repeat across groups."""

    exact = True

    def __init__(self, target: Any) -> None:
        self.target = target
        self.label = f"{target.model} tokenizer (exact, llama.cpp)"
        self._cache: dict[str, int] = {}

    def count(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()) -> float:
        from fairpair.targets import ChatRequest

        key = json.dumps([list(messages), list(tools)], ensure_ascii=False, sort_keys=True)
        n = self._cache.get(key)
        if n is None:
            request = ChatRequest(messages=tuple(dict(m) for m in messages),
                                  tools=tuple(dict(t) for t in tools) or None)
            n = self._cache[key] = self.target.count_tokens(request)
        return float(n)

    def close(self) -> None:
        self.target.close()


def counter_for(kind: str, options: Mapping[str, Any]) -> tuple[TokenCounter, str | None]:
    """The counter for a target or judge block (``kind`` and its options) and, when it falls back to
    characters / 4 for a model whose tokenizer is not installed, the reason (else None).

    ``local`` with its model's part packages installed (and the ``xllamacpp`` backend): its own
    tokenizer; every other kind: :class:`CharsPerToken`.
    """
    if kind != "local":
        return CharsPerToken(), None
    from fairpair.errors import FairpairError
    from fairpair.targets.local import LocalTarget

    try:
        target = LocalTarget(dict(options), name="tokenizer")
        target.check_installed()  # a known model's part packages (assembling the GGUF reads them)
        import xllamacpp  # noqa: F401 - the backend that reads the GGUF's tokenizer

        return LocalTokenizer(target), None
    except ImportError:
        why = "the llama.cpp backend, xllamacpp, is missing; pip install 'fairpair[local]'"
    except FairpairError as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return CharsPerToken(), f"the local model's tokenizer is not installed ({why})"
