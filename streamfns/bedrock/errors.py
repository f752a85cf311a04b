"""Bedrock's errors: HTTP error responses and the exception messages of a running stream.

An HTTP error carries its type in the ``x-amzn-ErrorType`` header (``ThrottlingException:http://…``,
read up to the colon) and ``{"message": "..."}`` (``Message`` from some front ends) in the body. A
running ConverseStream fails with an event-stream message of ``:message-type`` ``exception`` whose
``:exception-type`` names it (``throttlingException``, ``modelStreamErrorException`` …) and whose
payload is ``{"message": "..."}``; an ``error`` message carries ``:error-code`` and ``:error-message``.

Kinds: throttling and quota → ``rate_limit`` (retried only before any output: the kit never repeats a
request whose answer has started); service unavailable and a model not ready → ``overloaded``; model
timeouts → ``timeout``; access, signature and token problems → ``auth``; an unknown model → ``not_found``;
validation → ``invalid_request``, or ``context_overflow`` when the message says the input is too long;
internal and model stream errors → ``server``.
"""

from __future__ import annotations

import json
from typing import Any, Final

from streamfns.kit import ErrorSample, ErrorTable, EventStreamMessage, StreamFailure, VendorError, encode_message, obj

__all__ = ["ERRORS", "VENDOR", "error_body", "exception_failure", "extract", "stream_error"]

VENDOR: Final = "Amazon Bedrock"

_KINDS: Final = {
    # HTTP errors (x-amzn-ErrorType) and stream exceptions (:exception-type) alike.
    "ThrottlingException": "rate_limit",
    "throttlingException": "rate_limit",
    "ServiceQuotaExceededException": "rate_limit",
    "serviceQuotaExceededException": "rate_limit",
    "TooManyRequestsException": "rate_limit",
    "ServiceUnavailableException": "overloaded",
    "serviceUnavailableException": "overloaded",
    "ModelNotReadyException": "overloaded",
    "modelNotReadyException": "overloaded",
    "ModelTimeoutException": "timeout",
    "modelTimeoutException": "timeout",
    "InternalServerException": "server",
    "internalServerException": "server",
    "ModelStreamErrorException": "server",
    "modelStreamErrorException": "server",
    "ModelErrorException": "server",
    "modelErrorException": "server",
    "ValidationException": "invalid_request",
    "validationException": "invalid_request",
    "AccessDeniedException": "auth",
    "UnrecognizedClientException": "auth",
    "InvalidSignatureException": "auth",
    "ExpiredTokenException": "auth",
    "IncompleteSignatureException": "auth",
    "MissingAuthenticationTokenException": "auth",
    "ResourceNotFoundException": "not_found",
}

# Phrases Bedrock and the models behind it use for a prompt over the context window (lower case).
_OVERFLOW: Final = (
    "input is too long",
    "too many input tokens",
    "input tokens exceeded",
    "exceeds maximum length",
    "exceeds the maximum",
    "prompt is too long",
    "context length",
    "context window",
    "too many total text bytes",
    "model_context_window_exceeded",
)


def extract(body: Any) -> VendorError | None:
    """``{"message": "..."}`` (or ``Message``), typed by a ``__type`` member when the body has one; None
    for any other shape (the header then types it)."""
    fields = obj(body)
    message = fields.get("message", fields.get("Message"))
    if not isinstance(message, str):
        return None
    typed = fields.get("__type")
    return VendorError(type=typed.rpartition("#")[2] if isinstance(typed, str) and typed else None, message=message)


ERRORS: Final = ErrorTable(
    vendor=VENDOR,
    kinds=_KINDS,  # pyright: ignore[reportArgumentType] - every value is an ErrorKind
    extract=extract,
    overflow=_OVERFLOW,
    type_headers=("x-amzn-errortype",),
)


def exception_failure(message: EventStreamMessage) -> StreamFailure:
    """The failure an ``exception`` or ``error`` message of a 200 stream ends it with."""
    said = ""
    if message.payload:
        try:
            fields = obj(json.loads(message.payload))
        except (ValueError, UnicodeDecodeError):
            fields = {}
        value = fields.get("message", fields.get("Message"))
        said = value if isinstance(value, str) else ""
        original = fields.get("originalMessage")
        if isinstance(original, str) and original and original not in said:
            said = f"{said} ({original})" if said else original
        if not said:
            said = message.payload[:300].decode("utf-8", "replace")
    said = said or message.error_message or ""
    name = message.exception_type or message.error_code or f"an {message.message_type} message without a type"
    return ERRORS.from_event(VendorError(type=name, message=said))


_HTTP_TYPES: Final = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    502: "InternalServerException",
    503: "ServiceUnavailableException",
    529: "ServiceUnavailableException",
}


def error_body(status: int, message: str) -> ErrorSample:
    """Bedrock's HTTP error for ``status``: the message in the body, the type in ``x-amzn-ErrorType``
    (for the conformance harness and the cassette tools)."""
    typed = _HTTP_TYPES.get(status, "InternalServerException")
    header = ("x-amzn-errortype", f"{typed}:http://internal.amazon.com/coral/com.amazon.bedrock/")
    return ErrorSample(json.dumps({"message": message}).encode(), "application/json", headers=(header,))


def stream_error(message: str) -> bytes:
    """An exception message as Bedrock sends one mid-stream (a throttling exception)."""
    headers = {
        ":exception-type": "throttlingException",
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, json.dumps({"message": message}).encode())
