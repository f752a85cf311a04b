"""The spellings a secret is echoed back in, at the byte level: one definition for the cassette
recorder's secret scan (:mod:`cassettes.secret_scan`) and for the redaction of every error message a
stream ends with (:func:`streamfns.kit.redact`), so neither can miss a spelling the other catches.

A server or a proxy echoes a credential back (a 401 body, a debug header, an error message) in
many spellings. This module gives:

* for a secret, the byte strings to look for directly (`needles`): the bytes themselves, in lower
  and in upper case, in hex (either case), and their base64 encodings at each of the three byte
  alignments, in the standard and the URL-safe alphabet, keeping only the characters that depend
  on the secret's bytes alone — so the secret is found inside any longer base64 text, wherever it
  starts;
* for a body, the views to look in (`views`): the bytes themselves, and the bytes with JSON
  escapes (`\\u0041`, `\\/`, `\\\\`), URL escapes (`%41`, `%2f`) and HTML character references
  (`&#65;`, `&#x41;`) decoded, once and twice, each mapping its offsets back to the original
  bytes. (The other JSON escapes, `\\"` and the whitespace ones, spell characters no key is made
  of; decoding them would cost time on every line of JSON for nothing.)

A needle found in a view finds an echo that is raw, upper- or lower-cased, hex-encoded,
base64-encoded at any alignment, JSON-escaped, URL-encoded or HTML-escaped partly or fully, or one
of those inside another.
Matching is on bytes: nothing here decodes text, so a body that is not UTF-8 is scanned the same.

`views` decodes a whole body at once, keeping one record per escape: right for the bodies the recorder
scans. `EchoScanner` finds the same echoes in text of any length as a stream, in linear time and bounded
memory: the text is fed in pieces, each level of escapes is decoded as it goes, and only the escapes
of the last needle's length are remembered (to map a match back to the text) — a hostile message made
of nothing but escapes costs no more working memory than a short one. It is what the kit's redaction
runs on.

For the ``repr`` of objects that hold credentials: `MASK`, and `masked_headers` / `masked_url` /
`masked_repr`, which show a credential as pydantic's ``SecretStr`` shows it, by the fail-closed
header rule of `normalize.wire.tags`.
"""

from __future__ import annotations

import base64
import bisect
import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import accumulate
from typing import Final
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "MIN_SECRET_BYTES",
    "EchoScanner",
    "View",
    "masked_headers",
    "masked_repr",
    "masked_url",
    "needles",
    "views",
]

#: Shorter values are not looked for: "test" or a 4-digit PIN would match everywhere. They are
#: still never written, because the headers, parameters and fields that carry them are scrubbed.
MIN_SECRET_BYTES = 8

_URLSAFE = bytes.maketrans(b"+/", b"-_")
_ESCAPE = re.compile(rb"\\u[0-9a-fA-F]{4}|\\[\\/]|%[0-9a-fA-F]{2}|&#[0-9]{1,7};|&#[xX][0-9a-fA-F]{1,6};")
_LAST_CODE_POINT = 0x10FFFF
#: The longest escape `_ESCAPE` matches (``&#x10FFFF;``, ``&#1114111;``): a stream holds back at most one
#: byte fewer than this at the end of a piece, the start of an escape whose rest has not come yet.
_LONGEST_ESCAPE: Final = 10
_SPLIT = re.compile(b"(" + _ESCAPE.pattern + b")")
#: What a credential shows as in a ``repr`` (pydantic's ``SecretStr`` shows the same).
MASK: Final = "**********"


def needles(secret: bytes) -> tuple[tuple[bytes, str], ...]:
    """(byte string, form) pairs to look for; form is "" for the secret itself, else its encoding."""
    found: dict[bytes, str] = {secret: ""}
    found.setdefault(secret.lower(), "lower case")
    found.setdefault(secret.upper(), "upper case")
    found.setdefault(secret.hex().encode("ascii"), "hex")
    found.setdefault(secret.hex().upper().encode("ascii"), "hex")
    for offset in range(3):
        # After `offset` unknown bytes, the secret's first whole base64 character starts at
        # character ceil(8 * offset / 6); its last whole one ends where its bits do.
        encoded = base64.b64encode(b"\0" * offset + secret)
        core = encoded[-(-offset * 8 // 6) : (offset + len(secret)) * 8 // 6]
        found.setdefault(core, "base64")
        found.setdefault(core.translate(_URLSAFE), "base64url")
    return tuple(found.items())


@dataclass(frozen=True, slots=True)
class _Segment:
    view_start: int
    source_start: int
    source_end: int
    escape: bool


@dataclass(frozen=True, slots=True)
class View:
    """Bytes to search, and how their offsets map back to the bytes they were decoded from."""

    data: bytes
    form: str
    _segments: tuple[_Segment, ...] = ()
    _starts: tuple[int, ...] = ()
    _parent: View | None = None

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original bytes that `data[start:end]` was decoded from (`end > start`)."""
        if not self._segments:
            return start, end
        first = self._segments[bisect.bisect_right(self._starts, start) - 1]
        last = self._segments[bisect.bisect_right(self._starts, end - 1) - 1]
        begin = first.source_start if first.escape else first.source_start + start - first.view_start
        finish = last.source_end if last.escape else last.source_start + end - last.view_start
        return self._parent.source_span(begin, finish) if self._parent else (begin, finish)


def _decode_escape(token: bytes) -> bytes:
    if token[0] == 0x25:  # "%XX"
        return bytes.fromhex(token[1:3].decode("ascii"))
    if token[0] == 0x26:  # "&#NNN;" or "&#xHHH;"
        hexadecimal = token[2] in b"xX"
        code = int(token[3:-1], 16) if hexadecimal else int(token[2:-1])
        return chr(code).encode("utf-8", "surrogatepass") if code <= _LAST_CODE_POINT else token
    if token[1] == 0x75:  # "\uXXXX"
        return chr(int.from_bytes(bytes.fromhex(token[2:6].decode("ascii")))).encode("utf-8", "surrogatepass")
    return token[1:]  # "\\/" or "\\\\"


def _unescape(parent: View) -> View | None:
    """`parent` with its JSON and URL escapes decoded; None when it has none."""
    data = parent.data
    if b"\\" not in data and b"%" not in data and b"&#" not in data:
        return None
    out: list[bytes] = []
    segments: list[_Segment] = []
    position = 0
    length = 0
    for match in _ESCAPE.finditer(data):
        start, end = match.span()
        if start > position:
            segments.append(_Segment(length, position, start, escape=False))
            out.append(data[position:start])
            length += start - position
        decoded = _decode_escape(match.group())
        segments.append(_Segment(length, start, end, escape=True))
        out.append(decoded)
        length += len(decoded)
        position = end
    if not segments:
        return None
    segments.append(_Segment(length, position, len(data), escape=False))
    out.append(data[position:])
    return View(b"".join(out), "escaped", tuple(segments), tuple(s.view_start for s in segments), parent)


def views(data: bytes) -> list[View]:
    """The raw bytes, then the bytes with escapes decoded once and, if that left escapes, twice."""
    found = [View(data, "")]
    for _ in range(2):
        decoded = _unescape(found[-1])
        if decoded is None:
            break
        found.append(decoded)
    return found


# -- streaming ------------------------------------------------------------------------------------------

#: Decoded ``%XX``, ``\\`` and ``\/`` escapes, filled as they are met (at most 486 entries): a
#: hostile text made of URL escapes decodes each by one lookup.
_DECODED: dict[bytes, bytes] = {}


def _decoded(token: bytes) -> bytes:
    found = _DECODED.get(token)
    if found is None:
        found = _decode_escape(token)
        if len(token) <= 3:
            _DECODED[token] = found
    return found


class _Unescaper:
    """One level of escapes (those `views` decodes), decoded as a stream: :meth:`feed` the parent
    stream's bytes in order and get the decoded bytes; :meth:`begin` and :meth:`end` map decoded
    offsets back to the parent's. An escape whose end has not come yet is held back until it has (at
    most ``_LONGEST_ESCAPE - 1`` bytes), so a stream cut into pieces anywhere decodes as the whole.
    Only the escapes :meth:`forget` leaves are remembered: memory is bounded by what the caller still
    needs to map, not by the length of the stream."""

    __slots__ = (
        "_base",
        "_carry",
        "_consumed",
        "_emitted",
        "_parent_ends",
        "_parent_starts",
        "_view_ends",
        "_view_starts",
        "last_end",
    )

    def __init__(self) -> None:
        self._carry = b""
        self._consumed = 0  # parent bytes decoded so far (the carry not included)
        self._emitted = 0  # decoded bytes given out so far
        # One entry per remembered escape: where its output starts and ends, where its source does.
        self._view_starts: list[int] = []
        self._view_ends: list[int] = []
        self._parent_starts: list[int] = []
        self._parent_ends: list[int] = []
        # (view, parent) offsets just past the last forgotten escape: literal bytes map from there.
        self._base = (0, 0)
        #: The decoded offset just past the output of the last escape met (0: none yet).
        self.last_end = 0

    def feed(self, piece: bytes, *, final: bool = False) -> bytes:
        """The decoded bytes of ``piece`` (and of what was held back); ``final``: the stream ends here."""
        buf = self._carry + piece if self._carry else piece
        at = self._consumed
        if b"\\" not in buf and b"%" not in buf and b"&" not in buf:  # nothing to decode: the usual text
            self._carry = b""
            self._consumed = at + len(buf)
            self._emitted += len(buf)
            return buf
        # The text and its escapes alternate: [text, escape, text, …, text], cut by the regex engine.
        pieces = _SPLIT.split(buf)
        starts = list(accumulate(map(len, pieces), initial=0))
        if final:
            hold = len(buf)
        else:
            # An escape starting before `whole` has all its bytes here, so the pieces up to it are
            # settled; the rest (at most one escape's worth) waits for the next piece.
            whole = len(buf) - (_LONGEST_ESCAPE - 1)
            if whole <= 0:
                self._carry = buf
                return b""
            index = bisect.bisect_right(starts, whole) - 1
            if index % 2:  # inside an escape: it is whole, keep it
                hold = starts[index + 1]
                pieces = [*pieces[: index + 1], b""]
            else:  # inside text: cut it there
                hold = whole
                pieces = [*pieces[:index], pieces[index][: whole - starts[index]]]
        count = len(pieces) // 2
        if count:
            get = _DECODED.get
            pieces[1::2] = [get(token) or _decoded(token) for token in pieces[1::2]]
            views = list(accumulate(map(len, pieces), initial=self._emitted))
            self._view_starts += views[1 : 2 * count : 2]
            self._view_ends += views[2 : 2 * count + 1 : 2]
            self._parent_starts += [at + start for start in starts[1 : 2 * count : 2]]
            self._parent_ends += [at + start for start in starts[2 : 2 * count + 1 : 2]]
            self.last_end = views[2 * count]
            emitted = views[-1]
        else:
            emitted = self._emitted + hold
        self._carry = buf[hold:]
        self._consumed = at + hold
        self._emitted = emitted
        return b"".join(pieces)

    def begin(self, offset: int) -> int:
        """The parent offset where the decoded byte at ``offset`` comes from (an escape's first byte)."""
        index = bisect.bisect_right(self._view_starts, offset) - 1
        if index < 0:
            view, parent = self._base
            return parent + offset - view
        if offset < self._view_ends[index]:
            return self._parent_starts[index]
        return self._parent_ends[index] + offset - self._view_ends[index]

    def end(self, offset: int) -> int:
        """The parent offset just past where the decoded bytes before ``offset`` come from (``offset > 0``)."""
        last = offset - 1
        index = bisect.bisect_right(self._view_starts, last) - 1
        if index < 0:
            view, parent = self._base
            return parent + offset - view
        if last < self._view_ends[index]:
            return self._parent_ends[index]
        return self._parent_ends[index] + offset - self._view_ends[index]

    def forget(self, before: int) -> None:
        """Stop remembering escapes whose output ends at or before decoded offset ``before`` (no
        offset before it will be mapped again). Done in bulk, once half the records can go: amortized
        constant time per escape."""
        count = bisect.bisect_right(self._view_ends, before)
        if count and 2 * count >= len(self._view_ends):
            self._base = (self._view_ends[count - 1], self._parent_ends[count - 1])
            del self._view_starts[:count], self._view_ends[:count], self._parent_starts[:count]
            del self._parent_ends[:count]


class _Finder:
    """Needles found in a stream fed in pieces, each match once: the last ``longest - 1`` bytes are
    kept, so a match across two pieces is found, and a match wholly inside them was found before."""

    __slots__ = ("_keep", "_needles", "_tail", "start")

    def __init__(self, needles: tuple[bytes, ...]) -> None:
        self._needles = needles
        self._keep = max((len(needle) for needle in needles), default=1) - 1
        self._tail = b""
        #: The stream offset of the first byte a later match may start at.
        self.start = 0

    def feed(self, piece: bytes, *, look: bool = True) -> list[tuple[int, int]]:
        """The (start, end) stream offsets of the matches ``piece`` completes (none when not ``look``:
        the caller knows they were all found elsewhere)."""
        buf = self._tail + piece if self._tail else piece
        base = self.start
        found: list[tuple[int, int]] = []
        if look:
            fresh = len(self._tail)
            for needle in self._needles:
                size = len(needle)
                at = buf.find(needle, max(0, fresh - size + 1))
                while at >= 0:
                    found.append((base + at, base + at + size))
                    at = buf.find(needle, at + 1)
        keep = min(self._keep, len(buf))
        self._tail = buf[len(buf) - keep :]
        self.start = base + len(buf) - keep
        return found


class EchoScanner:
    """Finds echoes of secrets in a text fed in pieces, as `views` and `needles` find them in a whole
    body: ``needles`` (from :func:`needles`) are looked for in the text and in the text with its escapes
    decoded once and twice; ``raw`` needles (spellings no decoding reaches, such as a JSON ``\\"``) in
    the text only. :meth:`feed` and :meth:`close` return the (start, end) byte offsets in the text of
    each echo found, in no particular order, possibly overlapping.

    Linear time and bounded memory whatever the text: each byte is decoded and searched a fixed number
    of times, and what is remembered — the last longest-needle's length of each view, the escapes it
    came from, one piece in hand — depends on the needles and the pieces, not on the text's length.
    :attr:`settled` says how far the text is done: no echo found later starts before it."""

    __slots__ = ("_finders", "_once", "_twice")

    def __init__(self, needles: Iterable[bytes], *, raw: Iterable[bytes] = ()) -> None:
        decoded = tuple(sorted({needle for needle in needles if needle}))
        plain = tuple(sorted({*decoded, *(needle for needle in raw if needle)}))
        self._finders = (_Finder(plain), _Finder(decoded), _Finder(decoded))
        self._once = _Unescaper()
        self._twice = _Unescaper()

    @property
    def settled(self) -> int:
        """The text offset before which every echo has been returned."""
        raw, once, twice = self._finders
        return min(raw.start, self._once.begin(once.start), self._once.begin(self._twice.begin(twice.start)))

    def feed(self, piece: bytes) -> list[tuple[int, int]]:
        """The echoes that ``piece``, the next bytes of the text, completes."""
        return self._step(piece, final=False)

    def close(self) -> list[tuple[int, int]]:
        """The text ended: the echoes still pending (an escape held back at the end is plain text)."""
        return self._step(b"", final=True)

    def _step(self, piece: bytes, *, final: bool) -> list[tuple[int, int]]:
        raw, once_finder, twice_finder = self._finders
        once, twice = self._once, self._twice
        spans = raw.feed(piece)
        decoded_once = once.feed(piece, final=final)
        decoded_twice = twice.feed(decoded_once, final=final)
        # A view whose searched stretch holds no decoded byte is the level below, byte for byte: its
        # matches were all found there already.
        look = once.last_end > once_finder.start
        spans += [(once.begin(a), once.end(b)) for a, b in once_finder.feed(decoded_once, look=look)]
        look = twice.last_end > twice_finder.start
        for a, b in twice_finder.feed(decoded_twice, look=look):
            spans.append((once.begin(twice.begin(a)), once.end(twice.end(b))))
        # No match found later starts before a finder's start: escapes wholly before it are not needed.
        twice.forget(twice_finder.start)
        once.forget(min(once_finder.start, twice.begin(twice_finder.start)))
        return spans


# -- reprs ----------------------------------------------------------------------------------------------


def masked_headers(headers: Mapping[str, str | None] | None) -> dict[str, str | None] | None:
    """``headers`` with the value of every header that is not public masked (:data:`MASK`), by the
    fail-closed rule of :mod:`normalize.wire.tags`: ``authorization``, ``x-api-key``, ``x-gw-pass``
    alike, whatever their length; ``None`` values (a header removed) stay ``None``."""
    if headers is None:
        return None
    from normalize.wire.tags import public_header  # noqa: PLC0415 - a repr is rare: normalize.wire loads on it

    return {name: value if value is None or public_header(name) else MASK for name, value in headers.items()}


def masked_url(url: str) -> str:
    """``url`` with its credentials masked (:data:`MASK`): the user info, and the value of every query
    parameter whose name says it holds one (``?key=``, ``?api-key=``, ``?code=``: the names
    :func:`normalize.wire.tags.query_secrets` reads), however short. The rest is kept as written. A URL
    that does not parse is masked whole when it has an ``@`` or a query (it might hold one)."""
    from normalize.wire.tags import CREDENTIAL_NAME, CREDENTIAL_QUERY_PARAMS, NOT_CREDENTIALS  # noqa: PLC0415 - a repr is rare

    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK if "@" in url or "?" in url else url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    pairs: list[str] = []
    for pair in parts.query.split("&") if parts.query else []:
        name, equals, _ = pair.partition("=")
        lower = unquote_plus(name).lower()
        named = lower in CREDENTIAL_QUERY_PARAMS or CREDENTIAL_NAME.search(lower) is not None
        pairs.append(f"{name}={MASK}" if equals and named and lower not in NOT_CREDENTIALS else pair)
    return urlunsplit((parts.scheme, netloc, parts.path, "&".join(pairs), parts.fragment))


def masked_repr(instance: object, **shown: object) -> str:
    """The dataclass ``repr`` of ``instance``, with each field named in ``shown`` given that value
    instead of its own (a masked one). Fields declared ``repr=False`` stay out, as in the default."""
    fields = dataclasses.fields(instance)  # pyright: ignore[reportArgumentType] - a dataclass instance by contract
    parts = [
        f"{field.name}={shown[field.name] if field.name in shown else getattr(instance, field.name)!r}"
        for field in fields
        if field.repr
    ]
    return f"{type(instance).__qualname__}({', '.join(parts)})"
