"""The error taxonomy, as data.

Nothing in this toolkit raises for a failed request: an adapter ends its stream with an ``error``
event whose message carries an :class:`ErrorInfo`. Retry and overflow decisions read ``ErrorInfo``,
never regexes over ``error_message``. The kinds, grouped by who is at fault::

    caller      auth · invalid_request · not_found · context_overflow · config
    vendor      rate_limit · overloaded · server · content_filter · refusal
    transport   network · timeout · truncated · protocol
    user        aborted
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from normalize._jsonmodel import JsonModel

__all__ = ["ERROR_KINDS", "RETRYABLE_KINDS", "ErrorInfo", "ErrorKind", "error_kind_for_status"]

ErrorKind = Literal[
    "auth",
    "rate_limit",
    "overloaded",
    "context_overflow",
    "invalid_request",
    "not_found",
    "content_filter",
    "refusal",
    "server",
    "network",
    "timeout",
    "protocol",
    "truncated",
    "aborted",
    "config",
]
#: Every error kind, for checking a value that came from outside (JSON, another adapter).
ERROR_KINDS: frozenset[str] = frozenset(get_args(ErrorKind))

#: Kinds for which repeating the same request may succeed.
RETRYABLE_KINDS: frozenset[ErrorKind] = frozenset(
    {"rate_limit", "overloaded", "server", "network", "timeout", "truncated"}
)


@dataclass(slots=True, kw_only=True)
class ErrorInfo(JsonModel):
    """Structured facts about a failure.

    ``retryable`` says whether the same request may succeed if repeated; ``output_started`` says
    whether content events had been emitted (a caller retrying after output must discard it).
    ``retry_after_s`` is the vendor's requested delay when it sent one. ``code`` is the vendor's error
    code or type: vendor text, so on a message a stream ended with it is cut and redacted of the
    call's credentials like the error message (``streamfns.kit.redact_message``).
    """

    kind: ErrorKind
    retryable: bool = False
    status: int | None = None
    code: str | None = None
    retry_after_s: float | None = None
    output_started: bool = False

    @classmethod
    def of(
        cls,
        kind: ErrorKind,
        *,
        status: int | None = None,
        code: str | None = None,
        retry_after_s: float | None = None,
        output_started: bool = False,
    ) -> ErrorInfo:
        """Build an ``ErrorInfo`` whose ``retryable`` follows the kind's default."""
        return cls(
            kind=kind,
            retryable=kind in RETRYABLE_KINDS,
            status=status,
            code=code,
            retry_after_s=retry_after_s,
            output_started=output_started,
        )


def error_kind_for_status(status: int) -> ErrorKind:
    """The default error kind for an HTTP status (vendors refine it with their error type)."""
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status == 413:
        return "context_overflow"
    if status == 429:
        return "rate_limit"
    if status == 529:
        return "overloaded"
    if status in (408, 504):
        return "timeout"
    if status >= 500:
        return "server"
    return "invalid_request"
