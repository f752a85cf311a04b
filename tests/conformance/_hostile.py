"""Hostile adapters: each tries to hang, fool or crash the harness that judges it.

None sends HTTP (capabilities ``http=False``), so each run is a handful of plain calls. The harness
must end every run with a report within its stated bound and blame the adapter — never hang, never
exit early, never call a check with nothing to judge a pass, never report the adapter's fault as its
own (``HARNESS-ERROR``), never let the adapter's text drive the terminal or break the XML.
``TARGETS`` wraps them as conformance targets; ``IMPORT_FAILURES`` and :func:`hangs_at_import` are
modules (as source text) whose import itself is hostile.
"""

from __future__ import annotations

import asyncio
import base64
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
    DoneEvent,
    ErrorInfo,
    MessageBuilder,
    Model,
    StartEvent,
    StreamOptions,
    TextContent,
    Usage,
)
from normalize.events import TextDeltaEvent, TextEndEvent, TextStartEvent
from tests.conformance._fakes import well_behaved

__all__ = [
    "BLOCK_S",
    "CONTROL_TEXT",
    "FLOODED",
    "IMPORT_FAILURES",
    "TARGETS",
    "Detonation",
    "hangs_at_import",
]

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


# -- objects that go off outside the harness's worker thread ----------------------------------------------


def _outside_the_worker() -> bool:
    return threading.current_thread().name != "conformance-worker"


class _TrapText(str):
    """Text that detonates when compared anywhere but in the harness's worker thread (where the
    adapter's code runs under the watchdog): in the caller's thread it would end the run."""

    def __eq__(self, other: object) -> bool:
        if _outside_the_worker():
            raise Detonation("compared in the caller's thread")
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        if _outside_the_worker():
            raise Detonation("compared in the caller's thread")
        return str.__ne__(self, other)

    __hash__ = str.__hash__


class _TrapCount(int):
    """A token count that detonates when compared outside the worker thread."""

    def __lt__(self, other: int) -> bool:
        if _outside_the_worker():
            raise Detonation("compared in the caller's thread")
        return int.__lt__(self, other)

    __hash__ = int.__hash__


def leaves_traps_for_the_caller(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AsyncIterator[AssistantMessageEvent]:
    """A well-formed stream whose final message holds a ``str`` and an ``int`` subclass of its own:
    their JSON is plain, but the objects detonate (a ``BaseException``) when a check compares them
    outside the worker thread."""

    async def events() -> AsyncIterator[AssistantMessageEvent]:
        message = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
        yield StartEvent(message)
        message.content.append(TextContent(text=""))
        yield TextStartEvent(0, message)
        yield TextDeltaEvent(0, "hi", message)
        message.content[0] = TextContent(text=_TrapText("hi"))
        yield TextEndEvent(0, "hi", message)
        message.usage = Usage(input=_TrapCount(3), output=1, total_tokens=4)
        message.stop_reason = "stop"
        yield DoneEvent("stop", message)

    return events()


class _BlocksWhenRead:
    """Stands where a message belongs; reading it (``to_json``) blocks the thread for :data:`BLOCK_S`."""

    def to_json(self) -> dict[str, Any]:
        time.sleep(BLOCK_S)
        return {}


def blocks_when_its_message_is_read(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AsyncIterator[Any]:
    """Starts, then ends ``done`` with a message whose ``to_json`` blocks: whoever reads it — the
    worker, then a harness giving up on the worker — is stuck."""

    async def events() -> AsyncIterator[Any]:
        yield StartEvent(AssistantMessage(api=model.api, provider=model.provider, model=model.id))
        yield DoneEvent("stop", _BlocksWhenRead())  # pyright: ignore[reportArgumentType] - the hostility

    return events()


#: How many events :func:`floods_without_awaiting` has yielded, all runs together.
FLOODED: list[int] = [0]


def floods_without_awaiting(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AsyncIterator[AssistantMessageEvent]:
    """Starts a text block, then yields the same delta forever without ever awaiting: the worker's
    event loop never gets control back, and a harness that keeps every event runs out of memory."""

    async def events() -> AsyncIterator[AssistantMessageEvent]:
        message = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
        yield StartEvent(message)
        message.content.append(TextContent(text=""))
        yield TextStartEvent(0, message)
        delta = TextDeltaEvent(0, "x" * 100, message)
        while True:
            FLOODED[0] += 1
            yield delta

    return events()


def leaks_the_key_in_base64(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AsyncIterator[AssistantMessageEvent]:
    """Ends in an error quoting the Basic authorization it sent: the API key, base64-encoded."""
    key = options.api_key if options is not None and options.api_key else "no-key"

    async def events() -> AsyncIterator[AssistantMessageEvent]:
        builder = MessageBuilder(model)
        builder.start()
        credentials = base64.b64encode(f"user:{key}".encode()).decode()
        builder.fail(ErrorInfo.of("auth", status=401), f"401 from upstream; we sent Authorization: Basic {credentials}")
        for event in builder.drain():
            yield event

    return events()


#: Terminal control sequences (retitle the window, clear the screen), a NUL, a C1 CSI, a bidi
#: override and a lone surrogate: what an adapter's exception text may hold.
CONTROL_TEXT = "boom\x1b]0;owned\x07\x1b[2J\x00 \x9b31m \u202eevil \ud800 end"


def raises_with_control_characters(model: Model, context: Context, options: StreamOptions | None = None) -> NoReturn:
    """Raises when called, its message full of control characters (:data:`CONTROL_TEXT`)."""
    raise RuntimeError(CONTROL_TEXT)


# -- modules whose import is hostile (source text; the tests write them to a temporary folder) -------------

#: Module name → source of a module whose import fails in a way ``except ImportError`` misses.
IMPORT_FAILURES: dict[str, str] = {
    "conformance_exits_at_import": "raise SystemExit(0)\n",
    "conformance_needs_a_variable_at_import": "import os\n\nKEY = os.environ['CONFORMANCE_NO_SUCH_VARIABLE']\n",
    "conformance_raises_escapes_at_import": f"raise RuntimeError({CONTROL_TEXT!r} + '\\nsecond line')\n",
}


def hangs_at_import(seconds: float) -> str:
    """The source of a module whose import sleeps ``seconds`` (then defines ``stream_fn``)."""
    return f"import time\n\ntime.sleep({seconds!r})\n\n\ndef stream_fn(model, context, options=None):\n    return 42\n"


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
        leaves_traps_for_the_caller,
        blocks_when_its_message_is_read,
        floods_without_awaiting,
        leaks_the_key_in_base64,
        raises_with_control_characters,
    )
}
