"""Helpers for the agent-loop tests: event descriptions and a recording listener."""

from __future__ import annotations

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
