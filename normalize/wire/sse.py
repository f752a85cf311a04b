"""Server-sent events framing, done on bytes.

This is the hot path of every streaming call: it runs once per network chunk and
turns the raw body of a ``text/event-stream`` response into :class:`ServerSentEvent`
objects whose ``data`` is still the raw UTF-8 ``bytes`` of the joined ``data:`` lines,
ready for ``jiter.from_json``.  Nothing is decoded to ``str`` except the (cached)
event names and the rare ``id:`` values.

Parsing follows the WHATWG "event stream interpretation" rules:

* lines end in CR, LF or CRLF, and a CRLF split across two chunks is still one
  line break;
* one leading UTF-8 byte order mark on the stream is dropped;
* lines starting with ``:`` are comments; fields other than ``data``, ``event``,
  ``id`` and ``retry`` are ignored; field names are case-sensitive;
* a line without a colon is a field name with an empty value; after the colon
  exactly one space, if present, is removed from the value;
* a blank line dispatches the pending event, but only when at least one ``data``
  line was seen: a block that holds only comments, ``event:``, ``id:`` or
  ``retry:`` lines dispatches nothing;
* the last event ID persists across events (``id:`` with a NUL in it is
  ignored, an empty ``id:`` resets it to ``""``), and ``retry:`` is honoured only
  when its value is all ASCII digits.

Two deliberate departures from a browser's EventSource: :meth:`SSEDecoder.flush`
dispatches an event that the stream ended without terminating by a blank line
(vendors and proxies do drop the final blank line), and every event is bounded by
``max_event_bytes`` so a hostile or broken stream cannot make the decoder buffer
without limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, cast

from normalize.wire.base import DEFAULT_MAX_FRAME_BYTES, FrameTooLarge

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "SSEDecoder",
    "SSEEventTooLarge",
    "ServerSentEvent",
]

DEFAULT_MAX_EVENT_BYTES: Final = DEFAULT_MAX_FRAME_BYTES
"""Default bound on one event's size: see :class:`SSEDecoder`."""

_BOM: Final = b"\xef\xbb\xbf"
_new: Final = object.__new__
_COLON: Final = 0x3A  # ord(":")


@dataclass(slots=True)
class ServerSentEvent:
    """One dispatched server-sent event (a value: decoders read it, nobody changes it)."""

    event: str
    """The ``event:`` field, or ``"message"`` when the event had none (or an empty one)."""
    data: bytes
    """The raw bytes of the event's ``data:`` lines joined with ``b"\\n"``."""
    id: str | None = None
    """The stream's last event ID when this event was dispatched; ``None`` if no ``id:`` was seen yet."""
    retry: int | None = None
    """The ``retry:`` value (milliseconds) given in this event's own block, if any."""

    @property
    def text(self) -> str:
        """``data`` decoded as UTF-8, with undecodable bytes replaced by U+FFFD."""
        return self.data.decode("utf-8", "replace")


class SSEEventTooLarge(FrameTooLarge):
    """An event grew past ``max_event_bytes`` before it was terminated.

    Raised by :meth:`SSEDecoder.feed` / :meth:`SSEDecoder.flush` as soon as the
    bytes buffered for the current event exceed the limit, even when the event is
    a single line that has not ended yet.  ``events`` (the framing's ``frames``)
    holds the events that the same ``feed`` call completed before the oversized
    one, which would otherwise be lost with the exception.  The decoder drops its
    buffered state when it raises; the stream should be treated as broken.
    """

    def __init__(self, limit: int, size: int) -> None:
        super().__init__(
            f"server-sent event exceeds max_event_bytes={limit}: "
            f"{size} bytes buffered without a terminating blank line",
            limit=limit,
            size=size,
        )

    @property
    def events(self) -> list[ServerSentEvent]:
        """The events completed before the oversized one."""
        return cast("list[ServerSentEvent]", self.frames)

    @events.setter
    def events(self, events: list[ServerSentEvent]) -> None:
        self.frames = list(events)


# Decoded event names, shared by all decoders: by field value, and by the whole
# ``event: NAME`` line for the fast path.  Vendors use a handful of names, so these
# stay tiny; the bounds only stop a hostile stream from growing them.
_NAMES: Final[dict[bytes, str]] = {b"": "message"}
_EVENT_LINES: Final[dict[bytes, str]] = {}
_CACHE_ENTRIES: Final = 512
_CACHE_KEY_BYTES: Final = 256


def _event_name(raw: bytes) -> str:
    """The event name for the value of an ``event:`` field."""
    name = _NAMES.get(raw)
    if name is None:
        name = raw.decode("utf-8", "replace") or "message"
        if len(_NAMES) < _CACHE_ENTRIES and len(raw) <= _CACHE_KEY_BYTES:
            _NAMES[raw] = name
    return name


#: The bytes a lone event of each name starts with (see :meth:`SSEDecoder.lone`).
_LEADS: Final[dict[str, bytes]] = {"message": b"data: "}


def _lead(event: str) -> bytes | None:
    """The lead of a lone event named ``event``; None for a name no ``event:`` line can give (empty,
    or holding a line break: the line would end there), whose events are always fed."""
    lead = _LEADS.get(event)
    if lead is None:
        if not event or "\n" in event or "\r" in event:
            return None
        lead = b"event: " + event.encode("utf-8", "surrogatepass") + b"\ndata: "
        if len(_LEADS) < _CACHE_ENTRIES and len(lead) <= _CACHE_KEY_BYTES:
            _LEADS[event] = lead
    return lead


def _event_line(line: bytes) -> str:
    """The event name for a whole ``event: NAME`` line."""
    name = _event_name(line[7:])
    if len(_EVENT_LINES) < _CACHE_ENTRIES and len(line) <= _CACHE_KEY_BYTES:
        _EVENT_LINES[line] = name
    return name


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder working on raw bytes.

    Call :meth:`feed` with each chunk as it arrives (chunks may split the stream
    anywhere, including inside a line ending or a UTF-8 sequence) and
    :meth:`flush` once at the end of the stream.

    ``max_event_bytes`` bounds one event: the bytes of all lines of the event
    (fields, comments and unknown fields alike, line endings not counted) between
    two blank lines, including a line that has not ended yet.  Exceeding it raises
    :class:`SSEEventTooLarge`.  The count is kept as bytes arrive, so even one
    endless line is refused once it passes the limit, before it is buffered further.

    Internally the unterminated tail of the last chunk and the data lines of a
    pending event are appended to ``bytearray`` buffers, so an event split into
    many small chunks costs linear time, and memory stays in proportion to the
    bytes held however small the chunks or lines are.  A chunk is split into lines
    once: on ``\\n``, or on ``\\r\\n`` when it holds a CR and every CR and LF in it
    is part of a CRLF (otherwise it is normalised first); events that start at an
    event boundary and have the usual one- or two-line shape are decoded without a
    per-line loop.
    """

    __slots__ = (
        "_cr",
        "_data",
        "_edge",
        "_event",
        "_head",
        "_last_id",
        "_max",
        "_partial",
        "_reconnection_time",
        "_retry",
        "_size",
    )

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if max_event_bytes < 1:
            raise ValueError(f"max_event_bytes must be positive, got {max_event_bytes}")
        self._max = max_event_bytes
        # Stream prefix held back while it could still be the start of a BOM;
        # None once the start of the stream has been dealt with.
        self._head: bytes | None = b""
        # The previous chunk ended in CR: a LF opening the next chunk belongs to it.
        self._cr = False
        # Either of the two above needs looking at before the next chunk.
        self._edge = True
        # The start of the current line, which has not ended yet.
        self._partial = bytearray()
        # Bytes of the finished lines of the current event (see max_event_bytes).
        self._size = 0
        # The pending event: its data (None: no data line yet; bytes: one line;
        # bytearray: lines joined so far), name and retry.
        self._data: bytes | bytearray | None = None
        self._event = "message"
        self._retry: int | None = None
        # Stream-level state that survives dispatch.
        self._last_id: str | None = None
        self._reconnection_time: int | None = None

    @property
    def max_event_bytes(self) -> int:
        """The per-event size limit in bytes."""
        return self._max

    @property
    def last_event_id(self) -> str | None:
        """The stream's last event ID, ``None`` if it never sent a valid ``id:``."""
        return self._last_id

    @property
    def reconnection_time(self) -> int | None:
        """The last valid ``retry:`` value seen, even in a block that was not dispatched."""
        return self._reconnection_time

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode one chunk of the body; returns the events that it completed, in order."""
        if type(chunk) is not bytes:
            chunk = bytes(chunk)
        if self._edge:
            chunk = self._stream_edge(chunk)
        if not chunk:
            return []
        if 13 in chunk:  # b"\r" (an int test is much cheaper than a bytes one)
            # A CR that ends the chunk ends a line; remember it so that a LF at the
            # start of the next chunk is taken as the rest of the same CRLF.
            if chunk[-1] == 0x0D:
                self._cr = self._edge = True
            # Gemini's framing: every line ends in CRLF. Split on it, then check that the chunk holds
            # exactly one CR and one LF per break (each count is a one-byte delete, a fast C pass); a
            # regex for a lone CR, or counting a two-byte pattern, steps through every byte.
            lines = chunk.split(b"\r\n")
            size = len(chunk)
            breaks = len(lines) - 1
            if size - len(chunk.replace(b"\r", b"")) != breaks or size - len(chunk.replace(b"\n", b"")) != breaks:
                lines = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        else:
            # Split on LF alone: a one-byte separator is found with memchr, where splitting on the
            # blank line (two bytes) scans several times slower; blank lines show up as empty items.
            lines = chunk.split(b"\n")

        out: list[ServerSentEvent] = []
        tail = lines.pop()
        if not lines:
            # No line ended in this chunk.
            self._hold(tail, out)
            return out
        if self._partial:
            lines[0] = self._take_partial(lines[0])
        limit = self._max
        # Only lines[0] can be longer than the chunk (it may continue a held line).
        check = len(chunk) > limit or len(lines[0]) > limit
        last_id = self._last_id
        append = out.append
        # Events of the usual shapes are made field by field: calling the class runs the dataclass's
        # __init__ in a frame of its own, which costs about half as much again (every field is set,
        # as __init__ sets them; a test checks the two ways give equal events).
        new = _new
        count = len(lines)
        i = 0
        while i < count:
            if not self._size:
                # At an event boundary: the two usual shapes are decoded without the line loop.
                line = lines[i]
                if line[:6] == b"data: ":
                    if i + 1 < count and not lines[i + 1]:
                        # A lone ``data: ...`` line: the usual OpenAI Chat / Gemini event.
                        if check and len(line) > limit:
                            raise self._too_large(len(line), out)
                        event = new(ServerSentEvent)
                        event.event = "message"
                        event.data = line[6:]
                        event.id = last_id
                        event.retry = None
                        append(event)
                        i += 2
                        continue
                elif line[:7] == b"event: ":
                    if i + 2 < count and not lines[i + 2] and lines[i + 1][:6] == b"data: ":
                        # ``event: NAME`` + ``data: ...``: the usual Anthropic / Responses event.
                        data = lines[i + 1]
                        if check and len(line) + len(data) > limit:
                            raise self._too_large(len(line) + len(data), out)
                        name = _EVENT_LINES.get(line) or _event_line(line)
                        event = new(ServerSentEvent)
                        event.event = name
                        event.data = data[6:]
                        event.id = last_id
                        event.retry = None
                        append(event)
                        i += 3
                        continue
                elif not line:
                    i += 1  # a blank line with nothing pending dispatches nothing
                    continue
            # Anything else: the lines up to and including the next blank line, one by one.
            end = i
            while end < count and lines[end]:
                end += 1
            self._lines(lines[i : end + 1], out)
            last_id = self._last_id
            i = end + 1
        if tail:
            self._hold(tail, out)
        return out

    def lone(self, chunk: bytes, event: str) -> bytes | None:
        """The data of ``chunk`` when it is exactly one event named ``event``, written the usual way, and
        the decoder holds nothing: then feeding it would dispatch that one event (with the stream's
        last event ID, no retry) and leave the decoder as it is, so a caller that only needs the data
        may skip :meth:`feed`. None otherwise (feed it).

        The usual way: an ``event: NAME`` line (none for ``message``), one ``data: `` line, a blank
        line, every line ending in LF or every line in CRLF (Gemini's), within ``max_event_bytes``;
        the decoder at an event boundary, past the stream's start and any CR the last chunk ended in.
        A name that does not encode back to the bytes it came from, an ``id:`` or ``retry:`` line, a
        comment, line ends of two kinds: all are fed."""
        if self._edge or self._partial or self._size or chunk.__class__ is not bytes:
            return None
        lead = _LEADS.get(event) or _lead(event)
        if lead is None:
            return None
        end = b"\n\n"
        if 13 in chunk:  # b"\r": CRLF framing (each LF of the lead and of the end a CRLF), or fed
            end = b"\r\n\r\n"
            if event != "message":
                lead = lead[: -len(b"\ndata: ")] + b"\r\ndata: "
        lead_len = len(lead)
        if (
            chunk[:lead_len] != lead
            or chunk[-len(end) :] != end
            or len(chunk) > self._max
            # the data line's end and the blank line, no other line break (nor, with CRLF, a lone CR)
            or chunk.count(b"\n", lead_len) != 2
            or (len(end) == 4 and chunk.count(b"\r", lead_len) != 2)
        ):
            return None
        return chunk[lead_len : -len(end)]

    def lone_parts(self, chunk: bytes, data: bytes) -> tuple[bytes, bytes]:
        """For a ``chunk`` that :meth:`lone` took, returning ``data``: the bytes before the data (its
        ``event:`` line and ``data: ``) and after it (the line's end and the blank line).

        The promise a caller may build on: a chunk of those same two around other data holding no CR
        and no LF (a JSON string literal holds neither), no longer than ``max_event_bytes``, given to a
        decoder at an event boundary — one that :meth:`lone` took a chunk from and that was fed nothing
        since — is one event of the same name with that data, which :meth:`lone` would take and
        return; so such a caller may skip :meth:`lone` too."""
        end = 4 if chunk[-4:] == b"\r\n\r\n" else 2  # the line's CRLF and the blank line's, or two LFs
        return chunk[: len(chunk) - len(data) - end], chunk[-end:]

    def at_boundary(self) -> bool:
        """Whether the decoder holds nothing: past the stream's start and any CR the last chunk ended
        in, no part of a line and no line of an event pending (the state :meth:`lone` asks for)."""
        return not (self._edge or self._partial or self._size)

    def run_parts(self, chunk: bytes, event: str) -> tuple[bytes, bytes] | None:
        """For a ``chunk`` of several events (a read :meth:`lone` does not take): the bytes before the
        data of an event named ``event`` written the usual way (its ``event:`` line and ``data: ``) and
        after it (the line's end and the blank line), in the line ends of ``chunk``: CRLF when it holds
        a CR, else LF. None for a name no ``event:`` line can give (see :meth:`lone`).

        The promise a caller may build on, as :meth:`lone_parts`': given to a decoder :meth:`at_boundary`,
        a run of bytes ``before + DATA + after``, where DATA holds no CR and no LF and the three are no
        longer than ``max_event_bytes``, is one event of that name with data DATA — what feeding it
        would dispatch, leaving the decoder at the boundary again. So a caller may take the leading
        events of a chunk that each have that form (cut at ``after``) without feeding them, and feed
        the rest from the first that does not."""
        if chunk.__class__ is not bytes:
            return None
        lead = _LEADS.get(event) or _lead(event)
        if lead is None:
            return None
        if 13 not in chunk:
            return lead, b"\n\n"
        if event != "message":
            lead = lead[: -len(b"\ndata: ")] + b"\r\ndata: "
        return lead, b"\r\n\r\n"

    def flush(self) -> list[ServerSentEvent]:
        """End of stream: returns the pending event, if it has data, as if a blank line followed.

        The decoder is then ready for a new stream; the last event ID and the
        reconnection time are kept, as an EventSource keeps them across reconnects.
        """
        out: list[ServerSentEvent] = []
        if self._head:
            self._partial += self._head
        if self._partial:
            self._lines([self._take_partial(b"")], out)
        self._dispatch(out)
        self._head = b""
        self._cr = False
        self._edge = True
        return out

    # -- internals ---------------------------------------------------------

    def _stream_edge(self, chunk: bytes) -> bytes:
        """Deal with a possible BOM at the start of the stream and with a CR that ended the last chunk."""
        head = self._head
        if head is not None:
            chunk = head + chunk
            if len(chunk) < 3 and _BOM.startswith(chunk):
                self._head = chunk  # could still become a BOM
                return b""
            self._head = None
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        if self._cr and chunk:
            self._cr = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
        self._edge = self._head is not None or self._cr
        return chunk

    def _hold(self, piece: bytes, out: list[ServerSentEvent]) -> None:
        """Keep an unterminated line piece, enforcing the size limit first."""
        pending = self._size + len(self._partial) + len(piece)
        if pending > self._max:
            raise self._too_large(pending, out)
        self._partial += piece

    def _take_partial(self, end: bytes) -> bytes:
        """The held start of the current line followed by its final piece ``end``."""
        self._partial += end
        line = bytes(self._partial)
        self._partial = bytearray()
        return line

    def _lines(self, lines: list[bytes], out: list[ServerSentEvent]) -> None:
        """Interpret complete lines (without their line endings)."""
        limit = self._max
        size = self._size
        for line in lines:
            if not line:
                self._dispatch(out)
                size = 0
                continue
            size += len(line)
            if size > limit:
                raise self._too_large(size, out)
            if line[0] == _COLON:
                continue
            if line[:6] == b"data: ":
                name = b"data"
                value = line[6:]
            else:
                name, _, value = line.partition(b":")
                if value[:1] == b" ":
                    value = value[1:]
            if name == b"data":
                data = self._data
                if data is None:
                    self._data = value
                elif isinstance(data, bytearray):
                    data += b"\n"
                    data += value
                else:
                    joined = bytearray(data)
                    joined += b"\n"
                    joined += value
                    self._data = joined
            elif name == b"event":
                self._event = _event_name(value)
            elif name == b"id":
                if 0 not in value:  # no NUL
                    self._last_id = value.decode("utf-8", "replace")
            elif name == b"retry" and value.isdigit():  # bytes.isdigit(): ASCII digits only
                try:
                    retry = int(value)
                except ValueError:  # more digits than int() accepts: not a usable delay
                    continue
                self._retry = self._reconnection_time = retry
        self._size = size

    def _dispatch(self, out: list[ServerSentEvent]) -> None:
        """A blank line: dispatch the pending event if it has data, then start a new one."""
        data = self._data
        if data is not None:
            payload = data if isinstance(data, bytes) else bytes(data)
            out.append(ServerSentEvent(self._event, payload, self._last_id, self._retry))
            self._data = None
        self._event = "message"
        self._retry = None
        self._size = 0

    def _too_large(self, size: int, out: list[ServerSentEvent]) -> SSEEventTooLarge:
        """Build the size error and drop everything buffered for the current event."""
        error = SSEEventTooLarge(self._max, size)
        error.events = out
        self._partial = bytearray()
        self._data = None
        self._event = "message"
        self._retry = None
        self._size = 0
        return error
