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
"""

from __future__ import annotations

import base64
import bisect
import re
from dataclasses import dataclass

__all__ = ["MIN_SECRET_BYTES", "View", "needles", "views"]

#: Shorter values are not looked for: "test" or a 4-digit PIN would match everywhere. They are
#: still never written, because the headers, parameters and fields that carry them are scrubbed.
MIN_SECRET_BYTES = 8

_URLSAFE = bytes.maketrans(b"+/", b"-_")
_ESCAPE = re.compile(rb"\\u[0-9a-fA-F]{4}|\\[\\/]|%[0-9a-fA-F]{2}|&#[0-9]{1,7};|&#[xX][0-9a-fA-F]{1,6};")
_LAST_CODE_POINT = 0x10FFFF


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
