"""Anthropic's errors, as data: the error type → kind table, and what the errors look like.

HTTP error bodies and ``event: error`` payloads are both ``{"type": "error", "error": {"type",
"message"}}`` — the shape :func:`streamfns.kit.error_object` reads; the kit's
:class:`~streamfns.kit.ErrorTable` does the parsing, the fallbacks and the retry hints.
:func:`error_body` and :func:`stream_error` write them, for injected faults.
"""

from __future__ import annotations

import json

from normalize import ErrorKind
from streamfns.kit import ErrorSample, ErrorTable

__all__ = ["ERRORS", "error_body", "stream_error"]

_KINDS: dict[str, ErrorKind] = {
    "invalid_request_error": "invalid_request",
    "authentication_error": "auth",
    "permission_error": "auth",
    "billing_error": "auth",
    "not_found_error": "not_found",
    "request_too_large": "context_overflow",
    "rate_limit_error": "rate_limit",
    "api_error": "server",
    "overloaded_error": "overloaded",
    "timeout_error": "timeout",
}

ERRORS = ErrorTable(vendor="Anthropic", kinds=_KINDS, overflow=("prompt is too long",))

#: The error type Anthropic sends with each status (``api_error`` for the others).
_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _error(kind: str, message: str) -> dict[str, object]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def error_body(status: int, message: str) -> ErrorSample:
    """Anthropic's HTTP error response for ``status``."""
    return ErrorSample(json.dumps(_error(_TYPES.get(status, "api_error"), message), indent=2).encode() + b"\n")


def stream_error(message: str) -> bytes:
    """Anthropic's in-stream error event (an ``overloaded_error``, the usual one)."""
    return b"event: error\ndata: " + json.dumps(_error("overloaded_error", message)).encode() + b"\n\n"
