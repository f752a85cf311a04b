"""Context → Codex backend request: the Responses request, shaped by the rules a ChatGPT plan's backend
enforces. Pure: no I/O, no environment.

The Codex backend (``https://chatgpt.com/backend-api/codex``) takes the Responses protocol, but
refuses what the metered api accepts and wants what it makes optional; its 400s say so
(``{"detail": "Unsupported parameter: max_output_tokens"}``, ``"Instructions are required"``,
``"Store must be set to false"``). The builder renders the request as
:func:`streamfns.openai_responses.request.build_request` does (the transcript, tools, reasoning items
and their encrypted content, the effort from the model's ``thinking_level_map``) and then:

- the system prompt becomes ``instructions`` rather than the first input message (later system
  messages stay in ``input``, as developer messages); a context without one sends
  :data:`DEFAULT_INSTRUCTIONS`, since the field is required;
- ``store`` is false and ``stream`` true, always;
- ``include`` asks for ``reasoning.encrypted_content`` whenever the model reasons (set by the
  Responses builder), so reasoning can be replayed without server storage;
- only the fields the backend takes are sent (:data:`SENT_FIELDS`): ``max_output_tokens``,
  ``temperature``, ``top_p`` and ``prompt_cache_retention`` are dropped (``options.max_tokens`` and
  ``options.temperature`` cannot be honoured on a plan); ``StreamOptions.on_payload`` still sees, and
  may change, the result;
- headers: ``accept: text/event-stream``, ``OpenAI-Beta: responses=experimental``, ``originator``
  (:data:`ORIGINATOR`) and ``session_id`` (``options.session_id``, capped as a prompt-cache key)
  when there is one. The login's headers (``Authorization``, ``chatgpt-account-id``) are the
  signer's, added per attempt.
"""

from __future__ import annotations

from typing import Any, Final

from normalize import Context, Model, StreamOptions
from streamfns.kit import WireRequest, obj, prompt_cache_key
from streamfns.openai_responses.request import build_request as build_responses_request

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_INSTRUCTIONS", "ORIGINATOR", "SENT_FIELDS", "build_request"]

DEFAULT_BASE_URL: Final = "https://chatgpt.com/backend-api/codex"
#: Sent as ``instructions`` when the context has no system prompt (the backend requires the field).
DEFAULT_INSTRUCTIONS: Final = "You are a helpful assistant."
#: Who is calling, as the backend's ``originator`` header names its clients (a public header:
#: ``normalize.wire.tags.PUBLIC_HEADERS``, so its value is no secret to blank from messages).
ORIGINATOR: Final = "streamfns"
#: The request fields the Codex backend takes; any other the Responses builder made is dropped.
SENT_FIELDS: Final = frozenset(
    {
        "model",
        "instructions",
        "input",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "text",
        "include",
        "prompt_cache_key",
        "store",
        "stream",
    }
)
_SYSTEM_ROLES: Final = frozenset({"system", "developer"})


def _take_instructions(items: list[Any]) -> str:
    """Remove the system prompt the Responses builder put first in ``input`` and return it ("" when
    there is none). Only the first item can be it: every item before the first turn is the prompt,
    and the builder makes it one ``{"role", "content"}`` message of text."""
    first = obj(items[0]) if items else {}
    content = first.get("content")
    if first.keys() == {"role", "content"} and first.get("role") in _SYSTEM_ROLES and isinstance(content, str):
        del items[0]
        return content
    return ""


def build_request(model: Model, context: Context, options: StreamOptions | None = None) -> WireRequest:
    """Render ``context`` as a streaming Codex backend request for ``model`` (see the module
    docstring for the rules). ``model.base_url`` (default :data:`DEFAULT_BASE_URL`) gets ``/responses``.
    Raises what the Responses builder raises (a ``Model.compat`` mistake is a
    :class:`~streamfns.kit.CompatError`)."""
    opts = options if options is not None else StreamOptions()
    rendered = build_responses_request(model, context, opts)
    payload = rendered.payload
    items = payload.get("input")
    instructions = _take_instructions(items) if isinstance(items, list) else ""  # pyright: ignore[reportUnknownArgumentType]
    sent: dict[str, Any] = {name: value for name, value in payload.items() if name in SENT_FIELDS}
    sent["instructions"] = instructions if instructions.strip() else DEFAULT_INSTRUCTIONS
    sent["store"] = False
    sent["stream"] = True
    headers = {
        "accept": "text/event-stream",
        "content-type": "application/json",
        "openai-beta": "responses=experimental",
        "originator": ORIGINATOR,
    }
    if opts.session_id:
        headers["session_id"] = prompt_cache_key(opts.session_id)
    base_url = (model.base_url or DEFAULT_BASE_URL).rstrip("/")
    return WireRequest(url=f"{base_url}/responses", payload=sent, headers=headers)
