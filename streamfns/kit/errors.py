"""Vendor errors → :class:`StreamFailure`: one parser for every api's error bodies and error events.

An api describes its errors as data in an :class:`ErrorTable`: an ``extract`` function that reads
the vendor's fields out of a parsed body into a :class:`VendorError` (:func:`error_object`, the
default, reads the common ``{"error": {"type", "message", "code"}}`` shape; a vendor with another
shape — ``{"detail": ...}``, extra metadata — brings its own), a table from the vendor's error type or code to an
:data:`~normalize.ErrorKind`, and the phrases that mean "the prompt is too long". The parser does
the rest the same way for every api: JSON, text or HTML bodies, a short excerpt when the body says
nothing usable, the status as the fallback kind, the requested retry delay (``retry-after-ms``,
``retry-after``, or a hint the vendor wrote in the body) and retryability.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import jiter

from normalize import ERROR_KINDS, ErrorInfo, ErrorKind, error_kind_for_status
from normalize.wire import ErrorSample
from streamfns.kit.failure import StreamFailure
from streamfns.kit.keys import MAX_ERROR_TEXT
from streamfns.kit.payload import array, obj, str_or_none, text

__all__ = [
    "RETRYABLE_STATUSES",
    "ErrorTable",
    "VendorError",
    "error_object",
    "error_object_body",
    "parse_retry_after",
    "retry_hint",
    "status_retryable",
]

#: Statuses that may succeed when repeated (as do all 5xx); ``x-should-retry`` overrides.
RETRYABLE_STATUSES = frozenset({408, 409, 429, 529})
_EXCERPT = 300
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(rb"<[^>]*>")
# "Please try again in 1.2s" / "in 350ms" (OpenAI), "Please retry in 34.4s" (Gemini), "retryDelay": "34s".
_HINT = re.compile(r"(?:try again|retry) in (\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class VendorError:
    """What a vendor said about a failure: its error ``type``, human ``message``, ``code`` and a
    requested ``retry_after_s`` (from the body; headers are read by the parser)."""

    type: str | None = None
    message: str = ""
    code: str | None = None
    retry_after_s: float | None = None


def error_object(body: object) -> VendorError | None:
    """Read the common error shape: ``{"error": {"type" (or "status"), "message", "code"}}``, also with
    ``error`` a plain string. None when the body has no ``error`` member. (A body that is a JSON array
    reaches the extractor as its first element: :meth:`ErrorTable.from_body` unwraps it.)"""
    error = obj(body).get("error")
    if isinstance(error, str):
        return VendorError(message=error.strip())
    fields = obj(error)
    if not fields:
        return None
    code = fields.get("code")
    return VendorError(
        type=str_or_none(fields.get("type")) or str_or_none(fields.get("status")) or None,
        message=text(fields.get("message")).strip(),
        code=str(code) if isinstance(code, str | int) and not isinstance(code, bool) and code != "" else None,
    )


#: The error (type, code) the common shape carries with each status (``server_error`` for the others).
_COMMON_TYPES: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def error_object_body(status: int, message: str) -> ErrorSample:
    """The error response for ``status`` in the common shape :func:`error_object` reads:
    ``{"error": {"message", "type", "param", "code"}}``, typed as OpenAI types it (every compatible
    server answers this way) — what an api of that shape declares as its ``error_body``."""
    error_type, code = _COMMON_TYPES.get(status, ("server_error", None))
    value = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    return ErrorSample(json.dumps(value, indent=2).encode("utf-8") + b"\n")


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The server's requested delay in seconds, from ``retry-after-ms`` or ``retry-after``
    (seconds or an HTTP date); None when neither is usable."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return _finite(float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return _finite(float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _finite(seconds: float) -> float | None:
    return max(0.0, seconds) if math.isfinite(seconds) else None


def retry_hint(text: str) -> float | None:
    """A delay the vendor wrote into its message ("Please try again in 1.2s"), in seconds."""
    match = _HINT.search(text, 0, MAX_ERROR_TEXT)  # a hint past what a message keeps is not read
    if match is None:
        return None
    value = float(match.group(1))
    return value / 1000 if match.group(2).lower() == "ms" else value


def status_retryable(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a status may succeed on retry; the vendor's ``x-should-retry`` header decides first."""
    should = headers.get("x-should-retry")
    if should in ("true", "false"):
        return should == "true"
    return status in RETRYABLE_STATUSES or status >= 500


def _excerpt(body: bytes) -> str:
    """A one-line excerpt of a body that was not a usable error object (an HTML page's title)."""
    title = _TITLE.search(body[:4096])
    raw = title.group(1) if title else _TAGS.sub(b" ", body[:_EXCERPT]) if body.lstrip()[:1] == b"<" else body
    return " ".join(raw[:_EXCERPT].decode("utf-8", "replace").split())


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorTable:
    """How an api's errors read (see the module docstring).

    ``extract`` gets the parsed JSON body (any JSON value) and returns the vendor's fields, or None
    when the body is not in the vendor's shape. ``kinds`` maps a vendor error code or type to a kind
    (the code is looked up first: it is the more specific of the two — OpenAI answers a bad key with
    type ``invalid_request_error`` and code ``invalid_api_key``). ``overflow`` holds lower-case
    phrases that, in a message whose kind would otherwise be ``invalid_request`` (or unknown), mean
    the context window was exceeded. ``final`` holds vendor codes or types that no repeat can fix
    whatever the status says (an exhausted quota or billing answered with 429): such a failure is
    never retryable. ``type_headers`` names response headers that carry the vendor's error type when
    the body does not (AWS sends ``x-amzn-ErrorType: ThrottlingException:http://…``; the value is read
    up to its first colon).

    ``statuses`` maps an HTTP status to the kind it means for this vendor when the body names no code
    or type in ``kinds``: it is consulted after ``kinds`` and before the generic rule
    (:func:`normalize.error_kind_for_status`), for a vendor that documents a status of its own (Cohere
    answers a cancelled request with 499) or gives a common one another meaning (a 503 that means
    overloaded). The kind it gives sets the default retryability as any kind does (a retryable status
    stays retryable). Checked when declared: a status outside 100-599 or a kind that does not exist
    raises ``ValueError``.
    """

    vendor: str
    kinds: Mapping[str, ErrorKind]
    extract: Callable[[Any], VendorError | None] = error_object
    overflow: tuple[str, ...] = ()
    final: frozenset[str] = frozenset()
    type_headers: tuple[str, ...] = ()
    statuses: Mapping[int, ErrorKind] = field(default_factory=dict[int, ErrorKind])

    def __post_init__(self) -> None:
        bad = {
            status: kind
            for status, kind in self.statuses.items()
            if type(status) is not int or not 100 <= status <= 599 or kind not in ERROR_KINDS
        }
        if bad:
            raise ValueError(f"{self.vendor} error table maps statuses it cannot: {bad!r}")

    def _header_type(self, headers: Mapping[str, str]) -> str | None:
        for name in self.type_headers:
            value = headers.get(name)
            if value:
                typed = value.partition(":")[0].strip()
                if typed:
                    return typed
        return None

    def _is_final(self, error: VendorError) -> bool:
        return bool(self.final) and (error.code in self.final or error.type in self.final)

    def kind_for(self, error: VendorError, status: int | None = None) -> ErrorKind | None:
        """The kind for ``error``: from its code, its type, else the status (``statuses`` first, then
        the generic rule); an ``invalid_request`` (or unknown) kind whose message has an overflow phrase
        is ``context_overflow``."""
        kind = self.kinds.get(error.code or "") or self.kinds.get(error.type or "")
        if kind is None and status is not None:
            kind = self.statuses.get(status) or error_kind_for_status(status)
        if kind in (None, "invalid_request") and self.overflow:
            # The words a message keeps (MAX_ERROR_TEXT) decide: a hostile megabyte-long one costs no more.
            lowered = error.message[:MAX_ERROR_TEXT].lower()
            if any(phrase in lowered for phrase in self.overflow):
                return "context_overflow"
        return kind

    def from_body(self, status: int, headers: Mapping[str, str], body: bytes) -> StreamFailure:
        """The failure for a non-2xx response: kind, status, code, retryability and requested delay."""
        error: VendorError | None = None
        try:
            parsed: Any = jiter.from_json(body) if body.strip() else None
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            # Some vendors (Gemini) wrap the error object in a JSON array: extractors see the object.
            parsed = next(iter(array(cast("object", parsed))), None)
        if parsed is not None:
            error = self.extract(parsed)
        if error is None or not error.message.strip():
            error = VendorError(
                type=error.type if error else None,
                message=_excerpt(body) or "(empty body)",
                code=error.code if error else None,
                retry_after_s=error.retry_after_s if error else None,
            )
        if error.type is None:
            typed = self._header_type(headers)
            if typed is not None:
                error = VendorError(typed, error.message, error.code, error.retry_after_s)
        kind = self.kind_for(error, status) or error_kind_for_status(status)
        label = f"{status} {error.type}" if error.type else str(status)
        message = f"{self.vendor} API error {label}: {error.message.strip()}"
        if 300 <= status < 400:
            kind = "config"
            location = headers.get("location")
            message += f" (redirected to {location}; set the model's base_url to the final address)" if location else ""
        retry_after = parse_retry_after(headers)
        if retry_after is None:
            retry_after = error.retry_after_s if error.retry_after_s is not None else retry_hint(error.message)
        info = ErrorInfo.of(kind, status=status, code=error.code or error.type, retry_after_s=retry_after)
        if kind != "config":
            info.retryable = (
                status_retryable(status, headers)
                if "x-should-retry" in headers
                else info.retryable or status_retryable(status, headers)
            )
        if self._is_final(error):
            info.retryable = False
        return StreamFailure(info, message)

    def from_event(self, error: VendorError | object) -> StreamFailure:
        """The failure for an error the vendor sent inside a 200 stream: ``error`` is a
        :class:`VendorError`, the event's parsed body (read with ``extract``), or a string — the
        vendor's error given as plain text, which is then the message. The kind is ``server`` when
        nothing tells it. The message names the vendor's error type or code in parentheses when there
        is one, ``(unknown)`` only when the vendor said nothing at all. (Whether output had started is
        set when the stream ends.)"""
        if isinstance(error, str):
            error = VendorError(message=error)
        elif not isinstance(error, VendorError):
            error = self.extract(error) or VendorError()
        kind = self.kind_for(error) or "server"
        text = error.message.strip() or "no message"
        retry_after = error.retry_after_s if error.retry_after_s is not None else retry_hint(text)
        info = ErrorInfo.of(kind, code=error.code or error.type, retry_after_s=retry_after)
        if self._is_final(error):
            info.retryable = False
        # A vendor that sends only a message (`{"error": "Overloaded"}`) has no type to show: "(unknown)"
        # would read as if something were missing from what it said.
        label = error.type or error.code or (None if error.message.strip() else "unknown")
        return StreamFailure(info, f"{self.vendor} stream error{f' ({label})' if label else ''}: {text}")
