"""The AWS event-stream framing (``application/vnd.amazon.eventstream``), as Bedrock streams.

A message is binary: a 12-byte prelude (total length, headers length, both big-endian uint32, and the
CRC32 of those 8 bytes), the headers, the payload, and the CRC32 of everything before it. A header is
a 1-byte name length, the name, a 1-byte value type and the value (true, false, byte, short, int,
long, a 2-byte-length byte array or string, a timestamp in milliseconds, a UUID).

Both CRCs are verified. A bad CRC, an impossible length (shorter than a message can be, headers longer
than the message or than 128 KiB) or headers that do not parse (a value running past them, an unknown
value type, a name or string that is not UTF-8, a name given twice) are a
:class:`~normalize.wire.FramingError` of kind ``protocol`` — botocore refuses all of them too; a
message longer than ``max_frame_bytes`` is refused from its prelude, before it is buffered; a body
that ends inside a message is kind ``truncated``. Messages reach the decoder as
:class:`EventStreamMessage` values whatever their ``:message-type`` (``event``, ``exception``,
``error``): telling them apart is the decoder's business. :func:`encode_message` writes a message
(tests, the cassette mutations' :meth:`EventStreamFraming.rewrite`).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

from normalize.wire.base import (
    DEFAULT_MAX_FRAME_BYTES,
    EVENTSTREAM_TYPES,
    FrameSpan,
    FrameTooLarge,
    Framing,
    FramingError,
)

__all__ = [
    "AWS_EVENTSTREAM",
    "EventStreamDecoder",
    "EventStreamFraming",
    "EventStreamMessage",
    "HeaderValue",
    "decode_message",
    "encode_message",
]

if TYPE_CHECKING:
    import uuid

#: A header value as decoded: bool, int (byte, short, int, long, timestamp in ms), bytes, str or UUID.
HeaderValue: TypeAlias = "bool | int | bytes | str | uuid.UUID"

_PRELUDE: Final = 12
_CRC: Final = 4
_MINIMUM: Final = _PRELUDE + _CRC
_UINT32: Final = struct.Struct(">I")
_PRELUDE_STRUCT: Final = struct.Struct(">III")
_INTEGERS: Final = {2: struct.Struct(">b"), 3: struct.Struct(">h"), 4: struct.Struct(">i"), 5: struct.Struct(">q")}
_TIMESTAMP: Final = 8
_UUID: Final = 9
#: The longest headers section a message may have (botocore's bound).
_MAX_HEADERS: Final = 128 * 1024


@dataclass(frozen=True, slots=True)
class EventStreamMessage:
    """One event-stream message: its ``headers`` (name → value) and raw ``payload`` bytes."""

    headers: Mapping[str, HeaderValue] = field(default_factory=dict[str, HeaderValue])
    payload: bytes = b""

    def _text(self, name: str) -> str | None:
        value = self.headers.get(name)
        return value if isinstance(value, str) else None

    @property
    def message_type(self) -> str:
        """``:message-type``: ``event`` (the default when absent), ``exception`` or ``error``."""
        return self._text(":message-type") or "event"

    @property
    def event_type(self) -> str | None:
        """``:event-type`` of an event (``contentBlockDelta``, ``chunk``, …)."""
        return self._text(":event-type")

    @property
    def exception_type(self) -> str | None:
        """``:exception-type`` of an exception (``throttlingException``, …)."""
        return self._text(":exception-type")

    @property
    def error_code(self) -> str | None:
        """``:error-code`` of an ``error`` message."""
        return self._text(":error-code")

    @property
    def error_message(self) -> str | None:
        """``:error-message`` of an ``error`` message."""
        return self._text(":error-message")

    @property
    def name(self) -> str | None:
        """What the message calls itself: its event type, exception type or error code."""
        return self.event_type or self.exception_type or self.error_code


_SetSlot: TypeAlias = Callable[[EventStreamMessage, Any], None]
_new_message: Final = object.__new__
# The slots' own descriptors: a store that does not go through the frozen class's __setattr__.
_set_headers: Final = cast("_SetSlot", EventStreamMessage.__dict__["headers"].__set__)
_set_payload: Final = cast("_SetSlot", EventStreamMessage.__dict__["payload"].__set__)

# Parsed headers sections by their bytes, shared by all decoders: a stream repeats a handful of exact
# sections (``:event-type contentBlockDelta``, ``:content-type``, ``:message-type``), and parsing one
# in Python costs more than the rest of the message. Read-only views, so no message can change
# another's headers; the bounds only stop a hostile stream from growing the cache.
_PARSED_HEADERS: Final[dict[bytes, Mapping[str, HeaderValue]]] = {}
_CACHE_ENTRIES: Final = 512
_CACHE_KEY_BYTES: Final = 1024


def _headers(data: bytes, start: int, end: int) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    at = start
    while at < end:
        size = data[at]
        at += 1
        if at + size > end:
            raise ValueError("a header name runs past the headers")
        name = bytes(data[at : at + size]).decode("utf-8")
        at += size
        if name in headers:
            raise ValueError(f"header {name!r} is given twice")
        if at >= end:
            raise ValueError(f"header {name!r} has no value type")
        kind = data[at]
        at += 1
        value: HeaderValue
        if kind in (0, 1):
            value = kind == 0
        elif kind in _INTEGERS:
            packer = _INTEGERS[kind]
            (value,) = packer.unpack_from(data, at)
            at += packer.size
        elif kind in (6, 7):
            (length,) = struct.unpack_from(">H", data, at)
            at += 2
            if at + length > end:
                raise ValueError(f"header {name!r} runs past the headers")
            raw = bytes(data[at : at + length])
            value = raw if kind == 6 else raw.decode("utf-8")
            at += length
        elif kind == _TIMESTAMP:
            (value,) = struct.unpack_from(">q", data, at)
            at += 8
        elif kind == _UUID:
            import uuid  # noqa: PLC0415 - a rare header type: the module loads when one is seen

            value = uuid.UUID(bytes=bytes(data[at : at + 16]))
            at += 16
        else:
            raise ValueError(f"header {name!r} has the unknown value type {kind}")
        if at > end:
            raise ValueError(f"header {name!r} runs past the headers")
        headers[name] = value
    return headers


def _encode_header(name: str, value: HeaderValue) -> bytes:
    raw_name = name.encode("utf-8")
    head = bytes([len(raw_name)]) + raw_name
    if isinstance(value, bool):
        return head + bytes([0 if value else 1])
    if not isinstance(value, int | bytes | str):  # a UUID (bool is an int)
        return head + bytes([_UUID]) + value.bytes
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return head + bytes([4]) + struct.pack(">i", value)
        return head + bytes([5]) + struct.pack(">q", value)
    raw = value if isinstance(value, bytes) else value.encode("utf-8")
    return head + bytes([6 if isinstance(value, bytes) else 7]) + struct.pack(">H", len(raw)) + raw


def encode_message(headers: Mapping[str, HeaderValue], payload: bytes) -> bytes:
    """One message's bytes, with both CRCs (ints are written as 32-bit, or 64-bit when they need it)."""
    return _assemble(b"".join(_encode_header(name, value) for name, value in headers.items()), payload)


def _assemble(encoded: bytes, payload: bytes) -> bytes:
    """A message from its encoded headers and its payload: the prelude and both CRCs computed."""
    total = _MINIMUM + len(encoded) + len(payload)
    prelude = struct.pack(">II", total, len(encoded))
    prelude += _UINT32.pack(zlib.crc32(prelude))
    body = prelude + encoded + payload
    return body + _UINT32.pack(zlib.crc32(body))


def _check_prelude(data: bytes, at: int, limit: int) -> tuple[int, int]:
    total, headers_length, prelude_crc = _PRELUDE_STRUCT.unpack_from(data, at)
    if zlib.crc32(data[at : at + 8]) != prelude_crc:
        raise FramingError(f"event-stream prelude CRC mismatch at byte {at}")
    if total < _MINIMUM or headers_length > total - _MINIMUM or headers_length > _MAX_HEADERS:
        raise FramingError(
            f"event-stream message at byte {at} has an impossible length (total {total}, headers {headers_length})"
        )
    if total > limit:
        raise FrameTooLarge(
            f"event-stream message exceeds max_frame_bytes={limit}: its prelude says {total} bytes",
            limit=limit,
            size=total,
        )
    return total, headers_length


def _message(data: bytes, at: int, total: int, headers_length: int) -> EventStreamMessage:
    end = at + total - _CRC
    (message_crc,) = _UINT32.unpack_from(data, end)
    if zlib.crc32(data[at:end]) != message_crc:
        raise FramingError(f"event-stream message CRC mismatch in the message at byte {at}")
    headers_end = at + _PRELUDE + headers_length
    raw = data[at + _PRELUDE : headers_end]
    headers = _PARSED_HEADERS.get(raw)
    if headers is None:
        try:
            headers = MappingProxyType(_headers(raw, 0, len(raw)))
        except (ValueError, IndexError, struct.error) as exc:
            raise FramingError(f"event-stream headers do not parse in the message at byte {at}: {exc}") from None
        if len(_PARSED_HEADERS) < _CACHE_ENTRIES and len(raw) <= _CACHE_KEY_BYTES:
            _PARSED_HEADERS[raw] = headers
    # The frozen dataclass's __init__ goes through object.__setattr__ per field, half the cost of a
    # message here; its slots are filled directly instead (the same two stores, made once).
    message = _new_message(EventStreamMessage)
    _set_headers(message, headers)
    _set_payload(message, data[headers_end:end])
    return message


def decode_message(raw: bytes) -> EventStreamMessage:
    """One whole message (exactly its bytes), CRCs checked; raises ``FramingError``."""
    if len(raw) < _MINIMUM:
        raise FramingError(f"an event-stream message is at least {_MINIMUM} bytes, not {len(raw)}", kind="truncated")
    total, headers_length = _check_prelude(raw, 0, len(raw))
    if total != len(raw):
        raise FramingError(f"the event-stream prelude says {total} bytes, the message has {len(raw)}")
    return _message(raw, 0, total, headers_length)


class EventStreamDecoder:
    """Incremental event-stream framer: :meth:`feed` each chunk, :meth:`flush` at the end of the body."""

    __slots__ = ("_buffer", "_max", "_need")

    def __init__(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if max_frame_bytes < _MINIMUM:
            raise ValueError(f"max_frame_bytes must be at least {_MINIMUM}, got {max_frame_bytes}")
        self._max = max_frame_bytes
        self._buffer = bytearray()
        # The length of the message being buffered, once its prelude was read (0: not yet).
        self._need = 0

    def feed(self, chunk: bytes) -> list[EventStreamMessage]:
        """The messages ``chunk`` completed, in order."""
        if type(chunk) is not bytes:
            chunk = bytes(chunk)  # a caller's memoryview or bytearray is never held (nor released) here
        buffer = self._buffer
        if self._need and len(buffer) + len(chunk) < self._need:
            buffer += chunk  # the usual case for a large message arriving in pieces: nothing to parse yet
            return []
        # One bytes object per read (the held start of a message and the chunk): its slices are plain
        # copies, cheaper than a memoryview's, and a message's payload is a copy in any case.
        data = bytes(buffer) + chunk if buffer else chunk
        out: list[EventStreamMessage] = []
        at = 0
        size = len(data)
        try:
            while size - at >= _PRELUDE:
                total, headers_length = _check_prelude(data, at, self._max)
                if size - at < total:
                    self._need = total
                    break
                out.append(_message(data, at, total, headers_length))
                at += total
                self._need = 0
        except FramingError as exc:
            exc.frames = list(out)
            self._buffer = bytearray()
            self._need = 0
            raise
        self._buffer = bytearray(data[at:]) if at < size else bytearray()
        return out

    @property
    def max_frame_bytes(self) -> int:
        """The longest message this framer takes."""
        return self._max

    def lone(self, chunk: bytes, event: str) -> bytes | None:
        """The payload of ``chunk`` when it is exactly one whole message, both CRCs right, an event
        (``:message-type`` ``event`` or none) whose ``:event-type`` is ``event``, within
        ``max_frame_bytes``, and the framer holds nothing: then feeding it would give that one message
        and leave the framer as it is, so a caller that reads nothing of a message but its event type
        and payload may skip :meth:`feed`. None otherwise (feed it: it decides, errors included)."""
        if self._need or self._buffer or chunk.__class__ is not bytes:
            return None
        size = len(chunk)
        if size < _MINIMUM or size > self._max:
            return None
        total, headers_length, prelude_crc = _PRELUDE_STRUCT.unpack_from(chunk)
        if total != size or headers_length > size - _MINIMUM or zlib.crc32(chunk[:8]) != prelude_crc:
            return None
        end = size - _CRC
        if zlib.crc32(chunk[:end]) != _UINT32.unpack_from(chunk, end)[0]:
            return None
        headers_end = _PRELUDE + headers_length
        headers = _PARSED_HEADERS.get(chunk[_PRELUDE:headers_end])
        if headers is None:  # headers not seen before: the framer parses them (and then knows them)
            return None
        if headers.get(":event-type") != event or headers.get(":message-type", "event") != "event":
            return None
        return chunk[headers_end:end]

    def flush(self) -> list[EventStreamMessage]:
        """End of body: nothing may be left over (a cut message is ``truncated``)."""
        held = len(self._buffer)
        self._buffer = bytearray()
        self._need = 0
        if held:
            raise FramingError(f"the body ended inside an event-stream message ({held} bytes of it)", kind="truncated")
        return []


class EventStreamFraming(Framing[EventStreamMessage]):
    """AWS event stream: frames are :class:`EventStreamMessage` values."""

    name = "aws-eventstream"
    unit = "message"
    media_types = EVENTSTREAM_TYPES

    def framer(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> EventStreamDecoder:
        """A new :class:`EventStreamDecoder`."""
        return EventStreamDecoder(max_frame_bytes=max_frame_bytes)

    def spans(self, body: bytes) -> list[FrameSpan]:
        """One span per message; bytes that do not frame (a bad prelude, a cut message) end the list as
        one incomplete span."""
        found: list[FrameSpan] = []
        at = 0
        while at < len(body):
            if len(body) - at >= _PRELUDE:
                try:
                    total, headers_length = _check_prelude(body, at, len(body) - at)
                    message = _message(body, at, total, headers_length)
                except FramingError:
                    pass
                else:
                    found.append(FrameSpan(at, at + total, body[at : at + total], message.name, message.payload))
                    at += total
                    continue
            found.append(FrameSpan(at, len(body), body[at:], None, None, complete=False))
            break
        return found

    def rewrite(self, span: FrameSpan, payload: bytes) -> bytes:
        """The message around ``payload`` instead, its header bytes kept exactly, the lengths and both
        CRCs recomputed. Raises ``FramingError`` for a span that is not one whole message."""
        decode_message(span.raw)  # a span that does not frame cannot be rewritten
        (headers_length,) = _UINT32.unpack_from(span.raw, 4)
        return _assemble(span.raw[_PRELUDE : _PRELUDE + headers_length], payload)


#: The AWS event-stream framing.
AWS_EVENTSTREAM: Final = EventStreamFraming()
