"""The OpenAI-style function pieces several apis take as they are: Chat Completions and every server
that speaks it, Mistral, Cohere v2.

:func:`function_tool` is a tool definition, ``{"type": "function", "function": {"name", "description",
"parameters"}}``; :func:`function_call` is an assistant's call as it is replayed, its arguments as a
JSON string. :data:`NO_TOOL_OUTPUT` is what a tool result with nothing to say is sent as (these apis
refuse an empty tool message, or treat it as a failure). :func:`chat_messages` walks a transcript into
their role-tagged messages, with the one ordering rule they all share.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any, Final

from normalize import (
    AssistantMessage,
    Message,
    SystemMessage,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    sanitize_surrogates,
    system_update_text,
)

__all__ = ["NO_TOOL_OUTPUT", "ChatMessage", "chat_messages", "function_call", "function_tool"]

#: One role-tagged message of a chat-style payload.
ChatMessage = dict[str, Any]

#: The text of a tool result that had none (no text block, or only blank ones).
NO_TOOL_OUTPUT: Final = "(no tool output)"


def function_tool(tool: Tool, *, strict: bool = False) -> dict[str, Any]:
    """``tool`` as a function definition; ``strict`` adds ``"strict": true`` (a server that constrains
    the arguments to the schema). The parameters are a deep copy, so a caller editing the payload
    (``on_payload``) cannot reach into the ``Tool``."""
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = sanitize_surrogates(tool.description)
    function["parameters"] = copy.deepcopy(tool.parameters)
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def function_call(call: ToolCall, call_id: str, *, compact: bool = False) -> dict[str, Any]:
    """``call`` as an assistant message's ``tool_calls`` entry, under ``call_id`` (the adapter's form of
    the id), its arguments as JSON text (non-ASCII kept as is; ``compact``: no spaces after separators,
    as a vendor that streams its arguments so expects them back)."""
    separators = (",", ":") if compact else None
    arguments = json.dumps(call.arguments, ensure_ascii=False, separators=separators)
    return {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


def chat_messages(
    turns: Sequence[Message],
    *,
    user: Callable[[UserMessage], ChatMessage | None],
    assistant: Callable[[AssistantMessage], ChatMessage | None],
    tool_result: Callable[[ToolResultMessage], ChatMessage],
    results_end: Callable[[list[ChatMessage]], None] | None = None,
    bridge: str | None = None,
    update: Callable[[str], ChatMessage] | None = None,
) -> list[ChatMessage]:
    """``turns`` (the system prompt already taken out) as chat messages, each rendered by the adapter's
    ``user``, ``assistant`` and ``tool_result`` (a turn rendered as None is left out).

    The ordering rule these apis share: tool messages follow their assistant turn directly, so a
    mid-conversation system message (``<system_update>…</system_update>``, sent as a user message) waits
    until the batch of tool results before it is over, and goes just before the next user or assistant
    turn (or at the end). ``results_end`` runs at each such point, before those updates, to append what
    must follow a batch of results (images a tool returned). ``bridge``, for an api that refuses a user
    message right after a tool message (Mistral's rule), is the text of an assistant message put between
    the two, wherever they meet. ``update`` renders a system update's wrapped text as a message (default:
    a user message whose content is that text).
    """
    out: list[ChatMessage] = []
    updates: list[str] = []
    render_update: Callable[[str], ChatMessage] = update or (lambda wrapped: {"role": "user", "content": wrapped})

    def settle() -> None:
        if results_end is not None:
            results_end(out)
        out.extend(render_update(f"<system_update>{text}</system_update>") for text in updates)
        updates.clear()

    for message in turns:
        if isinstance(message, SystemMessage):
            text = system_update_text(message)
            if text:
                updates.append(text)
        elif isinstance(message, ToolResultMessage):
            out.append(tool_result(message))
        elif isinstance(message, UserMessage):
            settle()
            rendered = user(message)
            if rendered is not None:
                out.append(rendered)
        else:
            settle()
            rendered = assistant(message)
            if rendered is not None:
                out.append(rendered)
    settle()
    if bridge is None:
        return out
    bridged: list[ChatMessage] = []
    for rendered in out:
        if rendered["role"] == "user" and bridged and bridged[-1]["role"] == "tool":
            bridged.append({"role": "assistant", "content": bridge})
        bridged.append(rendered)
    return bridged
