"""Every bundled ConverseStream recording replays through the adapter to a valid stream, and the ones
that show a feature replay to exactly what the recorded bytes say."""

from __future__ import annotations

import pytest

from cassettes import library
from normalize import ThinkingContent, ToolCall, validate_events
from streamfns.bedrock import REDACTED_PLACEHOLDER
from tests.adapters import BEDROCK, calls, texts, thinking

pytestmark = pytest.mark.parallel  # clock-blind: replays through an in-process transport

# (name, stop reason, error kind) of the recordings that do not end in success.
ENDINGS = {
    "openllmetry__guardrail_converse_stream_titan-text-express-v1": ("error", "content_filter"),
    "reqllm__converse_stream_validation_exception_midstream_nova-lite-v1-0": ("error", "invalid_request"),
}


def test_the_library_bundles_the_converse_bodies_and_their_error_bodies() -> None:
    assert len(BEDROCK.stream_names()) == 53
    assert len(BEDROCK.error_names()) == 14


@pytest.mark.parametrize("name", BEDROCK.stream_names())
async def test_every_recording_replays_to_a_valid_stream(name: str) -> None:
    events, message = await BEDROCK.replay(library.load(name))
    assert validate_events(events) == []
    if name in ENDINGS:
        assert (message.stop_reason, message.error_info and message.error_info.kind) == ENDINGS[name]
        return
    assert message.stop_reason in ("stop", "toolUse", "length"), message.error_message
    assert message.usage.output > 0


@pytest.mark.parametrize("name", BEDROCK.error_names())
async def test_every_error_body_is_one_typed_error(name: str) -> None:
    events, message = await BEDROCK.replay(library.load(name))
    assert validate_events(events) == []
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_info.kind in (
        "invalid_request",
        "context_overflow",
        "auth",
        "rate_limit",
        "overloaded",
        "server",
    )
    assert message.content == []


async def test_text_and_usage() -> None:
    _, message = await BEDROCK.replay(library.load("vercel__text_model-unstated"))
    assert texts(message) == (
        'Let me count the "r"s in "strawberry":\n\n'
        's-t-**r**-a-w-b-e-**r**-**r**-y\n\nThere are **3** r\'s in "strawberry."'
    )
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (22, 55, 77)
    assert (message.stop_reason, message.raw_stop_reason) == ("stop", "end_turn")


async def test_parallel_tool_calls_after_text() -> None:
    _, message = await BEDROCK.replay(
        library.load("otelcontrib__converse_stream_with_content_tool_call_i0_nova-micro-v1-0")
    )
    found = calls(message)
    assert [(c.name, c.arguments) for c in found] == [
        ("get_current_weather", {"location": "Seattle"}),
        ("get_current_weather", {"location": "San Francisco"}),
    ]
    assert message.stop_reason == "toolUse"
    assert texts(message).startswith("<thinking>")


async def test_reasoning_keeps_its_signature() -> None:
    _, message = await BEDROCK.replay(library.load("vercel__reasoning_model-unstated"))
    block = message.content[0]
    assert isinstance(block, ThinkingContent)
    assert block.thinking.startswith('Let me count the r\'s in "strawberry":')
    assert block.thinking_signature is not None
    assert block.thinking_signature.startswith("Ep0CCkgICxABGAIqQOWPB6/PmA5SW9jC6FvaNq3E")
    assert thinking(message).endswith("are 3 r's.")


async def test_redacted_reasoning_then_a_tool_call() -> None:
    _, message = await BEDROCK.replay(library.load("vercel__redacted_content_model-unstated"))
    first = message.content[0]
    assert isinstance(first, ThinkingContent)
    assert (first.redacted, first.thinking) == (True, REDACTED_PLACEHOLDER)
    assert first.thinking_signature is not None
    assert first.thinking_signature.startswith("cnNuX3BVUGgxNnRvNFZLWURnSkFQeW1iRUFJRmVC")
    assert isinstance(message.content[1], ToolCall)
    assert message.stop_reason == "toolUse"


async def test_server_tools_are_left_out_and_the_client_tool_stays() -> None:
    _, message = await BEDROCK.replay(
        library.load("pydanticai__bedrock_model_code_execution_tool_stream_nova-2-lite-v1-0")
    )
    assert message.content == [
        ToolCall(id="tooluse_ptgCcZ0uQu-UUMz0abqoWw", name="final_result", arguments={"result": 7006652.0})
    ]
    assert message.stop_reason == "toolUse"


async def test_grounded_text_keeps_its_order_around_citations() -> None:
    _, message = await BEDROCK.replay(
        library.load(
            "rubyllm__chat_web_search_with_bedrock_amazon_nova_2_lite_v1_0_streams_grounded_turns_nova-2-lite-v1-0"
        )
    )
    assert texts(message).startswith(
        "The latest stable Ruby version is 4.0.6. \n\nRuby 4.0.6 was released on July 14, 2026."
    )
    assert calls(message) == []  # nova_grounding ran at AWS


async def test_the_midstream_exception_is_its_typed_error() -> None:
    _, message = await BEDROCK.replay(
        library.load("reqllm__converse_stream_validation_exception_midstream_nova-lite-v1-0")
    )
    assert message.error_message is not None
    assert message.error_message.startswith("Amazon Bedrock stream error (validationException): ")


async def test_a_throttled_request_is_a_retryable_rate_limit() -> None:
    name = (
        "rubyllm__error429_chat_function_calling_bedrock_anthropic_claude_3_5_haiku_20241022_v1_0_can_use_tools_in_mu"
        "_i3_claude-3-5-haiku-20241022-v1-0"
    )
    _, message = await BEDROCK.replay(library.load(name))
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.retryable, message.error_info.status) == (
        "rate_limit",
        True,
        429,
    )
    assert message.error_message == (
        "Amazon Bedrock API error 429 ThrottlingException: Too many requests, please wait before trying again."
    )
