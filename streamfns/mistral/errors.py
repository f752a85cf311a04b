"""Mistral's errors, as data: the bodies its chat-completions endpoint answers with, and its error types
and codes → kinds.

The shapes (read by :func:`streamfns.openai_completions.errors.extract_error`, which already knows them
all; the kit's :class:`~streamfns.kit.ErrorTable` does the rest: status fallback, retry hints,
``retry-after`` headers, text and HTML bodies):

- the flat error object, in a non-2xx body or as a chunk of a 200 stream:
  ``{"object": "error", "message", "type", "param", "code"}`` (``code`` a numeric string: ``"3230"``);
- a bare ``{"message": "Unauthorized", "request_id"}`` (401), typed by its status;
- FastAPI's validation errors, ``{"detail": [{"loc", "msg", …}, …]}`` (422);
- the nested ``{"error": {…}}`` a gateway in front of Mistral may answer with.

Kinds come from the error ``type`` (the numeric codes are Mistral's own, not HTTP statuses, and are kept
as the error's code): ``invalid_request_*`` and ``invalid_function_call`` are ``invalid_request``,
``invalid_model`` is ``not_found``, ``rate_limited`` is ``rate_limit``,
``service_tier_capacity_exceeded`` is ``overloaded``, ``internal_server_error`` is ``server``. A prompt
longer than the model's window reads as ``context_overflow`` from its wording ("too large for model
with 32768 maximum context length").
"""

from __future__ import annotations

import json
from typing import Final

from normalize import ErrorKind
from streamfns.kit import ErrorSample, ErrorTable
from streamfns.openai_completions.errors import OVERFLOW_PHRASES, extract_error

__all__ = ["ERRORS", "VENDOR", "error_body", "stream_error"]

VENDOR: Final = "Mistral"

_KINDS: Final[dict[str, ErrorKind]] = {
    "invalid_request_error": "invalid_request",
    "invalid_request_message_order": "invalid_request",
    "invalid_request_prompt": "invalid_request",
    "invalid_function_call": "invalid_request",
    "invalid_model": "not_found",
    "model_not_found": "not_found",
    "unauthorized": "auth",
    "rate_limited": "rate_limit",
    "rate_limit_exceeded": "rate_limit",
    "service_tier_capacity_exceeded": "overloaded",
    "service_unavailable": "overloaded",
    "internal_server_error": "server",
    "context_length_exceeded": "context_overflow",
}

#: The type of Mistral's error object for a status, as a live server types it (none: the status says it).
_TYPES: Final[dict[int, str]] = {
    400: "invalid_request_error",
    401: "unauthorized",
    404: "invalid_model",
    422: "invalid_request_error",
    429: "rate_limited",
    500: "internal_server_error",
}

ERRORS = ErrorTable(
    vendor=VENDOR,
    kinds=_KINDS,
    extract=extract_error,
    overflow=(*OVERFLOW_PHRASES, "too large for model with"),
)


def _error_object(status: int | None, message: str) -> dict[str, object]:
    error_type = _TYPES.get(status) if status is not None else "internal_server_error"
    return {"object": "error", "message": message, "type": error_type, "param": None, "code": None}


def error_body(status: int, message: str) -> ErrorSample:
    """The body Mistral answers an HTTP error with (for the conformance harness and the cassette tools):
    the flat error object, typed as Mistral types that status (untyped where the status says enough)."""
    return ErrorSample(json.dumps(_error_object(status, message)).encode("utf-8"))


def stream_error(message: str) -> bytes:
    """One in-stream error chunk, the flat error object as the ``data`` of an event."""
    return b"data: " + json.dumps(_error_object(None, message)).encode("utf-8") + b"\n\n"
