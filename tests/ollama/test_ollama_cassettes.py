"""Every bundled Ollama ``/api/chat`` recording replays through the adapter to a valid stream, and the
ones that show a feature replay to exactly what the recorded bytes say."""

from __future__ import annotations

import pytest

from cassettes import library
from normalize import TextContent, ThinkingContent, ToolCall, validate_events
from streamfns.ollama import tool_call_id
from tests.adapters import OLLAMA, calls, texts, thinking

pytestmark = pytest.mark.parallel  # clock-blind: replays through an in-process transport

TOOL = "rubyllm__chat_function_calling_llama3_1_8b_can_use_tools_with_multi_turn_streaming_conversations_i0_llama3.1-8b"


def test_the_library_bundles_the_chat_bodies_and_both_error_bodies() -> None:
    assert len(OLLAMA.stream_names()) == 24
    assert OLLAMA.error_names() == [
        "issue__error404_model_not_found_try_pulling_mistral",
        "langchaingo__error400_TestWithTruncateFalse_gemma3-1b",
    ]


@pytest.mark.parametrize("name", OLLAMA.stream_names())
async def test_every_recording_replays_to_a_valid_finished_stream(name: str) -> None:
    events, message = await OLLAMA.replay(library.load(name))
    assert validate_events(events) == []
    assert message.stop_reason in ("stop", "toolUse"), message.error_message
    assert message.usage.input > 0
    assert message.usage.output > 0


async def test_text_with_usage() -> None:
    _, message = await OLLAMA.replay(library.load("langchaingo__TestClient_GenerateChatStream_gemma3-1b"))
    assert message.content == [TextContent(text="Okay, here we go!\n\n1, 2, 3, 4, 5\n")]
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (16, 22, 38)
    assert (message.stop_reason, message.raw_stop_reason) == ("stop", "stop")
    assert message.usage.cost.total == 0


async def test_a_tool_call_in_the_first_line_with_a_derived_id() -> None:
    _, message = await OLLAMA.replay(library.load(TOOL))
    assert message.content == [
        ToolCall(
            id=tool_call_id("2025-03-27T20:52:56.880657556Z", 0),
            name="weather",
            arguments={"latitude": "52.5200", "longitude": "13.4050"},
        )
    ]
    assert message.content[0].id == "call_dad1f6b3c3b86cd656d9_0"  # type: ignore[union-attr]
    assert (message.stop_reason, message.raw_stop_reason) == ("toolUse", "stop")


async def test_parallel_calls_keep_their_order_and_get_distinct_ids() -> None:
    _, message = await OLLAMA.replay(library.load("prism__stream_with_tools_1_mistral"))
    found = calls(message)
    assert [(c.name, c.arguments) for c in found] == [
        ("calculator", {"expression": "20+22"}),
        ("calculator", {"expression": "sqrt(169)"}),
        ("calculator", {"expression": "factorial(5)"}),
    ]
    assert len({c.id for c in found}) == 3
    again = calls((await OLLAMA.replay(library.load("prism__stream_with_tools_1_mistral")))[1])
    assert [c.id for c in again] == [c.id for c in found]  # the same bytes, the same ids


async def test_ids_differ_between_turns() -> None:
    first = calls((await OLLAMA.replay(library.load("prism__stream_with_tools_1_qwen3-14b")))[1])
    other = calls((await OLLAMA.replay(library.load(TOOL)))[1])
    assert [(c.name, c.arguments) for c in first] == [
        ("weather", {"city": "Detroit"}),
        ("search", {"query": "Detroit Tigers game time today"}),
    ]
    assert not {c.id for c in first} & {c.id for c in other}


async def test_thinking_then_text() -> None:
    _, message = await OLLAMA.replay(library.load("prism__stream_without_thinking_1_gpt-oss"))
    assert [type(block) for block in message.content] == [ThinkingContent, TextContent]
    assert thinking(message).startswith('The user says "Test prompt".')
    assert texts(message) == "Got it! The system is up and running. Let me know what you\u2019d like to try next."


async def test_go_escapes_reach_the_text_unescaped() -> None:
    _, message = await OLLAMA.replay(library.load("prism__stream_with_tools_3_qwen3-14b"))
    assert texts(message).startswith("<think>\nOkay, let me figure out")


async def test_error_bodies_end_with_the_kind_their_words_say() -> None:
    _, missing = await OLLAMA.replay(library.load("issue__error404_model_not_found_try_pulling_mistral"))
    assert missing.stop_reason == "error"
    assert missing.error_info is not None
    assert (missing.error_info.kind, missing.error_info.status, missing.error_info.retryable) == (
        "not_found",
        404,
        False,
    )
    assert (
        missing.error_message == "Ollama API error 404 model_not_found: model 'mistral' not found, try pulling it first"
    )
    _, long = await OLLAMA.replay(library.load("langchaingo__error400_TestWithTruncateFalse_gemma3-1b"))
    assert long.error_info is not None
    assert (long.error_info.kind, long.error_info.status) == ("context_overflow", 400)
