"""The JSONL format: exact round trips, validation errors that name the line, crash tolerance."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cassettes
from cassettes import (
    Cassette,
    CassetteFormatError,
    CassetteIncomplete,
    Chunk,
    End,
    EndKind,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    dumps,
    loads,
)
from cassettes.format import MAX_FILE_BYTES, MAX_LINE_BYTES
from cassettes.model import END_KINDS
from tests.cassettes._helpers import make_cassette


def _lines(cassette: Cassette) -> list[dict[str, object]]:
    return [json.loads(line) for line in dumps(cassette).splitlines()]


def test_header_and_records_have_the_documented_shape() -> None:
    cassette = make_cassette([b"event: a\ndata: 1\n\n", b"\xff\xfe binary"], end="reset")
    header, request, head, text_chunk, b64_chunk, end, footer = _lines(cassette)
    assert header == {
        "type": "cassette",
        "format": "streamcassette",
        "version": 2,
        "api": "anthropic-messages",
        "model": "m",
        "recorded_at": None,
    }
    assert request["type"] == "request"
    assert request["body_json"] == {"model": "m", "stream": True}
    content_type = {"content-type": ["text/event-stream"]}
    assert head == {"type": "response_head", "i": 0, "t_ms": 0, "status": 200, "headers": content_type}
    assert text_chunk == {"type": "chunk", "i": 0, "t_ms": 0.0, "data": "event: a\ndata: 1\n\n"}
    assert b64_chunk["b64"] == "//4gYmluYXJ5"
    assert "data" not in b64_chunk
    assert end == {"type": "end", "i": 0, "t_ms": 10.0, "kind": "reset"}
    assert footer == {"type": "footer", "interactions": 1}


def test_round_trip_is_exact_for_objects_and_bytes() -> None:
    chunks = [b"data: caf\xc3", b"\xa9\r\n\r\n", b"", b"data: \xe2\x80\xa8 line sep\n\n"]
    cassette = make_cassette(chunks, times=[0, 1.5, 2, 3])
    text = dumps(cassette)
    again = loads(text)
    assert again == cassette
    assert [c.data for c in again.interactions[0].response.chunks] == chunks
    assert dumps(again) == text


def test_non_canonical_or_binary_request_bodies_survive_a_round_trip() -> None:
    for body, key in ((b'{ "b": 1, "a": 2 }', "body_text"), (b"\x00\xff", "body_b64"), (b"a=1&b=2", "body_text")):
        cassette = make_cassette([b"x"], body=body)
        assert key in _lines(cassette)[1]
        assert loads(dumps(cassette)).interactions[0].request.body == body


def test_header_extras_and_source_are_kept_in_order() -> None:
    cassette = Cassette(
        api="openai-responses",
        source={"repository": "o/r", "commit": "abc"},
        extra={"name": "n", "timing": "synthetic"},
    )
    text = dumps(cassette)
    assert text.startswith('{"type":"cassette","format":"streamcassette","version":2,"api":"openai-responses"')
    assert loads(text) == cassette
    assert loads(text).name == "n"


chunk_bytes = st.lists(st.binary(max_size=40), max_size=8)


@given(chunk_bytes, st.sampled_from(END_KINDS))
def test_any_bytes_round_trip_with_identical_boundaries(chunks: list[bytes], end: EndKind) -> None:
    cassette = make_cassette(chunks, times=[float(n) for n in range(len(chunks))], end=end)
    again = loads(dumps(cassette))
    assert [c.data for c in again.interactions[0].response.chunks] == chunks
    assert again.interactions[0].response.end.kind == end
    assert dumps(again) == dumps(cassette)


def test_save_and_load_files(tmp_path: Path) -> None:
    cassette = make_cassette([b"data: 1\n\n"])
    target = tmp_path / "deep" / "x.jsonl"
    cassettes.save(cassette, target)
    assert cassettes.load(target) == cassette
    assert not list(target.parent.glob("*.tmp"))


def test_interleaved_records_of_concurrent_interactions_load() -> None:
    request = RecordedRequest("GET", "https://h.test/a")
    lines = [
        '{"type":"cassette","format":"streamcassette","version":1}',
        '{"type":"request","i":0,"method":"GET","url":"https://h.test/a"}',
        '{"type":"response_head","i":0,"t_ms":1,"status":200}',
        '{"type":"request","i":1,"method":"GET","url":"https://h.test/a"}',
        '{"type":"response_head","i":1,"t_ms":1,"status":201}',
        '{"type":"chunk","i":1,"t_ms":2,"data":"second"}',
        '{"type":"chunk","i":0,"t_ms":3,"data":"first"}',
        '{"type":"end","i":1,"t_ms":4,"kind":"eof"}',
        '{"type":"end","i":0,"t_ms":5,"kind":"eof"}',
    ]
    loaded = loads("\n".join(lines) + "\n")
    assert [i.request for i in loaded.interactions] == [request, request]
    assert [i.response.body for i in loaded.interactions] == [b"first", b"second"]
    assert [i.response.status for i in loaded.interactions] == [200, 201]


_HEADER = '{"type":"cassette","format":"streamcassette","version":2}'
_REQUEST = '{"type":"request","i":0,"method":"POST","url":"https://h.test/"}'
_HEAD = '{"type":"response_head","i":0,"t_ms":0,"status":200}'
_CHUNK = '{"type":"chunk","i":0,"t_ms":1,"data":"x"}'
_END = '{"type":"end","i":0,"t_ms":0,"kind":"eof"}'


@pytest.mark.parametrize(
    ("lines", "line", "problem"),
    [
        (['{"type":"request","i":0}'], 1, "first line must be the header"),
        (['{"type":"cassette","format":"streamcassette","version":3}'], 1, "unsupported version 3"),
        ([_HEADER, "[1, 2]"], 2, "must be a JSON object"),
        ([_HEADER, "{not json", _REQUEST], 2, "not valid JSON"),
        ([_HEADER, "", _REQUEST], 2, "empty line"),
        ([_HEADER, '{"type":"request","i":1,"method":"GET","url":"u"}'], 2, "expected interaction 0"),
        ([_HEADER, _REQUEST, '{"type":"chunk","i":0,"t_ms":1,"data":"x"}'], 3, "before its response_head"),
        ([_HEADER, _REQUEST, _HEAD, '{"type":"chunk","i":0,"t_ms":1,"b64":"!!"}'], 4, "not valid base64"),
        ([_HEADER, _REQUEST, _HEAD, '{"type":"chunk","i":0,"t_ms":1}'], 4, "exactly one of 'data'"),
        ([_HEADER, _REQUEST, _HEAD, '{"type":"chunk","i":0,"t_ms":1,"data":"x","extra":1}'], 4, "unknown keys: extra"),
        ([_HEADER, _REQUEST, _HEAD, '{"type":"end","i":0,"t_ms":1,"kind":"boom"}'], 4, "end kind 'boom'"),
        ([_HEADER, _REQUEST, _HEAD.replace('"t_ms":0', '"t_ms":5'), _CHUNK], 4, "t_ms goes backwards"),
        ([_HEADER, _REQUEST, '{"type":"response_head","i":0,"t_ms":0,"status":42}'], 3, "not an HTTP status"),
        ([_HEADER, _REQUEST, _HEAD, _END, _CHUNK], 5, "after its end record"),
        ([_HEADER, '{"type":"frame","i":0}'], 2, "unknown record type 'frame'"),
        ([_HEADER, '{"type":"request","i":0,"method":"GET"}'], 2, "missing 'url'"),
        (
            [_HEADER, _REQUEST, '{"type":"request","i":1,"method":"GET","url":"https://h.test/"}', _HEAD],
            3,
            "no response_head",
        ),
    ],
)
def test_invalid_files_name_the_line_and_the_problem(lines: list[str], line: int, problem: str) -> None:
    with pytest.raises(CassetteFormatError) as caught:
        loads("\n".join(lines) + "\n", source="bad.jsonl")
    assert caught.value.line == line
    assert problem in str(caught.value)
    assert str(caught.value).startswith(f"bad.jsonl:{line}: ")


def test_empty_and_non_utf8_files_are_rejected() -> None:
    with pytest.raises(CassetteFormatError, match="empty file"):
        loads("")
    with pytest.raises(CassetteFormatError, match="not UTF-8"):
        loads(b"\xff\xfe")


def _recorded_text() -> str:
    return dumps(make_cassette([b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"]))


def _without_footer(text: str) -> str:
    return text[: text.rindex('{"type":"footer"')]


def test_a_file_without_its_footer_is_incomplete_and_says_why() -> None:
    cut = _without_footer(_recorded_text())
    with pytest.raises(CassetteIncomplete, match="no completion footer") as caught:
        loads(cut, source="cut.jsonl")
    assert str(caught.value).startswith("cut.jsonl: incomplete recording: no completion footer")
    assert isinstance(caught.value, CassetteFormatError)
    loaded = loads(cut, allow_incomplete=True)
    assert loaded.incomplete is not None
    assert "no completion footer" in loaded.incomplete
    assert loaded.interactions[0].response.end.kind == "eof", "what was recorded is all there"
    # An incomplete cassette stays incomplete when written again: no footer is invented.
    assert dumps(loaded) == cut


def test_a_missing_end_record_loads_as_a_reset_only_when_incomplete_is_allowed() -> None:
    text = _recorded_text()
    without_end = text[: text.rindex('{"type":"end"')]
    with pytest.raises(CassetteIncomplete, match=r"interaction\(s\) 0 have no end record"):
        loads(without_end)
    response = loads(without_end, allow_incomplete=True).interactions[0].response
    assert response.end == End("reset", 20.0)
    assert len(response.chunks) == 3


def test_a_last_line_cut_off_mid_write_is_dropped() -> None:
    text = _recorded_text()
    cut = text[: text.rindex('{"type":"end"')]
    cut = cut[: cut.rindex('{"type":"chunk"') + 25]  # the third chunk line, half written
    with pytest.raises(CassetteIncomplete, match="line 6 is cut off mid-write") as caught:
        loads(cut)
    assert caught.value.line == 6
    loaded = loads(cut, allow_incomplete=True)
    response = loaded.interactions[0].response
    assert [c.data for c in response.chunks] == [b"data: 1\n\n", b"data: 2\n\n"]
    assert response.end.kind == "reset"


def test_a_cut_off_line_that_is_not_the_last_is_an_error() -> None:
    text = _recorded_text().split("\n")
    text[3] = text[3][:10]
    with pytest.raises(CassetteFormatError) as caught:
        loads("\n".join(text), allow_incomplete=True)
    assert caught.value.line == 4
    assert not isinstance(caught.value, CassetteIncomplete)


def test_a_request_without_response_as_last_record_is_dropped() -> None:
    text = _without_footer(_recorded_text()) + '{"type":"request","i":1,"method":"GET","url":"https://h.test/"}\n'
    with pytest.raises(CassetteIncomplete, match="interaction 1 has a request but no response"):
        loads(text)
    loaded = loads(text, allow_incomplete=True)
    assert len(loaded.interactions) == 1
    assert loaded.interactions[0].response.end.kind == "eof"


_V1_HEADER = '{"type":"cassette","format":"streamcassette","version":1}'


def test_version_1_files_without_a_footer_are_complete_when_every_interaction_ended() -> None:
    """Files written before the footer existed: whole when the last line is whole and every
    interaction has its end record (what the old recorder always wrote unless it was killed)."""
    body = [_REQUEST, _HEAD, _CHUNK, _END.replace('"t_ms":0', '"t_ms":2')]
    whole = loads("\n".join([_V1_HEADER, *body]) + "\n")
    assert whole.incomplete is None
    assert whole.interactions[0].response.body == b"x"
    with pytest.raises(CassetteIncomplete, match="interaction\\(s\\) 0 have no end record"):
        loads("\n".join([_V1_HEADER, *body[:-1]]) + "\n")
    with pytest.raises(CassetteIncomplete, match="does not end in a newline"):
        loads("\n".join([_V1_HEADER, *body]))
    with pytest.raises(CassetteFormatError, match="a footer record in a version 1 file"):
        loads("\n".join([_V1_HEADER, *body, '{"type":"footer","interactions":1}']) + "\n")


@pytest.mark.parametrize(
    ("footer", "problem"),
    [
        ('{"type":"footer","interactions":2}', "the footer counts 2 interactions, the file holds 1"),
        ('{"type":"footer","interactions":1,"x":1}', "footer record has unknown keys: x"),
        ('{"type":"footer"}', "missing 'interactions'"),
    ],
)
def test_a_wrong_footer_is_an_error(footer: str, problem: str) -> None:
    lines = [_HEADER, _REQUEST, _HEAD, _END, footer]
    with pytest.raises(CassetteFormatError, match=problem):
        loads("\n".join(lines) + "\n")


def test_nothing_may_follow_the_footer_and_the_footer_needs_every_end() -> None:
    footer = '{"type":"footer","interactions":1}'
    with pytest.raises(CassetteFormatError, match="a record after the footer") as caught:
        loads("\n".join([_HEADER, _REQUEST, _HEAD, _END, footer, _CHUNK]) + "\n")
    assert caught.value.line == 6
    with pytest.raises(CassetteFormatError, match="before the end record of interaction"):
        loads("\n".join([_HEADER, _REQUEST, _HEAD, footer]) + "\n")


def test_stall_fields_round_trip() -> None:
    response = RecordedResponse(200, (), 0, (Chunk(b"a", 1, stall_s=2.5),), End("timeout", 3, stall_s=1))
    cassette = Cassette(interactions=(Interaction(RecordedRequest("GET", "https://h.test/"), response),))
    assert '"stall_s":2.5' in dumps(cassette)
    assert loads(dumps(cassette)) == cassette


# -- hostile files ------------------------------------------------------------------------------------


def _text(*records: str) -> str:
    return "\n".join(records) + "\n"


def _with(record: str) -> str:
    return _text(_HEADER, _REQUEST, _HEAD, record)


_INJECTED_HEAD = '{"type":"response_head","i":0,"t_ms":0,"status":200,"headers":{"x-a":["ok\\r\\nset-cookie: evil=1"]}}'
_NUL_NAME_HEAD = '{"type":"response_head","i":0,"t_ms":0,"status":200,"headers":{"x-a\\u0000b":["v"]}}'
_LF_REQUEST = '{"type":"request","i":0,"method":"GET","url":"https://h.test/","headers":{"content-type":["a\\nb"]}}'


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        # Deep nesting used to raise RecursionError, a 5000-digit number ValueError.
        (
            _with('{"type":"chunk","i":0,"t_ms":1,"data":"x","stall_s":' + "[" * 100_000 + "]" * 100_000 + "}"),
            4,
            "nested",
        ),
        (_with('{"type":"chunk","i":0,"t_ms":1,"data":"x","x":' + "[" * 150 + "]" * 150 + "}"), 4, "nested too deeply"),
        (_with('{"type":"chunk","i":0,"t_ms":' + "9" * 5000 + ',"data":"x"}'), 4, "not valid JSON"),
        (_with('{"type":"chunk","i":0,"t_ms":1e400,"data":"x"}'), 4, "too large"),
        (_with('{"type":"chunk","i":0,"t_ms":1e300,"data":"x"}'), 4, "'t_ms' must be between 0 and"),
        (_with('{"type":"chunk","i":0,"t_ms":1,"data":"x","stall_s":1e9}'), 4, "'stall_s' must be between 0 and"),
        # Accepted and replayed before: header injection, a NUL in a name, a negative index.
        (_with('{"type":"chunk","i":-1,"t_ms":1,"data":"x"}'), 4, "'i' must be a non-negative integer"),
        (_text(_HEADER, _REQUEST, _INJECTED_HEAD), 3, "control character"),
        (_text(_HEADER, _REQUEST, _NUL_NAME_HEAD), 3, "not an HTTP token"),
        (_text(_HEADER, _LF_REQUEST), 2, "control character"),
        (_text(_HEADER, '{"type":"request","i":0,"method":"G T","url":"https://h.test/"}'), 2, "method"),
        (_text(_HEADER, '{"type":"request","i":0,"method":"GET","url":"https://h.test/a b"}'), 2, "url"),
        (_text(_HEADER, '{"type":"request","i":0,"method":"GET","url":"http://[::1"}'), 2, "not a URL"),
        # JSON can spell a lone surrogate, which is not text.
        (_with('{"type":"chunk","i":0,"t_ms":1,"data":"\\ud800"}'), 4, "lone surrogate"),
        (
            _text(_HEADER, '{"type":"request","i":0,"method":"POST","url":"https://h.test/","body_text":"\\udfff"}'),
            2,
            "lone surrogate",
        ),
        (_with('{"type":"chunk","i":0,"t_ms":1,"data":"x"}').replace("\n", "\n\udcff", 1), 2, "not UTF-8"),
    ],
)
def test_hostile_records_are_format_errors_that_name_the_line(text: str, line: int, problem: str) -> None:
    with pytest.raises(CassetteFormatError, match=problem) as caught:
        loads(text.encode("utf-8", "surrogatepass"), source="hostile.jsonl")
    assert caught.value.line == line


def test_line_and_file_size_limits_are_checked_before_parsing(tmp_path: Path) -> None:
    big_chunk = '{"type":"chunk","i":0,"t_ms":1,"data":"' + "x" * 2000 + '"}'
    text = _with(big_chunk)
    assert loads(text, allow_incomplete=True).interactions[0].response.body == b"x" * 2000
    with pytest.raises(CassetteFormatError, match="more than the limit of 1000") as caught:
        loads(text, max_line_bytes=1000)
    assert caught.value.line == 4
    with pytest.raises(CassetteFormatError, match="more than the limit of 1000 bytes"):
        loads(text, max_file_bytes=1000)
    path = tmp_path / "big.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CassetteFormatError, match="more than the limit of 1000 bytes"):
        cassettes.load(path, max_file_bytes=1000)
    assert MAX_LINE_BYTES >= 16 * 1024 * 1024, "room for a request with large images"


def test_the_default_file_cap_bounds_what_loading_costs(tmp_path: Path) -> None:
    """Loading holds about three times the file in memory, so the default cap is 64 MiB (about
    200 MB at the cap, not 770 MB): a file over it is refused from its size alone, unread."""
    assert MAX_FILE_BYTES == 64 * 1024 * 1024
    assert MAX_LINE_BYTES <= MAX_FILE_BYTES
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is written, and nothing may be read
    with pytest.raises(CassetteFormatError, match=f"{MAX_FILE_BYTES + 1} bytes is more than the limit"):
        cassettes.load(path)


def test_replay_never_sees_what_loading_rejects() -> None:
    """Header values that are not ASCII (but not control characters either) load and replay as UTF-8."""
    head = '{"type":"response_head","i":0,"t_ms":0,"status":200,"headers":{"x-note":["café"]}}'
    cassette = loads(_text(_HEADER, _REQUEST, head, _END, '{"type":"footer","interactions":1}'))
    transport = cassettes.ReplayTransport(cassette, match="any")
    with httpx.Client(transport=transport) as client:
        response = client.post("https://h.test/")
    assert response.headers.raw == [(b"x-note", "café".encode())]


def test_a_request_body_nested_deeper_than_the_limit_is_stored_as_text() -> None:
    deep = b"[" * 150 + b"]" * 150
    cassette = make_cassette([b"x"], body=deep)
    text = dumps(cassette)
    assert '"body_text":"' in text
    assert loads(text).interactions[0].request.body == deep
