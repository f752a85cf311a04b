"""The server-sent events framing: :class:`~normalize.wire.sse.SSEDecoder` for the stream, and a
byte-exact splitter for recordings.

The splitter records each event's exact span rather than rebuilding text: lines end in CRLF, LF or
CR, a blank line ends an event, and leading blank lines stay with the event that follows them, so no
byte is orphaned. :meth:`SSEFraming.rewrite` replaces an event's ``data:`` lines and keeps every other
line (``event:``, ``id:``, comments) and the event's own line endings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from normalize.wire.base import DEFAULT_MAX_FRAME_BYTES, SSE_TYPES, FrameSpan, Framing
from normalize.wire.sse import ServerSentEvent, SSEDecoder

__all__ = ["SSE", "Line", "SSEFraming", "lines"]

_LINE: Final = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a body: its span (``start``, ``end`` include the line ending), content and ending."""

    start: int
    end: int
    content: bytes
    ending: bytes


def lines(body: bytes, start: int = 0, end: int | None = None) -> list[Line]:
    """The lines of ``body[start:end]``, each ending in CRLF, LF, CR or (the last) nothing."""
    found: list[Line] = []
    for match in _LINE.finditer(body, start, len(body) if end is None else end):
        text = match.group()
        content = text.rstrip(b"\r\n")
        found.append(Line(match.start(), match.end(), content, text[len(content) :]))
    return found


_BOM: Final = b"\xef\xbb\xbf"


def _span(body: bytes, start: int, end: int, complete: bool) -> FrameSpan:
    name: str | None = None
    data: list[bytes] = []
    for item in lines(body, start, end):
        # A byte order mark opening the body is not part of the first field (the decoder drops it too).
        content = item.content.removeprefix(_BOM) if item.start == 0 else item.content
        field, _, value = content.partition(b":")
        value = value.removeprefix(b" ")
        if field == b"event":
            name = value.decode("utf-8", "replace")
        elif field == b"data":
            data.append(value)
    return FrameSpan(start, end, body[start:end], name, b"\n".join(data) if data else None, complete)


class SSEFraming(Framing[ServerSentEvent]):
    """``text/event-stream``: frames are :class:`~normalize.wire.sse.ServerSentEvent` objects."""

    name = "sse"
    unit = "event"
    media_types = SSE_TYPES

    def framer(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> SSEDecoder:
        """A new :class:`~normalize.wire.sse.SSEDecoder`."""
        return SSEDecoder(max_event_bytes=max_frame_bytes)

    def spans(self, body: bytes) -> list[FrameSpan]:
        """The events of ``body``; an event without a blank line after it ends the body incomplete."""
        found: list[FrameSpan] = []
        start = 0
        seen_content = False
        for line in lines(body):
            blank = not line.content and bool(line.ending)
            if blank and seen_content:
                found.append(_span(body, start, line.end, complete=True))
                start, seen_content = line.end, False
            elif not blank:
                seen_content = True
        if start < len(body):
            found.append(_span(body, start, len(body), complete=False))
        return found

    def rewrite(self, span: FrameSpan, payload: bytes) -> bytes:
        """The event with its data line(s) replaced by ``data: <payload>`` (one line per payload line),
        keeping every other line and the event's line ending; an event without data gains one line."""
        event_lines = lines(span.raw)
        data_lines = [line for line in event_lines if line.content.startswith(b"data:")]
        newline = (event_lines[0].ending if event_lines else b"") or b"\n"
        data = b"".join(b"data: " + part + newline for part in payload.split(b"\n"))
        if not data_lines:
            # Before the blank line that ends the event (or at its end when it has none).
            blank = next((line for line in event_lines if not line.content), None)
            cut = blank.start if blank is not None else len(span.raw)
            return span.raw[:cut] + data + span.raw[cut:]
        first, final = data_lines[0], data_lines[-1]
        newline = first.ending or b"\n"
        data = b"".join(b"data: " + part + newline for part in payload.split(b"\n"))
        if not final.ending:
            data = data[: -len(newline)]  # the event had no line ending after its data; keep it that way
        return span.raw[: first.start] + data + span.raw[final.end :]


#: The server-sent events framing.
SSE: Final = SSEFraming()
