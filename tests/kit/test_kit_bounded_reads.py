"""The kit's read path keeps memory and loop time bounded whatever the server's content coding.

A small compressed body can inflate to gigabytes (``gzip, gzip``: 13 KB to 2–3 GiB), and one read
of it used to reach the framer as one chunk, holding the loop until it was all framed. These tests
serve such bodies from a real loopback socket and watch what the framer is fed (a counting SSE
framing), so they measure by events — bytes and pieces — not by the clock.
"""

from __future__ import annotations

import asyncio
import gzip
import struct
import time
import tracemalloc
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cassettes import load, use_cassette
from conformance.loopback import LoopbackServer, Scripted
from normalize import AbortController, AssistantMessage, StreamOptions, TextContent
from normalize.wire import DEFAULT_MAX_FRAME_BYTES, ServerSentEvent
from normalize.wire.sse_framing import SSEFraming
from streamfns.kit.decoding import MAX_DECODED_BYTES, PIECE_BYTES
from tests.kit._fake import CONTEXT, HELLO, WIRE, error_reply, model, options

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
#: 1 MiB of SSE comments, each its own empty event: the framer reads them and hands the decoder nothing.
_COMMENTS = b": \n\n" * (256 * 1024)
_MIB = 1024 * 1024


def _repeated_gzip(block: bytes, times: int, tail: bytes = b"") -> bytes:
    """A valid gzip body decoding to ``block * times + tail``, built from one compressed copy of
    ``block``: a full flush makes a deflate segment independent of what came before it, so it can be
    repeated (a bomb is cheap to build, which is the point)."""
    first = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    segment = first.compress(block) + first.flush(zlib.Z_FULL_FLUSH)
    last = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    ending = last.compress(tail) + last.flush()
    crc = 0
    for _ in range(times):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(tail, crc)
    size = (len(block) * times + len(tail)) & 0xFFFFFFFF
    return _GZIP_HEADER + segment * times + ending + struct.pack("<II", crc, size)


class _Counted:
    """What the kit fed its framer: bytes, feeds, the longest feed; ``on_feed`` runs before each."""

    def __init__(self, on_feed: Callable[[_Counted, bytes], None] | None = None) -> None:
        self.fed = 0
        self.feeds = 0
        self.longest = 0
        self.on_feed = on_feed


class _CountingFramer:
    def __init__(self, inner: Any, counted: _Counted) -> None:
        self._inner = inner
        self._counted = counted

    def feed(self, chunk: bytes) -> Sequence[ServerSentEvent]:
        counted = self._counted
        if counted.on_feed is not None:
            counted.on_feed(counted, chunk)
        counted.fed += len(chunk)
        counted.feeds += 1
        counted.longest = max(counted.longest, len(chunk))
        frames: Sequence[ServerSentEvent] = self._inner.feed(chunk)
        return frames

    def flush(self) -> Sequence[ServerSentEvent]:
        frames: Sequence[ServerSentEvent] = self._inner.flush()
        return frames


class _CountingSSE(SSEFraming):
    def __init__(self, counted: _Counted) -> None:
        self.counted = counted

    def framer(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> Any:
        return _CountingFramer(SSEFraming.framer(self, max_frame_bytes=max_frame_bytes), self.counted)


async def _run_counted(
    base_url: str, counted: _Counted, opts: StreamOptions | None = None
) -> tuple[list[str], AssistantMessage]:
    wire = replace(WIRE, framing=_CountingSSE(counted))
    stream = wire.stream_fn(model(base_url), CONTEXT, opts if opts is not None else options(max_retries=0))
    types = [event.type async for event in stream]
    return types, await stream.result()


def _coded(body: bytes, coding: str) -> Scripted:
    return Scripted(headers=[("content-type", "text/event-stream"), ("content-encoding", coding)], chunks=[(0.0, body)])


# -- what is asked for, what is decoded ----------------------------------------------------------------


async def test_the_kit_asks_for_gzip_and_deflate_only_and_a_caller_may_say_otherwise() -> None:
    async with LoopbackServer(Scripted(chunks=[(0.0, b"".join(HELLO))])) as server:
        await _run_counted(server.base_url, _Counted())
        await _run_counted(server.base_url, _Counted(), options(headers={"Accept-Encoding": "identity"}))
        assert [request.headers["accept-encoding"] for request in server.requests] == ["gzip, deflate", "identity"]


def _raw_deflate(data: bytes) -> bytes:
    return zlib.compress(data)[2:-4]  # without the zlib header and checksum


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),  # zlib-wrapped, as the standard says
        ("deflate", _raw_deflate),  # raw, as some servers send it
        ("identity", bytes),
        ("none", bytes),  # sent to keep proxies from buffering an event stream
    ],
)
async def test_each_coding_the_kit_reads_gives_the_same_reply(coding: str, encode: Callable[[bytes], bytes]) -> None:
    async with LoopbackServer(_coded(encode(b"".join(HELLO)), coding)) as server:
        types, result = await _run_counted(server.base_url, _Counted())
    assert result.stop_reason == "stop", result.error_message
    assert result.content == [TextContent(text="Hello")]
    assert types[-1] == "done"


# -- bombs ---------------------------------------------------------------------------------------------


async def test_stacked_codings_are_refused_before_a_byte_is_decoded() -> None:
    # The shape of the reported bomb: 256 MiB of zeros, gzipped twice, is a few hundred bytes.
    bomb = gzip.compress(_repeated_gzip(b"\0" * _MIB, 256))
    assert len(bomb) < 4096
    counted = _Counted()
    async with LoopbackServer(_coded(bomb, "gzip, gzip")) as server:
        _, result = await _run_counted(server.base_url, counted)
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.retryable) == ("protocol", False)
    assert result.error_message == (
        "Echo sent a body with stacked content-encodings 'gzip, gzip'; the kit decodes one of gzip or deflate, "
        "never a coding on top of another"
    )
    assert counted.fed == 0


async def test_a_coding_the_kit_never_asked_for_is_refused_naming_it() -> None:
    counted = _Counted()
    async with LoopbackServer(_coded(b"\x8b\x05\x80hello\x03", "br")) as server:
        _, result = await _run_counted(server.base_url, counted)
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert result.error_message == (
        "Echo sent a body with content-encoding 'br', which the kit does not decode (it asks for 'gzip, deflate')"
    )
    assert counted.fed == 0


async def test_one_read_that_inflates_to_megabytes_reaches_the_framer_in_bounded_pieces() -> None:
    # 8 MiB of comment lines then the reply, about 8 KB on the wire: one socket read used to become
    # one 8 MiB chunk.
    body = _repeated_gzip(_COMMENTS, 8, b"".join(HELLO))
    assert len(body) < 16 * 1024
    counted = _Counted()
    async with LoopbackServer(_coded(body, "gzip")) as server:
        _, result = await _run_counted(server.base_url, counted)
    assert result.stop_reason == "stop", result.error_message
    assert result.content == [TextContent(text="Hello")]
    assert counted.fed == 8 * _MIB + len(b"".join(HELLO))
    assert counted.longest <= PIECE_BYTES


@pytest.mark.slow
async def test_a_body_decoding_past_the_cap_is_a_protocol_error_and_memory_stays_bounded() -> None:
    # Long comment lines frame fast, so the cap, not the framer, ends this one: 16 × 64 KiB events,
    # repeated past 256 MiB, in about 280 KB on the wire.
    block = (b":" + b"a" * (PIECE_BYTES - 3) + b"\n\n") * 16
    times = MAX_DECODED_BYTES // len(block) + 2
    counted = _Counted()
    async with LoopbackServer(_coded(_repeated_gzip(block, times), "gzip")) as server:
        tracemalloc.start()
        try:
            _, result = await _run_counted(server.base_url, counted)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert result.error_message == (
        "Echo sent a gzip body that decodes to more than 256 MiB (a compression bomb, or a reply no model writes): "
        "refused"
    )
    # Everything up to the piece that would cross the cap was read; that piece was not.
    assert MAX_DECODED_BYTES - PIECE_BYTES < counted.fed <= MAX_DECODED_BYTES
    assert counted.longest <= PIECE_BYTES
    assert peak < 16 * _MIB, f"peak {peak / _MIB:.1f} MiB"


async def test_an_error_body_that_inflates_is_read_no_further_than_its_quote() -> None:
    # 64 MiB of zeros behind a 503: the status says what happened; reading stops after the 64 KiB
    # an error message may quote, so the rest is never inflated.
    body = _repeated_gzip(b"\0" * _MIB, 64)
    plan = Scripted(
        status=503,
        headers=[("content-type", "application/json"), ("content-encoding", "gzip")],
        chunks=[(0.0, body)],
    )
    async with LoopbackServer(plan) as server:
        tracemalloc.start()
        try:
            _, result = await _run_counted(server.base_url, _Counted())
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.status) == ("server", 503)
    assert peak < 8 * _MIB, f"peak {peak / _MIB:.1f} MiB"


async def test_an_error_body_in_stacked_codings_keeps_its_status_and_retry_after() -> None:
    plan = error_reply(429, "rate", "slow down", [("retry-after", "7"), ("content-encoding", "gzip, gzip")])
    async with LoopbackServer(plan) as server:
        _, result = await _run_counted(server.base_url, _Counted(), options(max_retries=0))
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.status, result.error_info.retry_after_s) == (
        "rate_limit",
        429,
        7.0,
    )


async def test_a_gzip_body_damaged_in_transit_is_still_a_retryable_network_error() -> None:
    body = bytearray(gzip.compress(b"".join(HELLO)))
    body[12] ^= 0xFF  # inside the first deflate block
    async with LoopbackServer(_coded(bytes(body), "gzip")) as server:
        _, result = await _run_counted(server.base_url, _Counted(), options(max_retries=1))
        assert len(server.requests) == 2
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.retryable) == ("network", True)
    assert (result.error_message or "").startswith("Echo sent a body that could not be decoded (gzip): ")


# -- the loop keeps turning ------------------------------------------------------------------------


def _comment_bomb() -> bytes:
    """64 MiB of comment lines in 64 KB of gzip: one socket read inflates to most of it."""
    return _repeated_gzip(_COMMENTS, 64)


async def test_an_abort_lands_between_the_pieces_of_one_inflating_read() -> None:
    controller = AbortController()

    def abort_soon(counted: _Counted, _chunk: bytes) -> None:
        if counted.feeds == 0:
            # Runs only when the loop gets control back: while the first read is still being framed.
            asyncio.get_running_loop().call_soon(controller.abort)

    counted = _Counted(abort_soon)
    async with LoopbackServer(_coded(_comment_bomb(), "gzip")) as server:
        types, result = await _run_counted(server.base_url, counted, options(signal=controller.signal))
    assert types == ["start", "error"]
    assert result.stop_reason == "aborted"
    # The abort lands at the first yield after it is scheduled: the framer saw two pieces, not the
    # 64 MiB the read inflates to.
    assert counted.fed == 2 * PIECE_BYTES


class _SlowFramer(_Counted):
    """A framer that costs 10 ms of blocking work per 64 KiB, as a real one costs CPU per byte."""

    def __init__(self) -> None:
        super().__init__(lambda _counted, chunk: time.sleep(0.01 * len(chunk) / PIECE_BYTES))


async def test_the_total_timeout_lands_while_one_read_is_worked_through() -> None:
    # Working through all 64 MiB costs 10 s of blocked loop; the deadline is 0.3 s away.
    counted = _SlowFramer()
    async with LoopbackServer(_coded(_comment_bomb(), "gzip")) as server:
        started = time.perf_counter()
        _, result = await _run_counted(server.base_url, counted, options(total_timeout=0.3, max_retries=0))
        elapsed = time.perf_counter() - started
    assert result.error_info is not None
    assert result.error_info.kind == "timeout"
    assert result.error_message == "Echo stream exceeded the total timeout of 0.3s"
    assert counted.fed < 64 * _MIB
    assert elapsed < 5, f"ended {elapsed:.1f} s after the start"


async def test_a_timed_abort_lands_while_one_read_is_worked_through() -> None:
    controller = AbortController()
    counted = _SlowFramer()
    async with LoopbackServer(_coded(_comment_bomb(), "gzip")) as server:
        asyncio.get_running_loop().call_later(0.3, controller.abort)
        started = time.perf_counter()
        _, result = await _run_counted(server.base_url, counted, options(signal=controller.signal))
        elapsed = time.perf_counter() - started
    assert result.stop_reason == "aborted"
    assert counted.fed < 64 * _MIB
    assert elapsed < 5, f"ended {elapsed:.1f} s after the start"


# -- cassettes -----------------------------------------------------------------------------------------


async def test_a_gzip_stream_recorded_through_the_kit_replays_through_it(tmp_path: Path) -> None:
    # The recorder asks for identity and stores the body decoded; a server that gzips anyway reaches the
    # kit raw (its content-encoding kept), and the replay serves the stored body identity-encoded.
    path = tmp_path / "gzip.jsonl"
    async with LoopbackServer(_coded(gzip.compress(b"".join(HELLO)), "gzip")) as server:
        async with use_cassette(path, mode="once", api="echo", model="echo-1") as http:
            _, recorded = await _run_counted(server.base_url, _Counted(), options(http_client=http))
        assert server.requests[0].headers["accept-encoding"] == "identity"
        async with use_cassette(path, match="any") as http:
            _, replayed = await _run_counted(server.base_url, _Counted(), options(http_client=http))
        assert len(server.requests) == 1
    assert load(path).interactions[0].response.body == b"".join(HELLO)
    assert recorded.content == replayed.content == [TextContent(text="Hello")]
    assert (recorded.stop_reason, replayed.stop_reason) == ("stop", "stop")
