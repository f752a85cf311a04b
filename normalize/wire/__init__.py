"""Wire framings and wire profiles: the bytes-level layer the adapter kit and the cassettes share.

Framings cut a streaming body into frames — :data:`SSE` (server-sent events), :data:`NDJSON` (JSON
lines) and :data:`AWS_EVENTSTREAM` (binary event-stream messages with CRCs) — incrementally for an
adapter, and losslessly (:meth:`Framing.spans`, :meth:`Framing.rewrite`) for a tool that edits a
recording. A :class:`WireProfile` declares the rest of what such tools need to know about one api's
bytes: how its stream ends, how its payloads nest, what its errors look like, which recordings show
what; :func:`profile_for` finds one by api name. This package imports nothing else of the project.
"""

from typing import Any

from normalize.wire.base import (
    DEFAULT_MAX_FRAME_BYTES,
    Framer,
    FrameSpan,
    FrameTooLarge,
    Framing,
    FramingError,
    FramingKind,
    media_type,
)
from normalize.wire.eventstream import (
    AWS_EVENTSTREAM,
    EventStreamDecoder,
    EventStreamFraming,
    EventStreamMessage,
    HeaderValue,
    decode_message,
    encode_message,
)
from normalize.wire.ndjson import NDJSON, NDJSONDecoder, NDJSONFraming
from normalize.wire.profile import (
    DROP,
    FEATURES,
    Base64Field,
    CheckedEnvelope,
    Drop,
    Edit,
    Ending,
    Envelope,
    EnvelopeError,
    ErrorSample,
    Feature,
    FrameView,
    Strip,
    WireProfile,
    generic_error_body,
    open_checked,
)
from normalize.wire.registry import (
    ENTRY_POINT_GROUP,
    known_profiles,
    profile_for,
    profile_problems,
    register_profile,
)
from normalize.wire.sse import DEFAULT_MAX_EVENT_BYTES, ServerSentEvent, SSEDecoder, SSEEventTooLarge
from normalize.wire.sse_framing import SSE, SSEFraming

__all__ = [
    "AWS_EVENTSTREAM",
    "BUILTIN_FRAMINGS",
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_FRAME_BYTES",
    "DROP",
    "ENTRY_POINT_GROUP",
    "FEATURES",
    "NDJSON",
    "SSE",
    "Base64Field",
    "CheckedEnvelope",
    "Drop",
    "Edit",
    "Ending",
    "Envelope",
    "EnvelopeError",
    "ErrorSample",
    "EventStreamDecoder",
    "EventStreamFraming",
    "EventStreamMessage",
    "Feature",
    "FrameSpan",
    "FrameTooLarge",
    "FrameView",
    "Framer",
    "Framing",
    "FramingError",
    "FramingKind",
    "HeaderValue",
    "NDJSONDecoder",
    "NDJSONFraming",
    "SSEDecoder",
    "SSEEventTooLarge",
    "SSEFraming",
    "ServerSentEvent",
    "Strip",
    "WireProfile",
    "decode_message",
    "encode_message",
    "framing_for",
    "generic_error_body",
    "known_profiles",
    "media_type",
    "open_checked",
    "profile_for",
    "profile_problems",
    "register_profile",
]

#: The framings this package provides.
BUILTIN_FRAMINGS: tuple[Framing[Any], ...] = (SSE, NDJSON, AWS_EVENTSTREAM)


def framing_for(content_type: str | None) -> Framing[Any] | None:
    """The built-in framing a ``content-type`` names (None when none does): how a tool reads a recorded
    body whose api it knows nothing about."""
    kind = media_type(content_type or "")
    return next((framing for framing in BUILTIN_FRAMINGS if kind in framing.media_types), None)
