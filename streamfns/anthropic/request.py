"""Context → Anthropic Messages request (URL, headers, JSON payload). Pure: no I/O, no environment.

The kit adds the API key, ``model.headers`` and ``options.headers`` and applies
``StreamOptions.on_payload``; everything else about the request is decided here, so it can be tested
without HTTP.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from normalize import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    sanitize_surrogates,
    transcript_for,
)
from streamfns.kit import WireRequest, chat_messages, parse_compat
from streamfns.kit.thinking import DEFAULT_THINKING_BUDGETS, MIN_ANSWER_TOKENS, effort_for, thinking_budget

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_BASE_URL",
    "DEFAULT_THINKING_BUDGETS",
    "INTERLEAVED_THINKING_BETA",
    "MIN_ANSWER_TOKENS",
    "AnthropicCompat",
    "anthropic_tool_call_id",
    "build_request",
]

DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
ANTHROPIC_VERSION: Final = "2023-06-01"
INTERLEAVED_THINKING_BETA: Final = "interleaved-thinking-2025-05-14"
#: Text sent before a tool-result image that has no text of its own.
SEE_ATTACHED_IMAGE: Final = "(see attached image)"

_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_ID_LENGTH = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class AnthropicCompat:
    """Per-model flags (``Model.compat``) for Anthropic and Anthropic-compatible endpoints.

    ``adaptive_thinking``: the model takes ``thinking: {type: adaptive}`` with an effort instead of a
    token budget; ``interleaved_thinking``: send the interleaved-thinking beta; ``supports_temperature``:
    the model accepts ``temperature``; ``supports_long_cache_retention``: the one-hour cache TTL is
    available; ``allow_empty_signature``: an endpoint that accepts unsigned thinking blocks on replay.
    """

    adaptive_thinking: bool = False
    interleaved_thinking: bool = False
    supports_temperature: bool = True
    supports_long_cache_retention: bool = True
    allow_empty_signature: bool = False


def anthropic_tool_call_id(tool_call_id: str) -> str:
    """Map any tool-call id to one Anthropic accepts: ``[a-zA-Z0-9_-]``, at most 64 characters.

    Deterministic, and the identity on ids that already conform, so a call and its result always
    map to the same id.
    """
    return _BAD_ID_CHARS.sub("_", tool_call_id)[:_MAX_ID_LENGTH]


# ---------------------------------------------------------------------------------------- content


def _image_block(image: ImageContent) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.mime_type, "data": image.data}}


def _user_content(message: UserMessage) -> str | list[dict[str, Any]] | None:
    content = message.content
    if isinstance(content, str):
        return content if content.strip() else None
    blocks: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, ImageContent):
            blocks.append(_image_block(block))
        elif block.text.strip():
            blocks.append({"type": "text", "text": block.text})
    return blocks or None


def _assistant_content(message: AssistantMessage, allow_empty_signature: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.redacted:
                if block.thinking_signature:
                    blocks.append({"type": "redacted_thinking", "data": block.thinking_signature})
            elif block.thinking_signature:
                blocks.append({"type": "thinking", "thinking": block.thinking, "signature": block.thinking_signature})
            elif not block.thinking.strip():
                continue
            elif allow_empty_signature:
                blocks.append({"type": "thinking", "thinking": block.thinking, "signature": ""})
            else:
                # Unsigned reasoning (e.g. from an interrupted stream) would be rejected as thinking.
                blocks.append({"type": "text", "text": block.thinking})
        else:
            blocks.append(_tool_use_block(block))
    return blocks


def _tool_use_block(call: ToolCall) -> dict[str, Any]:
    # A copy, so that a caller editing the payload (on_payload) cannot reach into the transcript.
    arguments = copy.deepcopy(call.arguments)
    return {"type": "tool_use", "id": anthropic_tool_call_id(call.id), "name": call.name, "input": arguments}


def _tool_result_block(result: ToolResultMessage) -> dict[str, Any]:
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    images = [block for block in result.content if isinstance(block, ImageContent)]
    content: str | list[dict[str, Any]]
    if not images:
        content = "\n".join(texts)
    else:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text} for text in texts if text.strip()]
        if not blocks:
            blocks.append({"type": "text", "text": SEE_ATTACHED_IMAGE})
        blocks.extend(_image_block(image) for image in images)
        content = blocks
    return {
        "type": "tool_result",
        "tool_use_id": anthropic_tool_call_id(result.tool_call_id),
        "content": content,
        "is_error": result.is_error,
    }


def _as_blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _merge_user_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Tool results, <system_update> turns and user text can end up adjacent; one user turn keeps
    # every tool_result block first in the turn that follows its tool_use, as the API requires.
    merged: list[dict[str, Any]] = []
    for message in messages:
        if merged and message["role"] == "user" and merged[-1]["role"] == "user":
            previous = merged[-1]
            previous["content"] = [*_as_blocks(previous["content"]), *_as_blocks(message["content"])]
        else:
            merged.append(message)
    return merged


def _convert_messages(messages: Sequence[Message], allow_empty_signature: bool) -> list[dict[str, Any]]:
    # Each tool result its own user turn here; _merge_user_turns then joins a batch of them (and the
    # system updates after it) into the one user turn the API wants.
    def user(message: UserMessage) -> dict[str, Any] | None:
        content = _user_content(message)
        return None if content is None else {"role": "user", "content": content}

    def assistant(message: AssistantMessage) -> dict[str, Any] | None:
        blocks = _assistant_content(message, allow_empty_signature)
        return {"role": "assistant", "content": blocks} if blocks else None

    out = chat_messages(
        messages,
        user=user,
        assistant=assistant,
        tool_result=lambda message: {"role": "user", "content": [_tool_result_block(message)]},
        update=lambda wrapped: {"role": "user", "content": [{"type": "text", "text": wrapped}]},
    )
    return _merge_user_turns(out)


def _tool_definition(tool: Tool) -> dict[str, Any]:
    parameters = copy.deepcopy(tool.parameters)  # not shared with the caller's Tool, as above
    schema: dict[str, Any] = {
        "type": "object",
        "properties": parameters.get("properties") or {},
        "required": parameters.get("required") or [],
    }
    # Keep the rest of the schema ($defs, additionalProperties …): $refs must still resolve.
    schema.update({key: value for key, value in parameters.items() if key not in {"type", "properties", "required"}})
    definition: dict[str, Any] = {"name": tool.name}
    if tool.description:
        definition["description"] = sanitize_surrogates(tool.description)
    definition["input_schema"] = schema
    return definition


# ------------------------------------------------------------------------------- request options


def _cache_control(compat: AnthropicCompat, options: StreamOptions) -> dict[str, str] | None:
    retention = options.cache_retention
    if retention == "none":
        return None
    if retention == "long" and compat.supports_long_cache_retention:
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def _mark_last_user_block(messages: list[dict[str, Any]], cache_control: dict[str, str]) -> None:
    for message in reversed(messages):
        if message["role"] != "user":
            continue
        blocks = _as_blocks(message["content"])
        if blocks:
            blocks[-1] = {**blocks[-1], "cache_control": dict(cache_control)}
            message["content"] = blocks
        return


def _apply_thinking(
    payload: dict[str, Any], model: Model, compat: AnthropicCompat, options: StreamOptions, betas: list[str]
) -> bool:
    """Set ``thinking``/``output_config``/``max_tokens``; return whether the model will think."""
    if not model.reasoning:
        return False
    level_map = model.thinking_level_map or {}
    level = options.reasoning
    can_disable = not ("off" in level_map and level_map["off"] is None)
    if level is None or level == "off":
        if can_disable:
            payload["thinking"] = {"type": "disabled"}
            return False
        # Always-thinking models reject "disabled"; leave thinking to the model's default.
        return True
    if compat.adaptive_thinking:
        payload["thinking"] = {"type": "adaptive", "display": "summarized"}
        payload["output_config"] = {"effort": effort_for(level, level_map)}
        return True
    budget = thinking_budget(level, options.thinking_budgets)
    max_tokens = min(options.max_tokens + budget, model.max_tokens) if options.max_tokens else model.max_tokens
    if max_tokens <= budget:
        budget = max(0, max_tokens - MIN_ANSWER_TOKENS)
    budget = min(budget, max(0, max_tokens - MIN_ANSWER_TOKENS))
    payload["max_tokens"] = max_tokens
    payload["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if compat.interleaved_thinking:
        betas.append(INTERLEAVED_THINKING_BETA)
    return True


def _headers(betas: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {
        "accept": "text/event-stream",
        "anthropic-version": ANTHROPIC_VERSION,
        "content-type": "application/json",
    }
    if betas:
        headers["anthropic-beta"] = ",".join(dict.fromkeys(betas))
    return headers


def build_request(model: Model, context: Context, options: StreamOptions | None = None) -> WireRequest:
    """Render ``context`` as a streaming Anthropic Messages request for ``model``.

    Promises: the transcript goes through :func:`normalize.normalize_context` and
    :func:`normalize.transform_messages` (tool-call ids via :func:`anthropic_tool_call_id`), so a
    transcript from any model is accepted. Leading system messages become the ``system`` blocks;
    later ones become ``<system_update>`` user text (their tool changes apply to ``tools``).
    Consecutive tool results form one user turn. Blank text and empty messages are dropped.
    ``max_tokens`` is always present. ``options.cache_retention`` places at most three cache
    markers (system, last tool, last block of the last user turn). ``options.reasoning`` maps to
    adaptive thinking with an effort, or to a token budget, or to ``disabled``; ``temperature`` is
    sent only while thinking is off and the model accepts it. The headers are the api's own
    (version, betas): the kit adds the key, ``model.headers`` and ``options.headers``, joining
    ``anthropic-beta`` lists. ``Model.compat`` is read as :class:`AnthropicCompat` (an unknown flag
    raises :class:`~streamfns.kit.CompatError`).
    """
    opts = options if options is not None else StreamOptions()
    compat = parse_compat(AnthropicCompat, model.compat)
    split = transcript_for(model, context, normalize_tool_call_id=anthropic_tool_call_id)
    prompt, tools = split.prompt, split.tools
    messages = _convert_messages(split.turns, compat.allow_empty_signature)
    cache_control = _cache_control(compat, opts)

    payload: dict[str, Any] = {
        "model": model.id,
        "max_tokens": opts.max_tokens or model.max_tokens,
        "stream": True,
    }
    if prompt.strip():
        system_block: dict[str, Any] = {"type": "text", "text": prompt}
        if cache_control is not None:
            system_block["cache_control"] = dict(cache_control)
        payload["system"] = [system_block]
    if cache_control is not None:
        _mark_last_user_block(messages, cache_control)
    payload["messages"] = messages
    if tools:
        definitions = [_tool_definition(tool) for tool in tools]
        if cache_control is not None:
            definitions[-1]["cache_control"] = dict(cache_control)
        payload["tools"] = definitions

    betas: list[str] = []
    thinking = _apply_thinking(payload, model, compat, opts, betas)
    if opts.temperature is not None and not thinking and compat.supports_temperature:
        payload["temperature"] = opts.temperature

    base_url = (model.base_url or DEFAULT_BASE_URL).rstrip("/")
    return WireRequest(url=f"{base_url}/v1/messages", payload=payload, headers=_headers(betas))
