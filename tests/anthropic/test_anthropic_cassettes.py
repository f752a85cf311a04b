"""The Anthropic adapter on every bundled recording: grammar, SDK agreement, and fault mutations."""

from __future__ import annotations

import random
from typing import Any, cast

import jiter
import pytest

from cassettes import library
from cassettes.mutations import corrupt_json, drop_terminal, rechunk, truncate
from normalize import (
    AssistantMessageEvent,
    TextContent,
    ToolCall,
    event_to_json,
    validate_events,
)
from tests.adapters import ANTHROPIC
from tests.anthropic._oracle import comparable_blocks, comparable_sdk_blocks, sse_events
from tests.anthropic._oracle import sdk_final as sdk_final_of_events

pytestmark = pytest.mark.parallel

STREAMS = ANTHROPIC.stream_names()
ERRORS = ANTHROPIC.error_names()

#: Recordings whose vendor stop or shape ends the normalized stream in an error, and why.
EXPECTED_ERRORS = {
    "antsdk__server_tool_then_refusal_SANITIZED": "refusal",
    "antsdk__thinking_then_refusal_SANITIZED": "refusal",
    "vercel__refusal_stop_details_HANDWRITTEN": "refusal",
    "vercel__spliced_message_start_SYNTHETIC": "protocol",
    "anthropic_sse_midstream_error_event_overloaded": "overloaded",
}


def sdk_final(body: bytes) -> Any:
    """What the anthropic SDK's own accumulator builds from the same bytes."""
    return sdk_final_of_events(sse_events(body))


@pytest.mark.parametrize("name", STREAMS)
async def test_every_recording_obeys_the_grammar_and_agrees_with_the_sdk(name: str) -> None:
    cassette = library.load(name)
    events, result = await ANTHROPIC.replay(cassette)
    assert validate_events(events) == [], name
    expected_error = EXPECTED_ERRORS.get(name)
    if expected_error is not None:
        assert result.error_info is not None
        assert result.error_info.kind == expected_error
        return
    assert result.stop_reason in ("stop", "length", "toolUse")
    snapshot = sdk_final(cassette.interactions[0].response.body)
    assert result.raw_stop_reason == snapshot.stop_reason
    ours, theirs = comparable_blocks(result), comparable_sdk_blocks(snapshot)
    if result.stop_reason == "length":
        # The SDK keeps a salvaged parse of cut-off tool input; we keep a preview. Compare the rest.
        ours = [b for b in ours if b["type"] != "tool"]
        theirs = [b for b in theirs if b["type"] != "tool"]
    assert ours == theirs
    usage = snapshot.usage
    assert result.usage.input == usage.input_tokens
    assert result.usage.output == usage.output_tokens
    assert result.usage.cache_read == (usage.cache_read_input_tokens or 0)
    assert result.usage.cache_write == (usage.cache_creation_input_tokens or 0)
    assert result.response_id == snapshot.id


@pytest.mark.parametrize("name", ERRORS)
async def test_error_bodies_map_to_kinds_and_keep_the_vendor_message(name: str) -> None:
    cassette = library.load(name)
    response = cassette.interactions[0].response
    _, result = await ANTHROPIC.replay(cassette)
    assert result.stop_reason == "error"
    info = result.error_info
    assert info is not None
    assert info.status == response.status
    expected = {
        400: "invalid_request",
        401: "auth",
        404: "not_found",
        429: "rate_limit",
        500: "server",
        529: "overloaded",
    }
    assert info.kind == expected[response.status]
    assert info.retryable == (response.status in (429, 500, 529))
    vendor_message = cast("dict[str, Any]", jiter.from_json(response.body))["error"]["message"]
    assert vendor_message.strip() in (result.error_message or "")


def normalized(events: list[AssistantMessageEvent]) -> list[dict[str, Any]]:
    return [event_to_json(event) for event in events]


REPRESENTATIVE = [
    "llma__thinking_then_tool_use_haiku45",
    "llma__parallel_tool_use_x2_haiku45",
    "pai__thinking_web_search_citations_sonnet4",
    "mira__long_thinking_sonnet4",
    "antsdk__max_tokens_mid_tool_json_sonnet37",
]


@pytest.mark.parametrize("name", REPRESENTATIVE)
@pytest.mark.parametrize("strategy", [1, "random", "split_crlf", "split_utf8", 7])
async def test_any_rechunking_gives_identical_events(name: str, strategy: int | str) -> None:
    cassette = library.load(name)
    baseline, _ = await ANTHROPIC.replay(cassette)
    mutated, _ = await ANTHROPIC.replay(rechunk(cassette, strategy, seed=11))  # pyright: ignore[reportArgumentType]
    base = normalized(baseline)
    # The terminal message carries a timestamp taken at request time; everything else must match.
    for events in (base, normalized(mutated)):
        events[-1]["message" if "message" in events[-1] else "error"].pop("timestamp")
    other = normalized(mutated)
    other[-1]["message" if "message" in other[-1] else "error"].pop("timestamp")
    assert other == base


@pytest.mark.parametrize("name", REPRESENTATIVE)
async def test_truncation_anywhere_is_a_truncated_error_never_done(name: str) -> None:
    cassette = library.load(name)
    body = cassette.interactions[0].response.body
    rng = random.Random(name)
    cut_points = sorted({rng.randrange(1, len(body)) for _ in range(12)})
    for cut in cut_points:
        events, result = await ANTHROPIC.replay(truncate(cassette, after_bytes=cut, end="eof"))
        assert events[-1].type == "error", f"cut at byte {cut} of {len(body)}"
        assert validate_events(events) == []
        info = result.error_info
        assert info is not None
        assert info.kind in ("truncated", "protocol"), (cut, info.kind)
        if info.kind == "truncated":
            assert info.retryable
        full = "".join(b.text for b in (await ANTHROPIC.replay(cassette))[1].content if isinstance(b, TextContent))
        partial = "".join(b.text for b in result.content if isinstance(b, TextContent))
        assert full.startswith(partial), "partial text is a prefix of the full text"


@pytest.mark.parametrize("name", REPRESENTATIVE)
async def test_truncation_with_a_reset_is_a_network_error_with_partial_content(name: str) -> None:
    cassette = library.load(name)
    chunks = len(cassette.interactions[0].response.chunks)
    events, result = await ANTHROPIC.replay(truncate(cassette, after_chunks=chunks // 2, end="reset"))
    assert validate_events(events) == []
    assert result.error_info is not None
    assert result.error_info.kind == "network"
    assert result.content


@pytest.mark.parametrize("name", ["llma__text_haiku45", "llma__parallel_tool_use_x2_haiku45"])
async def test_dropped_message_stop_is_an_error(name: str) -> None:
    events, result = await ANTHROPIC.replay(drop_terminal(library.load(name), api="anthropic-messages"))
    assert events[-1].type == "error"
    assert result.error_info is not None
    assert result.error_info.kind == "truncated"
    assert "message_stop" in (result.error_message or "")


async def test_corrupt_json_is_a_protocol_error() -> None:
    cassette = library.load("llma__parallel_tool_use_x2_haiku45")
    events, result = await ANTHROPIC.replay(corrupt_json(cassette, index=3))
    assert events[-1].type == "error"
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert validate_events(events) == []


async def test_tool_input_split_into_fragments_is_parsed_strictly_once_complete() -> None:
    _, result = await ANTHROPIC.replay(library.load("llma__parallel_tool_use_x2_haiku45"))
    calls = [block for block in result.content if isinstance(block, ToolCall)]
    assert len(calls) == 2
    assert result.stop_reason == "toolUse"
    assert all(call.id.startswith("toolu_") for call in calls)


async def test_max_tokens_in_the_middle_of_tool_json_stays_length() -> None:
    events, result = await ANTHROPIC.replay(library.load("antsdk__max_tokens_mid_tool_json_sonnet37"))
    assert result.stop_reason == "length"
    assert events[-1].type == "done"
    assert validate_events(events) == []
