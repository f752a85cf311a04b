"""``streamfns.kit.decoding`` on its own: pieces, caps, codings, and when the loop gets a turn."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import zlib
from collections.abc import Awaitable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfns.kit.decoding import BodyReader, BodyRefused, ContentDecoder, OnceRead, content_decoder

_ENCODERS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
}


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def _repeated(unit: bytes, times: int) -> bytes:
    return unit * times  # compresses far: many output pieces from little input


@settings(derandomize=True, max_examples=150, deadline=None)
@given(
    data=st.binary(max_size=3000) | st.builds(_repeated, st.binary(min_size=1, max_size=3), st.integers(0, 5000)),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
    piece=st.integers(1, 700),
    coding=st.sampled_from(["gzip", "deflate", "raw-deflate", "identity"]),
)
def test_any_body_in_any_chunking_decodes_exactly_in_pieces_no_longer_than_asked(
    data: bytes, cuts: list[int], piece: int, coding: str
) -> None:
    wbits = {"gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS, "raw-deflate": -zlib.MAX_WBITS}.get(coding)
    if coding == "identity":
        encoded, name = data, "identity"
    elif coding == "raw-deflate":
        encoded, name = zlib.compress(data)[2:-4], "deflate"
    else:
        encoded, name = _ENCODERS[coding](data), coding
    decoder = content_decoder([name], piece_bytes=piece)
    reference = zlib.decompressobj(wbits) if wbits is not None else None
    decoded = expected = b""
    for chunk in _chunks(encoded, cuts):
        pieces = list(decoder.pieces(chunk))
        assert all(0 < len(p) <= piece for p in pieces)
        decoded += b"".join(pieces)
        expected += reference.decompress(chunk) if reference is not None else chunk
        assert decoded == expected, "nothing an unbounded decoder gives for these bytes is held back"
    decoded += b"".join(decoder.end())
    assert decoded == data
    assert decoder.decoded == len(data)


def test_the_cap_refuses_the_piece_that_would_cross_it() -> None:
    decoder = content_decoder(["gzip"], piece_bytes=1000, max_decoded_bytes=2500)
    pieces: list[bytes] = []
    with pytest.raises(BodyRefused) as refused:
        pieces.extend(decoder.pieces(gzip.compress(b"x" * 10_000)))
    assert [len(p) for p in pieces] == [1000, 1000]
    assert refused.value.kind == "protocol"
    assert str(refused.value) == (
        "sent a gzip body that decodes to more than 2500 bytes (a compression bomb, or a reply no model writes): "
        "refused"
    )


@pytest.mark.parametrize(
    ("values", "coding"),
    [
        ([], "identity"),
        ([""], "identity"),
        (["identity"], "identity"),
        (["None"], "identity"),
        (["GZIP "], "gzip"),
        (["x-gzip"], "gzip"),
        (["identity, deflate"], "deflate"),
        (["identity", "gzip"], "gzip"),
    ],
)
def test_the_codings_read(values: list[str], coding: str) -> None:
    assert content_decoder(values).coding == coding


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["gzip", "gzip"], "stacked content-encodings 'gzip, gzip'"),
        (["deflate, gzip"], "stacked content-encodings 'deflate, gzip'"),
        (["br"], "content-encoding 'br', which the kit does not decode"),
        (["gzip, zstd"], "content-encoding 'gzip, zstd', which the kit does not decode"),
    ],
)
def test_stacked_and_unknown_codings_are_refused(values: list[str], message: str) -> None:
    with pytest.raises(BodyRefused, match=message) as refused:
        content_decoder(values)
    assert refused.value.kind == "protocol"


def test_bytes_after_the_end_of_a_gzip_stream_are_dropped_not_kept() -> None:
    decoder = content_decoder(["gzip"])
    assert b"".join(decoder.pieces(gzip.compress(b"hello"))) == b"hello"
    for _ in range(100):
        assert list(decoder.pieces(b"\0" * 65536)) == []
    assert list(decoder.end()) == []
    assert decoder.decoded == 5


def test_damaged_bytes_are_a_network_refusal() -> None:
    body = bytearray(gzip.compress(b"hello world" * 100))
    body[12] ^= 0xFF
    with pytest.raises(BodyRefused) as refused:
        list(content_decoder(["gzip"]).pieces(bytes(body)))
    assert refused.value.kind == "network"
    assert str(refused.value).startswith("sent a body that could not be decoded (gzip): Error -3 while decompressing")


class _Raw:
    """Raw reads, as a transport gives them (``b""`` at the end)."""

    def __init__(self, reads: list[bytes]) -> None:
        self._reads = iter(reads)

    async def __call__(self) -> bytes:
        return next(self._reads, b"")


async def test_the_reader_yields_to_the_loop_between_the_pieces_of_one_read_only() -> None:
    awaited: list[str] = []

    async def run(awaitable: Awaitable[Any]) -> Any:
        awaited.append("sleep" if asyncio.iscoroutine(awaitable) and "sleep" in repr(awaitable) else "read")
        return await awaitable

    # Two reads: the first inflates to five pieces, the second (the gzip trailer) to none.
    whole = gzip.compress(b"a" * 5000)
    reads = [whole[:-8], whole[-8:]]
    reader = BodyReader(_Raw(reads), content_decoder(["gzip"], piece_bytes=1000), run)
    pieces: list[bytes] = []
    while (piece := await reader.next()) is not None:
        pieces.append(piece)
        awaited.append(f"piece {len(piece)}")
    assert b"".join(pieces) == b"a" * 5000
    assert awaited == [
        "read",
        "piece 1000",
        "sleep",
        "piece 1000",
        "sleep",
        "piece 1000",
        "sleep",
        "piece 1000",
        "sleep",
        "piece 1000",
        "read",
        "read",
    ]
    assert reader.decoded == 5000


async def test_a_body_already_in_memory_is_cut_into_pieces_too() -> None:
    async def run(awaitable: Awaitable[Any]) -> Any:
        return await awaitable

    reader = BodyReader(OnceRead(b"x" * 2500), ContentDecoder("identity", piece_bytes=1000), run)
    sizes: list[int] = []
    while (piece := await reader.next()) is not None:
        sizes.append(len(piece))
    assert sizes == [1000, 1000, 500]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1 << 20])
def test_every_member_of_a_multi_member_gzip_body_is_decoded_in_any_reads(size: int) -> None:
    # RFC 1952: a gzip body is one or more members. A server that compresses each flush on its own sends
    # several; reads may end anywhere, also between a member's end and the next one's magic bytes.
    parts = [b"data: one\n\n", b"data: two\n\n" * 50, b"", b"data: three\n\n"]
    body = b"".join(gzip.compress(part) for part in parts)
    decoder = content_decoder(["gzip"], piece_bytes=16)
    out = [piece for start in range(0, len(body), size) for piece in decoder.pieces(body[start : start + size])]
    out += list(decoder.end())
    assert b"".join(out) == b"".join(parts)
    assert all(0 < len(piece) <= 16 for piece in out)
    assert decoder.decoded == len(b"".join(parts))


def test_a_member_that_ends_a_read_waits_for_the_next_read_to_say_what_follows() -> None:
    first, second = gzip.compress(b"first "), gzip.compress(b"second")
    decoder = content_decoder(["gzip"])
    assert b"".join(decoder.pieces(first)) == b"first "
    assert b"".join(decoder.pieces(second)) == b"second"
    assert list(decoder.pieces(b"\0" * 1000)) == []  # then padding: ignored
    assert list(decoder.pieces(gzip.compress(b"late"))) == []  # and nothing after it is read
    assert list(decoder.end()) == []


def test_the_cap_counts_every_member() -> None:
    decoder = content_decoder(["gzip"], piece_bytes=1000, max_decoded_bytes=2500)
    member = gzip.compress(b"x" * 1000)
    assert b"".join(decoder.pieces(member + member)) == b"x" * 2000
    with pytest.raises(BodyRefused) as refused:
        list(decoder.pieces(member))
    assert refused.value.kind == "protocol"
    assert decoder.decoded == 3000


def test_a_damaged_second_member_is_a_network_refusal() -> None:
    second = bytearray(gzip.compress(b"world" * 100))
    second[-8] ^= 0xFF  # its CRC-32: the member's bytes are not what was sent
    decoder = content_decoder(["gzip"])
    with pytest.raises(BodyRefused) as refused:
        list(decoder.pieces(gzip.compress(b"hello") + bytes(second)))
    assert refused.value.kind == "network"
