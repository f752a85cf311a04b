"""The native transport: the kit's requests on an HTTP/1.1 client of its own, made of asyncio's
protocols and no HTTP library, for the most streams a process can hold.

A stream on it holds about 49 objects the garbage collector tracks, where aiohttp needs 77 and
httpx more: at a thousand streams a process that is what keeps Python's full collector pass, which
stops every stream for a tenth of a second, from falling among a burst of starts. Each read is one
``data_received`` and one future: per event it costs what the bare aiohttp library costs.

What it keeps of the kit's promises (see :mod:`streamfns.kit.transport`):

- one connection per call, closed with it (``connection: close``): no pool, so no limit below the
  streams in flight and no idle connection;
- TLS verified with the kit's context (httpx's default) and the host's name;
- the proxy httpx's default client would take from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``,
  ``ALL_PROXY``, ``NO_PROXY``, either case): a request to an ``http`` URL goes to the proxy in
  absolute form, one to an ``https`` URL through a ``CONNECT`` tunnel; credentials in the proxy's URL
  are sent to the proxy alone (``Proxy-Authorization``). A proxy of another scheme than ``http`` is a
  ``config`` error;
- no content coding is undone here: the kit's bounded decoder reads the body's bytes;
- a response's head is at most :data:`MAX_HEAD_BYTES`, a chunk's size line at most
  :data:`MAX_LINE_BYTES`; the body is buffered up to :data:`HIGH_WATER` bytes, then the socket is not
  read until the kit has taken them;
- a read is one HTTP chunk, or what has come of it (as on the other transports, so a recording keeps
  the server's chunks); a body of a given length or read to the connection's close comes as it comes;
- only connecting (and the tunnel and the TLS handshake) has a timeout of its own: the kit's idle
  clock bounds every wait on the server;
- failures map to the kit's kinds: a refused, reset or cut connection, a failed name lookup or TLS
  handshake, a malformed response are ``network``; connecting too long is ``timeout``; a URL or a
  header that cannot be sent is ``config``.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import re
import string
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Final, cast
from urllib.parse import quote, unquote, urlsplit

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

__all__ = ["HIGH_WATER", "MAX_HEAD_BYTES", "MAX_LINE_BYTES", "SHARED", "NativeTransport"]

MAX_HEAD_BYTES: Final = 64 * 1024
"""The longest response head (status line and headers) read; a longer one is a malformed response."""

MAX_LINE_BYTES: Final = 4 * 1024
"""The longest chunk-size line or trailer line of a chunked body."""

HIGH_WATER: Final = 256 * 1024
"""Body bytes buffered before the socket is paused (resumed once the kit has taken them)."""


# A header name (RFC 9110 token) and a value with no CR, LF or NUL.
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE: Final = re.compile(r"[\r\n\x00]")
# What a request target may hold as sent (RFC 3986 unreserved, reserved and %): a target of these
# alone is sent as it is (escapes in it stay escaped: a signature covers them), any other is escaped.
_SENDABLE: Final = "-._~:/?#[]@!$&'()*+,;=%"
_SENDABLE_CHARS: Final = frozenset(string.ascii_letters + string.digits + _SENDABLE)
# A host as this client connects to it: a name (IDNA-encoded) or an IPv4 or IPv6 address.
_HOST: Final = re.compile(r"[A-Za-z0-9._-]+|[0-9A-Fa-f:.]+")
_STATUS: Final = re.compile(rb"HTTP/1\.[01] ([1-9][0-9]{2})(?: [^\r\n]*)?")
_CHUNK_SIZE: Final = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?")
_DIGITS: Final = re.compile(r"[0-9]{1,19}")


class _Headers(Mapping[str, str]):
    """A response's headers, case-insensitive; a repeated header reads as its values joined by ``, ``
    (as httpx's ``Headers``), :meth:`getall` gives them one by one."""

    __slots__ = ("_items",)

    def __init__(self, items: list[tuple[str, str]]) -> None:
        self._items = items

    def __getitem__(self, name: str) -> str:
        values = self.getall(name)
        if not values:
            raise KeyError(name)
        return ", ".join(values)

    def getall(self, name: str) -> list[str]:
        wanted = name.lower()
        return [value for key, value in self._items if key == wanted]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(key for key, _ in self._items))

    def __len__(self) -> int:
        return len({key for key, _ in self._items})

    def __repr__(self) -> str:
        return f"_Headers({self._items!r})"


class _Broken(Exception):
    """The response broke the protocol (a malformed head or chunk, a body cut short)."""


class _Connection(asyncio.Protocol):
    """One call's connection: the response's head, then its body in pieces, for one reader."""

    __slots__ = (
        "_buffer",
        "_chunk_left",
        "_error",
        "_length_left",
        "_paused",
        "_pieces",
        "_queued",
        "_scanned",
        "_state",
        "_waiter",
        "head",
        "transport",
    )

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        #: What came after the last whole head or line, waiting for the rest of it.
        self._buffer = bytearray()
        #: How far the buffer was searched for the end of the head or line it holds: a head trickled a
        #: byte at a time is searched once over, not once per byte (and copied once, when whole).
        self._scanned = 0
        #: "head", "size" (a chunk's size line), "data", "data-end" (its CRLF), "trailer", "length",
        #: "close" (read to the connection's close), "done".
        self._state = "head"
        self.head: tuple[int, _Headers] | None = None
        self._chunk_left = 0
        self._length_left = 0
        self._pieces: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self._paused = False
        self._error: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None

    # -- asyncio's side ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)

    def data_received(self, data: bytes) -> None:
        if self._error is not None or self._state == "done":
            return
        try:
            buffer = self._buffer
            if buffer:
                buffer += data
                if not self._whole(buffer):
                    return
                data = bytes(buffer)
                buffer.clear()
                self._scanned = 0
            self._parse(data)
        except _Broken as exc:
            self._fail(exc)
        except Exception as exc:  # bytes the parser did not foresee: this response is broken, not the loop
            self._fail(_Broken(f"an unreadable response: {describe(exc)}"))
        if self._queued >= HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        return False  # close: nothing more will come

    def connection_lost(self, exc: Exception | None) -> None:
        if self._state == "close" and self._error is None and exc is None:
            self._state = "done"  # a body read to the connection's close ends there (a reset cuts it)
        elif self._state != "done" and self._error is None:
            what = "before the response's head" if self._state == "head" else "before the body's end"
            self._error = exc if exc is not None else ConnectionResetError(f"the server closed the connection {what}")
        self._wake()

    # -- parsing ----------------------------------------------------------------------------------

    def _whole(self, buffer: bytearray) -> bool:
        """Whether ``buffer`` (a head or a line being cut short) now holds its end; raises when it
        grew past its limit without one."""
        head = self._state == "head"
        end = b"\r\n\r\n" if head else b"\r\n"
        if buffer.find(end, self._scanned) >= 0:
            return True
        if len(buffer) > (MAX_HEAD_BYTES if head else MAX_LINE_BYTES):
            raise _Broken("the response's head is too long" if head else "a chunked body's line is too long")
        self._scanned = max(0, len(buffer) - len(end) + 1)
        return False

    def _parse(self, data: bytes) -> None:
        """Take ``data`` (what was left over, then the new bytes) as far as it goes. Walked by position:
        a read of many small chunks is cut once, not copied once per chunk."""
        at, size = 0, len(data)
        while at < size:
            state = self._state
            if state == "head":
                after = self._head(data, at)
                if after == at:
                    break  # the head is not whole yet
                at = after  # a head read: the final one, or a 1xx one with another to follow
            elif state == "data":
                take = min(self._chunk_left, size - at)
                self._queue(data if take == size else data[at : at + take])
                at += take
                self._chunk_left -= take
                if not self._chunk_left:
                    self._state = "data-end"
            elif state == "length":
                take = min(self._length_left, size - at)
                self._queue(data if take == size else data[at : at + take])
                self._length_left -= take
                at = size  # what follows the body is nothing of this response
                if not self._length_left:
                    self._state = "done"
            elif state == "close":
                self._queue(data if at == 0 else data[at:])
                at = size
            elif state == "done":
                at = size  # bytes after the body's end: nothing of this response
            else:  # a line: a chunk's size, the CRLF after its data, a trailer
                end = data.find(b"\r\n", at)
                if end < 0:
                    if size - at > MAX_LINE_BYTES:
                        raise _Broken("a chunked body's line is too long")
                    break
                self._line(state, data[at:end])
                at = end + 2
        if at < size:
            self._buffer += memoryview(data)[at:]
            self._scanned = 0

    def _line(self, state: str, line: bytes) -> None:
        if state == "data-end":
            if line:
                raise _Broken("a chunk's data is not followed by CRLF")
            self._state = "size"
        elif state == "size":
            found = _CHUNK_SIZE.fullmatch(line)
            if found is None:
                raise _Broken(f"a chunk's size line is malformed: {line[:40]!r}")
            self._chunk_left = int(found.group(1), 16)
            self._state = "data" if self._chunk_left else "trailer"
        elif not line:  # the blank line after the trailers: the body's end
            self._state = "done"

    def _head(self, data: bytes, at: int) -> int:
        """Read a head off ``data`` from ``at`` when it is whole (an informational 1xx head is read
        past); where the rest begins, or ``at`` when the head is not whole yet."""
        end = data.find(b"\r\n\r\n", at)
        if end < 0:
            if len(data) - at > MAX_HEAD_BYTES:
                raise _Broken("the response's head is too long")
            return at
        if end - at > MAX_HEAD_BYTES:
            raise _Broken("the response's head is too long")
        lines = data[at:end].split(b"\r\n")
        found = _STATUS.fullmatch(lines[0])
        if found is None:
            raise _Broken(f"not an HTTP/1.1 status line: {lines[0][:40]!r}")
        status = int(found.group(1))
        if 100 <= status < 200:
            return end + 4  # 100 Continue, 103 Early Hints: the final head follows
        items: list[tuple[str, str]] = []
        for raw in lines[1:]:
            name, colon, value = raw.partition(b":")
            if not colon or not _TOKEN.fullmatch(name.decode("latin-1")):
                raise _Broken(f"a malformed header line: {raw[:40]!r}")
            items.append((name.decode("latin-1").lower(), value.strip(b" \t").decode("latin-1")))
        headers = _Headers(items)
        self.head = (status, headers)
        codings = [
            part.strip().lower() for part in ",".join(headers.getall("transfer-encoding")).split(",") if part.strip()
        ]
        lengths = set(headers.getall("content-length"))
        if codings:
            self._state = "size" if codings[-1] == "chunked" else "close"
        elif lengths:
            if len(lengths) != 1 or not _DIGITS.fullmatch(length := lengths.pop()):
                raise _Broken("the response's content-length is malformed")
            self._length_left = int(length)
            self._state = "length" if self._length_left else "done"
        else:
            self._state = "close"
        return end + 4

    def _queue(self, piece: bytes) -> None:
        if piece:
            self._pieces.append(piece)
            self._queued += len(piece)

    def _fail(self, exc: Exception) -> None:
        self._error = exc
        if self.transport is not None:
            self.transport.abort()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def buffered(self) -> bool:
        """Whether bytes past the head came (a proxy's answer to CONNECT is a head alone)."""
        return bool(self._buffer or self._pieces)

    def restart(self) -> None:
        """Read a new response from here (a tunnel's answer was the head just read)."""
        self.head = None
        self._state = "head"
        self._buffer.clear()
        self._scanned = 0

    # -- the reader's side ------------------------------------------------------------------------

    async def _wait(self) -> None:
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            if self._waiter is waiter:
                self._waiter = None

    async def read_head(self) -> tuple[int, _Headers]:
        """The response's status and headers."""
        while self.head is None:
            if self._error is not None:
                raise self._error
            if self._state == "done":
                raise ConnectionResetError("the server closed the connection before the response's head")
            await self._wait()
        return self.head

    async def next_piece(self) -> bytes:
        """The body's next bytes, or ``b""`` at its end; raises what broke it."""
        while True:
            pieces = self._pieces
            if pieces:
                piece = pieces.popleft()
                self._queued -= len(piece)
                if self._paused and self._queued < HIGH_WATER // 2 and self.transport is not None:
                    self._paused = False
                    self.transport.resume_reading()
                return piece
            if self._error is not None:
                raise self._error
            if self._state == "done":
                return b""
            await self._wait()


def _failure(exc: Exception) -> Exception:
    """What an exception of a body read means (see DirectRead): never the body's end, which
    :meth:`_Connection.next_piece` returns as ``b""``."""
    if isinstance(exc, TransportError):
        return exc
    if isinstance(exc, _Broken):
        return TransportError("network", "malformed response", describe(exc))
    if isinstance(exc, OSError):
        return TransportError("network", "connection failed", describe(exc))
    return exc


class _NativeResponse(HttpResponse):
    __slots__ = ("_connection",)

    def __init__(self, connection: _Connection, status: int, headers: _Headers) -> None:
        super().__init__(status, headers)
        self._connection = connection

    def header_values(self, name: str) -> list[str]:
        return cast("_Headers", self.headers).getall(name)

    async def read(self) -> bytes:
        try:
            return await self._connection.next_piece()
        except Exception as exc:
            raise _failure(exc) from None

    def direct_read(self) -> DirectRead:
        return DirectRead(self._connection.next_piece, None, _failure)

    async def aclose(self) -> None:
        transport = self._connection.transport
        if transport is not None and not transport.is_closing():
            transport.abort()  # one connection per call: nothing to keep it for


class _Target:
    """Where a request goes: scheme, host (as the connection names it), port, and its request line's
    target and ``host`` header."""

    __slots__ = ("authority", "host", "port", "scheme", "target")

    def __init__(self, url: str) -> None:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise TransportError("config", "request could not be sent", f"ValueError: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TransportError("config", "request could not be sent", f"not an http(s) URL: {parts.scheme}://…")
        self.scheme = parts.scheme
        host = parts.hostname
        try:
            self.host = host if host.isascii() else host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise TransportError("config", "request could not be sent", describe(exc)) from None
        if not _HOST.fullmatch(self.host):
            raise TransportError("config", "request could not be sent", f"not a host name: {self.host[:60]!r}")
        self.port = port or (443 if self.scheme == "https" else 80)
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.authority = shown if port is None else f"{shown}:{port}"
        path = parts.path or "/"
        if parts.query:
            path = f"{path}?{parts.query}"
        self.target = path if _SENDABLE_CHARS.issuperset(path) else quote(path, safe=_SENDABLE)


def _request_bytes(
    method_target: str, authority: str, headers: Mapping[str, str], body: bytes, extra: dict[str, str]
) -> bytes:
    """The request's head and body; raises a ``config`` error for a header that cannot be sent."""
    lines = [f"POST {method_target} HTTP/1.1", f"host: {authority}"]
    for name, value in (*headers.items(), *extra.items()):
        if not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
            raise TransportError("config", "request could not be sent", f"a header that cannot be sent: {name!r}")
        if name.lower() in ("host", "content-length", "connection", "transfer-encoding"):
            continue  # this client's own
        lines.append(f"{name}: {value}")
    lines += [f"content-length: {len(body)}", "connection: close", "", ""]
    return "\r\n".join(lines).encode("utf-8") + body


def _proxy_for(target: _Target) -> str | None:
    """The proxy httpx's default client would use for ``target``, from the environment (read per call:
    a process's environment may change between calls, and this client keeps nothing between them)."""
    return environment_proxy(target.scheme, target.host, urllib.request.getproxies_environment())


class _Route:
    """How a request reaches its target: the address to connect to, the request line's target, the
    headers for a proxy, and whether a ``CONNECT`` tunnel comes first."""

    __slots__ = ("connect_to", "extra", "line_target", "tunnel")

    def __init__(self, target: _Target) -> None:
        self.connect_to = target
        self.line_target = target.target
        self.extra: dict[str, str] = {}
        #: The tunnel's own headers when the request goes through a CONNECT tunnel (None: no tunnel).
        self.tunnel: dict[str, str] | None = None
        proxy = _proxy_for(target)
        if proxy is None:
            return
        if not proxy.startswith("http://"):
            raise TransportError(
                "config", "request could not be sent", "the native transport takes http:// proxies only"
            )
        self.connect_to = _Target(proxy)
        credentials = _proxy_credentials(proxy)
        authorization = {"proxy-authorization": credentials} if credentials else {}
        if target.scheme == "http":
            self.line_target = f"http://{target.authority}{target.target}"
            self.extra = authorization
        else:
            self.tunnel = authorization


class NativeTransport(Transport):
    """The kit's own HTTP/1.1 client on asyncio (see the module docstring): stateless, one connection
    per call."""

    name = "native"

    async def send(self, request: HttpRequest) -> HttpResponse:
        target = _Target(request.url)
        route = _Route(target)
        payload = _request_bytes(route.line_target, target.authority, request.headers, request.body, route.extra)
        connection = await _connect(target, route, request.connect_timeout)
        try:
            cast("asyncio.Transport", connection.transport).write(payload)
            status, headers = await connection.read_head()
        except (OSError, _Broken) as exc:
            _abort(connection)
            raise TransportError("network", "connection failed", describe(exc)) from None
        except BaseException:
            _abort(connection)
            raise
        return _NativeResponse(connection, status, headers)

    async def aclose(self) -> None:
        """Nothing to close: each call's connection closes with its response."""


#: The instance the kit's calls share: it holds nothing of any call's (one object less a stream).
SHARED: Final = NativeTransport()


async def _connect(target: _Target, route: _Route, timeout: float) -> _Connection:
    """A connection to ``route``'s address (through its tunnel, with TLS for an https target), within
    ``timeout`` seconds; raises :class:`TransportError` (and closes what it opened)."""
    loop = asyncio.get_running_loop()
    tls = target.scheme == "https"
    opened: list[_Connection] = []

    def made() -> _Connection:
        connection = _Connection()
        opened.append(connection)
        return connection

    try:
        async with asyncio.timeout(timeout):
            if route.tunnel is None:
                _, connection = await loop.create_connection(
                    made,
                    route.connect_to.host,
                    route.connect_to.port,
                    ssl=ssl_context() if tls else None,
                    server_hostname=target.host if tls else None,
                )
                return connection
            _, connection = await loop.create_connection(made, route.connect_to.host, route.connect_to.port)
            await _tunnel(connection, target, route.tunnel)
            return connection
    except TimeoutError as exc:
        _abort(*opened)
        raise TransportError("timeout", "timed out", describe(exc)) from None
    except (OSError, _Broken) as exc:
        _abort(*opened)
        raise TransportError("network", "connection failed", describe(exc)) from None
    except BaseException:
        _abort(*opened)
        raise


def _abort(*connections: _Connection) -> None:
    for connection in connections:
        if connection.transport is not None:
            connection.transport.abort()


def _proxy_credentials(proxy: str) -> str | None:
    """``Basic …`` of the user and password in a proxy's URL (None without them)."""
    parts = urlsplit(proxy)
    if parts.username is None:
        return None
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")


async def _tunnel(connection: _Connection, target: _Target, headers: dict[str, str]) -> None:
    """Ask the proxy on ``connection`` for a tunnel to ``target`` (raises unless it says 2xx), then
    start TLS in it: the connection is then ready for the request, its parser set back for the
    response's own head."""
    authority = f"[{target.host}]:{target.port}" if ":" in target.host else f"{target.host}:{target.port}"
    lines = [f"CONNECT {authority} HTTP/1.1", f"host: {authority}", *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    transport = cast("asyncio.Transport", connection.transport)
    transport.write("\r\n".join(lines).encode("utf-8"))
    status, _ = await connection.read_head()
    if not 200 <= status < 300:
        raise ConnectionRefusedError(f"the proxy refused the tunnel: {status}")
    if connection.buffered():
        raise _Broken("the proxy sent bytes after its answer to CONNECT")
    connection.restart()
    secured = await asyncio.get_running_loop().start_tls(
        transport, connection, ssl_context(), server_hostname=target.host
    )
    if secured is None:
        raise _Broken("the TLS handshake through the proxy did not complete")
    connection.transport = secured
