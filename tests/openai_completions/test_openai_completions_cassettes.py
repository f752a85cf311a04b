"""The Chat Completions adapter on every bundled recording: grammar, chunking invariance, the
outcome each recording must have, and every HTTP error body → its kind."""

from __future__ import annotations

from typing import Any

import pytest

from cassettes import library
from cassettes.mutations import rechunk
from normalize import AssistantMessageEvent, ThinkingContent, event_to_json, validate_events
from tests.adapters import OPENAI_COMPLETIONS as OC
from tests.adapters import calls, texts, thinking

pytestmark = pytest.mark.parallel

SUCCESS = OC.stream_names()
ERROR_BODIES = OC.error_names()

#: Recordings (HTTP 200) whose stream must end in an error, and its kind.
EXPECTED_ERRORS = {
    "oai__refusal_gpt4o": "refusal",  # delta.refusal: the model refused (structured output)
    "oai__refusal_logprobs_gpt4o": "refusal",
    "pai__groq_midstream_error_after_text": "invalid_request",  # `event: error` tool_use_failed after text
    "pai__groq_midstream_error_event_tool_use_failed": "invalid_request",
    "pai__openrouter_midstream_error_length": "invalid_request",  # {"error": {"code": 400}} chunk after finish
}


def normalized(events: list[AssistantMessageEvent]) -> list[dict[str, Any]]:
    out = [event_to_json(event) for event in events]
    # The terminal message carries a timestamp taken at request time; everything else must match.
    out[-1]["message" if "message" in out[-1] else "error"].pop("timestamp")
    return out


def test_the_library_holds_the_recordings_the_issue_names() -> None:
    assert len(SUCCESS) == 41
    assert len(ERROR_BODIES) == 10
    assert set(EXPECTED_ERRORS) <= set(SUCCESS)


@pytest.mark.parametrize("name", SUCCESS)
async def test_every_recording_is_grammar_clean_and_chunking_invariant(name: str) -> None:
    cassette = library.load(name)
    events, result = await OC.replay(cassette)
    assert validate_events(events) == [], name
    expected_error = EXPECTED_ERRORS.get(name)
    if expected_error is None:
        assert events[-1].type == "done", result.error_message
        assert result.stop_reason in ("stop", "length", "toolUse")
    else:
        assert events[-1].type == "error"
        assert result.error_info is not None
        assert result.error_info.kind == expected_error
    baseline = normalized(events)
    body_size = len(cassette.interactions[0].response.body)
    for strategy in (1 if body_size < 32_000 else 5, "random", "split_utf8"):
        mutated, _ = await OC.replay(rechunk(cassette, strategy, seed=7))  # pyright: ignore[reportArgumentType]
        assert normalized(mutated) == baseline, (name, strategy)


@pytest.mark.parametrize("name", ERROR_BODIES)
async def test_error_bodies_map_to_kinds_and_keep_the_vendor_message(name: str) -> None:
    cassette = library.load(name)
    response = cassette.interactions[0].response
    events, result = await OC.replay(cassette)
    assert validate_events(events) == []
    assert result.stop_reason == "error"
    info = result.error_info
    assert info is not None
    assert info.status == response.status
    expected = {400: "invalid_request", 401: "auth", 404: "not_found", 429: "rate_limit", 500: "server"}
    assert info.kind == expected[response.status]
    assert info.retryable == (response.status in (429, 500))
    assert not info.output_started
    # The vendor's own words survive (OpenRouter: the upstream provider's words too).
    message = result.error_message or ""
    assert message.startswith(f"Chat Completions API error {response.status}")
    if name == "openrouter_429_upstream_rate_limited":
        assert "Provider returned error\ngoogle/gemini-2.0-flash-exp:free is temporarily rate-limited" in message
    else:
        assert response.body.decode().split('"message": "', 1)[1][:40] in message


async def test_the_think_tags_in_content_stay_text() -> None:
    _, result = await OC.replay(library.load("pai__groq_think_tags_in_content"))
    assert thinking(result) == ""
    assert texts(result).startswith("<think>\n")
    assert "</think>" in texts(result)


async def test_groq_reasoning_field_and_x_groq_usage() -> None:
    _, result = await OC.replay(library.load("pai__groq_reasoning_field_deepseek_r1"))
    assert thinking(result).startswith("Alright, so I'm trying to figure out")
    first = result.content[0]
    assert isinstance(first, ThinkingContent)
    assert first.thinking_signature == "reasoning"
    # Only x_groq carries usage in this recording (no top-level usage chunk).
    assert (result.usage.input, result.usage.output) == (573, 1509)


async def test_mistral_content_parts_split_into_thinking_and_text() -> None:
    _, result = await OC.replay(library.load("pai__mistral_magistral_thinking_chunks"))
    kinds = [block.type for block in result.content]
    assert kinds == ["thinking", "text"]
    assert thinking(result).startswith("Okay, the user is asking how to cross the street")
    assert texts(result).startswith("To cross the street safely")


async def test_snowflake_never_sends_a_finish_reason_and_its_profile_says_so() -> None:
    cassette = library.load("pai__snowflake_cortex_claude_thinking")
    events, result = await OC.replay(cassette)
    assert events[-1].type == "done"
    assert result.raw_stop_reason is None
    assert thinking(result) == "15 * 27 = 405"  # from reasoning_details only
    # The same bytes from a server whose profile promises a finish_reason are a truncation.
    strict = OC.replay_model(cassette)
    strict.compat = {"finish_reason_reliable": True}
    _, strict_result = await OC.replay(cassette, strict)
    assert strict_result.error_info is not None
    assert strict_result.error_info.kind == "truncated"
    assert "[DONE] without a finish_reason" in (strict_result.error_message or "")


async def test_a_second_response_spliced_into_the_body_is_not_merged() -> None:
    # Two responses (two chunk ids) in one body without [DONE] between them: the first one ends at
    # the content that follows its finish_reason; its usage is its own.
    _, result = await OC.replay(library.load("vercel__cerebras_glm_reasoning_tool"))
    assert result.response_id == "chatcmpl-9e97f9ca-9626-4ef8-8543-6e3ee7cef659"
    assert [(call.id, call.name, call.arguments) for call in calls(result)] == [("bbd2b9d98", "nonUsefulTool", {})]
    assert (result.usage.input, result.usage.cache_read, result.usage.output) == (322 - 256, 256, 104)


async def test_n3_choices_keep_choice_0_only() -> None:
    _, result = await OC.replay(library.load("oai__n3_choices_gpt4o"))
    assert texts(result) == '{"city":"San Francisco","temperature":65,"units":"f"}'


async def test_a_tool_call_without_an_index_is_placed_by_its_id() -> None:
    _, result = await OC.replay(library.load("vercel__mistral_tool_call"))
    assert [(call.id, call.arguments) for call in calls(result)] == [("gSIMJiOkT", {"location": "San Francisco"})]
    assert result.stop_reason == "toolUse"


async def test_openrouter_midstream_error_chunk_after_a_length_finish() -> None:
    _, result = await OC.replay(library.load("pai__openrouter_midstream_error_length"))
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.code) == ("invalid_request", "400")
    assert result.error_message == "Chat Completions stream error (400): Token limit reached"
    assert thinking(result)  # the reasoning before the error is kept


async def test_groq_error_event_after_text_keeps_the_text() -> None:
    events, result = await OC.replay(library.load("pai__groq_midstream_error_after_text"))
    assert result.error_info is not None
    assert result.error_info.code == "tool_use_failed"
    assert result.error_info.output_started
    assert not result.error_info.retryable
    assert texts(result) == "maybe"
    assert [event.type for event in events][-1] == "error"
