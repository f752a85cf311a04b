"""Witnesses that nothing was sent: a loopback listener that counts every connection made to it (TLS or
not, HTTP or not), and a kit transport that records every request handed to it and sends none.

The listener is where an attacker's value would send a request: a host part such as
``x@127.0.0.1:<port>/`` turns the rest of the URL into user info and the host into the listener's,
so a request that escapes the checks lands here and is counted, on any transport.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

from streamfns.kit import HttpRequest, HttpResponse, Transport, TransportError

__all__ = ["ConnectionCounter", "NothingSent", "counting_listener"]


@dataclass(slots=True)
class ConnectionCounter:
    """How many connections reached the listener on ``port``."""

    port: int = 0
    connections: int = 0
    _server: asyncio.Server | None = field(default=None, repr=False)


@contextlib.asynccontextmanager
async def counting_listener() -> AsyncGenerator[ConnectionCounter]:
    """A listener on 127.0.0.1 that counts each connection and closes it at once."""
    counter = ConnectionCounter()

    async def accept(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        counter.connections += 1
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    counter.port = server.sockets[0].getsockname()[1]
    try:
        yield counter
    finally:
        server.close()
        await server.wait_closed()


class NothingSent(Transport):
    """A transport that sends nothing: every URL handed to it is kept in ``sent`` (a test asserts it
    stays empty), and the attempt fails as a refused connection would."""

    name = "nothing-sent"

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def send(self, request: HttpRequest) -> HttpResponse:
        self.sent.append(request.url)
        raise TransportError("network", "connection failed", "this test's transport sends nothing")
