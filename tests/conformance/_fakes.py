"""Tiny adapters without HTTP, each breaking one Python-level rule, for harness self-tests.

Every one streams a short scripted text reply through the real ``MessageBuilder`` unless its defect
says otherwise. ``TARGETS`` wraps them as conformance targets (capabilities: no HTTP).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from conformance import Capabilities, Target
from normalize import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    ErrorInfo,
    MessageBuilder,
    Model,
    StartEvent,
    StreamOptions,
)

__all__ = [
    "NO_HTTP",
    "TARGETS",
    "fails_quoting_the_key",
    "hangs",
    "raises_on_call",
    "starts_twice",
    "swallows_cancellation",
    "well_behaved",
]

NO_HTTP = Capabilities(http=False)
_WORDS = ("Hello", " there", ", how", " can", " I", " help", "?")


async def _reply(
    model: Model, options: StreamOptions | None, *, double_start: bool = False
) -> AsyncIterator[AssistantMessageEvent]:
    builder = MessageBuilder(model)
    signal = options.signal if options else None
    builder.usage(input=3, output=0)
    builder.start()
    for event in builder.drain():
        yield event
        if double_start:
            yield StartEvent(event.partial)
    for word in _WORDS:
        if signal is not None and signal.aborted:
            builder.abort(signal.reason)
            break
        builder.text_delta(0, word)
        for event in builder.drain():
            yield event
        await asyncio.sleep(0.005)
    else:
        builder.stop("end", "stop")
        builder.finish()
    for event in builder.drain():
        yield event


def well_behaved(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessageEventStream:
    """Keeps every rule."""
    del context
    return AssistantMessageEventStream.from_events(_reply(model, options), model=model)


def starts_twice(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessageEventStream:
    """Emits ``start`` twice (G1)."""
    del context
    return AssistantMessageEventStream.from_events(_reply(model, options, double_start=True), model=model)


def raises_on_call(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessageEventStream:
    """Raises when called (N1)."""
    raise RuntimeError("no client configured")


def hangs(model: Model, context: Context, options: StreamOptions | None = None) -> AsyncIterator[AssistantMessageEvent]:
    """Starts, then never ends and ignores the abort signal (G2 hang, A1, A2)."""

    async def events() -> AsyncIterator[AssistantMessageEvent]:
        builder = MessageBuilder(model)
        builder.start()
        for event in builder.drain():
            yield event
        await asyncio.Event().wait()

    return events()


def swallows_cancellation(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AsyncIterator[AssistantMessageEvent]:
    """Turns the consumer's cancellation into an ordinary end of the stream (N2)."""

    async def events() -> AsyncIterator[AssistantMessageEvent]:
        builder = MessageBuilder(model)
        try:
            async for event in _reply(model, options):
                yield event
        except asyncio.CancelledError:  # the defect: cancellation must propagate
            builder.abort("cancelled")
            for event in builder.drain():
                yield event

    return events()


def fails_quoting_the_key(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Ends every stream in an error whose message explains why — and quotes the API key."""
    del context
    key = options.api_key if options is not None else None

    async def events() -> AsyncIterator[AssistantMessageEvent]:
        builder = MessageBuilder(model)
        builder.start()
        builder.fail(ErrorInfo.of("server"), f"the upstream refused key {key}: model warming up, retry in 30 s")
        for event in builder.drain():
            yield event

    return AssistantMessageEventStream.from_events(events(), model=model)


TARGETS: dict[str, Target] = {
    name: Target(fn, NO_HTTP)
    for name, fn in {
        "well_behaved": well_behaved,
        "starts_twice": starts_twice,
        "raises_on_call": raises_on_call,
        "hangs": hangs,
        "swallows_cancellation": swallows_cancellation,
        "fails_quoting_the_key": fails_quoting_the_key,
    }.items()
}
