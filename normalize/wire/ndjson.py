"""The JSON-lines framing (NDJSON): one JSON value per line, as Ollama's native API streams.

Frames are the raw ``bytes`` of each line, ready for ``jiter.from_json``. Lines end in LF, CRLF or a
lone CR (a CRLF split across two reads is still one line ending) — as httpx splits lines — but
never at U+2028, U+2029 or NEL, which httpx also splits on and which may stand unescaped inside a
JSON string. Blank and whitespace-only lines carry nothing and are skipped; one UTF-8 byte order mark
at the start of the body is dropped. A body whose last line has no line ending still yields that line
at :meth:`NDJSONDecoder.flush` (servers do drop the final newline; a line cut in half then fails to
parse, which the kit reports as a truncated stream). Every line is bounded by ``max_frame_bytes`` as
it arrives, so one endless line is refused before it is buffered further.
"""

from __future__ import annotations

import re
from typing import Final

from normalize.wire.base import DEFAULT_MAX_FRAME_BYTES, NDJSON_TYPES, FrameSpan, FrameTooLarge, Framing

__all__ = ["NDJSON", "NDJSONDecoder", "NDJSONFraming"]

_BOM: Final = b"\xef\xbb\xbf"
_LINE: Final = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_BLANK: Final = b" \t\r\f\v"


class NDJSONDecoder:
    """Incremental JSON-lines framer: :meth:`feed` each chunk, :meth:`flush` at the end."""

    __slots__ = ("_cr", "_head", "_max", "_partial")

    def __init__(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if max_frame_bytes < 1:
            raise ValueError(f"max_frame_bytes must be positive, got {max_frame_bytes}")
        self._max = max_frame_bytes
        # The start of the body, held while it could still be a byte order mark; None once decided.
        self._head: bytes | None = b""
        # The previous read ended in CR: a LF opening the next one is the rest of that line ending.
        self._cr = False
        # The start of the current line, which has not ended yet.
        self._partial = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` completed (without their line endings), in order."""
        if type(chunk) is not bytes:
            chunk = bytes(chunk)
        if self._head is not None:
            chunk = self._head + chunk
            if len(chunk) < 3 and _BOM.startswith(chunk):
                self._head = chunk
                return []
            self._head = None
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        if self._cr and chunk:
            self._cr = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
        if 13 in chunk:  # b"\r": the rare server that ends lines in CR or CRLF
            self._cr = chunk[-1] == 0x0D
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        pieces = chunk.split(b"\n")
        tail = pieces.pop()
        out: list[bytes] = []
        if pieces:
            if self._partial:
                self._partial += pieces[0]
                pieces[0] = bytes(self._partial)
                self._partial = bytearray()
            limit = self._max
            check = len(pieces[0]) > limit or len(chunk) > limit
            for line in pieces:
                if check and len(line) > limit:
                    raise self._too_large(len(line), out)
                if line.strip(_BLANK):
                    out.append(line)
        if tail:
            pending = len(self._partial) + len(tail)
            if pending > self._max:
                raise self._too_large(pending, out)
            self._partial += tail
        return out

    @property
    def max_frame_bytes(self) -> int:
        """The longest line this framer takes."""
        return self._max

    def lone(self, chunk: bytes, event: str) -> bytes | None:
        """The line ``chunk`` holds when it is exactly one line, ended by one LF, and the framer holds
        nothing: then feeding it would give that one line and leave the framer as it is, so a caller
        that only needs the line may skip :meth:`feed`. None otherwise (feed it): the body's start (a
        byte order mark may come), a CR anywhere (the line endings of CR and CRLF servers), a blank
        line, a line over ``max_frame_bytes``, a partial line held, anything that is not ``bytes``.
        ``event`` is not read (a line has no name; the argument keeps the SSE framer's signature)."""
        del event
        if self._head is not None or self._cr or self._partial or chunk.__class__ is not bytes:
            return None
        if (
            chunk[-1:] != b"\n"
            or len(chunk) > self._max
            or 13 in chunk  # b"\r"
            or chunk.count(b"\n") != 1
        ):
            return None
        line = chunk[:-1]
        return line if line.strip(_BLANK) else None

    def lone_parts(self, chunk: bytes, line: bytes) -> tuple[bytes, bytes]:
        """For a ``chunk`` that :meth:`lone` took, returning ``line``: what lies before it (nothing) and
        after it (its LF). The promise a caller may build on, as ``SSEDecoder.lone_parts``'s: a chunk
        of those same two around another line holding no CR and no LF and not blank, no longer than
        ``max_frame_bytes``, given to a framer that :meth:`lone` took a chunk from and that was fed
        nothing since, is one line that :meth:`lone` would take and return."""
        return chunk[: len(chunk) - len(line) - 1], chunk[-1:]

    def flush(self) -> list[bytes]:
        """End of body: the last line when it had no line ending. The framer is then ready for a new body."""
        line = bytes(self._partial)
        if self._head:
            line = self._head + line
        self._partial = bytearray()
        self._head = b""
        self._cr = False
        line = line.removeprefix(_BOM)
        return [line] if line.strip(_BLANK) else []

    def _too_large(self, size: int, out: list[bytes]) -> FrameTooLarge:
        self._partial = bytearray()
        return FrameTooLarge(
            f"JSON line exceeds max_frame_bytes={self._max}: {size} bytes without a line ending",
            limit=self._max,
            size=size,
            frames=out,
        )


class NDJSONFraming(Framing[bytes]):
    """JSON lines (``application/x-ndjson``): frames are each line's raw bytes."""

    name = "ndjson"
    unit = "line"
    media_types = NDJSON_TYPES

    def framer(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> NDJSONDecoder:
        """A new :class:`NDJSONDecoder`."""
        return NDJSONDecoder(max_frame_bytes=max_frame_bytes)

    def spans(self, body: bytes) -> list[FrameSpan]:
        """One span per line (its line ending included); blank lines stay with the line that follows."""
        found: list[FrameSpan] = []
        start = 0
        for match in _LINE.finditer(body):
            content = match.group().rstrip(b"\r\n")
            if not content.strip(_BLANK):
                continue
            complete = match.group().endswith((b"\n", b"\r"))
            raw = body[start : match.end()]
            found.append(FrameSpan(start, match.end(), raw, None, content.strip(_BLANK), complete))
            start = match.end()
        if start < len(body):  # trailing blank lines: part of no frame, kept with the last one
            if found:
                last = found[-1]
                found[-1] = FrameSpan(last.start, len(body), body[last.start :], None, last.payload, last.complete)
            else:
                found.append(FrameSpan(0, len(body), body, None, None, True))
        return found

    def rewrite(self, span: FrameSpan, payload: bytes) -> bytes:
        """The line with its JSON replaced by ``payload`` (newlines in it escaped away: one line stays one
        line), keeping the blank lines before it and its own line ending."""
        raw = span.raw
        if span.payload is None:
            return raw
        at = raw.index(span.payload)
        return raw[:at] + payload.replace(b"\r", b"").replace(b"\n", b" ") + raw[at + len(span.payload) :]


#: The JSON-lines framing.
NDJSON: Final = NDJSONFraming()
