"""The Anthropic decoder, event by event (pure: no HTTP)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from conformance.loopback import LoopbackServer
from normalize import (
    DoneEvent,
    ErrorEvent,
    MessageBuilder,
    StopReason,
    StreamOptions,
    ThinkingContent,
    ToolCall,
    validate_events,
)
from streamfns.anthropic import AnthropicDecoder, stream_anthropic
from streamfns.anthropic.decode import REDACTED_PLACEHOLDER
from streamfns.kit import ServerSentEvent, StreamFailure
from tests.adapters import ANTHROPIC, CONTEXT


def sse(data: dict[str, Any] | str, event: str | None = None) -> ServerSentEvent:
    raw = data if isinstance(data, str) else json.dumps(data)
    name = event or (json.loads(raw).get("type", "message") if isinstance(data, dict) else "message")
    return ServerSentEvent(event=name, data=raw.encode())


START = {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 10, "output_tokens": 1}}}


def run(*events: dict[str, Any] | ServerSentEvent) -> MessageBuilder:
    builder = MessageBuilder()
    decoder = AnthropicDecoder(builder)
    for item in events:
        decoder.on_event(item if isinstance(item, ServerSentEvent) else sse(item))
    return builder


def stop(reason: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {"stop_reason": reason}
    if details is not None:
        delta["stop_details"] = details
    return {"type": "message_delta", "delta": delta, "usage": {"output_tokens": 5}}


TEXT_BLOCK = [
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
    {"type": "content_block_stop", "index": 0},
]


@pytest.mark.parametrize(
    ("raw", "mapped", "kind"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("pause_turn", "stop", None),
        ("max_tokens", "length", None),
        ("model_context_window_exceeded", "length", None),
        ("refusal", "error", "refusal"),
        ("sensitive", "error", "content_filter"),
        ("brand_new_reason", "error", "protocol"),
    ],
)
def test_stop_reason_mapping(raw: str, mapped: StopReason, kind: str | None) -> None:
    builder = run(START, *TEXT_BLOCK, stop(raw), {"type": "message_stop"})
    message = builder.message
    assert message.stop_reason == mapped
    assert message.raw_stop_reason == raw
    assert (message.error_info.kind if message.error_info else None) == kind
    assert validate_events(builder.drain()) == []


def test_refusal_uses_the_vendors_explanation() -> None:
    builder = run(
        START, stop("refusal", {"type": "refusal", "explanation": "Blocked by policy."}), {"type": "message_stop"}
    )
    assert builder.message.error_message == "Blocked by policy."


def test_tool_use_with_full_input_in_the_start_event_keeps_it() -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "pelicans", "n": 2}}
    builder = run(
        START,
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_stop", "index": 0},
        stop("tool_use"),
        {"type": "message_stop"},
    )
    call = builder.message.content[0]
    assert isinstance(call, ToolCall)
    assert call.arguments == {"q": "pelicans", "n": 2}
    assert builder.message.stop_reason == "toolUse"
    assert validate_events(builder.drain()) == []


def test_initial_thinking_text_and_redacted_thinking_are_kept() -> None:
    builder = run(
        START,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "Start. "}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "More."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig=="}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "opaque"}},
        {"type": "content_block_stop", "index": 1},
        stop("end_turn"),
        {"type": "message_stop"},
    )
    first, second = builder.message.content
    assert first == ThinkingContent(thinking="Start. More.", thinking_signature="sig==")
    assert second == ThinkingContent(thinking=REDACTED_PLACEHOLDER, thinking_signature="opaque", redacted=True)
    assert validate_events(builder.drain()) == []


def test_message_delta_overwrites_only_the_usage_fields_it_sends() -> None:
    builder = run(
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "usage": {
                    "input_tokens": 100,
                    "cache_read_input_tokens": 40,
                    "cache_creation_input_tokens": 7,
                    "cache_creation": {"ephemeral_1h_input_tokens": 3},
                    "output_tokens": 1,
                },
            },
        },
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 55, "input_tokens": None},
        },
    )
    usage = builder.message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write, usage.cache_write_1h) == (100, 55, 40, 7, 3)
    assert usage.total_tokens == 202


def test_ping_and_unknown_events_and_server_tool_blocks_are_ignored() -> None:
    builder = run(
        START,
        sse('{"type": "ping"}', "ping"),
        {"type": "brand_new_event", "payload": 1},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "server_tool_use", "id": "srv", "name": "web_search"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"query": "x"}'},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Found it."}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "citations_delta", "citation": {"url": "u"}}},
        {"type": "content_block_stop", "index": 1},
        stop("end_turn"),
        {"type": "message_stop"},
    )
    assert [block.type for block in builder.message.content] == ["text"]
    events = builder.drain()
    assert validate_events(events) == []
    assert [e.content_index for e in events if e.type == "text_start"] == [0], "server blocks take no index"  # pyright: ignore[reportAttributeAccessIssue]


def test_raw_control_characters_in_event_json_are_repaired() -> None:
    # A literal TAB inside a JSON string is invalid JSON; some compatible servers send it anyway.
    raw = (
        '{"type":"content_block_delta","index":0,'
        '"delta":{"type":"input_json_delta","partial_json":"{\\"text\\": \\"a\tb\\"}"}}'
    )
    builder = run(
        START,
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
        },
        sse(raw, "content_block_delta"),
        {"type": "content_block_stop", "index": 0},
        stop("tool_use"),
        {"type": "message_stop"},
    )
    call = builder.message.content[0]
    assert isinstance(call, ToolCall)
    assert call.arguments == {"text": "a\tb"}


def test_malformed_event_json_raises_a_protocol_failure() -> None:
    with pytest.raises(StreamFailure) as caught:
        run(START, sse('{"type":"content_block_delta", "index": 0, "delta": {', "content_block_delta"))
    assert caught.value.info.kind == "protocol"


def test_error_event_maps_the_vendor_type() -> None:
    with pytest.raises(StreamFailure) as caught:
        run(START, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    assert caught.value.info.kind == "overloaded"
    assert caught.value.info.retryable
    assert "Overloaded" in caught.value.message


def test_finishing_at_message_stop_does_not_wait_for_the_server_to_close() -> None:
    async def scenario() -> None:
        async with LoopbackServer(ANTHROPIC.scripted("llma__text_haiku45", end="stall")) as server:
            started = time.perf_counter()
            stream = stream_anthropic(
                ANTHROPIC.model(base_url=server.base_url), CONTEXT, StreamOptions(api_key="k", timeout=30)
            )
            events = [event async for event in stream]
            assert isinstance(events[-1], DoneEvent)
            assert time.perf_counter() - started < 2, "done came at message_stop, not at the idle timeout"
            assert await server.all_connections_closed()

    import asyncio

    asyncio.run(scenario())


def test_a_second_message_start_before_content_restarts_cleanly() -> None:
    builder = run(
        START,
        {**START, "message": {"id": "msg_2", "usage": {"input_tokens": 12}}},
        *TEXT_BLOCK,
        stop("end_turn"),
        {"type": "message_stop"},
    )
    assert builder.message.response_id == "msg_2"
    assert builder.message.usage.input == 12
    assert not isinstance(builder.drain()[-1], ErrorEvent)
