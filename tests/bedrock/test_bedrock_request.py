"""The ConverseStream request body and URL, exactly (pure: the builder given an explicit endpoint)."""

from __future__ import annotations

from typing import Any

import pytest

from normalize import (
    AssistantMessage,
    Context,
    ImageContent,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from streamfns.bedrock import build_request
from streamfns.kit import CompatError
from tests.adapters import BEDROCK

pytestmark = pytest.mark.parallel  # clock-blind: pure functions

BASE = "https://bedrock-runtime.us-east-1.amazonaws.com"


def turn(*content: Any) -> AssistantMessage:
    return AssistantMessage(
        content=list(content),
        api=BEDROCK.api,
        provider="amazon-bedrock",
        model="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        stop_reason="toolUse",
    )


def test_an_arn_is_one_encoded_path_segment() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123"
    request = build_request(BEDROCK.model(id=arn), Context(messages=[UserMessage(content="Hi")]), StreamOptions())
    assert request.url == (
        f"{BASE}/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fabc123"
        "/converse-stream"
    )


def test_a_tool_turn_with_signed_reasoning_replays_exactly() -> None:
    context = Context(
        system_prompt="Be brief.",
        messages=[
            UserMessage(content=[TextContent(text="Weather?"), ImageContent(data="iVBORw0K", mime_type="image/png")]),
            turn(
                ThinkingContent(thinking="Need the tool.", thinking_signature="sig-1"),
                ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="b3BhcXVl", redacted=True),
                ToolCall(id="call_1", name="weather", arguments={"city": "Paris"}),
            ),
            ToolResultMessage(
                tool_call_id="call_1", tool_name="weather", content=[TextContent(text="boom")], is_error=True
            ),
        ],
        tools=[Tool(name="weather", description="Weather", parameters={"type": "object", "properties": {}})],
    )
    payload = build_request(BEDROCK.model(), context, StreamOptions(cache_retention="none")).payload
    assert payload == {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"text": "Weather?"},
                    {"image": {"format": "png", "source": {"bytes": "iVBORw0K"}}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": {"text": "Need the tool.", "signature": "sig-1"}}},
                    {"reasoningContent": {"redactedContent": "b3BhcXVl"}},
                    {"toolUse": {"toolUseId": "call_1", "name": "weather", "input": {"city": "Paris"}}},
                ],
            },
            {
                "role": "user",
                "content": [{"toolResult": {"toolUseId": "call_1", "content": [{"text": "boom"}], "status": "error"}}],
            },
        ],
        "system": [{"text": "Be brief."}],
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "weather",
                        "description": "Weather",
                        "inputSchema": {"json": {"type": "object", "properties": {}}},
                    }
                }
            ]
        },
        "inferenceConfig": {"maxTokens": 8192},
    }


def test_cache_points_thinking_and_a_guardrail() -> None:
    model = BEDROCK.model(compat={"guardrail": {"guardrailIdentifier": "gr-1", "guardrailVersion": "2"}})
    context = Context(system_prompt="Sys", messages=[UserMessage(content="Hi")])
    payload = build_request(model, context, StreamOptions(reasoning="medium", max_tokens=4000)).payload
    assert payload["system"] == [{"text": "Sys"}, {"cachePoint": {"type": "default"}}]
    assert payload["messages"] == [{"role": "user", "content": [{"text": "Hi"}, {"cachePoint": {"type": "default"}}]}]
    assert payload["inferenceConfig"] == {"maxTokens": 8192}  # 4000 + the 8192 budget, capped at the model's 8192
    assert payload["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 7168}}
    assert payload["guardrailConfig"] == {"guardrailIdentifier": "gr-1", "guardrailVersion": "2"}


def test_a_model_that_is_not_claude_gets_no_thinking_fields_and_keeps_temperature() -> None:
    model = BEDROCK.model(id="us.meta.llama3-3-70b-instruct-v1:0", reasoning=False)
    payload = build_request(
        model, Context(messages=[UserMessage(content="Hi")]), StreamOptions(temperature=0.2)
    ).payload
    assert payload == {
        "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
        "inferenceConfig": {"temperature": 0.2},
    }


def test_a_guardrail_without_its_version_is_a_compat_error() -> None:
    model = BEDROCK.model(compat={"guardrail": {"guardrailIdentifier": "gr-1"}})
    with pytest.raises(CompatError):
        build_request(model, Context(messages=[UserMessage(content="Hi")]), StreamOptions())


async def test_a_mistyped_flag_ends_config_before_anything_is_sent() -> None:
    _, message = await BEDROCK.run_reads([], target=BEDROCK.model(compat={"regoin": "us-east-1"}))
    assert message.error_info is not None
    assert message.error_info.kind == "config"
