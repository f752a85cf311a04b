"""Running one scenario: call the adapter the way a consumer would, and record what happened.

A :class:`Scenario` says what the loopback server plays (each response a :class:`Served`: a mutation
of a recording, named in the :mod:`cassettes.mutation_specs` grammar, or a generic fault) and how the harness
consumes the stream (iterate to the end, cancel the consumer task, or break out early) and whether
it aborts (before the call, or mid-stream). :func:`drive` calls the StreamFn *directly* — not through
``streamfns.guarded_call`` — so a raising adapter is seen raising.

Everything the adapter hands back is treated as hostile. Any exception its code raises — also
``SystemExit``, ``KeyboardInterrupt`` or a ``BaseException`` of its own — is recorded as the
adapter's, never propagated; a ``CancelledError`` passes only when the harness cancelled. Each event
is read the moment it arrives, in the worker thread the watchdog watches (:mod:`conformance.reading`):
the observation holds only events the harness built from the adapter's plain JSON, and
:class:`Unreadable` placeholders (a grammar violation) for anything else, so no check, excerpt or
snapshot ever runs adapter code, and no object of the adapter's reaches the caller's thread. The
observation is a snapshot taken when the scenario ends: a task the adapter left running cannot
change it afterwards. Every time is read, and every bound counted, on the worker thread's
:class:`~conformance.clock.ThreadClock` (the machine's load does not count). A scenario still going
after its deadline is cancelled and marked ``hung``;
one whose consumer ignores that cancellation is left to the session to clean up. A stream that goes
past ``Limits.max_events`` events or ``Limits.max_stream_size`` (see :class:`~conformance.reading.Read`)
is no longer read: it is recorded as ``cut_off`` (it never ended), so a flood cannot exhaust memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from conformance.clock import Later, ThreadClock
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from conformance.process.child import ProcessReport
from conformance.reading import EVENT_TYPES, TERMINAL_TYPES, Unreadable, read_event, read_result
from conformance.text import class_name, describe_exception, kind_of
from normalize import (
    AssistantMessage,
    Context,
    DoneEvent,
    ErrorEvent,
    ErrorInfo,
    Model,
    StartEvent,
    StreamOptions,
    Violation,
)

__all__ = [
    "EVENT_TYPES",
    "AbortMode",
    "Consumer",
    "Observation",
    "Running",
    "Scenario",
    "Served",
    "Unreadable",
    "describe_exception",
    "drive",
]

Consumer = Literal["iterate", "cancel", "break"]
AbortMode = Literal["none", "before", "mid"]
CancelOutcome = Literal["propagated", "swallowed", "raised", "stuck", "finished-first"]

_CONTENT_TYPES = frozenset(EVENT_TYPES) - {StartEvent, DoneEvent, ErrorEvent}


@dataclass(frozen=True, slots=True)
class Served:
    """One response the loopback server plays, and where its bytes come from.

    ``recording`` and ``mutation`` (a canonical :mod:`cassettes.mutation_specs` spec; None: as recorded) when
    the bytes derive from a recording, so ``cassettes mutate`` can reproduce them; ``fault`` describes
    a generic fault that no cassette holds; ``ending`` says how the harness ends the connection when
    that differs from replaying the cassette (a real TCP reset).
    """

    plan: Scripted
    recording: str | None = None
    mutation: str | None = None
    fault: str | None = None
    ending: str | None = None

    @property
    def label(self) -> str:
        """The mutation spec, the fault, or ``as recorded``."""
        return self.mutation or self.fault or "as recorded"


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """One way of calling the adapter.

    ``key`` is unique in a run (observations are cached by it). ``served`` are played in order, the
    last one again for any further request; with none, no server runs (an adapter without HTTP, or
    ``refused`` — a port nothing listens on — or an explicit ``base_url``), and ``fault`` says what
    the scenario does instead. ``pass_options=False`` calls the StreamFn with ``options=None``;
    ``idle_timeout_s`` overrides the idle timeout.
    """

    key: str
    recording: str | None = None
    served: tuple[Served, ...] = ()
    fault: str | None = None
    refused: bool = False
    base_url: str | None = None
    context: Context | None = None
    pass_options: bool = True
    idle_timeout_s: float | None = None
    max_retries: int = 0
    abort: AbortMode = "none"
    consumer: Consumer = "iterate"

    @property
    def plans(self) -> tuple[Scripted, ...]:
        """The loopback plans, in the order they are served."""
        return tuple(item.plan for item in self.served)

    @property
    def mutation(self) -> str | None:
        """What the server plays, in the mutation grammar where it can be (``a then b`` for several
        responses), else the fault; None for an unmutated replay."""
        if not self.served:
            return self.fault
        labels = [item.label for item in self.served]
        if labels == ["as recorded"]:
            return None
        return " then ".join(labels)


@dataclass(slots=True, eq=False)
class Observation:
    """What one scenario produced. Times are readings of the worker thread's
    :class:`~conformance.clock.ThreadClock` (time the machine's load took does not count).

    ``events`` holds events the harness built (their ``partial`` is a placeholder of its own) and
    :class:`Unreadable` placeholders; ``event_json`` the pi JSON of each (a ``{"type": "<unreadable>"}``
    stub for placeholders), read once, as each event arrived. Nothing here is the adapter's object.
    """

    scenario: Scenario
    events: list[Any] = field(default_factory=list[Any])
    event_json: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    call_error: str | None = None
    iteration_error: str | None = None
    result_problem: str | None = None
    #: The JSON of the message ``result()`` returned (read once, when it was returned).
    result_json: dict[str, Any] | None = None
    hung: bool = False
    #: Why the harness stopped reading the stream before its end (it went past the cap on what one
    #: scenario may produce), else None. Such a stream never ended.
    cut_off: str | None = None
    #: Why the watchdog gave up on this scenario (it stopped the event loop), else None.
    blocked: str | None = None
    deadline_s: float = 0.0
    cancel_outcome: CancelOutcome | None = None
    started_at: float = 0.0
    first_content_at: float | None = None
    terminal_at: float | None = None
    abort_at: float | None = None
    requests: list[ReceivedRequest] = field(default_factory=list[ReceivedRequest])
    #: The numbers (from 1) of the requests whose connection the client had not closed once the
    #: stream had ended and ``grace_s`` more had passed.
    unreleased: list[int] = field(default_factory=list[int])
    #: The grace the adapter was given after the stream ended, to close connections and end tasks.
    grace_s: float = 0.0
    leaked_tasks: list[str] = field(default_factory=list[str])
    #: Errors the event loop reported while (or just after) this scenario ran, such as a task
    #: whose exception nobody retrieved, or a ``SystemExit`` that escaped an adapter's task.
    loop_errors: list[str] = field(default_factory=list[str])
    #: Grammar violations, filled in once by the grammar checks.
    violations: list[Violation] | None = None
    #: What each adapter process of the scenario did (an adapter run as a process: conformance.process).
    processes: list[ProcessReport] = field(default_factory=list["ProcessReport"])

    @property
    def terminal(self) -> DoneEvent | ErrorEvent | None:
        """The terminal event, if one was delivered."""
        for event in reversed(self.events):
            if isinstance(event, DoneEvent | ErrorEvent):
                return event
        return None

    @property
    def message(self) -> AssistantMessage | None:
        """The terminal event's message."""
        terminal = self.terminal
        if terminal is None:
            return None
        return terminal.message if isinstance(terminal, DoneEvent) else terminal.error

    @property
    def error_info(self) -> ErrorInfo | None:
        """The terminal message's ``ErrorInfo`` (None on success or without a terminal)."""
        message = self.message
        return message.error_info if message is not None else None

    @property
    def error_message(self) -> str | None:
        """The terminal message's ``errorMessage``, if any."""
        message = self.message
        return message.error_message if message is not None else None

    @property
    def started(self) -> bool:
        """True when the stream produced a ``start`` event (something was there to examine)."""
        return any(type(event) is StartEvent for event in self.events)

    @property
    def content_seen(self) -> bool:
        """True when at least one content event (anything but start and the terminal) arrived."""
        return self.first_content_at is not None

    @property
    def complete(self) -> bool:
        """True when the stream was consumed to its end without the adapter raising."""
        return (
            self.scenario.consumer == "iterate"
            and self.call_error is None
            and self.iteration_error is None
            and self.cut_off is None
            and not self.hung
        )

    def outcome(self) -> str:
        """A short human summary: ``done(stop)``, ``error(timeout, retryable)``, ``raised …``."""
        if self.call_error is not None:
            return f"the call raised {self.call_error}"
        if self.iteration_error is not None:
            return f"iteration raised {self.iteration_error}"
        if self.cut_off is not None:
            return f"cut off: {self.cut_off}"
        if self.blocked is not None:
            return "blocked the event loop"
        if self.hung:
            return "hung (no terminal)"
        terminal = self.terminal
        if terminal is None:
            return "no terminal"
        if isinstance(terminal, DoneEvent):
            return f"done({terminal.reason})"
        info = terminal.error.error_info
        if info is None:
            return f"error({terminal.reason}, no errorInfo)"
        flags = ", retryable" if info.retryable else ""
        return f"{terminal.reason}({info.kind}{flags})"


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class Running(Protocol):
    """The scenario being run, as the session sees it from the caller's thread when the watchdog
    gives up on the worker: what was read so far, and a way to make the consumer stop reading."""

    def snapshot(self) -> Observation:
        """The observation as it is now (plain data only: safe from any thread)."""
        ...

    def stop(self) -> None:
        """Make the consumer stop reading at the next event (safe from any thread)."""
        ...


@dataclass(slots=True)
class _Run:
    fn: Callable[..., Any]
    model: Model
    context: Context
    options: StreamOptions | None
    scenario: Scenario
    controller: Any
    timing: Timing
    clock: ThreadClock
    #: The observation being built (the consumer writes here; the caller gets a snapshot).
    live: Observation
    content: asyncio.Event = field(default_factory=asyncio.Event)
    #: The harness's own message, the ``partial`` of every event it rebuilds (the checks never read it).
    partial: AssistantMessage = field(default_factory=AssistantMessage)
    #: Set (from any thread) to make the consumer stop reading.
    stopped: bool = False
    #: The total size of the events read so far (see :class:`~conformance.reading.Read`).
    size: int = 0

    def fire_abort(self) -> None:
        if self.live.abort_at is None:
            self.live.abort_at = self.clock.now()
            self.controller.abort("aborted by the conformance harness")

    def on_content(self) -> None:
        self.content.set()
        if self.scenario.abort == "mid":
            if self.timing.abort_delay_s > 0:
                self.clock.call_later(self.timing.abort_delay_s, self.fire_abort)
            else:
                self.fire_abort()

    def stop(self) -> None:
        """Make the consumer stop reading at the next event."""
        self.stopped = True

    def snapshot(self) -> Observation:
        """The observation as it is now: copies of lists of plain data, so it is safe from any thread
        while the consumer may still be appending (it appends the JSON before the event)."""
        events = list(self.live.events)
        return dataclasses.replace(self.live, events=events, event_json=self.live.event_json[: len(events)])

    def _take(self, item: Any) -> bool:
        """Read one event into the observation; False once the consumer must stop reading."""
        obs, timing = self.live, self.timing
        if self.stopped:
            return False
        if len(obs.events) >= timing.max_events:
            obs.cut_off = f"no terminal within {timing.max_events} events (the harness's cap, Limits.max_events)"
            return False
        read = read_event(item, self.partial)
        self.size += read.size
        if self.size > timing.max_stream_size:
            obs.cut_off = (
                f"no terminal before the events' JSON reached a size of {timing.max_stream_size} "
                "(the harness's cap, Limits.max_stream_size)"
            )
            return False
        obs.event_json.append(read.data)
        obs.events.append(read.event)
        kind = kind_of(read.event)
        # The clock is read only for the two events whose time a check needs, not per event.
        if kind in TERMINAL_TYPES:
            obs.terminal_at = obs.terminal_at or self.clock.now()
        elif obs.first_content_at is None and kind in _CONTENT_TYPES:
            obs.first_content_at = self.clock.now()
            self.on_content()
            if self.scenario.consumer == "break":
                return False
        return True

    async def consume(self) -> None:
        obs = self.live
        try:
            produced: Any = self.fn(self.model, self.context, self.options)
            if inspect.isawaitable(produced):
                produced = await produced
            iterable = hasattr(produced, "__aiter__")
        except asyncio.CancelledError:
            if _cancelling():
                raise
            obs.call_error = "CancelledError, although nothing cancelled the call"
            return
        except BaseException as exc:  # the contract under test: a StreamFn never raises
            obs.call_error = describe_exception(exc)
            return
        if not iterable:
            obs.call_error = f"the StreamFn returned {class_name(kind_of(produced))}, not an event stream"
            return
        try:
            async for event in produced:
                if not self._take(event):
                    break
        except asyncio.CancelledError:
            if _cancelling():
                raise
            obs.iteration_error = "CancelledError, although the consumer was not cancelled"
            return
        except BaseException as exc:  # the contract under test: iterating never raises
            obs.iteration_error = describe_exception(exc)
            return
        if self.scenario.consumer == "break" or obs.cut_off is not None or self.stopped:
            return
        await self._result(produced)

    async def _result(self, produced: Any) -> None:
        obs = self.live
        unwind = self.timing.unwind_s
        loop = asyncio.get_running_loop()
        try:
            result = getattr(produced, "result", None)
            if not callable(result):
                return
            # asyncio.timeout, with its deadline on the clock: expired (now) once unwind_s have passed.
            async with asyncio.timeout(None) as limit:
                expire = self.clock.call_later(unwind, lambda: limit.reschedule(loop.time()))
                try:
                    value = result()
                    if inspect.isawaitable(value):
                        value = await value
                finally:
                    expire.cancel()
        except TimeoutError:
            obs.result_problem = f"result() did not return within {unwind:g} s after the stream ended"
        except asyncio.CancelledError:
            if _cancelling():
                raise
            obs.result_problem = "result() raised CancelledError, although nothing was cancelled"
        except BaseException as exc:  # reported under N2, never raised out of the harness
            obs.result_problem = f"result() raised {describe_exception(exc)}"
        else:
            obs.result_json, obs.result_problem = read_result(value)


async def _cancel_when_content(run: _Run, task: asyncio.Task[None], trigger_s: float) -> None:
    clock = run.clock
    waiter = asyncio.get_running_loop().create_task(run.content.wait(), name="conformance-waiter")
    try:
        await clock.wait({task, waiter}, trigger_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if not task.done() and run.timing.abort_delay_s > 0:
        await clock.wait({task}, run.timing.abort_delay_s)
    obs = run.live
    if task.done():
        obs.cancel_outcome = "finished-first"
        return
    task.cancel()
    await clock.wait({task}, run.timing.unwind_s)
    if not task.done():
        obs.cancel_outcome = "stuck"
    elif task.cancelled():
        obs.cancel_outcome = "propagated"
    elif task.exception() is not None:
        obs.cancel_outcome = "raised"
    else:
        obs.cancel_outcome = "swallowed"


@dataclass(frozen=True, slots=True)
class Timing:
    """The bounds :func:`drive` works within: the scenario ``deadline_s``, how long after the first
    content event an abort lands (``abort_delay_s``), the fallback ``trigger_s`` for an abort or a
    cancellation with no content event, and ``unwind_s`` for a cancelled consumer to finish (seconds
    on the clock :func:`drive` is given); the most events and the largest total size (see
    :class:`~conformance.reading.Read`) it reads."""

    deadline_s: float
    abort_delay_s: float
    trigger_s: float
    unwind_s: float
    max_events: int = 100_000
    max_stream_size: int = 32_000_000


async def drive(
    fn: Callable[..., Any],
    model: Model,
    context: Context,
    options: StreamOptions,
    *,
    scenario: Scenario,
    controller: Any,
    timing: Timing,
    server: LoopbackServer | None = None,
    clock: ThreadClock | None = None,
    on_start: Callable[[Running], None] | None = None,
) -> tuple[Observation, asyncio.Task[None]]:
    """Run ``scenario`` once and return its observation and the consumer task (done, unless the
    adapter refused to stop — the caller must clean such a task up). Times and bounds are read on
    ``clock`` (default: a new clock of the calling thread, the one the event loop runs in).
    ``on_start`` receives the :class:`Running` scenario (for a watchdog that has to give up on it)."""
    clock = clock or ThreadClock()
    live = Observation(scenario, deadline_s=timing.deadline_s)
    if server is not None:
        live.requests = server.requests
    run = _Run(
        fn,
        model,
        context,
        options if scenario.pass_options else None,
        scenario,
        controller,
        timing,
        clock,
        live,
    )
    if on_start is not None:
        on_start(run)
    loop = asyncio.get_running_loop()
    if scenario.abort == "before":
        run.fire_abort()
    live.started_at = clock.now()
    task = loop.create_task(run.consume(), name="conformance-consumer")
    fallback: Later | None = clock.call_later(timing.trigger_s, run.fire_abort) if scenario.abort == "mid" else None
    try:
        if scenario.consumer == "cancel":
            await _cancel_when_content(run, task, timing.trigger_s)
        await clock.wait({task}, timing.deadline_s)
        if not task.done():
            live.hung = True
            task.cancel()
            await clock.wait({task}, timing.unwind_s)
    finally:
        if fallback is not None:
            fallback.cancel()
        if not task.done():
            task.cancel()
    if task.done() and not task.cancelled():
        with contextlib.suppress(BaseException):
            task.exception()  # retrieved, so asyncio never logs it as unhandled
    return run.snapshot(), task
