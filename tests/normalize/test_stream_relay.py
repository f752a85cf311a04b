"""A pull source may hand the stream a :class:`~normalize.Relay` for its steady state: the stream awaits
the relay directly, then resumes the source; every promise of the stream still holds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from normalize import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Relay,
    validate_events,
    without_relays,
)
from tests.normalize._events import text_sequence

Batch = Sequence[AssistantMessageEvent]


def _relayed(events: list[AssistantMessageEvent], *, relay_until: int, log: list[str]) -> AsyncIterator[Batch | Relay]:
    """Yields events[0] as a batch, then a relay giving events[1:relay_until] one at a time, then the rest."""
    pending = iter(events[1:relay_until])

    async def next_batch() -> Batch | None:
        event = next(pending, None)
        log.append("relay" if event is not None else "relay done")
        return None if event is None else [event]

    async def source() -> AsyncIterator[Batch | Relay]:
        try:
            yield [events[0]]
            yield Relay(next_batch)
            log.append("resumed")
            for event in events[relay_until:]:
                yield [event]
        finally:
            log.append("closed")

    return source()


async def test_the_stream_drives_a_relay_then_resumes_the_source() -> None:
    events, message = text_sequence("Hello")
    log: list[str] = []
    stream = AssistantMessageEventStream.from_batches(_relayed(events, relay_until=4, log=log))
    seen = [event async for event in stream]
    assert seen == events
    assert validate_events(seen) == []
    assert await stream.result() is message
    assert log == ["relay", "relay", "relay", "relay done", "resumed", "closed"]


async def test_a_terminal_from_the_relay_closes_the_source_at_once() -> None:
    events, message = text_sequence("Hi")
    log: list[str] = []
    stream = AssistantMessageEventStream.from_batches(_relayed(events, relay_until=len(events), log=log))
    assert [event async for event in stream] == events
    assert await stream.result() is message
    assert log[-1] == "closed"
    assert "resumed" not in log, "the source is closed where it yielded the relay, never resumed"


async def test_leaving_the_loop_while_a_relay_runs_closes_the_source() -> None:
    events, _ = text_sequence("Hello")
    log: list[str] = []
    stream = AssistantMessageEventStream.from_batches(_relayed(events, relay_until=4, log=log))
    async for event in stream:
        if event.type == "text_delta":
            break
    message = await stream.result()
    assert message.stop_reason == "aborted"
    for _ in range(10):  # the stream closes an abandoned source on the next turns of the loop
        if log[-1] == "closed":
            break
        await asyncio.sleep(0)
    assert log[-1] == "closed"


async def test_a_relay_that_raises_ends_the_stream_as_an_error_and_closes_the_source() -> None:
    events, _ = text_sequence("Hello")
    log: list[str] = []

    async def broken() -> Batch | None:
        raise ValueError("relay bug")

    async def source() -> AsyncIterator[Batch | Relay]:
        try:
            yield [events[0]]
            yield Relay(broken)
        finally:
            log.append("closed")

    stream = AssistantMessageEventStream.from_batches(source())
    seen = [event.type async for event in stream]
    assert seen == ["start", "error"]
    message = await stream.result()
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_message == "ValueError: relay bug"
    assert log == ["closed"]


async def test_without_relays_gives_plain_batches_in_order() -> None:
    events, _ = text_sequence("Hello")
    log: list[str] = []
    plain = [batch async for batch in without_relays(_relayed(events, relay_until=4, log=log))]
    assert all(not isinstance(batch, Relay) for batch in plain)
    assert [event for batch in plain for event in batch] == events
    assert log[-1] == "closed"


def _observed_source(events: list[AssistantMessageEvent], observe: Any) -> AsyncIterator[Batch | Relay]:
    """events[0], then a relay of events[1:-1] one at a time (with ``observe``), then the terminal."""
    pending = iter(events[1:-1])

    async def next_batch() -> Batch | None:
        event = next(pending, None)
        return None if event is None else [event]

    async def source() -> AsyncIterator[Batch | Relay]:
        yield [events[0]]
        yield Relay(next_batch, observe)
        yield [events[-1]]

    return source()


async def test_a_relays_observe_sees_each_batch_before_the_stream_hands_it_over() -> None:
    events, message = text_sequence("Hello")
    observed: list[AssistantMessageEvent] = []
    handed: list[AssistantMessageEvent] = []

    def observe(batch: Batch) -> None:
        # Called before the consumer gets the batch: it has been handed the start and what was
        # observed before, not this batch.
        assert handed == events[: 1 + len(observed)]
        observed.extend(batch)

    stream = AssistantMessageEventStream.from_batches(_observed_source(events, observe))
    async for event in stream:
        handed.append(event)  # noqa: PERF401 - observe reads it as the loop goes
    assert handed == events
    assert observed == events[1:-1]
    assert await stream.result() is message
    # Read through result() alone (the stream's own fill, not the consumer's loop): the same batches.
    observed.clear()
    quiet = AssistantMessageEventStream.from_batches(_observed_source(events, observed.extend))
    assert await quiet.result() is message
    assert observed == events[1:-1]
    # without_relays calls it too.
    observed.clear()
    plain = [batch async for batch in without_relays(_observed_source(events, observed.extend))]
    assert [event for batch in plain for event in batch] == events
    assert observed == events[1:-1]


async def test_an_observe_that_raises_ends_the_stream_as_an_error_without_raising() -> None:
    events, _ = text_sequence("Hello")

    def observe(batch: Batch) -> None:
        raise ValueError("observer bug")

    stream = AssistantMessageEventStream.from_batches(_observed_source(events, observe))
    seen = [event.type async for event in stream]
    assert seen == ["start", "error"]
    message = await stream.result()
    assert message.error_message == "ValueError: observer bug"


async def test_the_steady_state_keeps_no_queue_and_a_queue_keeps_its_order() -> None:
    # One event a read is handed to the reader with no queue: a queue held for the stream's life would
    # be one more object a stream for the garbage collector. Events queued together still come in order.
    events, message = text_sequence("Hello")
    log: list[str] = []
    stream = AssistantMessageEventStream.from_batches(_relayed(events, relay_until=4, log=log))
    seen: list[AssistantMessageEvent] = []
    queues: list[bool] = []
    async for event in stream:
        seen.append(event)
        queues.append(stream._pending is not None)  # pyright: ignore[reportPrivateUsage] - the point of the test
    assert seen == events
    assert queues[1:4] == [False, False, False], "the relay's events were handed over without a queue"
    assert await stream.result() is message
