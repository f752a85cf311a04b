"""Context → Cohere v2 chat request (``POST {base}/v2/chat``, ``stream: true``). Pure: no I/O, no environment.

Where it goes: the model's ``base_url`` (the host, ``https://api.cohere.com``; a trailing ``/v2`` is
accepted), else ``https://api.cohere.com``.

What the payload holds, after :func:`normalize.transcript_for` (another model's thinking arrives as
text, errored turns are gone, orphaned calls have results):

- the system prompt as a leading ``system`` message; a system message later in the transcript as
  ``<system_update>…</system_update>`` user text before the next turn (Cohere takes the system turn
  first only);
- user text and images (``image_url`` with a ``data:`` URI; images only reach a model whose ``input``
  lists them);
- an assistant turn with tool calls as ``tool_calls`` (arguments as a JSON string) beside a
  ``tool_plan``: the turn's tool plan (a thinking block signed ``tool_plan``, as ``decode.py`` makes
  it) and its text, joined by blank lines — Cohere refuses text content beside tool calls — and the
  model's own reasoning as ``thinking`` content items; a turn without calls as ``text`` (a tool plan
  without calls is text too) and ``thinking`` items in their order; redacted or empty blocks are not
  sent, nor is a turn left with nothing;
- a tool result as a ``tool`` message with its ``tool_call_id`` and its text as ``text`` content (an
  image in it becomes a note that it was left out: Cohere's tool content holds no image); a result
  that reports an error as a ``document`` whose data is ``{"error": text}``, so the model reads it as
  a failure;
- ``tools`` as ``{"type": "function", "function": {"name", "description", "parameters"}}``;
- ``max_tokens`` and ``temperature`` when given; ``stop_sequences``, ``strict_tools`` and
  ``safety_mode`` from ``Model.compat`` (:class:`~streamfns.cohere.compat.CohereCompat`);
- for a reasoning model asked for a thinking level, ``thinking``: ``{"type": "disabled"}`` for
  ``off``, else ``{"type": "enabled", "token_budget": N}`` (the rule for N is below). Without a level
  nothing is sent: Cohere's reasoning models think by default.

The thinking budget: Cohere requires only a positive integer, and advises leaving at least 1K tokens of
the output for the answer (thinking counts against ``max_tokens``). So N is the level's budget
(:func:`streamfns.kit.thinking_budget`) capped at the output cap (``max_tokens``, else the model's) less
:data:`~streamfns.kit.MIN_ANSWER_TOKENS`; a cap too small for that (under twice ``MIN_ANSWER_TOKENS``)
is shared half and half between thinking and answer — not cut to a budget of one token (thinking in
name only), nor left unlimited (thinking that eats the answer). N is never under 1.

Tool-call ids: Cohere's own (``<tool name>_<12 letters and digits>``) go back as they came. Cohere
documents no format for ``tool_call_id`` beyond "a string", so every id is sent in the form all the
strict vendors share (:func:`cohere_tool_call_id`: ``[a-zA-Z0-9_-]``, at most 64 characters): foreign
ids (another provider's ``call|fc_…``, a 300-character gateway id) through ``transcript_for`` — which
also keeps two ids that map alike apart and rewrites each result to its call's new id — and every id of
a call and of a result through the same rule again on the way out, so a call and its result always
carry the same id, and the same transcript always maps to the same ids.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, Final

from normalize import (
    TOOL_IMAGE_OMITTED,
    AssistantMessage,
    Context,
    Message,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    transcript_for,
)
from streamfns.cohere.compat import CohereCompat
from streamfns.cohere.decode import TOOL_PLAN
from streamfns.kit import MIN_ANSWER_TOKENS, WireRequest, parse_compat, thinking_budget
from streamfns.kit.functions import NO_TOOL_OUTPUT, chat_messages, function_call, function_tool

__all__ = ["DEFAULT_BASE_URL", "MAX_TOOL_CALL_ID", "NO_TOOL_OUTPUT", "build_request", "cohere_tool_call_id"]

DEFAULT_BASE_URL: Final = "https://api.cohere.com"
#: The text of a tool result that holds nothing (Cohere refuses an empty tool message).
#: The longest tool-call id sent (Cohere states no limit; 64 is what the strict vendors take).
MAX_TOOL_CALL_ID: Final = 64
_ID_UNSAFE: Final = re.compile(r"[^a-zA-Z0-9_-]")
_DIGEST = 8


def cohere_tool_call_id(tool_call_id: str) -> str:
    """A tool-call id as sent to Cohere: the identity on an id of ``[a-zA-Z0-9_-]`` of at most
    :data:`MAX_TOOL_CALL_ID` characters (Cohere's own ids among them); any other id has its other
    characters replaced by ``_``, is cut to leave room, and ends with ``_`` and 8 hex digits of the
    SHA-256 of the original — so two ids that differ only where the rule changed them (``call|fc_1``
    beside ``call_fc_1``, two long ids with one prefix) stay apart. Deterministic, and its own output
    maps to itself."""
    if len(tool_call_id) <= MAX_TOOL_CALL_ID and tool_call_id and _ID_UNSAFE.search(tool_call_id) is None:
        return tool_call_id
    safe = _ID_UNSAFE.sub("_", tool_call_id)[: MAX_TOOL_CALL_ID - _DIGEST - 1]
    digest = hashlib.sha256(tool_call_id.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST]
    return f"{safe}_{digest}"


def _user(message: UserMessage) -> dict[str, Any] | None:
    content = message.content
    if isinstance(content, str):
        return {"role": "user", "content": content} if content.strip() else None
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            if block.text.strip():
                parts.append({"type": "text", "text": block.text})
        else:
            parts.append({"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}})
    return {"role": "user", "content": parts} if parts else None


def _assistant(message: AssistantMessage) -> dict[str, Any] | None:
    calls = [
        function_call(block, cohere_tool_call_id(block.id), compact=True)
        for block in message.content
        if isinstance(block, ToolCall)
    ]
    content: list[dict[str, Any]] = []
    plan: list[str] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if block.redacted or not block.thinking.strip():
                continue
            if block.thinking_signature == TOOL_PLAN:
                # A plan goes back as the plan when the turn has calls; alone, it is what the model said.
                if calls:
                    plan.append(block.thinking)
                else:
                    content.append({"type": "text", "text": block.thinking})
            else:
                content.append({"type": "thinking", "thinking": block.thinking})
        elif isinstance(block, TextContent) and block.text.strip():
            if calls:
                plan.append(block.text)  # Cohere refuses text beside tool calls: it is the plan
            else:
                content.append({"type": "text", "text": block.text})
    if not calls and not content:
        return None
    out: dict[str, Any] = {"role": "assistant"}
    if calls:
        if plan:
            out["tool_plan"] = "\n\n".join(plan)
        out["tool_calls"] = calls
    if content:
        out["content"] = content
    return out


def _tool_result(result: ToolResultMessage) -> dict[str, Any]:
    texts = [
        block.text if isinstance(block, TextContent) else TOOL_IMAGE_OMITTED
        for block in result.content
        if not isinstance(block, TextContent) or block.text.strip()
    ]
    joined = "\n".join(texts) or NO_TOOL_OUTPUT
    if result.is_error:
        content: list[dict[str, Any]] = [{"type": "document", "document": {"data": {"error": joined}}}]
    else:
        content = [{"type": "text", "text": joined}]
    return {"role": "tool", "tool_call_id": cohere_tool_call_id(result.tool_call_id), "content": content}


def _messages(turns: Sequence[Message]) -> list[dict[str, Any]]:
    return chat_messages(turns, user=_user, assistant=_assistant, tool_result=_tool_result)


def _thinking(model: Model, options: StreamOptions) -> dict[str, Any] | None:
    level = options.reasoning
    if level is None or not model.reasoning:
        return None
    if level == "off":
        return {"type": "disabled"}
    budget = thinking_budget(level, options.thinking_budgets)
    ceiling = options.max_tokens or model.max_tokens
    if ceiling:
        # MIN_ANSWER_TOKENS left for the answer, or half a cap too small for that (module docstring).
        budget = min(budget, max(ceiling - MIN_ANSWER_TOKENS, ceiling // 2))
    return {"type": "enabled", "token_budget": max(1, budget)}


def build_request(model: Model, context: Context, options: StreamOptions | None = None) -> WireRequest:
    """The streaming ``/v2/chat`` request for ``model`` (see the module docstring). ``Model.compat``
    mistakes raise :class:`~streamfns.kit.CompatError`."""
    opts = options if options is not None else StreamOptions()
    compat = parse_compat(CohereCompat, model.compat)
    split = transcript_for(model, context, normalize_tool_call_id=cohere_tool_call_id)
    messages: list[dict[str, Any]] = []
    if split.prompt.strip():
        messages.append({"role": "system", "content": split.prompt})
    messages.extend(_messages(split.turns))
    payload: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    if split.tools:
        payload["tools"] = [function_tool(tool) for tool in split.tools]
        if compat.strict_tools is not None:
            payload["strict_tools"] = compat.strict_tools
    elif compat.safety_mode is not None:
        payload["safety_mode"] = compat.safety_mode
    if opts.max_tokens:
        payload["max_tokens"] = opts.max_tokens
    if opts.temperature is not None:
        payload["temperature"] = opts.temperature
    if compat.stop_sequences:
        payload["stop_sequences"] = list(compat.stop_sequences)
    thinking = _thinking(model, opts)
    if thinking is not None:
        payload["thinking"] = thinking
    base = (model.base_url or DEFAULT_BASE_URL).rstrip("/").removesuffix("/v2")
    headers = {"accept": "text/event-stream", "content-type": "application/json"}
    return WireRequest(url=f"{base}/v2/chat", payload=payload, headers=headers)
