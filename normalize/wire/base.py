"""What every framing provides: an incremental framer for the kit, a lossless splitter for the cassettes.

A *framing* is how a streaming response cuts its body into frames: server-sent events, JSON lines,
AWS event-stream messages. Each one gives two views of the same bytes:

* :meth:`Framing.framer` — an incremental :class:`Framer` for the hot path: ``feed(chunk)`` with chunk
  boundaries anywhere returns the frames the chunk completed, ``flush()`` at the end of the body returns
  what is left. A frame carries its payload and the framing's own metadata (an SSE event name, the
  headers of an event-stream message). Every frame is bounded by ``max_frame_bytes``; bytes that cannot
  be framed raise :class:`FramingError` (kind ``protocol``), a body that ends inside a frame the framing
  cannot complete raises it with kind ``truncated``.
* :meth:`Framing.spans` — every frame of a whole body with its exact byte span, for tools that edit a
  recording (the cassette mutations, ``cassettes show``): joining the spans gives the body back, and
  :meth:`Framing.rewrite` re-encodes one frame around a new payload (recomputing whatever the framing
  checks, such as the event stream's CRCs), keeping every other byte.

Nothing here imports the rest of the project: the kit and the cassettes both build on it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, Literal, Protocol, TypeVar

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "EVENTSTREAM_TYPES",
    "NDJSON_TYPES",
    "SSE_TYPES",
    "FrameSpan",
    "FrameTooLarge",
    "Framer",
    "Framing",
    "FramingError",
    "FramingKind",
    "media_type",
]

DEFAULT_MAX_FRAME_BYTES: Final = 16 * 1024 * 1024
"""Default bound on one frame's size (16 MiB)."""

#: The media types of the built-in framings: a stream of one is never read as another.
SSE_TYPES: Final = ("text/event-stream",)
NDJSON_TYPES: Final = (
    "application/x-ndjson",
    "application/ndjson",
    "application/jsonl",
    "application/json-lines",
    "application/x-json-stream",
    "application/stream+json",
)
EVENTSTREAM_TYPES: Final = ("application/vnd.amazon.eventstream",)
_STREAM_TYPES: Final = frozenset((*SSE_TYPES, *NDJSON_TYPES, *EVENTSTREAM_TYPES))

FrameT = TypeVar("FrameT")
FrameT_co = TypeVar("FrameT_co", covariant=True)

#: How a framing failure ends a stream: bytes that are not in the framing, or a body cut inside a frame.
FramingKind = Literal["protocol", "truncated"]


class FramingError(ValueError):
    """The bytes cannot be framed.

    ``kind`` is ``protocol`` for bytes that break the framing (a bad checksum, an impossible length, a
    frame over the size limit) and ``truncated`` for a body that ended inside a frame the framing cannot
    complete. ``frames`` holds the frames the same ``feed``/``flush`` call completed before the failure,
    which would otherwise be lost with the exception. The framer drops its buffered state when it
    raises; treat the stream as broken.
    """

    def __init__(self, message: str, *, kind: FramingKind = "protocol", frames: Sequence[object] = ()) -> None:
        super().__init__(message)
        self.kind: FramingKind = kind
        self.frames: list[object] = list(frames)

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only arguments: pickle (multiprocessing, a test runner's workers) rebuilds it this way.
        return (_rebuild, (type(self), str(self), self.__dict__))


class FrameTooLarge(FramingError):
    """A frame grew past ``max_frame_bytes`` before it was complete (kind ``protocol``)."""

    def __init__(self, message: str, *, limit: int, size: int, frames: Sequence[object] = ()) -> None:
        super().__init__(message, frames=frames)
        self.limit = limit
        self.size = size


def _rebuild(cls: type[FramingError], message: str, state: dict[str, Any]) -> FramingError:
    error = FramingError.__new__(cls)
    ValueError.__init__(error, message)
    error.__dict__.update(state)
    return error


class Framer(Protocol[FrameT_co]):
    """Turns a body into frames incrementally (one instance per response)."""

    def feed(self, chunk: bytes, /) -> Sequence[FrameT_co]:
        """The frames ``chunk`` completed, in order; raises :class:`FramingError`."""
        ...

    def flush(self) -> Sequence[FrameT_co]:
        """End of body: what is left, as frames; raises :class:`FramingError` (``truncated`` for a cut frame)."""
        ...


@dataclass(frozen=True, slots=True)
class FrameSpan:
    """One frame of a recorded body: its bytes ``body[start:end]`` and what it says.

    ``name`` is what the frame calls itself — an SSE ``event:`` field (None when the event has none), an
    event-stream message's ``:event-type`` (``:exception-type`` for an exception) — or None. ``payload``
    is the frame's payload bytes (an SSE event's joined data lines, one JSON line, a message payload), or
    None when it carries none (a block of SSE comments). ``complete`` is False for a last frame the body
    ends inside of.
    """

    start: int
    end: int
    raw: bytes
    name: str | None
    payload: bytes | None
    complete: bool = True


def media_type(content_type: str) -> str:
    """The media type of a ``content-type`` value, lower case, without parameters."""
    return content_type.partition(";")[0].strip().lower()


#: Words of media types that announce a document, not a stream: a 200 carrying one is an error page or
#: an answer to a request that did not ask to stream.
_DOCUMENT_WORDS: Final = ("json", "html", "xml")


class Framing(ABC, Generic[FrameT]):
    """A framing (see the module docstring). Instances are values; the built-in ones are
    :data:`~normalize.wire.SSE`, :data:`~normalize.wire.NDJSON` and
    :data:`~normalize.wire.AWS_EVENTSTREAM`; a third party may subclass this for its own.

    ``name`` identifies it (``sse``), ``unit`` names one frame in messages (``event``, ``line``,
    ``message``), ``media_types`` are the content types it is sent as (the first one is what a replay
    server sends when a recording has none).
    """

    name: str
    unit: str
    media_types: tuple[str, ...]

    @abstractmethod
    def framer(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> Framer[FrameT]:
        """A new incremental framer."""

    @abstractmethod
    def spans(self, body: bytes) -> list[FrameSpan]:
        """Every frame of ``body`` in order; their ``raw`` bytes join to exactly ``body``."""

    @abstractmethod
    def rewrite(self, span: FrameSpan, payload: bytes) -> bytes:
        """The bytes of ``span``'s frame carrying ``payload`` instead, everything else kept as it was
        (its name, headers and line endings), re-encoded so the framing still accepts it."""

    def accepts(self, content_type: str) -> bool:
        """Whether a 2xx response of this ``content-type`` may be read as this framing: one of
        :attr:`media_types`, or anything that announces neither a document nor another stream format
        (missing, ``text/plain``, an unknown type). JSON, HTML and XML documents (any type naming
        them) and the streams of the other built-in framings are refused."""
        kind = media_type(content_type)
        if kind in self.media_types:
            return True
        return kind not in _STREAM_TYPES and not any(word in kind for word in _DOCUMENT_WORDS)

    def __repr__(self) -> str:
        return f"<framing {self.name}>"
