"""Anthropic's errors, as data: the error type → kind table.

HTTP error bodies and ``event: error`` payloads are both ``{"type": "error", "error": {"type",
"message"}}`` — the shape :func:`streamfns.kit.error_object` reads; the kit's
:class:`~streamfns.kit.ErrorTable` does the parsing, the fallbacks and the retry hints.
"""

from __future__ import annotations

from normalize import ErrorKind
from streamfns.kit import ErrorTable

__all__ = ["ERRORS"]

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
