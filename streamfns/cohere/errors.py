"""Cohere's error bodies, as data: ``{"id", "message"}`` (with ``error_type`` on some), and its statuses.

Cohere answers a failed ``/v2/chat`` with a flat object — ``{"id": "…", "message": "…"}``, and
``"error_type": "TOO_MANY_TOKENS"`` when the input is over the model's limit — and types the failure by
its HTTP status (the documented 400, 401, 402, 404, 422, 429, 498, 499, 500, 501, 503, 504). The kit's
:class:`~streamfns.kit.ErrorTable` reads the body; this module says what Cohere's statuses mean where
they differ from the generic rule (:attr:`~streamfns.kit.ErrorTable.statuses`):

- 402 (the account's billing limit is reached) and 498 (an invalid token) are ``auth``: no repeat of
  the request fixes them;
- 499 (Cohere: "the request was cancelled") is ``network``, retryable. A request *this* client
  cancels never reads a response (the kit ends it ``aborted`` itself), so a 499 that arrives was
  cancelled by something between us and the model — a proxy, a gateway, Cohere's own streaming
  layer — which Cohere documents as worth trying again. ``aborted`` would tell an agent loop the user
  stopped it, which nobody did;
- 503 (service unavailable) is ``overloaded``.

400 is ``invalid_request``, ``context_overflow`` when it says the input is over the limit ("too many
tokens: size limit exceeded by …", "the total number of tokens in the prompt cannot exceed …");
a ``max_tokens`` over the model's output cap ("too many tokens: max tokens must be …") stays
``invalid_request``. The other statuses keep the generic kinds (401 auth, 404 not found, 429 rate
limit, 500 server, 504 timeout).
"""

from __future__ import annotations

import json
from typing import Any, Final

from normalize import ErrorKind
from streamfns.kit import ErrorSample, ErrorTable, VendorError, error_object, obj, str_or_none, text

__all__ = ["ERRORS", "OVERFLOW_PHRASES", "STATUSES", "VENDOR", "error_body", "extract", "stream_error"]

VENDOR: Final = "Cohere"

#: Cohere's statuses whose kind differs from the generic rule (see the module docstring).
STATUSES: Final[dict[int, ErrorKind]] = {402: "auth", 498: "auth", 499: "network", 503: "overloaded"}

#: Lower-case wording of an input over the model's limit.
OVERFLOW_PHRASES: Final = (
    "size limit exceeded",
    "number of tokens in the prompt cannot exceed",
    "prompt is too long",
)


def extract(body: Any) -> VendorError | None:
    """Cohere's flat ``{"message", "error_type"}`` object (the common nested ``{"error": …}`` shape a
    proxy may answer with is read too); None when the body is in neither shape."""
    data = obj(body)
    message = text(data.get("message")).strip()
    error_type = str_or_none(data.get("error_type")) or None
    if message or error_type:
        return VendorError(type=error_type, message=message)
    return error_object(body)


ERRORS: Final = ErrorTable(
    vendor=VENDOR,
    # Only the input limit has a type of its own; everything else is typed by its status.
    kinds={"TOO_MANY_TOKENS": "invalid_request"},
    extract=extract,
    overflow=OVERFLOW_PHRASES,
    statuses=STATUSES,
)


def error_body(status: int, message: str) -> ErrorSample:
    """The body Cohere answers an error with (for the conformance harness and the cassette tools)."""
    value = {"id": "00000000-0000-4000-8000-000000000000", "message": message}
    return ErrorSample(json.dumps(value).encode(), "application/json")


def stream_error(message: str) -> bytes:
    """How a running Cohere generation fails inside a 200 stream: a ``message-end`` whose
    ``finish_reason`` is ``ERROR`` with the error's words in ``delta.error`` (the v2 stream has no error
    event of its own)."""
    value = {"type": "message-end", "delta": {"finish_reason": "ERROR", "error": message}}
    return b"event: message-end\ndata: " + json.dumps(value, separators=(",", ":")).encode() + b"\n\n"
