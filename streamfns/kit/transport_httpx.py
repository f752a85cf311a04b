"""The httpx transport: the kit's default, and any caller's httpx-style client (``httpx.AsyncClient``,
``httpx2.AsyncClient``: the vendor SDKs' stack since anthropic 2.x and openai 3.x).

A caller's client is driven only through what both libraries share — ``build_request`` with the
timeouts as a request extension and ``send(stream=True)`` — and its exceptions are read by class name,
so the kit never hands one library's ``Timeout`` to the other. The kit's own client is made for one
call with the kit's TLS context and closed with it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

from streamfns.kit.decoding import OnceRead
from streamfns.kit.transport import (
    DirectRead,
    HttpRequest,
    HttpResponse,
    Transport,
    TransportError,
    describe,
    ssl_context,
)

__all__ = ["HttpxTransport"]

#: Exception families of httpx-style libraries: only these are transport failures; anything else a
#: client raises (a cassette's unmatched request, a mock's own error) is left to the kit's caller.
_LIBRARIES = frozenset({"httpx", "httpx2", "httpcore"})


class HttpxTransport(Transport):
    """An httpx-style client behind the kit's seam (``client`` None: one of the kit's own)."""

    name = "httpx"

    __slots__ = ("_client", "_owned")

    def __init__(self, client: Any) -> None:
        self._owned = client is None
        if client is None:
            import httpx  # noqa: PLC0415 - loaded on the first call, not at import

            client = httpx.AsyncClient(verify=ssl_context())
        self._client: Any = client

    async def send(self, request: HttpRequest) -> HttpResponse:
        connect, idle = request.connect_timeout, request.idle_timeout
        # The kit's idle clock bounds every read, so httpx gets no read timeout of its own (as aiohttp
        # gets no sock_read). With one, httpcore arms and cancels a loop timer per read: under plain
        # asyncio, with any longer timer pending (the kit's own total and idle clocks), the cancelled
        # ones pile up in the loop's heap until they are half of it, and the garbage collector, run by
        # those allocations, walks every stream's in-flight read several times a second (~4 us an
        # event at 250 streams). And at the kit's own deadline, its cancellation landed inside
        # httpcore's shielded cleanup of the timed-out read, leaving a caller's pool's connection ACTIVE.
        timeouts = {"connect": connect, "read": None, "write": idle, "pool": connect}
        try:
            built = self._client.build_request(
                "POST",
                request.url,
                headers=request.headers,
                content=request.body,
                extensions={**request.extensions, "timeout": timeouts},
            )
        except Exception as exc:
            # A URL or a header httpx will not build (a bad scheme, an illegal value): nothing was sent.
            raise TransportError("config", "request could not be built", describe(exc)) from None
        try:
            response = await self._client.send(built, stream=True)
        except Exception as exc:
            raise _failure(exc) from None
        return _HttpxResponse(response)

    async def aclose(self) -> None:
        if self._owned:
            await self._client.aclose()


class _HttpxResponse(HttpResponse):
    __slots__ = ("_chunks", "_in_memory", "_response")

    def __init__(self, response: Any) -> None:
        super().__init__(response.status_code, response.headers)
        self._response = response
        # A transport that built its response from bytes in memory: httpx has read (and decoded) it.
        consumed = bool(response.is_stream_consumed)
        self._in_memory = OnceRead(response.content if consumed else b"")
        self._chunks: AsyncIterator[bytes] | None = None if consumed else response.aiter_raw()

    def header_values(self, name: str) -> list[str]:
        return cast("list[str]", self._response.headers.get_list(name))

    async def read(self) -> bytes:
        chunks = self._chunks
        if chunks is None:
            return await self._in_memory()
        try:
            return await anext(chunks)
        except Exception as exc:
            outcome = _read_failure(exc)
            if isinstance(outcome, bytes):
                return outcome
            raise outcome from None

    def direct_read(self) -> DirectRead | None:
        chunks = self._chunks
        return None if chunks is None else DirectRead(chunks.__anext__, None, _read_failure)

    async def aclose(self) -> None:
        try:
            await self._response.aclose()
        except Exception:  # closing is best effort: the stream's outcome is already decided
            return


def _read_failure(exc: Exception) -> bytes | Exception:
    """What an exception of a body read means: ``b""`` at the body's end, else as :func:`_failure`."""
    return b"" if isinstance(exc, StopAsyncIteration) else _failure(exc)


def _failure(exc: Exception) -> Exception:
    """The :class:`TransportError` for an httpx-style exception (read by class name, so httpx and httpx2
    alike); any other exception is returned as it is, to propagate."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if type(exc).__module__.split(".", 1)[0] not in _LIBRARIES or "HTTPError" not in names:
        return exc
    detail = describe(exc)
    if names & {"UnsupportedProtocol", "LocalProtocolError"}:
        # The request itself cannot be sent (a bad base_url scheme, an illegal header value).
        return TransportError("config", "request could not be sent", detail)
    if "ReadTimeout" in names:
        return TransportError("timeout", "sent nothing within the idle timeout", detail)
    if "TimeoutException" in names:
        return TransportError("timeout", "timed out", detail)
    if "DecodingError" in names:
        return TransportError("network", "sent a body that could not be decoded", detail)
    return TransportError("network", "connection failed", detail)
