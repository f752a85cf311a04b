"""The ConverseStream request: ``POST {endpoint}/model/{model id}/converse-stream`` and its JSON body.

Where it goes: :func:`streamfns.kit.aws.bedrock_runtime_url` — the model's ``base_url``; else
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` / ``AWS_ENDPOINT_URL``; else the ``bedrock-runtime`` host of the
region (``compat.region``, an ARN id's own, ``AWS_REGION``, ``AWS_DEFAULT_REGION``, the profile's).
That call is the one place this builder reads the environment; everything else is a function of the
model, the context and the options. The id (an inference profile ``us.``/``eu.``/``apac.``/``global.``
id, a foundation model id, an ARN) is percent-encoded as one path segment; an id that is empty or a dot
segment, a region that is not a region name and an endpoint variable that is not a plain URL raise
:class:`~streamfns.kit.CompatError` (the stream ends ``config``, nothing signed or sent).

What the body holds:

- ``system``: the system prompt as a text block (then a ``cachePoint`` when caching applies);
  mid-conversation system messages become ``<system_update>`` user text;
- ``messages`` alternating ``user``/``assistant`` (adjacent turns of one role merge): user text and
  images (``image.source.bytes``, base64); assistant text, ``toolUse`` (``input`` the arguments) and
  reasoning — for Claude ``reasoningContent.reasoningText`` with its signature, or
  ``redactedContent``; reasoning without a signature is replayed as text for Claude (Bedrock refuses
  it unsigned) and as ``reasoningText`` for the others; tool results as ``toolResult`` blocks
  (``status: "error"`` for a failed tool) in the user turn after the call. Blank text is dropped and an
  empty turn says ``(empty)`` (Bedrock refuses empty content);
- ``toolConfig.tools[].toolSpec`` with the JSON schema;
- ``inferenceConfig``: ``maxTokens`` (for Claude always: the request's, else the model's, raised by a
  thinking budget), ``temperature``;
- ``additionalModelRequestFields``: Claude thinking (``thinking: {type: enabled, budget_tokens}``, and
  the interleaved-thinking beta with tools) when ``options.reasoning`` is on, plus ``compat.additional_fields``;
- ``cachePoint`` blocks after the system prompt and at the end of the last user turn when
  ``options.cache_retention`` is not ``none`` and the model takes them (``ttl: "1h"`` for ``long`` when
  ``compat.long_cache_ttl``);
- ``guardrailConfig`` from ``compat.guardrail``.
"""

from __future__ import annotations

import re
from typing import Any, Final

import normalize as nz
from streamfns.bedrock.compat import BedrockCompat
from streamfns.kit import (
    MIN_ANSWER_TOKENS,
    CompatError,
    WireRequest,
    bedrock_model_path,
    bedrock_runtime_url,
    parse_compat,
    thinking_budget,
)

__all__ = ["INTERLEAVED_THINKING_BETA", "bedrock_tool_call_id", "build_request", "is_claude", "takes_cache_points"]

INTERLEAVED_THINKING_BETA: Final = "interleaved-thinking-2025-05-14"
_EMPTY_TURN: Final = "(empty)"
_IMAGE_FORMATS: Final = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
_BAD_ID_CHARS: Final = re.compile(r"[^a-zA-Z0-9_-]")
_PROFILE_PREFIX: Final = re.compile(r"^(?:us|eu|apac|global|us-gov|jp|au|ca)\.")
_GUARDRAIL_KEYS: Final = frozenset({"guardrailIdentifier", "guardrailVersion", "trace", "streamProcessingMode"})


def _base_id(model_id: str) -> str:
    """The foundation model id inside an inference-profile id or ARN (``anthropic.claude-…``)."""
    tail = model_id.rpartition("/")[2] if model_id.startswith("arn:") else model_id
    return _PROFILE_PREFIX.sub("", tail)


def is_claude(model: nz.Model, compat: BedrockCompat) -> bool:
    """Whether the model is Anthropic Claude (``compat.claude``, else its id)."""
    return compat.claude if compat.claude is not None else _base_id(model.id).startswith("anthropic.")


def takes_cache_points(model: nz.Model, compat: BedrockCompat) -> bool:
    """Whether the model takes ``cachePoint`` blocks (``compat.cache_points``, else Claude and Nova)."""
    if compat.cache_points is not None:
        return compat.cache_points
    base = _base_id(model.id)
    return base.startswith(("anthropic.claude", "amazon.nova"))


def bedrock_tool_call_id(tool_call_id: str) -> str:
    """A tool-call id as Bedrock accepts one (``[a-zA-Z0-9_-]``, at most 64 characters): the same id for
    the same input, the identity on ids that already conform."""
    cleaned = _BAD_ID_CHARS.sub("_", tool_call_id)[:64]
    return cleaned or "call"


def _image(image: nz.ImageContent) -> dict[str, Any]:
    fmt = _IMAGE_FORMATS.get(image.mime_type.lower())
    if fmt is None:
        raise ValueError(f"Bedrock takes png, jpeg, gif or webp images, not {image.mime_type!r}")
    return {"image": {"format": fmt, "source": {"bytes": image.data}}}


def _user_blocks(content: str | list[Any]) -> list[dict[str, Any]]:
    blocks = [content] if isinstance(content, str) else content
    out: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, str):
            if block.strip():
                out.append({"text": block})
        elif isinstance(block, nz.TextContent):
            if block.text.strip():
                out.append({"text": block.text})
        elif isinstance(block, nz.ImageContent):
            out.append(_image(block))
    return out


def _tool_result(message: nz.ToolResultMessage) -> dict[str, Any]:
    content = _user_blocks(list(message.content)) or [{"text": _EMPTY_TURN}]
    return {
        "toolResult": {
            "toolUseId": bedrock_tool_call_id(message.tool_call_id),
            "content": content,
            "status": "error" if message.is_error else "success",
        }
    }


def _assistant_blocks(message: nz.AssistantMessage, claude: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, nz.TextContent):
            if block.text.strip():
                out.append({"text": block.text})
        elif isinstance(block, nz.ThinkingContent):
            if block.redacted:
                if block.thinking_signature:
                    out.append({"reasoningContent": {"redactedContent": block.thinking_signature}})
            elif block.thinking.strip():
                if claude and not block.thinking_signature:
                    out.append({"text": block.thinking})  # unsigned reasoning cannot be replayed as such
                else:
                    text: dict[str, Any] = {"text": block.thinking}
                    if block.thinking_signature:
                        text["signature"] = block.thinking_signature
                    out.append({"reasoningContent": {"reasoningText": text}})
        else:
            out.append(
                {"toolUse": {"toolUseId": bedrock_tool_call_id(block.id), "name": block.name, "input": block.arguments}}
            )
    return out


def _messages(turns: list[nz.Message], claude: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in turns:
        if isinstance(message, nz.SystemMessage):
            text = nz.system_update_text(message)
            if text:
                add("user", [{"text": f"<system_update>{text}</system_update>"}])
        elif isinstance(message, nz.ToolResultMessage):
            add("user", [_tool_result(message)])
        elif isinstance(message, nz.UserMessage):
            add("user", _user_blocks(message.content) or [{"text": _EMPTY_TURN}])
        else:
            blocks = _assistant_blocks(message, claude)
            if blocks:
                add("assistant", blocks)
    # A tool result must come first in the turn after its call: a merged turn keeps them first.
    for turn in out:
        if turn["role"] == "user":
            content: list[dict[str, Any]] = turn["content"]
            content.sort(key=lambda block: 0 if "toolResult" in block else 1)
    return out


def _cache_point(retention: nz.CacheRetention, compat: BedrockCompat) -> dict[str, Any]:
    point: dict[str, Any] = {"type": "default"}
    if retention == "long" and compat.long_cache_ttl:
        point["ttl"] = "1h"
    return {"cachePoint": point}


def build_request(model: nz.Model, context: nz.Context, options: nz.StreamOptions) -> WireRequest:
    """The ``converse-stream`` request (see the module docstring)."""
    compat = parse_compat(BedrockCompat, model.compat)
    claude = is_claude(model, compat)
    transcript = nz.transcript_for(model, context, normalize_tool_call_id=bedrock_tool_call_id)
    payload: dict[str, Any] = {"messages": _messages(transcript.turns, claude)}
    caching = options.cache_retention != "none" and takes_cache_points(model, compat)
    if transcript.prompt:
        payload["system"] = [{"text": transcript.prompt}]
        if caching:
            payload["system"].append(_cache_point(options.cache_retention, compat))
    if caching:
        last_user = next((turn for turn in reversed(payload["messages"]) if turn["role"] == "user"), None)
        if last_user is not None:
            last_user["content"].append(_cache_point(options.cache_retention, compat))
    if transcript.tools:
        payload["toolConfig"] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": t.name,
                        "description": t.description or t.name,
                        "inputSchema": {"json": t.parameters},
                    }
                }
                for t in transcript.tools
            ]
        }
    inference: dict[str, Any] = {}
    max_tokens = options.max_tokens if options.max_tokens is not None else (model.max_tokens if claude else None)
    additional: dict[str, Any] = dict(compat.additional_fields)
    thinking = claude and model.reasoning and options.reasoning not in (None, "off")
    if thinking and options.reasoning is not None:
        budget = thinking_budget(options.reasoning, options.thinking_budgets)
        cap = model.max_tokens or 0
        wanted = (max_tokens or 0) + budget
        max_tokens = min(wanted, cap) if cap else wanted
        budget = max(1024, min(budget, max_tokens - MIN_ANSWER_TOKENS))
        additional["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if transcript.tools and compat.interleaved_thinking:
            additional["anthropic_beta"] = [INTERLEAVED_THINKING_BETA]
    if max_tokens:
        inference["maxTokens"] = max_tokens
    if options.temperature is not None and not thinking:
        inference["temperature"] = options.temperature
    if inference:
        payload["inferenceConfig"] = inference
    if additional:
        payload["additionalModelRequestFields"] = additional
    if compat.guardrail is not None:
        unknown = sorted(set(compat.guardrail) - _GUARDRAIL_KEYS)
        if unknown or not {"guardrailIdentifier", "guardrailVersion"} <= set(compat.guardrail):
            raise CompatError(
                "compat.guardrail needs guardrailIdentifier and guardrailVersion "
                f"(and may have trace, streamProcessingMode){f'; unknown: {unknown}' if unknown else ''}"
            )
        payload["guardrailConfig"] = dict(compat.guardrail)
    # The id is checked first (empty or a dot segment is refused: it would move the signed request to
    # /converse-stream or /model/converse-stream); then the endpoint, whose region is checked too.
    path = bedrock_model_path(model.id)
    url = f"{bedrock_runtime_url(model)}/model/{path}/converse-stream"
    return WireRequest(url=url, payload=payload)
