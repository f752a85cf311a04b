"""How an event reaches the listeners: every listener, in registration order, one event at a time.

A listener may be a plain or an ``async`` function; each is awaited before the next listener (and the
loop) goes on, so a listener is a barrier: the transcript is already updated at ``message_end``.

A listener that raises an ``Exception`` does not stop the run, nor the listeners after it: the failure
is handed to the event loop's exception handler (``loop.call_exception_handler``, asyncio's channel for
a callback that failed while the loop goes on; by default it is logged) and delivery goes on. A
``BaseException`` that is not an ``Exception`` (a cancellation, ``KeyboardInterrupt``) is not a
listener's bug: it propagates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from examples.agent_loop.events import AgentEvent
from examples.agent_loop.hooks import resolved

__all__ = ["Emit", "Listener", "emitter"]

#: A listener: a plain function, or an ``async`` one (what it returns is awaited when awaitable).
Listener = Callable[[AgentEvent], object]
#: What the loop calls to deliver one event; returns once every listener is done with it.
Emit = Callable[[AgentEvent], Awaitable[None]]


def emitter(listeners: Callable[[], Sequence[Listener]]) -> Emit:
    """An :data:`Emit` delivering each event to ``listeners()`` (looked up per event, so a listener
    unsubscribed mid-run stops receiving)."""
    # One event at a time: the tools' progress and the loop's own events are emitted from different
    # tasks, and a listener must never see the next event before every listener finished this one.
    # asyncio.Lock wakes its waiters first in, first out, so events keep the order they were emitted in.
    lock = asyncio.Lock()

    async def emit(event: AgentEvent) -> None:
        async with lock:
            for listener in listeners():
                try:
                    await resolved(listener(event))
                except Exception as exc:
                    _report(listener, event, exc)

    return emit


def _report(listener: Listener, event: AgentEvent, exc: Exception) -> None:
    name = getattr(listener, "__qualname__", None) or type(listener).__qualname__
    asyncio.get_running_loop().call_exception_handler(
        {
            "message": f"agent listener {name} raised on {event.type}; the run goes on",
            "exception": exc,
        }
    )
