"""Context → Mistral's chat request (``POST {base_url}/chat/completions``, ``stream: true``). Pure.

What the payload holds, and why where Mistral differs from other chat apis:

- The system prompt as a leading ``system`` message. Mistral refuses a ``system`` message after an
  assistant turn ("Unexpected role 'system' after role 'assistant'"), so a mid-conversation system
  message becomes ``<system_update>…</system_update>`` user text, after any tool results in flight.
- User text and images (``image_url`` chunks holding a data URL); a text-only model gets the transcript's
  placeholder instead of images (:func:`normalize.transcript_for`).
- Assistant turns: text alone is a string; with thinking, the content is a chunk list in the order the
  blocks came, each thinking block a ``thinking`` chunk holding one text chunk (and its ``signature``
  when it has one) — the shape Mistral streams and takes back. Thinking from another model arrives
  here as text (``transcript_for``). Tool calls carry their arguments as JSON text. A trailing
  assistant turn (the caller asks the model to continue it) is sent with ``prefix: true``, which Mistral
  requires of a last message from the assistant.
- Tool results are ``tool`` messages with the tool's ``name``; their images are ``image_url`` chunks of
  the same message. Mistral's tool messages have no error flag, so a result with ``is_error`` says so in
  its text: it starts with :data:`TOOL_ERROR_PREFIX` (``"[tool error] "``, pi-ai's marker for Mistral).
  Mistral refuses a user turn right after a tool result ("Unexpected role 'user' after role 'tool'"), so
  a short assistant line (:data:`~streamfns.mistral.rules.TOOL_RESULTS_PROCESSED`) goes between them.
- Tool-call ids: Mistral takes exactly nine letters and digits. Foreign ids (another provider's
  ``toolu_…``/``call_…``) go through :func:`~streamfns.mistral.rules.mistral_tool_call_id` in
  ``transcript_for``, which rewrites each result to its call's new id and leaves no two calls one id.
  Then each distinct id of the transcript gets its own nine letters and digits (:func:`_call_ids`): an id
  that already is nine letters and digits keeps itself, any other its ``mistral_tool_call_id`` unless
  that is taken, else a digest of it that is free. So a call and its result always carry the same id,
  two ids never merge into one (``abcd_12345`` and ``abcd-12345``), and the same transcript always maps
  to the same ids.
- Tools as function schemas; ``max_tokens``; ``temperature``; ``session_id`` as ``prompt_cache_key``
  (unless ``cache_retention`` is ``none``); the thinking level and the options of
  :class:`~streamfns.mistral.compat.MistralCompat` (``tool_choice``, ``parallel_tool_calls``,
  ``reasoning_effort``, ``prompt_mode``, ``extra_body`` merged last).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
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
    ToolCall,
    ToolResultMessage,
    UserMessage,
    transcript_for,
)
from streamfns.kit import WireRequest, parse_compat, prompt_cache_key
from streamfns.kit.functions import NO_TOOL_OUTPUT, chat_messages, function_call, function_tool
from streamfns.mistral.compat import MistralCompat
from streamfns.mistral.rules import TOOL_RESULTS_PROCESSED, mistral_tool_call_id

__all__ = ["DEFAULT_BASE_URL", "NO_TOOL_OUTPUT", "TOOL_ERROR_PREFIX", "build_request"]

#: Where the request goes when the model names no ``base_url``.
DEFAULT_BASE_URL: Final = "https://api.mistral.ai/v1"
#: The content of a tool result that holds no text and no image.
#: How a failed tool result's text starts (Mistral's tool messages have no error flag).
TOOL_ERROR_PREFIX: Final = "[tool error] "


def _image(image: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": f"data:{image.mime_type};base64,{image.data}"}


def _user(message: UserMessage) -> dict[str, Any] | None:
    content = message.content
    if isinstance(content, str):
        return {"role": "user", "content": content} if content.strip() else None
    if not any(isinstance(block, ImageContent) for block in content):
        text = "\n".join(block.text for block in content if isinstance(block, TextContent) and block.text.strip())
        return {"role": "user", "content": text} if text else None
    chunks: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, ImageContent):
            chunks.append(_image(block))
        elif block.text.strip():
            chunks.append({"type": "text", "text": block.text})
    return {"role": "user", "content": chunks}


def _thinking_chunk(block: ThinkingContent) -> dict[str, Any]:
    chunk: dict[str, Any] = {"type": "thinking", "thinking": [{"type": "text", "text": block.thinking}]}
    if block.thinking_signature:
        chunk["signature"] = block.thinking_signature
    return chunk


def _assistant(message: AssistantMessage, ids: Mapping[str, str]) -> dict[str, Any] | None:
    chunks: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    thinks = False
    for block in message.content:
        if isinstance(block, TextContent):
            if not block.text.strip():
                continue
            if chunks and chunks[-1]["type"] == "text":
                # Separate blocks stay separate paragraphs: another model's reasoning (turned into text
                # by transcript_for) must not run into the answer's first word.
                chunks[-1] = {"type": "text", "text": f"{chunks[-1]['text']}\n\n{block.text}"}
            else:
                chunks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.redacted or not (block.thinking.strip() or block.thinking_signature):
                continue
            chunks.append(_thinking_chunk(block))
            thinks = True
        else:
            calls.append(function_call(block, ids[block.id]))
    if not chunks and not calls:
        return None
    out: dict[str, Any] = {"role": "assistant"}
    if thinks:
        out["content"] = chunks
    else:
        # Text alone is a plain string, as every Mistral model (and gateway) takes it; "" rather than
        # null beside tool calls, which Mistral refuses.
        out["content"] = chunks[0]["text"] if chunks else ""
    if calls:
        out["tool_calls"] = calls
    return out


def _call_ids(turns: Sequence[Message]) -> dict[str, str]:
    """Each distinct tool-call id of ``turns`` (calls and results) → nine letters and digits of its own.

    Ids that already have Mistral's form keep themselves (they are distinct, so none is taken twice);
    any other gets :func:`mistral_tool_call_id` of it unless an earlier id took that, else the first
    free ``sha256(f"{n}:{id}")[:9]`` for n = 1, 2, …. Walked in the transcript's order: deterministic."""
    seen: dict[str, None] = {}
    for message in turns:
        if isinstance(message, ToolResultMessage):
            seen[message.tool_call_id] = None
        elif isinstance(message, AssistantMessage):
            seen.update((block.id, None) for block in message.content if isinstance(block, ToolCall))
    mapped = {call_id: call_id for call_id in seen if mistral_tool_call_id(call_id) == call_id}
    taken = set(mapped)
    for call_id in seen:
        if call_id in mapped:
            continue
        new_id, n = mistral_tool_call_id(call_id), 0
        while new_id in taken:
            n += 1
            new_id = hashlib.sha256(f"{n}:{call_id}".encode("utf-8", "surrogatepass")).hexdigest()[:9]
        mapped[call_id] = new_id
        taken.add(new_id)
    return mapped


def _tool_result(result: ToolResultMessage, ids: Mapping[str, str]) -> dict[str, Any]:
    texts = [block.text for block in result.content if isinstance(block, TextContent) and block.text.strip()]
    images = [block for block in result.content if isinstance(block, ImageContent)]
    if result.is_error:
        # No error flag on a tool message: its text says it (an image-only result gets the marker alone).
        first = texts[0] if texts else "" if images else NO_TOOL_OUTPUT
        texts = [TOOL_ERROR_PREFIX + first if first else TOOL_ERROR_PREFIX.rstrip(), *texts[1:]]
    content: str | list[dict[str, Any]]
    if images:
        content = [*({"type": "text", "text": text} for text in texts), *map(_image, images)]
    else:
        content = "\n".join(texts) if texts else NO_TOOL_OUTPUT
    return {"role": "tool", "tool_call_id": ids[result.tool_call_id], "name": result.tool_name, "content": content}


def _messages(turns: Sequence[Message]) -> list[dict[str, Any]]:
    ids = _call_ids(turns)
    out = chat_messages(
        turns,
        user=_user,
        assistant=lambda message: _assistant(message, ids),
        tool_result=lambda message: _tool_result(message, ids),
        # A user turn (or a system update written as one) may not follow a tool result directly.
        bridge=TOOL_RESULTS_PROCESSED,
    )
    last = out[-1] if out else None
    if last is not None and last["role"] == "assistant" and "tool_calls" not in last:
        last["prefix"] = True  # Mistral serves a last assistant message only as a prefix to continue
    return out


def _apply_reasoning(payload: dict[str, Any], model: Model, compat: MistralCompat, options: StreamOptions) -> None:
    level = options.reasoning
    if model.reasoning and level is not None:
        if compat.reasoning_style == "effort":
            named = (model.thinking_level_map or {}).get(level)
            payload["reasoning_effort"] = "none" if level == "off" else named or "high"
        elif level != "off":
            payload["prompt_mode"] = "reasoning"
    if compat.reasoning_effort is not None:
        payload["reasoning_effort"] = compat.reasoning_effort
    if compat.prompt_mode is not None:
        payload["prompt_mode"] = compat.prompt_mode


def build_request(model: Model, context: Context, options: StreamOptions | None = None) -> WireRequest:
    """Render ``context`` as a streaming Mistral chat request for ``model`` (see the module docstring).

    ``Model.compat`` is read as :class:`~streamfns.mistral.compat.MistralCompat`; a mistake raises
    :class:`~streamfns.kit.CompatError` (the kit reports it as ``config`` before anything is sent).
    """
    opts = options if options is not None else StreamOptions()
    compat = parse_compat(MistralCompat, model.compat)
    split = transcript_for(model, context, normalize_tool_call_id=mistral_tool_call_id)

    messages: list[dict[str, Any]] = []
    if split.prompt.strip():
        messages.append({"role": "system", "content": split.prompt})
    messages.extend(_messages(split.turns))

    payload: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    if opts.max_tokens:
        payload["max_tokens"] = opts.max_tokens
    if opts.temperature is not None:
        payload["temperature"] = opts.temperature
    if split.tools:
        payload["tools"] = [function_tool(tool) for tool in split.tools]
    if compat.tool_choice is not None:
        payload["tool_choice"] = copy.deepcopy(compat.tool_choice)
    if compat.parallel_tool_calls is not None:
        payload["parallel_tool_calls"] = compat.parallel_tool_calls
    if opts.session_id and opts.cache_retention != "none":
        payload["prompt_cache_key"] = prompt_cache_key(opts.session_id)
    _apply_reasoning(payload, model, compat, opts)
    payload.update(copy.deepcopy(compat.extra_body))
    base = (model.base_url or DEFAULT_BASE_URL).rstrip("/")
    return WireRequest(url=f"{base}/chat/completions", payload=payload, headers={"accept": "text/event-stream"})
