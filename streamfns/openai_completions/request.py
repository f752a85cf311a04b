"""Context → Chat Completions request (URL, headers, JSON payload). Pure: no I/O, no environment.

Everything that differs between servers is read from the model's :class:`CompletionsCompat`
profile; the kit adds the key, ``model.headers`` and ``options.headers`` and applies
``StreamOptions.on_payload``. Mistral's rules (``mistral_tool_call_id``, ``TOOL_RESULTS_PROCESSED``) live
in :mod:`streamfns.mistral.rules`, shared with the native Mistral adapter; they are re-exported here.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Final, cast

from normalize import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    transcript_for,
)
from streamfns.kit import WireRequest, prompt_cache_key
from streamfns.kit.functions import NO_TOOL_OUTPUT, chat_messages, function_call, function_tool
from streamfns.kit.thinking import DEFAULT_THINKING_BUDGETS, MIN_ANSWER_TOKENS, effort_for, thinking_budget
from streamfns.mistral.rules import TOOL_RESULTS_PROCESSED, mistral_tool_call_id
from streamfns.openai_completions.compat import CompletionsCompat, compat_for, profile_name_for

__all__ = [
    "DEFAULT_BASE_URLS",
    "DEFAULT_THINKING_BUDGETS",
    "IMAGES_FROM_TOOL_RESULT",
    "MIN_ANSWER_TOKENS",
    "NO_TOOL_OUTPUT",
    "SEE_ATTACHED_IMAGE",
    "TOOL_RESULTS_PROCESSED",
    "build_request",
    "mistral_tool_call_id",
    "openai_tool_call_id",
]

#: Where a profile's server listens when the model names no ``base_url``.
DEFAULT_BASE_URLS: Final[dict[str, str]] = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "groq": "https://api.groq.com/openai/v1",
    "xai": "https://api.x.ai/v1",
    "deepseek": "https://api.deepseek.com",
    "mistral": "https://api.mistral.ai/v1",
    "together": "https://api.together.xyz/v1",
    "fireworks": "https://api.fireworks.ai/inference/v1",
    "cerebras": "https://api.cerebras.ai/v1",
    "moonshot": "https://api.moonshot.ai/v1",
    "zai": "https://api.z.ai/api/paas/v4",
    "qwen": "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
    "vllm": "http://localhost:8000/v1",
    "ollama-openai": "http://localhost:11434/v1",
    "lmstudio": "http://localhost:1234/v1",
    "llamacpp": "http://localhost:8080/v1",
}
SEE_ATTACHED_IMAGE: Final = "(see attached image)"
IMAGES_FROM_TOOL_RESULT: Final = "Attached image(s) from tool result:"

#: The delta fields thinking can be replayed through (a thinking block's signature names one).
_REPLAY_FIELDS: Final = frozenset({"reasoning_content", "reasoning", "reasoning_text"})
_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_ID = 40


# ------------------------------------------------------------------------------------ tool-call ids


def openai_tool_call_id(call_id: str) -> str:
    """A foreign tool-call id as OpenAI accepts it: ``[a-zA-Z0-9_-]``, at most 40 characters (a
    compound ``call|item`` id becomes ``call_item``; a longer id keeps a prefix and a hash)."""
    safe = _ID_UNSAFE.sub("_", call_id)
    if len(safe) <= _MAX_ID and safe:
        return safe
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{safe[: _MAX_ID - 9]}_{digest}"


def _id_rule(compat: CompletionsCompat) -> Callable[[str], str]:
    return mistral_tool_call_id if compat.tool_call_id_format == "mistral" else openai_tool_call_id


# ------------------------------------------------------------------------------------ messages


def _image_part(image: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}


def _user_message(message: UserMessage) -> dict[str, Any] | None:
    content = message.content
    if isinstance(content, str):
        return {"role": "user", "content": content} if content.strip() else None
    texts = [block for block in content if isinstance(block, TextContent) and block.text.strip()]
    if not any(isinstance(block, ImageContent) for block in content):
        # Text only: a plain string, which every server (and every chat template) accepts.
        return {"role": "user", "content": "\n".join(block.text for block in texts)} if texts else None
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            if block.text.strip():
                parts.append({"type": "text", "text": block.text})
        else:
            parts.append(_image_part(block))
    return {"role": "user", "content": parts}


def _assistant_message(message: AssistantMessage, model: Model, compat: CompletionsCompat) -> dict[str, Any] | None:
    texts: list[str] = []
    thinking: dict[str, list[str]] = {}
    calls: list[dict[str, Any]] = []
    details: list[Any] = []
    for block in message.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
        elif isinstance(block, ThinkingContent):
            if block.redacted or not block.thinking.strip():
                continue
            signature = block.thinking_signature or ""
            if compat.thinking_as_text:
                thinking.setdefault("", []).append(block.thinking)
            elif compat.replay_thinking and (signature in _REPLAY_FIELDS or signature in compat.reasoning_fields):
                thinking.setdefault(signature, []).append(block.thinking)
            # Thinking read from elsewhere (a content list, reasoning_details text) has no field to
            # go back through; it is not replayed.
        else:
            calls.append(function_call(block, block.id))
            if block.thought_signature:
                detail = _reasoning_detail(block.thought_signature)
                if detail is not None:
                    details.append(detail)
    # Separate blocks stay separate paragraphs: glued together, another model's reasoning (turned
    # into text by transform_messages) would run into the answer's first word.
    text = "\n\n".join(piece for piece in texts if piece.strip())
    if compat.thinking_as_text and "" in thinking:
        text = "\n\n".join([*thinking.pop(""), *([text] if text.strip() else [])])
    if not text.strip() and not calls and not thinking:
        return None
    out: dict[str, Any] = {"role": "assistant", "content": text if text.strip() else None}
    if out["content"] is None and compat.requires_assistant_after_tool_result:
        out["content"] = ""
    for field_name, pieces in thinking.items():
        out[field_name] = "\n".join(pieces)
    if compat.requires_reasoning_content and model.reasoning and "reasoning_content" not in out:
        out["reasoning_content"] = ""
    if calls:
        out["tool_calls"] = calls
    if details:
        out["reasoning_details"] = details
    return out


def _reasoning_detail(signature: str) -> Any:
    """The ``reasoning_details`` entry a tool call's thought signature holds (None if it holds none)."""
    try:
        value = json.loads(signature)
    except ValueError:
        return None
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _tool_message(result: ToolResultMessage, compat: CompletionsCompat) -> tuple[dict[str, Any], list[ImageContent]]:
    texts = [block.text for block in result.content if isinstance(block, TextContent) and block.text.strip()]
    images = [block for block in result.content if isinstance(block, ImageContent)]
    content = "\n".join(texts) if texts else SEE_ATTACHED_IMAGE if images else NO_TOOL_OUTPUT
    message: dict[str, Any] = {"role": "tool", "tool_call_id": result.tool_call_id, "content": content}
    if compat.requires_tool_result_name:
        message["name"] = result.tool_name
    return message, images


def _convert(messages: Sequence[Message], model: Model, compat: CompletionsCompat) -> list[dict[str, Any]]:
    images: list[ImageContent] = []

    def tool_result(message: ToolResultMessage) -> dict[str, Any]:
        tool_message, result_images = _tool_message(message, compat)
        images.extend(result_images)
        return tool_message

    def results_end(out: list[dict[str, Any]]) -> None:
        # Tool messages must follow their assistant message directly: the images of the results come
        # after the whole batch, as a user message of their own.
        if images:
            parts: list[dict[str, Any]] = [{"type": "text", "text": IMAGES_FROM_TOOL_RESULT}]
            parts.extend(_image_part(image) for image in images)
            out.append({"role": "user", "content": parts})
            images.clear()

    return chat_messages(
        messages,
        user=_user_message,
        assistant=lambda message: _assistant_message(message, model, compat),
        tool_result=tool_result,
        results_end=results_end,
        bridge=TOOL_RESULTS_PROCESSED if compat.requires_assistant_after_tool_result else None,
    )


def _has_tool_history(messages: Sequence[Message]) -> bool:
    return any(
        isinstance(message, ToolResultMessage)
        or (isinstance(message, AssistantMessage) and any(isinstance(block, ToolCall) for block in message.content))
        for message in messages
    )


# ------------------------------------------------------------------------------------ options


def _apply_caching(payload: dict[str, Any], compat: CompletionsCompat, options: StreamOptions) -> None:
    retention = options.cache_retention
    if retention == "none":
        return
    if compat.prompt_cache_key and options.session_id:
        payload["prompt_cache_key"] = prompt_cache_key(options.session_id)
    if compat.long_cache_retention and retention == "long":
        payload["prompt_cache_retention"] = "24h"
    if compat.cache_control:
        marker: dict[str, str] = {"type": "ephemeral"}
        if retention == "long":
            marker["ttl"] = "1h"
        _mark_cache(payload["messages"], marker)


def _mark_cache(messages: list[dict[str, Any]], marker: dict[str, str]) -> None:
    """Anthropic-style markers (through OpenRouter): on the system prompt and the last user turn."""

    def mark(message: dict[str, Any]) -> None:
        content = message["content"]
        parts: list[dict[str, Any]] = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for index in range(len(parts) - 1, -1, -1):
            if parts[index].get("type") == "text":
                parts[index] = {**parts[index], "cache_control": dict(marker)}
                break
        message["content"] = parts

    if messages and messages[0]["role"] in ("system", "developer"):
        mark(messages[0])
    for message in reversed(messages):
        if message["role"] == "user":
            mark(message)
            break


def _budget(level: ThinkingLevel, options: StreamOptions, model: Model) -> int:
    budget = thinking_budget(level, options.thinking_budgets)
    ceiling = options.max_tokens or model.max_tokens
    return max(0, min(budget, ceiling - MIN_ANSWER_TOKENS))


def _apply_thinking(payload: dict[str, Any], model: Model, compat: CompletionsCompat, options: StreamOptions) -> None:
    """Request the thinking level in the profile's format; nothing for a model that does not reason."""
    fmt = compat.thinking_format
    if not model.reasoning or fmt == "none":
        return
    level_map = model.thinking_level_map or {}
    level = options.reasoning
    on = level is not None and level != "off"
    # A model whose map says off: null always thinks; asking it to stop would be rejected.
    can_disable = not ("off" in level_map and level_map["off"] is None)
    effort = effort_for(level, level_map) if level is not None and on else None
    off_value = level_map.get("off")
    with_effort = compat.reasoning_effort and effort is not None

    if fmt == "openai":
        if with_effort:
            payload["reasoning_effort"] = effort
        elif not on and isinstance(off_value, str):
            payload["reasoning_effort"] = off_value
    elif fmt == "openrouter":
        if on:
            payload["reasoning"] = {"effort": effort}
        elif can_disable:
            payload["reasoning"] = {"effort": off_value or "none"}
    elif fmt in ("deepseek", "zai"):
        if on:
            payload["thinking"] = {"type": "enabled", **({"clear_thinking": False} if fmt == "zai" else {})}
        elif can_disable:
            payload["thinking"] = {"type": "disabled"}
    elif fmt == "qwen":
        if on or can_disable:
            payload["enable_thinking"] = on
    elif fmt in ("qwen-chat-template", "chat-template"):
        if on or can_disable:
            kwargs: dict[str, Any] = {"enable_thinking": on}
            if fmt == "qwen-chat-template":
                kwargs["preserve_thinking"] = on
            kwargs.update(copy.deepcopy(compat.chat_template_kwargs))
            payload["chat_template_kwargs"] = kwargs
    elif fmt == "together":
        if on or can_disable:
            payload["reasoning"] = {"enabled": on}
    elif on:  # string
        payload["thinking"] = effort
    elif can_disable:
        payload["thinking"] = off_value or "none"

    if with_effort and fmt in ("deepseek", "zai", "qwen", "chat-template", "qwen-chat-template", "together"):
        payload["reasoning_effort"] = effort
    if on and level is not None and compat.thinking_budget_field is not None:
        payload[compat.thinking_budget_field] = _budget(level, options, model)


def _base_url(model: Model) -> str:
    base = model.base_url or DEFAULT_BASE_URLS.get(profile_name_for(model), "")
    if not base:
        raise ValueError(
            f"model {model.provider}/{model.id} has no base_url and its provider has no known address; "
            "set Model.base_url to the server's /v1 address"
        )
    return base.rstrip("/")


def build_request(model: Model, context: Context, options: StreamOptions | None = None) -> WireRequest:
    """Render ``context`` as a streaming Chat Completions request for ``model``.

    Promises: the transcript goes through :func:`normalize.normalize_context` and
    :func:`normalize.transform_messages` (foreign tool-call ids rewritten for the server), so a
    transcript from any model is accepted. Leading system messages become one ``system`` message
    (``developer`` for reasoning models where the profile says so); later ones become
    ``<system_update>`` user text after any tool results in flight (their tool changes apply to
    ``tools``). Assistant text is one string, its text blocks separated by a blank line (a foreign
    model's reasoning turned into text never runs into the answer); the model's own thinking goes
    back through the field it arrived in; tool calls carry their arguments as JSON; tool results are
    ``tool`` messages, their images one user message after the batch. ``tools: []`` is sent when the
    history has tool calls but no tools are given only where the profile says so (most servers
    reject an empty list). ``session_id`` becomes ``prompt_cache_key``
    and ``reasoning`` a thinking request, both per profile. ``Model.compat`` is read by
    :func:`~streamfns.openai_completions.compat.compat_for` (a mistake raises
    :class:`~streamfns.kit.CompatError`); the profile's ``extra_body`` is merged last.
    """
    opts = options if options is not None else StreamOptions()
    compat = compat_for(model)
    split = transcript_for(model, context, normalize_tool_call_id=_id_rule(compat))
    prompt, tools = split.prompt, split.tools

    messages: list[dict[str, Any]] = []
    if prompt.strip():
        messages.append(
            {"role": "developer" if model.reasoning and compat.developer_role else "system", "content": prompt}
        )
    messages.extend(_convert(split.turns, model, compat))

    payload: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    if compat.usage_in_stream:
        payload["stream_options"] = {"include_usage": True}
    if compat.store:
        payload["store"] = False
    if opts.max_tokens:
        payload[compat.max_tokens_field] = opts.max_tokens
    if opts.temperature is not None and compat.supports_temperature:
        payload["temperature"] = opts.temperature
    if tools:
        payload["tools"] = [function_tool(tool, strict=compat.strict_tools) for tool in tools]
    elif compat.empty_tools_with_history and _has_tool_history(split.turns):
        payload["tools"] = []
    _apply_caching(payload, compat, opts)
    _apply_thinking(payload, model, compat, opts)
    payload.update(copy.deepcopy(compat.extra_body))
    headers = {"accept": "text/event-stream", "content-type": "application/json"}
    return WireRequest(url=f"{_base_url(model)}/chat/completions", payload=payload, headers=headers)
