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

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Self

from normalize.errors import ErrorInfo, ErrorKind
from normalize.events import AssistantMessageEvent, DoneEvent, ErrorEvent, StartEvent
from normalize.messages import AssistantMessage

if TYPE_CHECKING:
    from types import TracebackType

    from normalize.model import Model

__all__ = ["AssistantMessageEventStream", "classify_exception"]

_CLOSED_EARLY = "the consumer closed the stream before it completed"


def classify_exception(exc: BaseException) -> ErrorKind:
    """A best-effort error kind for an exception that escaped a producer."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, ConnectionError | OSError):
        return "network"
    return "protocol"


class AssistantMessageEventStream:
    """The event stream every StreamFn returns (see the module docstring for its promises)."""

    __slots__ = (
        "_content_seen",
        "_ended",
        "_filling",
        "_iterating",
        "_model",
        "_partial",
        "_pending",
        "_source",
        "_started",
        "_task",
        "_terminal",
        "_terminal_waiters",
        "_wakeup",
    )

    def __init__(self, *, model: Model | None = None) -> None:
        """A push-mode stream; producers call :meth:`push` and finally :meth:`end`."""
        self._model = model
        self._source: AsyncIterator[Sequence[AssistantMessageEvent]] | None = None
        self._pending: deque[AssistantMessageEvent] = deque()
        self._terminal: DoneEvent | ErrorEvent | None = None
        self._partial: AssistantMessage | None = None
        self._started = False
        self._content_seen = False
        self._ended = False
        self._iterating = False
        self._filling = False
        self._wakeup: asyncio.Future[None] | None = None
        self._terminal_waiters: list[asyncio.Future[None]] = []
        self._task: asyncio.Task[None] | None = None

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_batches(
        cls, source: AsyncIterator[Sequence[AssistantMessageEvent]], *, model: Model | None = None
    ) -> Self:
        """A pull-mode stream over an async iterator yielding lists of events (one list per read)."""
        stream = cls(model=model)
        stream._source = source
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

    async def __aiter__(self) -> AsyncIterator[AssistantMessageEvent]:
        self._iterating = True
        try:
            pending = self._pending
            while True:
                if pending:
                    event = pending.popleft()
                    yield event
                    if event is self._terminal:
                        return
                    continue
                if self._terminal is not None:
                    return
                await self._fill()
        finally:
            self._iterating = False
            if self._terminal is None or self._pending:
                await self._close_early()
            else:
                await self._close_source()

    async def result(self) -> AssistantMessage:
        """The terminal event's message.

        Drives the stream to its end when nobody else is reading the producer — also from inside
        an ``async for`` body, where the events read ahead stay queued for the loop.
        """
        if self._terminal is None and not self._iterating:
            async for _ in self:
                pass
        while self._terminal is None:
            if self._source is not None and not self._filling:
                await self._fill()
            else:
                future = asyncio.get_running_loop().create_future()
                self._terminal_waiters.append(future)
                await future
        assert self._terminal is not None  # the loops above always end with a terminal
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
        if isinstance(event, DoneEvent | ErrorEvent):
            self._terminal = event
            self._pending.append(event)
            waiters, self._terminal_waiters = self._terminal_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
            return
        if isinstance(event, StartEvent):
            self._started = True
        else:
            self._content_seen = True
        self._pending.append(event)

    async def _fill(self) -> None:
        source = self._source
        if source is None:
            if self._ended:
                return
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._wakeup = future
            try:
                await future
            finally:
                self._wakeup = None
            return
        self._filling = True
        try:
            batch = await anext(source)
        except StopAsyncIteration:
            self._source = None
            self._ended = True
            self._synthesize("protocol", "the producer ended without a terminal event")
            return
        except Exception as exc:  # the never-raise contract: an escaping exception becomes an event
            self._source = None
            self._ended = True
            self._synthesize(classify_exception(exc), f"{type(exc).__name__}: {exc}")
            return
        finally:
            self._filling = False
        for event in batch:
            if self._terminal is not None:
                break
            self._accept(event)

    def _wake(self) -> None:
        wakeup = self._wakeup
        if wakeup is not None and not wakeup.done():
            wakeup.set_result(None)

    def _synthesize(self, kind: ErrorKind, message: str) -> None:
        partial = self._partial
        if partial is None:
            model = self._model
            partial = AssistantMessage(
                api=model.api if model else "",
                provider=model.provider if model else "",
                model=model.id if model else "",
            )
        if not self._started:
            self._accept(StartEvent(partial))
        reason = "aborted" if kind == "aborted" else "error"
        partial.stop_reason = reason
        partial.error_message = message
        partial.error_info = ErrorInfo.of(kind, output_started=self._content_seen)
        self._accept(ErrorEvent(reason, partial))

    async def _close_source(self) -> None:
        source, self._source = self._source, None
        if source is not None:
            aclose = getattr(source, "aclose", None)
            if aclose is not None:
                await aclose()
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()

    async def _close_early(self) -> None:
        await self._close_source()
        self._pending.clear()
        if self._terminal is None:
            self._ended = True
            self._synthesize("aborted", _CLOSED_EARLY)
            self._pending.clear()


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
            stream._synthesize(  # pyright: ignore[reportPrivateUsage]
                classify_exception(exc), f"{type(exc).__name__}: {exc}"
            )
    stream.end()
