"""A running tool's ``on_update``: progress reported plainly or awaited, delivered in order, never lost.

``on_update(partial)`` checks ``partial`` (text, or a list of text/image blocks; anything else is a
``TypeError`` raised into the tool at once), queues a ``tool_execution_update`` for delivery and returns
an awaitable:

- called plainly (not awaited), the update is delivered all the same — the loop waits for every update
  a tool reported before it emits that tool's ``tool_execution_end``; nothing is left for asyncio to
  warn about (no coroutine is created, only a future);
- awaited, it returns once every listener is done with the update (the listeners' barrier); a
  cancelled tool stops waiting but the update is still delivered, whole.

Updates keep the order they were reported in. Once the tool has answered (or was abandoned after an
abort), ``on_update`` still accepts a call but delivers nothing: a late update would follow the tool's
``tool_execution_end``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence

from examples.agent_loop.events import ToolExecutionUpdate
from examples.agent_loop.listeners import Emit
from examples.agent_loop.tools import ToolInterrupt, as_content, no_updates
from normalize import ToolCall, ToolResultContent

__all__ = ["ToolProgress"]


class ToolProgress:
    """The ``on_update`` of one tool call (call it as the tool's callback), and its deliveries."""

    def __init__(self, call: ToolCall, emit: Emit) -> None:
        self._call = call
        self._emit = emit
        self._deliveries: list[asyncio.Task[None]] = []
        self._open = True

    def __call__(self, partial: str | Sequence[ToolResultContent]) -> Awaitable[None]:
        try:
            content = as_content(partial)
        except TypeError:
            kind = type(partial).__name__
            raise TypeError(f"on_update got {kind}, not text or a list of text/image blocks") from None
        if not self._open:
            return no_updates(partial)
        update = ToolExecutionUpdate(self._call.id, self._call.name, self._call.arguments, content)
        # A task of its own, started now: the update is delivered whether or not the tool awaits it.
        delivery = asyncio.ensure_future(_deliver(self._emit, update))
        self._deliveries.append(delivery)
        # Shielded: a tool cancelled while awaiting its update must not cancel the listeners mid-event.
        waiter = asyncio.shield(delivery)
        waiter.add_done_callback(_retrieve)  # awaited or not, its outcome is never reported as unretrieved
        return waiter

    async def close(self) -> None:
        """Accept no more updates; return once every accepted one was delivered. Raises the
        :class:`~examples.agent_loop.tools.ToolInterrupt` of a listener's ``KeyboardInterrupt``."""
        self._open = False
        if self._deliveries:
            await asyncio.wait(self._deliveries)
        for delivery in self._deliveries:
            failure = None if delivery.cancelled() else delivery.exception()
            if isinstance(failure, ToolInterrupt):
                raise failure

    def cancel(self) -> list[asyncio.Task[None]]:
        """Stop accepting updates and cancel the deliveries still running; returns them to await."""
        self._open = False
        for delivery in self._deliveries:
            delivery.cancel()
        return list(self._deliveries)


async def _deliver(emit: Emit, update: ToolExecutionUpdate) -> None:
    try:
        await emit(update)
    except (Exception, asyncio.CancelledError):
        raise
    except BaseException as exc:  # raised as itself it would leave this task through the event loop
        raise ToolInterrupt(exc) from None


def _retrieve(waiter: asyncio.Future[None]) -> None:
    if not waiter.cancelled():
        waiter.exception()
