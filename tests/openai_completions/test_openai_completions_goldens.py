"""Request goldens: the exact request each profile renders for a representative transcript, and the
cross-provider handoff (an Anthropic transcript with thinking and tool calls → a chat request).

The goldens live in ``goldens/*.json``. After a deliberate change, regenerate them with
``STREAMFNS_UPDATE_GOLDENS=1 pytest tests/openai_completions/test_openai_completions_goldens.py``
and review the diff: a golden is a reviewed statement of what goes on the wire.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from normalize import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    StreamOptions,
    SystemMessage,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from streamfns import get_model
from streamfns.openai_completions.request import build_request

pytestmark = pytest.mark.parallel

GOLDENS = Path(__file__).parent / "goldens"
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
WEATHER = Tool(
    name="get_weather",
    description="Current weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
SCREENSHOT = Tool(name="screenshot", description="Capture the screen", parameters={"type": "object", "properties": {}})


def check_golden(name: str, value: dict[str, Any]) -> None:
    path = GOLDENS / f"{name}.json"
    rendered = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if os.environ.get("STREAMFNS_UPDATE_GOLDENS") == "1":
        GOLDENS.mkdir(exist_ok=True)
        path.write_text(rendered, encoding="utf-8")
    assert path.exists(), f"missing golden {path.name}: run with STREAMFNS_UPDATE_GOLDENS=1 and review it"
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(rendered), f"{path.name} differs"


def request_of(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    request = build_request(model, context, options)
    return {"url": request.url, "headers": request.headers, "payload": request.payload}


def own_turn(model: Model, content: list[Any], stop: str = "toolUse") -> AssistantMessage:
    return AssistantMessage(
        content=content,
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=Usage(),
        stop_reason=stop,  # pyright: ignore[reportArgumentType]
        timestamp=2,
    )


def tool_turn(
    model: Model, *, thinking: str | None, signature: str | None, thought: str | None = None
) -> list[Message]:
    """A user question, the model's own turn (optional thinking, a tool call), its result, the
    final answer and a follow-up question."""
    first: list[Any] = []
    if thinking is not None:
        first.append(ThinkingContent(thinking=thinking, thinking_signature=signature))
    first += [
        TextContent(text="Let me check."),
        ToolCall(id="call_w1", name="get_weather", arguments={"city": "Paris"}, thought_signature=thought),
    ]
    return [
        UserMessage(content="Weather in Paris?", timestamp=1),
        own_turn(model, first),
        ToolResultMessage(
            tool_call_id="call_w1", tool_name="get_weather", content=[TextContent(text="18°C, sunny")], timestamp=3
        ),
        own_turn(model, [TextContent(text="It is 18°C and sunny in Paris.")], stop="stop"),
        UserMessage(content="And tomorrow?", timestamp=5),
    ]


def test_openai_gpt4o() -> None:
    model = get_model("openai", "gpt-4o")
    messages: list[Message] = [
        UserMessage(
            content=[TextContent(text="What is on this picture?"), ImageContent(data=PIXEL, mime_type="image/png")],
            timestamp=1,
        ),
        own_turn(model, [TextContent(text="A pixel. Let me look closer."), ToolCall(id="call_s1", name="screenshot")]),
        ToolResultMessage(
            tool_call_id="call_s1",
            tool_name="screenshot",
            content=[ImageContent(data=PIXEL, mime_type="image/png")],
            timestamp=3,
        ),
        UserMessage(content="Thanks", timestamp=4),
    ]
    context = Context(system_prompt="You are terse.", tools=[WEATHER, SCREENSHOT], messages=messages)
    options = StreamOptions(max_tokens=512, temperature=0.2, session_id="session-42")
    check_golden("openai_gpt4o", request_of(model, context, options))


def test_openrouter_anthropic_model_with_its_own_reasoning() -> None:
    model = get_model("openrouter", "anthropic/claude-sonnet-4.5")
    detail = json.dumps({"type": "reasoning.encrypted", "id": "call_w1", "data": "ENCRYPTED", "index": 0})
    context = Context(
        system_prompt="Answer briefly.",
        tools=[WEATHER],
        messages=tool_turn(model, thinking="The user wants weather.", signature="reasoning", thought=detail),
    )
    check_golden("openrouter_claude", request_of(model, context, StreamOptions(reasoning="high", max_tokens=2048)))


def test_deepseek_reasoner_replays_reasoning_content() -> None:
    model = get_model("deepseek", "deepseek-reasoner")
    messages = tool_turn(model, thinking="Need the weather tool.", signature="reasoning_content")
    context = Context(system_prompt="Be helpful.", tools=[WEATHER], messages=messages)
    check_golden("deepseek_reasoner", request_of(model, context, StreamOptions(reasoning="medium", max_tokens=1000)))


def test_zai_glm_thinking_on_and_off() -> None:
    model = get_model("zai", "glm-4.6")
    context = Context(tools=[WEATHER], messages=tool_turn(model, thinking="Think.", signature="reasoning_content"))
    check_golden("zai_glm46_on", request_of(model, context, StreamOptions(reasoning="low")))
    check_golden("zai_glm46_off", request_of(model, context, StreamOptions()))


def test_groq_gpt_oss() -> None:
    model = get_model("groq", "openai/gpt-oss-120b")
    context = Context(
        system_prompt="Use tools when useful.",
        tools=[WEATHER],
        messages=tool_turn(model, thinking="Call the tool.", signature="reasoning"),
    )
    check_golden("groq_gpt_oss", request_of(model, context, StreamOptions(reasoning="minimal", max_tokens=300)))


def test_local_vllm_and_ollama() -> None:
    vllm = get_model("vllm", "Qwen/Qwen3-8B")
    context = Context(system_prompt="Local.", messages=[UserMessage(content="Hi", timestamp=1)])
    check_golden("vllm_qwen3_off", request_of(vllm, context, StreamOptions()))
    check_golden("vllm_qwen3_high", request_of(vllm, context, StreamOptions(reasoning="high")))
    ollama = get_model("ollama-openai", "gpt-oss:20b")
    check_golden("ollama_gpt_oss", request_of(ollama, context, StreamOptions(reasoning="medium")))


def anthropic_transcript() -> list[Message]:
    """A real-shaped Anthropic turn: signed and redacted thinking, text, two tool calls and results."""
    common: dict[str, Any] = {
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": Usage(input=120, output=80),
    }
    return [
        SystemMessage(content="You are a travel assistant.", tools_added=[WEATHER], timestamp=0),
        UserMessage(content="Compare the weather in Paris and Oslo.", timestamp=1),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="Two cities: two calls.", thinking_signature="EqQBCkgIBxABGAIqQFyWcKqpx1YzVG"),
                ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="RDACTED-OPAQUE", redacted=True),
                TextContent(text="Checking both cities."),
                ToolCall(id="toolu_01A09q90qw90lq917835lq9", name="get_weather", arguments={"city": "Paris"}),
                ToolCall(
                    id="toolu_01B" + "x" * 50 + "|item-with-a-bar",
                    name="get_weather",
                    arguments={"city": "Oslo", "unit": "c"},
                    thought_signature="sig-from-anthropic",
                ),
            ],
            stop_reason="toolUse",
            timestamp=2,
            **common,
        ),
        ToolResultMessage(
            tool_call_id="toolu_01A09q90qw90lq917835lq9",
            tool_name="get_weather",
            content=[TextContent(text="18°C")],
            timestamp=3,
        ),
        ToolResultMessage(
            tool_call_id="toolu_01B" + "x" * 50 + "|item-with-a-bar",
            tool_name="get_weather",
            content=[TextContent(text="4°C")],
            is_error=False,
            timestamp=4,
        ),
        AssistantMessage(
            content=[TextContent(text="Paris is warmer.")],
            stop_reason="stop",
            timestamp=5,
            **common,
        ),
        UserMessage(content="Thanks! Anything else?", timestamp=6),
    ]


#: A gateway that speaks Mistral's dialect of chat completions, reached through the ``mistral`` profile
#: (provider ``mistral`` itself is served by the native api, ``mistral-conversations``: tests/mistral).
MISTRAL_GATEWAY = Model(
    id="mistral-large-latest",
    api="openai-completions",
    provider="my-gateway",
    base_url="https://gateway.example/v1",
    input=["text", "image"],
    compat={"profile": "mistral"},
)


@pytest.mark.parametrize("provider", ["openai", "mistral"])
def test_cross_provider_handoff_from_an_anthropic_transcript(provider: str) -> None:
    model = get_model("openai", "gpt-4o") if provider == "openai" else MISTRAL_GATEWAY
    request = request_of(model, Context(messages=anthropic_transcript()), StreamOptions())
    check_golden(f"handoff_anthropic_to_{provider}", request)
    payload = request["payload"]
    text = json.dumps(payload)
    # Foreign thinking became text; signatures and redacted reasoning did not travel.
    assert "Two cities: two calls." in text
    assert "EqQBCkgIBxABGAIqQFyWcKqpx1YzVG" not in text
    assert "RDACTED-OPAQUE" not in text
    assert "sig-from-anthropic" not in text
    assistant = next(m for m in payload["messages"] if m["role"] == "assistant")
    ids = [call["id"] for call in assistant["tool_calls"]]
    results = [m["tool_call_id"] for m in payload["messages"] if m["role"] == "tool"]
    assert ids == results, "every call keeps its result after the ids were rewritten"
    if provider == "mistral":
        assert all(len(i) == 9 and i.isalnum() for i in ids)
    else:
        assert all(len(i) <= 40 and "|" not in i for i in ids)
