"""Content blocks: what a message is made of.

JSON ``type`` values are pi-ai's: ``text | thinking | image | toolCall``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from normalize._jsonmodel import JsonModel, Tagged

__all__ = [
    "AssistantContent",
    "ImageContent",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolResultContent",
    "UserContent",
]


@dataclass(slots=True, kw_only=True)
class TextContent(JsonModel):
    """A run of text. ``text_signature`` carries vendor metadata that must be echoed back on replay."""

    type: Literal["text"] = "text"
    text: str = ""
    text_signature: str | None = None


@dataclass(slots=True, kw_only=True)
class ThinkingContent(JsonModel):
    """Model reasoning.

    ``thinking_signature`` is opaque vendor data needed to replay the block to the same model. When
    ``redacted`` is true the reasoning itself is encrypted in the signature and ``thinking`` is a
    placeholder.
    """

    type: Literal["thinking"] = "thinking"
    thinking: str = ""
    thinking_signature: str | None = None
    redacted: bool = False


@dataclass(slots=True, kw_only=True)
class ImageContent(JsonModel):
    """An image as base64 ``data`` with its ``mime_type``; allowed in user and tool-result content."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str


@dataclass(slots=True, kw_only=True)
class ToolCall(JsonModel):
    """A request to run a tool. ``arguments`` is always a dict. In a message whose stop reason is
    ``toolUse`` every call's arguments were strictly parsed from complete JSON; a ``length`` message
    may hold a call whose arguments are the best-effort view of a cut-off prefix (not executable)."""

    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict[str, Any])
    thought_signature: str | None = None


AssistantContent = Annotated[TextContent | ThinkingContent | ToolCall, Tagged("type")]
UserContent = Annotated[TextContent | ImageContent, Tagged("type")]
ToolResultContent = UserContent
