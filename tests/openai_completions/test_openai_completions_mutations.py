"""Faults derived from every recording: truncation anywhere before the terminal marker, a dropped
``[DONE]``/``finish_reason``, a corrupt chunk, error chunks injected mid-stream, status overrides."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from cassettes import Cassette, library
from cassettes.model import Chunk
from cassettes.mutations import corrupt_json, drop_terminal, status_override, truncate
from conformance.plans import marker_offset
from normalize import ErrorKind, validate_events
from streamfns.openai_completions.compat import compat_for
from tests.adapters import OPENAI_COMPLETIONS as OC
from tests.adapters import calls, texts, thinking
from tests.sse_events import SSEEvent, split_events

pytestmark = pytest.mark.parallel

SUCCESS = OC.stream_names()
#: Recordings that end in an `event: error` and have no terminal marker to drop.
NO_MARKER = {"pai__groq_midstream_error_after_text", "pai__groq_midstream_error_event_tool_use_failed"}
WITH_MARKER = [name for name in SUCCESS if name not in NO_MARKER]


def _end_of_stream(cassette: Cassette, name: str) -> int:
    """Where the stream's end begins: the terminal marker, or the error event for NO_MARKER."""
    if name in NO_MARKER:
        body = cassette.interactions[0].response.body
        return body.index(b"event: error")
    return marker_offset(cassette, "openai-completions")


@pytest.mark.parametrize("name", SUCCESS)
async def test_truncation_anywhere_before_the_end_is_an_error_never_done(name: str) -> None:
    cassette = library.load(name)
    _, full = await OC.replay(cassette)
    end = _end_of_stream(cassette, name)
    rng = random.Random(name)
    cuts = sorted({rng.randrange(1, end) for _ in range(8)} | {end - 1, end})
    for cut in cuts:
        events, result = await OC.replay(truncate(cassette, after_bytes=cut, end="eof"))
        assert events[-1].type == "error", f"{name}: cut at byte {cut} of {end} ended {result.stop_reason}"
        assert validate_events(events) == []
        info = result.error_info
        assert info is not None
        assert info.kind == "truncated", (name, cut, info.kind, result.error_message)
        assert info.retryable
        # What arrived is kept, and is a prefix of what the whole stream gives.
        assert texts(full).startswith(texts(result))
        assert thinking(full).startswith(thinking(result))


def _usage_in(event: SSEEvent) -> bool:
    value = event.json()
    if not isinstance(value, dict):
        return False
    choices = value.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    groq = value.get("x_groq")
    return any(
        isinstance(usage, dict) and usage
        for usage in (value.get("usage"), choice.get("usage"), groq.get("usage") if isinstance(groq, dict) else None)
    )


@pytest.mark.parametrize("name", WITH_MARKER)
async def test_a_cut_after_the_finish_chunk_before_the_usage_asked_for_is_truncated(name: str) -> None:
    cassette = library.load(name)
    body = cassette.interactions[0].response.body
    marker = marker_offset(cassette, "openai-completions")
    events = split_events(body)
    finish = next(event for event in events if event.start <= marker < event.end)
    events, result = await OC.replay(truncate(cassette, after_bytes=finish.end, end="eof"))
    assert validate_events(events) == []
    asked = compat_for(OC.replay_model(cassette)).usage_in_stream
    usage_came = any(_usage_in(event) for event in split_events(body[: finish.end]))
    if asked and not usage_came:
        # The finish chunk arrived, the usage chunk (and [DONE]) did not: never done with zero usage.
        assert result.error_info is not None, f"{name}: ended {result.stop_reason} without its usage"
        assert result.error_info.kind == "truncated", result.error_message
        assert result.error_info.retryable
    else:
        # Nothing missing: the cut body ends as the whole one does.
        _, full = await OC.replay(cassette)
        assert (result.stop_reason, result.error_message) == (full.stop_reason, full.error_message)


async def test_the_real_gpt4o_body_cut_before_its_usage_chunk_is_not_done_with_zero_usage() -> None:
    # The reviewer's case: OpenAI always sends the usage chunk it was asked for, then [DONE].
    cassette = library.load("oai__text_usage_gpt4o")
    body = cassette.interactions[0].response.body
    cut = body.index(b"\n\n", body.index(b'"finish_reason":"stop"')) + 2
    _, whole = await OC.replay(cassette)
    assert (whole.stop_reason, whole.usage.input, whole.usage.output) == ("stop", 14, 30)
    _, result = await OC.replay(truncate(cassette, after_bytes=cut, end="eof"))
    assert result.error_info is not None
    assert result.error_info.kind == "truncated"
    assert texts(result) == texts(whole)


@pytest.mark.parametrize("name", SUCCESS)
async def test_a_reset_connection_keeps_the_partial_content(name: str) -> None:
    cassette = library.load(name)
    events, result = await OC.replay(truncate(cassette, after_bytes=_end_of_stream(cassette, name) // 2, end="reset"))
    assert validate_events(events) == []
    assert result.error_info is not None
    assert result.error_info.kind == "network"
    assert result.error_info.output_started == bool(result.content)


@pytest.mark.parametrize("name", WITH_MARKER)
async def test_a_dropped_done_and_finish_reason_is_truncated(name: str) -> None:
    events, result = await OC.replay(drop_terminal(library.load(name), api="openai-completions"))
    assert events[-1].type == "error"
    assert validate_events(events) == []
    assert result.error_info is not None
    if name == "pai__openrouter_midstream_error_length":
        # Its error chunk comes before the end and still decides.
        assert result.error_info.kind == "invalid_request"
        return
    assert result.error_info.kind == "truncated", result.error_message
    assert result.error_info.retryable
    assert result.error_message == "Chat Completions stream ended before a finish_reason"


@pytest.mark.parametrize("name", SUCCESS)
async def test_a_corrupt_chunk_is_a_protocol_error(name: str) -> None:
    cassette = library.load(name)
    end = _end_of_stream(cassette, name)
    # The JSON events before the end (a spliced second response after it is never read).
    starts = [
        e.start for e in split_events(cassette.interactions[0].response.body) if isinstance(e.json(), dict | list)
    ]
    index = len([start for start in starts if start < end]) // 2
    events, result = await OC.replay(corrupt_json(cassette, index=index))
    assert events[-1].type == "error"
    assert validate_events(events) == []
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert "malformed JSON" in (result.error_message or "")


def _inject(cassette: Cassette, after_chunk: int, raw: bytes) -> Cassette:
    """The recording with ``raw`` sent after its first ``after_chunk`` chunks and nothing after."""
    response = cassette.interactions[0].response
    kept = list(response.chunks[:after_chunk])
    kept.append(Chunk(raw, kept[-1].t_ms if kept else 0.0))
    interaction = dataclasses.replace(
        cassette.interactions[0], response=dataclasses.replace(response, chunks=tuple(kept))
    )
    return dataclasses.replace(cassette, interactions=(interaction,))


def _data(value: object, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(value)}\n\n".encode()


#: Error chunks as servers send them mid-stream, and the kind each must end with.
MIDSTREAM_ERRORS: list[tuple[str, bytes, ErrorKind, bool]] = [
    (
        "openai-rate-limit",
        _data(
            {
                "error": {
                    "message": "Rate limit reached. Please try again in 1.5s.",
                    "type": "requests",
                    "code": "rate_limit_exceeded",
                }
            }
        ),
        "rate_limit",
        True,
    ),
    (
        "openrouter-upstream-502",
        _data(
            {
                "id": "gen-1",
                "error": {"code": 502, "message": "Provider returned error", "metadata": {"raw": "upstream exploded"}},
                "choices": [],
            }
        ),
        "server",
        True,
    ),
    (
        "vllm-flat-object",
        _data(
            {
                "object": "error",
                "message": "This model's maximum context length is 8192 tokens",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        ),
        "context_overflow",
        False,
    ),
    (
        "groq-event-error",
        _data(
            {
                "error": {
                    "message": "Service Unavailable",
                    "type": "internal_server_error",
                    "code": "service_unavailable",
                }
            },
            "error",
        ),
        "overloaded",
        True,
    ),
    ("event-error-plain-text", b"event: error\ndata: upstream connection lost\n\n", "server", True),
    (
        "quota",
        _data(
            {
                "error": {
                    "message": "You exceeded your current quota",
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                }
            }
        ),
        "auth",
        False,
    ),
]


@pytest.mark.parametrize(("label", "raw", "kind", "retryable"), MIDSTREAM_ERRORS, ids=[m[0] for m in MIDSTREAM_ERRORS])
@pytest.mark.parametrize(
    "name", ["oai__text_usage_gpt4o", "pai__tool_call_gpt4o_mini", "pai__openrouter_claude_reasoning"]
)
async def test_error_chunks_mid_stream_end_with_their_kind_and_keep_the_output(
    name: str, label: str, raw: bytes, kind: ErrorKind, retryable: bool
) -> None:
    cassette = library.load(name)
    after = len(cassette.interactions[0].response.chunks) // 2
    events, result = await OC.replay(_inject(cassette, after, raw))
    assert validate_events(events) == []
    info = result.error_info
    assert info is not None, label
    assert (info.kind, info.retryable) == (kind, retryable), (label, result.error_message)
    assert info.output_started
    assert result.content, "the output before the error is kept"
    # Tool calls whose arguments were cut off by the error are never complete.
    assert all(call.arguments is not None for call in calls(result))
    if label == "openrouter-upstream-502":
        assert "Provider returned error\nupstream exploded" in (result.error_message or "")
    if label == "openai-rate-limit":
        assert info.retry_after_s == 1.5


STATUSES: list[tuple[int, ErrorKind, bool]] = [
    (400, "invalid_request", False),
    (401, "auth", False),
    (403, "auth", False),
    (404, "not_found", False),
    (408, "timeout", True),
    (413, "context_overflow", False),
    (429, "rate_limit", True),
    (500, "server", True),
    (502, "server", True),
    (503, "server", True),
    (529, "overloaded", True),
]


@pytest.mark.parametrize(("status", "kind", "retryable"), STATUSES)
@pytest.mark.parametrize("name", ["oai__text_usage_gpt4o", "pai__deepseek_reasoner_reasoning_content"])
async def test_status_overrides_end_with_the_right_kind(
    name: str, status: int, kind: ErrorKind, retryable: bool
) -> None:
    events, result = await OC.replay(status_override(library.load(name), status))
    assert [event.type for event in events] == ["start", "error"]
    info = result.error_info
    assert info is not None
    assert (info.status, info.kind, info.retryable) == (status, kind, retryable), result.error_message
    assert not info.output_started
    if status == 429:
        assert info.retry_after_s == 1.0
    if status == 502:
        assert "<" not in (result.error_message or ""), "an HTML page is quoted by its title, not its markup"
