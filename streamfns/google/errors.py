"""Google's errors, as data: ``google.rpc.Status`` bodies → kinds.

Gemini and Vertex answer errors with ``{"error": {"code": 429, "message": ..., "status":
"RESOURCE_EXHAUSTED", "details": [...]}}`` — on the Gemini API also wrapped in a JSON array, and the
same object can arrive as an event inside a 200 stream. :func:`google_error` reads it: the canonical
``status`` is the error type; the ``reason`` of a ``google.rpc.ErrorInfo`` detail, when there is one
(``API_KEY_INVALID``, ``RATE_LIMIT_EXCEEDED``), is the code, looked up first because it is the more
specific (a bad key is ``400 INVALID_ARGUMENT`` with reason ``API_KEY_INVALID``: an ``auth`` error);
a ``google.rpc.RetryInfo`` detail's ``retryDelay`` (``"34s"``, ``"0.5s"``) is the requested delay.
``UNKNOWN`` says nothing, so the HTTP status decides (a proxy's 529 is still ``overloaded``).
An ``INVALID_ARGUMENT`` whose message says the input is longer than the model takes is a context
overflow.
"""

from __future__ import annotations

import json
import math
import re

from normalize import ErrorKind
from streamfns.kit import ErrorSample, ErrorTable, VendorError, array, error_object, obj, str_or_none

__all__ = ["ERRORS", "VENDOR", "error_body", "google_error", "parse_duration", "stream_error"]

VENDOR = "Google"

_KINDS: dict[str, ErrorKind] = {
    # canonical google.rpc codes
    "INVALID_ARGUMENT": "invalid_request",
    "FAILED_PRECONDITION": "invalid_request",
    "OUT_OF_RANGE": "invalid_request",
    "UNAUTHENTICATED": "auth",
    "PERMISSION_DENIED": "auth",
    "NOT_FOUND": "not_found",
    "RESOURCE_EXHAUSTED": "rate_limit",
    "UNAVAILABLE": "overloaded",
    "INTERNAL": "server",
    "DATA_LOSS": "server",
    "ABORTED": "server",
    "DEADLINE_EXCEEDED": "timeout",
    # google.rpc.ErrorInfo reasons that say more than their status
    "API_KEY_INVALID": "auth",
    "API_KEY_EXPIRED": "auth",
    "API_KEY_SERVICE_BLOCKED": "auth",
    "ACCESS_TOKEN_EXPIRED": "auth",
    "ACCESS_TOKEN_TYPE_UNSUPPORTED": "auth",
    "CREDENTIALS_MISSING": "auth",
    "SERVICE_DISABLED": "auth",
    "BILLING_DISABLED": "auth",
    "CONSUMER_INVALID": "auth",
    "RATE_LIMIT_EXCEEDED": "rate_limit",
}

#: Lower-case phrases of Google's "the prompt is longer than the model takes" messages.
_OVERFLOW = (
    "exceeds the maximum number of tokens",
    "input token count",
    "exceeds the context window",
    "context length exceeded",
)

_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)s\s*")


def parse_duration(value: object) -> float | None:
    """A ``google.protobuf.Duration`` in its JSON form (``"34s"``, ``"0.250s"``) in seconds, else None."""
    match = _DURATION.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return None
    seconds = float(match.group(1))
    return seconds if math.isfinite(seconds) else None


def google_error(body: object) -> VendorError | None:
    """Read a ``google.rpc.Status`` error body (or array-wrapped, or a stream error event)."""
    base = error_object(body)
    if base is None:
        return None
    reason: str | None = None
    retry_after: float | None = None
    for detail in array(obj(obj(body).get("error")).get("details")):
        fields = obj(detail)
        kind = str_or_none(fields.get("@type")) or ""
        if kind.endswith("google.rpc.ErrorInfo") and reason is None:
            reason = str_or_none(fields.get("reason")) or None
        elif kind.endswith("google.rpc.RetryInfo") and retry_after is None:
            retry_after = parse_duration(fields.get("retryDelay"))
    return VendorError(type=base.type, message=base.message, code=reason or base.code, retry_after_s=retry_after)


ERRORS = ErrorTable(vendor=VENDOR, kinds=_KINDS, extract=google_error, overflow=_OVERFLOW)

#: The ``google.rpc`` status Google sends with each HTTP status (``UNKNOWN`` for the others).
_STATUSES: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def error_body(status: int, message: str) -> ErrorSample:
    """Google's HTTP error response (a ``google.rpc.Status``) for ``status``."""
    value = {"error": {"code": status, "message": message, "status": _STATUSES.get(status, "UNKNOWN")}}
    return ErrorSample(json.dumps(value, indent=2).encode() + b"\n", "application/json; charset=UTF-8")


def stream_error(message: str) -> bytes:
    """The error chunk Gemini sends mid-stream."""
    value = {"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}}
    return b"data: " + json.dumps(value).encode() + b"\r\n\r\n"
