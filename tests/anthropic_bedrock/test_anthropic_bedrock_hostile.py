"""A hostile Bedrock: every Claude-on-Bedrock stream ends with exactly one terminal, and nothing is invented.

Each body arrives through an HTTP client in the reads given; the assertions name the exact stop reason,
error kind and what was kept."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from normalize import AssistantMessage, AssistantMessageEvent, StreamOptions, validate_events
from normalize.wire import encode_message
from streamfns.anthropic_bedrock import stream_anthropic_bedrock
from tests.adapters import ANTHROPIC_BEDROCK, CONTEXT, calls, texts
from tests.anthropic_bedrock._frames import EVENT_STREAM, chunk, chunk_payload, exception

pytestmark = pytest.mark.parallel  # clock-blind: in-process transport, no sleep or timeout

START: dict[str, Any] = {
    "type": "message_start",
    "message": {
        "id": "msg_bdrk_test",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude",
        "usage": {"input_tokens": 11, "output_tokens": 1},
    },
}
TEXT_START: dict[str, Any] = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}


def delta(piece: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}


STOP_BLOCK: dict[str, Any] = {"type": "content_block_stop", "index": 0}
END: dict[str, Any] = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}
MESSAGE_STOP: dict[str, Any] = {"type": "message_stop", "amazon-bedrock-invocationMetrics": {"inputTokenCount": 11}}


async def run(
    *reads: bytes, status: int = 200, content_type: str = EVENT_STREAM
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    events, message = await ANTHROPIC_BEDROCK.run_reads(list(reads), status=status, content_type=content_type)
    assert validate_events(events) == []  # one start, one terminal, a well-formed grammar
    return events, message


def kind(message: AssistantMessage) -> str | None:
    return message.error_info.kind if message.error_info else None


async def test_a_well_formed_body_is_done() -> None:
    _, message = await run(*(chunk(e) for e in (START, TEXT_START, delta("Hi"), STOP_BLOCK, END, MESSAGE_STOP)))
    assert (message.stop_reason, texts(message), message.usage.input, message.usage.output) == ("stop", "Hi", 11, 4)


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        (b'{"bytes": "not base64 at all!"}', "whose bytes are not base64"),
        (b'{"bytes": "eyJ0eXBl"}', "Anthropic"),  # base64 of '{"type' : not JSON once decoded
        (b'{"bytes": 42}', "a chunk without its bytes"),
        (b'{"other": "eyJ9"}', "a chunk without its bytes"),
        (b"[1, 2]", "non-object"),
        (b"not json", "Amazon Bedrock"),
    ],
)
async def test_a_chunk_that_carries_no_event_is_a_protocol_error_keeping_the_text(payload: bytes, words: str) -> None:
    _, message = await run(chunk(START), chunk(TEXT_START), chunk(delta("kept")), chunk_payload(payload))
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert words in (message.error_message or "")
    assert texts(message) == "kept"
    assert calls(message) == []


async def test_an_inner_event_of_unknown_type_is_passed_over_as_the_messages_api_says() -> None:
    unknown: dict[str, Any] = {"type": "content_block_surprise", "index": 0, "payload": {"x": 1}}
    _, message = await run(
        *(chunk(e) for e in (START, TEXT_START, delta("a"), unknown, delta("b"), STOP_BLOCK, END, MESSAGE_STOP))
    )
    assert (message.stop_reason, texts(message)) == ("stop", "ab")
    assert [block.type for block in message.content] == ["text"]


async def test_a_delta_for_a_block_never_started_is_a_protocol_error_not_a_drop() -> None:
    _, message = await run(chunk(START), chunk(delta("orphan")), chunk(END), chunk(MESSAGE_STOP))
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert message.content == []


async def test_an_outer_event_of_another_type_is_a_protocol_error() -> None:
    other = encode_message({":event-type": "metadata", ":message-type": "event"}, b"{}")
    _, message = await run(chunk(START), chunk(TEXT_START), chunk(delta("x")), other)
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert "unknown type 'metadata'" in (message.error_message or "")
    assert texts(message) == "x"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("throttlingException", "rate_limit"),
        ("modelStreamErrorException", "server"),
        ("serviceUnavailableException", "overloaded"),
        ("validationException", "invalid_request"),
        ("modelTimeoutException", "timeout"),
    ],
)
async def test_an_exception_after_output_ends_with_its_kind_and_keeps_the_output(name: str, expected: str) -> None:
    _, message = await run(chunk(START), chunk(TEXT_START), chunk(delta("partial")), exception(name, "Too many!"))
    assert (message.stop_reason, kind(message)) == ("error", expected)
    assert texts(message) == "partial"
    assert message.error_info is not None
    assert message.error_info.output_started is True
    assert name in (message.error_message or "")
    assert "Too many!" in (message.error_message or "")
    assert message.usage.input == 11


async def test_an_anthropic_error_event_inside_a_chunk_is_the_vendor_error() -> None:
    error: dict[str, Any] = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    _, message = await run(chunk(START), chunk(TEXT_START), chunk(delta("so far")), chunk(error))
    assert (message.stop_reason, kind(message)) == ("error", "overloaded")
    assert texts(message) == "so far"


@pytest.mark.parametrize("cut", [1, 7, 12, 20, -4, -1])
async def test_a_truncated_frame_is_truncated_never_done(cut: int) -> None:
    last = chunk(MESSAGE_STOP)
    body = b"".join(chunk(e) for e in (START, TEXT_START, delta("Hello"), STOP_BLOCK, END)) + last[:cut]
    _, message = await run(body)
    assert (message.stop_reason, kind(message)) == ("error", "truncated")
    assert texts(message) == "Hello"


async def test_a_body_without_message_stop_is_truncated() -> None:
    _, message = await run(*(chunk(e) for e in (START, TEXT_START, delta("Hello"), STOP_BLOCK, END)))
    assert (message.stop_reason, kind(message)) == ("error", "truncated")
    assert "message_stop" in (message.error_message or "")


async def test_a_damaged_crc_is_a_protocol_error() -> None:
    frame = bytearray(chunk(delta("x")))
    frame[-1] ^= 0xFF
    _, message = await run(chunk(START), chunk(TEXT_START), bytes(frame))
    assert (message.stop_reason, kind(message)) == ("error", "protocol")


async def test_tool_input_that_is_not_strict_json_is_never_executable() -> None:
    tool: dict[str, Any] = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get", "input": {}},
    }
    bad: dict[str, Any] = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": "{'a': 1}"},
    }
    stop: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use"},
        "usage": {"output_tokens": 3},
    }
    _, message = await run(*(chunk(e) for e in (START, tool, bad, STOP_BLOCK, stop, MESSAGE_STOP)))
    assert message.stop_reason == "error"
    assert kind(message) == "protocol"


@pytest.mark.parametrize(
    ("status", "error_type", "expected", "retryable"),
    [
        (429, "ThrottlingException", "rate_limit", True),
        (429, "ModelNotReadyException", "overloaded", True),
        (400, "ValidationException", "invalid_request", False),
        (403, "AccessDeniedException", "auth", False),
        (404, "ResourceNotFoundException", "not_found", False),
        (503, "ServiceUnavailableException", "overloaded", True),
        (424, "ModelErrorException", "server", True),
    ],
)
async def test_http_errors_are_typed_by_x_amzn_error_type(
    status: int, error_type: str, expected: str, retryable: bool
) -> None:
    headers = {
        "content-type": "application/json",
        "x-amzn-errortype": f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/",
    }

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers=headers, content=json.dumps({"message": "It said no"}).encode())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        options = StreamOptions(api_key="bedrock-test-key", http_client=client, max_retries=0)
        stream = stream_anthropic_bedrock(ANTHROPIC_BEDROCK.model(), CONTEXT, options)
        events = [event async for event in stream]
        message = await stream.result()
    assert validate_events(events) == []
    assert message.error_info is not None
    assert message.error_info.status == status
    assert (message.error_info.kind, message.error_info.retryable) == (expected, retryable)
    assert f"{status} {error_type}: It said no" in (message.error_message or "")
