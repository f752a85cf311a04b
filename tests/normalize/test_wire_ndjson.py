"""The JSON-lines framer, against httpx's own line splitting on real Ollama bodies, and on hostile bytes."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cassettes import load
from normalize.wire import NDJSON, FrameTooLarge, NDJSONDecoder

pytestmark = pytest.mark.parallel

CASSETTES = Path(__file__).resolve().parents[2] / "examples" / "ndjson_chat" / "cassettes"
BODIES = {path.stem: load(path).interactions[0].response.body for path in sorted(CASSETTES.glob("*.jsonl"))}


def _frames(body: bytes, sizes: list[int] | None = None) -> list[bytes]:
    framer = NDJSONDecoder()
    out: list[bytes] = []
    at = 0
    for size in sizes or []:
        out.extend(framer.feed(body[at : at + size]))
        at += size
    out.extend(framer.feed(body[at:]))
    return out + framer.flush()


def _httpx_lines(chunks: list[bytes]) -> list[bytes]:
    """What ``Response.aiter_lines`` gives for the same chunks, blank lines left out."""

    async def read() -> list[str]:
        response = httpx.Response(200, content=_stream(chunks))
        return [line async for line in response.aiter_lines()]

    return [line.encode() for line in asyncio.run(read()) if line.strip()]


async def _stream(chunks: list[bytes]):
    for chunk in chunks:
        yield chunk


@pytest.mark.parametrize("name", sorted(BODIES))
def test_real_ollama_bodies_frame_as_httpx_splits_their_lines(name: str) -> None:
    body = BODIES[name]
    assert _frames(body) == _httpx_lines([body])
    assert len(_frames(body)) == body.count(b"\n")


@settings(max_examples=60, deadline=None, derandomize=True)
@given(name=st.sampled_from(sorted(BODIES)), seed=st.integers(0, 2**32 - 1))
def test_chunk_boundaries_anywhere_give_the_same_lines(name: str, seed: int) -> None:
    body = BODIES[name]
    rng = random.Random(seed)
    sizes = [rng.randint(1, 30) for _ in range(len(body) // 10)]
    assert _frames(body, sizes) == _frames(body)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    lines=st.lists(
        # (a line may not open with a byte order mark's first byte: the framer rightly drops a BOM)
        st.binary(max_size=20).filter(lambda b: b"\n" not in b and b"\r" not in b and b[:1] != b"\xef"),
        max_size=8,
    ),
    endings=st.lists(st.sampled_from([b"\n", b"\r\n", b"\n\n", b"\n \n"]), min_size=8, max_size=8),
    cut=st.integers(1, 7),
)
def test_crlf_and_blank_lines_split_anywhere(lines: list[bytes], endings: list[bytes], cut: int) -> None:
    body = b"".join(line + ending for line, ending in zip(lines, endings, strict=False))
    expected = [line for line in lines if line.strip(b" \t\x0b\x0c")]
    assert _frames(body, [cut] * (len(body) // cut)) == expected
    assert _frames(body) == expected


def test_a_bom_at_the_start_is_dropped_even_split_across_reads() -> None:
    assert _frames(b'\xef\xbb\xbf{"a":1}\n', [1, 1, 1]) == [b'{"a":1}']
    assert _frames(b'\xef\xbb{"a":1}\n', [1]) == [b'\xef\xbb{"a":1}'], "half a BOM is data, not a BOM"


def test_a_last_line_without_a_line_ending_comes_at_flush() -> None:
    framer = NDJSONDecoder()
    assert framer.feed(b'{"a":1}\n{"b":') == [b'{"a":1}']
    assert framer.feed(b"2}") == []
    assert framer.flush() == [b'{"b":2}']
    assert framer.flush() == []


def test_an_endless_line_is_refused_once_it_passes_the_limit_before_it_is_buffered() -> None:
    framer = NDJSONDecoder(max_frame_bytes=64)
    assert framer.feed(b'{"ok":1}\n' + b"x" * 50) == [b'{"ok":1}']
    with pytest.raises(FrameTooLarge) as caught:
        framer.feed(b"x" * 20)
    assert (caught.value.limit, caught.value.size, caught.value.kind) == (64, 70, "protocol")
    with pytest.raises(FrameTooLarge) as whole:
        NDJSONDecoder(max_frame_bytes=64).feed(b'{"ok":1}\n' + b"y" * 65 + b"\n")
    assert whole.value.frames == [b'{"ok":1}'], "the lines before the oversized one are kept"


def test_spans_are_lossless_and_a_rewrite_keeps_one_line_one_line() -> None:
    body = b'\n{"a":1}\r\n  {"done":true}\n\n'
    spans = NDJSON.spans(body)
    assert b"".join(span.raw for span in spans) == body
    assert [span.payload for span in spans] == [b'{"a":1}', b'{"done":true}']
    assert NDJSON.rewrite(spans[0], b'{"a":\n2}') == b'\n{"a": 2}\r\n'
    assert NDJSON.rewrite(spans[1], b'{"done":false}') == b'  {"done":false}\n\n'
    last = NDJSON.spans(b'{"a":1}\n{"b"')[-1]
    assert (last.payload, last.complete) == (b'{"b"', False)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    lines=st.lists(st.text(alphabet='{}":ab 1', min_size=1, max_size=12).map(str.encode), max_size=8),
    endings=st.lists(st.sampled_from([b"\n", b"\r", b"\r\n", b"\r\r\n", b"\n\r"]), min_size=8, max_size=8),
    cut=st.integers(1, 5),
)
def test_every_line_ending_httpx_knows_splits_the_same_lines(
    lines: list[bytes], endings: list[bytes], cut: int
) -> None:
    body = b"".join(line + ending for line, ending in zip(lines, endings, strict=False))
    expected = [line for line in lines if line.strip(b" ")]
    assert _frames(body, [cut] * (len(body) // cut)) == expected
    assert _frames(body) == expected
    chunks = [body[at : at + cut] for at in range(0, len(body), cut)]
    assert [line.strip() for line in _httpx_lines(chunks)] == [line.strip() for line in expected]


def test_a_crlf_split_across_reads_is_one_line_ending_and_a_lone_cr_ends_a_line() -> None:
    framer = NDJSONDecoder()
    assert framer.feed(b'{"a":1}\r') == [b'{"a":1}']
    assert framer.feed(b'\n{"b":2}\r{"c":3}') == [b'{"b":2}']
    assert framer.flush() == [b'{"c":3}']


def test_json_strings_may_hold_the_separators_httpx_would_split_on() -> None:
    line = '{"text":"a\u2028b\u2029c\x85d"}'.encode()
    assert _frames(line + b"\n") == [line]


# -- lone: one line per read, without feeding it ----------------------------------------------------------


def test_a_lone_line_gives_its_bytes_and_what_lies_around_them() -> None:
    framer = NDJSONDecoder()
    assert framer.lone(b'{"a":1}\n', "") is None  # the body's start: a byte order mark may still come
    assert framer.feed(b'{"start":1}\n') == [b'{"start":1}']
    assert framer.lone(b'{"a":1}\n', "") == b'{"a":1}'
    assert framer.lone_parts(b'{"a":1}\n', b'{"a":1}') == (b"", b"\n")
    assert framer.max_frame_bytes == NDJSONDecoder().max_frame_bytes


@pytest.mark.parametrize(
    ("held", "chunk"),
    [
        (b'{"a":1}\n{"b"', b":2}\n"),  # a partial line held: the chunk ends it
        (b'{"a":1}\r', b'{"b":2}\n'),  # a CR the last read ended in
        (b'{"a":1}\n', b'{"b":2}\r\n'),  # CRLF
        (b'{"a":1}\n', b'{"b":2}\r'),
        (b'{"a":1}\n', b'{"b":\r2}\n'),
        (b'{"a":1}\n', b'{"b":2}'),  # no line ending yet
        (b'{"a":1}\n', b'{"b":2}\n{"c":3}\n'),  # two lines
        (b'{"a":1}\n', b'{"b":2}\n\n'),
        (b'{"a":1}\n', b'\n{"b":2}\n'),
        (b'{"a":1}\n', b" \t\n"),  # a blank line: skipped by feed
        (b'{"a":1}\n', b"\n"),
    ],
)
def test_anything_but_one_line_at_a_boundary_is_fed(held: bytes, chunk: bytes) -> None:
    framer = NDJSONDecoder()
    framer.feed(held)
    assert framer.lone(chunk, "") is None


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_a_read_that_is_not_bytes_is_fed(kind: type[bytes]) -> None:
    framer = NDJSONDecoder()
    framer.feed(b'{"a":1}\n')
    assert framer.lone(kind(b'{"b":2}\n'), "") is None


def test_a_line_over_the_limit_is_fed() -> None:
    framer = NDJSONDecoder(max_frame_bytes=16)
    framer.feed(b"{}\n")
    assert framer.lone(b'{"a":"' + b"x" * 20 + b'"}\n', "") is None
    assert framer.lone(b'{"a":"xxx"}\n', "") == b'{"a":"xxx"}'


@pytest.mark.parametrize("seed", range(30))
def test_lone_never_says_other_than_feed(seed: int) -> None:
    rng = random.Random(seed)
    pieces = [b'{"a":1}', b'{"t":"x y"}', b"[1]", b" ", b"", b"\xef\xbb\xbf", b"\t"]
    endings = [b"\n", b"\n", b"\n", b"\r\n", b"\r", b""]
    body = b"".join(rng.choice(pieces) + rng.choice(endings) for _ in range(80))
    chunks: list[bytes] = []
    per_line = rng.random() < 0.5
    if per_line:  # one line per read, where lone applies
        chunks = [line + b"\n" for line in body.split(b"\n")]
    else:
        at = 0
        while at < len(body):
            step = rng.randint(1, 30)
            chunks.append(body[at : at + step])
            at += step
    full, quick = NDJSONDecoder(), NDJSONDecoder()
    expected: list[bytes] = []
    got: list[bytes] = []
    took = 0
    for chunk in chunks:
        expected += full.feed(chunk)
        line = quick.lone(chunk, "")
        if line is not None:
            got.append(line)
            took += 1
        else:
            got += quick.feed(chunk)
    assert got + quick.flush() == expected + full.flush()
    if per_line:
        assert took > 0  # the comparison covered lines lone took, not only reads it passed on
