"""The faux provider: scripted responses streamed through the real builder."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

import streamfns
from normalize import (
    AbortController,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ErrorInfo,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
    validate_events,
)
from streamfns.faux import FauxProvider, FauxState, faux_message, faux_text, faux_thinking, faux_tool_call


@pytest.fixture
def faux() -> Iterator[FauxProvider]:
    provider = FauxProvider(token_size=(1, 1)).register()
    yield provider
    provider.unregister()


CONTEXT = Context(messages=[UserMessage(content="What's the weather in Paris?")])


async def test_event_order_for_thinking_text_and_tool_call(faux: FauxProvider) -> None:
    faux.set_responses(
        [
            faux_message(
                [faux_thinking("Hmm.", "sig"), faux_text("Ok."), faux_tool_call("get_weather", {"c": 1}, id="t1")],
                stop_reason="toolUse",
            )
        ]
    )
    stream = streamfns.stream(faux.model(), CONTEXT)
    events = [event async for event in stream]
    assert [e.type for e in events] == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    assert validate_events(events) == []
    result = await stream.result()
    assert result.content == [
        ThinkingContent(thinking="Hmm.", thinking_signature="sig"),
        TextContent(text="Ok."),
        ToolCall(id="t1", name="get_weather", arguments={"c": 1}),
    ]
    assert result.usage.input > 0
    assert result.usage.output > 0
    assert (result.api, result.provider, result.model) == ("faux", "faux", "faux-1")


async def test_factories_state_and_queue_exhaustion(faux: FauxProvider) -> None:
    def reply(context: Context, options: StreamOptions | None, state: FauxState, model: Model) -> AssistantMessage:
        return faux_message(f"call {state.call_count} to {model.id}")

    async def async_reply(
        context: Context, options: StreamOptions | None, state: FauxState, model: Model
    ) -> AssistantMessage:
        await asyncio.sleep(0)
        return faux_message("async")

    faux.set_responses([reply])
    faux.append_responses([async_reply])
    assert faux.pending == 2
    first = await streamfns.complete(faux.model(), CONTEXT)
    assert first.content == [TextContent(text="call 1 to faux-1")]
    assert (await streamfns.complete(faux.model(), CONTEXT)).content == [TextContent(text="async")]
    exhausted = await streamfns.complete(faux.model(), CONTEXT)
    assert exhausted.stop_reason == "error"
    assert "no more scripted responses" in (exhausted.error_message or "")


async def test_scripted_errors_and_stop_reasons(faux: FauxProvider) -> None:
    faux.set_responses(
        [
            faux_message(
                "partial", stop_reason="error", error_message="overloaded", error_info=ErrorInfo.of("overloaded")
            ),
            faux_message("cut", stop_reason="length"),
            faux_message("x", stop_reason="pending"),
        ]
    )
    errored = await streamfns.complete(faux.model(), CONTEXT)
    assert errored.error_info is not None
    assert errored.error_info.kind == "overloaded"
    assert errored.content == [TextContent(text="partial")]
    assert (await streamfns.complete(faux.model(), CONTEXT)).stop_reason == "length"
    assert (await streamfns.complete(faux.model(), CONTEXT)).stop_reason == "error"


async def test_abort_before_start_sends_only_start_and_aborted(faux: FauxProvider) -> None:
    faux.set_responses([faux_message("never")])
    controller = AbortController()
    controller.abort()
    stream = streamfns.stream(faux.model(), CONTEXT, StreamOptions(signal=controller.signal))
    events = [event async for event in stream]
    assert [e.type for e in events] == ["start", "error"]
    assert (await stream.result()).stop_reason == "aborted"


async def test_a_call_already_aborted_uses_up_no_scripted_response(faux: FauxProvider) -> None:
    faux.set_responses([faux_message("kept for the next call")])
    controller = AbortController()
    controller.abort()
    aborted = await streamfns.complete(faux.model(), CONTEXT, StreamOptions(signal=controller.signal))
    assert (aborted.stop_reason, aborted.content, faux.pending, faux.state.call_count) == ("aborted", [], 1, 1)
    answered = await streamfns.complete(faux.model(), CONTEXT)
    assert (answered.stop_reason, answered.content) == ("stop", [TextContent(text="kept for the next call")])
    assert (faux.pending, faux.state.call_count) == (0, 2)


async def test_abort_mid_block_keeps_partial_and_is_prompt(faux: FauxProvider) -> None:
    faux.tokens_per_second = 20  # one token per 50 ms: the full reply would take seconds
    faux.set_responses([faux_message([faux_thinking("think " * 20), faux_text("word " * 100)])])
    controller = AbortController()
    stream = streamfns.stream(faux.model(), CONTEXT, StreamOptions(signal=controller.signal))
    events: list[AssistantMessageEvent] = []
    aborted_at = 0.0
    async for event in stream:
        events.append(event)
        if event.type == "thinking_delta" and not controller.signal.aborted:
            aborted_at = time.perf_counter()
            controller.abort()
    latency = time.perf_counter() - aborted_at
    result = await stream.result()
    assert result.stop_reason == "aborted"
    assert result.error_message == "Request was aborted"
    assert isinstance(result.content[0], ThinkingContent)
    assert result.content[0].thinking
    assert ("think " * 20).startswith(result.content[0].thinking)
    assert validate_events(events) == []
    assert latency < 0.5
