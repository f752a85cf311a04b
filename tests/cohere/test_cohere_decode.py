"""Cohere v2 events → the normalized message: blocks, tool plans, calls, finish reasons, usage, and the
events a server should not send."""

from __future__ import annotations

from typing import Any

import pytest

from normalize import TextContent, ThinkingContent, ToolCall, validate_events
from streamfns.cohere import TOOL_PLAN
from streamfns.kit import MAX_ERROR_TEXT
from tests.adapters import calls, texts, thinking
from tests.cohere._cohere import (
    COHERE,
    body,
    content_delta,
    content_end,
    content_start,
    event,
    message_end,
    message_start,
    run_events,
    tool_call_delta,
    tool_call_end,
    tool_call_start,
    tool_plan,
)

pytestmark = pytest.mark.parallel  # clock-blind: in-process transports only

TEXT = (message_start(), content_start(0), content_delta(0, "Hel"), content_delta(0, "lo"), content_end(0))


async def test_text_then_message_end() -> None:
    events, message = await run_events(*TEXT, message_end())
    assert validate_events(events) == []
    assert message.content == [TextContent(text="Hello")]
    assert (message.stop_reason, message.raw_stop_reason, message.response_id) == ("stop", "COMPLETE", "resp-1")


async def test_a_tool_plan_becomes_a_signed_thinking_block_that_the_first_call_ends() -> None:
    events, message = await run_events(
        message_start(),
        tool_plan("I will "),
        tool_plan("check."),
        tool_call_start(0, "weather_1", "weather"),
        tool_call_delta(0, '{"city":'),
        tool_call_delta(0, '"Paris"}'),
        tool_call_end(0),
        tool_call_start(1, "time_1", "time", arguments='{"zone":"CET"}'),
        tool_call_end(1),
        message_end("TOOL_CALL"),
    )
    assert validate_events(events) == []
    assert message.content == [
        ThinkingContent(thinking="I will check.", thinking_signature=TOOL_PLAN),
        ToolCall(id="weather_1", name="weather", arguments={"city": "Paris"}),
        ToolCall(id="time_1", name="time", arguments={"zone": "CET"}),
    ]
    assert message.stop_reason == "toolUse"
    kinds = [event.type for event in events]
    assert kinds.index("thinking_end") < kinds.index("toolcall_start")


async def test_reasoning_then_text_and_citations_leave_the_text_alone() -> None:
    citation: dict[str, Any] = {
        "type": "citation-start",
        "index": 0,
        "delta": {"message": {"citations": {"start": 0, "end": 2, "text": "Hi", "sources": [], "content_index": 1}}},
    }
    _, message = await run_events(
        message_start(),
        content_start(0, "thinking"),
        content_delta(0, "Think.", "thinking"),
        content_end(0),
        content_start(1),
        content_delta(1, "Hi there"),
        citation,
        {"type": "citation-end", "index": 0},
        {"type": "debug", "prompt": "the rendered prompt"},
        {"type": "a-future-event", "index": 9},
        content_end(1),
        message_end(),
    )
    assert message.content == [ThinkingContent(thinking="Think."), TextContent(text="Hi there")]


async def test_a_content_type_we_do_not_know_is_left_out_with_its_deltas() -> None:
    unknown = {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "image"}}}}
    _, message = await run_events(
        message_start(),
        unknown,
        content_delta(0, "ignored"),
        content_end(0),
        content_start(1),
        content_delta(1, "kept"),
        content_end(1),
        message_end(),
    )
    assert message.content == [TextContent(text="kept")]


@pytest.mark.parametrize(
    ("finish", "stop", "kind"),
    [
        ("COMPLETE", "stop", None),
        ("STOP_SEQUENCE", "stop", None),
        ("MAX_TOKENS", "length", None),
        ("ERROR", "error", "server"),
        ("TIMEOUT", "error", "timeout"),
        ("SOMETHING_NEW", "error", "protocol"),
    ],
)
async def test_finish_reasons(finish: str, stop: str, kind: str | None) -> None:
    events, message = await run_events(*TEXT, message_end(finish))
    assert validate_events(events) == []
    assert (message.stop_reason, message.raw_stop_reason) == (stop, finish)
    assert (message.error_info.kind if message.error_info else None) == kind
    assert texts(message) == "Hello"  # the partial content is kept on an error too


async def test_an_error_finish_carries_coheres_words() -> None:
    _, message = await run_events(*TEXT, message_end("ERROR", error="internal failure while streaming"))
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.code) == ("server", "ERROR")
    assert message.error_message == "Cohere stopped the response with an error: internal failure while streaming"
    assert message.error_info.output_started


async def test_tool_call_finish_without_a_call_is_a_protocol_error() -> None:
    _, message = await run_events(*TEXT, message_end("TOOL_CALL"))
    assert message.error_info is not None
    assert message.error_info.kind == "protocol"


async def test_max_tokens_inside_a_call_keeps_it_as_length_never_tool_use() -> None:
    _, message = await run_events(
        message_start(),
        tool_call_start(0, "w", "weather"),
        tool_call_delta(0, '{"city": "Par'),
        message_end("MAX_TOKENS"),
    )
    assert message.stop_reason == "length"
    assert calls(message)[0].name == "weather"


def _usage(**fields: Any) -> dict[str, Any]:
    return message_end(**fields)


@pytest.mark.parametrize(
    ("end", "expected"),
    [
        # input excludes the cache reads; output includes reasoning, which is its breakdown.
        (
            _usage(tokens={"input_tokens": 212, "output_tokens": 65, "reasoning_tokens": 20}, cached=208),
            (4, 65, 208, 20),
        ),
        (_usage(tokens={"input_tokens": 12.0, "output_tokens": 3.0}, cached=2.0), (10, 3, 2, None)),
        # More cached than input (a broken server) is capped at the input.
        (_usage(tokens={"input_tokens": 5, "output_tokens": 1}, cached=9), (0, 1, 5, None)),
        # Counts that are not whole non-negative numbers are not read.
        (_usage(tokens={"input_tokens": -3, "output_tokens": 1.5}, cached="x"), (0, 0, 0, None)),
        # billed_units stands in only when tokens is missing.
        (
            {
                "type": "message-end",
                "delta": {
                    "finish_reason": "COMPLETE",
                    "usage": {"billed_units": {"input_tokens": 7, "output_tokens": 8}},
                },
            },
            (7, 8, 0, None),
        ),
    ],
)
async def test_usage(end: dict[str, Any], expected: tuple[int, int, int, int | None]) -> None:
    _, message = await run_events(*TEXT, end)
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.reasoning) == expected
    assert usage.total_tokens == usage.input + usage.output + usage.cache_read + usage.cache_write


async def test_cost_from_the_models_rates_on_the_token_counts() -> None:
    end = message_end(tokens={"input_tokens": 1_000_000, "output_tokens": 100_000}, cached=400_000)
    _, message = await run_events(*TEXT, end)
    cost = message.usage.cost
    assert (cost.input, cost.output, cost.cache_read) == pytest.approx((1.5, 1.0, 1.0))


async def test_done_before_message_end_is_truncated_and_retryable() -> None:
    _, message = await run_events(*TEXT)
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.retryable) == ("truncated", True)
    assert message.error_message == "Cohere ended the stream ([DONE]) before message-end"


async def test_a_body_that_ends_without_message_end_is_truncated() -> None:
    _, message = await run_events(*TEXT, done=False)
    assert message.error_info is not None
    assert message.error_info.kind == "truncated"
    assert "message-end" in (message.error_message or "")


async def test_message_end_ends_the_read_whatever_follows() -> None:
    events, message = await run_events(*TEXT, message_end(), content_start(1), content_delta(1, "after"))
    assert validate_events(events) == []
    assert message.content == [TextContent(text="Hello")]


@pytest.mark.parametrize(
    ("stray", "said"),
    [
        (content_delta(3, "x"), "content-delta for index 3, which never started"),
        (content_end(3), "content-end for index 3, which never started"),
        (tool_call_delta(2, "{}"), "tool-call-delta for index 2, which never started"),
        (tool_call_end(2), "tool-call-end for index 2, which never started"),
        (content_delta(0, "thought", "thinking"), "content-delta for block 0, which is of another kind"),
        (tool_call_start(1, "id", ""), "a tool call without a name"),
        ({"type": "content-start", "delta": {}}, "a content-start without an index"),
        (message_end(None), "without a stop reason"),
        ({"type": "message-end", "delta": {"finish_reason": 7}}, "a finish_reason that is not a string"),
        ("[1, 2]", "non-object event"),
    ],
)
async def test_events_that_cannot_be_placed_are_protocol_errors(stray: dict[str, Any] | str, said: str) -> None:
    head = (message_start(), content_start(0), content_delta(0, "Hi"))
    events, message = await run_events(*head, stray, content_end(0), message_end())
    assert validate_events(events) == []
    assert message.error_info is not None
    assert message.error_info.kind == "protocol", message.error_message
    assert said in (message.error_message or "")


async def test_an_error_object_in_the_stream_ends_it_with_the_kind_its_words_say() -> None:
    error = {"id": "x", "message": "too many tokens: size limit exceeded by 10 tokens."}
    _, message = await run_events(message_start(), error)
    assert message.error_info is not None
    assert message.error_info.kind == "context_overflow"
    assert message.error_message == "Cohere stream error: too many tokens: size limit exceeded by 10 tokens."
    typed = {"type": "error", "error_type": "TOO_MANY_TOKENS", "message": "too many tokens: max tokens must be <= 4000"}
    _, capped = await run_events(message_start(), typed)
    assert capped.error_info is not None
    assert (capped.error_info.kind, capped.error_info.code) == ("invalid_request", "TOO_MANY_TOKENS")


async def test_an_error_event_named_by_its_event_line() -> None:
    reads = [event(message_start()), event({"message": "the service is overloaded"}, "error")]
    _, message = await COHERE.run_reads(reads)
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_message) == (
        "server",
        "Cohere stream error: the service is overloaded",
    )


async def test_a_payload_without_a_type_is_named_by_its_event_line() -> None:
    start = {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}}
    untyped = {"index": 0, "delta": {"message": {"content": {"text": "Hi"}}}}
    reads = [event(message_start()), event(start), event(untyped, "content-delta"), event(content_end(0))]
    _, message = await COHERE.run_reads([*reads, event(message_end())])
    assert message.content == [TextContent(text="Hi")]


async def test_a_message_end_with_only_an_error_is_a_server_error() -> None:
    _, message = await run_events(*TEXT, {"type": "message-end", "delta": {"error": "upstream died"}})
    assert message.error_info is not None
    assert message.error_info.kind == "server"
    assert message.error_message == "Cohere stream error: upstream died"


async def test_a_second_message_start_after_content_is_a_protocol_error() -> None:
    _, message = await run_events(*TEXT, message_start("resp-2"), message_end())
    assert message.error_info is not None
    assert message.error_info.kind == "protocol"


async def test_byte_by_byte_reads_give_the_same_message() -> None:
    whole = body(
        message_start(),
        tool_plan("Plan: "),
        tool_plan("naïve 日本"),
        tool_call_start(0, "w", "weather"),
        tool_call_delta(0, '{"q": "\\u00e9\\"x\\""}'),
        tool_call_end(0),
        message_end("TOOL_CALL", tokens={"input_tokens": 9, "output_tokens": 4}),
    )
    _, at_once = await COHERE.run_reads([whole])
    events, by_byte = await COHERE.run_reads([whole[i : i + 1] for i in range(len(whole))])
    assert validate_events(events) == []
    assert by_byte.content == at_once.content
    assert thinking(by_byte) == "Plan: naïve 日本"
    assert calls(by_byte)[0].arguments == {"q": 'é"x"'}


def _with_arguments(event: dict[str, Any], arguments: object) -> dict[str, Any]:
    event["delta"]["message"]["tool_calls"]["function"]["arguments"] = arguments
    return event


def _with_content(event: dict[str, Any], content: object) -> dict[str, Any]:
    event["delta"]["message"]["content"] = content
    return event


@pytest.mark.parametrize(
    ("events", "said"),
    [
        # Arguments Cohere sent as anything but a string are never read into an executable call.
        (
            (_with_arguments(tool_call_start(0, "c1", "get_weather"), {"city": "Paris"}), tool_call_end(0)),
            "a tool-call-start whose 'arguments' is not a string",
        ),
        (
            (
                tool_call_start(0, "c1", "get_weather"),
                _with_arguments(tool_call_delta(0, ""), {"city": "Paris"}),
                tool_call_end(0),
            ),
            "a tool-call-delta whose 'arguments' is not a string",
        ),
        (
            (tool_call_start(0, "c1", "f"), _with_arguments(tool_call_delta(0, ""), 5), tool_call_end(0)),
            "a tool-call-delta whose 'arguments' is not a string: 5",
        ),
        (
            (
                tool_call_start(0, "c1", "f"),
                {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": ["{}"]}}},
                tool_call_end(0),
            ),
            "a tool-call-delta whose delta.message.tool_calls is not an object",
        ),
        (
            (tool_plan("I will "), {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": 7}}}),
            "a tool-plan-delta whose 'tool_plan' is not a string: 7",
        ),
        # An index names one call: nothing for it after its end, and no second start.
        (
            (
                tool_call_start(0, "a", "f", "{}"),
                tool_call_end(0),
                tool_call_start(0, "b", "g", "{}"),
                tool_call_end(0),
            ),
            "a second tool-call-start for index 0",
        ),
        (
            (tool_call_start(0, "a", "f", "{}"), tool_call_end(0), tool_call_end(0)),
            "a tool-call-end for index 0, which had already ended",
        ),
    ],
)
async def test_tool_events_that_cannot_be_read_are_protocol_errors_never_tool_use(
    events: tuple[dict[str, Any], ...], said: str
) -> None:
    emitted, message = await run_events(message_start(), *events, message_end("TOOL_CALL"))
    assert validate_events(emitted) == []
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.retryable) == ("protocol", False), message.error_message
    assert said in (message.error_message or "")


@pytest.mark.parametrize(
    ("stray", "said"),
    [
        (_with_content(content_delta(0, ""), {"text": 123}), "a content-delta whose 'text' is not a string: 123"),
        ({"type": "content-delta", "index": 0, "delta": "garbage"}, "a content-delta whose delta is not an object"),
        (_with_content(content_delta(0, ""), "Hi"), "a content-delta whose delta.message.content is not an object"),
        # After its end an index is closed: a late delta (or end) must not open a new text block.
        (content_end(0), "a content-delta for index 0, which had already ended"),
    ],
)
async def test_content_deltas_that_cannot_be_placed_are_protocol_errors(stray: dict[str, Any], said: str) -> None:
    events, message = await run_events(
        message_start(), content_start(0), content_delta(0, "Hi "), stray, content_delta(0, "there"), message_end()
    )
    assert validate_events(events) == []
    assert message.error_info is not None
    assert message.error_info.kind == "protocol", message.error_message
    assert said in (message.error_message or "")
    assert texts(message) == "Hi "  # what was placed is kept; nothing after the bad event is


@pytest.mark.parametrize(
    ("events", "said"),
    [
        ((content_start(0), content_end(0), content_end(0)), "a content-end for index 0, which had already ended"),
        (
            (content_start(0), content_end(0), content_start(0), content_delta(0, "b")),
            "a second content-start for index 0",
        ),
        (
            (_with_content(content_start(0), {"type": "text", "text": 5}),),
            "a content-start whose 'text' is not a string",
        ),
    ],
)
async def test_content_indexes_name_one_block(events: tuple[dict[str, Any], ...], said: str) -> None:
    _, message = await run_events(message_start(), *events, message_end())
    assert message.error_info is not None
    assert message.error_info.kind == "protocol", message.error_message
    assert said in (message.error_message or "")


async def test_a_delta_without_its_piece_adds_nothing() -> None:
    # Cohere's schema makes every piece optional: an absent or null one is an empty delta, not an error.
    empty = {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": None}}}}
    no_fragment: dict[str, Any] = {
        "type": "tool-call-delta",
        "index": 1,
        "delta": {"message": {"tool_calls": {"function": {}}}},
    }
    events, message = await run_events(
        message_start(),
        content_start(0),
        content_delta(0, "Hi"),
        empty,
        {"type": "content-delta", "index": 0, "delta": {}},
        content_end(0),
        {"type": "tool-plan-delta", "delta": {"message": {}}},
        _with_arguments(tool_call_start(1, "c1", "f"), None),
        no_fragment,
        tool_call_delta(1, "{}"),
        tool_call_end(1),
        message_end("TOOL_CALL"),
    )
    assert validate_events(events) == []
    assert message.stop_reason == "toolUse", message.error_message
    assert message.content == [TextContent(text="Hi"), ToolCall(id="c1", name="f", arguments={})]


async def test_a_plain_text_error_event_keeps_coheres_words() -> None:
    reads = [event(message_start()), b"event: error\ndata: upstream overloaded, please retry\n\n"]
    _, message = await COHERE.run_reads(reads)
    assert message.error_info is not None
    assert message.error_info.kind == "server"
    assert message.error_message == "Cohere stream error: upstream overloaded, please retry"


async def test_a_plain_text_error_event_is_cut_and_redacted_by_the_kit() -> None:
    words = "invalid token test-key sent " + "x" * 100_000  # the harness's key is "test-key"
    reads = [event(message_start()), f"event: error\ndata: {words}\n\n".encode()]
    _, message = await COHERE.run_reads(reads)
    text = message.error_message or ""
    assert text.startswith("Cohere stream error: invalid token [redacted] sent xxx")
    assert "test-key" not in text
    assert len(text.encode()) < MAX_ERROR_TEXT + 100  # cut, with the cut marked


async def test_a_json_error_event_without_coheres_fields_keeps_its_text() -> None:
    reads = [event(message_start()), event('{"detail": "gateway closed the stream"}', "error")]
    _, message = await COHERE.run_reads(reads)
    assert message.error_info is not None
    assert message.error_info.kind == "server"
    assert "gateway closed the stream" in (message.error_message or "")


async def test_a_non_streaming_response_sent_as_an_event_is_a_protocol_error_not_retried() -> None:
    response = {
        "id": "x",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
        "finish_reason": "COMPLETE",
        "usage": {"tokens": {"input_tokens": 3, "output_tokens": 2}},
    }
    _, message = await run_events(response)
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.retryable) == ("protocol", False)
    assert "non-streaming chat response" in (message.error_message or "")
