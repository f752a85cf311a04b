"""Running one scenario: call the adapter the way a consumer would, and record what happened.

A :class:`Scenario` says what the loopback server plays and how the harness consumes the stream
(iterate to the end, cancel the consumer task, or break out early) and whether it aborts (before
the call, or mid-stream). :func:`drive` calls the StreamFn *directly* — not through
``streamfns.guarded_call`` — so a raising adapter is seen raising. It never lets the adapter hang
the run: a scenario still going after the deadline is cancelled and marked ``hung``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize import (
    AbortController,
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

__all__ = ["AbortMode", "Consumer", "Observation", "Scenario", "describe_exception", "drive"]

Consumer = Literal["iterate", "cancel", "break"]
AbortMode = Literal["none", "before", "mid"]
CancelOutcome = Literal["propagated", "swallowed", "raised", "stuck", "finished-first"]

#: With no content event by then, a ``mid`` abort or a cancellation lands anyway (seconds).
_FALLBACK_TRIGGER_S = 0.3
#: How long a consumer task gets to unwind after the harness cancels it (seconds).
_UNWIND_S = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """One way of calling the adapter.

    ``key`` is unique in a run (observations are cached by it). ``plans`` are served in order, the
    last one again for any further request; with none, no server runs (an adapter without HTTP, or
    ``refused`` — a port nothing listens on — or an explicit ``base_url``). ``pass_options=False``
    calls the StreamFn with ``options=None``; ``idle_timeout_s`` overrides the idle timeout.
    """

    key: str
    recording: str | None = None
    mutation: str | None = None
    plans: tuple[Scripted, ...] = ()
    refused: bool = False
    base_url: str | None = None
    context: Context | None = None
    pass_options: bool = True
    idle_timeout_s: float | None = None
    max_retries: int = 0
    abort: AbortMode = "none"
    consumer: Consumer = "iterate"


@dataclass(slots=True, eq=False)
class Observation:
    """What one scenario produced. Times are ``time.perf_counter()`` values."""

    scenario: Scenario
    events: list[Any] = field(default_factory=list[Any])
    call_error: str | None = None
    iteration_error: str | None = None
    result_problem: str | None = None
    result_message: AssistantMessage | None = None
    hung: bool = False
    cancel_outcome: CancelOutcome | None = None
    started_at: float = 0.0
    first_content_at: float | None = None
    terminal_at: float | None = None
    abort_at: float | None = None
    requests: list[ReceivedRequest] = field(default_factory=list[ReceivedRequest])
    leaked_tasks: list[str] = field(default_factory=list[str])
    #: Errors the event loop reported while (or just after) this scenario ran, such as a task
    #: whose exception nobody retrieved.
    loop_errors: list[str] = field(default_factory=list[str])
    #: Grammar violations, filled in once by the grammar checks.
    violations: list[Violation] | None = None

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
            and not self.hung
        )

    def outcome(self) -> str:
        """A short human summary: ``done(stop)``, ``error(timeout, retryable)``, ``raised …``."""
        if self.call_error is not None:
            return f"the call raised {self.call_error}"
        if self.iteration_error is not None:
            return f"iteration raised {self.iteration_error}"
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


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` (the message cut to 300 characters)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def _is_content(event: Any) -> bool:
    return not isinstance(event, StartEvent | DoneEvent | ErrorEvent) and hasattr(event, "type")


@dataclass(slots=True)
class _Run:
    fn: Callable[..., Any]
    model: Model
    context: Context
    options: StreamOptions | None
    scenario: Scenario
    controller: AbortController
    abort_delay_s: float
    obs: Observation
    content: asyncio.Event = field(default_factory=asyncio.Event)

    def fire_abort(self) -> None:
        if self.obs.abort_at is None:
            self.obs.abort_at = time.perf_counter()
            self.controller.abort("aborted by the conformance harness")

    def on_content(self) -> None:
        self.content.set()
        if self.scenario.abort == "mid":
            if self.abort_delay_s > 0:
                asyncio.get_running_loop().call_later(self.abort_delay_s, self.fire_abort)
            else:
                self.fire_abort()

    async def consume(self) -> None:
        obs = self.obs
        try:
            produced: Any = self.fn(self.model, self.context, self.options)
            if inspect.isawaitable(produced):
                produced = await produced
        except Exception as exc:  # the contract under test: a StreamFn never raises
            obs.call_error = describe_exception(exc)
            return
        if not hasattr(produced, "__aiter__"):
            obs.call_error = f"the StreamFn returned {type(produced).__name__}, not an event stream"
            return
        try:
            async for event in produced:
                now = time.perf_counter()
                obs.events.append(event)
                if isinstance(event, DoneEvent | ErrorEvent):
                    obs.terminal_at = obs.terminal_at or now
                elif obs.first_content_at is None and _is_content(event):
                    obs.first_content_at = now
                    self.on_content()
                    if self.scenario.consumer == "break":
                        break
        except Exception as exc:  # the contract under test: iterating never raises
            obs.iteration_error = describe_exception(exc)
            return
        if self.scenario.consumer == "break":
            return
        await self._result(produced)

    async def _result(self, produced: Any) -> None:
        result = getattr(produced, "result", None)
        if not callable(result):
            return
        obs = self.obs
        try:
            async with asyncio.timeout(_UNWIND_S):
                value = result()
                if inspect.isawaitable(value):
                    value = await value
        except TimeoutError:
            obs.result_problem = f"result() did not return within {_UNWIND_S:g} s after the stream ended"
        except Exception as exc:  # reported under N2, never raised out of the harness
            obs.result_problem = f"result() raised {describe_exception(exc)}"
        else:
            if isinstance(value, AssistantMessage):
                obs.result_message = value
            else:
                obs.result_problem = f"result() returned {type(value).__name__}, not an AssistantMessage"


async def _cancel_when_content(run: _Run, task: asyncio.Task[None]) -> None:
    waiter = asyncio.get_running_loop().create_task(run.content.wait(), name="conformance-waiter")
    try:
        await asyncio.wait({task, waiter}, timeout=_FALLBACK_TRIGGER_S, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if not task.done() and run.abort_delay_s > 0:
        await asyncio.wait({task}, timeout=run.abort_delay_s)
    if task.done():
        run.obs.cancel_outcome = "finished-first"
        return
    task.cancel()
    await asyncio.wait({task}, timeout=_UNWIND_S)
    if not task.done():
        run.obs.cancel_outcome = "stuck"
    elif task.cancelled():
        run.obs.cancel_outcome = "propagated"
    elif task.exception() is not None:
        run.obs.cancel_outcome = "raised"
    else:
        run.obs.cancel_outcome = "swallowed"


async def drive(
    fn: Callable[..., Any],
    model: Model,
    context: Context,
    options: StreamOptions,
    *,
    scenario: Scenario,
    controller: AbortController,
    abort_delay_s: float,
    deadline_s: float,
    server: LoopbackServer | None = None,
) -> tuple[Observation, asyncio.Task[None]]:
    """Run ``scenario`` once and return its observation and the consumer task (done, unless the
    adapter refused to stop — the caller must clean such a task up)."""
    obs = Observation(scenario)
    if server is not None:
        obs.requests = server.requests
    run = _Run(
        fn,
        model,
        context,
        options if scenario.pass_options else None,
        scenario,
        controller,
        abort_delay_s,
        obs,
    )
    loop = asyncio.get_running_loop()
    if scenario.abort == "before":
        run.fire_abort()
    obs.started_at = time.perf_counter()
    task = loop.create_task(run.consume(), name="conformance-consumer")
    fallback = loop.call_later(_FALLBACK_TRIGGER_S, run.fire_abort) if scenario.abort == "mid" else None
    try:
        if scenario.consumer == "cancel":
            await _cancel_when_content(run, task)
        await asyncio.wait({task}, timeout=deadline_s)
        if not task.done():
            obs.hung = True
            task.cancel()
            await asyncio.wait({task}, timeout=_UNWIND_S)
    finally:
        if fallback is not None:
            fallback.cancel()
        if not task.done():
            task.cancel()
    if task.done() and not task.cancelled():
        with contextlib.suppress(BaseException):
            task.exception()  # retrieved, so asyncio never logs it as unhandled
    return obs, task
