"""Helpers for the cassettes tests: a real loopback HTTP/1.1 server that streams slowly.

The server runs in the test's own event loop (asyncio.start_server on 127.0.0.1:0) and answers
each request with the next `Script`: a status, headers and body chunks sent with chunked
transfer-encoding, a delay between chunks, optionally gzip, optionally a connection reset
(RST) after some chunks. It remembers what it received and when it finished each body.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
import time
from dataclasses import dataclass, field

from cassettes.model import Cassette, Chunk, End, EndKind, Interaction, RecordedRequest, RecordedResponse

SSE_EVENTS = [f'event: tick\ndata: {{"n": {n}, "text": "héllo {n}"}}\n\n'.encode() for n in range(5)]


@dataclass
class Script:
    """How the server answers one request."""

    chunks: list[bytes] = field(default_factory=lambda: list(SSE_EVENTS))
    status: int = 200
    headers: list[tuple[str, str]] = field(
        default_factory=lambda: [
            ("content-type", "text/event-stream"),
            ("request-id", "req_loopback"),
            ("set-cookie", "session=should-never-be-stored"),
            ("x-ratelimit-remaining-requests", "99"),
        ]
    )
    delay: float = 0.0
    reset_after: int | None = None
    gzip: bool = False


@dataclass
class Received:
    """One request as the server saw it."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes


class LoopbackServer:
    """A tiny HTTP/1.1 server on 127.0.0.1; see the module docstring."""

    def __init__(self) -> None:
        self.scripts: list[Script] = []
        self.received: list[Received] = []
        self.finished_at: list[float] = []
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        # Handlers still streaming to a client that went away must not outlive the test's loop.
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)

    def _next_script(self) -> Script:
        return self.scripts.pop(0) if len(self.scripts) > 1 else (self.scripts[0] if self.scripts else Script())

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)
        try:
            await self._serve(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away; there is nobody left to answer
        finally:
            # Always release the socket, also when stop() cancels a handler mid-body.
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, target, _ = request_line.split(" ", 2)
        headers: dict[str, str] = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.received.append(Received(method, target, headers, body))
        await self._respond(writer, self._next_script())

    async def _respond(self, writer: asyncio.StreamWriter, script: Script) -> None:
        headers = list(script.headers)
        chunks = script.chunks
        if script.gzip:
            packed = gzip.compress(b"".join(chunks))
            third = max(1, len(packed) // 3)
            chunks = [packed[:third], packed[third : 2 * third], packed[2 * third :]]
            headers.append(("content-encoding", "gzip"))
        lines = [f"HTTP/1.1 {script.status} X", *(f"{k}: {v}" for k, v in headers)]
        lines += ["transfer-encoding: chunked", "connection: close", "", ""]
        writer.write("\r\n".join(lines).encode("latin-1"))
        await writer.drain()
        for number, chunk in enumerate(chunks):
            if script.reset_after is not None and number == script.reset_after:
                # SO_LINGER 0 makes close() send an RST: a real "connection reset by peer".
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return
            if number and script.delay:
                await asyncio.sleep(script.delay)
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        self.finished_at.append(time.monotonic())
        writer.close()
        await writer.wait_closed()


def make_cassette(
    chunks: list[bytes],
    *,
    times: list[float] | None = None,
    end: EndKind = "eof",
    url: str = "https://api.example.test/v1/messages",
    body: bytes = b'{"model":"m","stream":true}',
    status: int = 200,
    api: str | None = "anthropic-messages",
) -> Cassette:
    """A one-interaction cassette built by hand."""
    stamps = times if times is not None else [float(n * 10) for n in range(len(chunks))]
    response = RecordedResponse(
        status=status,
        headers=(("content-type", "text/event-stream"),),
        t_ms=0,
        chunks=tuple(Chunk(c, t) for c, t in zip(chunks, stamps, strict=True)),
        end=End(end, stamps[-1] if stamps else 0),
    )
    request = RecordedRequest("POST", url, (("content-type", "application/json"),), body)
    return Cassette(interactions=(Interaction(request, response),), api=api, model="m")
