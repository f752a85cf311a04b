"""Hostile adapters: each tries to hang, fool or crash the harness that judges it.

None sends HTTP (capabilities ``http=False``), so each run is a handful of plain calls. The harness
must end every run with a report within its stated bound and blame the adapter — never hang, never
exit early, never call a check with nothing to judge a pass, never report the adapter's fault as its
own (``HARNESS-ERROR``). ``TARGETS`` wraps them as conformance targets.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, NoReturn

from conformance import Capabilities, Target
from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    MessageBuilder,
    Model,
    StreamOptions,
)
from tests.conformance._fakes import well_behaved

__all__ = ["BLOCK_S", "TARGETS", "Detonation"]

NO_HTTP = Capabilities(http=False)
#: How long the loop-blocking adapters block (long enough to outlast any bound a test sets).
BLOCK_S = 20.0
_kept: set[asyncio.Future[Any]] = set()


class Detonation(BaseException):
    """A custom ``BaseException`` (neither ``Exception`` nor a cancellation)."""


async def _unkillable() -> None:
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue  # the defect: cancellation is ignored, so the task never ends


def leaves_an_unkillable_task(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Streams normally but starts a task that ignores cancellation (``asyncio.run`` waits for it forever)."""
    task = asyncio.get_running_loop().create_task(_unkillable())
    _kept.add(task)
    return well_behaved(model, context, options)


def swallows_cancellation_forever(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AsyncIterator[AssistantMessageEvent]:
    """Starts, then waits forever, ignoring every cancellation."""

    async def events() -> AsyncIterator[AssistantMessageEvent]:
        builder = MessageBuilder(model)
        builder.start()
        for event in builder.drain():
            yield event
        await _unkillable()

    return events()


def blocks_the_loop(model: Model, context: Context, options: StreamOptions | None = None) -> NoReturn:
    """A blocking call where an ``await`` belongs: the event loop stops for :data:`BLOCK_S`."""
    time.sleep(BLOCK_S)
    raise RuntimeError("woke up")


def blocks_the_loop_mid_stream(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AsyncIterator[AssistantMessageEvent]:
    """Starts, then blocks the loop (a synchronous sleep inside the async generator)."""

    async def events() -> AsyncIterator[AssistantMessageEvent]:
        builder = MessageBuilder(model)
        builder.start()
        for event in builder.drain():
            yield event
        time.sleep(BLOCK_S)  # noqa: ASYNC251 - the defect under test

    return events()


async def never_returns(model: Model, context: Context, options: StreamOptions | None = None) -> NoReturn:
    """An awaitable StreamFn whose await never completes."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def exits_zero(model: Model, context: Context, options: StreamOptions | None = None) -> NoReturn:
    """``SystemExit(0)`` from the call: a careless harness exits 0 with no report (CI reads success)."""
    raise SystemExit(0)


def interrupts_while_streaming(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AsyncIterator[AssistantMessageEvent]:
    """``KeyboardInterrupt`` after the first event (a careless harness exits 130)."""

    async def events() -> AsyncIterator[AssistantMessageEvent]:
        builder = MessageBuilder(model)
        builder.start()
        for event in builder.drain():
            yield event
        raise KeyboardInterrupt

    return events()


def exits_from_a_task(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Streams normally, but a task it starts raises ``SystemExit`` (which escapes the event loop)."""

    async def bomb() -> None:
        await asyncio.sleep(0)
        raise SystemExit(0)

    _kept.add(asyncio.get_running_loop().create_task(bomb()))
    return well_behaved(model, context, options)


def leaves_threads_running(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Streams normally, but leaves a non-daemon thread and an executor job sleeping for an hour: the
    interpreter would wait for both before exiting."""
    threading.Thread(target=time.sleep, args=(3600,), name="adapter-sleeper", daemon=False).start()
    _kept.add(asyncio.ensure_future(asyncio.get_running_loop().run_in_executor(None, time.sleep, 3600)))
    return well_behaved(model, context, options)


def exits_in_the_factory() -> NoReturn:
    """A factory (it takes no arguments) that raises ``SystemExit(0)`` instead of returning a StreamFn."""
    raise SystemExit(0)


def returns_42(model: Model, context: Context, options: StreamOptions | None = None) -> int:
    """Not a stream at all."""
    return 42


class _DetonatingResult:
    """A stream that iterates well but whose ``result()`` raises a custom ``BaseException``."""

    def __init__(self, inner: AssistantMessageEventStream) -> None:
        self._inner = inner

    def __aiter__(self) -> AsyncIterator[AssistantMessageEvent]:
        return self._inner.__aiter__()

    async def result(self) -> AssistantMessage:
        raise Detonation("result() went off")


def result_raises_a_base_exception(
    model: Model, context: Context, options: StreamOptions | None = None
) -> _DetonatingResult:
    """``await stream.result()`` raises :class:`Detonation`."""
    return _DetonatingResult(well_behaved(model, context, options))


class _Booby:
    """Looks like an event until the harness looks closer: every attribute raises."""

    def __getattr__(self, name: str) -> NoReturn:
        raise RuntimeError(f"reading .{name} of this event went off")


class _BoobyWithClass:
    """Also lies about its class when asked."""

    @property
    def __class__(self) -> type:  # pyright: ignore[reportIncompatibleMethodOverride] - the lie is the point
        raise RuntimeError("asking my class went off")

    def __getattr__(self, name: str) -> NoReturn:
        raise RuntimeError(f"reading .{name} of this event went off")


def yields_booby_trapped_events(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AsyncIterator[Any]:
    """Starts, then yields objects whose attributes (and ``__class__``) raise, then ends properly."""

    async def events() -> AsyncIterator[Any]:
        builder = MessageBuilder(model)
        builder.start()
        for event in builder.drain():
            yield event
        yield _Booby()
        yield _BoobyWithClass()
        builder.text_delta(0, "Hello")
        builder.stop("end", "stop")
        builder.finish()
        for event in builder.drain():
            yield event

    return events()


TARGETS: dict[str, Target] = {
    fn.__name__: Target(fn, NO_HTTP)
    for fn in (
        leaves_an_unkillable_task,
        swallows_cancellation_forever,
        blocks_the_loop,
        blocks_the_loop_mid_stream,
        never_returns,
        exits_zero,
        exits_in_the_factory,
        interrupts_while_streaming,
        exits_from_a_task,
        leaves_threads_running,
        returns_42,
        result_raises_a_base_exception,
        yields_booby_trapped_events,
    )
}
