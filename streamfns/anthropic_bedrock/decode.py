"""Claude on Bedrock's event stream → the Anthropic decoder. Pure: no I/O, no clock.

Each ``chunk`` event's payload is ``{"bytes": "<base64 of one Anthropic Messages event>"}``: the
event is unwrapped and handed to :class:`streamfns.anthropic.decode.AnthropicDecoder` unchanged, so
everything the Messages api promises (blocks, strict tool input, stop reasons, usage, ``event: error``)
holds here too; the ``amazon-bedrock-invocationMetrics`` Bedrock adds to the inner ``message_stop`` is
not read. Fail closed: a chunk whose payload is not a JSON object, has no ``bytes`` string, or whose
``bytes`` are not base64, and an event of any other type, are ``protocol`` errors (nothing is skipped);
an ``exception`` or ``error`` message ends the stream with its kind
(:func:`streamfns.bedrock.errors.exception_failure`: throttling → ``rate_limit`` …).
"""

from __future__ import annotations

import binascii
from typing import Final

from normalize import MessageBuilder, Model
from streamfns.anthropic.decode import AnthropicDecoder
from streamfns.bedrock.errors import VENDOR, exception_failure
from streamfns.kit import Decoder, EventStreamMessage, ServerSentEvent, StreamFailure, load_event

__all__ = ["BedrockAnthropicDecoder", "unwrap_chunk"]

#: The one event type InvokeModelWithResponseStream sends.
_CHUNK: Final = "chunk"


def unwrap_chunk(payload: bytes) -> bytes:
    """The Anthropic event a ``chunk`` payload carries; :class:`StreamFailure` (``protocol``) when it
    carries none."""
    encoded = load_event(payload, VENDOR).get("bytes")
    if not isinstance(encoded, str):
        raise StreamFailure.protocol(f"{VENDOR} sent a chunk without its bytes")
    try:
        # What base64.b64decode(validate=True) runs, without its Python wrapper (one call per token).
        return binascii.a2b_base64(encoded, strict_mode=True)
    except (binascii.Error, ValueError):
        raise StreamFailure.protocol(f"{VENDOR} sent a chunk whose bytes are not base64") from None


class BedrockAnthropicDecoder(Decoder[EventStreamMessage]):
    """Feeds one response's chunks to an :class:`AnthropicDecoder` (see the module docstring)."""

    __slots__ = ("_inner",)

    def __init__(self, builder: MessageBuilder, model: Model | None = None) -> None:
        self._inner = AnthropicDecoder(builder, model)

    def on_event(self, message: EventStreamMessage) -> None:
        """Apply one event-stream message; raises :class:`StreamFailure` for exceptions and bad chunks."""
        headers = message.headers  # read directly: the named accessors cost a call each, per token
        if headers.get(":message-type", "event") != "event":
            raise exception_failure(message)
        if headers.get(":event-type") != _CHUNK:
            raise StreamFailure.protocol(f"{VENDOR} sent an event of unknown type {message.event_type!r}")
        # The inner event names itself by its "type"; "message" is only what an SSE event without a name is.
        self._inner.on_event(ServerSentEvent("message", unwrap_chunk(message.payload)))

    def on_eof(self) -> None:
        """The body ended before ``message_stop``: nothing to conclude (the kit reports ``truncated``)."""
        self._inner.on_eof()
