"""A hostile Vertex AI: every Claude-on-Vertex stream ends with exactly one terminal, and nothing is invented."""

from __future__ import annotations

import json
from typing import Any

import pytest

from normalize import AssistantMessage, validate_events
from tests.adapters import ANTHROPIC_VERTEX, calls, texts

pytestmark = pytest.mark.parallel  # clock-blind: in-process transport, no sleep or timeout


def sse(event: dict[str, Any], name: str | None = None) -> bytes:
    # Vertex pads its JSON before the closing brace: so do these.
    data = json.dumps(event)[:-1] + "     }"
    return f"event: {name or event['type']}\ndata: {data}\n\n".encode()


START = sse(
    {"type": "message_start", "message": {"id": "msg_vrtx_1", "usage": {"input_tokens": 9, "output_tokens": 1}}}
)
TEXT = sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
PING = b'event: ping\ndata: {"type": "ping"}\n\n'


def delta(piece: str) -> bytes:
    return sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})


END = sse({"type": "content_block_stop", "index": 0}) + sse(
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}
)
STOP = sse({"type": "message_stop"})


async def run(*reads: bytes) -> AssistantMessage:
    events, message = await ANTHROPIC_VERTEX.run_reads(list(reads))
    assert validate_events(events) == []
    return message


def kind(message: AssistantMessage) -> str | None:
    return message.error_info.kind if message.error_info else None


async def test_pings_anywhere_change_nothing() -> None:
    message = await run(PING, START, PING, TEXT, delta("a"), PING, delta("b"), END, PING, STOP)
    assert (message.stop_reason, texts(message), message.usage.output) == ("stop", "ab", 3)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"type": "overloaded_error", "message": "Overloaded"}, "overloaded"),
        ({"type": "api_error", "message": "Internal server error"}, "server"),
        ({"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Quota exceeded"}, "rate_limit"),
    ],
)
async def test_an_error_event_after_output_keeps_the_output(error: dict[str, Any], expected: str) -> None:
    message = await run(START, TEXT, delta("partial"), sse({"type": "error", "error": error}))
    assert (message.stop_reason, kind(message)) == ("error", expected)
    assert texts(message) == "partial"
    assert error["message"] in (message.error_message or "")


async def test_a_body_cut_before_message_stop_is_truncated_never_done() -> None:
    body = START + TEXT + delta("Hello") + END + STOP
    for cut in range(1, len(body), 11):
        message = await run(body[:cut])
        assert (message.stop_reason, kind(message)) == ("error", "truncated"), cut
        assert calls(message) == []


async def test_padded_json_that_is_not_json_is_a_protocol_error() -> None:
    message = await run(
        START, TEXT, delta("x"), b'event: content_block_delta\ndata: {"type": "content_block_delta",  }\n\n'
    )
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert texts(message) == "x"
