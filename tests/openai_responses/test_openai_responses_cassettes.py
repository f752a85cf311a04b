"""The Responses adapter on every bundled recording: grammar in three chunkings, and the final message
against the server's own final response and against the openai SDK's accumulation of the same bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cassettes import library
from cassettes.mutations import rechunk
from normalize import ThinkingContent, ToolCall, validate_events
from tests.adapters import OPENAI_RESPONSES as RESPONSES
from tests.adapters import response_of, untimed_json
from tests.openai_responses._responses import (
    comparable_message,
    comparable_output,
    first_response,
    sdk_final,
    terminal_event,
)

pytestmark = pytest.mark.parallel

STREAMS = RESPONSES.stream_names()
ERRORS = RESPONSES.error_names()

#: How each recording ends, when not ``stop``: (stop reason, error kind).
OUTCOMES: dict[str, tuple[str, str | None]] = {
    "mira__incomplete_max_output_tokens_gpt4o": ("length", None),
    "mirahar__incomplete_during_reasoning_gpt5mini": ("length", None),
    "mira__refusal_gpt4o": ("error", "refusal"),
    "vercel__error_event_then_failed_insufficient_quota": ("error", "auth"),
    "pai__bedrock_mantle_reasoning_function_call": ("toolUse", None),
    "pai__deepseek_responses_function_call": ("toolUse", None),
    "pai__function_call_gpt4o": ("toolUse", None),
    "pai__phase_commentary_gpt55": ("toolUse", None),
    "pai__reasoning_then_function_call_gpt5": ("toolUse", None),
    "vercel__custom_tool_call_HANDWRITTEN": ("toolUse", None),
    "vercel__lmstudio_reasoning_function_call": ("toolUse", None),
    "vercel__reasoning_encrypted_3_function_calls_codex": ("toolUse", None),
}

#: GitHub Copilot rotates item ids between an item's done event and the final response (the fixture
#: exists to show it); the blocks keep the ids the stream named.
ROTATES_IDS = frozenset({"vercel__github_copilot_SANITIZED"})

#: Recordings the openai SDK cannot accumulate, and what it raises (the comparison is skipped).
SDK_FAILS = {
    "pai__background_resume_starting_after": "RuntimeError",  # resumed stream: no response.created
    "vercel__github_copilot_SANITIZED": "RuntimeError",  # the fixture rewrote ids: "identity changed"
    "vercel__error_event_then_failed_insufficient_quota": "APIError",
    "mira__incomplete_max_output_tokens_gpt4o": "RuntimeError",  # incomplete: no response.completed
    "mirahar__incomplete_during_reasoning_gpt5mini": "RuntimeError",
}


def test_the_library_holds_the_recordings_this_suite_expects() -> None:
    assert len(STREAMS) == 31
    assert len(ERRORS) == 4
    assert set(OUTCOMES) <= set(STREAMS)
    assert set(SDK_FAILS) <= set(STREAMS)


@pytest.mark.parametrize("name", STREAMS)
async def test_every_recording_replays_grammar_clean_in_three_chunkings(name: str) -> None:
    cassette = library.load(name)
    runs = [
        await RESPONSES.replay(cassette),
        await RESPONSES.replay(rechunk(cassette, 1)),
        await RESPONSES.replay(rechunk(cassette, "random", seed=7, max_size=97)),
    ]
    for events, _ in runs:
        assert validate_events(events) == [], name
    views = [untimed_json(events) for events, _ in runs]
    assert views[0] == views[1] == views[2]


@pytest.mark.parametrize("name", STREAMS)
async def test_every_recording_ends_as_its_vendor_said(name: str) -> None:
    events, message = await RESPONSES.replay(library.load(name))
    stop, kind = OUTCOMES.get(name, ("stop", None))
    assert message.stop_reason == stop, message.error_message
    assert (message.error_info.kind if message.error_info else None) == kind
    assert events[-1].type == ("error" if stop == "error" else "done")


@pytest.mark.parametrize("name", [n for n in STREAMS if terminal_event(response_of(n).body)])
async def test_the_final_message_matches_the_servers_final_response(name: str) -> None:
    body = response_of(name).body
    terminal = terminal_event(body)
    assert terminal is not None
    response: dict[str, Any] = terminal["response"]
    _, message = await RESPONSES.replay(library.load(name))
    if terminal["type"] == "response.failed":
        assert message.stop_reason == "error"
        assert response["error"]["message"] in (message.error_message or "")
        return
    expected = comparable_output(response["output"])
    got = comparable_message(message)
    if name in ROTATES_IDS:
        for view in (expected, got):
            for block in view:
                block.pop("id", None)
    if name == "pai__openrouter_raw_cot_gptoss":
        # OpenRouter's final response lists its reasoning item before the message (its stream added
        # them in that order too) — the same blocks.
        assert [b["type"] for b in got] == ["thinking", "text"]
    assert got == expected
    usage: dict[str, Any] = response["usage"]
    details: dict[str, Any] = usage.get("input_tokens_details") or {}
    output_details: dict[str, Any] = usage.get("output_tokens_details") or {}
    assert message.usage.input + message.usage.cache_read + message.usage.cache_write == usage["input_tokens"]
    assert message.usage.cache_read == details.get("cached_tokens", 0)
    assert message.usage.output == usage["output_tokens"]
    assert message.usage.reasoning == output_details.get("reasoning_tokens")
    if name not in ROTATES_IDS:
        assert message.response_id == response["id"]
    assert message.service_tier == response.get("service_tier")
    status = response["status"]
    if status == "incomplete":
        assert message.raw_stop_reason == f"incomplete.{response['incomplete_details']['reason']}"
    else:
        assert message.raw_stop_reason in (status, "refusal")


@pytest.mark.parametrize("name", [n for n in STREAMS if terminal_event(response_of(n).body)])
async def test_the_final_message_matches_the_openai_sdk_accumulation(name: str) -> None:
    final, raised = await sdk_final(first_response(response_of(name).body))
    if name in SDK_FAILS:
        assert raised is not None
        assert type(raised).__name__ == SDK_FAILS[name]
        if final is None or final.status != "incomplete":
            return
        # On incomplete the SDK raises at the end but has yielded the response: compare its items.
    else:
        assert raised is None, repr(raised)
    _, message = await RESPONSES.replay(library.load(name))
    sdk_items = [item.model_dump(mode="json") for item in final.output]
    assert comparable_message(message) == comparable_output(sdk_items)


@pytest.mark.parametrize("name", STREAMS)
async def test_reasoning_blocks_carry_their_item_and_tool_calls_their_call_and_item_ids(name: str) -> None:
    _, message = await RESPONSES.replay(library.load(name))
    for block in message.content:
        if isinstance(block, ThinkingContent):
            item = json.loads(block.thinking_signature or "")
            assert item["type"] == "reasoning"
            assert isinstance(item["id"], str)
            assert item["id"]
        elif isinstance(block, ToolCall):
            call_id, _, item_id = block.id.partition("|")
            assert call_id
            assert item_id


@pytest.mark.parametrize("name", ERRORS)
async def test_error_bodies_end_with_their_kind_and_the_vendors_message(name: str) -> None:
    expected = {
        "deepseek_responses_400": "invalid_request",
        "openai_responses_400_model_not_found": "not_found",
        "openai_responses_400_unsupported_value": "invalid_request",
        "openai_responses_401_invalid_api_key": "auth",
    }
    response = response_of(name)
    events, message = await RESPONSES.replay(library.load(name))
    assert validate_events(events) == []
    assert message.error_info is not None
    assert message.error_info.kind == expected[name]
    assert message.error_info.status == response.status
    assert not message.error_info.retryable
    vendor_message = json.loads(response.body)["error"]["message"]
    assert vendor_message in (message.error_message or "")
