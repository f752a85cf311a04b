"""``LoopbackServer(backlog=…)``: a load that connects all at once is queued, not refused.

The soak opens a thousand connections at once; asyncio's default backlog of 100 left the rest
waiting for SYN retransmits until the client's connect timeout ended them. These tests hold the
server's loop (nothing is accepted meanwhile) and count, by what the kernel completed, how many
connects the listening queue took: that is the backlog, not a timing.
"""

from __future__ import annotations

import select
import socket
import urllib.parse

from conformance.loopback import LoopbackServer, Scripted

_CONNECTS = 300


def _completed_connects(base_url: str, count: int) -> int:
    """Start ``count`` connects to ``base_url`` without running the loop; return how many the kernel
    completed. A connect the listening queue has no room for gets no answer to its SYN."""
    address = urllib.parse.urlsplit(base_url)
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.connect_ex((address.hostname, address.port))
            sockets.append(sock)
        # Loopback handshakes complete inside the kernel; a dropped SYN is retried only after a second,
        # and finds the queue as full then (the loop is held: nothing is accepted).
        _, writable, _ = select.select([], sockets, [], 0.5)
        return sum(1 for sock in writable if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
    finally:
        for sock in sockets:
            sock.close()


async def test_the_default_backlog_queues_about_a_hundred_connects() -> None:
    async with LoopbackServer(Scripted()) as server:
        completed = _completed_connects(server.base_url, _CONNECTS)
    assert 100 <= completed <= 101, completed  # Linux queues backlog + 1


async def test_a_longer_backlog_queues_every_connect_of_a_burst() -> None:
    async with LoopbackServer(Scripted(), backlog=2 * _CONNECTS) as server:
        completed = _completed_connects(server.base_url, _CONNECTS)
    assert completed == _CONNECTS
