"""Claude on Vertex AI's errors: Vertex's ``google.rpc.Status`` bodies and Anthropic's own, one table.

The Vertex front end answers what it decides (a bad token, a quota, an unknown model) as Google does
(``{"error": {"code", "message", "status": "RESOURCE_EXHAUSTED"}}``); the model answers as
Anthropic does (``{"type": "error", "error": {"type": "overloaded_error", "message"}}``), in an HTTP
error body or as an ``event: error`` mid-stream. Both carry ``error.type`` or ``error.status``, which
:func:`streamfns.google.errors.google_error` reads; the kinds are the union of both vendors' tables.
"""

from __future__ import annotations

from normalize import ErrorKind
from streamfns.anthropic.errors import ERRORS as ANTHROPIC_ERRORS
from streamfns.anthropic.errors import stream_error
from streamfns.google.errors import ERRORS as GOOGLE_ERRORS
from streamfns.google.errors import error_body, google_error
from streamfns.kit import ErrorTable

__all__ = ["ERRORS", "VENDOR", "error_body", "stream_error"]

VENDOR = "Anthropic on Vertex AI"

_KINDS: dict[str, ErrorKind] = {**GOOGLE_ERRORS.kinds, **ANTHROPIC_ERRORS.kinds}

ERRORS = ErrorTable(
    vendor=VENDOR,
    kinds=_KINDS,
    extract=google_error,
    overflow=(*ANTHROPIC_ERRORS.overflow, *GOOGLE_ERRORS.overflow),
)
