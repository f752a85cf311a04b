"""Taking the secrets out of a recorded cassette so that it still replays.

The recorder never writes a secret: it refuses the recording instead (`cassettes.recorder`). A
cassette that already holds one — written by hand, by another tool, or by a recorder from before its
scan opened payload envelopes — is cleaned with `scrub_secrets`, which returns the cassette with every
secret the scan finds in its responses replaced, the framing kept valid:

* Every spelling the scan knows is found (`cassettes.secret_scan.secret_spans`): raw, re-cased, hex,
  base64 at any alignment, JSON- (`\\u` escapes of any character), URL- and HTML-escaped. An escaped
  echo is replaced whole, escapes and all, by `PLACEHOLDER` (`[REDACTED]`: no quote, backslash or
  percent sign, so a JSON string stays a JSON string); one spelled in hex or base64 inside longer
  encoded text is overwritten by as many `A` characters, so that text still decodes.
* A body read in its api's framing (the wire profile declared for the cassette's api: see
  `normalize.wire.profile_for`) whose payloads the profile declares as enveloped, or that is an AWS
  event stream (binary, its lengths and CRCs checked), is scrubbed frame by frame. An enveloped
  payload (Claude on Bedrock's base64 `{"bytes": …}`) is opened, scrubbed inside and sealed again;
  the framing then re-encodes the frame (`Framing.rewrite`: an event-stream message gets its lengths
  and both CRCs recomputed), and an event-stream message's string and byte-array header values are
  scrubbed as well. A frame in which nothing is found keeps its exact bytes. Any other body (server-sent
  events, JSON lines, an error document) is text: each echo is replaced where it lies. Every chunk
  keeps its time; replaced bytes land in the chunk the last byte they replace was in.
* Fail closed: a frame the framing does not read, or whose envelope does not open, can not be
  scrubbed (`CassetteError`). The bytes of a cut last frame have no whole payload to open: any base64
  text in them that holds a secret is overwritten whole. The result is scanned again
  (`cassettes.secret_scan.scan_cassette`, with the same secrets); anything left raises `SecretFound`.

Requests are left as they are: the recorder scrubbed their credentials by name, and a request body
is what a live request is matched against. A secret in one (a prompt quoting a key) is reported by
that final scan. A cassette whose bytes changed is marked in its header (`body: "redacted"`, one of
`cassettes.model.SYNTHETIC_PARTS`): it is no longer exactly what the server sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from cassettes.errors import CassetteError, SecretFound
from cassettes.model import Cassette, Chunk, Headers, RecordedResponse, header_value
from cassettes.secret_scan import SecretSet, read_in_framing, scan_cassette, secret_spans
from normalize.wire import (
    Edit,
    Envelope,
    EnvelopeError,
    EventStreamFraming,
    FrameSpan,
    Framing,
    FramingError,
    HeaderValue,
    WireProfile,
    decode_message,
    encode_message,
    open_checked,
    profile_for,
)

__all__ = ["PLACEHOLDER", "scrub_secrets"]

#: What an echo of a secret is replaced by (bytes of it inside encoded text: `A`s, as many as they were).
PLACEHOLDER: Final = "[REDACTED]"
_PLACEHOLDER = PLACEHOLDER.encode("ascii")
# A replacement can make a new echo only by joining what was around it; a few rounds settle any body.
_ROUNDS = 4
# Spellings that sit inside encoded text (hex, base64): overwritten in kind, so the text still decodes.
_ENCODED_FORMS = ("(hex)", "(base64", "(in base64 text)")


def _edits(data: bytes, secrets: SecretSet, *, base64_text: bool = False) -> list[Edit]:
    """The edits that replace every secret in `data` (overlapping echoes merged into one edit)."""
    merged: list[tuple[int, int, bool]] = []  # (start, end, encoded)
    for kind, start, end in secret_spans(data, secrets, base64_text=base64_text):
        encoded = any(form in kind for form in _ENCODED_FORMS)
        if merged and start < merged[-1][1]:
            first, last, was_encoded = merged[-1]
            merged[-1] = (first, max(last, end), was_encoded and encoded)
        else:
            merged.append((start, end, encoded))
    return [(start, end, b"A" * (end - start) if encoded else _PLACEHOLDER) for start, end, encoded in merged]


def _applied(data: bytes, edits: Sequence[Edit]) -> bytes:
    parts: list[bytes] = []
    at = 0
    for start, end, replacement in sorted(edits):
        parts += [data[at:start], replacement]
        at = end
    return b"".join([*parts, data[at:]])


def _unsettled() -> CassetteError:
    return CassetteError("a body could not be scrubbed: replacing its secrets kept making new ones")


def _scrubbed(data: bytes, secrets: SecretSet, *, base64_text: bool = False) -> bytes:
    """`data` with every secret replaced; `CassetteError` when replacing keeps making new echoes."""
    for _ in range(_ROUNDS):
        edits = _edits(data, secrets, base64_text=base64_text)
        if not edits:
            return data
        data = _applied(data, edits)
    raise _unsettled()


def _header_value(value: HeaderValue, secrets: SecretSet) -> HeaderValue:
    if isinstance(value, str):
        return _scrubbed(value.encode("utf-8"), secrets).decode("utf-8")
    if isinstance(value, bytes):
        return _scrubbed(value, secrets)
    return value  # a number, a flag, a time or a UUID holds no text


def _scrubbed_message(frame: bytes, secrets: SecretSet) -> bytes:
    """An event-stream message with its string and byte-array header values scrubbed (re-encoded, CRCs
    recomputed, only when one changed)."""
    message = decode_message(frame)
    headers = {name: _header_value(value, secrets) for name, value in message.headers.items()}
    if headers == dict(message.headers):
        return frame
    return encode_message(headers, message.payload)


def _payload(span: FrameSpan, payload: bytes, envelope: Envelope | None, secrets: SecretSet) -> bytes:
    """A complete frame's payload with every secret taken out, inside its envelope too."""
    try:
        inner = open_checked(envelope, payload) if envelope is not None else None
    except EnvelopeError:
        raise CassetteError(
            f"can not scrub the frame at body offset {span.start}: its envelope does not open"
        ) from None
    changed = payload
    if envelope is not None and inner is not None:
        clean = _scrubbed(inner, secrets)
        if clean != inner:
            changed = envelope.seal(clean, payload)
    # A payload the envelope left closed may still hide a secret in base64 text: the scan looks there.
    return _scrubbed(changed, secrets, base64_text=envelope is not None and inner is None)


def _frame(span: FrameSpan, framing: Framing[Any], envelope: Envelope | None, secrets: SecretSet) -> bytes:
    """The bytes of one frame with every secret taken out of it (see the module docstring)."""
    if not span.complete:
        return _scrubbed(span.raw, secrets, base64_text=True)  # a cut frame: nothing to re-encode
    frame = span.raw
    if span.payload is not None:
        changed = _payload(span, span.payload, envelope, secrets)
        if changed != span.payload:
            frame = framing.rewrite(span, changed)
    if isinstance(framing, EventStreamFraming):
        return _scrubbed_message(frame, secrets)
    return _scrubbed(frame, secrets)  # a text framing: what is outside the payload, as it is


def _framed_edits(body: bytes, framing: Framing[Any], envelope: Envelope | None, secrets: SecretSet) -> list[Edit]:
    try:
        framing.framer().feed(body)
    except FramingError:
        raise CassetteError(f"can not scrub a body that is not {framing.name} throughout") from None
    edits: list[Edit] = []
    for span in framing.spans(body):
        clean = _frame(span, framing, envelope, secrets)
        if clean != span.raw:
            edits.append((span.start, span.end, clean))
    return edits


def _rechunked(response: RecordedResponse, edits: Sequence[Edit]) -> RecordedResponse:
    """`response` with its body edited: every byte outside the edits stays in its chunk; an edit's
    bytes go to the chunk its last replaced byte was in. A chunk left empty hands its stall on."""
    if not edits:
        return response
    ordered = sorted(edits)
    body = _applied(response.body, ordered)

    def moved(offset: int) -> int:
        """Where a chunk that ended at body offset `offset` ends now."""
        shift = 0
        for start, end, replacement in ordered:
            if start >= offset:
                break
            shift += len(replacement) - (end - start)
            if end > offset:  # the chunk ended inside this edit: it now ends after the replacement
                return end + shift
        return offset + shift

    chunks: list[Chunk] = []
    at = ended = 0
    stall = 0.0
    for chunk in response.chunks:
        ended += len(chunk.data)
        until = moved(ended)
        stall += chunk.stall_s
        if until > at:
            chunks.append(Chunk(body[at:until], chunk.t_ms, stall))
            at, stall = until, 0.0
    end = replace(response.end, stall_s=response.end.stall_s + stall)
    return replace(response, chunks=tuple(chunks), end=end)


def _response(response: RecordedResponse, profile: WireProfile | None, secrets: SecretSet) -> RecordedResponse:
    headers: Headers = tuple(
        (name, _scrubbed(value.encode("utf-8", "surrogateescape"), secrets).decode("utf-8", "surrogateescape"))
        for name, value in response.headers
    )
    content_type = header_value(response.headers, "content-type")
    framing = profile.framing if profile is not None else None
    envelope = profile.envelope if profile is not None else None
    if (
        framing is not None
        and (envelope is not None or isinstance(framing, EventStreamFraming))
        and read_in_framing(framing, response.status, content_type)
    ):
        # Payloads to open, or a binary framing whose lengths and CRCs must be recomputed: frame by frame.
        response = _rechunked(response, _framed_edits(response.body, framing, envelope, secrets))
    else:
        for _ in range(_ROUNDS):
            edits = _edits(response.body, secrets)
            if not edits:
                break
            response = _rechunked(response, edits)
        else:
            if _edits(response.body, secrets):
                raise _unsettled()
    return replace(response, headers=headers)


def scrub_secrets(
    cassette: Cassette,
    secrets: SecretSet | None = None,
    *,
    env: Mapping[str, str] | None = None,
    profile: WireProfile | None = None,
) -> Cassette:
    """`cassette` with every secret in its responses replaced (see the module docstring).

    `secrets` are the values to take out besides the key shapes (default: the credential-like
    environment, `env`, default `os.environ`); `profile` is the wire profile to read the bodies with
    (default: the one declared for the cassette's api). Raises `CassetteError` for a body that can not
    be scrubbed (a frame that does not read, an envelope that does not open), and `SecretFound` when the
    scrubbed cassette still holds a secret (in a request). The input is not changed.
    """
    chosen = secrets if secrets is not None else SecretSet.from_env(env)
    wire = profile if profile is not None else profile_for(cassette.api)
    interactions = tuple(
        replace(item, response=_response(item.response, wire, chosen)) for item in cassette.interactions
    )
    result = replace(cassette, interactions=interactions)
    if interactions != cassette.interactions:
        result = replace(result, extra={**cassette.extra, "body": "redacted"})
    findings = scan_cassette(result, secrets=chosen)
    if findings:
        raise SecretFound(findings)
    return result
