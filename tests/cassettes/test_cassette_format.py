"""The JSONL format: exact round trips, validation errors that name the line, crash tolerance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cassettes
from cassettes import (
    Cassette,
    CassetteFormatError,
    Chunk,
    End,
    EndKind,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    dumps,
    loads,
)
from cassettes.model import END_KINDS
from tests.cassettes._helpers import make_cassette


def _lines(cassette: Cassette) -> list[dict[str, object]]:
    return [json.loads(line) for line in dumps(cassette).splitlines()]


def test_header_and_records_have_the_documented_shape() -> None:
    cassette = make_cassette([b"event: a\ndata: 1\n\n", b"\xff\xfe binary"], end="reset")
    header, request, head, text_chunk, b64_chunk, end = _lines(cassette)
    assert header == {
        "type": "cassette",
        "format": "streamcassette",
        "version": 1,
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
    assert text.startswith('{"type":"cassette","format":"streamcassette","version":1,"api":"openai-responses"')
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


_HEADER = '{"type":"cassette","format":"streamcassette","version":1}'
_REQUEST = '{"type":"request","i":0,"method":"POST","url":"https://h.test/"}'
_HEAD = '{"type":"response_head","i":0,"t_ms":0,"status":200}'
_CHUNK = '{"type":"chunk","i":0,"t_ms":1,"data":"x"}'
_END = '{"type":"end","i":0,"t_ms":0,"kind":"eof"}'


@pytest.mark.parametrize(
    ("lines", "line", "problem"),
    [
        (['{"type":"request","i":0}'], 1, "first line must be the header"),
        (['{"type":"cassette","format":"streamcassette","version":2}'], 1, "unsupported version 2"),
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
        ([_HEADER, _REQUEST, '{"type":"request","i":1,"method":"GET","url":"u"}', _HEAD], 3, "no response_head"),
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


def test_a_missing_end_record_loads_as_a_reset() -> None:
    text = _recorded_text()
    without_end = text[: text.rindex('{"type":"end"')]
    response = loads(without_end).interactions[0].response
    assert response.end == End("reset", 20.0)
    assert len(response.chunks) == 3


def test_a_last_line_cut_off_mid_write_is_dropped() -> None:
    text = _recorded_text()
    cut = text[: text.rindex('{"type":"end"')]
    cut = cut[: cut.rindex('{"type":"chunk"') + 25]  # the third chunk line, half written
    response = loads(cut).interactions[0].response
    assert [c.data for c in response.chunks] == [b"data: 1\n\n", b"data: 2\n\n"]
    assert response.end.kind == "reset"


def test_a_cut_off_line_that_is_not_the_last_is_an_error() -> None:
    text = _recorded_text().split("\n")
    text[3] = text[3][:10]
    with pytest.raises(CassetteFormatError) as caught:
        loads("\n".join(text))
    assert caught.value.line == 4


def test_a_request_without_response_as_last_record_is_dropped() -> None:
    text = _recorded_text() + '{"type":"request","i":1,"method":"GET","url":"https://h.test/"}\n'
    loaded = loads(text)
    assert len(loaded.interactions) == 1
    assert loaded.interactions[0].response.end.kind == "eof"


def test_stall_fields_round_trip() -> None:
    response = RecordedResponse(200, (), 0, (Chunk(b"a", 1, stall_s=2.5),), End("timeout", 3, stall_s=1))
    cassette = Cassette(interactions=(Interaction(RecordedRequest("GET", "https://h.test/"), response),))
    assert '"stall_s":2.5' in dumps(cassette)
    assert loads(dumps(cassette)) == cassette
