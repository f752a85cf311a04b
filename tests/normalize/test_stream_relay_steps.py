"""A relay may offer its read in steps (:class:`~normalize.RelaySteps`): the stream's reader then
awaits the relay's own read itself, with no coroutine of the relay's around it, and hands what the
read gave to the steps. Every promise of the stream still holds: the order of events, ``observe``,
the source resumed once reading stops, cancellation going on, a broken step ending the stream as an
error."""

from __future__ import annotations

import asyncio
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, cast

import pytest

from normalize import AssistantMessageEvent, AssistantMessageEventStream, Relay, validate_events
from tests.normalize._events import text_sequence

Batch = Sequence[AssistantMessageEvent]


class _Reads:
    """Steps over a list of reads: each read is a coroutine that gives the next item after a turn of
    the loop (as a socket read would); an item is a batch of events, ``"none"`` (a read that made no
    events), ``"end"`` (reading stopped) or an exception (the read raises it)."""

    def __init__(self, reads: list[object], log: list[str]) -> None:
        self._reads = iter(reads)
        self.log = log
        self.stopped = False

    async def _read(self) -> object:
        await asyncio.sleep(0)
        item = next(self._reads, "end")
        if isinstance(item, Exception):
            raise item
        return item

    def begin(self) -> Awaitable[object] | None:
        self.log.append("begin")
        return None if self.stopped else self._read()

    def took(self, got: object) -> Batch | None:
        self.log.append("took")
        if got == "none":
            return ()
        if got == "end":
            self.stopped = True
            return None
        assert isinstance(got, list)
        return got  # pyright: ignore[reportUnknownVariableType]

    def failed(self, exc: Exception) -> Batch | None:
        self.log.append(f"failed {type(exc).__name__}")
        self.stopped = True
        return None

    def cancelled(self) -> bool:
        self.log.append("cancelled")
        return True

    async def next_batch(self) -> Batch | None:
        self.log.append("next_batch")
        return None


class _Stalls(_Reads):
    """Steps whose read waits until ``release`` is set (never, unless the test sets it), then gives
    ``then``; ``started`` is set once the read is pending."""

    def __init__(self, log: list[str], then: object = None) -> None:
        super().__init__([], log)
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.then = then

    async def _read(self) -> object:
        self.started.set()
        await self.release.wait()
        return self.then


def _source(
    events: list[AssistantMessageEvent], steps: _Reads, log: list[str], observe: Callable[[Batch], None] | None = None
) -> AsyncIterator[Batch | Relay]:
    async def source() -> AsyncIterator[Batch | Relay]:
        try:
            yield [events[0]]
            yield Relay(steps.next_batch, observe, steps)
            log.append("resumed")
            yield [events[-1]]
        finally:
            log.append("closed")

    return source()


async def test_the_stream_reads_through_the_steps_and_never_awaits_next_batch_while_they_read() -> None:
    events, message = text_sequence("Hello")
    log: list[str] = []
    content = events[1:-1]
    steps = _Reads([[content[0]], "none", *[[event] for event in content[1:]]], log)
    stream = AssistantMessageEventStream.from_batches(_source(events, steps, log))
    seen = [event async for event in stream]
    assert seen == events
    assert validate_events(seen) == []
    assert await stream.result() is message
    # One read an event, a read that made none read past, then the steps stop and the source resumes.
    assert log == ["begin", "took"] * (len(content) + 2) + ["resumed", "closed"]
    assert "next_batch" not in log


async def test_a_begin_that_takes_no_read_hands_the_read_to_next_batch() -> None:
    events, _ = text_sequence("Hi")
    log: list[str] = []
    steps = _Reads([], log)
    steps.stopped = True  # begin gives no read: the stream awaits next_batch, which says the relay is done
    stream = AssistantMessageEventStream.from_batches(_source(events, steps, log))
    seen = [event.type async for event in stream]
    assert seen == ["start", "done"]
    assert log == ["begin", "next_batch", "resumed", "closed"]


async def test_observe_sees_the_batches_the_steps_give() -> None:
    events, _ = text_sequence("Hello")
    log: list[str] = []
    observed: list[AssistantMessageEvent] = []
    content = events[1:-1]
    steps = _Reads([[event] for event in content], log)
    stream = AssistantMessageEventStream.from_batches(_source(events, steps, log, observed.extend))
    assert [event async for event in stream] == events
    assert observed == content


async def test_a_failed_read_goes_to_failed_and_the_source_settles_it() -> None:
    events, _ = text_sequence("Hello")
    log: list[str] = []
    steps = _Reads([[events[1]], ConnectionResetError("reset")], log)
    stream = AssistantMessageEventStream.from_batches(_source(events, steps, log))
    seen = [event async for event in stream]
    assert seen == [events[0], events[1], events[-1]]
    assert log == ["begin", "took", "begin", "failed ConnectionResetError", "resumed", "closed"]


async def test_a_cancelled_read_asks_cancelled_then_the_cancellation_goes_on_and_the_stream_is_aborted() -> None:
    events, _ = text_sequence("Hello")
    log: list[str] = []
    steps = _Stalls(log)
    stream = AssistantMessageEventStream.from_batches(_source(events, steps, log))

    async def consume() -> None:
        async for _ in stream:
            pass

    task = asyncio.ensure_future(consume())
    await steps.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    message = await stream.result()
    assert message.stop_reason == "aborted"
    assert log[:2] == ["begin", "cancelled"]
    for _ in range(10):  # the abandoned source is closed on the next turns of the loop
        if log[-1] == "closed":
            break
        await asyncio.sleep(0)
    assert log[-1] == "closed"


async def test_a_cancellation_the_relay_took_back_stops_its_reading_and_resumes_the_source() -> None:
    events, _ = text_sequence("Hello")
    log: list[str] = []

    class _OwnCancel(_Stalls):
        def cancelled(self) -> bool:
            log.append("cancelled: ours")
            task = asyncio.current_task()
            assert task is not None
            task.uncancel()  # the relay's own cancellation (a clock that fired), taken back
            return False

    steps = _OwnCancel(log)
    stream = AssistantMessageEventStream.from_batches(_source(events, steps, log))
    cursor = aiter(stream)
    assert (await anext(cursor)).type == "start"
    reading = asyncio.ensure_future(anext(cursor))
    await steps.started.wait()
    reading.cancel()  # as the relay's own clock would
    assert (await reading).type == "done"  # not cancelled: the source resumed and sent its terminal
    assert log == ["begin", "cancelled: ours", "resumed", "closed"]


@pytest.mark.parametrize("step", ["begin", "took", "failed"])
async def test_a_step_that_raises_ends_the_stream_as_an_error_and_closes_the_source(step: str) -> None:
    events, _ = text_sequence("Hello")
    log: list[str] = []

    class _Broken(_Reads):
        def begin(self) -> Awaitable[object] | None:
            if step == "begin":
                raise ValueError("step bug")
            return super().begin()

        def took(self, got: object) -> Batch | None:
            if step == "took":
                raise ValueError("step bug")
            return super().took(got)

        def failed(self, exc: Exception) -> Batch | None:
            raise ValueError("step bug")

    steps = _Broken([OSError("read failed")] if step == "failed" else [[events[1]]], log)
    stream = AssistantMessageEventStream.from_batches(_source(events, steps, log))
    seen = [event.type async for event in stream]
    assert seen == ["start", "error"]
    message = await stream.result()
    assert message.error_message == "ValueError: step bug"
    assert log[-1] == "closed"
    assert "resumed" not in log


async def test_while_a_read_is_pending_the_readers_frame_holds_only_the_cursor_the_stream_and_the_steps() -> None:
    # A thousand streams keep a thousand of these frames, each new since the collector's last young
    # pass; the pass visits every object a frame refers to.
    events, _ = text_sequence("Hello")
    log: list[str] = []
    steps = _Stalls(log, then=[events[1]])
    stream = AssistantMessageEventStream.from_batches(_source(events, steps, log))
    cursor = aiter(stream)
    assert (await anext(cursor)).type == "start"
    pending = anext(cursor)
    reading = asyncio.ensure_future(pending)
    await steps.started.wait()
    frame = cast("types.CoroutineType[Any, Any, Any]", pending).cr_frame
    assert frame is not None
    held = {name for name, value in cast("dict[str, object]", frame.f_locals).items() if value is not None}
    assert held <= {"self", "stream", "steps", "awaiting"}, held
    steps.release.set()
    assert await reading is events[1]
    await stream.aclose()
