"""The Codex backend's errors, as data: OpenAI's Responses table plus what a ChatGPT plan adds.

Codex answers most failures as the Responses api does (``{"error": {"type", "code", "message"}}``,
the ``error`` event, ``response.failed``), and adds:

- plan limits: a 429 whose error ``type`` or ``code`` is ``usage_limit_reached`` (the plan's window is
  used up) with ``plan_type`` and when it resets — ``resets_in_seconds``, or ``resets_at`` in epoch
  seconds — read into ``retry_after_s`` (a ``retry-after`` header still wins); ``rate_limit``. A
  ``usage_not_included`` error (the plan does not include Codex) is ``auth`` and never retried;
- request rules as ``{"detail": "Unsupported parameter: temperature"}`` bodies (the message is the
  ``detail``);
- 401 and 403 are ``auth`` whatever the body says (an expired or revoked login: the kit then asks the
  login to renew itself, and says how to log in again).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from normalize import ErrorInfo, ErrorKind
from streamfns.kit import ErrorTable, StreamFailure, VendorError, error_object_body, obj, str_or_none, text
from streamfns.openai_responses.errors import ERRORS as RESPONSES_ERRORS
from streamfns.openai_responses.errors import extract_error

__all__ = ["ERRORS", "error_body", "extract_codex_error", "reset_delay"]

_KINDS: dict[str, ErrorKind] = {
    **RESPONSES_ERRORS.kinds,
    "usage_limit_reached": "rate_limit",
    # The plan does not include Codex: only another plan helps ("auth": the caller's account).
    "usage_not_included": "auth",
    "token_expired": "auth",
    "token_invalidated": "auth",
    "refresh_token_expired": "auth",
}

#: Never retried, whatever the status: the plan itself says no.
_FINAL = frozenset({*RESPONSES_ERRORS.final, "usage_not_included"})

#: No plan-limit window lasts longer than this (a year): a larger value is nonsense, not a wait.
_MAX_RESET_S = 366 * 24 * 3600.0


def _seconds(value: object) -> float | None:
    """A finite, non-negative number of seconds from a JSON number or numeric string (None otherwise)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def reset_delay(fields: dict[str, Any], *, now: float | None = None) -> float | None:
    """Seconds until a plan limit resets, from an error's ``resets_in_seconds`` or ``resets_at``
    (epoch seconds; measured from ``now``, the local clock when None); None when neither is a
    usable number. Never negative, never more than a year."""
    delay = _seconds(fields.get("resets_in_seconds"))
    if delay is None:
        at = _seconds(fields.get("resets_at"))
        if at is not None:
            delay = at - (time.time() if now is None else now)
    if delay is None:
        return None
    return min(max(0.0, delay), _MAX_RESET_S)


def extract_codex_error(body: Any) -> VendorError | None:
    """Read a Codex error from an HTTP body, an ``error`` event or a failed response's ``error``:
    OpenAI's shapes (:func:`streamfns.openai_responses.errors.extract_error`) with the reset time of a
    plan limit as ``retry_after_s`` (from the error object, or the body's top level), and the
    ``{"detail": "..."}`` shape of a refused request. None when no shape is there."""
    fields = obj(body)
    found = extract_error(body)
    if found is None:
        detail = fields.get("detail")
        if isinstance(detail, str) and detail.strip():
            return VendorError(message=detail.strip())
        return None
    error = obj(fields.get("error")) or fields
    delay = reset_delay(error)
    if delay is None and error is not fields:
        delay = reset_delay(fields)
    message = found.message
    plan = str_or_none(error.get("plan_type"))
    if found.code == "usage_limit_reached" or found.type == "usage_limit_reached":
        said = message or "the ChatGPT plan's usage limit was reached"
        message = f"{said} ({plan} plan)" if plan and plan.lower() not in said.lower() else said
    code = found.code
    if code is None:
        # Codex sometimes names the limit only in the type: keep it as the code the caller sees.
        code = str_or_none(error.get("type"))
    return VendorError(
        type=found.type,
        message=text(message).strip(),
        code=code,
        retry_after_s=delay if delay is not None else found.retry_after_s,
    )


class _CodexErrorTable(ErrorTable):
    """The table, with 401 and 403 always ``auth`` (see the module docstring)."""

    __slots__ = ()

    def from_body(self, status: int, headers: Mapping[str, str], body: bytes) -> StreamFailure:
        failure = super().from_body(status, headers, body)
        if status in (401, 403) and failure.info.kind != "auth":
            # A login the backend refused, whatever type its body gives (invalid_request_error, or an
            # HTML page from the edge): only a new token helps.
            info = ErrorInfo.of("auth", status=status, code=failure.info.code, retry_after_s=failure.info.retry_after_s)
            return StreamFailure(info, failure.message)
        return failure


ERRORS = _CodexErrorTable(
    vendor="OpenAI Codex",
    kinds=_KINDS,
    extract=extract_codex_error,
    overflow=RESPONSES_ERRORS.overflow,
    final=_FINAL,
    statuses={401: "auth", 403: "auth"},
)

#: The error response for a status, in the common shape Codex shares with OpenAI.
error_body = error_object_body
