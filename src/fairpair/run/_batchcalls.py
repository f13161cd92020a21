"""Single model calls through a provider's batch API: the judge's calls (``fairpair measure --batch``)
and the turns of multi-turn cases (``fairpair run --batch``, turn k of every case in one batch).

The stage runs exactly as it does live (the same prompts, the same retries on an invalid judge
output, the same conversation loop), but its caller is a :class:`BatchCalls`: a request whose
answer is stored is answered from the store; any other request is written as one line of a batch
input file and the call raises :class:`~fairpair._calls.CallDeferred`, so the stage stores nothing
for that item and moves on. After the pass, :meth:`BatchCalls.flush` submits the lines (at most
``max_requests`` lines and ``max_bytes`` per batch); a later session (any machine with the run
directory) polls, ingests every line into the store's ``batch_calls`` table (migration m006) and
runs the pass again, which now finds the answers: a pairwise measure's two orders are asked in the
same pass, the follow-up of an invalid judge output or the next turn of a conversation go in the
next batch.

Keys. A request's ``custom_id`` is the SHA-256 of its canonical JSON body (48 hex digits, which
both OpenAI's and Anthropic's ``custom_id`` rules accept), so the same request is never sent
twice while a batch carries it, and the store keeps one answer per key (a line the provider wrote
twice, or a request two batches carried, counts once and is reported as ``duplicates``).

Failures. A per-request error, an invalid line, and a request the batch carried but neither file
mentions (an expired batch) are stored as failed calls; the session that ingests them hands them
to the stage as the call's error (a failed measurement or answer, stored like a live one). They
are sent again by the next ``--batch``; without it they wait.

Submission survives a kill. Before a batch is created, its keys and input file are recorded as a
batch ``local-<file>`` in state ``submitting``; once the provider answers, the real batch is
recorded and the local one ``superseded``, in one transaction. A session that finds a
``submitting`` batch asks the provider for a batch made from that file (OpenAI: its
``metadata.fairpair_file``; Anthropic's batches carry no metadata: the one batch created since
the intent was recorded with as many requests, that the store does not know) and adopts it, or
submits the kept file again. Should the provider still answer a request twice, the second answer
is reported (``duplicates``), never stored.

Providers: :class:`OpenAIBatches` (OpenAI's files and batches endpoints, and the providers that copy
them, through ``base_url``) and the ``anthropic`` target's Message Batches
(:class:`fairpair.targets.anthropic.AnthropicBatches`). Requests that need token probabilities go
only where the provider returns them in batch (OpenAI's ``logprobs``); elsewhere they are refused
before anything is sent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fairpair._calls import CallDeferred, CallOutcome
from fairpair.errors import FairpairError
from fairpair.run._batch import (
    BATCH_DIR,
    ENDED_STATUSES,
    MAX_BYTES,
    MAX_REQUESTS,
    BatchClient,
    BatchSummary,
    _line_error,
    _safe,
    create_batch,
    record_intent,
    record_submitted,
    result_lines,
)
from fairpair.store import Store
from fairpair.targets import ChatRequest, Completion, TargetError, ToolCall, Usage

__all__ = ["BatchCalls", "OpenAIBatches", "batch_api_of", "completion_from_json", "completion_json",
           "request_key"]


def request_key(body: Any) -> str:
    """The ``custom_id`` of a request: 48 hex digits of the SHA-256 of its canonical JSON ``body``."""
    data = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    return hashlib.sha256(data).hexdigest()[:48]


def completion_json(c: Completion) -> dict[str, Any]:
    """A :class:`Completion` as the JSON object ``batch_calls.completion`` stores."""
    return {"text": c.text, "tool_calls": [{"name": t.name, "arguments": t.arguments, "id": t.id}
                                           for t in c.tool_calls],
            "prompt_tokens": c.usage.prompt_tokens, "completion_tokens": c.usage.completion_tokens,
            "finish_reason": c.finish_reason, "model": c.model, "system_fingerprint": c.system_fingerprint,
            "top_logprobs": c.top_logprobs}


def completion_from_json(d: dict[str, Any]) -> Completion:
    """The :class:`Completion` of a stored ``batch_calls.completion`` (:func:`completion_json`)."""
    return Completion(text=d.get("text") or "",
                      tool_calls=tuple(ToolCall(t["name"], t.get("arguments") or {}, id=t.get("id"))
                                       for t in d.get("tool_calls") or ()),
                      usage=Usage(d.get("prompt_tokens"), d.get("completion_tokens")),
                      finish_reason=d.get("finish_reason"), model=d.get("model"),
                      system_fingerprint=d.get("system_fingerprint"), top_logprobs=d.get("top_logprobs"))


# ---------------------------------------------------------------- OpenAI's format
class OpenAIBatches:
    """OpenAI's Batch API for one ``openai`` target (files + batches under its first ``base_url``).

    Lines: ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`` (the body the
    target posts live, ``logprobs`` included for a request with ``choices``); results: the output and
    error files, one ``{"custom_id", "response": {"status_code", "body"}, "error"}`` per line.
    """

    format = "openai"
    #: OpenAI's batches return ``logprobs`` like its live endpoint
    logprobs = True
    max_requests, max_bytes = MAX_REQUESTS, MAX_BYTES

    def __init__(self, target: Any, *, secrets: Sequence[str] = ()):
        self.target = target
        self.client = BatchClient(target.options.base_urls[0], target.batch_headers(), secrets=secrets)
        self.root = self.client.root

    async def __aenter__(self) -> OpenAIBatches:
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.client.__aexit__(*exc)

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """``{"method", "url", "body"}`` of ``request`` (raises FairpairError for tools, as the target does)."""
        return self.target.batch_request(request, keep_choices=True)

    def line(self, key: str, body: dict[str, Any]) -> bytes:
        return json.dumps({"custom_id": key, **body}, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    async def submit(self, path: Path, requests: int, metadata: dict[str, str]) -> dict[str, Any]:
        """Upload ``path`` and create its batch; the batch object."""
        return await create_batch(self.client, path, metadata)

    async def find(self, input_name: str, *, since: str, requests: int,
                   known: frozenset[str] = frozenset()) -> dict[str, Any] | None:
        """The provider's batch created from the input file named ``input_name`` (its metadata), or None."""
        return await self.client.find(input_name)

    async def retrieve(self, batch_id: str) -> tuple[str, bool, dict[str, Any]]:
        """``(status, ended, batch object)``."""
        state = await self.client.retrieve(batch_id)
        status = str(state.get("status") or "unknown")
        return status, status in ENDED_STATUSES, state

    async def download(self, state: dict[str, Any], folder: Path) -> list[Path]:
        files = []
        for key, suffix in (("output_file_id", "output"), ("error_file_id", "errors")):
            fid = state.get(key)
            if fid:
                files.append(await self.client.download(fid, folder / f"{_safe(state['id'])}.{suffix}.jsonl"))
        return files

    def read(self, line: Any, batch_id: str) -> tuple[str | None, Completion | None, str | None]:
        """``(custom_id, completion, error)`` of one result line (one of the last two is None)."""
        from fairpair.targets.openai import completion_of

        if not isinstance(line, dict):
            return None, None, None
        cid = line.get("custom_id")
        resp = line.get("response") or {}
        status, error = resp.get("status_code"), line.get("error")
        if not error and status == 200:
            try:
                return cid, completion_of(resp.get("body")), None
            except TargetError as exc:
                error = {"message": str(exc)}
        return cid, None, _line_error(batch_id, status, error, resp.get("body"))


def batch_api_of(target: Any, *, secrets: Sequence[str] = ()) -> Any:
    """The batch API of ``target``: its own (``batch_api()``, the ``anthropic`` target's), OpenAI's for an
    ``openai`` target, or None (no batch API)."""
    own = getattr(target, "batch_api", None)
    if callable(own):
        return own()
    if hasattr(target, "batch_request"):
        return OpenAIBatches(target, secrets=list(secrets))
    return None


# ---------------------------------------------------------------- the caller
class BatchCalls:
    """The caller of one stage (``turns`` or ``measure``) of one target name through ``api``.

    Use as ``async with BatchCalls(...) as calls``: :meth:`poll` (ingest what ended), then the
    stage's pass with :meth:`call` as its model call, then :meth:`flush` (submit what was deferred).
    ``resubmit``: requests whose last batch failed them go again (``--batch``); otherwise they wait.
    Counts: ``waiting`` (requests carried by an open batch, or failed and not resent),
    ``deferred`` (written for the next batch).
    """

    def __init__(self, store: Store, run_dir: Path, stage: str, name: str, api: Any, *, resubmit: bool,
                 max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES):
        self.store, self.run_dir, self.stage, self.name, self.api = store, Path(run_dir), stage, name, api
        self.target = api.target
        self.resubmit = resubmit
        self.max_requests, self.max_bytes = max_requests, max_bytes
        #: keys written for the next batch (their lines go straight to the input files: memory stays flat)
        self.deferred: set[str] = set()
        self._files: list[tuple[Path, list[str]]] = []  # input files written, with the keys of each
        self._out: Any = None  # the input file being written
        self._size = 0
        self.fresh: set[str] = set()
        self.open_keys: set[str] = set()
        self.waiting = 0
        self.answered_from_store = 0
        #: calls that raised CallDeferred (waiting or written for the next batch)
        self.deferrals = 0
        #: what this session's polls and submissions did
        self.summary = BatchSummary()

    async def __aenter__(self) -> BatchCalls:
        await self.api.__aenter__()
        return self

    async def __aexit__(self, *exc) -> None:
        self._close()
        for path, _ in self._files:  # a session stopped before flush: nothing refers to these (rebuilt next time)
            path.unlink(missing_ok=True)
        await self.api.__aexit__(*exc)

    @property
    def folder(self) -> Path:
        folder = self.run_dir / BATCH_DIR
        folder.mkdir(exist_ok=True)
        return folder

    # ------------------------------------------------------------ one call
    async def call(self, request: ChatRequest) -> CallOutcome:
        """The stored answer to ``request``, the stored error of a batch ingested this session, or
        :class:`~fairpair._calls.CallDeferred` (the request is written for the next batch, or waits).

        Raises
        ------
        FairpairError
            The request cannot go in this provider's batch: tools, or ``choices`` (token
            probabilities) where the provider returns none in batch.
        """
        if request.choices and not self.api.logprobs:
            raise FairpairError(
                f"--batch: the judge ({self.api.format} batches) cannot return token probabilities, which "
                "'scoring: probabilities' and 'scoring: yes_no' read; the request is not sent without them",
                key="judge", hint="use 'scoring: sampled' for this judge, a judge whose batches return logprobs "
                                  "(kind openai), or measure without --batch")
        try:
            return self._call(request)
        except CallDeferred:
            self.deferrals += 1
            raise

    def _call(self, request: ChatRequest) -> CallOutcome:
        body = self.api.body(request)
        key = request_key(body)
        row = self.store.batch_call(key)
        if row is not None and row["status"] == "ok":
            self.answered_from_store += 1
            return CallOutcome(completion_from_json(row["completion"]), 1)
        if key in self.open_keys:
            self.waiting += 1
            raise CallDeferred(key)
        if row is not None and row["batch_id"] in self.fresh:
            return CallOutcome(None, 1, TargetError(row["error"] or "BatchError"))
        if row is not None and not self.resubmit:
            self.waiting += 1
            raise CallDeferred(key)
        if key not in self.deferred:
            self._write(key, self.api.line(key, body))
        raise CallDeferred(key)

    def _write(self, key: str, line: bytes) -> None:
        """Append ``line`` to the current input file; a new file past ``max_requests`` lines or ``max_bytes``."""
        if self._out is None or len(self._files[-1][1]) >= self.max_requests or \
                self._size + len(line) > self.max_bytes:
            self._close()
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
            path = self.folder / f"{_safe(self.name)}-{self.stage}-{stamp}.input.jsonl"
            self._out = open(path, "wb")
            self._files.append((path, []))
            self._size = 0
        self._out.write(line)
        self._size += len(line)
        self._files[-1][1].append(key)
        self.deferred.add(key)

    def _close(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None

    # ------------------------------------------------------------ submit
    async def flush(self, summary: BatchSummary) -> None:
        """Submit every input file written this session (at most ``max_requests`` lines and ``max_bytes``
        bytes each), each recorded as ``submitting`` before the provider is asked."""
        self._close()
        files, self._files = self._files, []
        self.deferred.clear()
        for path, keys in files:
            local = record_intent(self.store, name=self.name, stage=self.stage, base_url=self.api.root, path=path,
                                  keys=keys)
            await self._submit(local, path, keys, summary)

    async def _submit(self, local: str, path: Path, keys: list[str], summary: BatchSummary,
                      state: dict[str, Any] | None = None) -> None:
        if state is None:
            state = await self.api.submit(path, len(keys), {"fairpair_target": self.name[:500],
                                                            "fairpair_stage": self.stage,
                                                            "fairpair_file": path.name})
        bid = record_submitted(self.store, local=local, name=self.name, stage=self.stage, base_url=self.api.root,
                               keys=keys, state=state, input_name=path.name)
        self.open_keys.update(keys)
        summary.submitted.append({"target": self.name, "stage": self.stage, "batch_id": bid, "requests": len(keys),
                                  "input_file": path.name})
        summary.open.append({"target": self.name, "stage": self.stage, "batch_id": bid, "status": "submitted",
                             "request_counts": {"total": len(keys), "completed": 0}})

    # ------------------------------------------------------------ poll and ingest
    async def poll(self, summary: BatchSummary) -> None:
        """Ask for the state of every batch of this stage and name not yet ingested; ingest those that ended;
        submit (or adopt) a batch whose submission a killed session left unrecorded."""
        for record in self.store.batches(self.name, stage=self.stage):
            if record["status"] == "submitting":
                bid = record["batch_id"]
                path = self.folder / record["state"]["input_file"]
                keys = list(self.store.batch_case_ids(bid))
                known = frozenset(b["batch_id"] for b in self.store.batches(stage=None))
                found = await self.api.find(path.name, since=record["created_at"], requests=len(keys), known=known)
                self.store.event("batch_recovered", {"target": self.name, "stage": self.stage, "local": bid,
                                                     "adopted": (found or {}).get("id")})
                await self._submit(bid, path, keys, summary, state=found)
                summary.open.pop()  # polled below
                if found is not None:  # adopted, not submitted
                    summary.submitted.pop()
        for record in self.store.batches(self.name, stage=self.stage):
            status, bid = record["status"], record["batch_id"]
            if status in ("ingested", "superseded"):
                continue
            new, ended, state = await self.api.retrieve(bid)
            if new != status:
                self.store.add_batch_state(bid, new, state)
            if not ended:
                counts = state.get("request_counts") or {}
                summary.open.append({"target": self.name, "stage": self.stage, "batch_id": bid, "status": new,
                                     "request_counts": counts})
                continue
            files = await self.api.download(state, self.folder)
            summary.ingested.append(self.ingest(record, new, state, files))
        self.open_keys = self.store.cases_in_open_batches(self.name, stage=self.stage)

    def ingest(self, record: dict[str, Any], status: str, state: dict[str, Any], files: list[Path]) -> dict[str, Any]:
        """Store every line of ``files`` as an answered or failed call, and a failure for each request the
        batch carried that no line answers; then the ``ingested`` state. One transaction.

        Returns ``{"batch_id", "target", "stage", "status", "answered", "failed", "skipped", "duplicates",
        "unknown"}`` (``duplicates``: answers to a request already answered, reported, not stored).
        """
        bid = record["batch_id"]
        carried = set(self.store.batch_case_ids(bid))
        seen: set[str] = set()
        answered = failed = duplicates = 0
        unknown: list[str] = []
        with self.store.transaction():
            for line in result_lines(files, unknown):
                key, completion, error = self.api.read(line, bid)
                if key not in carried:
                    unknown.append(str(key if key is not None else line)[:120])
                    continue
                if key in seen:  # the provider wrote a line twice: the first one counts
                    duplicates += 1
                    continue
                seen.add(key)
                if completion is not None:
                    if self.store.add_batch_call(batch_id=bid, key=key, status="ok",
                                                 completion=completion_json(completion)):
                        answered += 1
                    else:
                        duplicates += 1
                    continue
                self.store.add_batch_call(batch_id=bid, key=key, status="failed", error=error)
                failed += 1
            for key in carried - seen:
                self.store.add_batch_call(batch_id=bid, key=key, status="failed",
                                          error=f"BatchError: no answer in batch {bid} (batch status: {status})")
                failed += 1
            if unknown:
                self.store.event("batch_unknown_lines", {"target": self.name, "batch_id": bid, "count": len(unknown),
                                                         "examples": unknown[:5]})
            if duplicates:
                self.store.event("batch_duplicate_answers", {"target": self.name, "stage": self.stage,
                                                             "batch_id": bid, "count": duplicates})
            counts = {"answered": answered, "failed": failed, "skipped": 0, "duplicates": duplicates,
                      "unknown": len(unknown)}
            self.store.add_batch_state(bid, "ingested", {"batch": state, "counts": counts})
        self.fresh.add(bid)
        return {"batch_id": bid, "target": self.name, "stage": self.stage, "status": status, **counts}
