"""A hostile event-stream server: every stream ends with exactly one terminal, nothing is invented, and
what came before the damage is kept. Bodies are sent as network reads through an HTTP client."""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

import pytest

from normalize import AssistantMessage, AssistantMessageEvent, validate_events
from normalize.wire import encode_message
from tests.adapters import BEDROCK, calls, texts

pytestmark = pytest.mark.parallel  # clock-blind: in-process transport, no sleep or timeout

EVENTSTREAM = "application/vnd.amazon.eventstream"


def ev(event: str, **payload: Any) -> bytes:
    headers = {":event-type": event, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, json.dumps({**payload, "p": "abcdefgh"}).encode())


def exception(kind: str, message: str) -> bytes:
    headers = {":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"}
    return encode_message(headers, json.dumps({"message": message}).encode())


START = ev("messageStart", role="assistant")


def text(index: int, piece: str) -> bytes:
    return ev("contentBlockDelta", contentBlockIndex=index, delta={"text": piece})


def stop(index: int) -> bytes:
    return ev("contentBlockStop", contentBlockIndex=index)


def end(reason: str = "end_turn") -> bytes:
    return ev("messageStop", stopReason=reason) + ev("metadata", usage={"inputTokens": 5, "outputTokens": 3})


async def run(*reads: bytes) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    events, message = await BEDROCK.run_reads(list(reads), content_type=EVENTSTREAM)
    assert validate_events(events) == []  # one start, one terminal, a well-formed grammar
    return events, message


def kind(message: AssistantMessage) -> str | None:
    return message.error_info.kind if message.error_info else None


async def test_a_well_formed_body_succeeds() -> None:
    _, message = await run(START, text(0, "Hi"), text(0, " there"), stop(0), end())
    assert (message.stop_reason, texts(message), message.usage.input, message.usage.output) == (
        "stop",
        "Hi there",
        5,
        3,
    )


async def test_a_bad_message_crc_is_a_protocol_error_keeping_what_came_before() -> None:
    bad = bytearray(text(0, " world"))
    bad[-6] ^= 0x01  # a payload byte: the message CRC no longer matches
    _, message = await run(START, text(0, "Hello"), bytes(bad), stop(0), end())
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert texts(message) == "Hello"


async def test_a_2_gb_declared_length_is_refused_from_its_prelude() -> None:
    prelude = struct.pack(">II", 2**31, 0)
    huge = prelude + struct.pack(">I", zlib.crc32(prelude)) + b"\x00" * 64
    _, message = await run(START, text(0, "Hi"), huge)
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert texts(message) == "Hi"


async def test_a_header_of_unknown_type_is_a_protocol_error() -> None:
    name = b":event-type"
    headers = bytes([len(name)]) + name + bytes([42]) + b"\x00\x01x"  # value type 42 does not exist
    payload = b'{"contentBlockIndex":0,"delta":{"text":"!"}}'
    total = 16 + len(headers) + len(payload)
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    framed = prelude + headers + payload
    framed += struct.pack(">I", zlib.crc32(framed))
    _, message = await run(START, text(0, "Hi"), framed, stop(0), end())
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert texts(message) == "Hi"


async def test_an_exception_after_output_ends_typed_and_is_not_retried() -> None:
    _, message = await run(START, text(0, "Partial"), exception("throttlingException", "Too many tokens"))
    assert (message.stop_reason, kind(message)) == ("error", "rate_limit")
    assert message.error_info is not None
    assert message.error_info.output_started is True
    assert message.error_message == "Amazon Bedrock stream error (throttlingException): Too many tokens"
    assert texts(message) == "Partial"


async def test_a_model_stream_error_is_a_server_error() -> None:
    _, message = await run(START, exception("modelStreamErrorException", "The model crashed"))
    assert (message.stop_reason, kind(message)) == ("error", "server")


async def test_tool_input_for_a_block_never_started_is_not_a_tool_call() -> None:
    delta = ev("contentBlockDelta", contentBlockIndex=1, delta={"toolUse": {"input": '{"x": 1}'}})
    _, message = await run(START, delta, stop(1), end("tool_use"))
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert calls(message) == []


async def test_tool_arguments_that_do_not_parse_are_never_executable() -> None:
    begin = ev("contentBlockStart", contentBlockIndex=0, start={"toolUse": {"toolUseId": "t1", "name": "rm"}})
    half = ev("contentBlockDelta", contentBlockIndex=0, delta={"toolUse": {"input": '{"path": "/'}})
    _, message = await run(START, begin, half, stop(0), end("tool_use"))
    assert message.stop_reason == "error"
    assert kind(message) in ("protocol", "truncated")


async def test_text_after_its_block_stopped_is_a_protocol_error() -> None:
    _, message = await run(START, text(0, "a"), stop(0), text(0, "b"), end())
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert texts(message) == "a"


async def test_content_after_the_metadata_is_a_protocol_error() -> None:
    _, message = await run(START, text(0, "a"), stop(0), end(), text(1, "smuggled"))
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert "smuggled" not in texts(message)


async def test_a_body_cut_between_stop_and_metadata_is_truncated() -> None:
    _, message = await run(START, text(0, "a"), stop(0), ev("messageStop", stopReason="end_turn"))
    assert (message.stop_reason, kind(message)) == ("error", "truncated")
    assert message.error_message == "Amazon Bedrock stream ended after messageStop, before its metadata"


async def test_a_message_from_another_role_is_a_protocol_error() -> None:
    _, message = await run(ev("messageStart", role="user"), text(0, "a"), stop(0), end())
    assert (message.stop_reason, kind(message)) == ("error", "protocol")


async def test_a_negative_token_count_is_a_protocol_error() -> None:
    body = ev("messageStop", stopReason="end_turn") + ev("metadata", usage={"inputTokens": -1, "outputTokens": 3})
    _, message = await run(START, text(0, "a"), stop(0), body)
    assert (message.stop_reason, kind(message)) == ("error", "protocol")


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("guardrail_intervened", "content_filter"),
        ("content_filtered", "content_filter"),
        ("model_context_window_exceeded", "context_overflow"),
        ("some_new_reason", "protocol"),
    ],
)
async def test_stop_reasons_that_are_errors(reason: str, expected: str) -> None:
    _, message = await run(START, text(0, "a"), stop(0), end(reason))
    assert (message.stop_reason, kind(message), message.raw_stop_reason) == ("error", expected, reason)
    assert texts(message) == "a"
