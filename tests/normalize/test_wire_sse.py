"""The bytes-level SSE framer: differential against httpx-sse on real vendor bodies, a
property test on generated streams, and one focused test per framing edge case."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterable
from functools import cache
from itertools import pairwise

import httpx
import httpx_sse
import jiter
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cassettes import library
from normalize.wire.sse import (
    DEFAULT_MAX_EVENT_BYTES,
    ServerSentEvent,
    SSEDecoder,
    SSEEventTooLarge,
)

pytestmark = pytest.mark.parallel

# (event, data as text, id with None shown as "", retry): the shape httpx-sse can express.
Key = tuple[str, str, str, int | None]


# Real recorded vendor bodies.  They live in the workspace's shared folder next to the
# repository for now; the vendor folders and errors/*.sse are taken, every file.
def _library_bodies() -> dict[str, bytes]:
    """Every bundled recording whose body is an event stream (the real vendor bytes)."""
    bodies: dict[str, bytes] = {}
    for name in library.names():
        response = library.load(name).interactions[0].response
        content_type = next((value for key, value in response.headers if key == "content-type"), "")
        if response.status == 200 and "event-stream" in content_type:
            bodies[name] = response.body
    return bodies


_REAL = _library_bodies()
_REAL_PARAMS = [pytest.param(name, id=name) for name in sorted(_REAL)]


def _key(event: ServerSentEvent) -> Key:
    return (event.event, event.text, "" if event.id is None else event.id, event.retry)


def _decode(chunks: Iterable[bytes], *, flush: bool = True, **kwargs: int) -> list[ServerSentEvent]:
    decoder = SSEDecoder(**kwargs)
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    if flush:
        events += decoder.flush()
    return events


def _keys(chunks: Iterable[bytes], *, flush: bool = True) -> list[Key]:
    return [_key(event) for event in _decode(chunks, flush=flush)]


def _httpx_sse(body: bytes) -> list[Key]:
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    return [(sse.event, sse.data, sse.id, sse.retry) for sse in httpx_sse.EventSource(response).iter_sse()]


def _bytewise(body: bytes) -> list[bytes]:
    return [body[i : i + 1] for i in range(len(body))]


def _random_chunks(body: bytes, seed: int) -> list[bytes]:
    """Split at random points, mixing tiny pieces (inside line endings and UTF-8) with big ones."""
    rng = random.Random(seed)
    chunks: list[bytes] = []
    i = 0
    while i < len(body):
        size = rng.choice((1, 1, 2, 3, 5, 8, 13, 64, 300, 4096))
        chunks.append(body[i : i + size])
        i += size
    return chunks


def _at(body: bytes, *cuts: int) -> list[bytes]:
    return [body[a:b] for a, b in pairwise([0, *cuts, len(body)])]


def _ev(data: str, event: str = "message", id: str | None = None, retry: int | None = None) -> ServerSentEvent:
    return ServerSentEvent(event=event, data=data.encode(), id=id, retry=retry)


# --------------------------------------------------------------------------------------
# (1) Differential: every real body, against httpx-sse.


@cache
def _reference(name: str, ending: str) -> tuple[bytes, list[Key], list[Key]]:
    """The body with the given line endings, and httpx-sse's events for it.

    httpx-sse follows the spec at end of stream and drops an event that no blank
    line terminated, while our ``flush()`` dispatches it: so the reference for
    "with flush" is httpx-sse on the body plus a blank line, and the reference for
    "without flush" is httpx-sse on the body as is.
    """
    body = _REAL[name]
    if ending != "recorded":
        lf = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        body = {"lf": lf, "crlf": lf.replace(b"\n", b"\r\n"), "cr": lf.replace(b"\n", b"\r")}[ending]
    return body, _httpx_sse(body + b"\n\n"), _httpx_sse(body)


@pytest.mark.parametrize("name", _REAL_PARAMS)
def test_real_stream_matches_httpx_sse(name: str) -> None:
    """Whole, byte by byte and randomly split, with and without the final flush, and with every
    line ending: the same events as httpx-sse."""
    body, expected, expected_unflushed = _reference(name, "recorded")
    assert expected, "every recorded body holds events"
    for chunks in [[body], _bytewise(body), *(_random_chunks(body, seed) for seed in range(6))]:
        assert _keys(chunks) == expected
        assert _keys(chunks, flush=False) == expected_unflushed
    for ending in ("lf", "crlf", "cr"):
        body, expected, _ = _reference(name, ending)
        assert _keys([body]) == expected, ending
        for seed in range(3):
            assert _keys(_random_chunks(body, seed)) == expected, (ending, seed)


def test_real_streams_cover_the_awkward_framings() -> None:
    """The real bodies do exercise what the differential test claims to cover."""
    bodies = list(_REAL.values())
    assert len(bodies) > 130
    assert any(b"\r\n\r\n" in body for body in bodies), "Gemini CRLF framing"
    assert any(b": OPENROUTER PROCESSING" in body for body in bodies), "OpenRouter comments"
    assert any(b"      }" in body for body in bodies), "Anthropic padding"
    assert any(not body.endswith((b"\n\n", b"\r\n\r\n")) for body in bodies), "unterminated final event"


@pytest.mark.parametrize("api", ["anthropic-messages", "openai-responses", "google-generative-ai"])
def test_real_stream_data_feeds_jiter(api: str) -> None:
    """``data`` is the raw JSON bytes: jiter parses them to what json.loads makes of the text."""
    names = [name for name in library.names(api) if name in _REAL]
    assert names
    for name in names:
        for event in _decode([_REAL[name]]):
            try:
                expected = json.loads(event.text)
            except json.JSONDecodeError:
                continue  # e.g. a body truncated mid-JSON on purpose
            assert jiter.from_json(event.data) == expected


# --------------------------------------------------------------------------------------
# (2) Property: generated streams, any line endings, comments and split points.

_TEXT = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12)
# Field values, biased towards the awkward ones: leading spaces and colons.
_VALUE = _TEXT | _TEXT.map(lambda text: " " + text) | st.sampled_from(["", " ", ":", "  x", "a: b", "\ufeff"])
_ID = st.text(st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",)), max_size=8)
_NOISE = st.sampled_from(
    [":", ": keep-alive", ":OPENROUTER PROCESSING", "foo: bar", "Data: x", "data : x", "retry: 1x", "retry:"]
)
Expected = tuple[str, bytes, str | None, int | None]


@st.composite
def _streams(draw: st.DrawFn) -> tuple[bytes, list[Expected], list[Expected]]:
    """A serialized stream, the events it must yield with flush(), and without."""
    lines: list[str] = []
    in_event: list[bool] = []  # per line: part of a block that dispatches an event
    expected: list[Expected] = []
    last_id: str | None = None

    def field(name: str, value: str) -> str:
        style = draw(st.sampled_from(["space", "tight", "bare"]))
        if value.startswith(" ") or (style == "tight" and not value):
            style = "space"
        if style == "bare" and not value:
            return name  # a line without a colon: the whole line is the field name
        return f"{name}: {value}" if style != "tight" else f"{name}:{value}"

    for _ in range(draw(st.integers(0, 5))):
        block: list[str] = []
        is_event = draw(st.integers(0, 3)) > 0
        if not is_event:
            # A block that dispatches nothing; its id still becomes the last event ID.
            block += draw(st.lists(_NOISE, max_size=2))
            if draw(st.booleans()):
                block.append(field("event", draw(_VALUE)))
            if draw(st.booleans()):
                last_id = draw(_ID)
                block.append(field("id", last_id))
        else:
            name = draw(st.none() | _VALUE)
            data = draw(st.lists(_VALUE, min_size=1, max_size=3))
            block = [field("data", value) for value in data]
            extras = draw(st.lists(_NOISE, max_size=2))
            if name is not None:
                extras.append(field("event", name))
            new_id = draw(st.none() | _ID)
            if new_id is not None:
                last_id = new_id
                extras.append(field("id", new_id))
            retry = draw(st.none() | st.integers(0, 2**40))
            if retry is not None:
                extras.append(field("retry", str(retry)))
            for extra in extras:
                block.insert(draw(st.integers(0, len(block))), extra)
            expected.append((name or "message", "\n".join(data).encode(), last_id, retry))
        blanks = 1 + draw(st.integers(0, 2))
        lines += block + [""] * blanks
        in_event += [is_event] * len(block) + [False] * blanks

    unflushed = list(expected)
    ending_missing = False
    if draw(st.booleans()):
        # Leave the stream unterminated: drop its final blank lines, maybe its last line ending.
        while lines and not lines[-1]:
            lines.pop()
        if lines and in_event[len(lines) - 1]:
            unflushed = expected[:-1]  # only flush() can dispatch the last event now
        ending_missing = bool(lines) and draw(st.booleans())

    out: list[str] = ["\ufeff"] if draw(st.booleans()) else []
    previous = ""
    for i, line in enumerate(lines):
        eol = draw(st.sampled_from(["\n", "\r", "\r\n"]))
        if previous == "\r" and not line and eol == "\n":
            eol = "\r\n"  # CR then a lone LF would be read as one CRLF, not two breaks
        if i == len(lines) - 1 and ending_missing:
            eol = ""
        out.append(line + eol)
        previous = eol
    return "".join(out).encode(), expected, unflushed


def _expected_of(events: list[ServerSentEvent]) -> list[Expected]:
    return [(event.event, event.data, event.id, event.retry) for event in events]


@settings(max_examples=400, deadline=None, database=None)
@given(stream=_streams(), cut_seed=st.integers(0, 2**32), cuts=st.integers(0, 40))
def test_generated_streams_decode_to_their_events(
    stream: tuple[bytes, list[Expected], list[Expected]], cut_seed: int, cuts: int
) -> None:
    body, expected, unflushed = stream
    points = sorted(random.Random(cut_seed).choices(range(len(body) + 1), k=cuts))
    for chunks in ([body], _at(body, *points), _bytewise(body)):
        assert _expected_of(_decode(chunks)) == expected
        assert _expected_of(_decode(chunks, flush=False)) == unflushed


@settings(max_examples=200, deadline=None, database=None)
@given(stream=_streams())
def test_generated_streams_agree_with_httpx_sse(stream: tuple[bytes, list[Expected], list[Expected]]) -> None:
    """httpx-sse agrees on every event that carries data.

    It also dispatches blocks without data (and, once an id was seen, every blank
    line) as events with empty data, where WHATWG dispatches nothing; and it does
    not skip a BOM.  Those differences are left out: events with empty data are
    dropped on both sides, and the BOM is removed first.
    """
    body, _, _ = stream
    body = body.removeprefix(b"\xef\xbb\xbf")
    ours = [key for key in _keys([body]) if key[1]]
    theirs = [key for key in _httpx_sse(body + b"\n\n") if key[1]]
    assert ours == theirs


# --------------------------------------------------------------------------------------
# (3) Focused edge cases.


def test_cr_at_chunk_end_then_lf_is_one_line_break() -> None:
    # One CRLF split over two chunks: "a" and "b" are two data lines of one event.
    assert _decode([b"data: a\r", b"\ndata: b\r\n\r\n"]) == [_ev("a\nb")]
    # The same with an empty chunk in between.
    assert _decode([b"data: a\r", b"", b"\ndata: b\r\n\r\n"]) == [_ev("a\nb")]
    # Two CRs are two line breaks, i.e. a blank line: two events.
    assert _decode([b"data: a\r", b"\rdata: b\r\r"]) == [_ev("a"), _ev("b")]
    # A CR that ends the whole stream.
    assert _decode([b"data: a\r"]) == [_ev("a")]


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"])
def test_every_line_ending(eol: bytes) -> None:
    body = eol.join([b"event: e", b"data: 1", b"data: 2", b"", b": c", b"data: 3", b"", b""])
    expected = [_ev("1\n2", event="e"), _ev("3")]
    assert _decode([body]) == expected
    assert _decode(_bytewise(body)) == expected


def test_mixed_line_endings_in_one_stream() -> None:
    assert _decode([b"data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\r"]) == [_ev("a\nb\nc"), _ev("d")]


def test_a_crlf_chunk_is_split_on_crlf_only_when_every_cr_and_lf_pairs_up() -> None:
    # Every line in CRLF (Gemini): split as it is. A lone LF or CR in the same chunk: normalised first.
    assert _decode([b"data: a\r\n\r\ndata: b\r\n\r\n"]) == [_ev("a"), _ev("b")]
    assert _decode([b"data: a\r\n\ndata: b\r\n\r\n"]) == [_ev("a"), _ev("b")]
    assert _decode([b"data: a\r\n\rdata: b\r\n\r\n"]) == [_ev("a"), _ev("b")]
    assert _decode([b"data: a\r\ndata: b\n\r\n"]) == [_ev("a\nb")]
    assert _decode([b"data: a\r\r\n\r\n"]) == [_ev("a")]  # CR, CRLF: two breaks


def test_leading_bom_is_ignored_once() -> None:
    bom = b"\xef\xbb\xbf"
    assert _decode([bom + b"data: x\n\n"]) == [_ev("x")]
    assert _decode(_bytewise(bom + b"data: x\n\n")) == [_ev("x")]
    assert _decode([bom[:2], bom[2:] + b"data: x\n\n"]) == [_ev("x")]
    # Only one BOM, and only at the very start: elsewhere it is part of a field name.
    assert _decode([bom + bom + b"data: x\n\n"]) == []
    assert _decode([b"data: x\n\n" + bom + b"data: y\n\n"]) == [_ev("x")]
    # Bytes that merely start like a BOM are kept.
    assert _decode([b"\xef", b"data: x\n\n"]) == []
    assert _decode([b"\xef\xbb"]) == []


def test_final_event_without_blank_line_is_flushed() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\ndata: b") == [_ev("a")]
    assert decoder.flush() == [_ev("b")]
    assert decoder.flush() == []
    decoder = SSEDecoder()
    assert decoder.feed(b"event: e\ndata: b\n") == []
    assert decoder.flush() == [_ev("b", event="e")]
    # A pending block without data is not an event, at the end either.
    decoder = SSEDecoder()
    assert decoder.feed(b"event: e\nid: 1") == []
    assert decoder.flush() == []


def test_decoder_is_reusable_after_flush() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 7\ndata: a") == []
    assert decoder.flush() == [_ev("a", id="7")]
    assert decoder.feed(b"\xef\xbb\xbfdata: b\n\n") == [_ev("b", id="7")]


def test_multi_line_data_is_joined_with_lf() -> None:
    assert _decode([b"data: a\ndata: b\ndata: c\n\n"]) == [_ev("a\nb\nc")]
    # Empty data lines, spelled three ways, still count as lines.
    assert _decode([b"data\ndata:\ndata: \ndata: x\n\n"]) == [_ev("\n\n\nx")]
    assert _decode([b"data:\n\n"]) == [_ev("")]


def test_exactly_one_leading_space_is_stripped() -> None:
    assert _decode([b"data:x\n\n"]) == [_ev("x")]
    assert _decode([b"data: x\n\n"]) == [_ev("x")]
    assert _decode([b"data:  x \n\n"]) == [_ev(" x ")]
    assert _decode([b"data:\tx\n\n"]) == [_ev("\tx")]
    assert _decode([b"event:  e\ndata: a:b: c\n\n"]) == [_ev("a:b: c", event=" e")]


def test_event_field_and_default_name() -> None:
    assert _decode([b"data: x\n\n"])[0].event == "message"
    assert _decode([b"event:\ndata: x\n\n"])[0].event == "message"
    assert _decode([b"event\ndata: x\n\n"])[0].event == "message"
    assert _decode([b"event:e\ndata: x\n\n"])[0].event == "e"
    assert _decode([b"event: a\nevent: b\ndata: x\n\n"])[0].event == "b"
    # The name does not leak into the next event.
    assert [e.event for e in _decode([b"event: a\ndata: x\n\ndata: y\n\n"])] == ["a", "message"]
    assert _decode(["event: é🙂\ndata: x\n\n".encode()])[0].event == "é🙂"


def test_many_distinct_and_long_event_names() -> None:
    names = [f"name-{i}" for i in range(1500)] + ["n" * 5000]
    body = "".join(f"event: {name}\ndata: {i}\n\n" for i, name in enumerate(names)).encode()
    assert [e.event for e in _decode([body])] == names
    assert [e.event for e in _decode(_random_chunks(body, 0))] == names


def test_comments_and_unknown_fields_are_ignored() -> None:
    assert _decode([b": hello\n\n: OPENROUTER PROCESSING\n\n:\n\n"]) == []
    assert _decode([b": a\ndata: x\n: b\nfoo: bar\nData: y\ndata : z\ndata\xff: w\n\n"]) == [_ev("x")]


def test_comments_only_stream_yields_nothing() -> None:
    body = b": OPENROUTER PROCESSING\n\n" * 50 + b": tail"
    assert _decode([body]) == []
    assert _decode(_bytewise(body)) == []


def test_blocks_without_data_are_not_dispatched() -> None:
    # WHATWG: an empty data buffer at the blank line dispatches nothing.
    assert _decode([b"event: ping\n\n"]) == []
    assert _decode([b"id: 1\n\nretry: 5\n\n\n\n"]) == []
    assert _decode([b"event: a\n\ndata: x\n\n"]) == [_ev("x", id=None)]


def test_httpx_sse_dispatches_dataless_blocks_unlike_whatwg() -> None:
    """Pinned divergence: httpx-sse (0.4.x) dispatches an ``event:``-only block with empty data.

    We follow WHATWG and drop it, which is why the differential tests only compare
    streams without such blocks (no recorded body has one).
    """
    body = b"event: ping\n\ndata: x\n\n"
    assert _httpx_sse(body) == [("ping", "", "", None), ("message", "x", "", None)]
    assert _keys([body]) == [("message", "x", "", None)]


def test_split_inside_a_four_byte_utf8_sequence() -> None:
    body = "event: é\ndata: 🙂 ok 🙂\n\n".encode()
    for cut in range(len(body) + 1):
        events = _decode(_at(body, cut))
        assert events == [ServerSentEvent("é", "🙂 ok 🙂".encode())], cut
        assert events[0].text == "🙂 ok 🙂"
    assert _decode(_bytewise(body))[0].text == "🙂 ok 🙂"


def test_text_replaces_invalid_utf8() -> None:
    (event,) = _decode([b"data: a\xff\xf0\x9f\n\n"])
    assert event.data == b"a\xff\xf0\x9f"
    assert event.text == "a\ufffd\ufffd"


def test_retry_field() -> None:
    assert _decode([b"retry: 3000\ndata: x\n\n"]) == [_ev("x", retry=3000)]
    assert _decode([b"retry:0\ndata: x\n\n"]) == [_ev("x", retry=0)]
    # retry belongs to the block it was sent in.
    assert [e.retry for e in _decode([b"retry: 1\ndata: x\n\ndata: y\n\n"])] == [1, None]


@pytest.mark.parametrize(
    "value", [b"", b"1a", b"-5", b"+5", b" 5", b"5 ", b"1.5", b"1_000", "٣".encode(), b"0x10", b"1" * 5000]
)
def test_retry_that_is_not_all_ascii_digits_is_ignored(value: bytes) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"retry: 7\n\nretry: " + value + b"\ndata: x\n\n") == [_ev("x")]
    assert decoder.reconnection_time == 7


def test_reconnection_time_tracks_retry_in_undispatched_blocks() -> None:
    decoder = SSEDecoder()
    assert decoder.reconnection_time is None
    assert decoder.feed(b"retry: 250\n\n") == []
    assert decoder.reconnection_time == 250


def test_id_persists_and_nul_ids_are_ignored() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"data: a\n\nid: 1\ndata: b\n\ndata: c\n\nid: x\x00y\ndata: d\n\nid\ndata: e\n\n")
    assert [e.id for e in events] == [None, "1", "1", "1", ""]
    assert decoder.last_event_id == ""
    # An id in a block that is not dispatched still becomes the last event ID.
    assert _decode([b"id: 9\n\ndata: a\n\n"]) == [_ev("a", id="9")]
    assert _decode([b"id: \xc3\xa9\ndata: a\n\n"]) == [_ev("a", id="é")]


def test_max_event_bytes_with_newlines() -> None:
    line = b"data: " + b"x" * 94  # 100 bytes
    body = b"\n".join([line] * 11) + b"\n\n"
    with pytest.raises(SSEEventTooLarge) as caught:
        _decode([body], max_event_bytes=1000)
    assert isinstance(caught.value, ValueError)
    assert caught.value.limit == 1000
    assert caught.value.size > 1000
    assert "1000" in str(caught.value)
    # Fed line by line, it fails the same way.
    with pytest.raises(SSEEventTooLarge):
        _decode([line + b"\n" for _ in range(11)], max_event_bytes=1000)
    # Ten lines fit (line endings are not counted), and the count restarts at each event.
    ten = b"\n".join([line] * 10) + b"\n\n"
    assert len(_decode([ten * 5], max_event_bytes=1000)) == 5
    assert len(_decode(_random_chunks(ten * 5, 1), max_event_bytes=1000)) == 5


def test_max_event_bytes_counts_a_line_that_never_ends() -> None:
    limit = 64 * 1024
    decoder = SSEDecoder(max_event_bytes=limit)
    accepted: list[int] = [0]  # bytes the decoder took without complaint

    def feed_forever() -> None:
        decoder.feed(b"data: ")
        accepted[0] = 6
        while accepted[0] < 10 * limit:
            decoder.feed(b"x" * 1024)
            accepted[0] += 1024

    with pytest.raises(SSEEventTooLarge) as caught:
        feed_forever()
    # Refused with the chunk that crossed the limit, not after buffering far past it.
    assert limit - 1024 < accepted[0] <= limit
    assert caught.value.size == accepted[0] + 1024


def test_max_event_bytes_one_huge_chunk_without_newline() -> None:
    with pytest.raises(SSEEventTooLarge):
        SSEDecoder(max_event_bytes=1000).feed(b"data: " + b"x" * 5000)
    with pytest.raises(SSEEventTooLarge):
        SSEDecoder(max_event_bytes=1000).feed(b": " + b"x" * 5000)  # comments count as well


def test_max_event_bytes_boundary_and_events_before_the_error() -> None:
    limit = 100
    fits = b"event: e\ndata: " + b"x" * (limit - len(b"event: edata: ")) + b"\n\n"
    assert len(_decode([fits], max_event_bytes=limit)) == 1
    assert len(_decode(_bytewise(fits), max_event_bytes=limit)) == 1
    too_big = fits.replace(b"data: ", b"data: x")
    for chunks in ([too_big], _bytewise(too_big)):
        with pytest.raises(SSEEventTooLarge):
            _decode(chunks, max_event_bytes=limit)
    # Events completed earlier in the same chunk ride along on the exception.
    with pytest.raises(SSEEventTooLarge) as caught:
        SSEDecoder(max_event_bytes=limit).feed(b"data: a\n\ndata: b\n\n" + too_big)
    assert caught.value.events == [_ev("a"), _ev("b")]
    # One big chunk of many small events is fine: the limit is per event.
    assert len(_decode([b"data: x\n\n" * 1000], max_event_bytes=limit)) == 1000


def test_max_event_bytes_at_flush() -> None:
    decoder = SSEDecoder(max_event_bytes=10)
    assert decoder.feed(b"data: 1234") == []
    assert decoder.flush() == [_ev("1234")]


def test_max_event_bytes_must_be_positive() -> None:
    assert SSEDecoder().max_event_bytes == DEFAULT_MAX_EVENT_BYTES == 16 * 1024 * 1024
    assert SSEDecoder(max_event_bytes=5).max_event_bytes == 5
    with pytest.raises(ValueError, match="max_event_bytes"):
        SSEDecoder(max_event_bytes=0)


def test_blank_lines_between_and_before_events() -> None:
    assert _decode([b"\n\n\ndata: a\n\n\n\n\ndata: b\n\n\n"]) == [_ev("a"), _ev("b")]
    assert _decode([b"data: a\n", b"\n", b"\n", b"data: b\n", b"\n"]) == [_ev("a"), _ev("b")]


def test_empty_and_bytes_like_chunks() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"") == []
    (event,) = decoder.feed(bytearray(b"data: a\n\n"))  # pyright: ignore[reportArgumentType]
    assert type(event.data) is bytes
    (event,) = decoder.feed(memoryview(b"event: e\ndata: b\n\n"))  # pyright: ignore[reportArgumentType]
    assert event == _ev("b", event="e")
    assert type(event.data) is bytes


def test_events_are_plain_dataclass_values() -> None:
    (event,) = _decode([b"event: e\nid: 1\nretry: 5\ndata: x\n\n"])
    (fast,) = _decode([b"event: e\ndata: x\n\n"])
    for decoded in (event, fast):
        assert type(decoded) is ServerSentEvent
    assert event == ServerSentEvent("e", b"x", "1", 5)
    assert fast == ServerSentEvent("e", b"x")
    assert repr(fast) == "ServerSentEvent(event='e', data=b'x', id=None, retry=None)"
    assert dataclasses.asdict(fast) == {"event": "e", "data": b"x", "id": None, "retry": None}
    assert dataclasses.replace(fast, event="f") == ServerSentEvent("f", b"x")


def test_events_of_the_usual_shapes_are_whole_events() -> None:
    """The one- and two-line events the framer makes field by field (not through the class) have
    every field set and equal the events the class makes, with and without a last event id."""
    decoder = SSEDecoder()
    events = decoder.feed(b'data: {"a":1}\n\nevent: delta\ndata: {"b":2}\n\nid: 7\n\ndata: x\n\nevent: e\ndata: y\n\n')
    assert events == [
        ServerSentEvent("message", b'{"a":1}', None, None),
        ServerSentEvent("delta", b'{"b":2}', None, None),
        ServerSentEvent("message", b"x", "7", None),
        ServerSentEvent("e", b"y", "7", None),
    ]
    for event in events:
        # A field the fast path forgot would be an unset slot: reading it raises AttributeError.
        assert [getattr(event, f.name) for f in dataclasses.fields(event)] == [
            getattr(made, f.name)
            for made in [ServerSentEvent(event.event, event.data, event.id, event.retry)]
            for f in dataclasses.fields(made)
        ]
