"""Reading a response body in bounded pieces: the kit's own content decoding.

The kit asks for ``accept-encoding: gzip, deflate`` (:data:`ACCEPT_ENCODING`, sent unless a caller's
header says otherwise) and decodes the raw bytes itself, instead of through httpx's decoders, which
turn one read into however many bytes it inflates to: a 13 KB body sent as ``gzip, gzip`` became a
single 2–3 GiB chunk, and a 195 KB gzip body of comment lines held the event loop for 20 s and more in
one stretch, so no abort or deadline could land. What :class:`BodyReader` promises:

- every piece it returns is at most :data:`PIECE_BYTES` long, whatever one read inflates to, so memory
  per read stays bounded (the framer bounds what it keeps across pieces: ``max_frame_bytes``);
- between two pieces of one read it awaits ``asyncio.sleep(0)`` through the caller's ``run`` (the
  kit's abort and deadline scope), so an abort, the total timeout, the progress timeout and other
  tasks land while a large read is worked through; a read that gives one piece costs nothing more;
- a content-coded body decodes to at most :data:`MAX_DECODED_BYTES` in all (sixteen frames of the
  largest size the framings accept; an LLM reply's stream stays far below it); one byte more raises
  :class:`BodyRefused` (``protocol``): a compression bomb costs bounded memory and bounded work. An
  identity body has no total cap here: each of its bytes crossed the network, and the idle, progress
  and total timeouts bound it;
- ``identity`` (and ``none``, which some servers send to keep proxies from buffering an event stream),
  ``gzip`` (``x-gzip``) and ``deflate`` (zlib-wrapped or raw, as httpx reads it) are decoded; codings
  stacked on one another (``gzip, gzip``) or any other coding (``br``, ``zstd``, ``compress``) raise
  :class:`BodyRefused` (``protocol``) before a byte is read: the kit never asks for them;
- bytes that fail to decompress raise :class:`BodyRefused` (``network``, as httpx's ``DecodingError``
  was: retryable, the bytes were damaged in transit). A gzip body may hold several members, one after
  another (RFC 1952; a server that compresses each flush on its own sends them): each is decoded in
  turn, where httpx keeps only the first and the rest of the reply would be lost. Bytes after the end
  of the compressed data that do not start a member (zero padding, a proxy's junk) are ignored, as
  httpx ignores them.

Nothing here imports httpx: the reader takes any coroutine function returning raw bytes.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, Final, Literal

from normalize.wire import DEFAULT_MAX_FRAME_BYTES

__all__ = [
    "ACCEPT_ENCODING",
    "MAX_DECODED_BYTES",
    "PIECE_BYTES",
    "BodyReader",
    "BodyRefused",
    "ContentDecoder",
    "OnceRead",
    "content_decoder",
]

#: What the kit asks for: the codings it decodes itself, and no other.
ACCEPT_ENCODING: Final = "gzip, deflate"
#: The longest piece one read is cut into (the size of one socket read).
PIECE_BYTES: Final = 64 * 1024
#: The most a content-coded body may decode to.
MAX_DECODED_BYTES: Final = 16 * DEFAULT_MAX_FRAME_BYTES

Coding = Literal["identity", "gzip", "deflate"]
_CODINGS: Final[dict[str, Coding]] = {
    "identity": "identity",
    "none": "identity",
    "gzip": "gzip",
    "x-gzip": "gzip",
    "deflate": "deflate",
}


class BodyRefused(Exception):
    """A body the kit will not read on: ``kind`` is ``protocol`` (a coding it does not decode, a body
    decoding past :data:`MAX_DECODED_BYTES`) or ``network`` (bytes that fail to decompress). The
    message reads after the vendor's name ("Echo sent …")."""

    def __init__(self, message: str, kind: Literal["protocol", "network"]) -> None:
        super().__init__(message)
        self.kind: Literal["protocol", "network"] = kind


def content_decoder(
    values: Iterable[str], *, piece_bytes: int = PIECE_BYTES, max_decoded_bytes: int = MAX_DECODED_BYTES
) -> ContentDecoder:
    """The decoder for a body whose ``content-encoding`` header values are ``values`` (each may be a
    comma list); raises :class:`BodyRefused` for stacked or unknown codings (see the module docstring)."""
    named = [part.strip().lower() for value in values for part in value.split(",")]
    named = [name for name in named if name]
    said = ", ".join(named)
    if any(name not in _CODINGS for name in named):
        raise BodyRefused(
            f"sent a body with content-encoding {said!r}, which the kit does not decode "
            f"(it asks for {ACCEPT_ENCODING!r})",
            "protocol",
        )
    applied: list[Coding] = [_CODINGS[name] for name in named if _CODINGS[name] != "identity"]
    if len(applied) > 1:
        raise BodyRefused(
            f"sent a body with stacked content-encodings {said!r}; the kit decodes one of gzip or deflate, "
            "never a coding on top of another",
            "protocol",
        )
    return ContentDecoder(
        applied[0] if applied else "identity", piece_bytes=piece_bytes, max_decoded_bytes=max_decoded_bytes
    )


_GZIP_MAGIC: Final = b"\x1f\x8b"


class ContentDecoder:
    """Decodes one body's content coding into pieces of at most ``piece_bytes`` (see the module
    docstring); ``decoded`` counts the bytes produced so far."""

    __slots__ = ("_done", "_inflater", "_limit", "_may_hold_output", "_piece", "_replay", "coding", "decoded")

    @property
    def piece_bytes(self) -> int:
        """The longest piece this decoder returns."""
        return self._piece

    def __init__(
        self, coding: Coding, *, piece_bytes: int = PIECE_BYTES, max_decoded_bytes: int = MAX_DECODED_BYTES
    ) -> None:
        if piece_bytes < 1:
            raise ValueError(f"piece_bytes must be positive, got {piece_bytes}")
        self.coding: Coding = coding
        self.decoded = 0
        self._piece = piece_bytes
        self._limit = max_decoded_bytes
        # "deflate" is zlib-wrapped by the standard, raw in some servers' hands: httpx tries both, and so
        # do we, keeping what was fed until the first output so the raw decoder can start from byte 0.
        self._replay: bytearray | None = bytearray() if coding == "deflate" else None
        # zlib may keep output back when a call filled its whole max_length: one more call fetches it.
        self._may_hold_output = False
        # The compressed data ended and what followed started no gzip member: the rest is ignored.
        self._done = False
        self._inflater: Any = None
        if coding == "gzip":
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif coding == "deflate":
            self._inflater = zlib.decompressobj()

    def pieces(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``data``, the next raw bytes of the body, produced one at a time."""
        if self._inflater is None:
            for piece in self._cut(data):
                self.decoded += len(piece)  # counted, never capped: each byte crossed the network
                yield piece
            return
        pending = data
        while not self._done:
            if self._inflater.eof:
                # What follows the member that ended: held by the inflater, and what this read holds.
                pending = self._next_member(pending)
                if not pending:
                    return
                continue
            if not pending and not self._may_hold_output:
                return
            out = self._inflate(pending)
            # At the end of the data zlib keeps what follows in unused_data, and may leave a copy of it
            # in unconsumed_tail too: only unused_data is read (by _next_member).
            pending = b"" if self._inflater.eof else self._inflater.unconsumed_tail
            self._may_hold_output = len(out) == self._piece
            if out:
                yield self._counted(out)

    def _next_member(self, pending: bytes) -> bytes:
        """After the end of the compressed data: what follows it, to a fresh inflater when it starts
        another gzip member (its first bytes may be all this read holds: zlib waits for the rest);
        otherwise nothing, and the body's remaining bytes are ignored. Nothing after it yet (the
        member ended with the read): undecided until the next read."""
        rest: bytes = self._inflater.unused_data + pending
        head = rest[:2]
        if not head:
            self._may_hold_output = False  # nothing after it yet: the next read decides
            return b""
        if self.coding == "gzip" and _GZIP_MAGIC.startswith(head):
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
            self._may_hold_output = False
            return rest
        self._done = True
        return b""

    def end(self) -> Iterator[bytes]:
        """What the coding still holds once the body has ended, in pieces."""
        if self._inflater is None:
            return
        yield from self.pieces(b"")
        rest: bytes = self._inflater.flush()
        for piece in self._cut(rest):
            yield self._counted(piece)

    def _inflate(self, data: bytes) -> bytes:
        replay = self._replay
        try:
            out: bytes = self._inflater.decompress(data, self._piece)
        except zlib.error as exc:
            if replay is None:
                raise BodyRefused(f"sent a body that could not be decoded ({self.coding}): {exc}", "network") from None
            self._replay = None
            self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._inflate(bytes(replay) + data)
        if replay is not None:
            # No output yet means every byte fed so far was taken in whole (there is no tail): keep it
            # for a raw start, up to a piece's worth; past that, or once output came, the format stands.
            if out or len(replay) + len(data) > self._piece:
                self._replay = None
            else:
                replay += data
        return out

    def _counted(self, piece: bytes) -> bytes:
        self.decoded += len(piece)
        if self.decoded > self._limit:
            raise BodyRefused(
                f"sent a {self.coding} body that decodes to more than {_size(self._limit)} "
                "(a compression bomb, or a reply no model writes): refused",
                "protocol",
            )
        return piece

    def _cut(self, data: bytes) -> Iterator[bytes]:
        size = self._piece
        if len(data) <= size:
            if data:
                yield data
            return
        for start in range(0, len(data), size):
            yield data[start : start + size]


def _size(count: int) -> str:
    return f"{count // (1024 * 1024)} MiB" if count % (1024 * 1024) == 0 else f"{count} bytes"


class BodyReader:
    """A body as decoded pieces, read one at a time with :meth:`next` (see the module docstring).

    ``read`` returns the body's next bytes as they came off the wire (``b""`` at its end); ``run``
    awaits an awaitable on the caller's terms (the kit's scope turns an abort, a deadline or an idle
    wait into an exception there). Errors of ``read`` (the transport's) reach the caller unchanged;
    the decoder's are :class:`BodyRefused`.
    """

    __slots__ = ("_decoder", "_ended", "_identity", "_pieces", "_read", "_run", "_started")

    def __init__(
        self,
        read: Callable[[], Awaitable[bytes]],
        decoder: ContentDecoder,
        run: Callable[[Awaitable[Any]], Awaitable[Any]],
    ) -> None:
        self._read = read
        self._decoder = decoder
        self._run = run
        self._pieces: Iterator[bytes] | None = None
        self._started = False  # whether the current read already gave a piece
        self._ended = False
        # The usual body: no coding, one read one piece; taken without a generator per read.
        self._identity = decoder.coding == "identity"

    @property
    def decoded(self) -> int:
        """Decoded bytes produced so far."""
        return self._decoder.decoded

    @property
    def raw_read(self) -> Callable[[], Awaitable[bytes]] | None:
        """For an ``identity`` body, the transport's read itself, for a caller that awaits it on its own
        terms (through ``run``) and hands :meth:`cut` any read over :data:`PIECE_BYTES` (then reads on
        with :meth:`next`); None for a coded body, whose reads only :meth:`next` may take. Bytes read
        this way are not counted in :attr:`decoded` (an identity body has no cap to count toward)."""
        return self._read if self._identity else None

    def cut(self, data: bytes) -> None:
        """Take ``data``, an identity read too long for one piece, to give out piece by piece from
        :meth:`next` (which lets the loop run between them)."""
        self._pieces = self._decoder.pieces(data)
        self._started = False

    async def next(self) -> bytes | None:
        """The next decoded piece, or None at the end of the body."""
        while True:
            pieces = self._pieces
            if pieces is not None:
                piece = next(pieces, None)
                if piece is not None:
                    if self._started:
                        # One read inflated to several pieces: let the loop run (an abort, a deadline,
                        # other streams) before the caller works on the next one.
                        await self._run(asyncio.sleep(0))
                    self._started = True
                    return piece
                self._pieces = None
            if self._ended:
                return None
            self._started = False
            data: bytes = await self._run(self._read())
            if not data:
                self._ended = True
                self._pieces = self._decoder.end()
                continue
            if self._identity and len(data) <= self._decoder.piece_bytes:
                self._decoder.decoded += len(data)
                return data
            self._pieces = self._decoder.pieces(data)


class OnceRead:
    """A body already in memory, as a ``read`` for :class:`BodyReader`: all of it, then ``b""``."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data = data

    async def __call__(self) -> bytes:
        data, self._data = self._data, b""
        return data
