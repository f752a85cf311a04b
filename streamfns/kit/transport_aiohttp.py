"""The aiohttp transport (the ``aiohttp`` extra): the kit's requests on aiohttp, for many streams at once.

Per read it costs about half of what httpx does (no per-read timeout scope, no generator layers over
the socket): with one event per read — real traffic at 20–200 tokens a second — that is most of a
stream's CPU. What it keeps of the kit's promises (see :mod:`streamfns.kit.transport`):

- ``auto_decompress`` is off on every request, the caller's session included, so the kit's bounded
  decoder and its caps apply;
- the kit's own session verifies TLS with the kit's context (httpx's default: certifi, or
  ``SSL_CERT_FILE``/``SSL_CERT_DIR``) and takes its proxy from the environment as httpx does
  (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, read when the session is made, as an
  httpx client reads them when it is made); it never reads ``~/.netrc`` (httpx's default does not
  either: a netrc password is not sent to a vendor);
- the kit's own session is **one per event loop, shared by the calls in flight on it**, made by the
  first and closed by the last as it ends (a session per call would cost each call its set-up and its
  objects, and its reading of the environment's proxies); its connector sets no connection
  limit and keeps no idle connection (each call's connection closes with the call), and its cookie
  jar keeps nothing (a cookie one vendor set never rides along on another call);
- only connecting has an aiohttp timeout (``connect`` and ``sock_connect``); ``sock_read``, which
  arms and cancels a timer on every read, is left off: the kit's idle clock bounds every wait;
- failures map to the kit's kinds: a refused, reset or cut connection is ``network`` (aiohttp's own
  ``ClientPayloadError``, ``ServerDisconnectedError``, ``ClientConnectorError``…), connecting too long
  is ``timeout``, a URL or header that cannot be sent is ``config``.
"""

from __future__ import annotations

import asyncio
import functools
import urllib.request
import weakref
from typing import Any, cast

import aiohttp
from yarl import URL

from streamfns.kit.transport import (
    DirectRead,
    HttpRequest,
    HttpResponse,
    Transport,
    TransportError,
    describe,
    environment_proxy,
    ssl_context,
)

__all__ = ["AiohttpTransport"]

_NO_AUTO_HEADERS = frozenset({"Content-Type"})
#: Characters a URL may hold as sent (RFC 3986: unreserved, reserved and ``%``): a URL of these alone
#: needs no escaping.
_SENDABLE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%")


class _Lease:
    """The kit's own session on one event loop and how many calls hold it."""

    __slots__ = ("holders", "proxies", "session")

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session
        self.holders = 0
        #: The environment's proxy settings, read once for the session (reading them walks the whole
        #: environment: a tenth of a call's own CPU).
        self.proxies: dict[str, str] = urllib.request.getproxies_environment()


#: The kit's own session of each loop, while some call holds it (weak: a loop that is gone takes its
#: entry with it, even if a call was never closed).
_leases: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Lease] = weakref.WeakKeyDictionary()


def _own_session() -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, force_close=True, ssl=ssl_context())
    return aiohttp.ClientSession(
        connector=connector, auto_decompress=False, trust_env=False, cookie_jar=aiohttp.DummyCookieJar()
    )


def _lease() -> _Lease:
    """The running loop's shared session, held once more (made when no call holds one)."""
    loop = asyncio.get_running_loop()
    lease = _leases.get(loop)
    if lease is None or lease.session.closed:
        lease = _leases[loop] = _Lease(_own_session())
    lease.holders += 1
    return lease


async def _give_back(lease: _Lease) -> None:
    """Let go of ``lease``; the last holder closes the session (taken out of the table first, so no
    call that starts meanwhile is handed a session being closed)."""
    lease.holders -= 1
    if lease.holders > 0:
        return
    # The running loop is the lease's (a session belongs to one loop), and no other loop's entry is
    # touched: the table is shared by the loops of every thread.
    loop = asyncio.get_running_loop()
    if _leases.get(loop) is lease:
        del _leases[loop]
    await lease.session.close()


class AiohttpTransport(Transport):
    """An ``aiohttp.ClientSession`` behind the kit's seam (``session`` None: the kit's own, shared by
    the calls in flight on the running loop)."""

    name = "aiohttp"

    __slots__ = ("_lease", "_session")

    def __init__(self, session: aiohttp.ClientSession | None) -> None:
        self._session: aiohttp.ClientSession | None = session
        self._lease: _Lease | None = None

    async def send(self, request: HttpRequest) -> HttpResponse:
        session = self._session
        if session is None:
            # Leased on first use, inside the running loop (a session belongs to one loop).
            self._lease = _lease()
            session = self._session = self._lease.session
        headers = request.headers
        try:
            url = _exact_url(request.url)
            lease = self._lease
            proxy = environment_proxy(url.scheme, url.host, lease.proxies) if lease is not None else None
            response = await session.request(
                "POST",
                url,
                data=request.body,
                headers=headers,
                timeout=_timeout(request.connect_timeout),
                allow_redirects=False,
                auto_decompress=False,
                proxy=proxy,
                # The kit always says its content type; one a caller removed on purpose stays removed
                # (asked only then: aiohttp builds a table of the names to skip on every request).
                skip_auto_headers=None if "content-type" in headers else _NO_AUTO_HEADERS,
            )
        except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError, ValueError, TypeError) as exc:
            # A URL or a header aiohttp will not send (a bad scheme, a newline in a value): nothing was sent.
            raise TransportError("config", "request could not be sent", describe(exc)) from None
        except TimeoutError as exc:
            raise TransportError("timeout", "timed out", describe(exc)) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise TransportError("network", "connection failed", describe(exc)) from None
        return _AiohttpResponse(response)

    async def aclose(self) -> None:
        lease, self._lease = self._lease, None
        if lease is not None:
            self._session = None
            await _give_back(lease)


class _AiohttpResponse(HttpResponse):
    __slots__ = ("_content", "_response")

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        super().__init__(response.status, cast("Any", response.headers))
        self._response = response
        self._content = response.content

    def header_values(self, name: str) -> list[str]:
        return self._response.headers.getall(name, [])

    async def read(self) -> bytes:
        read = self._content.readchunk
        try:
            while True:
                data = _chunk_data(await read())
                if data is not None:
                    return data
        except Exception as exc:
            raise _failure(exc) from None

    def direct_read(self) -> DirectRead:
        return DirectRead(self._content.readchunk, _chunk_data, _failure)

    async def aclose(self) -> None:
        response = self._response
        try:
            if self._content.at_eof():
                response.release()  # read to its end: the connection may serve another request
            else:
                response.close()  # cut short: a half-read connection can serve nothing else
        except Exception:  # closing is best effort: the stream's outcome is already decided
            return


def _chunk_data(chunk: tuple[bytes, bool]) -> bytes | None:
    """One result of ``readchunk``: its bytes, ``b""`` at the body's end, or None for ``(b"", True)``,
    which only marks the end of an HTTP chunk. The body is read one HTTP chunk at a time, as httpx reads
    it, so a read means the same on every transport (and a recording keeps the server's chunks)."""
    data, chunk_ended = chunk
    return data if data or not chunk_ended else None


def _failure(exc: Exception) -> Exception:
    """What an exception of a body read means: aiohttp's failures as :class:`TransportError`, anything
    else as it is."""
    if isinstance(exc, TimeoutError):
        return TransportError("timeout", "timed out", describe(exc))
    if isinstance(exc, aiohttp.ClientError | OSError | RuntimeError):
        # RuntimeError: aiohttp's "Connection closed." when the socket went before the body ended.
        return TransportError("network", "connection failed", describe(exc))
    return exc


@functools.lru_cache(maxsize=64)
def _timeout(connect: float | None) -> aiohttp.ClientTimeout:
    """The request's timeouts: connecting alone (see the module docstring). Made once per value (it is
    frozen): a process connects with the same few timeouts call after call."""
    return aiohttp.ClientTimeout(total=None, connect=connect, sock_connect=connect, sock_read=None)


@functools.lru_cache(maxsize=256)
def _exact_url(url: str) -> URL:
    """``url`` as httpx would send it, kept as it is: escapes already in it stay escaped (yarl would
    turn a signed ``%3A`` back into ``:`` and break a SigV4 signature), and what needs escaping is
    escaped the way httpx escapes it. Raises ``ValueError`` for a URL that cannot be sent. Cached (a
    URL is immutable): a process calls the same few endpoints again and again."""
    if url.isascii() and _SENDABLE.issuperset(url):
        # The usual URL (an adapter's, built with quote()): nothing to escape, taken as it is; httpx's
        # parse costs ~150 µs a request.
        return URL(url, encoded=True)
    import httpx  # noqa: PLC0415 - a hard dependency, already loaded by the kit

    try:
        return URL(str(httpx.URL(url)), encoded=True)
    except httpx.InvalidURL as exc:
        raise ValueError(str(exc)) from None
