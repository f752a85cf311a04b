"""``StreamOptions.progress_timeout``: keep-alives cannot hold a stream open.

Before it, nothing bounded a stream under the default options whose server sends keep-alive comments
forever: ``total_timeout`` is off by default and each comment restarts the idle timer. The progress
clock restarts only when the consumer is handed an event.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import StreamOptions, TextContent
from normalize.context import DEFAULT_PROGRESS_TIMEOUT_S
from tests.kit._fake import CONTEXT, HELLO, WIRE, model, options, reply, run, sse, types

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

#: Far longer than any bound a test sets: a stream still open then is held open by the keep-alives.
_FOREVER_S = 60.0


def _keepalives(
    frame: bytes, every_s: float = 0.05, then: list[bytes] | None = None, for_s: float = _FOREVER_S
) -> Scripted:
    """``frame`` every ``every_s`` seconds for ``for_s`` seconds, then ``then`` (default: nothing more)."""
    count = int(for_s / every_s)
    chunks = [(every_s, frame)] * count + [(0.0, chunk) for chunk in then or []]
    return Scripted(chunks=chunks, end="eof" if then else "stall")


def _message(seconds: float) -> str:
    return (
        f"Echo stream sent no content for {seconds:g}s (the progress_timeout; keep-alives and frames without "
        "content do not extend it)"
    )


def test_the_default_is_five_minutes() -> None:
    assert DEFAULT_PROGRESS_TIMEOUT_S == 300.0
    assert StreamOptions().progress_timeout == DEFAULT_PROGRESS_TIMEOUT_S


@pytest.mark.parametrize(
    "frame",
    [
        b": keep-alive\n\n",  # an SSE comment: the framer drops it
        sse({"type": "ping"}),  # a frame the decoder reads and turns into nothing
    ],
    ids=["comment", "ping-frame"],
)
async def test_keepalives_alone_end_the_stream_as_a_timeout_naming_the_bound(frame: bytes) -> None:
    async with LoopbackServer(_keepalives(frame)) as server:
        async with asyncio.timeout(_FOREVER_S / 2):
            events, result = await run(server.base_url, options(progress_timeout=0.5, max_retries=0))
        assert types(events) == ["start", "error"]
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.retryable) == ("timeout", True)
        assert result.error_message == _message(0.5)
        assert await server.all_connections_closed()


@pytest.mark.slow
async def test_a_stall_before_any_output_is_retried_like_an_idle_timeout() -> None:
    async with LoopbackServer(_keepalives(b": keep-alive\n\n")) as server:
        async with asyncio.timeout(_FOREVER_S / 2):
            _, result = await run(server.base_url, options(progress_timeout=0.3, max_retries=1))
        assert len(server.requests) == 2
        assert result.error_message == _message(0.3)


async def test_a_stall_after_output_keeps_the_partial_reply_and_is_not_retried() -> None:
    async with LoopbackServer(Scripted(chunks=[(0.0, HELLO[0]), *_keepalives(b":\n\n").chunks], end="stall")) as server:
        async with asyncio.timeout(_FOREVER_S / 2):
            _, result = await run(server.base_url, options(progress_timeout=0.3))
        assert len(server.requests) == 1
        assert result.content == [TextContent(text="Hel")]
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.output_started) == ("timeout", True)
        assert result.error_message == _message(0.3)


@pytest.mark.slow
async def test_content_keeps_the_clock_from_running_out() -> None:
    # Ten deltas 0.1 s apart under a 1 s bound: each restarts the clock.
    deltas = [sse({"type": "text", "text": str(n)}) for n in range(10)]
    ending = [sse({"type": "stop", "reason": "end"}), sse("[END]")]
    async with LoopbackServer(reply(*deltas, *ending, delay_s=0.1)) as server:
        _, result = await run(server.base_url, options(progress_timeout=1.0))
    assert result.stop_reason == "stop", result.error_message
    assert result.content == [TextContent(text="0123456789")]


@pytest.mark.slow
async def test_the_consumers_own_time_does_not_count() -> None:
    async with LoopbackServer(reply(*HELLO, delay_s=0.05)) as server:
        stream_options = options(progress_timeout=0.3)
        stream = WIRE.stream_fn(model(server.base_url), CONTEXT, stream_options)
        async for event in stream:
            if event.type == "text_start":
                await asyncio.sleep(1.0)  # the consumer holds the stream three times the bound
        result = await stream.result()
    assert result.stop_reason == "stop", result.error_message
    assert result.content == [TextContent(text="Hello")]


@pytest.mark.slow
async def test_none_turns_the_clock_off() -> None:
    plan = _keepalives(b": keep-alive\n\n", every_s=0.05, for_s=1.0, then=HELLO)
    async with LoopbackServer(plan) as server:
        _, bounded = await run(server.base_url, options(progress_timeout=0.3, max_retries=0))
        _, unbounded = await run(server.base_url, options(progress_timeout=None, max_retries=0))
    assert bounded.error_message == _message(0.3)
    assert unbounded.stop_reason == "stop", unbounded.error_message
    assert unbounded.content == [TextContent(text="Hello")]


@pytest.mark.parametrize("value", [0, -1.0, math.nan, math.inf, "300"])
async def test_a_progress_timeout_that_is_not_a_positive_number_is_refused_before_sending(value: object) -> None:
    async with LoopbackServer(reply(*HELLO)) as server:
        _, result = await run(server.base_url, options(progress_timeout=value))
        assert server.requests == []
    assert result.error_info is not None
    assert result.error_info.kind == "config"
    assert result.error_message == (
        f"Echo request not sent: options.progress_timeout must be a positive number of seconds, not {value!r}"
    )
