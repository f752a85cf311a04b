"""AssistantMessageEventStream: one terminal, result() never raises or hangs, early exit closes the producer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from normalize import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    MessageBuilder,
    Model,
    TextContent,
    validate_events,
)
from tests.normalize._events import text_sequence

MODEL = Model(id="m", api="test", provider="test")


def test_push_mode_delivers_one_terminal_and_ignores_later_pushes() -> None:
    async def run() -> None:
        events, message = text_sequence()
        stream = AssistantMessageEventStream()
        for event in events:
            stream.push(event)
        stream.push(events[2])  # after the terminal: ignored
        stream.end()
        seen = [event async for event in stream]
        assert seen == events
        assert await stream.result() is message

    asyncio.run(run())


async def test_result_is_the_terminal_message_while_another_task_iterates() -> None:
    events, message = text_sequence()
    stream = AssistantMessageEventStream()

    async def produce() -> None:
        for event in events:
            await asyncio.sleep(0)
            stream.push(event)

    producer = asyncio.create_task(produce())
    seen = [event async for event in stream]
    await producer
    assert [e.type for e in seen] == ["start", "text_start", "text_delta", "text_end", "done"]
    assert await stream.result() is message


async def test_push_producer_that_ends_without_terminal_gets_a_protocol_error() -> None:
    events, _ = text_sequence()
    stream = AssistantMessageEventStream(model=MODEL)
    for event in events[:3]:
        stream.push(event)
    stream.end()
    seen = [event async for event in stream]
    assert seen[-1].type == "error"
    result = await stream.result()
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert result.error_info.output_started
    assert validate_events(seen) == []


async def test_pull_source_ending_without_terminal_synthesizes_error_with_start() -> None:
    async def nothing() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        return
        yield ()

    stream = AssistantMessageEventStream.from_batches(nothing(), model=MODEL)
    seen = [event async for event in stream]
    assert [e.type for e in seen] == ["start", "error"]
    assert validate_events(seen) == []
    result = await stream.result()
    assert result.model == "m"


async def test_result_without_iteration_drives_the_stream() -> None:
    async def source() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        builder = MessageBuilder(MODEL)
        builder.text_delta(0, "hi")
        yield builder.drain()
        builder.stop("end", "stop")
        builder.finish()
        yield builder.drain()

    stream = AssistantMessageEventStream.from_batches(source())
    result = await stream.result()
    assert result.stop_reason == "stop"
    assert await stream.result() is result


async def test_an_empty_batch_anywhere_is_taken_as_nothing() -> None:
    async def source() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        builder = MessageBuilder(MODEL)
        yield builder.drain()  # before start
        builder.text_delta(0, "hi")
        yield builder.drain()
        builder.text_delta(0, "")  # a read whose only delta was empty
        yield builder.drain()
        builder.stop("end", "stop")
        builder.finish()
        yield builder.drain()

    stream = AssistantMessageEventStream.from_batches(source())
    assert [event.type async for event in stream] == ["start", "text_start", "text_delta", "text_end", "done"]
    assert (await stream.result()).content == [TextContent(text="hi")]


async def test_events_after_the_producers_terminal_are_dropped() -> None:
    events, _ = text_sequence()

    async def chatty() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        yield events
        yield events[1:3]

    seen = [event async for event in AssistantMessageEventStream.from_batches(chatty())]
    assert seen == events


async def test_breaking_out_early_closes_the_producer() -> None:
    closed = asyncio.Event()

    async def endless() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        builder = MessageBuilder(MODEL)
        try:
            while True:
                builder.text_delta(0, "x")
                yield builder.drain()
        finally:
            closed.set()

    stream = AssistantMessageEventStream.from_batches(endless())
    count = 0
    async for _ in stream:
        count += 1
        if count == 3:
            break
    await asyncio.wait_for(closed.wait(), 1)
    result = await stream.result()
    assert result.stop_reason == "aborted"
    assert result.content, "the partial content is kept"


async def test_aclose_closes_the_producer_and_result_reports_aborted() -> None:
    closed = asyncio.Event()

    async def slow() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        builder = MessageBuilder(MODEL)
        try:
            builder.start()
            yield builder.drain()
            await asyncio.sleep(3600)
        finally:
            closed.set()

    async with AssistantMessageEventStream.from_batches(slow()) as stream:
        async for event in stream:
            assert event.type == "start"
            break
    assert closed.is_set()
    assert (await stream.result()).stop_reason == "aborted"


async def test_producer_exception_becomes_an_error_event() -> None:
    async def exploding() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        builder = MessageBuilder(MODEL)
        builder.text_delta(0, "so far")
        yield builder.drain()
        raise RuntimeError("adapter bug")

    stream = AssistantMessageEventStream.from_batches(exploding())
    seen = [event async for event in stream]
    assert seen[-1].type == "error"
    assert validate_events(seen) == []
    result = await stream.result()
    assert result.error_message == "RuntimeError: adapter bug"
    assert result.content, "partial content survives"


async def test_cancelled_error_propagates_and_still_closes_the_producer() -> None:
    closed = asyncio.Event()

    async def waits() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        try:
            await asyncio.sleep(3600)
            yield ()
        finally:
            closed.set()

    stream = AssistantMessageEventStream.from_batches(waits())

    async def consume() -> None:
        async for _ in stream:
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed.is_set()


async def test_spawned_push_producer_exception_is_converted() -> None:
    async def producer(stream: AssistantMessageEventStream) -> None:
        builder = MessageBuilder(MODEL)
        builder.start()
        for event in builder.drain():
            stream.push(event)
        await asyncio.sleep(0)
        raise ValueError("boom")

    stream = AssistantMessageEventStream.spawn(producer, model=MODEL)
    seen = [event async for event in stream]
    assert [e.type for e in seen] == ["start", "error"]
    assert (await stream.result()).error_message == "ValueError: boom"


async def test_result_called_inside_the_loop_returns_and_the_loop_still_sees_every_event() -> None:
    async def source() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        builder = MessageBuilder(MODEL)
        for word in ("a", "b", "c"):
            builder.text_delta(0, word)
            yield builder.drain()
        builder.stop("end", "stop")
        builder.finish()
        yield builder.drain()

    stream = AssistantMessageEventStream.from_batches(source())
    seen: list[str] = []
    final = None
    async for event in stream:
        seen.append(event.type)
        if final is None:
            final = await asyncio.wait_for(stream.result(), 1)
    assert final is not None
    assert final.stop_reason == "stop"
    assert seen == ["start", "text_start", "text_delta", "text_delta", "text_delta", "text_end", "done"]


async def test_result_right_after_break_is_aborted_and_the_producer_closes() -> None:
    closed = asyncio.Event()

    async def endless() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        builder = MessageBuilder(MODEL)
        try:
            while True:
                builder.text_delta(0, "x")
                yield builder.drain()
                await asyncio.sleep(0)
        finally:
            closed.set()

    stream = AssistantMessageEventStream.from_batches(endless())
    async for event in stream:
        if event.type == "text_delta":
            break
    result = await asyncio.wait_for(stream.result(), 1)  # no waiting for the close first
    assert result.stop_reason == "aborted"
    assert result.content
    await asyncio.wait_for(closed.wait(), 1)


async def test_result_from_another_task_while_the_loop_body_awaits_does_not_break_the_stream() -> None:
    async def source() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        builder = MessageBuilder(MODEL)
        for word in ("a", "b", "c", "d"):
            await asyncio.sleep(0.005)
            builder.text_delta(0, word)
            yield builder.drain()
        builder.stop("end", "stop")
        builder.finish()
        yield builder.drain()

    stream = AssistantMessageEventStream.from_batches(source())
    other = asyncio.create_task(stream.result())
    seen: list[str] = []
    async for event in stream:
        seen.append(event.type)
        await asyncio.sleep(0.003)  # the loop body awaits: the other task runs meanwhile
    final = await other
    assert final.stop_reason == "stop"
    assert seen[0] == "start"
    assert seen[-1] == "done"
    assert seen.count("text_delta") == 4


async def test_a_producer_whose_cleanup_raises_still_gives_a_result() -> None:
    async def messy() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        builder = MessageBuilder(MODEL)
        try:
            builder.text_delta(0, "partial")
            yield builder.drain()
            await asyncio.sleep(3600)
        finally:
            raise OSError("cleanup failed")

    stream = AssistantMessageEventStream.from_batches(messy())
    async for _ in stream:
        break
    await stream.aclose()  # must not raise
    assert (await stream.result()).stop_reason == "aborted"


async def test_cancelling_a_reading_result_call_ends_the_stream_aborted_for_everyone() -> None:
    async def slow() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        builder = MessageBuilder(MODEL)
        builder.text_delta(0, "so far")
        yield builder.drain()
        await asyncio.sleep(3600)
        yield builder.drain()

    stream = AssistantMessageEventStream.from_batches(slow())
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(stream.result(), 0.05)
    final = await asyncio.wait_for(stream.result(), 1)
    assert final.stop_reason == "aborted"
    assert final.content, "the partial content is kept"


@pytest.mark.parametrize("mode", ["pull", "spawn"])
async def test_a_cancelled_consumer_closes_the_producer_in_both_modes(mode: str) -> None:
    """The consumer's task is cancelled while something still references its cursor (so no
    ``__del__`` can help): the producer must be closed anyway and the stream end ``aborted``."""
    cleaned: list[str] = []

    async def batches() -> AsyncIterator[list[AssistantMessageEvent]]:
        builder = MessageBuilder()
        builder.text_delta(0, "hi")
        yield builder.drain()
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.append(mode)

    async def producer(stream: AssistantMessageEventStream) -> None:
        async for batch in batches():
            for event in batch:
                stream.push(event)

    stream = (
        AssistantMessageEventStream.from_batches(batches())
        if mode == "pull"
        else AssistantMessageEventStream.spawn(producer)
    )
    held: list[object] = []

    async def consume() -> None:
        cursor = aiter(stream)
        held.append(cursor)
        while True:
            await anext(cursor)

    consumer = asyncio.ensure_future(consume())
    await asyncio.sleep(0.1)
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    await asyncio.sleep(0.05)
    assert cleaned == [mode], "the producer's finally ran"
    assert stream.done
    result = await asyncio.wait_for(stream.result(), 1)
    assert result.stop_reason == "aborted"
    assert result.content, "the partial content is kept"
    leftovers = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    assert leftovers == []
    assert held, "the cursor was still referenced throughout"


def test_the_content_and_terminal_event_classes_cover_every_event_class_but_start() -> None:
    from typing import get_args

    from normalize.events import CONTENT_EVENT_TYPES, TERMINAL_EVENT_TYPES, AssistantMessageEvent, StartEvent

    every = set(get_args(AssistantMessageEvent))
    assert set(CONTENT_EVENT_TYPES) | set(TERMINAL_EVENT_TYPES) | {StartEvent} == every
    assert not set(CONTENT_EVENT_TYPES) & set(TERMINAL_EVENT_TYPES)
