"""OpenAI's errors (and Azure OpenAI's), as data: error codes and types → kinds.

Three shapes reach this table. HTTP error bodies are ``{"error": {"message", "type", "param",
"code"}}`` (Azure adds ``innererror``); the mid-stream ``error`` event carries the same fields at its
top level (``{"type": "error", "code", "message", "param"}``) or, from some servers, nested under
``error``; a ``response.failed`` event carries ``response.error = {"code", "message"}``. The code is
looked up before the type: OpenAI answers most failures with type ``invalid_request_error`` and says
what happened in the code (``invalid_api_key``, ``model_not_found``, ``context_length_exceeded`` …).
"""

from __future__ import annotations

import json
from typing import Any

from normalize import ErrorKind
from streamfns.kit import ErrorTable, VendorError, error_object, error_object_body, obj, str_or_none, text

__all__ = ["ERRORS", "error_body", "extract_error", "stream_error"]

_KINDS: dict[str, ErrorKind] = {
    # codes
    "invalid_api_key": "auth",
    "invalid_organization": "auth",
    "insufficient_permissions": "auth",
    "unauthorized": "auth",
    # No credit left: a retry cannot help until someone pays; "auth" is the caller's-account kind.
    "insufficient_quota": "auth",
    "billing_hard_limit_reached": "auth",
    "billing_not_active": "auth",
    "rate_limit_exceeded": "rate_limit",
    "model_not_found": "not_found",
    "DeploymentNotFound": "not_found",
    "context_length_exceeded": "context_overflow",
    "model_max_prompt_tokens_exceeded": "context_overflow",  # GitHub Copilot
    "server_is_overloaded": "overloaded",
    "engine_overloaded": "overloaded",
    "service_unavailable": "overloaded",
    "vector_store_timeout": "timeout",
    # Usage-policy flags: OpenAI's invalid_prompt, Azure's content filter.
    "invalid_prompt": "content_filter",
    "content_filter": "content_filter",
    "content_policy_violation": "content_filter",
    "image_content_policy_violation": "content_filter",
    "ResponsibleAIPolicyViolation": "content_filter",
    # types
    "invalid_request_error": "invalid_request",
    "authentication_error": "auth",
    "permission_error": "auth",
    "not_found_error": "not_found",
    "rate_limit_error": "rate_limit",
    "requests": "rate_limit",
    "tokens": "rate_limit",
    "overloaded_error": "overloaded",
    # Deliberately absent: "server_error" (the type of every 5xx body, and the code of a failed
    # response). The status tells a 503 or 529 apart better; mid-stream it falls back to "server".
}

_OVERFLOW = (
    "maximum context length",
    "exceeds the context window",
    "context window of this model",
    "input exceeds the context",
    "prompt token count of",  # GitHub Copilot: "prompt token count of N exceeds the limit of M"
)


def _code(value: object) -> str | None:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def extract_error(body: Any) -> VendorError | None:
    """Read an OpenAI error from an HTTP body, an ``error`` event or a failed response's ``error``.

    ``{"error": {...}}`` (also list-wrapped) is read by :func:`streamfns.kit.error_object`; a bare
    object with a ``message`` or ``code`` — the ``error`` event's own fields, or ``response.error`` —
    is read directly. None when neither shape is there.
    """
    found = error_object(body)
    if found is not None:
        return found
    fields = obj(body)
    if "message" not in fields and "code" not in fields:
        return None
    kind = str_or_none(fields.get("type"))
    return VendorError(
        type=None if kind in (None, "error") else kind,
        message=text(fields.get("message")).strip(),
        code=_code(fields.get("code")),
    )


#: No credit left: a 429 with one of these codes is final, whatever the status says about retrying.
_FINAL = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})

ERRORS = ErrorTable(vendor="OpenAI", kinds=_KINDS, extract=extract_error, overflow=_OVERFLOW, final=_FINAL)

#: OpenAI's HTTP error response for a status: the common shape.
error_body = error_object_body


def stream_error(message: str) -> bytes:
    """The Responses ``error`` event."""
    value = {"type": "error", "code": "server_error", "message": message, "param": None}
    return b"event: error\ndata: " + json.dumps(value).encode() + b"\n\n"
