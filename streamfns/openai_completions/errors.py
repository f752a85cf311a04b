"""Chat Completions errors, as data: the shapes OpenAI and the compatible servers answer with, and
their codes and types → kinds.

Shapes read by :func:`extract_error` (the kit's :class:`~streamfns.kit.ErrorTable` does the rest:
status fallback, retry hints, ``retry-after`` headers, text and HTML bodies):

- OpenAI, Groq, Together, xAI, llama.cpp: ``{"error": {"message", "type", "code", "param"}}``;
  also as a chunk inside a 200 stream, or as the data of an ``event: error`` (Groq);
- OpenRouter: the same with a numeric ``code`` and ``metadata.raw``, the upstream provider's own
  words, appended to the message on a new line; ``metadata.reasons`` / ``flagged_input`` (its
  moderation refusal) reads as type ``moderation``;
- Ollama: ``{"error": "plain words"}``;
- vLLM and Mistral: a flat ``{"object": "error", "message", "type", "code"}``; FastAPI-style
  ``{"detail": "words"}`` or ``{"detail": [{"loc", "msg"}, …]}`` (validation errors).

Numeric codes (OpenRouter, vLLM) are HTTP statuses and read as such. ``context_overflow`` is
recognised from the vendors' codes and their wording ("maximum context length" …).
``insufficient_quota`` is never retried, whatever the status.
"""

from __future__ import annotations

import json
from typing import Any

from normalize import ErrorKind
from streamfns.kit import (
    ErrorTable,
    VendorError,
    array,
    error_object,
    error_object_body,
    obj,
    str_or_none,
    text,
)

__all__ = ["ERRORS", "OVERFLOW_PHRASES", "error_body", "extract_error", "stream_error"]

#: How much of OpenRouter's ``metadata.raw`` is kept in a message.
_RAW_LIMIT = 1000

_KINDS: dict[str, ErrorKind] = {
    # OpenAI types and codes (Together, Groq, xAI, Fireworks and most proxies reuse them).
    "invalid_request_error": "invalid_request",
    "invalid_api_key": "auth",
    "authentication_error": "auth",
    "permission_error": "auth",
    "permission_denied": "auth",
    "insufficient_quota": "auth",
    "billing_not_active": "auth",
    "billing_hard_limit_reached": "auth",
    "model_not_found": "not_found",
    "not_found_error": "not_found",
    "DeploymentNotFound": "not_found",
    "requests": "rate_limit",
    "tokens": "rate_limit",
    "rate_limit_exceeded": "rate_limit",
    "rate_limit_error": "rate_limit",
    # "server_error" and "api_error" are left to the status: a 529 or 503 says more (overloaded) and
    # an error inside a stream defaults to "server" anyway.
    "service_unavailable": "overloaded",
    "overloaded": "overloaded",
    "overloaded_error": "overloaded",
    "engine_overloaded_error": "overloaded",
    "timeout": "timeout",
    "context_length_exceeded": "context_overflow",
    "exceed_context_size_error": "context_overflow",  # llama.cpp
    "model_max_prompt_tokens_exceeded": "context_overflow",  # GitHub Copilot
    "content_filter": "content_filter",  # Azure OpenAI
    "content_policy_violation": "content_filter",
    "moderation": "content_filter",  # OpenRouter's moderation refusal (see extract_error)
    "tool_use_failed": "invalid_request",  # Groq: the model produced a call that fails the schema
    # vLLM exception names.
    "BadRequestError": "invalid_request",
    "NotFoundError": "not_found",
    "InternalServerError": "server",
    # Numeric codes are HTTP statuses (OpenRouter, vLLM, llama.cpp).
    "400": "invalid_request",
    "401": "auth",
    "402": "auth",
    "403": "auth",
    "404": "not_found",
    "408": "timeout",
    "413": "context_overflow",
    "429": "rate_limit",
    "500": "server",
    "502": "server",
    "503": "overloaded",
    "504": "timeout",
    "529": "overloaded",
}

#: Lower-case wording that turns an ``invalid_request`` into ``context_overflow``.
OVERFLOW_PHRASES: tuple[str, ...] = (
    "maximum context length",  # OpenAI, DeepSeek, vLLM, OpenRouter, Mistral
    "context_length_exceeded",
    "context length exceeded",
    "maximum prompt length",  # xAI
    "exceeds the context window",
    "exceeds the available context size",  # llama.cpp
    "exceeded model token limit",  # Moonshot
    "reduce the length of the messages",  # Groq, Cerebras
    "prompt is too long",  # Anthropic models behind a proxy
    "input is too long",
    "prompt token count of",  # GitHub Copilot: "prompt token count of N exceeds the limit of M"
)


def _raw_text(raw: object) -> str:
    if isinstance(raw, str):
        value = raw.strip()
    elif raw is None:
        return ""
    else:
        value = json.dumps(raw, ensure_ascii=False, separators=(",", ":"), default=str)
    return value[:_RAW_LIMIT]


def _detail(detail: object) -> str:
    if isinstance(detail, str):
        return detail.strip()
    parts: list[str] = []
    for item in array(detail)[:5]:
        entry = obj(item)
        where = ".".join(str(part) for part in array(entry.get("loc")))
        message = text(entry.get("msg")).strip()
        if message:
            parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def extract_error(body: Any) -> VendorError | None:
    """Read the error shapes of the module docstring; None when the body is in none of them."""
    common = error_object(body)
    data = obj(body)
    if common is not None:
        fields = obj(data.get("error"))
        metadata = obj(fields.get("metadata"))
        message = common.message
        raw = _raw_text(metadata.get("raw"))
        if raw and raw not in message:
            message = f"{message}\n{raw}" if message else raw
        kind_type = common.type
        if metadata.get("flagged_input") is not None or metadata.get("reasons") is not None:
            kind_type = "moderation"
        return VendorError(type=kind_type, message=message, code=common.code)
    message = _detail(data.get("detail")) or text(data.get("message")).strip()
    if not message:
        return None
    code = data.get("code")
    return VendorError(
        type=str_or_none(data.get("type")) or None,
        message=message,
        code=str(code) if isinstance(code, str | int) and not isinstance(code, bool) and code != "" else None,
    )


ERRORS = ErrorTable(
    vendor="Chat Completions",
    kinds=_KINDS,
    extract=extract_error,
    overflow=OVERFLOW_PHRASES,
    final=frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"}),
)

#: OpenAI's HTTP error response for a status: the common shape.
error_body = error_object_body


def stream_error(message: str) -> bytes:
    """The error chunk an OpenAI-compatible server sends mid-stream."""
    value = {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
    return b"data: " + json.dumps(value).encode() + b"\n\n"
