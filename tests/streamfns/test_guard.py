"""The registry guard: no Exception escapes a StreamFn; cancellation still propagates."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

import streamfns
from normalize import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    MessageBuilder,
    Model,
    StreamOptions,
    validate_events,
)

API = "test-guard"


def model() -> Model:
    return Model(id="m", api=API, provider="test")


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    yield
    streamfns.unregister_api(API)


async def collect(stream: AssistantMessageEventStream) -> list[AssistantMessageEvent]:
    return [event async for event in stream]


async def test_unknown_api_is_an_error_stream_not_an_exception() -> None:
    events = await collect(streamfns.stream(Model(id="x", api="no-such-api", provider="p"), Context()))
    assert [e.type for e in events] == ["start", "error"]
    message = events[-1].partial
    assert message.error_info is not None
    assert message.error_info.kind == "config"
    assert "no-such-api" in (message.error_message or "")


async def test_sync_raise_becomes_a_conformant_error_stream() -> None:
    def raising(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessageEventStream:
        raise KeyError("missing setting")

    streamfns.register_api(API, raising)
    events = await collect(streamfns.stream(model(), Context()))
    assert validate_events(events) == []
    assert events[-1].partial.error_message == "KeyError: 'missing setting'"


async def test_async_raise_before_the_first_event() -> None:
    async def raising(
        model: Model, context: Context, options: StreamOptions | None = None
    ) -> AssistantMessageEventStream:
        await asyncio.sleep(0)
        raise ConnectionError("refused")

    streamfns.register_api(API, raising)
    events = await collect(streamfns.stream(model(), Context()))
    assert validate_events(events) == []
    info = events[-1].partial.error_info
    assert info is not None
    assert info.kind == "network"


async def test_raise_mid_iteration_keeps_partial_content() -> None:
    async def generator(model: Model) -> AsyncIterator[AssistantMessageEvent]:
        builder = MessageBuilder(model)
        builder.text_delta(0, "half an ans")
        for event in builder.drain():
            yield event
        raise RuntimeError("decoder bug")

    def fn(
        model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return generator(model)

    streamfns.register_api(API, fn)  # pyright: ignore[reportArgumentType] - a bare async iterator, on purpose
    stream = streamfns.stream(model(), Context())
    events = await collect(stream)
    assert validate_events(events) == []
    result = await stream.result()
    assert result.stop_reason == "error"
    assert result.error_message == "RuntimeError: decoder bug"
    assert result.error_info is not None
    assert result.error_info.output_started


async def test_non_stream_return_value_is_a_protocol_error() -> None:
    streamfns.register_api(API, lambda model, context, options=None: 42)  # pyright: ignore[reportArgumentType, reportUnknownLambdaType]
    message = await streamfns.complete(model(), Context())
    assert message.error_info is not None
    assert message.error_info.kind == "protocol"


async def test_cancelled_error_propagates_through_the_guard() -> None:
    started = asyncio.Event()

    async def slow(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessageEventStream:
        started.set()
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    streamfns.register_api(API, slow)
    task = asyncio.create_task(streamfns.complete(model(), Context()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_keyboard_interrupt_is_not_swallowed() -> None:
    def interrupted(
        model: Model, context: Context, options: StreamOptions | None = None
    ) -> AssistantMessageEventStream:
        raise KeyboardInterrupt

    streamfns.register_api(API, interrupted)
    with pytest.raises(KeyboardInterrupt):
        streamfns.stream(model(), Context())


def test_importing_streamfns_imports_no_vendor_sdk_or_adapter() -> None:
    import subprocess
    import sys

    code = (
        "import sys, streamfns; "
        "bad = [m for m in ('anthropic', 'openai', 'google.genai', 'streamfns.anthropic') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


async def test_a_non_model_is_an_error_stream_not_an_exception() -> None:
    events = await collect(streamfns.stream(None, Context()))  # pyright: ignore[reportArgumentType]
    assert [e.type for e in events] == ["start", "error"]
    info = events[-1].partial.error_info
    assert info is not None
    assert info.kind == "config"
