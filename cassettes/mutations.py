"""Fault injection: pure functions that derive a faulty cassette from a good one.

Every function takes a `Cassette` and returns a new one; the input is never modified. By
default a mutation applies to every interaction; pass `interaction=i` to target one.

Body edits work at the frame level where they must (`drop_terminal`, `corrupt_json`), through the
api's wire profile (:class:`normalize.wire.WireProfile`: its framing, its ending, its payload
envelope), so they serve server-sent events, JSON lines and AWS event streams alike: untouched frames
keep their exact bytes and the chunk boundaries around them stay where they were. No api is known
here by name: the profile is the adapter's declaration, found by api name through
:func:`normalize.wire.profile_for`.
"""

from __future__ import annotations

import bisect
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from http import HTTPStatus
from typing import Literal

import jiter

from cassettes.errors import CassetteError
from cassettes.model import Cassette, Chunk, End, EndKind, RecordedResponse, header_value
from normalize.wire import (
    SSE,
    Edit,
    ErrorSample,
    FrameSpan,
    WireProfile,
    framing_for,
    generic_error_body,
    profile_for,
)

__all__ = [
    "corrupt_json",
    "drop_terminal",
    "empty_body",
    "error_body",
    "injected_message",
    "json_payload_frames",
    "rechunk",
    "resolve_profile",
    "stall",
    "status_override",
    "stream_error",
    "truncate",
]


def _each(
    cassette: Cassette, interaction: int | None, change: Callable[[RecordedResponse], RecordedResponse]
) -> Cassette:
    if interaction is not None and not -len(cassette.interactions) <= interaction < len(cassette.interactions):
        raise CassetteError(f"interaction {interaction} does not exist ({len(cassette.interactions)} recorded)")
    chosen = None if interaction is None else interaction % len(cassette.interactions)
    return replace(
        cassette,
        interactions=tuple(
            replace(item, response=change(item.response)) if chosen in (None, index) else item
            for index, item in enumerate(cassette.interactions)
        ),
    )


def _starts(chunks: Sequence[Chunk]) -> list[int]:
    starts: list[int] = []
    offset = 0
    for chunk in chunks:
        starts.append(offset)
        offset += len(chunk.data)
    return starts


def _slice(response: RecordedResponse, boundaries: Iterable[int]) -> RecordedResponse:
    """The body re-cut at `boundaries`; each piece arrives when its last byte originally did and
    inherits the stalls of the original chunks that began inside it."""
    chunks = [c for c in response.chunks if c.data]
    body = b"".join(c.data for c in chunks)
    if not body:
        return response  # nothing to re-cut (a 401 without a body, say)
    starts = _starts(chunks)
    cuts = sorted({b for b in boundaries if 0 < b < len(body)})
    pieces: list[Chunk] = []
    for begin, finish in zip([0, *cuts], [*cuts, len(body)], strict=True):
        last = bisect.bisect_right(starts, finish - 1) - 1
        first_inside = bisect.bisect_left(starts, begin)
        stall_s = sum(chunks[i].stall_s for i in range(first_inside, last + 1))
        pieces.append(Chunk(body[begin:finish], chunks[last].t_ms, stall_s))
    return replace(response, chunks=tuple(pieces))


def rechunk(
    cassette: Cassette,
    strategy: int | Literal["random", "split_crlf", "split_utf8"],
    *,
    seed: int = 0,
    max_size: int = 64,
    interaction: int | None = None,
) -> Cassette:
    """Re-cut the body into different chunks; the bytes stay identical (an empty body is returned
    as it is).

    * an int `n`: pieces of `n` bytes (1 = one byte per chunk), ignoring the old boundaries;
    * `"random"`: pieces of 1..`max_size` bytes drawn from `random.Random(seed)`;
    * `"split_crlf"`: the old boundaries plus a cut between every CR and the LF after it;
    * `"split_utf8"`: the old boundaries plus a cut after the lead byte of every multi-byte
      UTF-8 sequence.
    """

    def change(response: RecordedResponse) -> RecordedResponse:
        body = response.body
        existing = _starts(response.chunks)
        if isinstance(strategy, int):
            if strategy < 1:
                raise CassetteError("rechunk size must be at least 1")
            return _slice(response, range(strategy, len(body), strategy))
        if strategy == "random":
            if max_size < 1:
                raise CassetteError("max_size must be at least 1")
            rng = random.Random(seed)
            cuts: list[int] = []
            position = rng.randint(1, max_size)
            while position < len(body):
                cuts.append(position)
                position += rng.randint(1, max_size)
            return _slice(response, cuts)
        if strategy == "split_crlf":
            return _slice(response, [*existing, *(m.start() + 1 for m in re.finditer(rb"\r\n", body))])
        if strategy == "split_utf8":
            leads = (m.start() + 1 for m in re.finditer(rb"[\xc2-\xf4][\x80-\xbf]", body))
            return _slice(response, [*existing, *leads])
        raise CassetteError(f"unknown rechunk strategy {strategy!r}")

    return _each(cassette, interaction, change)


def truncate(
    cassette: Cassette,
    *,
    after_bytes: int | None = None,
    after_chunks: int | None = None,
    end: EndKind = "reset",
    interaction: int | None = None,
) -> Cassette:
    """Keep the first `after_bytes` bytes (cutting a chunk if needed) or the first `after_chunks`
    chunks, then end with `end` (a lost connection by default)."""
    if (after_bytes is None) == (after_chunks is None):
        raise CassetteError("truncate needs exactly one of after_bytes or after_chunks")

    def change(response: RecordedResponse) -> RecordedResponse:
        kept: list[Chunk] = []
        if after_chunks is not None:
            kept = list(response.chunks[: max(after_chunks, 0)])
        else:
            budget = max(after_bytes or 0, 0)
            for chunk in response.chunks:
                if budget <= 0:
                    break
                kept.append(replace(chunk, data=chunk.data[:budget]))
                budget -= len(chunk.data)
        t_ms = kept[-1].t_ms if kept else response.t_ms
        return replace(response, chunks=tuple(kept), end=End(end, t_ms))

    return _each(cassette, interaction, change)


def stall(cassette: Cassette, at_chunk: int, seconds: float, *, interaction: int | None = None) -> Cassette:
    """Go silent for `seconds` before chunk `at_chunk` (or, with `at_chunk == len(chunks)`, before
    the end). Replay sleeps for a stall in every timing mode, so a client read timeout shorter
    than `seconds` fires (`ReplayTransport` raises `httpx.ReadTimeout` after that timeout)."""
    if seconds < 0:
        raise CassetteError("stall seconds must be non-negative")

    def change(response: RecordedResponse) -> RecordedResponse:
        chunks = list(response.chunks)
        if at_chunk == len(chunks):
            return replace(response, end=replace(response.end, stall_s=response.end.stall_s + seconds))
        if not 0 <= at_chunk < len(chunks):
            raise CassetteError(f"stall at chunk {at_chunk}: the body has {len(chunks)} chunks")
        chunks[at_chunk] = replace(chunks[at_chunk], stall_s=chunks[at_chunk].stall_s + seconds)
        return replace(response, chunks=tuple(chunks))

    return _each(cassette, interaction, change)


_GATEWAY_PAGE = (
    "<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n"
    "<h1>Bad Gateway</h1>\n<p>The proxy received an invalid response from the upstream server.</p>\n"
    "</body>\n</html>\n"
)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Overloaded" if status == 529 else "Error"


def injected_message(status: int) -> str:
    """The human message an injected error response for ``status`` carries."""
    return f"{_phrase(status)} (injected by a cassette mutation)"


def resolve_profile(cassette: Cassette, *, api: str | None = None, profile: WireProfile | None = None) -> WireProfile:
    """The wire profile to edit ``cassette`` with: ``profile``, else the one declared for ``api`` (default:
    the cassette's), else a bare profile whose framing is read from the recorded content type (server-sent
    events when it names none): enough to cut and re-chunk, not to know the terminal marker."""
    if profile is not None:
        return profile
    declared = profile_for(api or cassette.api)
    if declared is not None:
        return declared
    content_type = next((header_value(item.response.headers, "content-type") for item in cassette.interactions), None)
    return WireProfile(api=api or cassette.api or "", framing=framing_for(content_type) or SSE)


def error_body(
    status: int, *, api: str | None = None, profile: WireProfile | None = None, message: str | None = None
) -> ErrorSample:
    """An error response for ``status`` shaped like the vendor's, as the api's profile declares it (a
    generic JSON body when no profile is known), carrying ``message`` (default: :func:`injected_message`).
    502 is always an HTML gateway page, as a proxy in front of any vendor would send."""
    if status == 502:
        return ErrorSample(_GATEWAY_PAGE.encode("utf-8"), "text/html; charset=utf-8")
    chosen = profile if profile is not None else profile_for(api)
    text = message if message is not None else injected_message(status)
    return chosen.error_response(status, text) if chosen is not None else generic_error_body(status, text)


def status_override(
    cassette: Cassette,
    status: int,
    *,
    retry_after: str | None = "auto",
    body: bytes | None = None,
    content_type: str | None = None,
    message: str | None = None,
    api: str | None = None,
    profile: WireProfile | None = None,
    interaction: int | None = None,
) -> Cassette:
    """Answer with `status` and an error body instead of the recorded response.

    The response is shaped like the vendor's error for the cassette's api — its body, content type
    and the headers that carry the error (see `error_body`; `profile` overrides the declared one),
    carrying `message` — unless `body`/`content_type` are given. `retry_after="auto"` sends
    `retry-after: 1` with a 429 and nothing otherwise; pass a string to set it, None to omit it.
    """
    sample = error_body(status, api=api or cassette.api, profile=profile, message=message)
    payload = sample.body if body is None else body
    kind = content_type or sample.content_type
    wait = ("1" if status == 429 else None) if retry_after == "auto" else retry_after
    extra = list(sample.headers) if body is None else []

    def change(response: RecordedResponse) -> RecordedResponse:
        headers = [("content-type", kind), *extra]
        if wait is not None:
            headers.append(("retry-after", wait))
        t_ms = response.t_ms
        chunks = (Chunk(payload, t_ms),) if payload else ()
        return RecordedResponse(status, tuple(headers), t_ms, chunks, End("eof", t_ms))

    return _each(cassette, interaction, change)


def empty_body(cassette: Cassette, *, interaction: int | None = None) -> Cassette:
    """Keep the status and headers, send no body bytes at all, end cleanly."""

    def change(response: RecordedResponse) -> RecordedResponse:
        return replace(response, chunks=(), end=End("eof", response.t_ms))

    return _each(cassette, interaction, change)


def _apply_edits(response: RecordedResponse, edits: Sequence[Edit]) -> RecordedResponse:
    """Apply non-overlapping body edits, keeping every other byte in its original chunk.

    An edit's replacement lands in the chunk where its span starts; chunks left empty disappear
    and hand their stall on to the next chunk (or the end). The sorted edits are walked once
    alongside the chunks (linear in chunks + edits after the sort).
    """
    ordered = sorted(edits)
    total = sum(len(c.data) for c in response.chunks)
    chunks: list[Chunk] = []
    offset = 0
    pending_stall = 0.0
    following = 0  # the next edit not yet applied
    covered_to = 0  # where the latest applied edit's span ends (it may run on into later chunks)
    for index, chunk in enumerate(response.chunks):
        start, stop = offset, offset + len(chunk.data)
        offset = stop
        last = index == len(response.chunks) - 1
        parts: list[bytes] = []
        position = min(covered_to, stop) if covered_to > start else start
        while following < len(ordered):
            edit_start, edit_stop, replacement = ordered[following]
            if not (edit_start < stop or (last and edit_start == total)):
                break
            parts.append(chunk.data[position - start : max(edit_start, position) - start])
            parts.append(replacement)
            position = max(position, min(edit_stop, stop))
            covered_to = max(covered_to, edit_stop)
            following += 1
        parts.append(chunk.data[position - start :])
        data = b"".join(parts)
        pending_stall += chunk.stall_s
        if data:
            chunks.append(Chunk(data, chunk.t_ms, pending_stall))
            pending_stall = 0.0
    end = replace(response.end, stall_s=response.end.stall_s + pending_stall)
    return replace(response, chunks=tuple(chunks), end=end)


def drop_terminal(
    cassette: Cassette,
    *,
    api: str | None = None,
    profile: WireProfile | None = None,
    interaction: int | None = None,
) -> Cassette:
    """Take the wire api's end-of-stream marker out, so the body ends without saying it is done.

    How is the api's to say: its :class:`~normalize.wire.Ending` drops the marker frames (Anthropic's
    ``message_stop``) or rewrites the frames that carry it (a chat ``finish_reason`` made null, Gemini's
    ``finishReason`` deleted), inside the payload's envelope where it has one, re-encoding the frame
    (an event-stream message gets new CRCs). The api is ``profile``'s, else ``api``'s (default: the
    cassette's), as declared by its adapter. Raises `CassetteError` when no profile is declared for
    the api, when it declares no way to take its marker out, or when no selected interaction had a
    marker to drop (a no-op would make a fault test vacuous).
    """
    wire = api or cassette.api
    chosen = profile if profile is not None else profile_for(wire)
    if chosen is None:
        raise CassetteError(
            f"drop_terminal does not know the terminal marker of api {wire!r}: no installed adapter declares it"
        )
    if chosen.ending is None or chosen.ending.strip is None:
        raise CassetteError(f"drop_terminal: api {chosen.api!r} declares no way to take out its terminal marker")
    dropped = 0

    def change(response: RecordedResponse) -> RecordedResponse:
        nonlocal dropped
        edits = chosen.terminal_edits(response.body)
        dropped += len(edits)
        return _apply_edits(response, edits)

    result = _each(cassette, interaction, change)
    if not dropped:
        raise CassetteError(f"drop_terminal found no terminal marker for api {chosen.api!r}")
    return result


def json_payload_frames(profile: WireProfile, body: bytes) -> list[tuple[FrameSpan, bytes]]:
    """The frames of ``body`` whose payload (out of its envelope) is a JSON object or array, with it."""
    found: list[tuple[FrameSpan, bytes]] = []
    for span, payload in profile.frames(body):
        if payload is None:
            continue
        try:
            value = jiter.from_json(payload)
        except ValueError:
            continue
        if isinstance(value, dict | list):
            found.append((span, payload))
    return found


def corrupt_json(
    cassette: Cassette,
    index: int = 0,
    *,
    api: str | None = None,
    profile: WireProfile | None = None,
    interaction: int | None = None,
) -> Cassette:
    """Cut the `index`-th JSON payload of the body in half (negative counts from the end), keeping the
    framing intact — the frame is re-encoded around the broken payload, inside its envelope — so that
    one frame's payload is no longer valid JSON. The frames are read with `profile`, else the profile
    declared for the cassette's api, else the framing its content type names (see `resolve_profile`)."""
    chosen = resolve_profile(cassette, api=api, profile=profile)

    def change(response: RecordedResponse) -> RecordedResponse:
        candidates = json_payload_frames(chosen, response.body)
        if not -len(candidates) <= index < len(candidates):
            raise CassetteError(f"corrupt_json: no JSON payload {index} (the body has {len(candidates)})")
        span, payload = candidates[index]
        return _apply_edits(response, [chosen.rewrite(span, payload[: len(payload) // 2])])

    return _each(cassette, interaction, change)


def stream_error(
    cassette: Cassette,
    after: int,
    *,
    message: str | None = None,
    api: str | None = None,
    profile: WireProfile | None = None,
    interaction: int | None = None,
) -> Cassette:
    """Keep the first `after` frames of the body, then send the vendor's in-stream error frame — as the
    api's wire profile declares it (`profile`, else the one declared for the cassette's api) — carrying
    `message` (default: a 503's :func:`injected_message`), and end cleanly: a vendor that fails mid-way
    through a reply. Raises `CassetteError` when the api declares no in-stream error, or the body has
    fewer than `after` frames."""
    if after < 0:
        raise CassetteError("stream-error after= must not be negative")
    chosen = resolve_profile(cassette, api=api, profile=profile)
    if chosen.stream_error is None:
        raise CassetteError(f"stream_error: api {chosen.api!r} declares no in-stream error frame")
    frame = chosen.stream_error(message if message is not None else injected_message(503))

    def change(response: RecordedResponse) -> RecordedResponse:
        spans = chosen.framing.spans(response.body)
        if after > len(spans):
            raise CassetteError(f"stream_error: after={after}, but the body has {len(spans)} frames")
        keep = spans[after - 1].end if after else 0
        return _apply_edits(response, [(keep, len(response.body), frame)])

    return _each(cassette, interaction, change)
