"""The twelve assistant-message events, with pi-ai's JSON names.

Every event carries ``partial``: the **live** assistant message, one object mutated in place as the
stream runs (never copied per event; copy it if you keep history). Terminal events: ``done`` carries
``message`` and ``error`` carries ``error`` — the same object as ``partial``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from normalize.content import ToolCall
from normalize.messages import AssistantMessage

__all__ = [
    "CONTENT_EVENT_TYPES",
    "TERMINAL_EVENT_TYPES",
    "AssistantMessageEvent",
    "DoneEvent",
    "ErrorEvent",
    "StartEvent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingStartEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "event_from_json",
    "event_to_json",
]


@dataclass(slots=True)
class StartEvent:
    """The stream has begun; emitted exactly once, first."""

    partial: AssistantMessage
    type: Literal["start"] = field(default="start", init=False)


@dataclass(slots=True)
class TextStartEvent:
    """A text block was appended at ``content_index``."""

    content_index: int
    partial: AssistantMessage
    type: Literal["text_start"] = field(default="text_start", init=False)


@dataclass(slots=True)
class TextDeltaEvent:
    """Text appended to the block at ``content_index``."""

    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["text_delta"] = field(default="text_delta", init=False)


@dataclass(slots=True)
class TextEndEvent:
    """The text block at ``content_index`` is complete; ``content`` is its full text."""

    content_index: int
    content: str
    partial: AssistantMessage
    type: Literal["text_end"] = field(default="text_end", init=False)


@dataclass(slots=True)
class ThinkingStartEvent:
    """A thinking block was appended at ``content_index``."""

    content_index: int
    partial: AssistantMessage
    type: Literal["thinking_start"] = field(default="thinking_start", init=False)


@dataclass(slots=True)
class ThinkingDeltaEvent:
    """Reasoning text appended to the block at ``content_index``."""

    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["thinking_delta"] = field(default="thinking_delta", init=False)


@dataclass(slots=True)
class ThinkingEndEvent:
    """The thinking block at ``content_index`` is complete; ``content`` is its full text."""

    content_index: int
    content: str
    partial: AssistantMessage
    type: Literal["thinking_end"] = field(default="thinking_end", init=False)


@dataclass(slots=True)
class ToolCallStartEvent:
    """A tool-call block (id and name set) was appended at ``content_index``."""

    content_index: int
    partial: AssistantMessage
    type: Literal["toolcall_start"] = field(default="toolcall_start", init=False)


@dataclass(slots=True)
class ToolCallDeltaEvent:
    """A raw JSON fragment of the tool call's arguments; ``partial`` holds a best-effort parse."""

    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["toolcall_delta"] = field(default="toolcall_delta", init=False)


@dataclass(slots=True)
class ToolCallEndEvent:
    """The tool call's block ended. Its ``arguments`` came from a strict parse of complete JSON —
    except in a response the vendor cut at its token limit (it ends ``done`` with reason ``length``),
    where a call cut mid-arguments ends with the best-effort view of what arrived. Only the calls
    of a ``toolUse`` message are executable; never run a tool from ``toolcall_end`` alone."""

    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage
    type: Literal["toolcall_end"] = field(default="toolcall_end", init=False)


@dataclass(slots=True)
class DoneEvent:
    """Success terminal: ``reason`` is ``stop``, ``length`` or ``toolUse``."""

    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage
    type: Literal["done"] = field(default="done", init=False)

    @property
    def partial(self) -> AssistantMessage:
        """The final message (the same object the stream mutated)."""
        return self.message


@dataclass(slots=True)
class ErrorEvent:
    """Failure terminal: ``reason`` is ``error`` or ``aborted``; ``error`` is the partial message."""

    reason: Literal["error", "aborted"]
    error: AssistantMessage
    type: Literal["error"] = field(default="error", init=False)

    @property
    def partial(self) -> AssistantMessage:
        """The final message (the same object the stream mutated)."""
        return self.error


AssistantMessageEvent = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent
)

#: The terminal event classes, as a tuple for ``isinstance`` (a union would be rebuilt per call).
TERMINAL_EVENT_TYPES: Final = (DoneEvent, ErrorEvent)
#: The exact classes of content events (blocks' starts, deltas and ends): a batch of nothing else is
#: the hot path of the event stream and of telemetry, tested with ``type(event) in`` — a subclass or
#: any other class takes the general path.
CONTENT_EVENT_TYPES: Final[frozenset[type]] = frozenset(
    {
        TextStartEvent,
        TextDeltaEvent,
        TextEndEvent,
        ThinkingStartEvent,
        ThinkingDeltaEvent,
        ThinkingEndEvent,
        ToolCallStartEvent,
        ToolCallDeltaEvent,
        ToolCallEndEvent,
    }
)


def event_to_json(event: AssistantMessageEvent, *, include_partial: bool = False) -> dict[str, Any]:
    """Dump an event in pi's JSON form.

    ``partial`` is left out unless asked for (it is the whole live message); terminal events always
    carry their message.
    """
    out: dict[str, Any] = {"type": event.type}
    match event:
        case DoneEvent():
            out["reason"] = event.reason
            out["message"] = event.message.to_json()
            return out
        case ErrorEvent():
            out["reason"] = event.reason
            out["error"] = event.error.to_json()
            return out
        case StartEvent():
            pass
        case TextDeltaEvent() | ThinkingDeltaEvent() | ToolCallDeltaEvent():
            out["contentIndex"] = event.content_index
            out["delta"] = event.delta
        case TextEndEvent() | ThinkingEndEvent():
            out["contentIndex"] = event.content_index
            out["content"] = event.content
        case ToolCallEndEvent():
            out["contentIndex"] = event.content_index
            out["toolCall"] = event.tool_call.to_json()
        case TextStartEvent() | ThinkingStartEvent() | ToolCallStartEvent():
            out["contentIndex"] = event.content_index
    if include_partial:
        out["partial"] = event.partial.to_json()
    return out


def event_from_json(data: dict[str, Any], partial: AssistantMessage | None = None) -> AssistantMessageEvent:
    """Rebuild an event from pi JSON. ``partial`` (or the JSON's own) becomes the event's message.

    Raises ``ValueError`` for anything that is not an event: an unknown ``type``, a missing or
    mistyped field, a message that does not validate.
    """
    if not isinstance(data, dict):  # pyright: ignore[reportUnnecessaryIsInstance] - callers are not type-checked
        raise ValueError(f"an event is a JSON object, not {type(data).__name__}")  # noqa: TRY004 - the promise is ValueError
    try:
        return _event_from_json(data, partial)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a valid {data.get('type')!r} event: {type(exc).__name__}: {exc}") from None


def _event_from_json(data: dict[str, Any], partial: AssistantMessage | None) -> AssistantMessageEvent:
    kind = data.get("type")
    if kind == "done":
        return DoneEvent(data["reason"], AssistantMessage.from_json(data["message"]))
    if kind == "error":
        return ErrorEvent(data["reason"], AssistantMessage.from_json(data["error"]))
    if partial is None:
        raw = data.get("partial")
        partial = AssistantMessage.from_json(raw) if raw is not None else AssistantMessage()
    if kind == "start":
        return StartEvent(partial)
    index = int(data["contentIndex"])
    match kind:
        case "text_start":
            return TextStartEvent(index, partial)
        case "text_delta":
            return TextDeltaEvent(index, str(data["delta"]), partial)
        case "text_end":
            return TextEndEvent(index, str(data["content"]), partial)
        case "thinking_start":
            return ThinkingStartEvent(index, partial)
        case "thinking_delta":
            return ThinkingDeltaEvent(index, str(data["delta"]), partial)
        case "thinking_end":
            return ThinkingEndEvent(index, str(data["content"]), partial)
        case "toolcall_start":
            return ToolCallStartEvent(index, partial)
        case "toolcall_delta":
            return ToolCallDeltaEvent(index, str(data["delta"]), partial)
        case "toolcall_end":
            return ToolCallEndEvent(index, ToolCall.from_json(data["toolCall"]), partial)
        case _:
            raise ValueError(f"unknown event type: {kind!r}")
