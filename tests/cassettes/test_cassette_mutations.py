"""Mutations: each derives the advertised fault, keeps what it promises, never touches its input."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cassettes import (
    Cassette,
    CassetteError,
    ReplayTransport,
    corrupt_json,
    drop_terminal,
    dumps,
    empty_body,
    library,
    loads,
    mutations,
    rechunk,
    stall,
    status_override,
    truncate,
)
from cassettes.canonical import NotJSON
from cassettes.model import header_value
from normalize.wire import profile_for
from tests.cassettes._helpers import make_cassette
from tests.sse_events import split_events

MIXED = [
    'event: a\r\ndata: {"t": "caf\u00e9"}\r\n\r\n'.encode(),
    'event: b\r\ndata: {"t": "\u65e5\u672c \U0001f389"}\r\n\r\n'.encode(),
    b"data: [DONE]\r\n\r\n",
]


def _chunks(cassette: Cassette, interaction: int = 0) -> list[bytes]:
    return [c.data for c in cassette.interactions[interaction].response.chunks]


def _boundaries(chunks: list[bytes]) -> set[int]:
    positions: set[int] = set()
    offset = 0
    for chunk in chunks[:-1]:
        offset += len(chunk)
        positions.add(offset)
    return positions


async def _replay(cassette: Cassette) -> list[bytes]:
    seen: list[bytes] = []
    async with (
        httpx.AsyncClient(transport=ReplayTransport(cassette, match="any")) as client,
        client.stream("GET", "https://h.test/") as response,
    ):
        seen.extend([chunk async for chunk in response.aiter_raw()])
    return seen


async def test_rechunk_one_byte_keeps_bytes_and_replays_byte_by_byte() -> None:
    original = make_cassette(MIXED)
    one = rechunk(original, 1)
    assert all(len(c) == 1 for c in _chunks(one))
    assert b"".join(_chunks(one)) == b"".join(MIXED)
    assert await _replay(one) == _chunks(one)
    assert _chunks(original) == MIXED, "the input is untouched"


def test_rechunked_pieces_arrive_when_their_last_byte_did() -> None:
    one = rechunk(make_cassette([b"ab", b"cd"], times=[0, 40]), 1)
    assert [c.t_ms for c in one.interactions[0].response.chunks] == [0, 0, 40, 40]


@given(st.lists(st.binary(min_size=1, max_size=30), min_size=1, max_size=6), st.integers(0, 1000))
def test_random_rechunk_keeps_total_bytes(chunks: list[bytes], seed: int) -> None:
    mutated = rechunk(make_cassette(chunks, times=[float(n) for n in range(len(chunks))]), "random", seed=seed)
    assert b"".join(_chunks(mutated)) == b"".join(chunks)
    assert all(1 <= len(c) <= 64 for c in _chunks(mutated))
    stamps = [c.t_ms for c in mutated.interactions[0].response.chunks]
    assert stamps == sorted(stamps)


def test_random_rechunk_is_reproducible_per_seed() -> None:
    body = make_cassette([bytes(range(256)) * 4])
    assert _chunks(rechunk(body, "random", seed=7)) == _chunks(rechunk(body, "random", seed=7))
    assert _chunks(rechunk(body, "random", seed=7)) != _chunks(rechunk(body, "random", seed=8))


def test_split_crlf_cuts_between_every_cr_and_lf_and_keeps_old_boundaries() -> None:
    mutated = rechunk(make_cassette(MIXED), "split_crlf")
    pieces = _chunks(mutated)
    assert b"".join(pieces) == b"".join(MIXED)
    assert not any(b"\r\n" in piece for piece in pieces)
    assert _boundaries(MIXED) <= _boundaries(pieces)


def test_split_utf8_cuts_inside_every_multibyte_character() -> None:
    mutated = rechunk(make_cassette(MIXED), "split_utf8")
    pieces = _chunks(mutated)
    assert b"".join(pieces) == b"".join(MIXED)
    body = b"".join(MIXED)
    leads = [i for i, byte in enumerate(body) if byte >= 0xC2]
    assert len(leads) == 4  # é, 日, 本, 🎉
    assert {lead + 1 for lead in leads} <= _boundaries(pieces)
    # Such chunks are not valid UTF-8 alone; the file stores them as base64 and round-trips them.
    assert '"b64"' in dumps(mutated)
    assert _chunks(loads(dumps(mutated))) == pieces


def test_truncate_after_bytes_and_after_chunks() -> None:
    original = make_cassette(MIXED)
    by_bytes = truncate(original, after_bytes=30)
    assert b"".join(_chunks(by_bytes)) == b"".join(MIXED)[:30]
    assert by_bytes.interactions[0].response.end.kind == "reset"
    by_chunks = truncate(original, after_chunks=2, end="timeout")
    assert _chunks(by_chunks) == MIXED[:2]
    assert by_chunks.interactions[0].response.end.kind == "timeout"
    with pytest.raises(CassetteError, match="exactly one"):
        truncate(original)


async def test_a_truncated_cassette_replays_the_prefix_then_read_error() -> None:
    mutated = truncate(make_cassette(MIXED), after_bytes=30)
    assert mutated.interactions[0].response.body == b"".join(MIXED)[:30]
    with pytest.raises(httpx.ReadError):
        await _replay(mutated)


async def test_stall_delays_the_chunk_and_can_sit_before_the_end() -> None:
    mutated = stall(make_cassette(MIXED), at_chunk=1, seconds=0.15)
    assert [c.stall_s for c in mutated.interactions[0].response.chunks] == [0, 0.15, 0]
    start = time.monotonic()
    assert await _replay(mutated) == MIXED
    assert time.monotonic() - start >= 0.14
    at_end = stall(make_cassette(MIXED), at_chunk=3, seconds=2)
    assert at_end.interactions[0].response.end.stall_s == 2
    with pytest.raises(CassetteError, match="the body has 3 chunks"):
        stall(make_cassette(MIXED), at_chunk=4, seconds=1)


@pytest.mark.parametrize(
    ("api", "status", "expected"),
    [
        ("anthropic-messages", 429, {"type": "rate_limit_error"}),
        ("anthropic-messages", 529, {"type": "overloaded_error"}),
        ("anthropic-messages", 500, {"type": "api_error"}),
        ("openai-completions", 429, {"type": "requests", "code": "rate_limit_exceeded"}),
        ("openai-responses", 500, {"type": "server_error", "code": None}),
        ("google-generative-ai", 503, {"code": 503, "status": "UNAVAILABLE"}),
        ("google-generative-ai", 429, {"code": 429, "status": "RESOURCE_EXHAUSTED"}),
    ],
)
async def test_status_override_answers_with_the_vendor_error_shape(
    api: str, status: int, expected: dict[str, object]
) -> None:
    mutated = status_override(make_cassette(MIXED, api=api), status)
    response = mutated.interactions[0].response
    assert response.status == status
    assert response.end.kind == "eof"
    body = json.loads(response.body)
    assert {k: body["error"][k] for k in expected} == expected
    assert isinstance(body["error"]["message"], str)
    assert (body.get("type") == "error") == (api == "anthropic-messages")
    assert (header_value(response.headers, "retry-after") == "1") == (status == 429)
    async with httpx.AsyncClient(transport=ReplayTransport(mutated, match="any")) as client:
        replayed = await client.get("https://h.test/")
    assert replayed.status_code == status
    assert replayed.json() == body


def test_status_override_502_is_an_html_gateway_page_and_options_apply() -> None:
    gateway = status_override(make_cassette(MIXED), 502).interactions[0].response
    assert header_value(gateway.headers, "content-type") == "text/html; charset=utf-8"
    assert gateway.body.startswith(b"<!DOCTYPE html>")
    custom = status_override(make_cassette(MIXED), 429, retry_after="30", body=b"slow down", content_type="text/plain")
    response = custom.interactions[0].response
    assert (response.body, header_value(response.headers, "retry-after")) == (b"slow down", "30")
    assert header_value(response.headers, "content-type") == "text/plain"
    without = status_override(make_cassette(MIXED), 429, retry_after=None).interactions[0].response
    assert header_value(without.headers, "retry-after") is None


async def test_empty_body_keeps_status_and_sends_nothing() -> None:
    mutated = empty_body(make_cassette(MIXED))
    response = mutated.interactions[0].response
    assert (response.status, response.chunks, response.end.kind) == (200, (), "eof")
    assert await _replay(mutated) == []


def _event_types(cassette: Cassette) -> list[str]:
    out: list[str] = []
    for event in split_events(cassette.interactions[0].response.body):
        value = event.json()
        kind = value.get("type") if isinstance(value, dict) else None
        out.append(event.event or (kind if isinstance(kind, str) else None) or (event.data or "")[:10])
    return out


def _untouched(before: Cassette, after: Cassette, changed: set[bytes]) -> None:
    """Every event outside `changed` keeps its exact bytes."""
    after_raw = [e.raw for e in split_events(after.interactions[0].response.body)]
    kept = [e.raw for e in split_events(before.interactions[0].response.body) if e.raw not in changed]
    assert [raw for raw in after_raw if raw in set(kept)] == kept


def test_drop_terminal_anthropic_removes_message_stop_only() -> None:
    original = library.load("llma__text_haiku45")
    mutated = drop_terminal(original)
    assert "message_stop" in _event_types(original)
    assert "message_stop" not in _event_types(mutated)
    assert len(_event_types(mutated)) == len(_event_types(original)) - 1
    removed = {e.raw for e in split_events(original.interactions[0].response.body) if e.event == "message_stop"}
    _untouched(original, mutated, removed)
    assert len(_chunks(mutated)) == len(_chunks(original)) - 1, "other chunk boundaries stay where they were"


def test_drop_terminal_openai_completions_drops_done_and_finish_reasons() -> None:
    original = library.load("oai__text_usage_gpt4o")
    mutated = drop_terminal(original)
    events = split_events(mutated.interactions[0].response.body)
    assert not any((e.data or "").strip() == "[DONE]" for e in events)
    finish_reasons = [
        choice.get("finish_reason")
        for e in events
        if isinstance(value := e.json(), dict) and isinstance(choices := value.get("choices"), list)
        for choice in choices
        if isinstance(choice, dict)
    ]
    assert finish_reasons
    assert all(reason is None for reason in finish_reasons)
    before = split_events(original.interactions[0].response.body)
    changed = {e.raw for e in before if "[DONE]" in (e.data or "") or '"finish_reason":"stop"' in (e.data or "")}
    assert len(changed) == 2
    _untouched(original, mutated, changed)


def test_drop_terminal_openai_responses_removes_the_final_response_event() -> None:
    original = library.load("pai__text_gpt4o")
    mutated = drop_terminal(original)
    assert "response.completed" in _event_types(original)
    assert not {"response.completed", "response.incomplete", "response.failed"} & set(_event_types(mutated))
    incomplete = drop_terminal(library.load("mira__incomplete_max_output_tokens_gpt4o"))
    assert "response.incomplete" not in _event_types(incomplete)


def test_drop_terminal_gemini_removes_finish_reasons_and_keeps_crlf_framing() -> None:
    original = library.load("pai__text_gemini20flashexp")
    mutated = drop_terminal(original)
    body = mutated.interactions[0].response.body
    assert b"finishReason" in original.interactions[0].response.body
    assert b"finishReason" not in body
    events = split_events(body)
    assert all(e.raw.endswith(b"\r\n\r\n") for e in events)
    assert all(not isinstance(e.json(), NotJSON) for e in events)


def test_drop_terminal_needs_a_known_api_and_a_marker() -> None:
    with pytest.raises(CassetteError, match="does not know the terminal marker"):
        drop_terminal(make_cassette(MIXED, api=None))
    with pytest.raises(CassetteError, match="found no terminal marker"):
        drop_terminal(make_cassette([b"event: ping\ndata: {}\n\n"]))


def test_corrupt_json_breaks_exactly_one_data_line() -> None:
    original = library.load("llma__text_haiku45")
    mutated = corrupt_json(original, 1)
    before = split_events(original.interactions[0].response.body)
    after = split_events(mutated.interactions[0].response.body)
    assert len(after) == len(before)
    broken = [n for n, event in enumerate(after) if isinstance(event.json(), NotJSON)]
    assert broken == [1]
    assert after[1].event == before[1].event
    assert after[1].raw.endswith(b"\n\n")
    assert [e.raw for n, e in enumerate(after) if n != 1] == [e.raw for n, e in enumerate(before) if n != 1]
    with pytest.raises(CassetteError, match="no JSON payload 99"):
        corrupt_json(original, 99)


def test_a_mutation_can_target_one_interaction() -> None:
    first, second = make_cassette([b"one"]), make_cassette([b"two"])
    both = Cassette(interactions=first.interactions + second.interactions)
    mutated = status_override(both, 500, interaction=1)
    assert [i.response.status for i in mutated.interactions] == [200, 500]
    with pytest.raises(CassetteError, match="interaction 5 does not exist"):
        empty_body(both, interaction=5)


def test_edits_move_a_stall_off_a_removed_chunk() -> None:
    stalled = stall(library.load("llma__text_haiku45"), at_chunk=6, seconds=3)  # the message_stop chunk
    mutated = drop_terminal(stalled)
    assert mutated.interactions[0].response.end.stall_s == 3


# Bodies that end in a mid-stream error event carry no terminal marker to drop. (A ConverseStream
# ends at the end of its body, after ``metadata``; its marker is ``messageStop``, which a 200 body
# that is one ``validationException`` message never reaches.)
_NO_MARKER = {
    "anthropic_sse_midstream_error_event_overloaded",
    "pai__groq_midstream_error_after_text",
    "pai__groq_midstream_error_event_tool_use_failed",
    "reqllm__converse_stream_validation_exception_midstream_nova-lite-v1-0",
}


@pytest.mark.parametrize("api", library.apis())
def test_drop_terminal_removes_every_marker_from_every_library_stream(api: str) -> None:
    streams = [n for n in library.names(api) if library.load(n).interactions[0].response.status == 200]
    assert streams
    for name in streams:
        original = library.load(name)
        if name in _NO_MARKER:
            profile = profile_for(api)
            assert profile is not None
            last = profile.framing.spans(original.interactions[0].response.body)[-1].raw.lower()
            assert b"error" in last or b"exception" in last, name  # it does end in an error
            with pytest.raises(CassetteError, match="found no terminal marker"):
                drop_terminal(original)
            continue
        mutated = drop_terminal(original)
        assert mutated.interactions[0].response.body != original.interactions[0].response.body
        # Nothing is left to drop: the first pass found every marker.
        with pytest.raises(CassetteError, match="found no terminal marker"):
            drop_terminal(mutated)


@pytest.mark.parametrize("strategy", [1, 7, "random", "split_crlf", "split_utf8"])
def test_rechunk_leaves_an_empty_body_as_it_is(strategy: int | str) -> None:
    """A 401 with no body has nothing to re-cut; every strategy returns it unchanged."""
    empty = status_override(make_cassette([b"data: x\n\n"]), 401, body=b"")
    assert empty.interactions[0].response.chunks == ()
    assert rechunk(empty, strategy) == empty  # type: ignore[arg-type]
    # An empty chunk is no body either (a hand-written file may hold one).
    blank = make_cassette([b""], api=None)
    assert rechunk(blank, strategy) == blank  # type: ignore[arg-type]


class _CountedOffset(int):
    """An edit offset that counts every comparison made with it (either side of the operator)."""

    comparisons = 0

    def _count(self, other: object, result: bool) -> bool:
        _CountedOffset.comparisons += 1
        return result

    def __lt__(self, other: object) -> bool:
        return self._count(other, int(self) < int(other))  # type: ignore[call-overload]

    def __le__(self, other: object) -> bool:
        return self._count(other, int(self) <= int(other))  # type: ignore[call-overload]

    def __gt__(self, other: object) -> bool:
        return self._count(other, int(self) > int(other))  # type: ignore[call-overload]

    def __ge__(self, other: object) -> bool:
        return self._count(other, int(self) >= int(other))  # type: ignore[call-overload]

    def __eq__(self, other: object) -> bool:
        return self._count(other, int(self) == other)

    __hash__ = int.__hash__


def test_body_edits_cost_a_walk_not_chunks_times_edits() -> None:
    """One edit per chunk over n chunks: the edits are walked once in order (O(n log n) for the
    sort), not compared against every chunk (n² comparisons)."""
    n = 400
    event = b'data: {"choices":[{"finish_reason":"stop"}]}\n\n'
    response = make_cassette([event] * n).interactions[0].response
    edits = [(_CountedOffset(i * len(event)), _CountedOffset(i * len(event) + 6), b"") for i in range(n)]
    _CountedOffset.comparisons = 0
    edited = mutations._apply_edits(response, edits)  # pyright: ignore[reportPrivateUsage]
    assert edited.body == (event[6:]) * n
    assert [c.t_ms for c in edited.chunks] == [c.t_ms for c in response.chunks], "each chunk keeps its own time"
    assert _CountedOffset.comparisons < 40 * n, _CountedOffset.comparisons
