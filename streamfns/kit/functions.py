"""The OpenAI-style function pieces several apis take as they are: Chat Completions and every server
that speaks it, Mistral, Cohere v2.

:func:`function_tool` is a tool definition, ``{"type": "function", "function": {"name", "description",
"parameters"}}``; :func:`function_call` is an assistant's call as it is replayed, its arguments as a
JSON string. :data:`NO_TOOL_OUTPUT` is what a tool result with nothing to say is sent as (these apis
refuse an empty tool message, or treat it as a failure).
"""

from __future__ import annotations

import copy
import json
from typing import Any, Final

from normalize import Tool, ToolCall, sanitize_surrogates

__all__ = ["NO_TOOL_OUTPUT", "function_call", "function_tool"]

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
