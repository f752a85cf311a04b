"""Context → Gemini / Vertex ``streamGenerateContent`` request (URL, headers, JSON payload).

Pure but for one documented read of the environment: a Vertex model without a project or location in
its compat flags takes them from ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``
(:func:`streamfns.google.compat.vertex_placement`). The kit adds the key, ``model.headers`` and
``options.headers`` and applies ``StreamOptions.on_payload``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import quote

from normalize import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    StreamOptions,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolResultMessage,
    UserMessage,
    sanitize_surrogates,
    system_update_text,
    transcript_for,
)
from streamfns.google.compat import GEMINI_API_BASE_URL, GoogleCompat, is_vertex, vertex_placement
from streamfns.kit import CompatError, WireRequest, parse_compat, vertex_root
from streamfns.kit.hosts import path_segment

__all__ = [
    "DEFAULT_THINKING_BUDGETS",
    "SEE_ATTACHED_IMAGE",
    "SKIP_THOUGHT_SIGNATURE",
    "TOOL_RESULT_IMAGE",
    "build_request",
    "google_tool_call_id",
    "is_valid_signature",
    "request_url",
]

#: Text sent as a tool result's output when it has images but no text.
SEE_ATTACHED_IMAGE: Final = "(see attached image)"
#: Text before a tool result's images for models that take them as separate parts (Gemini 2.x).
TOOL_RESULT_IMAGE: Final = "Tool result image:"
#: The thought signature Google documents for function calls it did not sign (history from another
#: model): the Gemini API then skips its signature check for that call.
SKIP_THOUGHT_SIGNATURE: Final = "skip_thought_signature_validator"

#: Thinking budgets (tokens) by model-id prefix, longest prefix first; ``off`` is the lowest the
#: model accepts (Gemini 2.5 Pro cannot stop thinking). Unknown budget models think dynamically (-1).
DEFAULT_THINKING_BUDGETS: Final[dict[str, dict[str, int]]] = {
    "gemini-2.5-flash-lite": {"off": 0, "minimal": 512, "low": 2048, "medium": 8192, "high": 24576},
    "gemini-2.5-flash": {"off": 0, "minimal": 128, "low": 2048, "medium": 8192, "high": 24576},
    "gemini-2.5-pro": {"off": 128, "minimal": 128, "low": 2048, "medium": 8192, "high": 32768},
}
_DYNAMIC_BUDGET: Final = -1

# Thinking levels of level-based models; "off" is the lowest level (they cannot stop thinking),
# sent without includeThoughts so nothing is shown.
_PRO_LEVELS: Final = {"off": "LOW", "minimal": "LOW", "low": "LOW", "medium": "HIGH", "high": "HIGH"}
_FLASH_LEVELS: Final = {"off": "MINIMAL", "minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH"}
_GEMMA_LEVELS: Final = {"off": "MINIMAL", "minimal": "MINIMAL", "low": "MINIMAL", "medium": "HIGH", "high": "HIGH"}

_GENERATION = re.compile(r"gemini-(\d+)(?:\.\d+)?(?:-|$)")
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_ID_LENGTH = 64


def google_tool_call_id(tool_call_id: str) -> str:
    """Map a foreign tool-call id to one Gemini and Vertex accept: ``[a-zA-Z0-9_-]``, at most 64
    characters (deterministic, the identity on ids that conform)."""
    return _BAD_ID_CHARS.sub("_", tool_call_id)[:_MAX_ID_LENGTH]


def is_valid_signature(signature: str | None) -> bool:
    """Whether ``signature`` is a thought signature Google can take back: non-empty base64."""
    return bool(signature) and len(signature or "") % 4 == 0 and _BASE64.fullmatch(signature or "") is not None


def _short_id(model_id: str) -> str:
    return model_id.rsplit("/", 1)[-1]


def _generation(model_id: str) -> int | None:
    match = _GENERATION.match(_short_id(model_id))
    return int(match.group(1)) if match else None


def _sends_call_ids(model: Model, compat: GoogleCompat) -> bool:
    if compat.call_ids is not None:
        return compat.call_ids
    short = _short_id(model.id)
    return (_generation(model.id) or 0) >= 3 or short.startswith(("claude-", "gpt-oss"))


def _uses_signature_sentinel(model: Model, compat: GoogleCompat) -> bool:
    if compat.thought_signature_sentinel is not None:
        return compat.thought_signature_sentinel
    # Vertex answers the sentinel with 400 "Invalid JSON in request body" (pi #4032).
    return model.provider == "google" and not is_vertex(model, compat) and (_generation(model.id) or 0) >= 3


# ---------------------------------------------------------------------------------------- content


def _inline(image: ImageContent) -> dict[str, Any]:
    return {"inlineData": {"mimeType": image.mime_type, "data": image.data}}


def _user_parts(message: UserMessage) -> list[dict[str, Any]]:
    content = message.content
    if isinstance(content, str):
        return [{"text": content}] if content.strip() else []
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, ImageContent):
            parts.append(_inline(block))
        elif block.text.strip():
            parts.append({"text": block.text})
    return parts


def _signed(part: dict[str, Any], signature: str | None) -> dict[str, Any]:
    if is_valid_signature(signature):
        part["thoughtSignature"] = signature
    return part


def _model_parts(message: AssistantMessage, call_ids: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            # A signed empty part is echoed back: Gemini 3 expects its signature where it was.
            if block.text.strip() or is_valid_signature(block.text_signature):
                parts.append(_signed({"text": block.text}, block.text_signature))
        elif isinstance(block, ThinkingContent):
            # Gemini has no redacted thinking; only another vendor's could be, and it never gets here.
            if block.redacted or not (block.thinking.strip() or is_valid_signature(block.thinking_signature)):
                continue
            parts.append(_signed({"thought": True, "text": block.thinking}, block.thinking_signature))
        else:
            # A copy, so that a caller editing the payload (on_payload) cannot reach into the transcript.
            call: dict[str, Any] = {"name": block.name, "args": copy.deepcopy(block.arguments)}
            if call_ids:
                call["id"] = block.id
            parts.append(_signed({"functionCall": call}, block.thought_signature))
    return parts


def _function_response(
    result: ToolResultMessage, call_ids: bool, nested_images: bool, trailing_images: list[dict[str, Any]]
) -> dict[str, Any]:
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    images = [_inline(block) for block in result.content if isinstance(block, ImageContent)]
    output = "\n".join(texts)
    if not output.strip() and images:
        output = SEE_ATTACHED_IMAGE
    response: dict[str, Any] = {
        "name": result.tool_name,
        "response": {"error" if result.is_error else "output": output},
    }
    if call_ids:
        response["id"] = result.tool_call_id
    if images:
        if nested_images:
            response["parts"] = images
        else:
            trailing_images.extend([{"text": TOOL_RESULT_IMAGE}, *images])
    return {"functionResponse": response}


def _convert_messages(messages: Sequence[Message], call_ids: bool, nested_images: bool) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    responses: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    updates: list[str] = []

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["parts"].extend(parts)  # consecutive turns of one role merge
        else:
            turns.append({"role": role, "parts": parts})

    def flush() -> None:
        # One user turn per batch of results (their images after them), then pending system updates.
        add("user", [*responses, *images])
        responses.clear()
        images.clear()
        for text in updates:
            add("user", [{"text": f"<system_update>{text}</system_update>"}])
        updates.clear()

    for message in messages:
        if isinstance(message, SystemMessage):
            text = system_update_text(message)
            if text:
                updates.append(text)
        elif isinstance(message, ToolResultMessage):
            responses.append(_function_response(message, call_ids, nested_images, images))
        elif isinstance(message, UserMessage):
            flush()
            add("user", _user_parts(message))
        else:
            flush()
            add("model", _model_parts(message, call_ids))
    flush()
    return turns


def _sign_unsigned_calls(turns: list[dict[str, Any]]) -> None:
    """Give the first function call of every model turn without a signed one the sentinel signature.

    Gemini 3 rejects a model turn of the current tool loop whose first function call is unsigned
    ("Function call is missing a thought_signature"); only the first call of a parallel batch carries
    one, so a turn with any signed call is left as it is. Unsigned calls come from other models (a
    handoff, whose signatures never cross models) or from history stored without them.
    """
    for turn in turns:
        if turn["role"] != "model":
            continue
        calls = [part for part in turn["parts"] if "functionCall" in part]
        if calls and not any("thoughtSignature" in part for part in calls):
            calls[0]["thoughtSignature"] = SKIP_THOUGHT_SIGNATURE


def _tool_declaration(tool: Tool) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": tool.name}
    if tool.description:
        declaration["description"] = sanitize_surrogates(tool.description)
    declaration["parametersJsonSchema"] = copy.deepcopy(tool.parameters)  # not shared with the caller's Tool
    return declaration


# ----------------------------------------------------------------------------------------- thinking


def _uses_levels(model: Model, compat: GoogleCompat) -> bool:
    if compat.thinking is not None:
        return compat.thinking == "level"
    return (_generation(model.id) or 0) >= 3 or _short_id(model.id).startswith("gemma-4")


def _default_levels(model: Model) -> dict[str, str]:
    short = _short_id(model.id)
    if short.startswith("gemma-"):
        return _GEMMA_LEVELS
    return _PRO_LEVELS if "-pro" in short else _FLASH_LEVELS


def _level_key(level: ThinkingLevel) -> str:
    return "high" if level in ("xhigh", "max") else level


def _thinking_config(model: Model, compat: GoogleCompat, options: StreamOptions) -> dict[str, Any] | None:
    """The ``thinkingConfig`` for ``options.reasoning`` (None: send none). ``model.thinking_level_map``
    overrides a level's vendor value; a level mapped to None leaves it to the model's default."""
    if not model.reasoning:
        return None
    level: ThinkingLevel = options.reasoning or "off"
    overrides = model.thinking_level_map or {}
    on = level != "off"
    if level in overrides and overrides[level] is None:
        return {"includeThoughts": True} if on else None
    config: dict[str, Any] = {}
    if _uses_levels(model, compat):
        named = overrides.get(level) or _default_levels(model)[_level_key(level)]
        config["thinkingLevel"] = named.upper()
    else:
        key = _level_key(level)
        short = _short_id(model.id)
        table = next((v for k, v in DEFAULT_THINKING_BUDGETS.items() if short.startswith(k)), None)
        budgets = options.thinking_budgets or {}
        if on and (level in budgets or key in budgets):
            budget = budgets.get(level, budgets.get(key, _DYNAMIC_BUDGET))
        elif table is not None:
            budget = table[key]
        else:
            budget = _DYNAMIC_BUDGET if on else 0
        config["thinkingBudget"] = budget
    if on:
        config["includeThoughts"] = True
    return config


# ---------------------------------------------------------------------------------------------- URL


def request_url(model: Model, compat: GoogleCompat) -> str:
    """The ``streamGenerateContent?alt=sse`` URL of ``model`` on its endpoint (see :mod:`.compat`).

    ``model.base_url`` (with its version: ``https://generativelanguage.googleapis.com/v1beta``,
    ``https://us-central1-aiplatform.googleapis.com/v1``) replaces the endpoint's default root. Raises
    :class:`~streamfns.kit.CompatError` when a Vertex project or location is missing or malformed, and
    when a Gemini API model name has an empty or dot segment (``models/..`` would move the request and
    its key to another resource). A Vertex id is one segment with the method after it
    (``{id}:streamGenerateContent``): ``..`` there is no dot segment.
    """
    method = ":streamGenerateContent?alt=sse"
    base = model.base_url.rstrip("/")
    if not is_vertex(model, compat):
        # "tunedModels/x" names its own collection; a bare id is one of "models".
        segments = model.id.split("/") if "/" in model.id else ["models", model.id]
        try:
            path = "/".join(path_segment(segment, what="a model name segment") for segment in segments)
        except CompatError:
            # A dot segment would move the request (and the key) to another resource: refused (config).
            raise CompatError(
                f"the model id {model.id!r} is not a model name: an empty or dot segment would move the request"
            ) from None
        return f"{base or GEMINI_API_BASE_URL}/{path}{method}"
    name = quote(model.id, safe="@")
    if compat.express:
        return f"{base or 'https://aiplatform.googleapis.com/v1'}/publishers/google/models/{name}{method}"
    place = vertex_placement(compat)
    root = base or vertex_root(place.location)
    return (
        f"{root}/projects/{quote(place.project, safe=':')}/locations/{place.location}"
        f"/publishers/google/models/{name}{method}"
    )


def build_request(model: Model, context: Context, options: StreamOptions | None = None) -> WireRequest:
    """Render ``context`` as a streaming Gemini / Vertex request for ``model``.

    Promises: the transcript goes through :func:`normalize.normalize_context` and
    :func:`normalize.transform_messages` (foreign tool-call ids via :func:`google_tool_call_id`), so a
    transcript from any model is accepted; thought signatures therefore come back only to the model
    that made them, and only when they are valid base64. On the Gemini API, Gemini 3 and later get
    :data:`SKIP_THOUGHT_SIGNATURE` on the first function call of each model turn that has no signed
    one (``GoogleCompat.thought_signature_sentinel``), so a conversation handed over mid tool loop is
    accepted. Leading system messages become
    ``systemInstruction``; later ones become ``<system_update>`` user text (their tool changes apply
    to ``tools``). Turns alternate ``user``/``model`` (consecutive turns of one role merge); a batch of
    tool results is one user turn of ``functionResponse`` parts (``{"output"}`` or ``{"error"}``),
    whose images are nested in the response on Gemini 3 and follow it as parts on earlier models.
    Tool-call ids are sent where the model needs them (``GoogleCompat.call_ids``). Tools are
    ``functionDeclarations`` with ``parametersJsonSchema``. ``generationConfig`` holds
    ``temperature``, ``maxOutputTokens`` (when ``options.max_tokens`` is set) and, for reasoning
    models, ``thinkingConfig``: ``thinkingLevel`` (Gemini 3) or ``thinkingBudget`` (Gemini 2.5) with
    ``includeThoughts``; ``off`` asks for the least thinking the model allows, with thoughts hidden.
    ``Model.compat`` is read as :class:`~streamfns.google.compat.GoogleCompat` (an unknown flag, or a
    Vertex model without project and location, raises :class:`~streamfns.kit.CompatError`).
    """
    opts = options if options is not None else StreamOptions()
    compat = parse_compat(GoogleCompat, model.compat)
    url = request_url(model, compat)
    split = transcript_for(model, context, normalize_tool_call_id=google_tool_call_id)
    prompt, tools = split.prompt, split.tools
    nested_images = (_generation(model.id) or 0) >= 3

    contents = _convert_messages(split.turns, _sends_call_ids(model, compat), nested_images)
    if _uses_signature_sentinel(model, compat):
        _sign_unsigned_calls(contents)
    payload: dict[str, Any] = {"contents": contents}
    if prompt.strip():
        payload["systemInstruction"] = {"parts": [{"text": prompt}]}
    generation: dict[str, Any] = {}
    if opts.temperature is not None:
        generation["temperature"] = opts.temperature
    if opts.max_tokens is not None:
        generation["maxOutputTokens"] = opts.max_tokens
    thinking = _thinking_config(model, compat, opts)
    if thinking is not None:
        generation["thinkingConfig"] = thinking
    if generation:
        payload["generationConfig"] = generation
    if tools:
        payload["tools"] = [{"functionDeclarations": [_tool_declaration(tool) for tool in tools]}]
        if compat.stream_function_call_arguments:
            payload["toolConfig"] = {"functionCallingConfig": {"streamFunctionCallArguments": True}}
    headers = {"accept": "text/event-stream", "content-type": "application/json"}
    return WireRequest(url=url, payload=payload, headers=headers)
