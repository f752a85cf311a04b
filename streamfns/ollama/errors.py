"""Ollama's error bodies: ``{"error": "plain words"}``, in a non-2xx body or as a line of a 200 stream.

Ollama gives no error type or code, only text, so the kind is read from the words: a model that is not
pulled is ``not_found``; a prompt longer than the context is ``context_overflow``; a model that "does
not support tools" (or thinking, or images) is ``invalid_request`` — repeating the request cannot fix
any of them. Text that names none of these keeps the status's kind (``server`` inside a stream).
"""

from __future__ import annotations

import json
from typing import Any

from streamfns.kit import MAX_ERROR_TEXT, ErrorSample, ErrorTable, VendorError, obj

__all__ = ["ERRORS", "VENDOR", "error_body", "extract", "stream_error"]

VENDOR = "Ollama"

# (phrase in the lower-cased message, the type we give it): the first match wins.
_PHRASES = (
    ("not found, try pulling it first", "model_not_found"),
    ("model not found", "model_not_found"),
    ("exceeds the context length", "context_length_exceeded"),
    ("context length exceeded", "context_length_exceeded"),
    ("does not support tools", "unsupported"),
    ("does not support thinking", "unsupported"),
    ("does not support", "unsupported"),
    ("unauthorized", "unauthorized"),
)


def extract(body: Any) -> VendorError | None:
    """Ollama's ``{"error": "..."}`` (or the common nested shape some proxies send), typed by its words;
    None when the body has no ``error`` member."""
    error = obj(body).get("error")
    if isinstance(error, dict):
        nested = obj(error)
        message = nested.get("message")
        error = message if isinstance(message, str) else None
    if not isinstance(error, str):
        return None
    lowered = error[:MAX_ERROR_TEXT].lower()  # the words a message keeps: a megabyte-long error costs no more
    typed = next((name for phrase, name in _PHRASES if phrase in lowered), None)
    return VendorError(type=typed, message=error.strip())


ERRORS = ErrorTable(
    vendor=VENDOR,
    kinds={
        "model_not_found": "not_found",
        "context_length_exceeded": "context_overflow",
        "unsupported": "invalid_request",
        "unauthorized": "auth",
    },
    extract=extract,
    overflow=("context length", "context window", "too long"),
)


def error_body(status: int, message: str) -> ErrorSample:
    """The body Ollama answers an error with (for the conformance harness and the cassette tools)."""
    return ErrorSample(json.dumps({"error": message}).encode(), "application/json; charset=utf-8")


def stream_error(message: str) -> bytes:
    """One in-stream error line, as Ollama writes it when a running generation fails."""
    return json.dumps({"error": message}).encode() + b"\n"
