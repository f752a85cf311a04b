"""The load server over a real loopback socket: a stream's deltas and end, requests one after another
on a kept-alive connection, ``/stats``, an unknown path, and a client that stops reading for a while."""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import socket
import time
from collections.abc import Iterator
from typing import cast
from urllib.parse import urlsplit

import pytest

from bench._load_server import _Connection, _Stats, _Ticker  # pyright: ignore[reportPrivateUsage]
from bench.load_bench import _serve_in_child  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.parallel

_STAMP = re.compile(rb'"text":"(\d+) "')


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    server, stop, url = _serve_in_child(8)
    try:
        yield url
    finally:
        stop.set()
        server.join(5)


def _connect(base_url: str) -> http.client.HTTPConnection:
    where = urlsplit(base_url)
    return http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=10)


def _stream(conn: http.client.HTTPConnection, events: int, rate: float) -> bytes:
    headers = {"content-type": "application/json", "x-load-events": str(events), "x-load-rate": str(rate)}
    conn.request("POST", "/v1/messages", body=b"{}", headers=headers)
    response = conn.getresponse()
    assert response.status == 200
    assert response.getheader("transfer-encoding") == "chunked"
    return response.read()


def _stats(conn: http.client.HTTPConnection) -> dict[str, float]:
    conn.request("GET", "/stats")
    stats: dict[str, float] = json.loads(conn.getresponse().read())
    return stats


def test_streams_stats_and_an_unknown_path_one_after_another_on_one_connection(base_url: str) -> None:
    conn = _connect(base_url)
    try:
        started = time.monotonic()
        body = _stream(conn, 5, 50.0)
        took = time.monotonic() - started
        stamps = [int(stamp) for stamp in _STAMP.findall(body)]
        assert len(stamps) == 5
        assert stamps == sorted(stamps)
        assert took >= 0.09  # the fifth delta is due 0.1 s after the start (the clock has millisecond steps)
        assert body.endswith(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
        assert b'"output_tokens":5' in body

        # The same connection serves the next requests.
        assert _STAMP.findall(_stream(conn, 0, 20.0)) == []
        stats = _stats(conn)
        assert stats["started"] >= 2
        assert stats["finished"] >= 2
        assert stats["open"] >= 1
        assert stats["cpu_s"] > 0
        conn.request("POST", "/v1/unknown", body=b"{}")
        missing = conn.getresponse()
        assert missing.status == 404
        missing.read()
        assert len(_STAMP.findall(_stream(conn, 3, 1000.0))) == 3
    finally:
        conn.close()


def test_a_client_that_stops_reading_still_gets_every_delta_in_order(base_url: str) -> None:
    # Every delta is due at once: the server writes until the socket is full, waits while the client
    # reads nothing, and goes on once it reads again.
    events = 50_000  # about 5 MB: more than the kernel's buffers on both sides and the transport's
    where = urlsplit(base_url)
    with socket.create_connection((where.hostname or "127.0.0.1", where.port or 80), timeout=10) as raw:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        request = (
            f"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n"
            f"x-load-events: {events}\r\nx-load-rate: 1000000\r\n\r\n"
        ).encode()
        raw.sendall(request)
        time.sleep(0.3)  # not reading: the server's writes back up
        received = bytearray()
        while not received.endswith(b"0\r\n\r\n"):
            data = raw.recv(1 << 20)
            assert data, "the server closed the connection before the end of the body"
            received += data
    stamps = [int(stamp) for stamp in _STAMP.findall(bytes(received))]
    assert len(stamps) == events
    assert stamps == sorted(stamps)


class _Transport:
    """What a :class:`_Connection` writes, and whether it closed."""

    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def close(self) -> None:
        raise AssertionError("not expected to close")


def test_a_delta_due_while_writing_is_paused_goes_out_when_it_resumes() -> None:
    async def scenario() -> None:
        stats = _Stats()
        connection = _Connection(stats, _Ticker())
        transport = _Transport()
        connection.connection_made(cast("asyncio.Transport", transport))
        headers = b"x-load-events: 2\r\nx-load-rate: 1000\r\ncontent-length: 2\r\n"
        connection.data_received(b"POST /v1/messages HTTP/1.1\r\n" + headers + b"\r\n{}")
        assert len(transport.written) == 1  # the head and the first events
        connection.pause_writing()
        await asyncio.sleep(0.05)  # both deltas are due
        assert len(transport.written) == 1
        connection.resume_writing()  # the first goes now, the second when the ticker runs
        assert len(transport.written) == 2
        await asyncio.sleep(0.05)
        assert len(transport.written) == 3 + 1  # the second delta, then the tail
        assert transport.written[-1].endswith(b"0\r\n\r\n")
        assert (stats.started, stats.finished) == (1, 1)
        connection.connection_lost(None)
        assert stats.open == 0

    asyncio.run(scenario())
