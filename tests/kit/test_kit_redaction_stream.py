"""The streaming echo scanner finds what the whole-body views find, wherever its pieces are cut.

:class:`normalize.secret_forms.EchoScanner` (what :func:`streamfns.kit.redact` runs on) decodes escapes
as a stream, holding back an escape cut in two and remembering only recent escapes; the cassette
recorder's :func:`normalize.secret_forms.views` decodes a whole body at once. Property: for any text
made of escape fragments, backslash runs and echoes of a secret in every spelling, fed in pieces of any
size, both give the same blanked stretches. And a redaction cut at any ``limit`` is a prefix of the
uncut redaction (so no piece of a secret is ever left at the cut).
"""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from normalize.secret_forms import EchoScanner, needles, views
from streamfns.kit import keys as kit_keys
from streamfns.kit import redact

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout

SECRET = "PLANTED-" + "k3y/with\\odd+chars=" + "0123"
_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _spellings(secret: str) -> list[str]:
    encoded = secret.encode()
    return [
        secret,
        secret.upper(),
        quote(secret, safe=""),
        quote(quote(secret, safe=""), safe=""),
        "".join(f"\\u{ord(ch):04x}" for ch in secret),
        "".join(f"&#{ord(ch)};" for ch in secret),
        json.dumps(secret)[1:-1],
        base64.b64encode(encoded).decode(),
        encoded.hex(),
        "".join(quote(ch, safe="") if i % 2 else ch for i, ch in enumerate(secret)),
    ]


_FRAGMENT = st.sampled_from(
    [
        "%",
        "%2",
        "%25",
        "%41",
        "%5C",
        "%5c",
        "\\",
        "\\\\",
        "\\u",
        "\\u00",
        "\\u0041",
        "&",
        "&#",
        "&#x4",
        ";",
        "é",
        "a",
        " ",
    ]
)
_PIECE = st.one_of(_FRAGMENT, st.sampled_from(_spellings(SECRET)))
_TEXT = st.lists(_PIECE, max_size=40).map("".join)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for begin, end in sorted(spans):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((begin, end))
    return merged


def _whole(data: bytes, targets: list[bytes]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for view in views(data):
        for needle in targets:
            at = view.data.find(needle)
            while at >= 0:
                spans.append(view.source_span(at, at + len(needle)))
                at = view.data.find(needle, at + 1)
    return _merged(spans)


@_SETTINGS
@given(text=_TEXT, size=st.integers(min_value=1, max_value=64))
def test_the_stream_finds_what_the_whole_body_views_find(text: str, size: int) -> None:
    data = text.encode("utf-8")
    targets = [needle for needle, _ in needles(SECRET.encode())]
    scanner = EchoScanner(targets)
    spans: list[tuple[int, int]] = []
    for start in range(0, len(data), size):
        spans += scanner.feed(data[start : start + size])
        assert scanner.settled <= start + size
    spans += scanner.close()
    assert _merged(spans) == _whole(data, targets)


@_SETTINGS
@given(text=_TEXT, limit=st.integers(min_value=4, max_value=400), piece=st.integers(min_value=1, max_value=64))
def test_a_cut_redaction_is_a_prefix_of_the_whole_one(text: str, limit: int, piece: int) -> None:
    whole = redact(text, [SECRET])
    # Small pieces, so the cut falls while echoes across pieces are still being decoded.
    size, kit_keys._PIECE_CHARS = kit_keys._PIECE_CHARS, piece  # pyright: ignore[reportPrivateUsage]
    try:
        cut = redact(text, [SECRET], limit=limit)
    finally:
        kit_keys._PIECE_CHARS = size  # pyright: ignore[reportPrivateUsage]
    body, mark, _ = cut.partition("… [cut: ")
    assert whole.startswith(body)
    assert bool(mark) == (len(text.encode()) > limit)
