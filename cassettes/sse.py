"""Splitting a body into server-sent events without losing a byte.

The mutations and `show` need to see events, but must keep the original bytes of every event
they do not touch, so this is a byte-level splitter (lines end in CRLF, LF or CR; an empty
line ends an event) that records each event's exact span rather than a parser that rebuilds
text. Joining the `raw` of all events gives back the body exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cassettes.canonical import NotJSON, parse_json
from cassettes.model import JSONValue

__all__ = ["Line", "SSEEvent", "lines", "split_events"]

_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a body: its span (`start`, `end` include the line ending), text and ending."""

    start: int
    end: int
    content: bytes
    ending: bytes


def lines(body: bytes, start: int = 0, end: int | None = None) -> list[Line]:
    """The lines of `body[start:end]`, each ending in CRLF, LF, CR or (the last) nothing."""
    found: list[Line] = []
    for match in _LINE.finditer(body, start, len(body) if end is None else end):
        text = match.group()
        content = text.rstrip(b"\r\n")
        found.append(Line(match.start(), match.end(), content, text[len(content) :]))
    return found


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One event's bytes (`start` to `end` in the body) and its decoded `event` / `data` fields.

    `data` joins the event's data lines with newlines (None when it has no data line). The last
    event of a body may be incomplete (no blank line after it); `complete` says which.
    """

    start: int
    end: int
    raw: bytes
    event: str | None
    data: str | None
    complete: bool

    def json(self) -> JSONValue | NotJSON:
        """The data parsed as JSON, or `NOT_JSON`."""
        return NotJSON() if self.data is None else parse_json(self.data)


def _event(body: bytes, start: int, end: int, complete: bool) -> SSEEvent:
    name: str | None = None
    data: list[str] = []
    for item in lines(body, start, end):
        text = item.content.decode("utf-8", errors="replace")
        field, _, value = text.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return SSEEvent(start, end, body[start:end], name, "\n".join(data) if data else None, complete)


def split_events(body: bytes) -> list[SSEEvent]:
    """The events of `body` in order; their `raw` bytes concatenate to exactly `body`.

    Leading blank lines are kept with the event that follows them, so no byte is orphaned.
    """
    events: list[SSEEvent] = []
    start = 0
    seen_content = False
    for line in lines(body):
        blank = not line.content and bool(line.ending)
        if blank and seen_content:
            events.append(_event(body, start, line.end, complete=True))
            start, seen_content = line.end, False
        elif not blank:
            seen_content = True
    if start < len(body):
        events.append(_event(body, start, len(body), complete=False))
    return events
