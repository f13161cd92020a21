"""The HTTP client of the ``openai`` and ``http`` targets: aiohttp, plus the failure mapping.

Transport: `aiohttp <https://docs.aiohttp.org/en/stable/client_reference.html>`_
(``ClientSession`` over a ``TCPConnector``), one session per event loop:

* **keep-alive**: connections are pooled and reused (no cap on their number:
  the run engine's concurrency is the cap, so 64 requests in flight reuse 64
  connections); idle ones are closed after 15 s (aiohttp's default);
* **TLS**: certificates are verified against certifi's CA bundle, or against
  ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when one of them is set (OpenSSL's
  variables, as ``requests`` and ``httpx`` users expect);
* **proxies from the environment**: ``HTTPS_PROXY``, ``HTTP_PROXY`` and
  ``NO_PROXY`` (read by aiohttp's own ``get_env_proxy_for_url``, what
  ``trust_env=True`` does), and ``~/.netrc`` (or ``$NETRC``) credentials for a
  host that gets no ``Authorization`` header, apply as in ``curl`` and
  ``requests``. They are looked up once per scheme, host and port, not on
  every request (``trust_env=True`` costs two thread hops per request, a third
  of aiohttp's CPU per request at 64 in flight). A proxy also applies to
  loopback addresses unless ``NO_PROXY`` names them;
* **timeout**: ``timeout`` seconds for the whole request (connect, send, read);
* no retries here: the run engine retries, honouring ``Retry-After`` (parsed
  by :func:`parse_retry_after`), and counts the attempts.

Why aiohttp: at 64 requests in flight with 200 ms of server latency it is the
measured ceiling of Python clients on loopback (``benchmarks/bench_peers.py``
runs it bare next to fairpair), while httpx 0.28 / httpcore 1.0.9 stalled
(its pool is rescanned on every step).

A session is closed by :meth:`ClientPool.aclose` or, at the latest, when its
event loop shuts down (``asyncio.run`` finalises the async generator that
holds it), so a target used under several ``asyncio.run`` calls in turn (the
run, then ``aclose`` in a fresh loop) leaves no unclosed session behind.

Every failure becomes a :class:`~fairpair.targets._base.TargetError`:
timeouts, refused, reset or dropped connections and 408/409/429/5xx statuses
are retryable (with the server's ``Retry-After``); 401/403 name the setting to
check; secrets are redacted from every message.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import netrc
import os
import re
import ssl
import time
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import aiohttp
from yarl import URL

from fairpair import __version__
from fairpair.errors import FairpairError
from fairpair.targets._base import TargetError

__all__ = ["RETRYABLE_STATUS", "ClientPool", "Reply", "check_env", "env_names", "expand_env", "parse_retry_after",
           "ssl_context", "prepared_request", "redact_text", "status_error", "transport_error", "check_header_values",
           "PLAIN_HEADERS"]

_ENV_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: statuses worth retrying besides 5xx (the OpenAI SDK's list): timeout, conflict, rate limit
RETRYABLE_STATUS = frozenset({408, 409, 429})
USER_AGENT = f"fairpair/{__version__}"


# ---------------------------------------------------------------- environment and secrets
def env_names(text: str) -> list[str]:
    """Names of the ``${VAR}`` references in ``text``."""
    return _ENV_RE.findall(text)


#: Headers that never carry a credential, so a battery may write their values as text.
PLAIN_HEADERS = frozenset({"accept", "accept-language", "content-type", "user-agent", "cache-control"})


def check_header_values(headers: Mapping[str, str], *, option: str) -> Mapping[str, str]:
    """Refuse a literal header value: a battery is copied into the run's store and printed by
    ``--dry-run``, so every header value but those of :data:`PLAIN_HEADERS` must take its secret
    from the environment with a ``${VAR}`` reference (``"Bearer ${BOT_TOKEN}"``).

    Raises
    ------
    pydantic_core.PydanticCustomError
        Type ``literal_header``, ``ctx["header"]`` the header's name (the battery error points at
        ``OPTION.HEADER``); the message names the variable to use and never repeats the value.
    """
    from pydantic_core import PydanticCustomError

    for name, value in headers.items():
        if name.lower() in PLAIN_HEADERS or env_names(value):
            continue
        var = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper() or "HEADER_VALUE"
        var = var if not var[0].isdigit() else "H_" + var
        bearer = "Bearer " if value.lstrip().lower().startswith("bearer ") else ""
        raise PydanticCustomError(
            "literal_header",
            "header '{header}' has a literal value, which would be stored with the run and printed by "
            "--dry-run: take it from the environment, e.g. {option}: {block} and export {var}=...",
            {"header": name, "option": option, "block": f'{{{name}: "{bearer}${{{var}}}"}}', "var": var})
    return headers


def expand_env(text: str, *, where: str) -> str:
    """Replace every ``${VAR}`` in ``text`` with its environment value.

    Raises
    ------
    TargetError
        (not retryable) a variable is not set; the message names it, never a value.
    """
    def sub(m: re.Match) -> str:
        value = os.environ.get(m.group(1))
        if value is None:
            raise TargetError(f"{where}: environment variable {m.group(1)} is not set")
        return value

    return _ENV_RE.sub(sub, text)


def prepared_request(method: str, url: str, body: Any, headers: Mapping[str, str], *,
                     secrets: list[str]) -> dict[str, Any]:
    """The request :meth:`ClientPool.request` puts on the wire for ``body`` (``--dry-run``), secrets as ``***``.

    Returns ``{"method", "url", "headers", "body"}``; ``body`` is the exact
    bytes (the same JSON encoding), ``headers`` include the client's defaults
    (``User-Agent``, ``Content-Type``, ``Content-Length``, and aiohttp's
    ``Accept`` / ``Accept-Encoding``; ``Host`` is added by aiohttp from the URL).
    """
    data = _encode(body)
    sent = {"Accept": "*/*", "Accept-Encoding": "gzip, deflate", "User-Agent": USER_AGENT,
            "Content-Type": "application/json", **headers, "Content-Length": str(len(data))}
    return {"method": method, "url": redact_text(url, secrets),
            "headers": {k.lower(): redact_text(v, secrets) for k, v in sent.items()}, "body": data}


def _encode(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def check_env(names: list[str], *, target: str, where: str) -> None:
    """Fail at build time (FairpairError) when a referenced environment variable is unset."""
    missing = [n for n in names if n not in os.environ]
    if missing:
        raise FairpairError(f"target '{target}': environment variable {', '.join(missing)} is not set "
                            f"(used by {where})", hint=f"export {missing[0]}=... before running")


_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_var_name(value: str | None, *, example: str | None = None) -> str | None:
    """An ``api_key_env`` option checked: ``value`` must be the NAME of an environment variable (``None``
    passes); ``example`` is named in the message.

    Raises
    ------
    ValueError
        When ``value`` is not a variable name; the message never echoes it (it may be a key pasted by
        mistake).
    """
    if value is not None and not _ENV_NAME_RE.fullmatch(value):
        eg = f" (e.g. {example})" if example else ""
        raise ValueError(f"api_key_env takes the NAME of an environment variable{eg}, never the key itself")
    return value


def header_env(headers: Mapping[str, str], *, target: str) -> list[str]:
    """The environment variables that ``headers``' ``${VAR}`` references name, sorted and unique.

    Raises
    ------
    FairpairError
        When one of them is unset (:func:`check_env`, ``where="extra_headers"``).
    """
    names = sorted({n for v in headers.values() for n in env_names(v)})
    check_env(names, target=target, where="extra_headers")
    return names


def redact_text(text: str, secrets: list[str]) -> str:
    """``text`` with every secret of 4 characters or more replaced by ``***``."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return text


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (milliseconds, OpenAI/Azure) or ``Retry-After``
    (seconds or an HTTP date, RFC 9110 section 10.2.3); ``None`` when absent or unreadable."""
    h = {k.lower(): v for k, v in headers.items()}
    ms = h.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = h.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


# ---------------------------------------------------------------- answers and failures
@dataclass(frozen=True)
class Reply:
    """A complete HTTP answer: ``status``, ``headers`` (case-insensitive) and the ``body`` bytes."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body decoded as JSON (UTF-8); ``ValueError`` when it is not JSON."""
        return json.loads(self.body)


def _server_message(reply: Reply, limit: int = 300) -> str:
    try:
        data = reply.json()
    except ValueError:
        return reply.text[:limit].strip()
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail") or json.dumps(err, ensure_ascii=False)
        else:
            msg = str(err)
        return str(msg)[:limit]
    return json.dumps(data, ensure_ascii=False)[:limit]


def status_error(reply: Reply, *, secrets: list[str], auth_hint: str, what: str = "") -> TargetError:
    """The TargetError for a non-2xx answer: 408/409/429/5xx retryable (with Retry-After)."""
    status = reply.status
    msg = redact_text(_server_message(reply), secrets)
    detail = f": {msg}" if msg else ""
    if status in (401, 403):
        return TargetError(f"authentication failed ({auth_hint}){detail}", status=status)
    if status in RETRYABLE_STATUS or status >= 500:
        return TargetError(f"server answered {status}{detail}", retryable=True, status=status,
                           retry_after=parse_retry_after(reply.headers))
    return TargetError(f"{what or 'server'} answered {status}{detail}", status=status)


def transport_error(exc: BaseException, *, timeout: float | None, secrets: list[str]) -> TargetError:
    """A retryable TargetError for a timeout or a failed, reset or dropped connection."""
    if isinstance(exc, TimeoutError):  # aiohttp's timeouts are TimeoutError subclasses
        return TargetError(f"timeout: no answer within {timeout:g} s" if timeout else "timeout", retryable=True)
    text = redact_text(str(exc) or type(exc).__name__, secrets)
    return TargetError(f"connection error: {type(exc).__name__}: {text}", retryable=True)


# ---------------------------------------------------------------- the client
@cache
def _ssl_context() -> ssl.SSLContext:
    """Verifying TLS context: certifi's bundle unless SSL_CERT_FILE / SSL_CERT_DIR says otherwise."""
    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context()
    try:
        import certifi
    except ImportError:  # pragma: no cover - certifi is a dependency
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


#: the verifying TLS context every HTTP client of fairpair uses (the targets', the batch APIs')
ssl_context = _ssl_context


@dataclass(frozen=True)
class _Route:
    """How to reach one origin: the environment's proxy (and its credentials) and netrc's credentials."""

    proxy: URL | None = None
    proxy_auth: Any = None  # aiohttp.BasicAuth, from the proxy URL's credentials
    authorization: str | None = None  # "Basic ..." from netrc
    tls: ssl.SSLContext | None = None  # :func:`_ssl_context` for an https origin (None for http: never read)


def _env_route(url: URL) -> _Route:
    """The proxy (``*_PROXY``, ``NO_PROXY``), netrc credentials and, for https, the TLS context of ``url``'s
    origin (blocking: a stat of ``~/.netrc`` or the file itself; the CA bundle once per process, which
    :meth:`ClientPool._route` loads on a thread first)."""
    from aiohttp.helpers import get_env_proxy_for_url

    try:
        proxy, proxy_auth = get_env_proxy_for_url(url)
    except LookupError:  # no proxy for this scheme, or NO_PROXY names the host
        proxy, proxy_auth = None, None
    authorization = None
    path = os.environ.get("NETRC") or (Path.home() / ".netrc")
    try:
        entry = netrc.netrc(path).authenticators(url.host or "") if Path(path).is_file() else None
    except (OSError, netrc.NetrcParseError):
        entry = None
    if entry is not None:
        login, account, password = entry
        token = base64.b64encode(f"{login or account or ''}:{password or ''}".encode()).decode("ascii")
        authorization = f"Basic {token}"  # RFC 7617
    return _Route(proxy, proxy_auth, authorization, _ssl_context() if url.scheme == "https" else None)


class ClientPool:
    """One ``aiohttp.ClientSession`` per event loop (the engine may use several loops in turn).

    Parameters
    ----------
    timeout:
        Seconds for a whole request (> 0).
    """

    def __init__(self, *, timeout: float):
        self.timeout = timeout
        self._routes: dict[tuple[str, str | None, int | None], _Route] = {}
        self._urls: dict[str, URL] = {}  # parsed once per URL string, not once per request
        self._tls: asyncio.Future[ssl.SSLContext] | None = None  # the CA bundle being loaded (https)
        # id(loop) -> (loop, its session, the async generator that closes the session with the loop)
        self._sessions: dict[int, tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession, AsyncGenerator[None,
                                                                                                         None]]] = {}

    async def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        entry = self._sessions.get(id(loop))
        if entry is not None and entry[0] is loop and not entry[1].closed:
            return entry[1]
        for key, (lp, _s, _k) in list(self._sessions.items()):
            if lp.is_closed():  # finalised with its loop
                del self._sessions[key]
        # no await from the lookup above to the registration below: concurrent first calls share one session
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)  # TLS: each origin's route (_env_route)
        session = aiohttp.ClientSession(
            connector=connector, trust_env=False, timeout=aiohttp.ClientTimeout(total=self.timeout),
            headers={"User-Agent": USER_AGENT}, auto_decompress=True, raise_for_status=False)
        keeper = self._keep(session)
        self._sessions[id(loop)] = (loop, session, keeper)
        await keeper.__anext__()  # runs to its yield at once; registered with this loop's shutdown_asyncgens()
        return session

    @staticmethod
    async def _keep(session) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            await session.close()

    async def request(self, method: str, url: str, *, json_body: Any, headers: Mapping[str, str],
                      secrets: list[str]) -> Reply:
        """Send ``json_body`` (UTF-8 JSON) and read the whole answer.

        Raises
        ------
        TargetError
            (retryable) a timeout or a connection that failed, was refused,
            reset or closed before the answer ended. Statuses are not errors
            here: the caller maps them (:func:`status_error`).
        """
        data = _encode(json_body)
        session = await self._session()
        target = self._urls.get(url)
        if target is None:
            if len(self._urls) > 1024:  # bounded: a target that builds its URLs per request
                self._urls.clear()
            target = self._urls[url] = URL(url)
        key = (target.scheme, target.host, target.port)
        route = self._routes.get(key)
        if route is None:
            route = await self._route(key, target)
        sent = {"Content-Type": "application/json", **headers}
        if route.authorization is not None and not any(k.lower() == "authorization" for k in headers):
            sent["Authorization"] = route.authorization
        try:
            async with session.request(method, target, data=data, headers=sent, proxy=route.proxy,
                                       proxy_auth=route.proxy_auth, ssl=route.tls or True) as resp:
                body = await resp.read()
                return Reply(resp.status, resp.headers, body)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise transport_error(exc, timeout=self.timeout, secrets=secrets) from None

    async def _route(self, key: tuple[str, str | None, int | None], url: URL) -> _Route:
        """:func:`_env_route` of ``url``'s origin, read once and kept. The CA bundle of an https origin is
        loaded on a thread (tens of ms, once per process; concurrent first requests wait for the one
        load); the proxy variables and ``~/.netrc`` (a stat, or one small file) are read here, on the
        loop: a thread hop for each of the first requests of a run, sent together, cost more than that."""
        if url.scheme == "https" and not _ssl_context.cache_info().currsize:
            loop = asyncio.get_running_loop()
            if self._tls is None or self._tls.get_loop() is not loop:
                self._tls = asyncio.ensure_future(asyncio.to_thread(_ssl_context))
            await asyncio.shield(self._tls)  # one cancelled request does not cancel the others' wait
        route = self._routes.get(key)
        if route is None:
            route = self._routes[key] = _env_route(url)
        return route

    async def aclose(self) -> None:
        """Close the session of the running loop; those of closed loops were closed with their loop."""
        loop = asyncio.get_running_loop()
        for key, (lp, _session, keeper) in list(self._sessions.items()):
            if lp is loop:
                await keeper.aclose()
            if lp is loop or lp.is_closed():
                del self._sessions[key]
