"""Hypothesis fuzz of every built-in adapter's decoder, through its real StreamFn.

Arbitrary bytes, arbitrary event objects, and real recordings of the adapter's api with events
dropped, repeated, swapped and cut: whatever the server sends, iterating never raises, there is
exactly one terminal and it is the last event, and the events obey the grammar.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cassettes import library
from normalize import AssistantMessageEvent, Context, Model, StreamOptions, UserMessage, validate_events
from streamfns._adapters import builtin_adapters
from tests.sse_events import split_events

pytestmark = pytest.mark.parallel

APIS = sorted(builtin_adapters())
CONTEXT = Context(messages=[UserMessage(content="fuzz")])
_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_KEYS = st.sampled_from(
    [
        "type", "index", "delta", "text", "content", "content_block", "message", "usage", "stop_reason",
        "choices", "finish_reason", "tool_calls", "function", "arguments", "id", "name", "input",
        "partial_json", "thinking", "signature", "reasoning_content", "candidates", "parts", "functionCall",
        "args", "finishReason", "usageMetadata", "output_index", "item", "item_id", "response", "status",
        "error", "code", "partialArgs", "willContinue", "thought", "role",
    ]
)  # fmt: skip
_TYPES = st.sampled_from(
    [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
        "message_stop", "error", "ping", "response.created", "response.output_item.added",
        "response.output_text.delta", "response.function_call_arguments.delta", "response.output_item.done",
        "response.completed", "response.incomplete", "response.failed", "text_delta", "input_json_delta",
        "tool_use", "text", "function_call", "reasoning", "message",
    ]
)  # fmt: skip
_SCALARS = st.none() | st.booleans() | st.integers(-5, 10**20) | st.text(max_size=20) | _TYPES
_JSON = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=5),
    max_leaves=25,
)
_EVENT = st.dictionaries(_KEYS, _JSON, max_size=6).map(lambda d: {"type": d.get("type", "x"), **d})


def _frame(events: list[dict[str, Any]]) -> bytes:
    out: list[str] = []
    for event in events:
        name = event.get("type")
        head = f"event: {name}\n" if isinstance(name, str) else ""
        out.append(f"{head}data: {json.dumps(event)}\n\n")
    return "".join(out).encode()


def _recorded_events(api: str) -> list[bytes]:
    """The raw events of the api's successful recordings (each an SSE block, terminator included): the
    library's for the api, else the bundled ones its profile names (an api that speaks another's
    events, as Codex speaks Responses, has none of its own in the library)."""
    blocks: list[bytes] = []
    profile = builtin_adapters()[api].profile
    named = profile.recordings.values() if profile is not None else ()
    names = library.names(api) or [name for name in named if name in library.names()]
    assert names, f"{api}: no recorded body to fuzz from"
    for name in names:
        response = library.load(name).interactions[0].response
        if response.status == 200:
            body = response.body
            blocks.extend(body[event.start : event.end] for event in split_events(body))
    return blocks


_RECORDED = {api: _recorded_events(api) for api in APIS}


async def _run(api: str, body: bytes) -> list[AssistantMessageEvent]:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        options = StreamOptions(api_key="fuzz-test-key", http_client=client, max_retries=0)
        model = Model(id="fuzz-model", api=api, provider="fuzz", base_url="http://fuzz.invalid")
        stream = builtin_adapters()[api].stream_fn(model, CONTEXT, options)
        assert stream is not None
        events: list[AssistantMessageEvent] = [event async for event in stream]  # pyright: ignore[reportGeneralTypeIssues, reportUnknownVariableType]
        result = await stream.result()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
    terminals = [event for event in events if event.type in ("done", "error")]
    assert len(terminals) == 1, [event.type for event in events]
    assert events[-1] is terminals[0]
    assert result is terminals[0].partial
    assert validate_events(events) == [], validate_events(events)
    return events


@pytest.mark.parametrize("api", APIS)
@_SETTINGS
@given(body=st.binary(max_size=400))
async def test_arbitrary_bytes(api: str, body: bytes) -> None:
    await _run(api, body)


@pytest.mark.parametrize("api", APIS)
@_SETTINGS
@given(events=st.lists(_EVENT, max_size=12))
async def test_arbitrary_event_objects(api: str, events: list[dict[str, Any]]) -> None:
    await _run(api, _frame(events))


@pytest.mark.parametrize("api", APIS)
@_SETTINGS
@given(data=st.data())
async def test_real_events_dropped_repeated_swapped_and_cut(api: str, data: st.DataObject) -> None:
    pool = _RECORDED[api]
    picks = data.draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=30), label="events")
    body = b"".join(pool[i] for i in picks)
    cut = data.draw(st.integers(0, len(body)), label="cut")
    await _run(api, body[:cut])
