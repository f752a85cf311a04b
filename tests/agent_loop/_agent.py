"""Helpers for the agent-loop tests: event descriptions, a recording listener, the faux provider, what
asyncio reports to the event loop's exception handler, and an event loop of a test's own."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any

from examples.agent_loop import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from normalize import AssistantMessage, Message, TextContent
from streamfns.faux import FauxProvider


def _role(message: Message) -> str:
    if isinstance(message, AssistantMessage):
        return f"assistant {message.stop_reason}"
    return message.role


def describe(event: AgentEvent) -> str:
    """One short, exact line per event, for asserting whole sequences."""
    match event:
        case AgentStart() | TurnStart():
            return event.type
        case MessageStart():
            return f"message_start {event.message.role}"
        case MessageUpdate():
            return f"update {event.event.type}"
        case MessageEnd():
            return f"message_end {_role(event.message)}"
        case ToolExecutionStart():
            return f"tool_start {event.tool_name}"
        case ToolExecutionUpdate():
            text = "".join(block.text for block in event.partial_result if isinstance(block, TextContent))
            return f"tool_update {event.tool_name} {text}"
        case ToolExecutionEnd():
            return f"tool_end {event.tool_name} {'error' if event.is_error else 'ok'}"
        case TurnEnd():
            return f"turn_end {event.message.stop_reason} results={len(event.tool_results)}"
        case AgentEnd():
            return f"agent_end messages={len(event.messages)}"


class Recorder:
    """An ``on_event`` listener that keeps every event (a plain function: the loop accepts both kinds)."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    @property
    def lines(self) -> list[str]:
        return [describe(event) for event in self.events]


def faux(*, token_size: tuple[int, int] = (10_000, 10_000), tokens_per_second: float | None = None) -> FauxProvider:
    """A faux provider that by default streams every block in one piece (short, exact event sequences)."""
    return FauxProvider(token_size=token_size, tokens_per_second=tokens_per_second)


@contextlib.contextmanager
def loop_errors() -> Generator[list[dict[str, Any]]]:
    """What is handed to the running loop's exception handler meanwhile (a listener's failure; asyncio's
    "never retrieved" reports), kept instead of logged."""
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    seen: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        yield seen
    finally:
        loop.set_exception_handler(previous)


@dataclass
class Ran:
    """What happened on an event loop of the test's own."""

    value: Any = None
    #: What left ``run_until_complete`` itself (before the fix: the tool's interrupt).
    escaped: BaseException | None = None
    #: What asyncio reported to the loop's exception handler ("Task exception was never retrieved").
    reported: list[str] = field(default_factory=list[str])


def on_own_loop(main: Callable[[], Coroutine[Any, Any, Any]]) -> Ran:
    """Run ``main`` on a new event loop: an interrupt leaving through that loop ends this call, not the
    pytest session; whatever asyncio reports there is kept in :attr:`Ran.reported`."""
    ran = Ran()
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda _loop, context: ran.reported.append(str(context.get("message"))))
    try:
        ran.value = loop.run_until_complete(main())
    except BaseException as exc:  # what must not happen: the interrupt leaving through the loop
        ran.escaped = exc
        # Its traceback holds the frames, and so the tasks, it passed through: dropped, so that the
        # collection below finalizes those tasks and asyncio reports what nobody retrieved.
        exc.__traceback__ = None
    finally:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:  # only after an escape: end what the escape left suspended
            loop.run_until_complete(asyncio.wait(left))
            for task in left:
                if not task.cancelled():
                    task.exception()  # what the escape left behind is not what the test reports
        gc.collect()  # unreferenced tasks report unretrieved exceptions now, to our handler
        loop.close()
    return ran
