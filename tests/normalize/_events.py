"""Helpers for writing event sequences by hand in tests."""

from __future__ import annotations

from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    ErrorInfo,
    StartEvent,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)


def text_sequence(text: str = "Hello") -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    """A valid start → text → done sequence and its message."""
    message = AssistantMessage(content=[TextContent(text=text)], stop_reason="stop")
    events: list[AssistantMessageEvent] = [
        StartEvent(message),
        TextStartEvent(0, message),
        TextDeltaEvent(0, text, message),
        TextEndEvent(0, text, message),
        DoneEvent("stop", message),
    ]
    return events, message


def tool_sequence(raw_args: str, arguments: dict[str, object]) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    """A start → tool call → done(toolUse) sequence whose deltas are ``raw_args``."""
    call = ToolCall(id="call_1", name="f", arguments=dict(arguments))
    message = AssistantMessage(content=[call], stop_reason="toolUse")
    events: list[AssistantMessageEvent] = [
        StartEvent(message),
        ToolCallStartEvent(0, message),
        ToolCallDeltaEvent(0, raw_args, message),
        ToolCallEndEvent(0, call, message),
        DoneEvent("toolUse", message),
    ]
    return events, message


def error_terminal(message: AssistantMessage, text: str = "boom") -> ErrorEvent:
    """Turn ``message`` into an error and return its terminal event."""
    message.stop_reason = "error"
    message.error_message = text
    message.error_info = ErrorInfo.of("server")
    return ErrorEvent("error", message)
