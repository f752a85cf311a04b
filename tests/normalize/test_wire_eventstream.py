"""The AWS event-stream framer, against botocore's parser on real Bedrock bodies, and on hostile bytes."""

from __future__ import annotations

import random
import struct
import uuid
import zlib
from pathlib import Path

import pytest
from botocore.eventstream import EventStreamBuffer  # pyright: ignore[reportMissingTypeStubs]
from hypothesis import given, settings
from hypothesis import strategies as st

from cassettes import load
from normalize.wire import (
    AWS_EVENTSTREAM,
    EventStreamDecoder,
    EventStreamMessage,
    FrameTooLarge,
    FramingError,
    decode_message,
    encode_message,
)

RECORDINGS = Path(__file__).resolve().parents[1] / "conformance" / "recordings"
BODIES = {path.stem: load(path).interactions[0].response.body for path in sorted(RECORDINGS.glob("*.jsonl"))}


def _frames(body: bytes, sizes: list[int] | None = None) -> list[EventStreamMessage]:
    framer = EventStreamDecoder()
    out: list[EventStreamMessage] = []
    at = 0
    for size in sizes or [len(body)]:
        out.extend(framer.feed(body[at : at + size]))
        at += size
    out.extend(framer.feed(body[at:]))
    return out + framer.flush()


def _botocore(body: bytes) -> list[tuple[dict[str, object], bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(body)  # pyright: ignore[reportUnknownMemberType]
    return [(dict(message.headers), message.payload) for message in buffer]  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType, reportUnknownVariableType]


@pytest.mark.parametrize("name", sorted(BODIES))
def test_real_bedrock_bodies_frame_exactly_as_botocore_parses_them(name: str) -> None:
    body = BODIES[name]
    ours = [(dict(message.headers), message.payload) for message in _frames(body)]
    assert ours == _botocore(body)
    assert len(ours) > 3


@settings(max_examples=60, deadline=None, derandomize=True)
@given(name=st.sampled_from(sorted(BODIES)), seed=st.integers(0, 2**32 - 1))
def test_chunk_boundaries_anywhere_give_the_same_messages(name: str, seed: int) -> None:
    body = BODIES[name]
    rng = random.Random(seed)
    sizes = [rng.randint(1, 40) for _ in range(len(body))]
    assert _frames(body, sizes) == _frames(body)


def test_one_byte_at_a_time_gives_the_same_messages() -> None:
    body = BODIES["converse_tool"]
    assert _frames(body, [1] * len(body)) == _frames(body)


def test_messages_say_what_they_are() -> None:
    first = _frames(BODIES["converse_text"])[0]
    assert (first.message_type, first.event_type, first.name) == ("event", "messageStart", "messageStart")
    exception = decode_message(
        encode_message({":message-type": "exception", ":exception-type": "throttlingException"}, b'{"message":"slow"}')
    )
    assert (exception.message_type, exception.exception_type, exception.name) == (
        "exception",
        "throttlingException",
        "throttlingException",
    )
    error = decode_message(encode_message({":message-type": "error", ":error-code": "E", ":error-message": "m"}, b""))
    assert (error.error_code, error.error_message, error.name) == ("E", "m", "E")


def test_every_header_type_round_trips_through_botocore() -> None:
    headers: dict[str, bool | int | bytes | str | uuid.UUID] = {
        "t": True,
        "f": False,
        "i": -7,
        "l": 2**40,
        "b": b"\x00\xff",
        "s": "héllo",
        "u": uuid.UUID(int=42),
    }
    raw = encode_message(headers, b"payload")
    assert decode_message(raw).headers == headers
    [(theirs, payload)] = _botocore(raw)
    assert payload == b"payload"
    assert theirs["s"] == "héllo"
    assert theirs["l"] == 2**40
    # byte, short and timestamp values, which encode_message never writes, still decode
    extra = b"\x01a\x02\xfe" + b"\x01c\x03\x01\x00" + b"\x02ts\x08" + struct.pack(">q", 1700)
    total = 16 + len(extra)
    prelude = struct.pack(">II", total, len(extra))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + extra
    decoded = decode_message(body + struct.pack(">I", zlib.crc32(body)))
    assert decoded.headers == {"a": -2, "c": 256, "ts": 1700}


def _flip(body: bytes, at: int) -> bytes:
    return body[:at] + bytes([body[at] ^ 0x01]) + body[at + 1 :]


def test_a_bad_prelude_crc_is_a_protocol_error_keeping_the_messages_before_it() -> None:
    body = BODIES["converse_text"]
    spans = AWS_EVENTSTREAM.spans(body)
    broken = _flip(body, spans[2].start + 9)  # inside the third message's prelude CRC
    with pytest.raises(FramingError, match="prelude CRC mismatch") as caught:
        EventStreamDecoder().feed(broken)
    assert caught.value.kind == "protocol"
    assert len(caught.value.frames) == 2


def test_a_bad_message_crc_is_a_protocol_error() -> None:
    body = BODIES["converse_text"]
    spans = AWS_EVENTSTREAM.spans(body)
    broken = _flip(body, spans[1].end - 10)  # inside the second message's payload
    framer = EventStreamDecoder()

    def feed_in_small_reads() -> None:
        for at in range(0, len(broken), 7):
            framer.feed(broken[at : at + 7])

    with pytest.raises(FramingError, match="message CRC mismatch") as caught:
        feed_in_small_reads()
    assert caught.value.kind == "protocol"


@pytest.mark.parametrize(("total", "headers"), [(15, 0), (16, 1), (100, 90)])
def test_an_impossible_length_is_a_protocol_error(total: int, headers: int) -> None:
    prelude = struct.pack(">II", total, headers)
    data = prelude + struct.pack(">I", zlib.crc32(prelude)) + b"\x00" * 200
    with pytest.raises(FramingError, match="impossible length") as caught:
        EventStreamDecoder().feed(data)
    assert caught.value.kind == "protocol"


def test_a_message_over_the_limit_is_refused_from_its_prelude_before_it_is_buffered() -> None:
    prelude = struct.pack(">II", 2**31, 0)
    framer = EventStreamDecoder(max_frame_bytes=1024)
    with pytest.raises(FrameTooLarge) as caught:
        framer.feed(prelude + struct.pack(">I", zlib.crc32(prelude)))
    assert (caught.value.limit, caught.value.size, caught.value.kind) == (1024, 2**31, "protocol")


def test_a_body_that_ends_inside_a_message_is_truncated() -> None:
    body = BODIES["converse_text"]
    framer = EventStreamDecoder()
    frames = framer.feed(body[:-5])
    assert len(frames) == len(AWS_EVENTSTREAM.spans(body)) - 1
    with pytest.raises(FramingError, match="ended inside an event-stream message") as caught:
        framer.flush()
    assert caught.value.kind == "truncated"
    assert framer.flush() == [], "the framer is ready for a new body"


def test_a_json_body_is_not_an_event_stream() -> None:
    with pytest.raises(FramingError, match="prelude CRC mismatch at byte 0") as caught:
        EventStreamDecoder().feed(b'{"message": "The security token included in the request is invalid."}')
    assert (caught.value.kind, caught.value.frames) == ("protocol", [])


def test_spans_are_lossless_and_a_rewrite_keeps_the_headers_and_fixes_both_crcs() -> None:
    body = BODIES["claude_invoke_text"]
    spans = AWS_EVENTSTREAM.spans(body)
    assert b"".join(span.raw for span in spans) == body
    assert all(span.complete and span.name == "chunk" for span in spans)
    rewritten = AWS_EVENTSTREAM.rewrite(spans[1], b'{"bytes":""}')
    message = decode_message(rewritten)
    assert message.payload == b'{"bytes":""}'
    assert rewritten[12 : 12 + 20] == spans[1].raw[12 : 12 + 20], "the header bytes are kept as they were"
    assert _botocore(rewritten)[0][1] == b'{"bytes":""}'
    cut = AWS_EVENTSTREAM.spans(body[:-3])
    assert not cut[-1].complete
    assert cut[-1].payload is None
    assert b"".join(span.raw for span in cut) == body[:-3]


def _raw(headers: bytes, payload: bytes = b"{}") -> bytes:
    """A message with these exact header bytes and both CRCs right."""
    total = 16 + len(headers) + len(payload)
    prelude = struct.pack(">II", total, len(headers))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def _string(name: bytes, value: bytes) -> bytes:
    return bytes([len(name)]) + name + b"\x07" + struct.pack(">H", len(value)) + value


@pytest.mark.parametrize(
    ("headers", "said", "botocore_refuses"),
    [
        (_string(b":message-type", b"event") + _string(b":message-type", b"exception"), "given twice", True),
        (_string(b":event-type", b"\xff\xfe"), "do not parse", True),
        (_string(b"\xc3\x28", b"x"), "do not parse", True),
        (b"\x01a\x0c", "unknown value type", True),
        # botocore reads the short value and goes on; a value that claims more bytes than its
        # headers hold is refused here all the same
        (b"\x01a\x07\x00\x09abc", "runs past the headers", False),
    ],
)
def test_headers_that_do_not_parse_are_a_protocol_error(headers: bytes, said: str, botocore_refuses: bool) -> None:
    with pytest.raises(FramingError, match=said) as caught:
        EventStreamDecoder().feed(_raw(headers))
    assert caught.value.kind == "protocol"
    if botocore_refuses:
        with pytest.raises(Exception):  # noqa: B017 - botocore's own error classes, whichever it raises
            _botocore(_raw(headers))


def test_headers_over_128_kib_are_an_impossible_length() -> None:
    headers = _string(b"big", b"x" * 65535) + _string(b"bigger", b"y" * 65535)
    with pytest.raises(FramingError, match="impossible length"):
        EventStreamDecoder().feed(_raw(headers))


def test_a_memoryview_fed_by_the_caller_is_left_alone() -> None:
    body = BODIES["converse_text"]
    view = memoryview(body)
    assert len(EventStreamDecoder().feed(view[:100])) == 0  # pyright: ignore[reportArgumentType] - a caller may pass one
    assert bytes(view[:4]) == body[:4], "still usable: the framer did not release the caller's view"


def test_parsed_headers_are_shared_read_only_and_the_cache_stays_bounded() -> None:
    from normalize.wire import eventstream

    same = encode_message({":event-type": "chunk", ":message-type": "event"}, b"{}")
    first, second = EventStreamDecoder().feed(same + same)
    assert first.headers is second.headers  # one parse for a section the stream repeats
    with pytest.raises(TypeError):
        first.headers[":event-type"] = "other"  # type: ignore[index]  # no message can change another's
    # A hostile stream of ever-new sections cannot grow the cache past its bound; each still parses.
    body = b"".join(encode_message({":event-type": f"kind-{n}"}, b"{}") for n in range(1_500))
    messages = EventStreamDecoder().feed(body)
    assert [m.event_type for m in messages] == [f"kind-{n}" for n in range(1_500)]
    assert len(eventstream._PARSED_HEADERS) <= eventstream._CACHE_ENTRIES  # pyright: ignore[reportPrivateUsage]


# -- lone: one message per read, without feeding it -------------------------------------------------------

_DELTA_HEADERS = {":event-type": "contentBlockDelta", ":content-type": "application/json", ":message-type": "event"}


def _message_spans(body: bytes) -> list[bytes]:
    """``body`` cut after every message (by the lengths in the preludes): one message per read."""
    reads: list[bytes] = []
    at = 0
    while at < len(body):
        (total,) = struct.unpack_from(">I", body, at)
        reads.append(body[at : at + total])
        at += total
    return reads


def _at_rest() -> EventStreamDecoder:
    framer = EventStreamDecoder()
    # Past one message with the delta's headers (the framer parses a headers section once, then knows it).
    assert framer.feed(encode_message(_DELTA_HEADERS, b'{"start":1}'))
    return framer


def test_a_lone_message_gives_its_payload() -> None:
    framer = _at_rest()
    message = encode_message(_DELTA_HEADERS, b'{"delta":{"text":"a"}}')
    assert framer.lone(message, "contentBlockDelta") == b'{"delta":{"text":"a"}}'
    assert framer.lone(message, "messageStop") is None  # another event
    assert framer.max_frame_bytes == EventStreamDecoder().max_frame_bytes


def _corrupt(message: bytes, at: int) -> bytes:
    return message[:at] + bytes([message[at] ^ 1]) + message[at + 1 :]


_GOOD = encode_message(_DELTA_HEADERS, b'{"delta":{"text":"ok"}}')


@pytest.mark.parametrize(
    "chunk",
    [
        _GOOD[:-1],  # cut short
        _GOOD + _GOOD,  # two messages
        _GOOD + b"\x00",
        _corrupt(_GOOD, 2),  # the prelude's length (and so its CRC)
        _corrupt(_GOOD, 9),  # the prelude's CRC
        _corrupt(_GOOD, 20),  # a header byte: the message CRC
        _corrupt(_GOOD, len(_GOOD) - 10),  # a payload byte
        _corrupt(_GOOD, len(_GOOD) - 1),  # the message CRC
        encode_message({**_DELTA_HEADERS, ":message-type": "exception"}, b"{}"),
        encode_message({":event-type": "contentBlockDelta", ":message-type": "error"}, b"{}"),
        encode_message({**_DELTA_HEADERS, "x-extra": "1"}, b"{}"),  # headers never parsed: feed first
        b"",
        b"\x00" * 16,
    ],
)
def test_anything_but_one_known_delta_message_is_fed(chunk: bytes) -> None:
    assert _at_rest().lone(chunk, "contentBlockDelta") is None


def test_a_message_after_a_held_part_is_fed() -> None:
    framer = _at_rest()
    assert framer.feed(_GOOD[:10]) == []
    assert framer.lone(_GOOD, "contentBlockDelta") is None


def test_a_message_over_the_limit_is_fed() -> None:
    framer = EventStreamDecoder(max_frame_bytes=200)
    framer.feed(encode_message(_DELTA_HEADERS, b"{}"))
    long = encode_message(_DELTA_HEADERS, b'"' + b"x" * 200 + b'"')
    assert framer.lone(long, "contentBlockDelta") is None
    with pytest.raises(FrameTooLarge):
        framer.feed(long)


@pytest.mark.parametrize("name", sorted(BODIES))
def test_lone_never_says_other_than_feed_on_real_bodies(name: str) -> None:
    reads = _message_spans(BODIES[name])
    rng = random.Random(name)
    # Hostile variants of some reads, and a read cut in two now and then.
    mixed: list[bytes] = []
    for read in reads:
        roll = rng.random()
        if roll < 0.1:
            mixed.append(_corrupt(read, rng.randrange(len(read))))
            break  # feed refuses it: the comparison ends with the error
        if roll < 0.2:
            cut = rng.randrange(1, len(read))
            mixed += [read[:cut], read[cut:]]
        else:
            mixed.append(read)
    full, quick = EventStreamDecoder(), EventStreamDecoder()
    expected: list[tuple[str | None, bytes]] = []
    got: list[tuple[str | None, bytes]] = []
    took = 0
    for read in mixed:
        try:
            expected += [(message.event_type, message.payload) for message in full.feed(read)]
        except FramingError:
            assert all(quick.lone(read, event) is None for event in ("contentBlockDelta", "chunk"))
            break
        for event in ("contentBlockDelta", "chunk"):
            payload = quick.lone(read, event)
            if payload is not None:
                got.append((event, payload))
                took += 1
                break
        else:
            got += [(message.event_type, message.payload) for message in quick.feed(read)]
    assert got == expected
    assert took > 0  # messages lone took were compared, not only reads it passed on
