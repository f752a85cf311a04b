"""Claude on Bedrock over every bundled real body: the grammar, and agreement with the anthropic SDK's own
accumulator over the unwrapped events, however the event stream is cut into reads."""

from __future__ import annotations

import pytest

from cassettes import library
from normalize import validate_events
from tests.adapters import ANTHROPIC_BEDROCK, response_of
from tests.anthropic._oracle import chunkings, comparable_blocks, comparable_sdk_blocks, sdk_final
from tests.anthropic_bedrock._frames import EVENT_STREAM, inner_events

pytestmark = pytest.mark.parallel  # clock-blind: in-process transport, no sleep or timeout

STREAMS = ANTHROPIC_BEDROCK.stream_names()
REFRAMED = "reqllm__reasoning_streaming_claude-haiku-4-5-20251001_REFRAMED"
CHUNKINGS = ("recorded", "whole", "7-bytes")
STOPS = {"end_turn": "stop", "tool_use": "toolUse", "max_tokens": "length"}


def test_every_real_bedrock_body_is_bundled_and_the_one_converted_body_says_so() -> None:
    assert len(STREAMS) == 33
    assert all(library.synthetic(name) == {"timing": "synthetic", "request": "synthetic"} for name in STREAMS)
    source = library.load(REFRAMED).source or {}
    assert "converted" in str(source.get("provenance"))
    assert ANTHROPIC_BEDROCK.error_names() == []


@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("name", STREAMS)
async def test_each_body_agrees_with_the_anthropic_sdk(name: str, chunking: str) -> None:
    recorded = ANTHROPIC_BEDROCK.recorded_chunks(name)
    target = ANTHROPIC_BEDROCK.model(id=library.load(name).model or "anthropic.claude-v2")
    events, result = await ANTHROPIC_BEDROCK.run_reads(
        chunkings(recorded)[chunking], target=target, content_type=EVENT_STREAM
    )
    assert validate_events(events) == [], name
    assert result.error_message is None
    snapshot = sdk_final(inner_events(b"".join(recorded)))
    assert result.raw_stop_reason == snapshot.stop_reason
    assert result.stop_reason == STOPS[snapshot.stop_reason]
    ours, theirs = comparable_blocks(result), comparable_sdk_blocks(snapshot)
    if result.stop_reason == "length":
        # The SDK keeps a salvaged parse of cut-off tool input; we keep a preview. Compare the rest.
        ours = [block for block in ours if block["type"] != "tool"]
        theirs = [block for block in theirs if block["type"] != "tool"]
    assert ours == theirs
    usage = snapshot.usage
    assert (result.usage.input, result.usage.output) == (usage.input_tokens, usage.output_tokens)
    assert result.usage.cache_read == (usage.cache_read_input_tokens or 0)
    assert result.usage.cache_write == (usage.cache_creation_input_tokens or 0)
    assert result.response_id == snapshot.id


async def test_the_invocation_metrics_in_message_stop_are_not_read() -> None:
    name = "fantasy__simple_streaming_claude-sonnet-4-5-20250929-v1-0"
    last = inner_events(response_of(name).body)[-1]
    metrics = last["amazon-bedrock-invocationMetrics"]
    assert last["type"] == "message_stop"
    _, result = await ANTHROPIC_BEDROCK.replay(library.load(name))
    # The usage is the Messages events' own, not Bedrock's metrics (which count the same tokens).
    assert result.usage.output == metrics["outputTokenCount"]
    assert result.usage.input == metrics["inputTokenCount"]
    assert result.stop_reason == "stop"


async def test_the_reframed_thinking_body_keeps_thinking_and_its_signature() -> None:
    _, result = await ANTHROPIC_BEDROCK.replay(library.load(REFRAMED))
    assert [block.type for block in result.content] == ["thinking", "text"]
    thinking = result.content[0]
    assert thinking.type == "thinking"
    assert thinking.thinking_signature
