"""Issue 35, item 6: redaction is linear and bounded, and vendor text is cut before it is redacted.

A hostile error made of URL escapes (``%2541``, decoded twice) once cost one record per escape: 610 MB
and 6 s for a 5 MB Ollama error line, the event loop blocked past ``total_timeout``. Now:

- :func:`redact` streams: its working memory does not grow with the text (only its output does), as
  ``tracemalloc`` shows for texts of two sizes — a memory figure, no clock;
- every string a failure leaves on a message is cut at ``MAX_ERROR_TEXT`` (64 KiB) before it is
  redacted, and the cut is marked with what was left out; redacting a 15 MB error reads only a bounded
  stretch past the cut (counted), never leaves a piece of a secret at the cut and never splits a
  character; the words that classify an error, and a span's attributes, are read as boundedly;
- the in-stream errors of every framing (server-sent events, JSON lines, the AWS event stream) end
  the stream cut, marked and redacted, and a 15 MB ``%2541`` Ollama error line over real loopback HTTP
  ends its stream ``server`` with a cut, redacted message.

Planted keys are obviously fake and built at run time.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import AssistantMessage, AssistantMessageEventStream, ErrorInfo, StreamOptions, validate_events
from normalize.wire import encode_message
from streamfns.kit import MAX_ERROR_TEXT, redact, redact_message, telemetry
from streamfns.kit import keys as kit_keys
from streamfns.ollama.errors import extract as ollama_extract
from tests.adapters import ANTHROPIC, BEDROCK, CONTEXT, OLLAMA
from tests.kit._fake import ERRORS

KEY = "PLANTED-" + "redaction-key-" + "0123456789abcdef"
HOSTILE = "%2541"  # "%25" decodes to "%", and "%41" then to "A": two levels of escapes per five bytes
MARK = "… [cut: "


def _body(text: str) -> str:
    """``text`` without the cut mark."""
    return text.partition(MARK)[0]


def _peak(text: str, *, limit: int | None = None) -> int:
    """Peak bytes ``redact`` allocates on ``text`` (the text itself was allocated before)."""
    tracemalloc.start()
    try:
        redact(text, [KEY], limit=limit)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- linear, bounded -------------------------------------------------------------------------------------


def test_redaction_memory_grows_with_the_output_only() -> None:
    """Whatever the text is made of, memory is the output's (a few copies of it), not a record per
    escape: 4x the text costs about 4x, and stays within a few times the text's size."""
    small, large = HOSTILE * 20_000, HOSTILE * 80_000  # 100 KB and 400 KB (tracemalloc slows each allocation)
    small_peak, large_peak = _peak(small), _peak(large)
    assert small_peak <= 4 * len(small) + 4 * 2**20  # the output, and a working set of a few pieces
    assert large_peak <= 4 * len(large) + 4 * 2**20
    assert large_peak <= 5 * small_peak


def test_a_cut_redaction_reads_a_bounded_stretch_of_a_15_mb_text(monkeypatch: pytest.MonkeyPatch) -> None:
    text = KEY + " " + HOSTILE * 3_000_000  # 15 MB
    read: list[int] = []
    pieces = kit_keys._pieces  # pyright: ignore[reportPrivateUsage]

    def counted(whole: str) -> Iterator[bytes]:
        for piece in pieces(whole):
            read.append(len(piece))
            yield piece

    monkeypatch.setattr(kit_keys, "_pieces", counted)
    out = redact(text, [KEY], limit=MAX_ERROR_TEXT)
    assert sum(read) <= 4 * MAX_ERROR_TEXT  # the cut and the read-ahead an echo may need, not 15 MB
    assert out.startswith("[redacted] %2541")
    assert out.endswith(f"{MARK}{len(text) - MAX_ERROR_TEXT:,} more bytes]")
    assert len(_body(out).encode()) == MAX_ERROR_TEXT - len(KEY) + len("[redacted]")  # the text's first 64 KiB
    monkeypatch.setattr(kit_keys, "_pieces", pieces)
    assert _peak(text, limit=MAX_ERROR_TEXT) <= 4 * 2**20


def test_a_span_attribute_redacts_a_bounded_stretch_of_a_hostile_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """Telemetry redacts what the vendor names (an id, a model, a stop reason) the same bounded way."""
    read: list[int] = []
    pieces = kit_keys._pieces  # pyright: ignore[reportPrivateUsage]

    def counted(whole: str) -> Iterator[bytes]:
        for piece in pieces(whole):
            read.append(len(piece))
            yield piece

    monkeypatch.setattr(kit_keys, "_pieces", counted)
    shown = telemetry._bounded(KEY + HOSTILE * 3_000_000, [KEY], 256)  # pyright: ignore[reportPrivateUsage]
    assert sum(read) <= 4 * MAX_ERROR_TEXT
    assert shown.startswith("[redacted]%2541")
    assert len(shown) == 256


# -- the cut -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["raw", "url-escaped", "escaped twice"])
def test_a_cut_through_a_secret_blanks_it_whole(spelling: str) -> None:
    """Wherever the cut falls — before, inside or after an echo — no piece of the secret is left."""
    echo = {
        "raw": KEY,
        "url-escaped": "".join(f"%{ord(ch):02X}" for ch in KEY),
        "escaped twice": "".join(f"%25{ord(ch):02X}" for ch in KEY),
    }[spelling]
    head, tail = "x" * 100, "y" * 100
    text = head + echo + tail
    for limit in range(90, len(text) + 5):
        body = _body(redact(text, [KEY], limit=limit))
        if limit <= len(head):
            assert body == head[:limit]
        elif limit < len(head) + len(echo):
            assert body == head + "[redacted]"  # the cut goes through the echo: blanked whole
        else:
            assert body == (head + "[redacted]" + tail)[: limit - len(echo) + len("[redacted]")]
        for size in range(4, len(KEY) + 1):  # no stretch of the key in any spelling
            assert KEY[:size] not in body or size < 8


def test_a_cut_keeps_characters_whole_and_says_how_much_it_left_out() -> None:
    text = "é" * 1000  # two bytes each
    for limit in (9, 10, 11):
        out = redact(text, [], limit=limit)
        assert _body(out) == "é" * (limit // 2)
        assert out.endswith(f"{MARK}{2000 - 2 * (limit // 2):,} more bytes]")
    assert redact("short", [], limit=MAX_ERROR_TEXT) == "short"
    with pytest.raises(ValueError, match="cannot hold a character"):
        redact(text, [], limit=3)


def test_redact_message_cuts_and_redacts_every_string_a_failure_leaves() -> None:
    long = KEY + " " + HOSTILE * 40_000  # 200 KB
    message = AssistantMessage(
        stop_reason="error",
        error_message=long,
        raw_stop_reason=long,
        error_info=ErrorInfo.of("server", code=long),
    )
    redact_message(message, [KEY])
    info = message.error_info
    assert info is not None
    assert info.kind == "server"
    for value in (message.error_message, message.raw_stop_reason, info.code):
        assert value is not None
        assert value.startswith("[redacted] %2541")
        assert value.endswith(" more bytes]")
        assert len(_body(value).encode()) == MAX_ERROR_TEXT - len(KEY) + len("[redacted]")
        assert redact(value, [KEY]) == value


def test_words_past_the_cut_neither_classify_an_error_nor_cost_a_scan() -> None:
    """The words that classify an error (an overflow phrase, a retry hint, Ollama's phrases) are read
    in what the message keeps: a megabyte-long hostile error costs no more to classify."""
    said = " the prompt is too long, try again in 5s"
    near = ERRORS.from_event({"error": {"message": "x" * 100 + said}})
    assert (near.info.kind, near.info.retry_after_s) == ("context_overflow", 5.0)
    far = ERRORS.from_event({"error": {"message": "x" * MAX_ERROR_TEXT + said}})
    assert (far.info.kind, far.info.retry_after_s) == ("server", None)
    far_words = ollama_extract({"error": "x" * MAX_ERROR_TEXT + " model not found"})
    assert far_words is not None
    assert far_words.type is None
    near_words = ollama_extract({"error": "model not found"})
    assert near_words is not None
    assert near_words.type == "model_not_found"


# -- every framing's in-stream error ---------------------------------------------------------------------


def _long_error_text() -> str:
    # A key at the start, one across the cut (wherever the message's own prefix puts it), the rest hostile.
    return KEY + " " + HOSTILE * (MAX_ERROR_TEXT // 5 - 10) + (" " + KEY) * 40 + HOSTILE * 200_000


def _assert_cut_and_redacted(message: AssistantMessage, kind: str) -> None:
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_info.kind == kind
    text = message.error_message or ""
    assert text.endswith(" more bytes]")
    assert len(_body(text).encode()) <= MAX_ERROR_TEXT + len("[redacted]")
    assert "[redacted]" in text
    for where in (text, json.dumps(message.to_json())):
        assert KEY not in where
        assert redact(where, [KEY]) == where
        assert KEY[:12] not in where  # no piece left at the cut either


async def test_an_sse_error_event_is_cut_and_redacted() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": _long_error_text()}}
    event = f"event: error\ndata: {json.dumps(error)}\n\n".encode()
    events, message = await ANTHROPIC.run_reads([event], headers={"x-gw-pass": KEY})
    assert validate_events(events) == []
    _assert_cut_and_redacted(message, "overloaded")


async def test_a_json_lines_error_is_cut_and_redacted() -> None:
    line = json.dumps({"error": _long_error_text()}).encode() + b"\n"
    events, message = await OLLAMA.run_reads([line], content_type="application/x-ndjson", headers={"x-gw-pass": KEY})
    assert validate_events(events) == []
    _assert_cut_and_redacted(message, "server")


async def test_an_event_stream_exception_is_cut_and_redacted() -> None:
    headers = {
        ":exception-type": "throttlingException",
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    frame = encode_message(headers, json.dumps({"message": _long_error_text()}).encode())
    events, message = await BEDROCK.run_reads(
        [frame], content_type="application/vnd.amazon.eventstream", headers={"x-gw-pass": KEY}
    )
    assert validate_events(events) == []
    _assert_cut_and_redacted(message, "rate_limit")


async def test_a_15_mb_hostile_ollama_error_line_over_loopback_ends_cut_and_redacted() -> None:
    """The issue's case, over real HTTP: a 15 MB ``%2541`` error line. (Its memory is the line the
    framing buffers, read in 64 KiB pieces; the server sends one shared block again and again.)"""
    block = HOSTILE.encode() * 13_107  # 64 KiB less a byte
    head = json.dumps({"error": _long_error_text()}).encode()[:-2]  # the string left open
    chunks = [(0.0, head), *[(0.0, block)] * 228, (0.0, b'"}\n')]
    plan = Scripted(headers=[("content-type", "application/x-ndjson")], chunks=chunks)
    async with LoopbackServer(plan) as server:
        options = StreamOptions(api_key=KEY, max_retries=0, total_timeout=60)
        made = OLLAMA.adapter.stream_fn(OLLAMA.model(base_url=server.base_url), CONTEXT, options)
        stream = made if isinstance(made, AssistantMessageEventStream) else await made
        events = [event async for event in stream]
        message = await stream.result()
    assert validate_events(events) == []
    _assert_cut_and_redacted(message, "server")
    left_out = int((message.error_message or "").rpartition(MARK)[2].split()[0].replace(",", ""))
    assert left_out > 15_000_000
