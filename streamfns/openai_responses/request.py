"""Context → OpenAI Responses request (URL, headers, JSON payload). Pure: no I/O, no environment.

The kit adds the API key, ``model.headers`` and ``options.headers`` and applies
``StreamOptions.on_payload``; everything else about the request is decided here.

The request is stateless (``store: false``): the whole transcript goes in ``input`` every time, and
reasoning the same model produced earlier goes back as the reasoning items it streamed (their
``encrypted_content`` is what lets the model pick its reasoning up again without server storage).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from normalize import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    SplitTranscript,
    StreamOptions,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    is_same_model,
    sanitize_surrogates,
    system_update_text,
    transcript_for,
)
from streamfns.kit import CompatError, WireRequest, obj, parse_compat, prompt_cache_key
from streamfns.kit.functions import NO_TOOL_OUTPUT

__all__ = [
    "AZURE_BASE_URL_PLACEHOLDER",
    "CUSTOM_TOOL_CALL",
    "DEFAULT_BASE_URL",
    "MIN_OUTPUT_TOKENS",
    "NO_TOOL_OUTPUT",
    "OpenAIResponsesCompat",
    "TextSignature",
    "build_request",
    "read_text_signature",
    "responses_tool_call_id",
    "split_tool_call_id",
    "text_signature",
]

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
#: The catalog's Azure base URL; ``<resource>`` is the user's Azure OpenAI resource name.
AZURE_BASE_URL_PLACEHOLDER: Final = "https://<resource>.openai.azure.com/openai/v1"
#: OpenAI rejects ``max_output_tokens`` below 16.
MIN_OUTPUT_TOKENS: Final = 16
#: Sent for a tool result with no content: an empty ``output`` is rejected.


_LEVELS: Final[tuple[ThinkingLevel, ...]] = ("minimal", "low", "medium", "high", "xhigh", "max")
#: Effort per level where the model's ``thinking_level_map`` says nothing; xhigh and max exist only
#: where the map names them.
_DEFAULT_EFFORT: Final[dict[str, str]] = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high"}
_BAD_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_ID = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenAIResponsesCompat:
    """Per-model flags (``Model.compat``) for OpenAI, Azure and Responses-compatible servers.

    ``supports_developer_role``: reasoning models take the system prompt as a ``developer`` message
    (others, and servers without that role, get ``system``). ``supports_temperature``: the model
    accepts ``temperature`` (OpenAI's reasoning models refuse it while they reason).
    ``encrypted_reasoning``: ask for ``reasoning.encrypted_content`` when reasoning, so the reasoning
    can be replayed statelessly. ``reasoning_summary``: the summary style requested while reasoning
    (None: ask for none). ``supports_prompt_cache_key`` / ``supports_long_cache_retention``: send
    ``prompt_cache_key`` (from ``session_id``) / ``prompt_cache_retention: "24h"`` (for ``long``).
    """

    supports_developer_role: bool = True
    supports_temperature: bool = True
    encrypted_reasoning: bool = True
    reasoning_summary: Literal["auto", "concise", "detailed"] | None = "auto"
    supports_prompt_cache_key: bool = True
    supports_long_cache_retention: bool = True


# ------------------------------------------------------------------------------------- tool-call ids


def _digest(value: str, length: int = 24) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def _id_part(value: str) -> str:
    clean = _BAD_ID_CHARS.sub("_", value)
    if len(clean) > _MAX_ID:
        clean = f"{clean[: _MAX_ID - 17]}_{_digest(value, 16)}"
    return clean.rstrip("_")


#: The ``thought_signature`` of a tool call decoded from a ``custom_tool_call`` item (a grammar
#: tool): the same model gets it back as one, with its raw input.
CUSTOM_TOOL_CALL: Final = '{"type":"custom_tool_call"}'


def split_tool_call_id(tool_call_id: str) -> tuple[str, str | None]:
    """``"<call_id>|<item_id>"`` → ``(call_id, item_id)``; an id without ``|`` has no item id."""
    call_id, sep, item_id = tool_call_id.partition("|")
    return call_id, (item_id or None) if sep else None


def responses_tool_call_id(tool_call_id: str) -> str:
    """Map a tool-call id from another model to one the Responses API accepts.

    Each part of ``"<call_id>|<item_id>"`` becomes ``[A-Za-z0-9_-]``, at most 64 characters, with no
    trailing ``_``; the item part always reads ``fc_<digest>`` (another model's item ids mean nothing
    here). Deterministic, and the identity on a conforming call id without an item part.
    """
    call_id, item_id = split_tool_call_id(tool_call_id)
    call = _id_part(call_id) or f"call_{_digest(tool_call_id)}"
    if item_id is None:
        return call
    return f"{call}|fc_{_digest(item_id)}"


# ----------------------------------------------------------------------------------- text signatures


@dataclass(frozen=True, slots=True)
class TextSignature:
    """The message item a text block came from: its ``id`` and ``phase`` (``commentary``/``final_answer``)."""

    id: str
    phase: str | None = None


def text_signature(item_id: str, phase: str | None) -> str:
    """The ``text_signature`` kept on a text block: ``{"v":1,"id":…,"phase"?:…}`` (pi's form)."""
    value: dict[str, Any] = {"v": 1, "id": item_id}
    if phase:
        value["phase"] = phase
    return json.dumps(value, separators=(",", ":"))


def read_text_signature(signature: str | None) -> TextSignature | None:
    """Read a text signature: the JSON form, or a legacy bare item id; None when there is none."""
    if not signature:
        return None
    if signature.startswith("{"):
        try:
            value = obj(json.loads(signature))
        except ValueError:
            return None
        item_id = value.get("id")
        phase = value.get("phase")
        if not isinstance(item_id, str) or not item_id:
            return None
        return TextSignature(item_id, phase if isinstance(phase, str) and phase else None)
    return TextSignature(signature)


# ------------------------------------------------------------------------------------------- input


def _data_url(image: ImageContent) -> str:
    return f"data:{image.mime_type};base64,{image.data}"


def _user_item(message: UserMessage) -> dict[str, Any] | None:
    content = message.content
    parts: list[dict[str, Any]] = []
    if isinstance(content, str):
        if content.strip():
            parts.append({"type": "input_text", "text": content})
    else:
        for block in content:
            if isinstance(block, TextContent):
                if block.text.strip():
                    parts.append({"type": "input_text", "text": block.text})
            else:
                parts.append({"type": "input_image", "detail": "auto", "image_url": _data_url(block)})
    return {"role": "user", "content": parts} if parts else None


def _reasoning_item(block: ThinkingContent) -> dict[str, Any] | None:
    """The reasoning item a thinking block carries, when it can be sent back statelessly."""
    try:
        item = obj(json.loads(block.thinking_signature or ""))
    except ValueError:
        return None
    encrypted = item.get("encrypted_content")
    # Without encrypted content a stored-nowhere reasoning item is "not found" (store: false).
    if item.get("type") != "reasoning" or not isinstance(encrypted, str) or not encrypted:
        return None
    return copy.deepcopy(item)


def _message_item(block: TextContent, same_model: bool) -> dict[str, Any]:
    signature = read_text_signature(block.text_signature) if same_model else None
    if signature is None or not signature.id.startswith("msg_") or len(signature.id) > _MAX_ID:
        return {"role": "assistant", "content": block.text}
    item: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "id": signature.id,
        "status": "completed",
        "content": [{"type": "output_text", "text": block.text, "annotations": []}],
    }
    if signature.phase:
        item["phase"] = signature.phase
    return item


def _function_call_item(call: ToolCall, same_model: bool) -> dict[str, Any]:
    call_id, item_id = split_tool_call_id(call.id)
    item: dict[str, Any] = {
        "type": "function_call",
        "call_id": call_id,
        "name": call.name,
        "arguments": json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":")),
    }
    # Another model's item id would be checked against reasoning items it does not pair with.
    if same_model and item_id is not None and item_id.startswith("fc_"):
        item["id"] = item_id
    return item


def _custom_input(call: ToolCall) -> str | None:
    """The raw input of a grammar tool's call (decoded from a ``custom_tool_call`` item, marked with
    :data:`CUSTOM_TOOL_CALL`, arguments ``{"input": text}``); None for a function call."""
    value = call.arguments.get("input")
    if call.thought_signature != CUSTOM_TOOL_CALL or len(call.arguments) != 1 or not isinstance(value, str):
        return None
    return value


def _custom_call_item(call: ToolCall, raw_input: str, keep_id: bool) -> dict[str, Any]:
    call_id, item_id = split_tool_call_id(call.id)
    item: dict[str, Any] = {"type": "custom_tool_call", "call_id": call_id, "name": call.name, "input": raw_input}
    if keep_id and item_id is not None:
        item["id"] = item_id
    return item


def _produces_output(block: object) -> bool:
    return isinstance(block, ToolCall) or (isinstance(block, TextContent) and bool(block.text.strip()))


def _assistant_items(message: AssistantMessage, model: Model) -> list[dict[str, Any]]:
    blocks = message.content
    # transform_messages already turned another model's reasoning into text. The same model's
    # reasoning goes back as its items; a reasoning item must be followed by the output it led to,
    # or the API rejects the whole request.
    leading = [
        isinstance(block, ThinkingContent) and any(_produces_output(later) for later in blocks[i + 1 :])
        for i, block in enumerate(blocks)
    ]
    reasoning = [
        _reasoning_item(block) if lead and isinstance(block, ThinkingContent) else None
        for lead, block in zip(leading, blocks, strict=True)
    ]
    same = is_same_model(message, model)
    # Output items name the reasoning they follow: when a reasoning item cannot go back (no
    # encrypted content), the items after it go without their ids, or the API rejects them.
    keep_ids = same and all(item is not None for item, lead in zip(reasoning, leading, strict=True) if lead)
    items: list[dict[str, Any]] = []
    for item, block in zip(reasoning, blocks, strict=True):
        if isinstance(block, ThinkingContent):
            if same and item is not None:
                items.append(item)
        elif isinstance(block, TextContent):
            if block.text.strip():
                items.append(_message_item(block, keep_ids))
        elif same and (raw_input := _custom_input(block)) is not None:
            items.append(_custom_call_item(block, raw_input, keep_ids))  # a grammar tool goes back as one
        else:
            items.append(_function_call_item(block, keep_ids))
    return items


def _tool_output(result: ToolResultMessage) -> str | list[dict[str, Any]]:
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    images = [block for block in result.content if isinstance(block, ImageContent)]
    if not images:
        joined = "\n".join(texts)
        return joined if joined.strip() else NO_TOOL_OUTPUT
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": text} for text in texts if text.strip()]
    parts.extend({"type": "input_image", "detail": "auto", "image_url": _data_url(image)} for image in images)
    return parts


def _input_items(split: SplitTranscript, model: Model, system_role: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    custom_calls: set[str] = set()  # a grammar tool's result is a custom_tool_call_output
    if split.prompt.strip():
        items.append({"role": system_role, "content": split.prompt})
    for message in split.turns:
        if isinstance(message, SystemMessage):
            # The Responses API takes system/developer messages anywhere in the input.
            text = system_update_text(message)
            if text:
                items.append({"role": system_role, "content": text})
        elif isinstance(message, UserMessage):
            item = _user_item(message)
            if item is not None:
                items.append(item)
        elif isinstance(message, ToolResultMessage):
            call_id, _ = split_tool_call_id(message.tool_call_id)
            kind = "custom_tool_call_output" if call_id in custom_calls else "function_call_output"
            items.append({"type": kind, "call_id": call_id, "output": _tool_output(message)})
        else:
            produced = _assistant_items(message, model)
            custom_calls.update(item["call_id"] for item in produced if item.get("type") == "custom_tool_call")
            items.extend(produced)
    return items


def _tool_definition(tool: Tool) -> dict[str, Any]:
    definition: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description:
        definition["description"] = sanitize_surrogates(tool.description)
    # A copy: a caller editing the payload (on_payload) must not reach into the Tool.
    definition["parameters"] = copy.deepcopy(tool.parameters)
    # The Responses API defaults to strict schemas, which arbitrary JSON Schemas do not satisfy.
    definition["strict"] = False
    return definition


# ---------------------------------------------------------------------------------------- options


def _effort(level: ThinkingLevel, level_map: dict[str, str | None]) -> str | None:
    """The model's effort for ``level``; an unsupported level moves to the nearest supported one,
    upwards first. None when the model supports no level at all."""
    start = _LEVELS.index(level) if level in _LEVELS else _LEVELS.index("high")
    order = [*_LEVELS[start:], *reversed(_LEVELS[:start])]
    for candidate in order:
        if candidate in level_map:
            mapped = level_map[candidate]
            if mapped:
                return mapped
            continue
        if candidate in _DEFAULT_EFFORT:
            return _DEFAULT_EFFORT[candidate]
    return None


def _apply_reasoning(
    payload: dict[str, Any], model: Model, compat: OpenAIResponsesCompat, level: ThinkingLevel | None
) -> bool:
    """Set ``reasoning`` (and ``include``); return whether the model will reason.

    Whenever it will — also at the lowest effort a model that cannot stop reasoning is held to —
    the encrypted reasoning is asked for: without it the reasoning cannot be sent back, and the
    tool calls it led to could not be sent back with their item ids either.
    """
    if not model.reasoning:
        return False
    level_map = model.thinking_level_map or {}
    reasoning: dict[str, Any] = {}
    if level is None or level == "off":
        off = level_map.get("off", "none") if "off" in level_map else "none"
        if off is not None:
            reasoning["effort"] = off  # None: it cannot be turned off, the model's default applies
        if off == "none":
            payload["reasoning"] = reasoning
            return False
    else:
        effort = _effort(level, level_map)
        if effort is not None:
            reasoning["effort"] = effort
        if compat.reasoning_summary is not None:
            reasoning["summary"] = compat.reasoning_summary
    if reasoning:
        payload["reasoning"] = reasoning
    if compat.encrypted_reasoning:
        payload["include"] = ["reasoning.encrypted_content"]
    return True


def _base_url(model: Model) -> str:
    """The base URL; for Azure, a bare resource URL (``https://NAME.openai.azure.com``) gets the
    ``/openai/v1`` path of Azure's OpenAI-compatible v1 api, as Azure's own examples write it."""
    base_url = (model.base_url or DEFAULT_BASE_URL).rstrip("/")
    if "<resource>" in base_url:
        raise CompatError(
            f"model {model.provider}/{model.id} still has the placeholder base URL {base_url!r}: set "
            "model.base_url to your Azure OpenAI resource, https://YOUR-RESOURCE.openai.azure.com/openai/v1"
        )
    if model.provider.lower().startswith("azure"):
        parsed = urlsplit(base_url)
        if parsed.scheme and parsed.netloc and not parsed.path:
            return f"{base_url}/openai/v1"
        if parsed.path == "/openai":
            return f"{base_url}/v1"
    return base_url


def build_request(model: Model, context: Context, options: StreamOptions | None = None) -> WireRequest:
    """Render ``context`` as a streaming, stateless Responses request for ``model``.

    Promises: the transcript goes through :func:`normalize.transform_messages` (another model's tool-call ids via
    :func:`responses_tool_call_id`), so a transcript from any model is accepted. The system prompt opens ``input``
    as a ``developer`` message (reasoning models) or a ``system`` one; later system messages stay where they are.
    User text and images become ``input_text`` and ``input_image`` parts; the same model's earlier text goes back as
    its message items (id and phase), its reasoning as the reasoning items it streamed — only when they carry
    ``encrypted_content`` and are followed by output —, its tool calls with their ``fc_`` item ids; another model's
    turns go back as plain assistant text and bare ``call_id`` function calls. Tool results are
    ``function_call_output`` items (``(no tool output)`` when empty, text and images as parts); the same model's
    grammar-tool calls go back as ``custom_tool_call`` items with their raw input, and their results as
    ``custom_tool_call_output``. ``store`` is false and ``stream`` true; ``max_output_tokens`` (at least 16) only
    when ``options.max_tokens`` is set; ``options.reasoning`` becomes ``reasoning: {effort, summary}`` with
    ``include: ["reasoning.encrypted_content"]``, and no reasoning becomes the model's "off" effort; ``temperature``
    only while the model is not reasoning; ``session_id`` becomes ``prompt_cache_key``. Tools are function tools
    with ``strict: false``. ``Model.compat`` is read as :class:`OpenAIResponsesCompat`; an Azure model still on the
    placeholder base URL is a :class:`~streamfns.kit.CompatError`.
    """
    opts = options if options is not None else StreamOptions()
    compat = parse_compat(OpenAIResponsesCompat, model.compat)
    base_url = _base_url(model)
    split = transcript_for(model, context, normalize_tool_call_id=responses_tool_call_id)
    system_role = "developer" if model.reasoning and compat.supports_developer_role else "system"
    payload: dict[str, Any] = {
        "model": model.id,
        "input": _input_items(split, model, system_role),
        "stream": True,
        "store": False,
    }
    tools = split.tools
    if tools:
        payload["tools"] = [_tool_definition(tool) for tool in tools]
    if opts.max_tokens is not None:
        payload["max_output_tokens"] = max(opts.max_tokens, MIN_OUTPUT_TOKENS)
    reasoning = _apply_reasoning(payload, model, compat, opts.reasoning)
    if opts.temperature is not None and compat.supports_temperature and not reasoning:
        payload["temperature"] = opts.temperature
    if opts.session_id and opts.cache_retention != "none" and compat.supports_prompt_cache_key:
        payload["prompt_cache_key"] = prompt_cache_key(opts.session_id)
        if opts.cache_retention == "long" and compat.supports_long_cache_retention:
            payload["prompt_cache_retention"] = "24h"
    headers = {"accept": "text/event-stream", "content-type": "application/json"}
    return WireRequest(url=f"{base_url}/responses", payload=payload, headers=headers)
