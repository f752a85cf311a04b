"""Fault injection: pure functions that derive a faulty cassette from a good one.

Every function takes a `Cassette` and returns a new one; the input is never modified. By
default a mutation applies to every interaction; pass `interaction=i` to target one.

Body edits work at the server-sent-event level where they must (`drop_terminal`,
`corrupt_json`): untouched events keep their exact bytes and the chunk boundaries around them
stay where they were.
"""

from __future__ import annotations

import bisect
import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from http import HTTPStatus
from typing import Literal

from cassettes.canonical import NotJSON
from cassettes.errors import CassetteError
from cassettes.model import Cassette, Chunk, End, EndKind, JSONValue, RecordedResponse
from cassettes.sse import SSEEvent, lines, split_events

__all__ = [
    "corrupt_json",
    "drop_terminal",
    "empty_body",
    "error_body",
    "rechunk",
    "stall",
    "status_override",
    "truncate",
]

Edit = tuple[int, int, bytes]  # replace body[start:end] with the bytes


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


_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
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


def error_body(api: str | None, status: int) -> tuple[bytes, str]:
    """(body, content type) of an error response shaped like the vendor's for `api`.

    502 is always an HTML gateway page, as a proxy in front of any vendor would send.
    """
    if status == 502:
        return _GATEWAY_PAGE.encode("utf-8"), "text/html; charset=utf-8"
    message = f"{_phrase(status)} (injected by a cassette mutation)"
    value: JSONValue
    content_type = "application/json"
    if api == "anthropic-messages":
        kind = _ANTHROPIC_TYPES.get(status, "api_error")
        value = {"type": "error", "error": {"type": kind, "message": message}}
    elif api in ("openai-completions", "openai-responses"):
        kind, code = _OPENAI_TYPES.get(status, ("server_error", None))
        value = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    elif api == "google-generative-ai":
        value = {"error": {"code": status, "message": message, "status": _GOOGLE_STATUS.get(status, "UNKNOWN")}}
        content_type = "application/json; charset=UTF-8"
    else:
        value = {"error": {"message": message, "status": status}}
    return json.dumps(value, indent=2).encode("utf-8") + b"\n", content_type


def status_override(
    cassette: Cassette,
    status: int,
    *,
    retry_after: str | None = "auto",
    body: bytes | None = None,
    content_type: str | None = None,
    interaction: int | None = None,
) -> Cassette:
    """Answer with `status` and an error body instead of the recorded response.

    The body is shaped like the vendor's error for the cassette's api (see `error_body`) unless
    `body`/`content_type` are given. `retry_after="auto"` sends `retry-after: 1` with a 429 and
    nothing otherwise; pass a string to set it, None to omit it.
    """
    default_body, default_type = error_body(cassette.api, status)
    payload = default_body if body is None else body
    kind = content_type or default_type
    wait = ("1" if status == 429 else None) if retry_after == "auto" else retry_after

    def change(response: RecordedResponse) -> RecordedResponse:
        headers = [("content-type", kind)]
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


def _rewrite_data(event: SSEEvent, payload: bytes) -> Edit:
    """Replace the event's data line(s) by `data: <payload>` (one line per payload line), keeping
    every other line and the event's own line ending."""
    data_lines = [line for line in lines(event.raw) if line.content.startswith(b"data:")]
    first, final = data_lines[0], data_lines[-1]
    newline = first.ending or b"\n"
    data = b"".join(b"data: " + part + newline for part in payload.split(b"\n"))
    if not final.ending:
        data = data[: -len(newline)]  # the event had no line ending after its data; keep it that way
    return event.start, event.end, event.raw[: first.start] + data + event.raw[final.end :]


def _compact(value: JSONValue) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


_RESPONSES_TERMINALS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def _event_type(event: SSEEvent, value: JSONValue | NotJSON) -> str | None:
    if event.event:
        return event.event
    if isinstance(value, dict):
        kind = value.get("type")
        return kind if isinstance(kind, str) else None
    return None


def _terminal_edits(api: str | None, events: Sequence[SSEEvent]) -> list[Edit]:
    edits: list[Edit] = []
    for event in events:
        value = event.json()
        kind = _event_type(event, value)
        if api == "anthropic-messages":
            if kind == "message_stop":
                edits.append((event.start, event.end, b""))
        elif api == "openai-responses":
            if kind in _RESPONSES_TERMINALS:
                edits.append((event.start, event.end, b""))
        elif api == "openai-completions":
            if event.data is not None and event.data.strip() == "[DONE]":
                edits.append((event.start, event.end, b""))
            elif isinstance(value, dict) and isinstance(choices := value.get("choices"), list):
                finished = [c for c in choices if isinstance(c, dict) and c.get("finish_reason") is not None]
                for choice in finished:
                    choice["finish_reason"] = None
                if finished:
                    edits.append(_rewrite_data(event, _compact(value)))
        elif api == "google-generative-ai":
            if isinstance(value, dict) and isinstance(candidates := value.get("candidates"), list):
                finished = [c for c in candidates if isinstance(c, dict) and "finishReason" in c]
                for candidate in finished:
                    del candidate["finishReason"]
                if finished:
                    edits.append(_rewrite_data(event, _compact(value)))
        else:
            raise CassetteError(f"drop_terminal does not know the terminal marker of api {api!r}")
    return edits


def drop_terminal(cassette: Cassette, *, api: str | None = None, interaction: int | None = None) -> Cassette:
    """Remove the wire API's end-of-stream marker so the body ends without saying it is done.

    anthropic-messages: the `message_stop` event. openai-completions: the `[DONE]` line, and
    every non-null `finish_reason` becomes null. openai-responses: `response.completed`,
    `response.incomplete` and `response.failed` events. google-generative-ai: every
    `finishReason` field. `api` defaults to the cassette's. Raises `CassetteError` when no
    selected interaction had a marker to drop (a no-op would make a fault test vacuous).
    """
    wire = api or cassette.api
    dropped = 0

    def change(response: RecordedResponse) -> RecordedResponse:
        nonlocal dropped
        edits = _terminal_edits(wire, split_events(response.body))
        dropped += len(edits)
        return _apply_edits(response, edits)

    result = _each(cassette, interaction, change)
    if not dropped:
        raise CassetteError(f"drop_terminal found no terminal marker for api {wire!r}")
    return result


def corrupt_json(cassette: Cassette, index: int = 0, *, interaction: int | None = None) -> Cassette:
    """Cut the `index`-th JSON data payload of the body in half (negative counts from the end),
    leaving the SSE framing intact, so that one event's data is no longer valid JSON."""

    def change(response: RecordedResponse) -> RecordedResponse:
        candidates = [e for e in split_events(response.body) if isinstance(e.json(), dict | list)]
        if not -len(candidates) <= index < len(candidates):
            raise CassetteError(f"corrupt_json: no JSON data event {index} (the body has {len(candidates)})")
        event = candidates[index]
        data = (event.data or "").encode("utf-8")
        return _apply_edits(response, [_rewrite_data(event, data[: len(data) // 2])])

    return _each(cassette, interaction, change)
