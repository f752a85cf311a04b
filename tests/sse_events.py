"""Server-sent events of a recorded body, as tests read them: the SSE framing's spans with the
event name, the data as text and a JSON view."""

from __future__ import annotations

from dataclasses import dataclass

from cassettes.canonical import NOT_JSON, NotJSON, parse_json
from cassettes.model import JSONValue
from normalize.wire import SSE, FrameSpan

__all__ = ["SSEEvent", "split_events"]


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One event of a body: its span, ``event`` field, ``data`` (text; None without a data line)."""

    span: FrameSpan

    @property
    def start(self) -> int:
        return self.span.start

    @property
    def end(self) -> int:
        return self.span.end

    @property
    def raw(self) -> bytes:
        return self.span.raw

    @property
    def complete(self) -> bool:
        return self.span.complete

    @property
    def event(self) -> str | None:
        return self.span.name

    @property
    def data(self) -> str | None:
        payload = self.span.payload
        return None if payload is None else payload.decode("utf-8", "replace")

    def json(self) -> JSONValue | NotJSON:
        payload = self.span.payload
        return NOT_JSON if payload is None else parse_json(payload)


def split_events(body: bytes) -> list[SSEEvent]:
    """The events of ``body``; their raw bytes join to exactly ``body``."""
    return [SSEEvent(span) for span in SSE.spans(body)]
