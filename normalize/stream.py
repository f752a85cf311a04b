"""``AssistantMessageEventStream``: an async iterator of events plus an awaitable ``result()``.

Promises, whatever the producer does:

- exactly one terminal event (``done`` or ``error``) is delivered, and it is the last: events a
  producer emits after its terminal are ignored;
- ``result()`` never raises and never hangs: if the producer ends, raises, or is closed before its
  terminal, the stream synthesizes an ``error`` (kind ``protocol``, or ``aborted`` when the consumer
  closed it) that keeps the partial content — preceded by ``start`` if none was emitted;
- leaving an ``async for`` early (``break``) or calling :meth:`aclose` closes the producer, so an
  adapter's ``finally`` closes its HTTP response;
- ``asyncio.CancelledError``, ``KeyboardInterrupt`` and ``SystemExit`` propagate untouched.

Two ways to produce: *pull* — wrap an async iterator of event batches (:meth:`from_batches`) or of
single events (:meth:`from_events`), which runs only as fast as the consumer reads; or *push* — call
:meth:`push` and :meth:`end` from a producer task (:meth:`spawn` runs one and watches it). The stream
has a single consumer.
"""

# The cursor class below is part of the stream and shares its private state.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol, Self

from normalize._growing import settle
from normalize.errors import ErrorInfo, ErrorKind
from normalize.events import (
    CONTENT_EVENT_TYPES,
    TERMINAL_EVENT_TYPES,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    StartEvent,
)
from normalize.messages import AssistantMessage

if TYPE_CHECKING:
    from types import TracebackType

    from normalize.model import Model

__all__ = ["AssistantMessageEventStream", "Relay", "RelaySteps", "classify_exception", "without_relays"]


_CLOSED_EARLY = "the consumer closed the stream before it completed"


def classify_exception(exc: BaseException) -> ErrorKind:
    """A best-effort error kind for an exception that escaped a producer."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, ConnectionError | OSError):
        return "network"
    return "protocol"


class RelaySteps(Protocol):
    """A relay's read in steps the stream puts together itself, so the steady state awaits the read
    of the relay's library with no coroutine of the relay's around it: one coroutine less an event
    (made, resumed through and freed once an event, and, while it waits, one more young object for
    the collector to visit with everything its frame refers to). Each step is a plain call that never
    raises (one that does is a relay that broke its promise); together they do what one
    ``next_batch()`` does:

    - :meth:`begin` starts a read and returns what to await for it, or None when this read is not
      one the steps take (the stream then awaits ``next_batch()`` instead);
    - the awaited read's result goes to :meth:`took`, an exception it raised to :meth:`failed`, and a
      cancellation to :meth:`cancelled`;
    - :meth:`took` and :meth:`failed` return the read's events (a batch), ``()`` when it made none
      yet (the stream begins another read), or None once reading stopped (as ``next_batch``'s None).
    """

    def begin(self) -> Awaitable[object] | None:
        """Start a read: what to await for it, or None (the stream awaits ``next_batch()``)."""
        ...

    def took(self, got: object) -> Sequence[AssistantMessageEvent] | None:
        """What the read's result brings: a batch, ``()`` (read on) or None (stopped)."""
        ...

    def failed(self, exc: Exception) -> Sequence[AssistantMessageEvent] | None:
        """What the read's exception (never a ``CancelledError``) means, as :meth:`took`."""
        ...

    def cancelled(self) -> bool:
        """The read was cancelled: True when the cancellation is to go on (the stream re-raises it),
        False when it was the relay's own doing and is over (reading stopped, as a None)."""
        ...


class Relay:
    """What a pull source may yield in place of a batch to hand the stream its steady state: the
    stream then awaits ``next_batch()`` directly for each read, instead of resuming the source's
    chain of generators, until ``next_batch`` returns None; the source is then resumed where it
    yielded the relay (and says what stopped it). ``next_batch`` never raises (a failure is the
    source's to report once resumed) but lets ``CancelledError`` through. Closing the stream closes
    the source, suspended at that yield, so its ``finally`` still runs.

    A relay may also offer its read in ``steps`` (:class:`RelaySteps`), which the stream's reader
    then puts together itself, with ``next_batch`` for what the steps do not take.

    A wrapper between a source and the stream that needs every batch passes them on through
    :func:`without_relays`, or, keeping the steady state's direct reads, passes the relay on (its
    ``steps`` too) with an ``observe`` of its own: the stream calls it with each batch the relay
    gives, before it takes the batch (the kit's telemetry does this). ``observe`` never raises
    either; one that does is a relay that broke its promise.
    """

    __slots__ = ("next_batch", "observe", "steps")

    def __init__(
        self,
        next_batch: Callable[[], Awaitable[Sequence[AssistantMessageEvent] | None]],
        observe: Callable[[Sequence[AssistantMessageEvent]], None] | None = None,
        steps: RelaySteps | None = None,
    ) -> None:
        self.next_batch = next_batch
        self.observe = observe
        self.steps = steps


async def without_relays(
    source: AsyncIterator[Sequence[AssistantMessageEvent] | Relay],
) -> AsyncGenerator[Sequence[AssistantMessageEvent], None]:
    """``source``'s batches, each :class:`Relay` driven in place (its batches yielded, then the source
    resumed); closing this closes ``source``."""
    try:
        async for batch in source:
            if isinstance(batch, Relay):
                observe = batch.observe
                while (relayed := await batch.next_batch()) is not None:
                    if observe is not None:
                        observe(relayed)
                    yield relayed
                continue
            yield batch
    finally:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()


class AssistantMessageEventStream:
    """The event stream every StreamFn returns (see the module docstring for its promises)."""

    __slots__ = (
        "_closing",
        "_content_seen",
        "_ended",
        "_filling",
        "_model",
        "_partial",
        "_pending",
        "_pull",
        "_read_waiters",
        "_relay",
        "_relay_observe",
        "_relay_steps",
        "_source",
        "_started",
        "_task",
        "_terminal",
        "_wakeup",
    )

    def __init__(self, *, model: Model | None = None) -> None:
        """A push-mode stream; producers call :meth:`push` and finally :meth:`end`."""
        self._model = model
        self._source: AsyncIterator[Sequence[AssistantMessageEvent] | Relay] | None = None
        self._relay: Callable[[], Awaitable[Sequence[AssistantMessageEvent] | None]] | None = None
        #: The relay's observe (None: it has none).
        self._relay_observe: Callable[[Sequence[AssistantMessageEvent]], None] | None = None
        #: The relay's steps (None: it has none; the reader awaits its next_batch).
        self._relay_steps: RelaySteps | None = None
        #: The events taken from the producer and not yet read (None until there are any: in the
        #: steady state, one event a read, each is handed to the reader without a queue, and a queue
        #: held for the stream's life would be one more object for the collector to walk).
        self._pending: deque[AssistantMessageEvent] | None = None
        self._terminal: DoneEvent | ErrorEvent | None = None
        self._partial: AssistantMessage | None = None
        self._started = False
        self._content_seen = False
        self._ended = False
        self._filling = False
        self._pull = False
        self._closing: asyncio.Task[None] | None = None
        self._wakeup: asyncio.Future[None] | None = None
        #: Tasks waiting for a read in progress to end (None: none ever waited; rare, so made on demand).
        self._read_waiters: list[asyncio.Future[None]] | None = None
        self._task: asyncio.Task[None] | None = None

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_batches(
        cls, source: AsyncIterator[Sequence[AssistantMessageEvent] | Relay], *, model: Model | None = None
    ) -> Self:
        """A pull-mode stream over an async iterator yielding lists of events (one list per read), or a
        :class:`Relay` that hands the stream its steady state."""
        stream = cls(model=model)
        stream._source = source
        stream._pull = True
        return stream

    @classmethod
    def from_events(cls, source: AsyncIterator[AssistantMessageEvent], *, model: Model | None = None) -> Self:
        """A pull-mode stream over an async iterator of single events."""
        return cls.from_batches(_single_batches(source), model=model)

    @classmethod
    def spawn(
        cls, producer: Callable[[AssistantMessageEventStream], Awaitable[None]], *, model: Model | None = None
    ) -> Self:
        """Run ``producer(stream)`` as a task that pushes events; a producer that raises or returns
        without a terminal gets a synthesized ``error``. Closing the stream cancels the task."""
        stream = cls(model=model)
        task = asyncio.get_running_loop().create_task(_run_producer(producer, stream))
        stream._task = task
        return stream

    # -- push mode ------------------------------------------------------------------------------

    def push(self, event: AssistantMessageEvent) -> None:
        """Queue an event for the consumer; ignored once a terminal has been accepted."""
        if self._terminal is not None:
            return
        self._accept(event)
        self._wake()

    def end(self) -> None:
        """Declare that the producer is finished; without a prior terminal, an ``error`` is synthesized."""
        if self._ended:
            return
        self._ended = True
        if self._terminal is None:
            self._synthesize("protocol", "the producer ended without a terminal event")
        self._wake()

    # -- consumer side --------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[AssistantMessageEvent]:
        return _Cursor(self)

    async def result(self) -> AssistantMessage:
        """The terminal event's message.

        Drives the producer when needed, from any task — also from inside the body of an
        ``async for`` over this stream, where the events it reads ahead stay queued for the loop.
        Only one read of the producer runs at a time; other callers wait for it.
        """
        while self._terminal is None:
            await self._fill()
        return self._terminal.message if isinstance(self._terminal, DoneEvent) else self._terminal.error

    async def aclose(self) -> None:
        """Stop the producer now; a stream closed before its terminal ends as ``aborted``."""
        await self._close_early()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def done(self) -> bool:
        """True once a terminal event has been accepted."""
        return self._terminal is not None

    # -- internals ------------------------------------------------------------------------------

    def _accept(self, event: AssistantMessageEvent) -> None:
        self._partial = event.partial
        if isinstance(event, TERMINAL_EVENT_TYPES):
            self._terminal = event
            self._queue().append(event)
            return
        if isinstance(event, StartEvent):
            self._started = True
        else:
            self._content_seen = True
        self._queue().append(event)

    async def _fill(self) -> None:
        """Read one batch from the producer (pull) or wait for pushes (push); never raises."""
        source = self._source
        if source is None:
            if self._ended or self._pull:
                return
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._wakeup = future
            try:
                await future
            except asyncio.CancelledError:
                # As in pull mode: a reader that is cancelled ends the request. Without this the
                # producer task would run on (its finally, closing an HTTP response, never reached)
                # for as long as anything still referenced the cancelled reader.
                self._abandon("the stream was cancelled while reading")
                raise
            finally:
                self._wakeup = None
            return
        if self._filling:
            # Another caller is reading the producer: wait for that read instead of starting one
            # (an async generator cannot be read twice at once).
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            if self._read_waiters is None:
                self._read_waiters = []
            self._read_waiters.append(waiter)
            await waiter
            return
        self._filling = True
        relay = self._relay
        try:
            if relay is not None:
                batch = await relay()
                if batch is None:
                    self._relay = self._relay_steps = None  # the relay is done: the next read resumes the producer
                    return
                if self._relay_observe is not None:
                    self._relay_observe(batch)
            else:
                pulled = await anext(source)
                if isinstance(pulled, Relay):
                    self._relay = pulled.next_batch
                    self._relay_observe = pulled.observe
                    self._relay_steps = pulled.steps
                    return
                batch = pulled
        except StopAsyncIteration:
            self._source = None
            self._ended = True
            self._synthesize("protocol", "the producer ended without a terminal event")
            return
        except asyncio.CancelledError:
            # Whoever was reading was cancelled, and the cancellation went into the producer: the
            # request is over. Later readers get an aborted terminal instead of a dead producer.
            self._abandon("the stream was cancelled while reading")
            raise
        except Exception as exc:  # the never-raise contract: an escaping exception becomes an event
            await self._producer_failed(exc, relay is not None)
            return
        finally:
            self._filling = False
            if self._read_waiters:
                self._release_readers()
        if self._take(batch):
            await self._close_source()

    def _take(self, batch: Sequence[AssistantMessageEvent]) -> bool:
        """Queue one read's events for the consumer; True when they held the terminal (the producer is
        then to be closed: whatever it would send after is ignored, and an adapter's finally, closing
        its HTTP response, runs at the terminal, not later)."""
        if not batch:
            return False  # a read that produced no event (a keep-alive, an empty delta): nothing to take
        if self._started and CONTENT_EVENT_TYPES.issuperset(map(type, batch)):
            # The common batch (one network read of content events): taken whole, at C speed.
            self._queue().extend(batch)
            self._partial = batch[-1].partial
            self._content_seen = True
            return False
        for event in batch:
            if self._terminal is not None:
                break
            self._accept(event)
        return self._terminal is not None

    async def _producer_failed(self, exc: Exception, relayed: bool) -> None:
        """An exception escaped the producer (or a relay broke its promise never to raise): it becomes
        the stream's error event (the never-raise contract)."""
        if relayed:
            # The producer behind the relay is still suspended, and owns a response to close.
            await self._close_source()
        self._source = None
        self._ended = True
        self._synthesize(classify_exception(exc), f"{type(exc).__name__}: {exc}")

    def _release_readers(self) -> None:
        """Wake the tasks that waited for a read to end (rare: result() beside an ``async for``)."""
        waiters, self._read_waiters = self._read_waiters or [], None
        for ready in waiters:
            if not ready.done():
                ready.set_result(None)

    def _wake(self) -> None:
        wakeup = self._wakeup
        if wakeup is not None and not wakeup.done():
            wakeup.set_result(None)

    def _synthesize(self, kind: ErrorKind, message: str) -> None:
        partial = self._partial
        if partial is None:
            partial = AssistantMessage.empty_for(self._model)
        if not self._started:
            self._accept(StartEvent(partial))
        for block in partial.content:
            settle(block)  # a block cut off while streaming ends a plain instance of its class, as the builder's do
        reason = "aborted" if kind == "aborted" else "error"
        partial.stop_reason = reason
        partial.error_message = message
        partial.error_info = ErrorInfo.of(kind, output_started=self._content_seen)
        self._accept(ErrorEvent(reason, partial))

    async def _close_source(self) -> None:
        """Close the producer (pull source or producer task); a failing cleanup is not raised."""
        source, self._source = self._source, None
        self._relay = self._relay_steps = None
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
        if source is not None:
            aclose = getattr(source, "aclose", None)
            if aclose is not None:
                # The producer's own cleanup failing must not reach the consumer (never-raise).
                with contextlib.suppress(Exception):
                    await aclose()

    async def _close_early(self) -> None:
        try:
            await self._close_source()
        finally:
            self._end_as_aborted()

    def _end_as_aborted(self, reason: str = _CLOSED_EARLY) -> None:
        if self._terminal is None:
            self._ended = True
            self._synthesize("aborted", reason)
        self._pending = None

    def _queue(self) -> deque[AssistantMessageEvent]:
        """The queue of events not yet read, made when the first is queued."""
        pending = self._pending
        if pending is None:
            pending = self._pending = deque()
        return pending

    def _abandon(self, reason: str = _CLOSED_EARLY) -> None:
        """Nobody will read on (the consumer left its loop, or was cancelled): end ``aborted`` now,
        cancel a producer task at once and close a pull source on the next turn of the event loop."""
        self._end_as_aborted(reason)
        task, self._task = self._task, None
        if task is not None and not task.done():
            # At once: cancelling needs no await. (A closed loop — interpreter shutdown — refuses.)
            with contextlib.suppress(RuntimeError):
                task.cancel()
        if self._source is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (interpreter shutdown): the producer is finalized by the GC
            return
        self._closing = loop.create_task(self._close_source())


class _Cursor:
    """One ``async for`` over a stream.

    Dropping it before the terminal — a ``break``, or an exception leaving the loop body — abandons
    the stream at once (CPython frees the cursor as the loop exits): the stream ends ``aborted`` with
    its partial content, and the producer is closed on the next turn of the event loop.
    """

    __slots__ = ("_finished", "_stream")

    def __init__(self, stream: AssistantMessageEventStream) -> None:
        self._stream = stream
        self._finished = False

    def __aiter__(self) -> _Cursor:
        return self

    async def __anext__(self) -> AssistantMessageEvent:
        stream = self._stream
        while True:
            pending = stream._pending
            if pending:
                event = pending.popleft()
                if not pending:
                    stream._pending = None  # not kept through the steady state (see _pending)
                if event is stream._terminal:
                    self._finished = True
                return event
            if self._finished or stream._terminal is not None:
                self._finished = True
                raise StopAsyncIteration
            if stream._relay is None or stream._filling:
                await stream._fill()
                continue
            # The steady state, one read per event: _fill's relay branch inline, so each event resumes
            # one coroutine less (the same steps, in the same order, as there). The relay is called
            # from the stream, not kept in a local: while the read is pending, this frame refers to the
            # cursor, the stream and the steps alone (the collector's young passes visit what a new
            # frame refers to).
            stream._filling = True
            try:
                steps = stream._relay_steps
                if steps is None:
                    batch = await stream._relay()  # pyright: ignore[reportOptionalCall] - checked above, nothing awaited since
                else:
                    # The relay's read in its steps: the read of the relay's library awaited here, with
                    # no coroutine of the relay's around it (see RelaySteps).
                    while True:
                        awaiting = steps.begin()
                        if awaiting is None:
                            batch = await stream._relay()  # pyright: ignore[reportOptionalCall] - as above
                            break
                        try:
                            got = await awaiting
                        except asyncio.CancelledError:
                            if steps.cancelled():
                                raise
                            batch = None  # the relay's own cancellation: its reading stopped
                            break
                        except Exception as exc:
                            batch = steps.failed(exc)
                        else:
                            batch = steps.took(got)
                        if batch is None or batch:
                            break
                if batch is not None and (observe := stream._relay_observe) is not None:
                    observe(batch)
            except asyncio.CancelledError:
                stream._abandon("the stream was cancelled while reading")
                raise
            except Exception as exc:  # a relay that broke its promise never to raise
                await stream._producer_failed(exc, True)
                continue
            finally:
                stream._filling = False
                if stream._read_waiters:
                    stream._release_readers()
            if batch is None:
                stream._relay = stream._relay_steps = None  # the relay is done: the next read resumes the producer
            elif (
                len(batch) == 1
                and (event := batch[0]).__class__ in CONTENT_EVENT_TYPES
                and stream._started
                and stream._terminal is None
            ):
                # The steady state's batch (one read, one content event), handed over as it comes: what
                # _take and the queue would do with it, in the same order, minus the queue.
                stream._partial = event.partial
                stream._content_seen = True
                return event
            elif stream._take(batch):
                await stream._close_source()

    async def aclose(self) -> None:
        """Close the stream (see :meth:`AssistantMessageEventStream.aclose`)."""
        self._finished = True
        await self._stream.aclose()

    def __del__(self) -> None:
        if not self._finished:
            self._finished = True
            self._stream._abandon()


async def _single_batches(
    source: AsyncIterator[AssistantMessageEvent],
) -> AsyncIterator[Sequence[AssistantMessageEvent]]:
    try:
        async for event in source:
            yield (event,)
    finally:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()


async def _run_producer(
    producer: Callable[[AssistantMessageEventStream], Awaitable[None]], stream: AssistantMessageEventStream
) -> None:
    try:
        await producer(stream)
    except asyncio.CancelledError:
        stream.end()
        raise
    except Exception as exc:  # the never-raise contract: an escaping exception becomes an event
        if not stream.done:
            stream._synthesize(classify_exception(exc), f"{type(exc).__name__}: {exc}")
    stream.end()
