"""Claude on Vertex AI over every bundled real body: the grammar, and agreement with the anthropic SDK's own
accumulator over the same events, however the body is cut into reads."""

from __future__ import annotations

import pytest

from cassettes import library
from normalize import validate_events
from tests.adapters import ANTHROPIC_VERTEX, response_of
from tests.anthropic._oracle import (
    chunkings,
    comparable_blocks,
    comparable_sdk_blocks,
    sdk_final,
    sse_events,
)

pytestmark = pytest.mark.parallel  # clock-blind: in-process transport, no sleep or timeout

STREAMS = ANTHROPIC_VERTEX.stream_names()
CHUNKINGS = ("recorded", "whole", "7-bytes")


def test_every_real_vertex_body_is_bundled() -> None:
    assert len(STREAMS) == 15
    assert ANTHROPIC_VERTEX.error_names() == []


@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("name", STREAMS)
async def test_each_body_agrees_with_the_anthropic_sdk(name: str, chunking: str) -> None:
    recorded = ANTHROPIC_VERTEX.recorded_chunks(name)
    body = b"".join(recorded)
    target = ANTHROPIC_VERTEX.model(id=library.load(name).model or "claude-sonnet-4-5@20250929")
    events, result = await ANTHROPIC_VERTEX.run_reads(chunkings(recorded)[chunking], target=target)
    assert validate_events(events) == [], name
    assert result.error_message is None
    snapshot = sdk_final(sse_events(body))
    assert result.raw_stop_reason == snapshot.stop_reason
    assert (
        result.stop_reason == {"end_turn": "stop", "tool_use": "toolUse", "max_tokens": "length"}[snapshot.stop_reason]
    )
    assert comparable_blocks(result) == comparable_sdk_blocks(snapshot)
    usage = snapshot.usage
    assert (result.usage.input, result.usage.output) == (usage.input_tokens, usage.output_tokens)
    assert result.usage.cache_read == (usage.cache_read_input_tokens or 0)
    assert result.usage.cache_write == (usage.cache_creation_input_tokens or 0)
    assert result.response_id == snapshot.id


async def test_vertex_pads_json_and_pings_and_the_decoder_takes_both() -> None:
    # What makes these bodies Vertex's (INDEX.md): padded JSON before the closing brace, and pings.
    name = "fantasy__simple_streaming_claude-3-7-sonnet-20250219"
    body = response_of(name).body
    assert b"event: ping" in body
    assert b'"output_tokens":5}}               }\n' in body
    _, result = await ANTHROPIC_VERTEX.replay(library.load(name))
    assert result.stop_reason == "stop"
    assert comparable_blocks(result) == comparable_sdk_blocks(sdk_final(sse_events(body)))


async def test_a_thinking_body_keeps_the_signature() -> None:
    _, result = await ANTHROPIC_VERTEX.replay(library.load("reqllm__reasoning_streaming_claude-haiku-4-5-20251001"))
    kinds = [block.type for block in result.content]
    assert kinds == ["thinking", "text"]
    thinking = result.content[0]
    assert thinking.type == "thinking"
    assert thinking.thinking_signature  # a signed block, replayable to the model that made it
