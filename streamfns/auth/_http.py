"""The HTTP every OAuth flow shares: short-lived ``httpx`` clients with explicit timeouts, capped
bodies, abortable waits, and failures that never quote a token."""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar, cast
from urllib.parse import urlsplit

import httpx

from normalize import AbortSignal, ErrorKind
from streamfns.auth.errors import LoginFailed, quote_vendor

__all__ = ["OAuthAnswer", "abortable", "client", "json_object", "request"]

_T = TypeVar("_T")
#: An OAuth answer is small; more is not read (a hostile server must not fill memory).
MAX_BODY_BYTES: Final = 256 * 1024
#: connect / read / write / pool timeouts of one request, seconds.
TIMEOUT: Final = httpx.Timeout(20.0, connect=10.0)
#: The most one request may take in all, however its server drips its answer: a refresh holds the
#: store's lock meanwhile, and another process waits at most ``resolve.LOCK_TIMEOUT_S`` (60 s) for it.
REQUEST_TOTAL_S: Final = 30.0


@dataclass(frozen=True, slots=True)
class OAuthAnswer:
    """One answer: ``status``, the ``body`` text (cut at :data:`MAX_BODY_BYTES`) and the server's
    ``Date`` as epoch seconds when it sent a valid one."""

    status: int
    body: str
    server_now: float | None

    def json(self) -> dict[str, Any]:
        """The body as a JSON object, or ``{}`` when it is not one."""
        try:
            value = json.loads(self.body)
        except ValueError:
            return {}
        return cast("dict[str, Any]", value) if isinstance(value, dict) else {}

    def failure_kind(self) -> ErrorKind:
        """How a stream that needed this answer ends: ``server`` for a 5xx (worth retrying later),
        ``rate_limit`` for a 429, ``auth`` otherwise."""
        if self.status >= 500:
            return "server"
        return "rate_limit" if self.status == 429 else "auth"

    def quote(self, secrets: Iterable[str]) -> str:
        """``HTTP <status>: <body>`` fit for a message (:func:`~streamfns.auth.errors.quote_vendor`)."""
        text = quote_vendor(self.body, secrets)
        return f"HTTP {self.status}: {text}" if text else f"HTTP {self.status}"


async def abortable(awaitable: Awaitable[_T], signal: AbortSignal | None, what: str) -> _T:
    """Await ``awaitable`` unless ``signal`` aborts first: then it is cancelled and
    :class:`LoginFailed` says ``what`` was aborted."""
    if signal is None:
        return await awaitable
    if signal.aborted:
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise LoginFailed(f"{what} aborted: {signal.reason}")
    work = asyncio.ensure_future(awaitable)
    waiter = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({work, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not work.done():
            work.cancel()
            # Let the cancelled request close its connection before anything propagates.
            await asyncio.gather(work, return_exceptions=True)
    if work.cancelled():
        raise LoginFailed(f"{what} aborted: {signal.reason}")
    # Finished first (or together with the abort): its answer, or its exception, stands.
    return work.result()


def json_object(value: object) -> dict[str, object]:
    """``value`` when it is a JSON object (string keys), else ``{}``: untrusted JSON read safely."""
    if not isinstance(value, dict):
        return {}
    items = cast("dict[object, object]", value)
    return {key: item for key, item in items.items() if isinstance(key, str)}


def _server_now(headers: httpx.Headers) -> float | None:
    value = headers.get("date")
    if not value:
        return None
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    stamp = moment.timestamp()
    return stamp if math.isfinite(stamp) else None


def _text(raw: bytes, charset: str | None) -> str:
    """An answer's body as text, in the charset it declares or its byte order mark says (UTF-8 else):
    an echo in UTF-16 read as UTF-8 would hide a token from redaction behind the NULs between its
    characters."""
    for bom, encoding in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if raw.startswith(bom):
            return raw[len(bom) :].decode(encoding, "replace")
    try:
        return raw.decode(charset or "utf-8", "replace")
    except LookupError:  # a charset Python does not know
        return raw.decode("utf-8", "replace")


def client() -> httpx.AsyncClient:
    """A short-lived client for one flow (a login's polls share it): explicit timeouts, no redirects
    (a token request must not be replayed elsewhere), the environment's proxy settings."""
    return httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False)


async def request(
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    what: str,
    json_body: Mapping[str, Any] | None = None,
    form: Mapping[str, str] | None = None,
    signal: AbortSignal | None = None,
    via: httpx.AsyncClient | None = None,
) -> OAuthAnswer:
    """One request to an OAuth server (through ``via``, else a client of its own), answered whatever
    its status.

    A connection failure raises :class:`LoginFailed` of kind ``network`` (a timeout: ``timeout``),
    naming ``what`` and the host, never the request's content; an abort through ``signal`` raises
    :class:`LoginFailed` too.
    """
    host = urlsplit(url).netloc

    async def send() -> OAuthAnswer:
        if via is None:
            async with client() as own:
                return await exchange(own)
        return await exchange(via)

    async def exchange(http: httpx.AsyncClient) -> OAuthAnswer:
        async with http.stream(method, url, headers=dict(headers), json=json_body, data=form) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    break
            body = _text(b"".join(chunks)[:MAX_BODY_BYTES], response.charset_encoding)
            return OAuthAnswer(response.status_code, body, _server_now(response.headers))

    async def bounded() -> OAuthAnswer:
        async with asyncio.timeout(REQUEST_TOTAL_S):
            return await send()

    try:
        return await abortable(bounded(), signal, what)
    except TimeoutError:
        raise LoginFailed(f"{what}: {host} did not answer within {REQUEST_TOTAL_S:g}s", kind="timeout") from None
    except httpx.TimeoutException:
        raise LoginFailed(f"{what}: {host} did not answer in time", kind="timeout") from None
    except httpx.HTTPError as error:
        # The exception's text may name the URL (never a token here), but its type says enough.
        raise LoginFailed(f"{what}: could not reach {host} ({type(error).__name__})", kind="network") from None
