"""The vendor-independent core of streamfns: data model, events, event stream, message builder,
partial JSON, usage and cost, error kinds, transcript replay rules and the event-grammar validator.

``normalize`` imports nothing else of this project; every adapter and the conformance harness build
on it.
"""

from normalize.abort import AbortController, AbortSignal, sleep_unless_aborted
from normalize.builder import MessageBuilder
from normalize.content import (
    AssistantContent,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultContent,
    UserContent,
)
from normalize.context import (
    THINKING_LEVELS,
    CacheRetention,
    Context,
    EffectiveSystem,
    StreamOptions,
    ThinkingLevel,
    effective_system,
    messages_from_json,
    normalize_context,
)
from normalize.errors import RETRYABLE_KINDS, ErrorInfo, ErrorKind, error_kind_for_status
from normalize.events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    event_from_json,
    event_to_json,
)
from normalize.messages import (
    AssistantMessage,
    Message,
    StopReason,
    SystemMessage,
    Tool,
    ToolRef,
    ToolResultMessage,
    UserMessage,
    now_ms,
)
from normalize.model import Model, ModelCost
from normalize.partial_json import ArgumentsError, parse_arguments, parse_partial, repair_json
from normalize.stream import AssistantMessageEventStream
from normalize.usage import Cost, Usage, calculate_cost
from normalize.validate import RULES, Violation, validate_events

__all__ = [
    "RETRYABLE_KINDS",
    "RULES",
    "THINKING_LEVELS",
    "AbortController",
    "AbortSignal",
    "ArgumentsError",
    "AssistantContent",
    "AssistantMessage",
    "AssistantMessageEvent",
    "AssistantMessageEventStream",
    "CacheRetention",
    "Context",
    "Cost",
    "DoneEvent",
    "EffectiveSystem",
    "ErrorEvent",
    "ErrorInfo",
    "ErrorKind",
    "ImageContent",
    "Message",
    "MessageBuilder",
    "Model",
    "ModelCost",
    "StartEvent",
    "StopReason",
    "StreamOptions",
    "SystemMessage",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "ThinkingStartEvent",
    "Tool",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolRef",
    "ToolResultContent",
    "ToolResultMessage",
    "Usage",
    "UserContent",
    "UserMessage",
    "Violation",
    "calculate_cost",
    "effective_system",
    "error_kind_for_status",
    "event_from_json",
    "event_to_json",
    "messages_from_json",
    "normalize_context",
    "now_ms",
    "parse_arguments",
    "parse_partial",
    "repair_json",
    "sleep_unless_aborted",
    "validate_events",
]
