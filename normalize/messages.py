"""Messages of a transcript, in pi-ai's shapes (JSON ``role``: system, user, assistant, toolResult)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

from normalize._jsonmodel import JsonModel, Tagged
from normalize.content import AssistantContent, TextContent, ToolResultContent, UserContent
from normalize.errors import ErrorInfo
from normalize.usage import Usage

if TYPE_CHECKING:
    from normalize.model import Model

__all__ = [
    "AssistantMessage",
    "Message",
    "StopReason",
    "SystemMessage",
    "Tool",
    "ToolRef",
    "ToolResultMessage",
    "UserMessage",
    "now_ms",
]

#: ``pending`` appears only on a partial message; a final message always has one of the others.
StopReason = Literal["stop", "length", "toolUse", "error", "aborted", "pending"]


def now_ms() -> int:
    """Wall-clock time in milliseconds, the unit of every ``timestamp``."""
    return int(time.time() * 1000)


@dataclass(slots=True, kw_only=True)
class Tool(JsonModel):
    """A tool the model may call; ``parameters`` is a JSON Schema object."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(slots=True, kw_only=True)
class ToolRef(JsonModel):
    """Names a tool removed from the transcript's tool set."""

    name: str


@dataclass(slots=True, kw_only=True)
class SystemMessage(JsonModel):
    """System prompt and tool declarations, carried by the transcript.

    ``content`` appends to the effective prompt, ``sections`` replace named parts of it, and tools
    are added or removed. The effective prompt and tool set come from replaying every system
    message in order (see :func:`normalize.context.effective_system`).
    """

    role: Literal["system"] = "system"
    content: str | list[TextContent] | None = None
    sections: dict[str, str] | None = None
    tools_added: list[Tool] | None = None
    tools_removed: list[ToolRef] | None = None
    timestamp: int = 0


@dataclass(slots=True, kw_only=True)
class UserMessage(JsonModel):
    """What the user said: a string or text and image blocks."""

    role: Literal["user"] = "user"
    content: str | list[UserContent] = ""
    timestamp: int = field(default_factory=now_ms)


@dataclass(slots=True, kw_only=True)
class AssistantMessage(JsonModel):
    """The model's reply, complete or partial.

    On ``error``/``aborted`` the message keeps the partial content and the usage seen so far, with
    ``error_message`` (human text) and ``error_info`` (structured facts). ``service_tier`` is the
    processing tier the vendor reports having served the request on (OpenAI ``default``/``flex``/
    ``priority``), when it reports one. ``model`` is the requested model id; ``response_model`` (JSON
    ``responseModel``) is the concrete model or version the vendor reports having answered with, when
    it reports one (Gemini ``modelVersion``, Anthropic's ``message.model``, the ``model`` of an OpenAI
    chat chunk or Responses response). ``timestamp`` is taken when the request starts.
    """

    role: Literal["assistant"] = "assistant"
    content: list[AssistantContent] = field(default_factory=list[AssistantContent])
    api: str = ""
    provider: str = ""
    model: str = ""
    response_id: str | None = None
    response_model: str | None = None
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = "pending"
    error_message: str | None = None
    error_info: ErrorInfo | None = None
    raw_stop_reason: str | None = None
    service_tier: str | None = None
    timestamp: int = field(default_factory=now_ms)

    @classmethod
    def empty_for(cls, model: Model | None) -> AssistantMessage:
        """A new, empty, ``pending`` message answering ``model`` (api, provider and id copied)."""
        if model is None:
            return cls()
        return cls(api=model.api, provider=model.provider, model=model.id)


@dataclass(slots=True, kw_only=True)
class ToolResultMessage(JsonModel):
    """The outcome of running one tool call."""

    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[ToolResultContent] = field(default_factory=list[ToolResultContent])
    details: Any = None
    is_error: bool = False
    timestamp: int = field(default_factory=now_ms)


Message = Annotated[SystemMessage | UserMessage | AssistantMessage | ToolResultMessage, Tagged("role")]
