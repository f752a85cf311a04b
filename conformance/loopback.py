"""A real HTTP/1.1 server on 127.0.0.1 that plays scripted responses, for fault tests.

Adapters are pointed at it through ``model.base_url``, so it works for adapters built on any HTTP
library. Each response is a :class:`Scripted` plan: status, headers, body chunks with delays before
each, and how the body ends — ``eof`` (clean end), ``reset`` (TCP reset mid-body), ``stall`` (say
nothing more until the client gives up) or ``hangup`` (close without finishing the chunked body).
Every request is recorded with its arrival time, and the server notes when each connection was
closed by the client (or cut by the plan itself, ``reset``/``hangup``), so tests can prove a response
was released. Only that counts, however late it comes: after a finished body the server ends its own
side of the connection once ``linger_s`` has passed (as ``Connection: close`` promises) but goes on
watching for the client's close — a client still reading the body on a loaded machine has not leaked
it, and one that never closes its socket is never taken for one that did. :func:`refused_url` gives
the URL of a port nothing listens on.

Bodies are sent with ``Transfer-Encoding: chunked`` — one HTTP chunk per scripted chunk, flushed
at once — and ``Connection: close``, so chunk boundaries and timing reach the client as scripted.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Self

__all__ = ["LoopbackServer", "ReceivedRequest", "Scripted", "ScriptedEnd", "refused_url"]

#: How a scripted body ends (see the module docstring).
ScriptedEnd = Literal["eof", "reset", "stall", "hangup"]


@dataclass(slots=True)
class Scripted:
    """One response to play. ``chunks`` are ``(delay_s, bytes)``: wait, then send the bytes."""

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=lambda: [("content-type", "text/event-stream")])
    chunks: list[tuple[float, bytes]] = field(default_factory=list[tuple[float, bytes]])
    end: ScriptedEnd = "eof"
    #: Seconds to wait before sending the status line (a slow first byte).
    head_delay_s: float = 0.0


@dataclass(slots=True)
class ReceivedRequest:
    """A request the server read, and what became of its connection.

    ``received_at`` is ``time.monotonic()`` when the request head and body had been read;
    ``connection_closed`` is set once the client closed the connection (or the plan cut it).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    connection_closed: asyncio.Event = field(default_factory=asyncio.Event)
    received_at: float = field(default_factory=time.monotonic)


Responder = Callable[[ReceivedRequest], Scripted | Awaitable[Scripted]]

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


class LoopbackServer:
    """Serve scripted responses on an ephemeral port: ``async with LoopbackServer(responder) as s``.

    ``responder`` picks the plan for each request (a fixed :class:`Scripted` is replayed for every
    request). ``base_url`` is ``http://127.0.0.1:<port>``. After a finished body the server waits up
    to ``linger_s`` for the client to close the connection, then ends its own side (a FIN) and keeps
    watching until the client closes it or the server is closed. The server's own tasks are named
    ``loopback-…`` so a task-leak check can tell them from the client's. ``backlog`` is the listening
    socket's queue of connections not yet accepted (asyncio's default, 100, unless given; the kernel
    may cap it, ``net.core.somaxconn``): a load that opens more connections at once than the server
    accepts in time needs a longer one, or its connects wait for a SYN retransmit.
    """

    def __init__(self, responder: Responder | Scripted, *, linger_s: float = 2.0, backlog: int = 100) -> None:
        self._responder: Responder = responder if callable(responder) else (lambda _request: responder)
        self._server: asyncio.Server | None = None
        self.requests: list[ReceivedRequest] = []
        self._handlers: set[asyncio.Task[None]] = set()
        self._connections: set[asyncio.Task[Any]] = set()
        self._linger_s = linger_s
        self._backlog = backlog

    @property
    def base_url(self) -> str:
        """The server's root URL."""
        assert self._server is not None, "the server is not started"
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._on_connection, "127.0.0.1", 0, backlog=self._backlog)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop listening and end every connection still open."""
        if self._server is not None:
            self._server.close()
            for task in list(self._handlers):
                task.cancel()
            if self._connections:
                # The connection tasks end once their serving task does; they are never cancelled
                # themselves (asyncio 3.11 logs a cancelled client_connected_cb task as an error).
                await asyncio.wait(set(self._connections))
            await self._server.wait_closed()
            self._server = None

    async def all_connections_closed(self, timeout: float = 2.0) -> bool:
        """Wait until every connection that carried a request has been closed by the client."""
        try:
            async with asyncio.timeout(timeout):
                for request in self.requests:
                    await request.connection_closed.wait()
        except TimeoutError:
            return False
        return True

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = asyncio.current_task()
        assert connection is not None
        connection.set_name("loopback-connection")
        self._connections.add(connection)
        serving = asyncio.create_task(self._serve(reader, writer), name="loopback-serve")
        self._handlers.add(serving)
        try:
            await asyncio.wait({serving})
        finally:
            self._handlers.discard(serving)
            self._connections.discard(connection)
            with contextlib.suppress(Exception):
                writer.close()
        if not serving.cancelled():
            serving.exception()  # retrieved: a failure here is the client's doing, already recorded

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request: ReceivedRequest | None = None
        try:
            request = await _read_request(reader)
            if request is None:
                return
            self.requests.append(request)
            plan = self._responder(request)
            if not isinstance(plan, Scripted):
                plan = await plan
            watcher = asyncio.create_task(_watch_close(reader, request), name="loopback-watch")
            try:
                await _play(plan, writer)
                if plan.end in ("reset", "hangup"):
                    # The plan cut the connection itself: the client has no socket left to release.
                    request.connection_closed.set()
                if plan.end == "stall":
                    await request.connection_closed.wait()
                elif plan.end == "eof":
                    await asyncio.wait({watcher}, timeout=self._linger_s)
                    if not watcher.done():
                        # Our side is done; the connection is released only when the client closes it.
                        _end_our_side(writer)
                        await watcher
            finally:
                watcher.cancel()
        except (ConnectionError, asyncio.IncompleteReadError):
            # Writing failed because the client had already gone away.
            if request is not None:
                request.connection_closed.set()


def refused_url() -> str:
    """``http://127.0.0.1:<port>`` for a port that was just bound and released: connecting to it is
    refused (nothing listens there)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


async def _read_request(reader: asyncio.StreamReader) -> ReceivedRequest | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = [*lines[0].split(" ", 2), "", ""][:3]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    body = b""
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip() or b"0", 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(parts)
    return ReceivedRequest(method=method, path=path, headers=headers, body=body)


def _end_our_side(writer: asyncio.StreamWriter) -> None:
    """Send a FIN (a half-close: the client can still be seen closing its side)."""
    with contextlib.suppress(Exception):  # the client may have gone already: nothing to end
        if writer.can_write_eof() and not writer.transport.is_closing():
            writer.write_eof()


async def _watch_close(reader: asyncio.StreamReader, request: ReceivedRequest) -> None:
    # The client sends nothing more on this connection: any read returning means it closed it.
    with contextlib.suppress(Exception):
        while await reader.read(65536):
            pass
    request.connection_closed.set()


async def _play(plan: Scripted, writer: asyncio.StreamWriter) -> None:
    if plan.head_delay_s:
        await asyncio.sleep(plan.head_delay_s)
    head = [f"HTTP/1.1 {plan.status} {_REASONS.get(plan.status, 'Status')}"]
    head += [f"{name}: {value}" for name, value in plan.headers]
    head += ["transfer-encoding: chunked", "connection: close", "", ""]
    writer.write("\r\n".join(head).encode("latin-1"))
    await writer.drain()
    for delay, data in plan.chunks:
        if delay:
            await asyncio.sleep(delay)
        if data:
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()
    if plan.end == "eof":
        writer.write(b"0\r\n\r\n")
        await writer.drain()
    elif plan.end == "reset":
        sock = writer.get_extra_info("socket")
        if sock is not None:
            # SO_LINGER with a zero timeout makes close() send a TCP RST instead of a FIN.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
    elif plan.end == "hangup":
        writer.transport.close()
