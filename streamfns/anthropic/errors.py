"""Anthropic HTTP error bodies → :class:`StreamFailure` with the right :class:`ErrorInfo`."""

from __future__ import annotations

from typing import Any, cast

import httpx
import jiter

from normalize import ErrorInfo, error_kind_for_status
from streamfns._http import StreamFailure
from streamfns.anthropic.decode import error_kind_for_type

__all__ = ["parse_error_body"]


def parse_error_body(status: int, headers: httpx.Headers, body: bytes) -> StreamFailure:
    """Read Anthropic's ``{"type": "error", "error": {"type", "message"}}`` (or any other body).

    The kind comes from the vendor's error type when it is known, otherwise from the status; the
    vendor's own message goes into the error message. Non-JSON bodies (a gateway's HTML page) are
    quoted briefly.
    """
    error_type: str | None = None
    text = ""
    try:
        parsed: Any = jiter.from_json(body) if body.strip() else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = cast("dict[str, Any]", parsed).get("error")
        if isinstance(error, dict):
            error = cast("dict[str, Any]", error)
            error_type = str(error.get("type") or "") or None
            text = str(error.get("message") or "").strip()
    if not text:
        text = " ".join(body[:300].decode("utf-8", "replace").split()) or "(empty body)"
    kind = error_kind_for_type(error_type, text) or error_kind_for_status(status)
    label = f"{status} {error_type}" if error_type else str(status)
    return StreamFailure(ErrorInfo.of(kind, status=status, code=error_type), f"Anthropic API error {label}: {text}")
