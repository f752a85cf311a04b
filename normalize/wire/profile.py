"""``WireProfile``: what a wire api's bytes look like, declared once, for every tool that handles them.

An adapter declares its profile next to its code (the kit builds it from ``WireApi``); the conformance
harness and the cassette tools read it instead of knowing any api by name:

- ``framing`` — how the body is cut into frames (:data:`~normalize.wire.SSE`, …);
- ``ending`` — how a stream says it is done (:class:`Ending`): the human name of its terminal marker,
  how to take the marker out of a recording (so a mutation can make a body that ends without it), and
  what may follow the marker;
- ``envelope`` — how a payload nests inside a frame (Claude on Bedrock wraps each Anthropic event in
  base64 inside an event-stream message): edits open the envelope, change the inner payload and seal
  it again, and the framing recomputes whatever it checks. It is also the declaration the cassette
  recorder's secret scan reads to look inside every payload: an envelope that can tell a payload
  without an inner one from one whose inner payload does not open (:class:`CheckedEnvelope`, as
  :class:`Base64Field` does) lets the recorder refuse the second kind instead of writing it unchecked;
- ``error_body`` / ``stream_error`` — what the vendor's HTTP error response and in-stream error frame
  look like, so injected faults read like the real ones;
- ``recordings`` — the bundled (or the author's) recordings that show text, a tool call, parallel tool
  calls and thinking, by name;
- ``keepalive`` — the names (or JSON ``type``) of frames that only keep the connection alive, which an
  adapter may skip unread (Anthropic's ``ping``): a tool corrupting a payload leaves them alone.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, cast

import jiter

from normalize.wire.base import FrameSpan, Framing
from normalize.wire.sse_framing import SSE

__all__ = [
    "DROP",
    "FEATURES",
    "Base64Field",
    "CheckedEnvelope",
    "Drop",
    "Edit",
    "Ending",
    "Envelope",
    "EnvelopeError",
    "ErrorSample",
    "Feature",
    "FrameView",
    "Strip",
    "WireProfile",
    "generic_error_body",
    "open_checked",
]

#: What a recording shows, for the harness's picks.
Feature = Literal["text", "tool", "parallel", "thinking"]
FEATURES: Final[tuple[Feature, ...]] = ("text", "tool", "parallel", "thinking")

#: A body edit: replace ``body[start:end]`` with the bytes.
Edit = tuple[int, int, bytes]


@dataclass(frozen=True, slots=True)
class FrameView:
    """A frame as an :class:`Ending` sees it: its ``name`` and its ``payload`` (out of its envelope)."""

    name: str | None
    payload: bytes

    def json(self) -> Any:
        """The payload parsed as JSON, or None when it is not JSON."""
        try:
            return jiter.from_json(self.payload)
        except ValueError:
            return None

    def fields(self) -> dict[str, Any]:
        """The payload's JSON object (a fresh copy, free to change), or an empty dict when the payload is
        not a JSON object."""
        value: object = self.json()
        return cast("dict[str, Any]", value) if isinstance(value, dict) else {}

    @property
    def json_type(self) -> str | None:
        """The ``type`` field of the JSON payload (how most vendors name their events), or None."""
        kind = self.fields().get("type")
        return kind if isinstance(kind, str) else None

    def is_named(self, names: frozenset[str]) -> bool:
        """True when the frame's own name or its payload's JSON ``type`` is one of ``names`` (an
        enveloped payload names itself inside: Claude on Bedrock's ``chunk`` frames carry
        ``message_stop``)."""
        return self.name in names or self.json_type in names

    @staticmethod
    def encode(value: object) -> bytes:
        """``value`` as compact JSON: the payload a strip function returns for a rewritten frame."""
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class Drop:
    """The strip result that removes a whole frame (use :data:`DROP`)."""

    _instance: Drop | None = None

    def __new__(cls) -> Drop:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DROP"


#: Remove the frame.
DROP: Final = Drop()

#: Given a frame, what takes its terminal marker out: None (keep it), :data:`DROP`, or a new payload.
Strip = Callable[[FrameView], "Drop | bytes | None"]


@dataclass(frozen=True, slots=True)
class Ending:
    """How a stream says it is done.

    ``marker`` names the terminal marker in messages ("ended before message_stop"). ``strip`` takes the
    marker out of one frame (see :data:`Strip`); None when the api cannot say (then no tool can make a
    body without it, and the harness's check of a missing marker is ``unsupported``). ``after`` says
    what follows the marker: ``nothing`` (it is the last frame: an adapter stops reading there),
    ``trailer`` (more frames belong to the response — Bedrock sends its usage after ``messageStop`` —
    so a body cut between the marker and the end of the trailer is still incomplete), or ``eof`` (the
    marker is a field of the last frame and the end of the body completes the stream, as Gemini's
    ``finishReason``).
    """

    marker: str
    strip: Strip | None = None
    after: Literal["nothing", "trailer", "eof"] = "nothing"

    @classmethod
    def frames(cls, marker: str, *names: str, after: Literal["nothing", "trailer", "eof"] = "nothing") -> Ending:
        """An ending whose marker is a whole frame called one of ``names`` (by the frame's own name, or
        the ``type`` field of its JSON payload: see :meth:`FrameView.is_named`); stripping drops those
        frames (with their envelope)."""
        wanted = frozenset(names or (marker,))

        def strip(frame: FrameView) -> Drop | None:
            return DROP if frame.is_named(wanted) else None

        return cls(marker, strip, after)


class Envelope(Protocol):
    """How a payload nests inside a frame's payload."""

    def open(self, payload: bytes, /) -> bytes | None:
        """The inner payload, or None when this frame carries none (it is then left alone)."""
        ...

    def seal(self, inner: bytes, payload: bytes, /) -> bytes:
        """``payload`` (a frame's payload that :meth:`open` opened) carrying ``inner`` instead."""
        ...


class EnvelopeError(ValueError):
    """A payload says it carries an inner payload that can not be opened (for :class:`Base64Field`: the
    member is there, but is not a string, or not valid base64)."""


class CheckedEnvelope(Envelope, Protocol):
    """An envelope that also tells a payload carrying no inner payload (None) from one whose inner
    payload can not be opened (:class:`EnvelopeError`). Tools that must see every inner payload (the
    cassette recorder's secret scan) refuse the second kind; see :func:`open_checked`."""

    def open_checked(self, payload: bytes, /) -> bytes | None:
        """The inner payload; None when ``payload`` carries none; raises :class:`EnvelopeError` when
        it carries one that does not open."""
        ...


def open_checked(envelope: Envelope, payload: bytes) -> bytes | None:
    """``envelope``'s inner payload of ``payload`` for a tool that must see every one: the envelope's
    own ``open_checked`` when it declares one (raising :class:`EnvelopeError` for an inner payload that
    does not open), else its ``open``, whose None can not tell "none" from "does not open" (the caller
    then checks the payload as it is)."""
    checked = getattr(envelope, "open_checked", None)  # an optional part of the declaration
    if callable(checked):
        result = checked(payload)
        if result is None or isinstance(result, bytes):
            return result
        raise EnvelopeError(f"{type(envelope).__name__}.open_checked returned {type(result).__name__}, not bytes")
    return envelope.open(payload)


@dataclass(frozen=True, slots=True)
class Base64Field:
    """A JSON object whose ``field`` holds the inner payload in base64 (``{"bytes": "eyJ0eXBl…"}``, as
    Bedrock's InvokeModelWithResponseStream sends each chunk); other members are kept when sealing."""

    field: str = "bytes"

    def open(self, payload: bytes, /) -> bytes | None:
        """The decoded field, or None when the payload has no such base64 member."""
        try:
            value: object = jiter.from_json(payload)
        except ValueError:
            return None
        encoded = cast("dict[str, object]", value).get(self.field) if isinstance(value, dict) else None
        if not isinstance(encoded, str):
            return None
        try:
            return base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            return None

    def open_checked(self, payload: bytes, /) -> bytes | None:
        """The decoded field; None when the payload is not a JSON object or has no such member (an
        exception message's ``{"message": …}``: it is then read as it is); :class:`EnvelopeError` when
        the member is there but is not a string of valid base64."""
        try:
            value: object = jiter.from_json(payload)
        except ValueError:
            return None
        if not isinstance(value, dict) or self.field not in value:
            return None
        encoded = cast("dict[str, object]", value)[self.field]
        if not isinstance(encoded, str):
            raise EnvelopeError(f"the {self.field!r} member is {type(encoded).__name__}, not a base64 string")
        try:
            return base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise EnvelopeError(f"the {self.field!r} member is not valid base64 ({exc})") from None

    def seal(self, inner: bytes, payload: bytes, /) -> bytes:
        """The payload with the field re-encoded."""
        value: dict[str, Any] = dict(jiter.from_json(payload))
        value[self.field] = base64.b64encode(inner).decode("ascii")
        return FrameView.encode(value)


@dataclass(frozen=True, slots=True)
class ErrorSample:
    """An HTTP error response: its body, content type and any headers that carry the error."""

    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


def generic_error_body(status: int, message: str) -> ErrorSample:
    """The error body of an api that declares none: ``{"error": {"message", "status"}}``."""
    value = {"error": {"message": message, "status": status}}
    return ErrorSample(json.dumps(value, indent=2).encode("utf-8") + b"\n")


@dataclass(frozen=True, slots=True, kw_only=True)
class WireProfile:
    """One wire api's bytes (see the module docstring). ``api`` is its registry name (``model.api``).

    ``error_body(status, message)`` returns the vendor's HTTP error response carrying ``message``;
    ``stream_error(message)`` returns the raw bytes of one in-stream error frame (None when the api has
    no such frame). ``recordings`` maps a :data:`Feature` to a recording's name; ``keepalive`` names the
    frames that only keep the connection alive. ``recorded_headers`` names the vendor's headers a
    recording keeps beside the generic ones (request ids, rate limits, retry hints): lower-case names,
    or prefixes ending in ``*`` (``("x-amzn-requestid", "x-amzn-bedrock-*")``); a credential is never
    kept, whatever is listed.
    """

    api: str
    framing: Framing[Any] = SSE
    ending: Ending | None = None
    envelope: Envelope | None = None
    error_body: Callable[[int, str], ErrorSample] | None = None
    stream_error: Callable[[str], bytes] | None = None
    recordings: Mapping[Feature, str] = field(default_factory=dict[Feature, str])
    keepalive: frozenset[str] = frozenset()
    recorded_headers: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"WireProfile({self.api!r}, framing={self.framing.name})"

    # -- reading and editing a recorded body ------------------------------------------------------------

    def frames(self, body: bytes) -> list[tuple[FrameSpan, bytes | None]]:
        """Every frame of ``body`` with its payload out of the envelope (None: no payload, or an
        envelope this frame does not carry)."""
        found: list[tuple[FrameSpan, bytes | None]] = []
        for span in self.framing.spans(body):
            payload = span.payload
            if payload is not None and self.envelope is not None:
                payload = self.envelope.open(payload)
            found.append((span, payload))
        return found

    def rewrite(self, span: FrameSpan, inner: bytes) -> Edit:
        """The edit that makes ``span``'s frame carry ``inner`` (sealed in the envelope, re-framed)."""
        payload = inner
        if self.envelope is not None and span.payload is not None:
            payload = self.envelope.seal(inner, span.payload)
        return span.start, span.end, self.framing.rewrite(span, payload)

    def terminal_edits(self, body: bytes) -> list[Edit]:
        """The edits that take the terminal marker out of ``body`` (empty when it has none, or when the
        ending declares no way to strip it)."""
        strip = self.ending.strip if self.ending is not None else None
        if strip is None:
            return []
        edits: list[Edit] = []
        for span, payload in self.frames(body):
            if payload is None:
                continue
            result = strip(FrameView(span.name, payload))
            if result is None:
                continue
            if isinstance(result, Drop):
                edits.append((span.start, span.end, b""))
            else:
                edits.append(self.rewrite(span, result))
        return edits

    def error_response(self, status: int, message: str) -> ErrorSample:
        """The vendor's error response for ``status`` (a generic JSON one when the api declares none)."""
        return (self.error_body or generic_error_body)(status, message)
