"""Responses request building: four golden payloads (plain, reasoning replayed to the same model, a
handoff from an Anthropic transcript, Azure) and the rules behind them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cassettes import library
from normalize import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StreamOptions,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from streamfns.catalog import get_model
from streamfns.kit import CompatError, WireRequest
from streamfns.openai_responses import api_key_for
from streamfns.openai_responses.request import (
    CUSTOM_TOOL_CALL,
    NO_TOOL_OUTPUT,
    build_request,
    read_text_signature,
    responses_tool_call_id,
    split_tool_call_id,
)
from tests.adapters import OPENAI_RESPONSES as RESPONSES

pytestmark = pytest.mark.parallel

FIXTURES = Path(__file__).parent / "fixtures"
PNG = "iVBORw0KGgo="
#: Set to rewrite the golden files from the current code (then read the diff before committing).
UPDATE = os.environ.get("UPDATE_GOLDENS") == "1"


def weather_tool() -> Tool:
    return Tool(
        name="get_weather",
        description="Current weather for a city.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )


def as_golden(request: WireRequest) -> dict[str, Any]:
    return json.loads(json.dumps({"url": request.url, "headers": request.headers, "payload": request.payload}))


def check_golden(name: str, request: WireRequest) -> None:
    path = FIXTURES / f"openai_responses_request_{name}.json"
    got = as_golden(request)
    if UPDATE:
        path.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert got == json.loads(path.read_text(encoding="utf-8"))


# -- goldens -------------------------------------------------------------------------------------------


def test_golden_plain() -> None:
    context = Context(
        system_prompt="You are terse.",
        tools=[weather_tool()],
        messages=[
            UserMessage(content="What is in this picture, and the weather in Paris?", timestamp=1),
            UserMessage(
                content=[TextContent(text="Here:"), ImageContent(data=PNG, mime_type="image/png")], timestamp=2
            ),
        ],
    )
    options = StreamOptions(max_tokens=2048, session_id="session-42")
    check_golden("plain", build_request(get_model("openai", "gpt-5.4"), context, options))


async def _replayed_turn(target: Model) -> AssistantMessage:
    """A real gpt-5.5 turn (encrypted reasoning, commentary text, a function call), as the adapter
    decoded it from the recording."""
    _, message = await RESPONSES.replay(library.load("pai__phase_commentary_gpt55"), target)
    assert message.stop_reason == "toolUse"
    return message


async def test_golden_reasoning_replayed_to_the_same_model() -> None:
    target = get_model("openai", "gpt-5.5")
    turn = await _replayed_turn(target)
    call = turn.content[-1]
    assert isinstance(call, ToolCall)
    context = Context(
        system_prompt="Briefly narrate what you are about to do before calling each tool.",
        tools=[Tool(name="get_capital", parameters={"type": "object", "properties": {"country": {"type": "string"}}})],
        messages=[
            UserMessage(content="What is the capital of PotatoLand?", timestamp=1),
            turn,
            ToolResultMessage(
                tool_call_id=call.id, tool_name=call.name, content=[TextContent(text="Mashville")], timestamp=3
            ),
        ],
    )
    request = build_request(target, context, StreamOptions(reasoning="high"))
    check_golden("reasoning_replay", request)
    items = request.payload["input"]
    thinking = turn.content[0]
    assert isinstance(thinking, ThinkingContent)
    reasoning = json.loads(thinking.thinking_signature or "")
    assert items[2] == reasoning  # verbatim, encrypted content included
    assert items[3]["id"].startswith("msg_")
    assert items[3]["phase"] == "commentary"
    assert items[4]["id"].startswith("fc_")
    assert items[5] == {"type": "function_call_output", "call_id": items[4]["call_id"], "output": "Mashville"}


async def test_reasoning_goes_to_another_model_as_text_only() -> None:
    turn = await _replayed_turn(get_model("openai", "gpt-5.5"))
    other = get_model("openai", "gpt-5.4")
    context = Context(messages=[UserMessage(content="Capital of PotatoLand?", timestamp=1), turn])
    items = build_request(other, context, StreamOptions()).payload["input"]
    types = [item.get("type", item.get("role")) for item in items]
    assert "reasoning" not in types
    call, result = items[-2:]
    assert call["type"] == "function_call"
    assert "id" not in call  # another model's item id would pair with reasoning that is not sent
    assert result["type"] == "function_call_output"  # the orphaned call's synthetic result
    assert result["call_id"] == call["call_id"]
    assert items[1] == {"role": "assistant", "content": "I’ll check the capital lookup tool for “PotatoLand.”"}


def anthropic_turn() -> AssistantMessage:
    return AssistantMessage(
        content=[
            ThinkingContent(thinking="Two cities, two lookups.", thinking_signature="EqQBCkgIBxAB-signed"),
            TextContent(text="Checking both."),
            ToolCall(id="toolu_01A09q90qw90lq917835lq9", name="get_weather", arguments={"city": "Paris"}),
            ToolCall(id="toolu_01B.with:odd/chars", name="get_weather", arguments={"city": "Tokyo"}),
        ],
        api="anthropic-messages",
        provider="anthropic",
        model="claude-sonnet-4-5",
        usage=Usage(input=10, output=20),
        stop_reason="toolUse",
        timestamp=2,
    )


def handoff_context() -> Context:
    turn = anthropic_turn()
    return Context(
        system_prompt="Be brief.",
        tools=[weather_tool()],
        messages=[
            UserMessage(content="Weather in Paris and Tokyo?", timestamp=1),
            turn,
            ToolResultMessage(
                tool_call_id="toolu_01A09q90qw90lq917835lq9",
                tool_name="get_weather",
                content=[TextContent(text="18°C")],
                timestamp=3,
            ),
            ToolResultMessage(
                tool_call_id="toolu_01B.with:odd/chars",
                tool_name="get_weather",
                content=[TextContent(text="24°C"), ImageContent(data=PNG, mime_type="image/png")],
                timestamp=4,
            ),
            UserMessage(content="And which is warmer?", timestamp=5),
        ],
    )


def test_golden_handoff_from_an_anthropic_transcript_with_thinking_and_parallel_calls() -> None:
    request = build_request(get_model("openai", "gpt-5.2"), handoff_context(), StreamOptions(reasoning="medium"))
    check_golden("anthropic_handoff", request)
    items = request.payload["input"]
    # Foreign thinking is plain assistant text; tool-call ids are normalized, results follow them.
    assert items[2] == {"role": "assistant", "content": "Two cities, two lookups."}
    calls = [item for item in items if item.get("type") == "function_call"]
    outputs = [item for item in items if item.get("type") == "function_call_output"]
    assert [c["call_id"] for c in calls] == [o["call_id"] for o in outputs]
    assert calls[1]["call_id"] == "toolu_01B_with_odd_chars"


def test_golden_azure() -> None:
    azure = get_model("azure-openai-responses", "gpt-5.4")
    azure.base_url = "https://contoso.openai.azure.com/openai/v1"
    context = Context(system_prompt="You are terse.", messages=[UserMessage(content="Hello", timestamp=1)])
    request = build_request(azure, context, StreamOptions(reasoning="low", max_tokens=8))
    check_golden("azure", request)
    assert request.url == "https://contoso.openai.azure.com/openai/v1/responses"
    assert request.payload["model"] == "gpt-5.4"  # the deployment name
    assert request.payload["max_output_tokens"] == 16


# -- keys and base URLs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base_url", "url"),
    [
        ("https://contoso.openai.azure.com", "https://contoso.openai.azure.com/openai/v1/responses"),
        ("https://contoso.openai.azure.com/", "https://contoso.openai.azure.com/openai/v1/responses"),
        ("https://contoso.openai.azure.com/openai", "https://contoso.openai.azure.com/openai/v1/responses"),
        ("https://contoso.openai.azure.com/openai/v1", "https://contoso.openai.azure.com/openai/v1/responses"),
        ("https://gateway.example/azure/v1", "https://gateway.example/azure/v1/responses"),  # a proxy's own path
    ],
)
def test_a_bare_azure_resource_url_gets_the_v1_path(base_url: str, url: str) -> None:
    azure = get_model("azure-openai-responses", "gpt-5")
    azure.base_url = base_url
    assert build_request(azure, Context(messages=[UserMessage(content="hi")])).url == url
    plain = RESPONSES.model(base_url="https://api.example.com")
    assert (
        build_request(plain, Context(messages=[UserMessage(content="hi")])).url == "https://api.example.com/responses"
    )


def test_keys_per_provider() -> None:
    assert api_key_for(RESPONSES.model()).headers("test-key") == {"authorization": "Bearer test-key"}
    assert api_key_for(RESPONSES.model()).env == ("OPENAI_API_KEY",)
    azure = get_model("azure-openai-responses", "gpt-5")
    assert api_key_for(azure).headers("test-key") == {"api-key": "test-key"}
    assert api_key_for(azure).env == ("AZURE_OPENAI_API_KEY",)
    # Another server never gets OpenAI's key from the environment.
    assert api_key_for(RESPONSES.model(provider="my-gateway")).env == ("MY_GATEWAY_API_KEY",)


def test_the_azure_placeholder_base_url_is_a_configuration_error() -> None:
    azure = get_model("azure-openai-responses", "gpt-5")
    assert "<resource>" in azure.base_url
    with pytest.raises(CompatError, match="Azure OpenAI resource"):
        build_request(azure, Context(messages=[UserMessage(content="hi")]), StreamOptions())


def test_the_url_is_the_base_url_plus_responses() -> None:
    for base in ("http://localhost:1234/v1", "http://localhost:1234/v1/"):
        request = build_request(RESPONSES.model(base_url=base), Context(messages=[UserMessage(content="hi")]))
        assert request.url == "http://localhost:1234/v1/responses"
    assert build_request(RESPONSES.model(base_url=""), Context()).url == "https://api.openai.com/v1/responses"


# -- reasoning effort ----------------------------------------------------------------------------------


def payload_for(target: Model, **options: Any) -> dict[str, Any]:
    return build_request(target, Context(messages=[UserMessage(content="hi")]), StreamOptions(**options)).payload


@pytest.mark.parametrize(
    ("model_id", "level", "effort"),
    [
        ("gpt-5", "minimal", "minimal"),
        ("gpt-5", "xhigh", "high"),  # xhigh exists only where the model's map names it
        ("gpt-5.2", "xhigh", "xhigh"),
        ("gpt-5.2", "max", "xhigh"),  # nearest supported, searching upwards then downwards
        ("gpt-6-sol", "max", "max"),
        ("o4-mini", "minimal", "low"),  # o-series reject minimal
        ("gpt-5-codex", "minimal", "low"),
        ("gpt-6.2-astra", "minimal", "low"),
    ],
)
def test_reasoning_levels_map_to_each_models_efforts(model_id: str, level: ThinkingLevel, effort: str) -> None:
    payload = payload_for(get_model("openai", model_id), reasoning=level)
    assert payload["reasoning"] == {"effort": effort, "summary": "auto"}
    assert payload["include"] == ["reasoning.encrypted_content"]


@pytest.mark.parametrize(
    ("model_id", "reasoning", "include"),
    [
        ("gpt-5.4", {"effort": "none"}, False),
        ("gpt-5", {"effort": "minimal"}, True),  # cannot stop reasoning: the lowest effort
        ("o3", None, True),  # cannot be turned off at all: the model's default applies
    ],
)
def test_no_reasoning_asks_for_each_models_off_effort(
    model_id: str, reasoning: dict[str, str] | None, include: bool
) -> None:
    payload = payload_for(get_model("openai", model_id))
    assert payload.get("reasoning") == reasoning
    assert ("include" in payload) is include
    assert "summary" not in (payload.get("reasoning") or {})


def test_a_model_without_reasoning_gets_no_reasoning_parameters_and_takes_temperature() -> None:
    payload = payload_for(RESPONSES.model(reasoning=False), reasoning="high", temperature=0.2)
    assert "reasoning" not in payload
    assert "include" not in payload
    assert payload["temperature"] == 0.2


def test_temperature_is_sent_only_while_the_model_does_not_reason() -> None:
    assert payload_for(get_model("openai", "gpt-5.4"), temperature=0.5)["temperature"] == 0.5
    assert "temperature" not in payload_for(get_model("openai", "gpt-5.4"), temperature=0.5, reasoning="low")
    assert "temperature" not in payload_for(get_model("openai", "gpt-5"), temperature=0.5)


def test_compat_flags_shape_the_reasoning_request() -> None:
    server = RESPONSES.model(
        compat={"encrypted_reasoning": False, "reasoning_summary": None, "supports_developer_role": False}
    )
    context = Context(system_prompt="sys", messages=[UserMessage(content="hi")])
    payload = build_request(server, context, StreamOptions(reasoning="high")).payload
    assert payload["reasoning"] == {"effort": "high"}
    assert "include" not in payload
    assert payload["input"][0] == {"role": "system", "content": "sys"}


def test_an_unknown_compat_flag_is_a_configuration_error() -> None:
    with pytest.raises(CompatError, match="supports_nonsense"):
        build_request(RESPONSES.model(compat={"supports_nonsense": True}), Context())


# -- request fields --------------------------------------------------------------------------------------


def test_the_request_is_stateless_and_streamed() -> None:
    payload = payload_for(RESPONSES.model())
    assert payload["store"] is False
    assert payload["stream"] is True
    assert "max_output_tokens" not in payload


def test_max_output_tokens_is_at_least_16() -> None:
    assert payload_for(RESPONSES.model(), max_tokens=1)["max_output_tokens"] == 16
    assert payload_for(RESPONSES.model(), max_tokens=500)["max_output_tokens"] == 500


def test_the_prompt_cache_key_comes_from_the_session_and_follows_cache_retention() -> None:
    assert payload_for(RESPONSES.model(), session_id="s1")["prompt_cache_key"] == "s1"
    assert "prompt_cache_key" not in payload_for(RESPONSES.model(), session_id="s1", cache_retention="none")
    assert payload_for(RESPONSES.model(), session_id="s1", cache_retention="long")["prompt_cache_retention"] == "24h"
    long_key = payload_for(RESPONSES.model(), session_id="x" * 200)["prompt_cache_key"]
    assert len(long_key) <= 64
    assert long_key == payload_for(RESPONSES.model(), session_id="x" * 200)["prompt_cache_key"]


def test_system_messages_later_in_the_transcript_stay_in_place() -> None:
    context = Context(
        messages=[
            SystemMessage(content="Base prompt."),
            UserMessage(content="one", timestamp=1),
            SystemMessage(content="New rule."),
            UserMessage(content="two", timestamp=2),
        ]
    )
    items = build_request(RESPONSES.model(), context).payload["input"]
    assert items == [
        {"role": "developer", "content": "Base prompt."},
        {"role": "user", "content": [{"type": "input_text", "text": "one"}]},
        {"role": "developer", "content": "New rule."},
        {"role": "user", "content": [{"type": "input_text", "text": "two"}]},
    ]


def test_blank_user_messages_are_dropped_and_empty_tool_results_say_so() -> None:
    call = ToolCall(id="call_1|fc_1", name="f", arguments={})
    turn = AssistantMessage(
        content=[call], api="openai-responses", provider="openai", model="gpt-5", stop_reason="toolUse"
    )
    context = Context(
        messages=[
            UserMessage(content="  ", timestamp=1),
            UserMessage(content="go", timestamp=2),
            turn,
            ToolResultMessage(tool_call_id=call.id, tool_name="f", content=[], timestamp=3),
        ]
    )
    items = build_request(RESPONSES.model(), context).payload["input"]
    assert items[0] == {"role": "user", "content": [{"type": "input_text", "text": "go"}]}
    assert items[-1] == {"type": "function_call_output", "call_id": "call_1", "output": NO_TOOL_OUTPUT}


def test_tools_are_function_tools_with_strict_off_and_copied_schemas() -> None:
    tool = weather_tool()
    payload = build_request(RESPONSES.model(), Context(tools=[tool], messages=[UserMessage(content="hi")])).payload
    definition = payload["tools"][0]
    assert definition == {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": tool.parameters,
        "strict": False,
    }
    definition["parameters"]["properties"]["city"]["type"] = "number"
    assert tool.parameters["properties"]["city"]["type"] == "string"


def _same_model_turn(*blocks: Any) -> AssistantMessage:
    return AssistantMessage(
        content=list(blocks), api="openai-responses", provider="openai", model="gpt-5", stop_reason="stop"
    )


def test_reasoning_that_led_to_no_output_is_not_sent() -> None:
    item: dict[str, Any] = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"}
    turn = _same_model_turn(ThinkingContent(thinking="", thinking_signature=json.dumps(item)))
    turn.stop_reason = "length"
    context = Context(messages=[UserMessage(content="hi", timestamp=1), turn, UserMessage(content="go on")])
    items = build_request(RESPONSES.model(), context).payload["input"]
    assert [i.get("role") for i in items] == ["user", "user"]


def test_reasoning_without_encrypted_content_is_not_sent_and_the_output_after_it_loses_its_ids() -> None:
    item: dict[str, Any] = {"type": "reasoning", "id": "rs_1", "summary": []}
    turn = _same_model_turn(
        ThinkingContent(thinking="", thinking_signature=json.dumps(item)),
        TextContent(text="Answer", text_signature='{"v":1,"id":"msg_1"}'),
        ToolCall(id="call_1|fc_1", name="f", arguments={"x": 1}),
    )
    context = Context(messages=[UserMessage(content="hi", timestamp=1), turn])
    items = build_request(RESPONSES.model(), context).payload["input"]
    assert items[1] == {"role": "assistant", "content": "Answer"}
    assert items[2] == {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"x":1}'}


def test_tool_results_with_images_are_sent_as_parts() -> None:
    call = ToolCall(id="call_1|fc_1", name="shot", arguments={})
    context = Context(
        messages=[
            UserMessage(content="look", timestamp=1),
            _same_model_turn(call),
            ToolResultMessage(
                tool_call_id=call.id,
                tool_name="shot",
                content=[TextContent(text="A screenshot."), ImageContent(data=PNG, mime_type="image/png")],
                timestamp=3,
            ),
        ]
    )
    output = build_request(RESPONSES.model(input=["text", "image"]), context).payload["input"][-1]["output"]
    assert output == [
        {"type": "input_text", "text": "A screenshot."},
        {"type": "input_image", "detail": "auto", "image_url": f"data:image/png;base64,{PNG}"},
    ]


# -- ids and signatures -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "foreign",
    [
        "toolu_01A09q90qw90lq917835lq9",
        "call.with:odd/chars_",
        "x" * 200,
        "call_abc|item_xyz",
        "capture-id-3|capture-id-4",
        "🙂|🙂",
        "",
    ],
)
def test_foreign_tool_call_ids_become_valid_responses_ids(foreign: str) -> None:
    normalized = responses_tool_call_id(foreign)
    call_id, item_id = split_tool_call_id(normalized)
    assert call_id
    assert len(call_id) <= 64
    assert all(ch.isalnum() or ch in "_-" for ch in call_id)
    assert not call_id.endswith("_")
    if item_id is not None:
        assert item_id.startswith("fc_")
        assert len(item_id) <= 64
    assert responses_tool_call_id(foreign) == normalized  # deterministic


def test_a_conforming_call_id_is_kept() -> None:
    assert responses_tool_call_id("call_AB6AaRZ1FYZB2RwS6A5vbdqn") == "call_AB6AaRZ1FYZB2RwS6A5vbdqn"


def test_text_signatures_read_both_forms() -> None:
    signature = read_text_signature('{"v":1,"id":"msg_1","phase":"commentary"}')
    assert signature is not None
    assert (signature.id, signature.phase) == ("msg_1", "commentary")
    legacy = read_text_signature("msg_2")
    assert legacy is not None
    assert (legacy.id, legacy.phase) == ("msg_2", None)
    assert read_text_signature('{"v":1}') is None
    assert read_text_signature("{not json") is None
    assert read_text_signature(None) is None


async def test_a_grammar_tools_call_goes_back_as_a_custom_tool_call_with_its_output() -> None:
    # Decoded from the recording, then replayed to the same model: the API wants the custom items back.
    _, reply = await RESPONSES.replay(library.load("vercel__custom_tool_call_HANDWRITTEN"))
    (call,) = [block for block in reply.content if isinstance(block, ToolCall)]
    assert set(call.arguments) == {"input"}
    assert call.thought_signature == CUSTOM_TOOL_CALL
    same = RESPONSES.model(id=reply.model)
    same.provider, same.api = reply.provider, reply.api
    result = ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=[TextContent(text="ok")])
    items = build_request(same, Context(messages=[UserMessage(content="go"), reply, result])).payload["input"]
    custom = [item for item in items if item.get("type", "").startswith("custom_tool_call")]
    call_id, item_id = split_tool_call_id(call.id)
    assert custom == [
        {
            "type": "custom_tool_call",
            "call_id": call_id,
            "name": call.name,
            "input": call.arguments["input"],
            "id": item_id,
        },
        {"type": "custom_tool_call_output", "call_id": call_id, "output": "ok"},
    ]
    # A function call is still a function call.
    plain = ToolCall(id="call_9|fc_9", name="lookup", arguments={"input": "x"})
    turn = AssistantMessage(content=[plain], api=same.api, provider=same.provider, model=same.id, stop_reason="toolUse")
    answer = ToolResultMessage(tool_call_id=plain.id, tool_name="lookup", content=[TextContent(text="ok")])
    kinds = [item.get("type") for item in build_request(same, Context(messages=[turn, answer])).payload["input"]]
    assert kinds == ["function_call", "function_call_output"]
