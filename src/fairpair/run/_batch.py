"""``fairpair run BATTERY --batch``: send a battery through a provider's batch API, come back later.

OpenAI's Batch API (https://platform.openai.com/docs/guides/batch) and the
providers that copy it answer a file of requests within a completion window
(24 h) at about half the price. One run goes in three steps, each of them a
``fairpair run`` on the same run directory (hours apart, from any machine that
has the directory):

1. **submit** (``--batch``): every case without a stored answer, and not
   carried by a batch still open, becomes one line of a JSONL input file,
   ``{"custom_id": "<target>:<case id>", "method": "POST", "url":
   "/v1/chat/completions", "body": ...}`` (the exact body the ``openai``
   target would post), at most :data:`MAX_REQUESTS` lines and
   :data:`MAX_BYTES` bytes per file. Each file is uploaded (``POST /files``,
   ``purpose=batch``) and a batch created (``POST /batches``); the batch, the
   cases it carries and its first status are recorded in the store
   (migration 3) and the input file kept in ``batches/`` of the run directory. Before the provider is
   asked, the file and its cases are recorded as a batch ``local-<file>`` in state ``submitting``
   (:func:`record_intent`); a session killed before the batch was recorded leaves that state, and the
   next one adopts the provider's batch made from that file (``metadata.fairpair_file``, ``GET
   /batches``) or submits the file again, so no case is sent twice.
   The command then says when to come back and stops;
2. **poll** (``fairpair run BATTERY``, with or without ``--batch``): each
   batch not yet ingested is asked for its status (``GET /batches/{id}``);
   every new status is appended to the store;
3. **ingest**: a batch that ended (``completed``, ``expired``, ``cancelled``,
   ``failed``) has its output and error files downloaded (``GET
   /files/{id}/content``) into ``batches/`` and read line by line: a 200
   answer is a stored answer like any other (the same columns: text, tokens,
   finish reason, model, system fingerprint), a per-request error, a line that
   is not a valid answer, and a case the batch carried but neither file
   mentions (an expired batch) are stored failures with their error. One
   batch is ingested in one transaction together with its ``ingested``
   status, so a crash mid-way leaves nothing half-read, and the store's
   unique index keeps at most one answer per case: running again never
   duplicates. The failed cases are sent again by the next ``--batch``.

Cases with several turns go one call per turn (:mod:`fairpair.run._batchcalls`,
stage ``turns``): turn k of every case in one batch, turn k+1 when turn k's
answers are stored (``fairpair status`` shows the batches a run waits for). The
``anthropic`` target sends every case that way, through Message Batches. Cases
with tools cannot go in a batch (each tool answer needs a second request built
from the first answer) and are refused before anything is sent.

The transport is aiohttp (the targets' client: certifi's CA bundle, proxies
from the environment); calls that fail with 408/409/429/5xx or a dropped
connection are tried again (tenacity, up to 5 tries).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from fairpair.errors import FairpairError
from fairpair.store import Store

__all__ = ["BATCH_DIR", "COMPLETION_WINDOW", "MAX_BYTES", "MAX_REQUESTS", "BatchClient", "BatchSummary",
           "batch_session", "batch_target_names", "refuse_batch", "create_batch", "custom_id", "ingest_batch",
           "parse_custom_id", "record_intent",
           "record_submitted", "result_lines"]

#: Most requests in one batch input file (OpenAI's limit).
MAX_REQUESTS = 50_000
#: Most bytes in one batch input file (OpenAI's limit is 200 MB; a margin is kept).
MAX_BYTES = 190 * 1024 * 1024
#: The completion window asked for (the only one OpenAI offers).
COMPLETION_WINDOW = "24h"
#: The run directory's folder for the input, output and error files.
BATCH_DIR = "batches"
#: Statuses of a batch still at work at the provider.
OPEN_STATUSES = frozenset({"validating", "in_progress", "finalizing", "cancelling"})
#: Statuses of a batch that ended (its files are final).
ENDED_STATUSES = frozenset({"completed", "expired", "cancelled", "failed"})


def custom_id(target: str, case_id: str) -> str:
    """The ``custom_id`` of one request: ``"<target>:<case id>"``."""
    return f"{target}:{case_id}"


def parse_custom_id(value: Any) -> tuple[str, str] | None:
    """``(target, case id)`` of a ``custom_id`` (split at its last ``:``; case ids hold none), or ``None``."""
    if not isinstance(value, str) or ":" not in value:
        return None
    target, _, case = value.rpartition(":")
    return (target, case) if target and case else None


# ---------------------------------------------------------------- the provider's API
class BatchApiError(FairpairError):
    """A call to the provider's files or batches API failed (exit code 2; nothing stored is lost)."""


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, BatchApiError) and getattr(exc, "retryable", False)


class BatchClient:
    """The files and batches endpoints under ``base_url`` (``https://api.openai.com/v1``), over aiohttp.

    Parameters
    ----------
    base_url:
        The API root (the ``openai`` target's first ``base_url``); a query string is kept.
    headers:
        ``Authorization`` and the target's extra headers.
    secrets:
        Values to redact from every error message.
    timeout:
        Seconds per call (uploads and downloads of large files included).
    """

    def __init__(self, base_url: str, headers: dict[str, str], *, secrets: Iterable[str] = (),
                 timeout: float = 600.0, attempts: int = 5):
        from urllib.parse import urlsplit

        parts = urlsplit(base_url)
        self.root = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self.query = parts.query
        self.headers = {"User-Agent": _user_agent(), **headers}
        self.secrets = [s for s in secrets if s and len(s) >= 4]
        self.timeout = timeout
        self.attempts = attempts
        self._session: aiohttp.ClientSession | None = None

    def _url(self, path: str) -> str:
        return self.root + path + (f"?{self.query}" if self.query else "")

    async def __aenter__(self) -> BatchClient:
        from fairpair.targets import ssl_context

        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=ssl_context()), trust_env=True, headers=self.headers,
            timeout=aiohttp.ClientTimeout(total=self.timeout))
        return self

    async def __aexit__(self, *exc) -> None:
        if self._session is not None:
            await self._session.close()

    def _redact(self, text: str) -> str:
        for s in self.secrets:
            text = text.replace(s, "***")
        return text

    async def _call(self, what: str, send: Callable[[aiohttp.ClientSession], Any]) -> Any:
        async for attempt in AsyncRetrying(retry=retry_if_exception(_retryable), stop=stop_after_attempt(self.attempts),
                                           wait=wait_exponential_jitter(initial=1, max=30), reraise=True):
            with attempt:
                return await self._once(what, send)

    async def _once(self, what: str, send: Callable[[aiohttp.ClientSession], Any]) -> Any:
        assert self._session is not None
        try:
            return await send(self._session)
        except BatchApiError:
            raise
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            err = BatchApiError(f"batch API: {what} failed: {type(exc).__name__}: {self._redact(str(exc))}",
                                hint="check base_url and the network; run the same command again to resume")
            err.retryable = True  # type: ignore[attr-defined]
            raise err from None

    async def _json(self, resp: aiohttp.ClientResponse, what: str) -> Any:
        body = await resp.read()
        if resp.status >= 300:
            try:
                detail = json.loads(body).get("error", {}).get("message", "")
            except (ValueError, AttributeError):
                detail = body[:300].decode("utf-8", "replace")
            err = BatchApiError(f"batch API: {what} answered {resp.status}: {self._redact(str(detail))}",
                                hint="check the key (api_key_env), base_url and that the provider offers the "
                                     "Batch API; nothing stored is lost")
            err.retryable = resp.status in (408, 409, 429) or resp.status >= 500  # type: ignore[attr-defined]
            raise err
        try:
            return json.loads(body)
        except ValueError:
            raise BatchApiError(f"batch API: {what} answered something that is not JSON") from None

    async def upload(self, path: Path) -> dict[str, Any]:
        """``POST /files`` with ``purpose=batch`` (multipart); returns the file object (``id``...)."""
        async def send(session: aiohttp.ClientSession) -> Any:
            with open(path, "rb") as fh:
                form = aiohttp.FormData()
                form.add_field("purpose", "batch")
                form.add_field("file", fh, filename=path.name, content_type="application/jsonl")
                async with session.post(self._url("/files"), data=form) as resp:
                    return await self._json(resp, "upload")

        return await self._call("upload", send)

    async def create(self, input_file_id: str, endpoint: str, metadata: dict[str, str]) -> dict[str, Any]:
        """``POST /batches``; returns the batch object (``id``, ``status``...)."""
        body = {"input_file_id": input_file_id, "endpoint": endpoint, "completion_window": COMPLETION_WINDOW,
                "metadata": metadata}

        async def send(session: aiohttp.ClientSession) -> Any:
            async with session.post(self._url("/batches"), json=body) as resp:
                return await self._json(resp, "create batch")

        return await self._call("create batch", send)

    async def retrieve(self, batch_id: str) -> dict[str, Any]:
        """``GET /batches/{id}``: the batch object."""
        async def send(session: aiohttp.ClientSession) -> Any:
            async with session.get(self._url(f"/batches/{batch_id}")) as resp:
                return await self._json(resp, f"batch {batch_id}")

        return await self._call(f"batch {batch_id}", send)

    async def find(self, input_name: str) -> dict[str, Any] | None:
        """The batch whose ``metadata.fairpair_file`` is ``input_name`` among the latest 100 (``GET
        /batches``), or None: a submission that a killed session did not record."""
        async def send(session: aiohttp.ClientSession) -> Any:
            async with session.get(self._url("/batches") + ("&" if self.query else "?") + "limit=100") as resp:
                return await self._json(resp, "list batches")

        listed = await self._call("list batches", send)
        for b in listed.get("data") or [] if isinstance(listed, dict) else []:
            if isinstance(b, dict) and (b.get("metadata") or {}).get("fairpair_file") == input_name:
                return b
        return None

    async def download(self, file_id: str, dest: Path) -> Path:
        """``GET /files/{id}/content`` streamed to ``dest`` (written to ``dest.part``, then renamed)."""
        part = dest.with_name(dest.name + ".part")

        async def send(session: aiohttp.ClientSession) -> Any:
            async with session.get(self._url(f"/files/{file_id}/content")) as resp:
                if resp.status >= 300:
                    await self._json(resp, f"file {file_id}")
                with open(part, "wb") as fh:
                    async for chunk in resp.content.iter_chunked(1 << 20):
                        fh.write(chunk)
            part.replace(dest)
            return dest

        return await self._call(f"download {file_id}", send)


def _user_agent() -> str:
    from fairpair.targets import USER_AGENT

    return USER_AGENT


# ---------------------------------------------------------------- what a session did
@dataclass
class BatchSummary:
    """What one ``fairpair run`` did with batches: ``submitted`` (new batches), ``open`` (still at the
    provider), ``ingested`` (ended and read now: answers and failures stored)."""

    submitted: list[dict[str, Any]] = field(default_factory=list)
    open: list[dict[str, Any]] = field(default_factory=list)
    ingested: list[dict[str, Any]] = field(default_factory=list)

    @property
    def pending(self) -> bool:
        """Some batch is still at work: the answers are not all in."""
        return bool(self.open)

    def to_json(self) -> dict[str, Any]:
        return {"submitted": self.submitted, "open": self.open, "ingested": self.ingested}

    def lines(self) -> list[str]:
        """What to tell the user, one line each."""
        out = []
        if self.submitted:
            n = sum(b["requests"] for b in self.submitted)
            out.append(f"submitted {n} requests in {len(self.submitted)} batch(es): "
                       + ", ".join(b["batch_id"] for b in self.submitted))
        for b in self.ingested:
            who = b["target"] + (f" {b['stage']}" if b.get("stage", "run") != "run" else "")
            out.append(f"batch {b['batch_id']} ({who}, {b['status']}): {b['answered']} answers stored, "
                       f"{b['failed']} failures stored" + (f", {b['skipped']} already stored" if b["skipped"] else "")
                       + (f", {b['duplicates']} duplicate answers reported (not stored)" if b.get("duplicates")
                          else ""))
        for b in self.open:
            c = b.get("request_counts") or {}
            who = b["target"] + (f" {b['stage']}" if b.get("stage", "run") != "run" else "")
            done = f", {c.get('completed', 0)}/{c.get('total', 0)} done" if c.get("total") else ""
            out.append(f"batch {b['batch_id']} ({who}) is {b['status']}{done}")
        return out


# ---------------------------------------------------------------- submit, poll, ingest
def batch_target_names(store: Store, targets: dict[str, Any], *, requested: bool) -> list[str]:
    """The targets this session runs through batches: all of them with ``--batch``, else those with a
    batch recorded in the store (a run that went to batches stays there until its batches are read).

    Raises
    ------
    FairpairError
        ``--batch`` with a target that has no batch API (only ``openai`` has one).
    """
    if requested:
        _refuse_no_api([f"{n} (kind {getattr(t, 'kind', '?')})" for n, t in targets.items() if not _has_batch_api(t)])
        return list(targets)
    with_batches = ({b["target"] for b in store.batches(stage="run")}
                    | {b["target"] for b in store.batches(stage="turns")})
    return [n for n in targets if n in with_batches and _has_batch_api(targets[n])]


def _has_batch_api(target: Any) -> bool:
    return hasattr(target, "batch_request") or callable(getattr(target, "batch_api", None))


def _refuse_no_api(bad: list[str]) -> None:
    if bad:
        raise FairpairError(f"--batch: target {', '.join(bad)} has no batch API; the openai target (OpenAI's "
                            "Batch API and compatible ones) and the anthropic target (Message Batches) send "
                            "batches", hint="choose the batch targets with --target, or run without --batch")


def _refuse_tools(tools: Any) -> None:
    if tools:
        raise FairpairError("--batch cannot run a battery with tools: a batch answers one request per case, "
                            "and the scripted tool answers need a second request", hint="run it without --batch")


def refuse_batch(specs: dict[str, Any], tools: Any) -> None:
    """``run --batch``'s refusals, from the battery alone, before the run directory is made: a target
    kind without a batch API (its plugin class has neither ``batch_request`` nor ``batch_api``) or a
    battery with tools.

    Raises
    ------
    FairpairError
        As :func:`batch_target_names` and :func:`batch_session` would, later.
    """
    from fairpair._plugins import PluginError, load_plugin

    bad = []
    for name, spec in specs.items():
        try:
            cls = load_plugin("fairpair.targets", spec.kind)
        except PluginError:
            continue  # the run says which plugin is missing, as without --batch
        if not _has_batch_api(cls):
            bad.append(f"{name} (kind {spec.kind})")
    _refuse_no_api(bad)
    _refuse_tools(tools)


def record_intent(store: Store, *, name: str, stage: str, base_url: str, path: Path, keys: list[str]) -> str:
    """Record, before the provider is asked, that the input file ``path`` carrying ``keys`` (case ids or
    request keys) is being submitted: a batch ``local-<file>`` in state ``submitting``. Returns its id."""
    local = f"local-{path.name}"
    store.add_batch(target=name, batch_id=local, input_file_id="", base_url=base_url, case_ids=keys,
                    state={"status": "submitting", "input_file": path.name}, stage=stage)
    return local


def record_submitted(store: Store, *, local: str, name: str, stage: str, base_url: str, keys: list[str],
                     state: dict[str, Any], input_name: str) -> str:
    """Record the provider's batch ``state`` for the intent ``local`` (now ``superseded``), in one
    transaction; returns the batch id."""
    bid = str(state["id"])
    with store.transaction():
        store.add_batch(target=name, batch_id=bid, input_file_id=str(state.get("input_file_id") or ""),
                        base_url=base_url, case_ids=keys, state=state, stage=stage)
        store.add_batch_state(local, "superseded", {"batch_id": bid})
        store.event("batch_submitted", {"target": name, "stage": stage, "batch_id": bid, "requests": len(keys),
                                        "input_file": input_name})
    return bid


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:60] or "target"


def _requests(name: str, target: Any, cases: Iterable[Any], skip: set[str]) -> Iterator[tuple[str, bytes]]:
    """``(case id, JSONL line)`` for every case not in ``skip`` (one-turn cases: :func:`batch_session` checks)."""
    from fairpair.run._engine import request_for

    for case in cases:
        if case.id in skip or len(case.turns) != 1:  # several turns: through _turns, one call per turn
            continue
        line = {"custom_id": custom_id(name, case.id), **target.batch_request(request_for(case, case.conversation()))}
        yield case.id, json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


async def _submit(store: Store, run_dir: Path, name: str, target: Any, cases: Iterable[Any], client: BatchClient,
                  *, max_requests: int, max_bytes: int) -> list[dict[str, Any]]:
    skip = store.answered_ids(name) | store.cases_in_open_batches(name)
    folder = run_dir / BATCH_DIR
    folder.mkdir(exist_ok=True)
    submitted: list[dict[str, Any]] = []
    lines = _requests(name, target, cases, skip)
    pending: tuple[str, bytes] | None = next(lines, None)
    while pending is not None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        path = folder / f"{_safe(name)}-{stamp}.input.jsonl"
        ids: list[str] = []
        size = 0
        with open(path, "wb") as fh:
            while pending is not None and len(ids) < max_requests and (not ids or size + len(pending[1]) <= max_bytes):
                cid, data = pending
                fh.write(data)
                ids.append(cid)
                size += len(data)
                pending = next(lines, None)
        local = record_intent(store, name=name, stage="run", base_url=client.root, path=path, keys=ids)
        bid = record_submitted(store, local=local, name=name, stage="run", base_url=client.root, keys=ids,
                               state=await create_batch(client, path, {"fairpair_target": name[:500]}),
                               input_name=path.name)
        submitted.append({"target": name, "batch_id": bid, "requests": len(ids), "bytes": size,
                          "input_file": path.name})
    return submitted


async def create_batch(client: BatchClient, path: Path, metadata: dict[str, str]) -> dict[str, Any]:
    """Upload the input file ``path`` and create its batch for the ``url`` of its first line, with
    ``metadata`` and ``fairpair_file`` (the file's name, by which a later session finds it); the batch
    object with the input file's id."""
    with open(path, "rb") as fh:
        endpoint = json.loads(fh.readline())["url"]
    file = await client.upload(path)
    batch = await client.create(file["id"], endpoint, {**metadata, "fairpair_file": path.name})
    return {**batch, "input_file_id": file["id"]}


async def _recover(store: Store, run_dir: Path, record: dict[str, Any], client: BatchClient) -> None:
    """A batch left ``submitting`` by a killed session: adopt the provider's batch made from its file, or
    submit the kept file again; recorded either way (nothing is sent twice for one case)."""
    path = run_dir / BATCH_DIR / record["state"]["input_file"]
    keys = list(store.batch_case_ids(record["batch_id"]))
    found = await client.find(path.name)
    state = (found if found is not None
             else await create_batch(client, path, {"fairpair_target": record["target"][:500]}))
    store.event("batch_recovered", {"target": record["target"], "stage": "run", "local": record["batch_id"],
                                    "adopted": (found or {}).get("id")})
    record_submitted(store, local=record["batch_id"], name=record["target"], stage="run", base_url=client.root,
                     keys=keys, state=state, input_name=path.name)


def ingest_batch(store: Store, record: dict[str, Any], state: dict[str, Any], files: list[Path]) -> dict[str, Any]:
    """Store every line of a batch's output and error ``files``, and a failure for each case it carried
    that no line answers; then its ``ingested`` status. One transaction.

    Returns ``{"batch_id", "target", "status", "answered", "failed", "skipped", "unknown"}``: answers and
    failures stored, lines whose case already had an answer (``skipped``), lines that are not this
    batch's (``unknown``: recorded as an event ``batch_unknown_lines``).
    """
    from fairpair.targets import TargetError
    from fairpair.targets.openai import completion_of

    name, bid = record["target"], record["batch_id"]
    carried = set(store.batch_case_ids(bid))
    seen: set[str] = set()
    answered = failed = skipped = 0
    unknown: list[str] = []
    with store.transaction():
        for line in result_lines(files, unknown):
            key = parse_custom_id(line.get("custom_id")) if isinstance(line, dict) else None
            if key is None or key[0] != name or key[1] not in carried:
                unknown.append(str(line.get("custom_id") if isinstance(line, dict) else line)[:120])
                continue
            case_id = key[1]
            if case_id in seen:  # the provider wrote a line twice: the first one counts
                continue
            seen.add(case_id)
            resp = line.get("response") or {}
            status = resp.get("status_code")
            error = line.get("error")
            if not error and status == 200:
                try:
                    c = completion_of(resp.get("body"))
                except TargetError as exc:
                    error = {"message": str(exc)}
                else:
                    calls = [{"name": t.name, "arguments": t.arguments, "id": t.id, "result": None}
                             for t in c.tool_calls]
                    ok = store.add_response(
                        target=name, case_id=case_id, status="ok", text=c.text, tool_calls=calls,
                        prompt_tokens=c.usage.prompt_tokens, completion_tokens=c.usage.completion_tokens,
                        finish_reason=c.finish_reason, model=c.model, system_fingerprint=c.system_fingerprint)
                    answered += ok
                    skipped += not ok
                    continue
            if store.has_answer(name, case_id):
                skipped += 1
                continue
            store.add_response(target=name, case_id=case_id, status="failed",
                               error=_line_error(bid, status, error, resp.get("body")))
            failed += 1
        for case_id in carried - seen:
            if store.has_answer(name, case_id):
                skipped += 1
                continue
            store.add_response(target=name, case_id=case_id, status="failed",
                               error=f"BatchError: no answer in batch {bid} (it ended {state.get('status')})")
            failed += 1
        if unknown:
            store.event("batch_unknown_lines", {"target": name, "batch_id": bid, "count": len(unknown),
                                                "examples": unknown[:5]})
        counts = {"answered": answered, "failed": failed, "skipped": skipped, "unknown": len(unknown)}
        store.add_batch_state(bid, "ingested", {"batch": state, "counts": counts})
    return {"batch_id": bid, "target": name, "status": state.get("status"), **counts}


def result_lines(files: Iterable[Path], unknown: list[str]) -> Iterator[Any]:
    """The decoded JSON lines of a batch's result ``files``, in order (one line in memory at a time); a line
    that is not JSON is appended to ``unknown`` (its first 120 characters) and skipped, a blank one skipped."""
    for path in files:
        with open(path, "rb") as fh:
            for raw in fh:
                if not raw.strip():
                    continue
                try:
                    yield json.loads(raw)
                except ValueError:
                    unknown.append(raw[:120].decode("utf-8", "replace"))


def _line_error(bid: str, status: Any, error: Any, body: Any) -> str:
    """The stored text of a failed batch line: ``BatchError (HTTP 500): message [batch id]``."""
    msg = ""
    if isinstance(error, dict):
        msg = " ".join(str(error.get(k)) for k in ("code", "message") if error.get(k))
    elif error:
        msg = str(error)
    if not msg and isinstance(body, dict):
        e = body.get("error")
        msg = str(e.get("message") if isinstance(e, dict) else e or "")
    head = f"BatchError (HTTP {status})" if isinstance(status, int) else "BatchError"
    return f"{head}: {msg or 'no answer'} [batch {bid}]"


async def _poll(store: Store, run_dir: Path, record: dict[str, Any], client: BatchClient,
                summary: BatchSummary) -> None:
    bid = record["batch_id"]
    state = await client.retrieve(bid)
    status = str(state.get("status") or "unknown")
    if status != record["status"]:
        store.add_batch_state(bid, status, state)
    if status not in ENDED_STATUSES:
        summary.open.append({"target": record["target"], "batch_id": bid, "status": status,
                             "request_counts": state.get("request_counts")})
        return
    folder = run_dir / BATCH_DIR
    folder.mkdir(exist_ok=True)
    files = []
    for key, suffix in (("output_file_id", "output"), ("error_file_id", "errors")):
        fid = state.get(key)
        if fid:
            files.append(await client.download(fid, folder / f"{_safe(bid)}.{suffix}.jsonl"))
    if status == "failed" and state.get("errors"):
        store.event("batch_failed", {"target": record["target"], "batch_id": bid, "errors": state.get("errors")})
    result = ingest_batch(store, record, state, files)
    summary.ingested.append(result)


async def _session(store: Store, run_dir: Path, targets: dict[str, Any], cases: Callable[[], Iterable[Any]], *,
                   submit: bool, secrets: list[str], max_requests: int, max_bytes: int) -> BatchSummary:
    summary = BatchSummary()
    for name, target in targets.items():
        whole = hasattr(target, "batch_request")  # OpenAI's format: one-turn cases go whole, custom_id target:case
        if whole:
            base_url = target.options.base_urls[0]
            async with BatchClient(base_url, target.batch_headers(), secrets=secrets) as client:
                for record in store.batches(name):
                    if record["status"] == "submitting":
                        await _recover(store, run_dir, record, client)
                for record in store.batches(name):
                    if record["status"] not in ("ingested", "superseded"):
                        await _poll(store, run_dir, record, client, summary)
                if submit:
                    new = await _submit(store, run_dir, name, target, cases(), client, max_requests=max_requests,
                                        max_bytes=max_bytes)
                    summary.submitted += new
                    summary.open += [{"target": name, "batch_id": b["batch_id"], "status": "submitted",
                                      "request_counts": {"total": b["requests"], "completed": 0}} for b in new]
        await _turns(store, run_dir, name, target, cases, summary, submit=submit, only_multi=whole, secrets=secrets,
                     max_requests=max_requests, max_bytes=max_bytes)
    return summary


async def _turns(store: Store, run_dir: Path, name: str, target: Any, cases: Callable[[], Iterable[Any]],
                 summary: BatchSummary, *, submit: bool, only_multi: bool, secrets: list[str], max_requests: int,
                 max_bytes: int) -> None:
    """The cases answered one call per turn (:mod:`fairpair.run._batchcalls`, stage ``turns``): those with
    several turns (all of them for a target whose batch API is not OpenAI's): turn k of every case in
    one batch, turn k+1 when turn k's answers are stored."""
    from fairpair._calls import CallDeferred
    from fairpair.run._batchcalls import BatchCalls, batch_api_of
    from fairpair.run._engine import TargetRunStats, _converse, record_outcome

    if only_multi and not submit and not store.batches(name, stage="turns"):
        return
    api = batch_api_of(target, secrets=secrets)
    async with BatchCalls(store, run_dir, "turns", name, api, resubmit=submit, max_requests=min(
            max_requests, api.max_requests), max_bytes=min(max_bytes, api.max_bytes)) as calls:
        await calls.poll(summary)
        answered = store.answered_ids(name)
        stats = TargetRunStats()
        with store.transaction():
            for case in cases():
                if case.id in answered or (only_multi and len(case.turns) == 1):
                    continue
                try:
                    outcome, replies, _ = await _converse(calls, case, None, {})
                except CallDeferred:
                    continue
                record_outcome(store, name, case, outcome.completion,
                               None if outcome.completion is not None else str(outcome.error), 1, replies, 0.0,
                               stats, secrets=secrets)
        await calls.flush(summary)
    if stats.answered or stats.failed:
        summary.ingested.append({"batch_id": "-", "target": name, "stage": "turns", "status": "conversations",
                                 "answered": stats.answered, "failed": stats.failed, "skipped": 0})



def batch_session(store: Store, run_dir: Path, targets: dict[str, Any], cases: Callable[[], Iterable[Any]], *,
                  submit: bool, secrets: Iterable[str] = (), tools: Any = None, templates: Iterable[Any] = (),
                  max_requests: int = MAX_REQUESTS,
                  max_bytes: int = MAX_BYTES) -> BatchSummary:
    """Poll and ingest every open batch of ``targets``; with ``submit``, send the cases still to answer.

    ``cases()`` yields the battery's cases (called once per target that submits); ``tools`` (the
    battery's) and ``templates`` (each with at most one turn) are checked before anything is sent.

    Raises
    ------
    FairpairError
        A case cannot go in a batch (several turns, tools), or the provider's API failed
        (:class:`BatchApiError`); what was stored before stays.
    """
    if submit:
        _refuse_tools(tools)
    t0 = time.monotonic()
    summary = asyncio.run(_session(store, Path(run_dir), targets, cases, submit=submit,
                                   secrets=[s for s in secrets if s], max_requests=max_requests, max_bytes=max_bytes))
    store.event("batch_session", {**summary.to_json(), "seconds": round(time.monotonic() - t0, 3)})
    return summary
