"""Which reads a decoder's shortcut takes (``ShortcutReads``): once ``SSEDecoder.lone`` took one read, the
shape framed by ``lone_parts`` reads the next ones whole. These tests hold it to ``lone`` followed by the
shape's match, read for read, on hostile bytes too: whatever the framed shape takes, ``lone`` would have
taken, with the same piece; whatever ``lone`` refuses (a held partial frame, an event over the framer's
size limit, a raw CR or LF), the framed shape refuses as well.
"""

from __future__ import annotations

import gc
import json
import random
from typing import Any, cast

import pytest

from normalize.wire.sse import SSEDecoder
from streamfns.kit import EventShape, Shortcut
from streamfns.kit.shapes import ShortcutReads

pytestmark = pytest.mark.parallel

_EVENT = "content_block_delta"
_LEAD = b"event: content_block_delta\ndata: "


def _data(text: str, index: int = 0) -> bytes:
    value = {"type": _EVENT, "index": index, "delta": {"type": "text_delta", "text": text}}
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _frame(data: bytes, lead: bytes = _LEAD) -> bytes:
    return lead + data + b"\n\n"


def _ignore(piece: str) -> None:
    """A sink (these tests read the pieces the kit would give it)."""


def _shortcut() -> Shortcut:
    data = _data("first ")
    shape = EventShape.learn(data, json.loads(data), (("delta", "text"),))
    assert shape is not None
    shortcut = Shortcut.of(_EVENT, shape, _ignore)
    assert shortcut is not None
    return shortcut


def _at_rest(max_event_bytes: int = 1 << 20) -> SSEDecoder:
    framer = SSEDecoder(max_event_bytes=max_event_bytes)
    assert framer.feed(b"event: message_start\ndata: {}\n\n")  # past the stream's start
    return framer


def _reference(framer: SSEDecoder, chunk: bytes, shortcut: Shortcut) -> list[Any] | None:
    """What the kit did before the framed shape: lone, then the shape's match."""
    data = framer.lone(chunk, shortcut.event)
    return None if data is None else shortcut.shape.match(data)


def _taught(framer: SSEDecoder, shortcut: Shortcut) -> ShortcutReads:
    reads = ShortcutReads.of(framer)
    assert reads is not None
    assert reads.pieces(_frame(_data("taught ")), shortcut) == ["taught "]  # through lone: now framed
    return reads


_HOSTILE_TEXTS = [
    "plain ",
    "",
    'quote " and backslash \\ ',
    "escaped newline \n and return \r and tab \t ",
    "nul \x00 and unit separator \x1f ",
    "é ü 中文 😀 ",
    "\u2028 line separator \u2029 ",
    '"}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta"',  # a frame inside the text
    "x" * 5000,
]


@pytest.mark.parametrize("text", _HOSTILE_TEXTS)
def test_a_framed_read_gives_the_piece_lone_and_the_match_give(text: str) -> None:
    framer, shortcut = _at_rest(), _shortcut()
    reads = _taught(framer, shortcut)
    chunk = _frame(_data(text))
    assert reads.pieces(chunk, shortcut) == _reference(framer, chunk, shortcut) == [text]


def _raw_variants(rng: random.Random) -> list[bytes]:
    """Chunks of the learned layout with raw bytes where a piece goes, and near misses of the frame."""
    specials = [b"\n", b"\r", b"\r\n", b"\x00", b'"', b"\\", b"\\u", b"\xff", b"\xe2\x80", b" ", b"a", b"}"]
    head, tail = _data("")[:-4], b'"}}'
    chunks: list[bytes] = []
    for _ in range(400):
        middle = b"".join(rng.choice(specials) for _ in range(rng.randint(0, 6)))
        chunks.append(_frame(head + b'"' + middle + tail))
    good = _frame(_data("ok "))
    chunks += [
        good.replace(b"\n\n", b"\r\n\r\n"),  # CRLF framing
        good.replace(b"\n\n", b"\n\r\n"),
        good[:-1],  # no blank line: the event is not dispatched
        good + b"\n",  # one line more
        good + good,  # two events in one read
        b": comment\n" + good,
        b"id: 7\n" + good,
        good.replace(b"data: ", b"data:"),  # no space: a lead lone does not know
        _frame(_data("ok ", index=1)),  # another block: not the learned layout
        _frame(_data("ok "), lead=b"event: ping\ndata: "),
        _frame(b" " + _data("ok ")),
        _frame(_data("ok ") + b" "),
        # JSON whitespace around the literal, which a JSON parse would take: a LF or a CR there breaks
        # the frame's lines (lone refuses it); a space is another layout (the full path reads it).
        _frame(head + b'\n"ok "' + tail),
        _frame(head + b'"ok "\n' + tail),
        _frame(head + b'\r"ok "' + tail),
        _frame(head + b'"ok "\r\n' + tail),
        _frame(head + b' "ok "' + tail),
        _frame(head + b'"ok " ' + tail),
        _frame(head + b'\t"ok "\t' + tail),
    ]
    return chunks


def _framed_exactly_as_lone_and_the_match(chunks: list[bytes], shortcut: Shortcut, teaching: bytes) -> None:
    """Each of ``chunks``, read after ``teaching`` (taken through lone, which frames the shape), is taken
    by the framed shape exactly when lone and the match take it, with the same holes."""
    compared = framed_took = 0
    for chunk in chunks:
        framer = _at_rest()
        reads = ShortcutReads.of(framer)
        assert reads is not None
        assert reads.pieces(teaching, shortcut) is not None  # through lone: now framed
        got = reads.pieces(chunk, shortcut)
        assert got == _reference(framer, chunk, shortcut), chunk
        compared += 1
        framed_took += got is not None
    assert compared > 400
    assert 0 < framed_took < compared  # both outcomes were examined


def test_a_read_is_framed_exactly_when_lone_and_the_match_take_it() -> None:
    chunks = _raw_variants(random.Random(20261205))
    _framed_exactly_as_lone_and_the_match(chunks, _shortcut(), _frame(_data("taught ")))


def test_after_a_fed_read_only_lone_decides() -> None:
    framer, shortcut = _at_rest(), _shortcut()
    reads = _taught(framer, shortcut)
    held = _frame(_data("held "))[:-1]  # a whole data line, its blank line still to come
    assert reads.pieces(held, shortcut) is None
    reads.fed()
    assert framer.feed(held) == []
    # The next read has the framed layout exactly, but the framer holds an event: feeding it would
    # join the two data lines, so it must be fed, not taken.
    chunk = _frame(_data("next "))
    assert framer.lone(chunk, _EVENT) is None
    assert reads.pieces(chunk, shortcut) is None


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_a_read_that_is_not_bytes_is_fed_as_lone_would_have_it(kind: type[Any]) -> None:
    framer, shortcut = _at_rest(), _shortcut()
    reads = _taught(framer, shortcut)
    chunk = kind(_frame(_data("a view ")))
    assert framer.lone(chunk, _EVENT) is None
    assert reads.pieces(chunk, shortcut) is None


def test_a_read_over_the_framers_limit_is_not_taken() -> None:
    framer, shortcut = _at_rest(max_event_bytes=200), _shortcut()
    reads = _taught(framer, shortcut)
    long = _frame(_data("x" * 300))
    assert framer.lone(long, _EVENT) is None
    assert reads.pieces(long, shortcut) is None
    assert reads.pieces(_frame(_data("short ")), shortcut) == ["short "]  # the limit, not the layout


def test_a_new_shortcut_is_framed_afresh() -> None:
    framer, first = _at_rest(), _shortcut()
    reads = _taught(framer, first)
    data = _data("other block ", index=1)
    shape = EventShape.learn(data, json.loads(data), (("delta", "text"),))
    assert shape is not None
    second = Shortcut.of(_EVENT, shape, _ignore)
    assert second is not None
    assert reads.pieces(_frame(_data("ok ")), second) is None  # the first one's frame reads no more
    assert reads.pieces(_frame(_data("two ", index=1)), second) == ["two "]


def test_lone_parts_are_the_bytes_around_the_data() -> None:
    framer = _at_rest()
    chunk = _frame(_data("a "))
    data = framer.lone(chunk, _EVENT)
    assert data is not None
    before, after = framer.lone_parts(chunk, data)
    assert (before, after) == (_LEAD, b"\n\n")
    assert before + data + after == chunk


def _gemini(literal: bytes, count: bytes = b"7") -> bytes:
    """A Gemini chunk's data with ``literal`` as its text and ``count`` as both its running counts."""
    return (
        b'{"candidates":[{"content":{"parts":[{"text":' + literal + b'}],"role":"model"},"index":0}],'
        b'"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":'
        + count
        + b',"totalTokenCount":'
        + count
        + b"}}"
    )


_GEMINI_HOLES = (
    ("candidates", 0, "content", "parts", 0, "text"),
    ("usageMetadata", "candidatesTokenCount"),
    ("usageMetadata", "totalTokenCount"),
)


def _gemini_frame(data: bytes) -> bytes:
    return b"data: " + data + b"\r\n\r\n"  # Gemini's lines end in CRLF


def test_a_shape_of_several_holes_is_framed_and_reads_every_hole() -> None:
    data = _gemini(b'"a"')
    shape = EventShape.learn(data, json.loads(data), _GEMINI_HOLES)
    assert shape is not None
    shortcut = Shortcut.of("message", shape, _ignore, whole=True)
    assert shortcut is not None
    assert shortcut.whole
    framer = _at_rest()
    reads = ShortcutReads.of(framer)
    assert reads is not None
    assert reads.pieces(_gemini_frame(_gemini(b'"taught "', b"8")), shortcut) == ["taught ", 8, 8]
    for text, count in (("b c", 9), ("\r\n", 10), ("", 123456)):
        chunk = _gemini_frame(_gemini(json.dumps(text).encode(), str(count).encode()))
        assert reads.pieces(chunk, shortcut) == _reference(framer, chunk, shortcut) == [text, count, count]


def test_a_read_of_several_holes_is_framed_exactly_when_lone_and_the_match_take_it() -> None:
    rng = random.Random(20261206)
    data = _gemini(b'"a"')
    shape = EventShape.learn(data, json.loads(data), _GEMINI_HOLES)
    assert shape is not None
    shortcut = Shortcut.of("message", shape, _ignore, whole=True)
    assert shortcut is not None
    specials = [b"\n", b"\r", b"\r\n", b"\x00", b'"', b"\\", b"\xff", b" ", b"a", b"}", b"1", b","]
    counts = [b"7", b"70", b"07", b" 7", b"7 ", b"7\r\n", b"\n7", b"-7", b"7.0", b"", b"99999999"]
    chunks: list[bytes] = []
    for _ in range(400):
        middle = b"".join(rng.choice(specials) for _ in range(rng.randint(0, 6)))
        chunks.append(_gemini_frame(_gemini(b'"' + middle + b'"', rng.choice(counts))))
    good = _gemini_frame(_gemini(b'"ok "'))
    chunks += [
        good.replace(b"\r\n", b"\n"),  # LF framing: another frame
        good[:-2],
        good + b"\r\n",
        good + good,
        b"id: 1\r\n" + good,
        _gemini_frame(_gemini(b' "ok "')),
        _gemini_frame(_gemini(b'"ok "\r\n')),
    ]
    _framed_exactly_as_lone_and_the_match(chunks, shortcut, _gemini_frame(_gemini(b'"taught "')))


def test_a_framer_without_lone_gives_no_reads() -> None:
    assert ShortcutReads.of(object()) is None


class _MatchOnly:
    """A third party's shape: match() alone, no framed()."""

    def match(self, data: bytes) -> list[Any] | None:
        text = json.loads(data)["delta"]["text"]
        return [text]


def test_a_shape_without_framed_is_read_through_lone_each_time() -> None:
    framer = _at_rest()
    shortcut = Shortcut(_EVENT, cast("EventShape", _MatchOnly()), _ignore)
    reads = ShortcutReads.of(framer)
    assert reads is not None
    for text in ("one ", "two ", "three "):
        assert reads.pieces(_frame(_data(text)), shortcut) == [text]


def _gemini_shortcut(**kwargs: Any) -> Shortcut:
    data = _gemini(b'"a"')
    shape = EventShape.learn(data, json.loads(data), _GEMINI_HOLES)
    assert shape is not None
    assert not shape.one_string
    shortcut = Shortcut.of("message", shape, _ignore, whole=True, **kwargs)
    assert shortcut is not None
    return shortcut


def test_a_shape_of_several_holes_is_read_in_runs_only_for_a_shortcut_that_asks() -> None:
    """A read of several events: the kit reads a run of them off their bytes for a shape of one string
    hole, or for a shortcut with ``in_run``; a shape of several holes without one is fed (reading its
    events one by one cost more than framing them, for a decoder that parses them whole)."""
    run = b"".join(_gemini_frame(_gemini(json.dumps(text).encode(), str(n).encode())) for n, text in enumerate("abc"))
    taken: list[Any] = []
    for shortcut, expected in ((_gemini_shortcut(), None), (_gemini_shortcut(in_run=taken.append), b"\r\n\r\n")):
        reads = ShortcutReads.of(_at_rest())
        assert reads is not None
        assert reads.run_end(run, shortcut) == expected
        reads.read_over()
    shortcut = _gemini_shortcut(in_run=taken.append)
    assert shortcut.run_take == taken.append
    assert shortcut.take is _ignore
    reads = ShortcutReads.of(_at_rest())
    assert reads is not None
    other = _gemini_frame(b'{"candidates":[]}')
    found, at = reads.run(run + other + run, shortcut, 0)
    assert found == [["a", 0, 0], ["b", 1, 1], ["c", 2, 2]]  # every hole, up to the event it does not read
    assert at == len(run)
    assert _gemini_shortcut().run_take is _ignore  # without in_run, a one-string run's events go to take


def test_a_replaced_shortcut_is_not_kept_alive_by_the_reads() -> None:
    """A decoder that learns a new layout replaces its shortcut: once a read goes through the new one, the
    reads keep nothing of the old one (its run shape, its shapes, its sinks' bound methods would stay
    alive, read by nothing, for the collector to walk in every stream)."""
    old = _gemini_shortcut(in_run=_ignore)
    reads = ShortcutReads.of(_at_rest())
    assert reads is not None
    run = b"".join(_gemini_frame(_gemini(json.dumps(text).encode())) for text in ("a", "b"))
    assert reads.run_end(run, old) is not None
    found, _ = reads.run(run, old, 0)
    reads.read_over()
    assert len(found) == 2
    assert [r for r in gc.get_referrers(old) if isinstance(r, tuple)], "the run shape holds its shortcut"
    new = _gemini_shortcut(in_run=_ignore)
    assert reads.pieces(_gemini_frame(_gemini(b'"c"')), new) == ["c", 7, 7]
    assert not [r for r in gc.get_referrers(old) if isinstance(r, tuple)]
