"""Claude on Bedrock's event stream → the Anthropic decoder. Pure: no I/O, no clock.

Each ``chunk`` event's payload is ``{"bytes": "<base64 of one Anthropic Messages event>"}``: the
event is unwrapped and handed to :class:`streamfns.anthropic.decode.AnthropicDecoder` unchanged, so
everything the Messages api promises (blocks, strict tool input, stop reasons, usage, ``event: error``)
holds here too; the ``amazon-bedrock-invocationMetrics`` Bedrock adds to the inner ``message_stop`` is
not read. Fail closed: a chunk whose payload is not a JSON object, has no ``bytes`` string, or whose
``bytes`` are not base64, and an event of any other type, are ``protocol`` errors (nothing is skipped);
an ``exception`` or ``error`` message ends the stream with its kind
(:func:`streamfns.bedrock.errors.exception_failure`: throttling → ``rate_limit`` …).

While the Anthropic decoder holds a shortcut (a delta layout it reads off the bytes), this decoder
holds one for the kit too: a ``chunk`` read whose payload parses strictly, and whose ``bytes`` decode
to an event that layout reads, is applied as the Anthropic decoder would apply it, with no framing and
no ``on_event`` (:class:`_ChunkShape`).
"""

from __future__ import annotations

import binascii
from typing import Any, Final

import jiter

from normalize import MessageBuilder, Model
from streamfns.anthropic.decode import AnthropicDecoder
from streamfns.bedrock.errors import VENDOR, exception_failure
from streamfns.kit import Decoder, EventStreamMessage, Matcher, ServerSentEvent, Shortcut, StreamFailure, load_event

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


_from_json = jiter.from_json


class _ChunkShape:
    """The Anthropic decoder's delta layout, read through a chunk's wrapping: :meth:`match` takes a
    chunk's payload and gives what ``shape`` reads of the event it carries, or None — exactly when
    :meth:`BedrockAnthropicDecoder.on_event` would hand that event to the Anthropic decoder (the payload
    a JSON object, parsed without repair, its ``bytes`` strict base64) and ``shape`` would read it."""

    __slots__ = ("_shape",)

    def __init__(self, shape: Matcher) -> None:
        self._shape = shape

    def match(self, payload: bytes) -> list[Any] | None:
        try:
            value: Any = _from_json(payload)
        except ValueError:
            return None  # the full path repairs or refuses it
        if value.__class__ is not dict:
            return None
        encoded: Any = value.get("bytes")
        if encoded.__class__ is not str:
            return None
        try:
            event = binascii.a2b_base64(encoded, strict_mode=True)
        except (binascii.Error, ValueError):
            return None
        return self._shape.match(event)


class BedrockAnthropicDecoder(Decoder[EventStreamMessage]):
    """Feeds one response's chunks to an :class:`AnthropicDecoder` (see the module docstring)."""

    __slots__ = ("_inner", "_wrapped", "shortcut")

    def __init__(self, builder: MessageBuilder, model: Model | None = None) -> None:
        self._inner = AnthropicDecoder(builder, model)
        #: The inner decoder's shortcut that ``shortcut`` wraps (None: none).
        self._wrapped: Shortcut | None = None
        #: The inner decoder's shortcut for a ``chunk`` message (see the module docstring), kept in step
        #: with it after every message read whole (only those change it).
        self.shortcut: Shortcut | None = None

    def on_event(self, message: EventStreamMessage) -> None:
        """Apply one event-stream message; raises :class:`StreamFailure` for exceptions and bad chunks."""
        headers = message.headers  # read directly: the named accessors cost a call each, per token
        if headers.get(":message-type", "event") != "event":
            raise exception_failure(message)
        if headers.get(":event-type") != _CHUNK:
            raise StreamFailure.protocol(f"{VENDOR} sent an event of unknown type {message.event_type!r}")
        # The inner event names itself by its "type"; "message" is only what an SSE event without a name is.
        inner = self._inner
        inner.on_event(ServerSentEvent("message", unwrap_chunk(message.payload)))
        if inner.shortcut is not self._wrapped:
            self._rewrap(inner.shortcut)

    def _rewrap(self, inner: Shortcut | None) -> None:
        self._wrapped = inner
        self.shortcut = (
            None
            if inner is None
            else Shortcut(
                _CHUNK, _ChunkShape(inner.shape), inner.sink, *inner.args, whole=inner.whole, in_run=inner.in_run
            )
        )

    def on_eof(self) -> None:
        """The body ended before ``message_stop``: nothing to conclude (the kit reports ``truncated``)."""
        self._inner.on_eof()
