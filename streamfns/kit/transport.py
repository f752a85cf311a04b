"""The kit's HTTP seam: one small interface between :func:`~streamfns.kit.http.run_stream` and an HTTP
library, with httpx behind it by default, aiohttp as an extra (``streamfns[aiohttp]``), and the kit's
own HTTP/1.1 client on asyncio (``"native"``: :mod:`streamfns.kit.transport_native`).

The kit needs four things of HTTP: send a POST and get its status and headers, read the body's raw
bytes one read at a time, close the response, and say what went wrong. :class:`Transport` and
:class:`HttpResponse` are exactly that. Every transport promises:

- **no content decoding**: :meth:`HttpResponse.read` returns the bytes as they came off the wire, so
  the kit's bounded decoder (:mod:`streamfns.kit.decoding`) and its caps apply whatever the library;
- **one timeout of its own**: connecting (``HttpRequest.connect_timeout``, the pool wait included).
  The wait for the head and for each read is bounded by the kit's own idle clock
  (:class:`~streamfns.kit.scope.Scope`), the same on every transport, with no timer armed per read;
- **the same error kinds**: a failure is a :class:`TransportError` of kind ``config`` (the request
  cannot be sent: a bad URL or scheme, an illegal header), ``timeout`` (connecting took too long) or
  ``network`` (refused, reset, cut inside a chunk, a TLS failure), whichever library said it;
- no redirects are followed (a POST is never re-sent elsewhere: a 3xx reaches the kit as a status);
- :meth:`HttpResponse.aclose` releases the connection, never raises, and may be called twice.

A response may also offer its library's own read for the kit to await directly
(:meth:`HttpResponse.direct_read`, a :class:`DirectRead`): at one event per read — real traffic — a
coroutine of the transport's around the library's costs about a microsecond an event (a fifth of the
kit's own read path), so the built-in transports offer it; what it reads and how it fails are exactly
what :meth:`HttpResponse.read` reads and raises.

Which transport a call uses (:func:`streamfns.kit.transports.transport_for`): the caller's own client when
``StreamOptions.http_client`` holds one — an ``httpx.AsyncClient``, an ``httpx2.AsyncClient``
(anything with httpx's ``build_request``/``send``), an ``aiohttp.ClientSession``, or a
:class:`Transport` — whose pool the application shares and which the kit never closes; otherwise a
client of the kit's own (see below) of the transport named by
``StreamOptions.transport``, else the process-wide choice
(:func:`~streamfns.kit.transports.set_default_transport`, else the ``STREAMFNS_TRANSPORT`` environment
variable, else ``"httpx"``).

The kit's own clients keep no idle connection and set no connection limit: each call holds its one
connection for as long as its stream lasts, and closing the stream closes it. The httpx transport
makes a client per call; the aiohttp transport shares one session among the calls in flight on an
event loop (made by the first, closed by the last; its cookie jar keeps nothing), which spares each
call a session's set-up and its objects; the native transport opens a connection per call and holds
the fewest objects a stream. An application that wants connections kept alive across
calls passes its own client.
"""

from __future__ import annotations

import functools
import ssl
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, cast

from normalize.secret_forms import MASK, masked_headers, masked_repr, masked_url
from normalize.wire.tags import SECRETS_EXTENSION

__all__ = [
    "DirectRead",
    "HttpRequest",
    "HttpResponse",
    "Transport",
    "TransportError",
    "TransportKind",
    "describe",
    "environment_proxy",
    "ssl_context",
]

TransportKind = Literal["config", "network", "timeout"]


class TransportError(Exception):
    """A transport failure, said the same way on every transport: ``kind``, then ``what`` happened
    ("connection failed", "timed out", …) and the library's own ``detail`` (its class and message)."""

    def __init__(self, kind: TransportKind, what: str, detail: str) -> None:
        super().__init__(f"{what}: {detail}")
        self.kind: TransportKind = kind
        self.what = what
        self.detail = detail


@dataclass(slots=True, kw_only=True)
class HttpRequest:
    """One POST: where, what, and the bounds a transport applies itself."""

    url: str
    headers: dict[str, str]
    body: bytes
    connect_timeout: float
    #: The idle timeout, for what a library bounds itself (httpx's write of the request); the kit's idle
    #: clock bounds every wait on the server whatever the transport does with it, so the built-in
    #: transports give their library no read timeout.
    idle_timeout: float
    #: Request tags a recording transport reads (the api, the call's secrets: ``normalize.wire.tags``).
    extensions: dict[str, object] = field(default_factory=dict[str, object])

    def __repr__(self) -> str:
        # A transport may log what it sends: the key header, the URL's credentials and the secrets the
        # request is tagged with show masked, as pydantic's SecretStr shows a secret (fields untouched).
        tags = {
            name: (MASK,) * len(cast("tuple[object, ...]", value))
            if name == SECRETS_EXTENSION and isinstance(value, tuple)
            else value
            for name, value in self.extensions.items()
        }
        return masked_repr(self, url=masked_url(self.url), headers=masked_headers(self.headers), extensions=tags)


class HttpResponse(ABC):
    """A response whose head has arrived; the body is read with :meth:`read`."""

    __slots__ = ("headers", "status")

    def __init__(self, status: int, headers: Mapping[str, str]) -> None:
        self.status = status
        #: Case-insensitive, as the library gives them (httpx's ``Headers``, aiohttp's ``CIMultiDictProxy``).
        self.headers = headers

    @abstractmethod
    def header_values(self, name: str) -> list[str]:
        """Every value of header ``name`` (a repeated header gives several)."""

    @abstractmethod
    async def read(self) -> bytes:
        """The next raw bytes of the body as they came off the wire (never empty), or ``b""`` at its end.
        Raises :class:`TransportError`."""

    @abstractmethod
    async def aclose(self) -> None:
        """Close the response (idempotent, never raises)."""

    def direct_read(self) -> DirectRead | None:
        """The library's own read, for the kit to await without :meth:`read` around it (see
        :class:`DirectRead`); None (the default): the kit awaits :meth:`read`."""
        return None


class DirectRead(NamedTuple):
    """A response's read as its library does it, in three parts the kit puts together itself, so the
    steady state awaits the library's coroutine with no coroutine of the transport's around it. Read
    through it, a body gives exactly what :meth:`HttpResponse.read` gives, and fails as it fails:

    - ``read``: the library's coroutine function, called once per read;
    - ``taken``: what one result of ``read`` means, as :meth:`HttpResponse.read` would return it (the
      next bytes, or ``b""`` at the end), or None for a result that carries no bytes and is read past
      (aiohttp's mark of a chunk's end); None in place of the function: the result is the bytes;
    - ``failed``: what an exception of ``read`` means: ``b""`` for the body's end (an async iterator's
      ``StopAsyncIteration``), else the exception to raise instead, a :class:`TransportError` for the
      library's own failures and anything else as it is. Never called with a ``CancelledError``.
    """

    read: Callable[[], Awaitable[Any]]
    taken: Callable[[Any], bytes | None] | None
    failed: Callable[[Exception], bytes | Exception]


class Transport(ABC):
    """An HTTP library behind the kit (see the module docstring). Subclass it to bring another."""

    #: The name reports and errors use ("httpx", "aiohttp", "native").
    name: str = "custom"

    @abstractmethod
    async def send(self, request: HttpRequest) -> HttpResponse:
        """POST ``request`` and return once the response head has arrived. Raises :class:`TransportError`."""

    async def aclose(self) -> None:
        """Close what the transport owns (a caller's client is never closed by the kit)."""
        return


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """The verifying TLS context every transport of the kit's own uses: httpx's default (certifi, or
    ``SSL_CERT_FILE``/``SSL_CERT_DIR``), built once (it costs ~50 ms)."""
    import httpx  # noqa: PLC0415 - httpx loads on the first call, not at import

    return httpx.create_ssl_context()


#: ``no_proxy`` as httpx reads it: the environment's alone (``urllib.request.proxy_bypass`` would also
#: read the system's settings on macOS and Windows). Not in the type stubs, so looked up by name.
_bypass = cast("Callable[[str, dict[str, str]], bool]", vars(urllib.request)["proxy_bypass_environment"])


def environment_proxy(scheme: str, host: str | None, proxies: dict[str, str]) -> str | None:
    """The proxy httpx's default client would use for a URL of ``scheme`` on ``host``:
    ``<scheme>_proxy`` or ``all_proxy`` of ``proxies`` (``urllib.request.getproxies_environment()``,
    either case), unless its ``no_proxy`` names the host; a proxy without a scheme is ``http://``."""
    if not proxies:
        return None
    proxy = proxies.get(scheme) or proxies.get("all")
    if proxy is None or (host is not None and _bypass(host, proxies)):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def describe(detail: BaseException) -> str:
    """``Class: message`` (the class alone when the message is empty)."""
    text = str(detail)
    return f"{type(detail).__name__}: {text}" if text else type(detail).__name__
