"""The agent loop on recorded multi-turn cassettes, replayed through the real adapters.

Each bundled round trip (``examples/agent_loop/cassettes/<api>.jsonl``) is replayed with
``match="request"``: the loop must send exactly the recorded requests — the second one carrying the
calculator's result under the recorded tool-call id — and the agent events must come in exactly
the order below. Adding a wire api is one entry in ``REPLY_UPDATES`` (and its recording, made by
``python -m examples.agent_loop.round_trips``).
"""

from __future__ import annotations

import httpx
import pytest

import streamfns
from cassettes import ReplayTransport, dumps, load
from examples.agent_loop import Agent, MessageUpdate
from examples.agent_loop.demo_tools import DEMO_SYSTEM_PROMPT, DEMO_TOOLS
from examples.agent_loop.round_trips import PROMPT, RECORDINGS, ROUND_TRIPS, cassette_path, record
from normalize import (
    AssistantMessage,
    Context,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    validate_events,
)
from streamfns.demo import model_for_cassette
from tests.agent_loop._agent import Recorder

_TEXT_THEN_CALL = [
    "text_start",
    "text_delta",
    "text_delta",
    "text_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_delta",
    "toolcall_end",
]
_ANSWER = ["text_start", "text_delta", "text_delta", "text_end"]

#: Per wire api: the ``message_update`` events of the tool-calling reply, then of the final answer.
REPLY_UPDATES: dict[str, tuple[list[str], list[str]]] = {
    "anthropic-messages": (_TEXT_THEN_CALL, _ANSWER),
    "openai-completions": (_TEXT_THEN_CALL, _ANSWER),
    "openai-responses": (_TEXT_THEN_CALL, _ANSWER),
    # Gemini sends a call's arguments whole: one delta.
    "google-generative-ai": ([*_TEXT_THEN_CALL[:5], "toolcall_delta", "toolcall_end"], _ANSWER),
}


def _expected(api: str) -> list[str]:
    first, second = REPLY_UPDATES[api]
    return [
        "agent_start",
        "turn_start",
        "message_start user",
        "message_end user",
        "message_start assistant",
        *(f"update {kind}" for kind in first),
        "message_end assistant toolUse",
        "tool_start calculator",
        "tool_end calculator ok",
        "message_start toolResult",
        "message_end toolResult",
        "turn_end toolUse results=1",
        "turn_start",
        "message_start assistant",
        *(f"update {kind}" for kind in second),
        "message_end assistant stop",
        "turn_end stop results=0",
        "agent_end messages=4",
    ]


def test_every_bundled_round_trip_has_an_expected_event_order() -> None:
    bundled = {path.stem for path in RECORDINGS.glob("*.jsonl")}
    assert bundled == set(REPLY_UPDATES)
    assert set(ROUND_TRIPS) <= bundled


@pytest.mark.parametrize("api", sorted(REPLY_UPDATES))
async def test_the_tool_round_trip_replays_through_the_real_adapter(api: str) -> None:
    cassette = load(cassette_path(api))
    transport = ReplayTransport(cassette, match="request")
    recorder = Recorder()
    async with httpx.AsyncClient(transport=transport) as client:
        options = StreamOptions(api_key="test-key", http_client=client, max_retries=0)
        model = model_for_cassette(cassette)
        assert model.api == api
        agent = Agent(model, tools=DEMO_TOOLS, system_prompt=DEMO_SYSTEM_PROMPT, options=options)
        await agent.run(PROMPT, recorder)
    errors = [m.error_message for m in agent.messages if isinstance(m, AssistantMessage) and m.error_message]
    assert recorder.lines == _expected(api), errors  # a request that differs from the recording shows here
    transport.assert_all_played()

    call_reply, result, answer = agent.messages[1:]
    assert isinstance(call_reply, AssistantMessage)
    assert isinstance(result, ToolResultMessage)
    assert isinstance(answer, AssistantMessage)
    (call,) = [block for block in call_reply.content if isinstance(block, ToolCall)]
    assert (call.name, call.arguments) == ("calculator", {"expression": "1234 * 5678"})
    assert (result.tool_call_id, result.is_error, result.content) == (call.id, False, [TextContent(text="7006652")])
    assert [block for block in answer.content if isinstance(block, TextContent)][-1].text.endswith("7,006,652.")
    for reply in (call_reply, answer):
        assert reply.usage.input > 0
        assert reply.usage.output > 0
        total = reply.usage.cost.total
        assert total is not None  # a metered catalog model: the price is known
        assert total > 0  # priced from the catalog model
    # The stream events each reply delivered form a valid sequence once its start and end are added back.
    updates = [event.event for event in recorder.events if isinstance(event, MessageUpdate)]
    first = len(REPLY_UPDATES[api][0])
    assert [event.type for event in updates[:first]] == REPLY_UPDATES[api][0]
    assert all(event.partial is call_reply for event in updates[:first])
    assert all(event.partial is answer for event in updates[first:])


@pytest.mark.parametrize("api", sorted(ROUND_TRIPS))
async def test_the_bundled_recording_is_what_the_loop_and_adapter_send_today(api: str) -> None:
    recorded = dumps(await record(api))
    assert recorded == cassette_path(api).read_text(encoding="utf-8"), (
        f"{cassette_path(api).name} is stale: rewrite it with `python -m examples.agent_loop.round_trips`"
    )


@pytest.mark.parametrize("api", sorted(REPLY_UPDATES))
async def test_each_recorded_reply_is_a_valid_event_stream(api: str) -> None:
    cassette = load(cassette_path(api))
    async with httpx.AsyncClient(transport=ReplayTransport(cassette, match="any")) as client:
        for _ in cassette.interactions:
            options = StreamOptions(api_key="test-key", http_client=client, max_retries=0)
            context = Context(messages=[UserMessage(content="x")])
            stream = streamfns.stream(model_for_cassette(cassette), context, options)
            events = [event async for event in stream]
            assert validate_events(events) == []
            assert events[-1].type == "done"
