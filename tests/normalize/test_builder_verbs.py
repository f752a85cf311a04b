"""The builder verbs a decoder uses instead of editing ``builder.message``: ``response``, ``late_signature``,
``price_multiplier``, and the usage contract the builder keeps (reasoning within output)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from normalize import (
    ErrorInfo,
    MessageBuilder,
    Model,
    ModelCost,
    TextContent,
    TextDeltaEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ToolCall,
    ToolCallDeltaEvent,
    validate_events,
)

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout

MODEL = Model(id="m", api="x", provider="p", cost=ModelCost(input=2.0, output=10.0, cache_read=0.5, cache_write=4.0))


def test_response_records_each_given_value_and_leaves_the_others() -> None:
    builder = MessageBuilder(MODEL)
    builder.response(id="resp_1")
    builder.response(model="m-2026-01-01", service_tier="flex")
    builder.response(id="", model=None)  # empty or missing: nothing changes
    message = builder.message
    assert (message.response_id, message.response_model, message.service_tier) == ("resp_1", "m-2026-01-01", "flex")
    assert builder.response_id == "resp_1"
    assert builder.events == []  # it emits nothing


def test_a_retry_forgets_the_response_values_and_the_multiplier() -> None:
    builder = MessageBuilder(MODEL)
    builder.response(id="resp_1", service_tier="priority")
    builder.price_multiplier(2.0)
    assert builder.reset_for_retry()
    builder.usage(input=1_000_000)
    assert builder.response_id is None
    assert builder.message.service_tier is None
    assert builder.message.usage.cost.input == 2.0  # standard price again


def test_late_signature_reaches_a_block_that_already_ended() -> None:
    builder = MessageBuilder(MODEL)
    builder.thinking_start("r", "plan")
    builder.block_end("r")
    builder.text_start("t", "answer")
    builder.late_signature("r", '{"encrypted_content":"abc"}')
    builder.late_signature("nobody", "ignored")
    builder.stop("completed", "stop")
    builder.finish()
    events = builder.drain()
    assert validate_events(events) == []
    thinking = builder.message.content[0]
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking_signature == '{"encrypted_content":"abc"}'
    assert builder.message.content[1].type == "text"


def test_late_signature_on_an_open_block_is_a_block_signature_and_after_the_end_nothing() -> None:
    builder = MessageBuilder(MODEL)
    builder.text_start("t", "hi")
    builder.late_signature("t", "sig-open")
    builder.block_end("t")
    builder.stop("end", "stop")
    builder.finish()
    builder.late_signature("t", "sig-after-terminal")
    text = builder.message.content[0]
    assert isinstance(text, TextContent)
    assert text.text_signature == "sig-open"


def test_price_multiplier_scales_every_cost_and_never_compounds() -> None:
    builder = MessageBuilder(MODEL)
    builder.usage(input=1_000_000, output=1_000_000, cache_read=1_000_000, cache_write=1_000_000)
    standard = builder.message.usage.cost.total
    assert standard == 2.0 + 10.0 + 0.5 + 4.0
    builder.price_multiplier(0.5)
    builder.price_multiplier(0.5)  # replaces, does not multiply again
    cost = builder.message.usage.cost
    assert (cost.input, cost.output, cost.cache_read, cost.cache_write, cost.total) == (1.0, 5.0, 0.25, 2.0, 8.25)
    builder.usage(output=2_000_000)  # a later usage step is priced at the tier too
    assert builder.message.usage.cost.output == 10.0
    assert builder.message.usage.cost.total == 1.0 + 10.0 + 0.25 + 2.0


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_a_price_multiplier_that_is_not_a_price_is_a_decoder_bug(bad: float) -> None:
    builder = MessageBuilder(MODEL)
    with pytest.raises(ValueError, match="price multiplier"):
        builder.price_multiplier(bad)


def test_reasoning_never_exceeds_output_whichever_step_said_it() -> None:
    builder = MessageBuilder(MODEL)
    builder.usage(output=50, reasoning=80)  # a broken server: more reasoning than output
    assert (builder.message.usage.output, builder.message.usage.reasoning) == (50, 50)
    builder.usage(output=100, reasoning=40)
    builder.usage(output=30)  # a later chunk lowers the output without restating the reasoning
    assert (builder.message.usage.output, builder.message.usage.reasoning) == (30, 30)
    builder.usage(output=60)
    assert builder.message.usage.reasoning == 30  # never raised back: only lowered to fit


# -- tool_call: a call that arrived whole ---------------------------------------------------------------


def test_a_whole_call_is_a_start_one_delta_and_an_end_and_makes_the_message_tool_use() -> None:
    builder = MessageBuilder(MODEL)
    arguments = {"path": "a\tb", "n": [1, 2.5, None], "nested": {"ok": True}}
    builder.tool_call("c0", "call_1", "edit", arguments)
    arguments["path"] = "changed by the decoder afterwards"
    builder.tool_call("c1", "", "list", {})
    builder.stop("stop", "stop")
    builder.finish()
    events = builder.drain()
    assert validate_events(events) == []
    assert [e.type for e in events] == [
        "start",
        *("toolcall_start", "toolcall_delta", "toolcall_end") * 2,
        "done",
    ]
    deltas = [e.delta for e in events if e.type == "toolcall_delta"]  # pyright: ignore[reportAttributeAccessIssue]
    assert deltas == ['{"path":"a\\tb","n":[1,2.5,null],"nested":{"ok":true}}', "{}"]
    first, second = builder.message.content
    assert isinstance(first, ToolCall)
    assert isinstance(second, ToolCall)
    assert first.arguments["path"] == "a\tb", "the message keeps its own copy of the arguments"
    assert first.id == "call_1"
    assert second.id.startswith("call_gen_"), "an empty id is derived, never empty"
    assert builder.message.stop_reason == "toolUse"


@pytest.mark.parametrize(
    "bad", [[1, 2], "rm -rf /", None, {"x": math.nan}, {"x": [math.inf]}, {"x": object()}, {"x": "lone \ud800"}]
)
def test_a_whole_call_whose_arguments_are_not_json_never_enters_the_message(bad: object) -> None:
    builder = MessageBuilder(MODEL)
    builder.text_delta("t", "before")
    builder.tool_call("c0", "call_1", "shell", bad)
    builder.tool_call("c1", "call_2", "shell", {"after": "the failure"})
    assert builder.finished
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"
    assert "'shell'" in (builder.message.error_message or "")
    assert not any(isinstance(block, ToolCall) for block in builder.message.content)
    events = builder.drain()
    assert validate_events(events) == []
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "error"]


def test_a_whole_call_under_the_key_of_an_open_block_is_a_protocol_error() -> None:
    builder = MessageBuilder(MODEL)
    builder.tool_call_start("k", "call_1", "streamed")
    builder.tool_call("k", "call_2", "whole", {"a": 1})
    assert builder.finished
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"
    assert validate_events(builder.drain()) == []


def test_a_repeated_whole_call_id_is_told_apart() -> None:
    builder = MessageBuilder(MODEL)
    builder.tool_call(0, "call_1", "a", {})
    builder.tool_call(1, "call_1", "b", {})
    ids = [block.id for block in builder.message.content if isinstance(block, ToolCall)]
    assert ids == ["call_1", "call_1_2"]


def test_a_whole_call_holds_exactly_the_json_its_delta_sends_whatever_the_decoder_handed_over() -> None:
    builder = MessageBuilder(MODEL)
    builder.tool_call(0, "call_1", "f", {1: ("a", "b"), "n": {2: None}})
    events = builder.drain()
    delta = next(e.delta for e in events if e.type == "toolcall_delta")  # pyright: ignore[reportAttributeAccessIssue]
    call = builder.message.content[0]
    assert isinstance(call, ToolCall)
    assert call.arguments == {"1": ["a", "b"], "n": {"2": None}}
    assert call.arguments == json.loads(delta)


def test_deltas_are_in_the_message_whenever_it_can_be_seen() -> None:
    # Deltas are kept as pieces and joined at drain() (once per network read), or when the message,
    # streamed() or an end reads the text: whoever looks sees every delta sent so far.
    builder = MessageBuilder(MODEL)
    builder.text_delta("t", "Hel")
    builder.text_delta("t", "lo")
    assert builder.streamed("t") == "Hello"
    builder.text_delta("t", ", ")
    assert builder.message.content[0] == TextContent(text="Hello, ")
    builder.thinking_start("r")
    builder.thinking_delta("r", "hm")
    builder.text_delta("t", "world")
    events = builder.drain()
    partial = events[-1].partial
    assert [getattr(block, "text", getattr(block, "thinking", None)) for block in partial.content] == [
        "Hello, world",
        "hm",
    ]
    builder.thinking_delta("r", "m")
    builder.block_end("r")
    assert builder.events[-1].type == "thinking_end"
    assert builder.events[-1].content == "hmm"
    builder.text_delta("t", "!")
    builder.fail(ErrorInfo.of("network"), "cut")  # open blocks stay open, with everything they got
    rest = builder.drain()
    assert rest[-1].type == "error"
    assert rest[-1].partial.content[0] == TextContent(text="Hello, world!")
    assert validate_events([*events, *rest]) == []


def test_a_long_reply_accumulates_every_piece_in_order() -> None:
    builder = MessageBuilder(MODEL)
    pieces = [f"{i:05d}é " for i in range(60_000)]
    for n, piece in enumerate(pieces):
        builder.text_delta(0, piece)
        if n % 97 == 0:
            builder.drain()  # reads of every size, as the kit drains once per read
    builder.block_end(0)
    assert builder.events[-1].content == "".join(pieces)  # pyright: ignore
    assert builder.message.content[0] == TextContent(text="".join(pieces))


def test_delta_events_are_whole_events() -> None:
    """The delta events the builder makes field by field (its hottest path, not through the class)
    have every field set and equal the events their classes make."""
    builder = MessageBuilder(MODEL)
    builder.text_delta("t", "Hel")
    builder.thinking_delta("r", "hm")
    builder.tool_call_start("c", "call_1", "f")
    builder.tool_call_delta("c", '{"a":')
    deltas = [
        event
        for event in builder.drain()
        if isinstance(event, TextDeltaEvent | ThinkingDeltaEvent | ToolCallDeltaEvent)
    ]
    assert [event.type for event in deltas] == ["text_delta", "thinking_delta", "toolcall_delta"]
    for event in deltas:
        made = type(event)(event.content_index, event.delta, event.partial)
        assert event == made
        # A field the builder forgot would be an unset slot: reading it raises AttributeError.
        assert [getattr(event, f.name) for f in dataclasses.fields(event)] == [
            getattr(made, f.name) for f in dataclasses.fields(made)
        ]
