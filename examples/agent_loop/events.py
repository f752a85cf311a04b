"""What the agent loop tells its listener, in pi-agent-core's event names.

A run emits, in this order::

    agent_start
      turn_start                      (one per provider request)
        message_start / message_end   (each prompt, steering or follow-up message entering the transcript)
        message_start                 (the assistant reply: the stream's ``start``)
        message_update ...            (one per content event of the stream)
        message_end                   (the stream's terminal: the final assistant message)
        tool_execution_start ...      (one per tool call, in the message's order)
        tool_execution_update ...     (a running tool's progress, as it reports it)
        tool_execution_end ...        (as each tool finishes; ``duration_ms`` for a tool that ran)
        message_start / message_end   (each tool result, in the message's order)
      turn_end
    agent_end

``message`` on ``message_start``/``message_update`` of the assistant reply is the stream's **live**
partial message (one object, mutated in place); copy it if you keep snapshots.

Listeners are awaited, one event at a time: the loop goes on only once every listener has returned
(and, for an ``async`` listener, finished) — the transcript is already updated at ``message_end``, so a
listener may persist it there.

A run that an abort ends before a turn's request has no ``turn_end`` for that turn (no reply was
asked for): ``agent_end`` follows the last message that entered. A hook that raises ends its turn
with an error reply: ``message_start``, ``message_end``, ``turn_end``, then ``agent_end``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from normalize import AssistantMessage, AssistantMessageEvent, Message, ToolResultContent, ToolResultMessage

__all__ = [
    "AgentEnd",
    "AgentEvent",
    "AgentStart",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "TurnEnd",
    "TurnStart",
]


@dataclass(slots=True)
class AgentStart:
    """A run began."""

    type: Literal["agent_start"] = field(default="agent_start", init=False)


@dataclass(slots=True)
class TurnStart:
    """A turn began: pending messages enter the transcript, then one request goes to the provider."""

    type: Literal["turn_start"] = field(default="turn_start", init=False)


@dataclass(slots=True)
class MessageStart:
    """A message entered the transcript (for the assistant reply: its stream started)."""

    message: Message
    type: Literal["message_start"] = field(default="message_start", init=False)


@dataclass(slots=True)
class MessageUpdate:
    """One content event of the assistant reply's stream; ``message`` is the live partial."""

    message: AssistantMessage
    event: AssistantMessageEvent
    type: Literal["message_update"] = field(default="message_update", init=False)


@dataclass(slots=True)
class MessageEnd:
    """A message is final (for the assistant reply: its stream ended)."""

    message: Message
    type: Literal["message_end"] = field(default="message_end", init=False)


@dataclass(slots=True)
class ToolExecutionStart:
    """A tool call is about to be prepared and run."""

    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    type: Literal["tool_execution_start"] = field(default="tool_execution_start", init=False)


@dataclass(slots=True)
class ToolExecutionUpdate:
    """A running tool reported progress through ``on_update``; ``partial_result`` is what it reported."""

    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    partial_result: list[ToolResultContent]
    type: Literal["tool_execution_update"] = field(default="tool_execution_update", init=False)


@dataclass(slots=True)
class ToolExecutionEnd:
    """A tool call finished (or was refused); ``result`` is the message that will answer it.

    ``duration_ms`` is how long the tool ran (≥ 0), from just before ``execute`` was called to its
    answer; None for a call that was refused and never ran (unknown tool, invalid arguments, ``length``,
    an abort before it started)."""

    tool_call_id: str
    tool_name: str
    result: ToolResultMessage
    duration_ms: float | None = None
    type: Literal["tool_execution_end"] = field(default="tool_execution_end", init=False)

    @property
    def is_error(self) -> bool:
        """True when the tool failed or was not run."""
        return self.result.is_error


@dataclass(slots=True)
class TurnEnd:
    """A turn ended: its assistant reply and the results of the tool calls it made."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    type: Literal["turn_end"] = field(default="turn_end", init=False)


@dataclass(slots=True)
class AgentEnd:
    """The run ended; ``messages`` are the messages it added that are still in the transcript, in its
    order (what ``Agent.run`` returns: a message a compaction dropped is not among them)."""

    messages: list[Message]
    type: Literal["agent_end"] = field(default="agent_end", init=False)


AgentEvent = (
    AgentStart
    | TurnStart
    | MessageStart
    | MessageUpdate
    | MessageEnd
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
    | TurnEnd
    | AgentEnd
)
