"""Faults derived from the real recordings: cuts, dropped terminals, corrupt events, argument deltas
cut short before the terminal, items that finish out of order, spliced responses."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import pytest

from cassettes import Cassette, Chunk, End, library
from cassettes.mutations import corrupt_json, drop_terminal, truncate
from normalize import TextContent, ThinkingContent, ToolCall, validate_events
from tests.adapters import OPENAI_RESPONSES as RESPONSES
from tests.adapters import response_of
from tests.openai_responses._responses import TERMINALS, event_kind, terminal_event
from tests.sse_events import split_events

pytestmark = pytest.mark.parallel

WITH_TERMINAL = [name for name in RESPONSES.stream_names() if terminal_event(response_of(name).body)]
CUT_SAMPLES = [
    "pai__text_gpt4o",
    "pai__function_call_gpt4o",
    "mirahar__reasoning_summary_o4mini",
    "pai__phase_commentary_gpt55",
    "vercel__lmstudio_reasoning_function_call",
    "vercel__custom_tool_call_HANDWRITTEN",
]


def with_body(cassette: Cassette, pieces: list[bytes]) -> Cassette:
    """``cassette`` answering with ``pieces`` as its chunks."""
    interaction = cassette.interactions[0]
    chunks = tuple(Chunk(piece, 5.0 * n) for n, piece in enumerate(pieces))
    response = dataclasses.replace(interaction.response, chunks=chunks, end=End("eof", 5.0 * len(chunks)))
    return dataclasses.replace(cassette, interactions=(dataclasses.replace(interaction, response=response),))


def events_of(name: str) -> list[tuple[str, dict[str, Any], bytes]]:
    """The recording's events up to its first terminal: (type, JSON, raw bytes)."""
    found: list[tuple[str, dict[str, Any], bytes]] = []
    for event in split_events(response_of(name).body):
        value = event.json()
        kind = event_kind(event)
        if not isinstance(value, dict) or kind is None:
            continue
        found.append((kind, dict(value), event.raw))
        if kind in TERMINALS:
            break
    return found


def frame(value: dict[str, Any]) -> bytes:
    return f"event: {value['type']}\ndata: {json.dumps(value)}\n\n".encode()


def last_terminal_byte(body: bytes) -> int:
    """The offset of the last byte of the first terminal event's JSON: a cut at or before it loses
    part of the terminal event."""
    for event in split_events(body):
        if event_kind(event) in TERMINALS:
            return event.raw.rindex(b"}") + event.start
    raise AssertionError("no terminal event")


@pytest.mark.parametrize("name", CUT_SAMPLES)
@pytest.mark.parametrize("end", ["eof", "reset"])
async def test_a_cut_anywhere_before_the_terminal_is_an_error_never_done(name: str, end: str) -> None:
    cassette = library.load(name)
    body = response_of(name).body
    limit = last_terminal_byte(body)
    starts = [event.start for event in split_events(body) if event.start <= limit]
    # Every event boundary, a byte inside every event, and the last byte of the terminal JSON.
    cuts = sorted({*starts, *(start + 7 for start in starts if start + 7 <= limit), limit})
    for cut in cuts:
        events, message = await RESPONSES.replay(truncate(cassette, after_bytes=cut, end=end))  # pyright: ignore[reportArgumentType]
        assert validate_events(events) == [], (name, cut)
        assert events[-1].type == "error", (name, cut, message.stop_reason)
        assert message.error_info is not None
        assert message.error_info.kind in ("truncated", "network"), (name, cut, message.error_message)
        assert message.error_info.retryable


@pytest.mark.parametrize("name", sorted(set(WITH_TERMINAL) - set(CUT_SAMPLES)))
async def test_random_cuts_before_the_terminal_of_every_other_recording_are_errors(name: str) -> None:
    # The samples above are cut at every event; every other recording at eight random bytes.
    cassette = library.load(name)
    body = response_of(name).body
    # A vendor error event before the terminal decides the kind from there on: cut before it.
    errors = [event.start for event in split_events(body) if event_kind(event) == "error"]
    limit = min([last_terminal_byte(body), *errors])
    rng = random.Random(name)
    for cut in sorted({rng.randrange(1, limit + 1) for _ in range(8)} | {limit}):
        events, message = await RESPONSES.replay(truncate(cassette, after_bytes=cut, end="eof"))
        assert validate_events(events) == [], (name, cut)
        assert events[-1].type == "error", (name, cut, message.stop_reason)
        assert message.error_info is not None
        assert message.error_info.kind == "truncated", (name, cut, message.error_message)


@pytest.mark.parametrize("name", WITH_TERMINAL)
async def test_a_dropped_terminal_is_truncated(name: str) -> None:
    events, message = await RESPONSES.replay(drop_terminal(library.load(name), api=RESPONSES.api))
    assert validate_events(events) == []
    assert message.stop_reason == "error"
    assert message.error_info is not None
    if name == "vercel__error_event_then_failed_insufficient_quota":
        # Its error event comes before the (dropped) response.failed and decides.
        assert message.error_info.kind == "auth"
        return
    assert message.error_info.kind == "truncated", message.error_message
    assert message.error_info.retryable


@pytest.mark.parametrize("name", WITH_TERMINAL)
async def test_a_corrupt_event_is_a_protocol_error(name: str) -> None:
    json_events = [e for e in split_events(response_of(name).body) if isinstance(e.json(), dict | list)]
    terminal_at = next(i for i, e in enumerate(json_events) if event_kind(e) in TERMINALS)
    events, message = await RESPONSES.replay(corrupt_json(library.load(name), terminal_at // 2))
    assert validate_events(events) == []
    assert message.error_info is not None
    assert message.error_info.kind == "protocol", message.error_message


async def test_argument_deltas_cut_and_followed_by_completed_never_reach_a_done_message() -> None:
    name = "pai__function_call_gpt4o"
    events = events_of(name)
    announced = next(
        i
        for i, (kind, value, _) in enumerate(events)
        if kind == "response.output_item.added" and value["item"]["type"] == "function_call"
    )
    deltas = [i for i, (kind, _, _) in enumerate(events) if kind == "response.function_call_arguments.delta"]
    assert len(deltas) >= 3
    assert announced < deltas[0]
    terminal = events[-1][2]
    for keep in [announced, *deltas[:-1]]:
        # The stream stops at the call's output_item.added (no argument at all) or after some of its
        # argument deltas, and goes straight to response.completed.
        pieces = [raw for _, _, raw in events[: keep + 1]] + [terminal]
        stream, message = await RESPONSES.replay(with_body(library.load(name), pieces))
        assert validate_events(stream) == []
        assert stream[-1].type == "error"
        assert message.error_info is not None
        assert message.error_info.kind == "truncated"
        call = message.content[0]
        assert isinstance(call, ToolCall)
        assert call.name == "get_capital"


async def test_argument_deltas_cut_by_max_output_tokens_end_length_with_the_salvaged_preview() -> None:
    name = "pai__function_call_gpt4o"
    events = events_of(name)
    deltas = [i for i, (kind, _, _) in enumerate(events) if kind == "response.function_call_arguments.delta"]
    completed = dict(events[-1][1])
    completed["type"] = "response.incomplete"
    completed["response"] = {
        **completed["response"],
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
    }
    pieces = [raw for _, _, raw in events[: deltas[2] + 1]] + [frame(completed)]
    stream, message = await RESPONSES.replay(with_body(library.load(name), pieces))
    assert validate_events(stream) == []
    assert message.stop_reason == "length"
    assert stream[-1].type == "done"
    assert stream[-2].type == "toolcall_end"


async def test_items_that_finish_out_of_order_keep_their_blocks() -> None:
    name = "mirahar__reasoning_summary_o4mini"
    events = events_of(name)
    head = [raw for kind, _, raw in events if kind in ("response.created", "response.in_progress")]
    reasoning = [raw for _, value, raw in events if value.get("output_index") == 0]
    message = [raw for _, value, raw in events if value.get("output_index") == 1]
    tail = [events[-1][2]]
    # Both items open, their deltas interleave, and the message ends before the reasoning.
    reasoning_open, reasoning_rest = reasoning[:1], reasoning[1:]
    message_body, message_done = message[:-1], message[-1:]
    interleaved: list[bytes] = []
    for i in range(max(len(reasoning_rest), len(message_body))):
        interleaved += reasoning_rest[i : i + 1] if i < len(reasoning_rest) - 1 else []
        interleaved += message_body[i : i + 1]
    pieces = [*head, *reasoning_open, *interleaved, *message_done, *reasoning_rest[-1:], *tail]
    assert sorted(pieces) == sorted([*head, *reasoning, *message, *tail])
    reordered, got = await RESPONSES.replay(with_body(library.load(name), pieces))
    original, expected = await RESPONSES.replay(library.load(name))
    assert validate_events(reordered) == []
    assert got.stop_reason == "stop"
    assert [type(b) for b in got.content] == [ThinkingContent, TextContent]
    assert got.content == expected.content
    assert len(reordered) == len(original)
    ends = [e.type for e in reordered if e.type.endswith("_end")]
    assert ends == ["text_end", "thinking_end"]


async def test_a_second_response_in_one_body_is_a_truncated_first_response() -> None:
    # Four responses back to back (a multi-step fixture) with their terminal events removed: the
    # second response.created shows the first ended without its terminal.
    events, message = await RESPONSES.replay(
        drop_terminal(library.load("vercel__reasoning_encrypted_3_function_calls_codex"), api=RESPONSES.api)
    )
    assert validate_events(events) == []
    assert message.error_info is not None
    assert message.error_info.kind == "truncated"
    assert "started response" in (message.error_message or "")


async def test_a_done_marker_before_the_terminal_event_is_truncated() -> None:
    name = "pai__openrouter_raw_cot_gptoss"
    pieces = [raw for kind, _, raw in events_of(name) if kind not in TERMINALS] + [b"data: [DONE]\n\n"]
    events, message = await RESPONSES.replay(with_body(library.load(name), pieces))
    assert validate_events(events) == []
    assert message.error_info is not None
    assert message.error_info.kind == "truncated"


async def test_only_the_first_response_of_a_multi_response_body_is_read() -> None:
    events, message = await RESPONSES.replay(library.load("vercel__reasoning_encrypted_3_function_calls_codex"))
    assert validate_events(events) == []
    assert message.stop_reason == "toolUse"
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    assert [c.arguments for c in calls] == [{"a": 12, "b": 7, "op": "add"}]
