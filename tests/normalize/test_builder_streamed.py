"""``MessageBuilder.streamed``: what an open block holds so far, for decoders that reconcile a
vendor's authoritative final payload with what streamed."""

from __future__ import annotations

from normalize import MessageBuilder, TextContent, validate_events


def test_streamed_returns_the_open_blocks_content_and_none_once_it_ended() -> None:
    builder = MessageBuilder()
    builder.start()
    assert builder.streamed("text") is None
    builder.text_delta("text", "Hel")
    builder.text_delta("text", "lo")
    builder.thinking_delta("think", "Hmm")
    builder.tool_call_start("call", "call_1", "f")
    builder.tool_call_delta("call", '{"a":')
    builder.tool_call_delta("call", "1}")
    assert builder.streamed("text") == "Hello"
    assert builder.streamed("think") == "Hmm"
    assert builder.streamed("call") == '{"a":1}'
    # Reading it changes nothing: the call still parses once, at its end, from the same fragments.
    builder.block_end("call")
    assert builder.streamed("call") is None
    builder.stop("end", "stop")
    builder.finish()
    assert builder.message.stop_reason == "toolUse"
    assert validate_events(builder.events) == []


def test_a_final_payload_reconciled_through_streamed_keeps_the_deltas_adding_up() -> None:
    builder = MessageBuilder()
    builder.text_delta(0, "partial ")
    final = "partial and the rest"
    streamed = builder.streamed(0)
    assert streamed is not None
    assert final.startswith(streamed)
    builder.text_delta(0, final[len(streamed) :])
    builder.stop("end", "stop")
    builder.finish()
    block = builder.message.content[0]
    assert isinstance(block, TextContent)
    assert block.text == final
    assert validate_events(builder.events) == []
