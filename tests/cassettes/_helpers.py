"""Helpers for the cassettes tests: hand-made cassettes and loopback plans for recording tests.

Networking tests use the project's one loopback server, `conformance.loopback.LoopbackServer`;
`upstream` builds the plan the recording tests need (SSE events, headers that must or must not be
stored, optional gzip, an optional real reset).
"""

from __future__ import annotations

import gzip

from cassettes.model import Cassette, Chunk, End, EndKind, Interaction, RecordedRequest, RecordedResponse
from conformance.loopback import Scripted
from conformance.loopback import ScriptedEnd as PlanEnd

SSE_EVENTS = [f'event: tick\ndata: {{"n": {n}, "text": "héllo {n}"}}\n\n'.encode() for n in range(5)]
UPSTREAM_HEADERS = [
    ("content-type", "text/event-stream"),
    ("request-id", "req_loopback"),
    ("set-cookie", "session=should-never-be-stored"),
    ("x-ratelimit-remaining-requests", "99"),
]
#: Pause before a real TCP reset, so the bytes sent before it reach the client first.
RESET_SETTLE_S = 0.05


def upstream(
    chunks: list[bytes] | None = None,
    *,
    delay: float = 0.0,
    end: PlanEnd = "eof",
    compress: bool = False,
    status: int = 200,
    headers: list[tuple[str, str]] | None = None,
) -> Scripted:
    """A plan sending `chunks` (default: five SSE events) `delay` seconds apart, then ending with
    `end`; `compress` gzips the body into three HTTP chunks."""
    body = list(SSE_EVENTS if chunks is None else chunks)
    sent_headers = list(UPSTREAM_HEADERS if headers is None else headers)
    if compress:
        packed = gzip.compress(b"".join(body))
        third = max(1, len(packed) // 3)
        body = [packed[:third], packed[third : 2 * third], packed[2 * third :]]
        sent_headers.append(("content-encoding", "gzip"))
    planned = [(delay if n else 0.0, data) for n, data in enumerate(body)]
    if end == "reset":
        planned.append((RESET_SETTLE_S, b""))
    return Scripted(status=status, headers=sent_headers, chunks=planned, end=end)


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
