"""Anthropic request building: a multi-turn golden payload plus focused rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from normalize import (
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    StopReason,
    StreamOptions,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolRef,
    ToolResultMessage,
    UserMessage,
)
from streamfns.anthropic.request import (
    INTERLEAVED_THINKING_BETA,
    anthropic_tool_call_id,
    build_request,
)
from streamfns.catalog import get_model, list_models
from streamfns.kit import CompatError, WireRequest

pytestmark = pytest.mark.parallel

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = FIXTURES / "anthropic_request_multiturn.json"
PNG = "iVBORw0KGgo="
JPEG = "/9j/4AAQ"

SONNET_45 = "claude-sonnet-4-5-20250929"


def weather_tool() -> Tool:
    return Tool(
        name="get_weather",
        description="Current weather for a city.",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    )


def time_tool() -> Tool:
    return Tool(
        name="get_time", description="Local time in a timezone.", parameters={"properties": {"tz": {"type": "string"}}}
    )


def sonnet(*content: AssistantContent, stop: StopReason = "stop", timestamp: int = 0) -> AssistantMessage:
    return AssistantMessage(
        content=list(content),
        api="anthropic-messages",
        provider="anthropic",
        model=SONNET_45,
        stop_reason=stop,
        timestamp=timestamp,
    )


def golden_context() -> Context:
    """A transcript exercising every conversion rule at once."""
    messages: list[Message] = [
        UserMessage(
            content=[
                TextContent(text="What's the weather in Paris and the time in Tokyo? Here is a photo."),
                ImageContent(data=PNG, mime_type="image/png"),
                TextContent(text="   "),
            ],
            timestamp=1,
        ),
        # Same model: signed thinking replays as thinking; parallel tool calls.
        sonnet(
            ThinkingContent(thinking="Two lookups, in parallel.", thinking_signature="sig-sonnet-1"),
            TextContent(text="Checking both."),
            TextContent(text=" "),
            ToolCall(id="toolu_01A", name="get_weather", arguments={"city": "Paris"}),
            ToolCall(id="toolu_01B", name="get_time", arguments={"tz": "Asia/Tokyo"}),
            stop="toolUse",
            timestamp=2,
        ),
        ToolResultMessage(
            tool_call_id="toolu_01A",
            tool_name="get_weather",
            content=[TextContent(text="18°C"), TextContent(text="light rain")],
            timestamp=3,
        ),
        ToolResultMessage(
            tool_call_id="toolu_01B",
            tool_name="get_time",
            content=[ImageContent(data=JPEG, mime_type="image/jpeg")],
            is_error=False,
            timestamp=4,
        ),
        sonnet(
            ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="redacted-blob", redacted=True),
            TextContent(text="Paris: 18°C and light rain. Tokyo: see the clock photo."),
            timestamp=5,
        ),
        UserMessage(content="And in Rome?", timestamp=6),
        # An errored turn: dropped whole, tool call included.
        sonnet(
            ThinkingContent(thinking="Rome lookup", thinking_signature="sig-partial"),
            ToolCall(id="toolu_ERR", name="get_weather", arguments={"city": "Ro"}),
            stop="error",
            timestamp=7,
        ),
        UserMessage(content="  ", timestamp=8),
        # A turn from another provider: thinking → text, signatures dropped, ids sanitized.
        AssistantMessage(
            content=[
                ThinkingContent(
                    thinking="Use the weather tool for Rome.",
                    thinking_signature=json.dumps({"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA"}),
                ),
                TextContent(text="Looking up Rome.", text_signature=json.dumps({"v": 1, "id": "msg_1"})),
                ToolCall(id="call_abc|fc_def", name="get_weather", arguments={"city": "Rome"}, thought_signature="ts"),
            ],
            api="openai-responses",
            provider="openai",
            model="gpt-5",
            stop_reason="toolUse",
            timestamp=9,
        ),
        ToolResultMessage(
            tool_call_id="call_abc|fc_def",
            tool_name="get_weather",
            content=[TextContent(text="no data")],
            is_error=True,
            timestamp=10,
        ),
        # Mid-conversation system message: text becomes a <system_update> turn, tools change the set.
        SystemMessage(
            content="Answer in French from now on.",
            tools_added=[weather_tool()],
            tools_removed=[ToolRef(name="get_weather")],
            timestamp=11,
        ),
        AssistantMessage(
            content=[TextContent(text="Pas de données pour Rome.")],
            api="openai-responses",
            provider="openai",
            model="gpt-5",
            stop_reason="stop",
            timestamp=12,
        ),
        UserMessage(content=[TextContent(text="Merci. Et Berlin ?")], timestamp=13),
    ]
    return Context(messages=messages, system_prompt="You are a weather assistant.", tools=[weather_tool(), time_tool()])


def golden_request() -> WireRequest:
    options = StreamOptions(reasoning="medium", temperature=0.2, cache_retention="short")
    return build_request(get_model("anthropic", "claude-sonnet-4-5"), golden_context(), options)


def test_golden_payload() -> None:
    expected: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert json.loads(json.dumps(golden_request().payload)) == expected


def test_golden_key_rules() -> None:
    request = golden_request()
    payload = request.payload
    messages: list[dict[str, Any]] = payload["messages"]

    assert request.url == "https://api.anthropic.com/v1/messages"
    assert request.headers["anthropic-beta"] == INTERLEAVED_THINKING_BETA
    assert payload["max_tokens"] == 64_000
    assert payload["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert "temperature" not in payload  # thinking is on
    assert [m["role"] for m in messages] == ["user", "assistant"] * 4 + ["user"]

    # The two parallel results share one user turn.
    results = messages[2]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result"]
    assert results[0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_01A",
        "content": "18°C\nlight rain",
        "is_error": False,
    }
    assert results[1]["content"][0] == {"type": "text", "text": "(see attached image)"}
    assert results[1]["content"][1]["source"]["media_type"] == "image/jpeg"

    # Same-model thinking and redacted thinking replay; the errored turn and its call are gone.
    assert messages[1]["content"][0] == {
        "type": "thinking",
        "thinking": "Two lookups, in parallel.",
        "signature": "sig-sonnet-1",
    }
    assert messages[3]["content"][0] == {"type": "redacted_thinking", "data": "redacted-blob"}
    assert "toolu_ERR" not in json.dumps(payload)
    assert "sig-partial" not in json.dumps(payload)

    # The foreign turn: thinking as text, no signatures, sanitized id on call and result.
    foreign = messages[5]["content"]
    assert foreign[0] == {"type": "text", "text": "Use the weather tool for Rome."}
    assert foreign[2]["id"] == "call_abc_fc_def"
    assert messages[4] == {"role": "user", "content": "And in Rome?"}  # the blank user turn after it is gone
    result_turn = messages[6]["content"]
    assert result_turn[0]["tool_use_id"] == "call_abc_fc_def"
    assert result_turn[0]["is_error"] is True
    # The mid-conversation system text follows the tool result it must not separate from its call.
    assert result_turn[1] == {"type": "text", "text": "<system_update>Answer in French from now on.</system_update>"}
    assert "Answer in French" not in payload["system"][0]["text"]

    # Cache markers: system, last tool, last block of the last user turn — and nowhere else.
    assert payload["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert payload["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert messages[8]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert json.dumps(payload).count("cache_control") == 3
    # get_weather was removed and re-added mid-conversation, which moves it to the end of the set.
    assert [t["name"] for t in payload["tools"]] == ["get_time", "get_weather"]


# ------------------------------------------------------------------------------------ small bits


def simple_context(*messages: Message, tools: list[Tool] | None = None, system: str | None = "Be brief.") -> Context:
    return Context(messages=list(messages) or [UserMessage(content="hi")], system_prompt=system, tools=tools)


def custom_model(**overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "my-claude-proxy-model",
        "api": "anthropic-messages",
        "provider": "my-proxy",
        "base_url": "https://proxy.example/anthropic/",
        "max_tokens": 4096,
    }
    fields.update(overrides)
    return Model(**fields)


def test_tool_call_id_sanitizer() -> None:
    assert anthropic_tool_call_id("toolu_01-AbC") == "toolu_01-AbC"
    assert anthropic_tool_call_id("call|item.x y") == "call_item_x_y"
    assert len(anthropic_tool_call_id("x" * 500)) == 64


@pytest.mark.parametrize(
    ("retention", "marker"),
    [("none", None), ("short", {"type": "ephemeral"}), ("long", {"type": "ephemeral", "ttl": "1h"})],
)
def test_cache_retention(retention: Any, marker: dict[str, str] | None) -> None:
    context = simple_context(UserMessage(content="hello"), tools=[weather_tool()])
    payload = build_request(custom_model(), context, StreamOptions(cache_retention=retention)).payload
    assert payload["system"][-1].get("cache_control") == marker
    assert payload["tools"][-1].get("cache_control") == marker
    if marker is None:
        assert payload["messages"][-1]["content"] == "hello"  # a plain string stays a string
        assert "cache_control" not in json.dumps(payload)
    else:
        # A string turn becomes a text block so that it can carry the marker.
        assert payload["messages"][-1]["content"] == [{"type": "text", "text": "hello", "cache_control": marker}]


def test_long_retention_falls_back_when_model_lacks_it() -> None:
    model = custom_model(compat={"supports_long_cache_retention": False})
    payload = build_request(model, simple_context(), StreamOptions(cache_retention="long")).payload
    assert payload["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_max_tokens_always_present() -> None:
    assert build_request(custom_model(), simple_context(), None).payload["max_tokens"] == 4096
    assert build_request(custom_model(), simple_context(), StreamOptions(max_tokens=100)).payload["max_tokens"] == 100


def test_user_built_model_works_without_catalog_entry() -> None:
    request = build_request(custom_model(), simple_context(), StreamOptions(api_key="from-options"))
    assert request.url == "https://proxy.example/anthropic/v1/messages"
    assert request.payload["model"] == "my-claude-proxy-model"
    assert "x-api-key" not in request.headers, "the kit adds the key, not the request builder"
    assert "thinking" not in request.payload  # not a reasoning model
    assert request.payload["stream"] is True


def test_default_base_url() -> None:
    assert build_request(custom_model(base_url=""), simple_context(), None).url == (
        "https://api.anthropic.com/v1/messages"
    )


# --------------------------------------------------------------------------------------- thinking


@pytest.mark.parametrize("reasoning", [None, "off"])
def test_thinking_off_is_disabled_explicitly(reasoning: ThinkingLevel | None) -> None:
    for model_id in ("claude-opus-4-6", "claude-sonnet-4-5"):
        payload = build_request(get_model("anthropic", model_id), simple_context(), StreamOptions(reasoning=reasoning))
        assert payload.payload["thinking"] == {"type": "disabled"}
        assert "output_config" not in payload.payload


def test_thinking_omitted_for_non_reasoning_model() -> None:
    model = get_model("anthropic", "claude-3-haiku-20240307")
    payload = build_request(model, simple_context(), StreamOptions(reasoning="high")).payload
    assert "thinking" not in payload
    assert payload["max_tokens"] == 4096


def test_always_thinking_model_never_gets_disabled() -> None:
    model = get_model("anthropic", "claude-fable-5")
    payload = build_request(model, simple_context(), StreamOptions(temperature=0.3)).payload
    assert "thinking" not in payload
    assert "temperature" not in payload


@pytest.mark.parametrize(
    ("level", "effort"),
    [("minimal", "low"), ("low", "low"), ("medium", "medium"), ("high", "high"), ("xhigh", "high"), ("max", "max")],
)
def test_adaptive_thinking_effort_opus_4_6(level: ThinkingLevel, effort: str) -> None:
    request = build_request(get_model("anthropic", "claude-opus-4-6"), simple_context(), StreamOptions(reasoning=level))
    assert request.payload["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert request.payload["output_config"] == {"effort": effort}
    assert request.payload["max_tokens"] == 128_000
    assert "anthropic-beta" not in request.headers  # no interleaved beta for adaptive models


def test_adaptive_thinking_xhigh_where_the_model_maps_it() -> None:
    model = get_model("anthropic", "claude-opus-4-7")
    payload = build_request(model, simple_context(), StreamOptions(reasoning="xhigh")).payload
    assert payload["output_config"] == {"effort": "xhigh"}


@pytest.mark.parametrize(
    ("level", "budget"), [("minimal", 1024), ("low", 2048), ("medium", 8192), ("high", 16384), ("max", 16384)]
)
def test_budget_thinking_levels(level: ThinkingLevel, budget: int) -> None:
    model = get_model("anthropic", "claude-sonnet-4-5")
    request = build_request(model, simple_context(), StreamOptions(reasoning=level))
    assert request.payload["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert request.payload["max_tokens"] == model.max_tokens  # the caller did not cap
    assert request.headers["anthropic-beta"] == INTERLEAVED_THINKING_BETA


def test_budget_thinking_raises_a_caller_cap_by_the_budget() -> None:
    model = get_model("anthropic", "claude-sonnet-4-5")
    payload = build_request(model, simple_context(), StreamOptions(reasoning="low", max_tokens=1000)).payload
    assert payload["max_tokens"] == 3048
    # The budget then shrinks so that 1024 answer tokens remain.
    assert payload["thinking"]["budget_tokens"] == 3048 - 1024


def test_budget_thinking_capped_by_model_keeps_answer_tokens() -> None:
    model = custom_model(reasoning=True, max_tokens=10_000)
    options = StreamOptions(reasoning="high", max_tokens=5000, thinking_budgets={"high": 12_000})
    payload = build_request(model, simple_context(), options).payload
    assert payload["max_tokens"] == 10_000
    assert payload["thinking"]["budget_tokens"] == 10_000 - 1024


def test_thinking_budget_overrides() -> None:
    options = StreamOptions(reasoning="medium", thinking_budgets={"medium": 3000})
    payload = build_request(get_model("anthropic", "claude-haiku-4-5"), simple_context(), options).payload
    assert payload["thinking"]["budget_tokens"] == 3000


# ------------------------------------------------------------------------------------ temperature


def test_temperature_sent_only_when_thinking_is_off_and_supported() -> None:
    sonnet_45 = get_model("anthropic", "claude-sonnet-4-5")
    off = build_request(sonnet_45, simple_context(), StreamOptions(temperature=0.7)).payload
    assert off["temperature"] == 0.7
    on = build_request(sonnet_45, simple_context(), StreamOptions(temperature=0.7, reasoning="low")).payload
    assert "temperature" not in on
    opus_47 = get_model("anthropic", "claude-opus-4-7")
    unsupported = build_request(opus_47, simple_context(), StreamOptions(temperature=0.7)).payload
    assert "temperature" not in unsupported
    assert "temperature" not in build_request(sonnet_45, simple_context(), None).payload


# ---------------------------------------------------------------------------------------- headers


def test_the_builder_sends_only_its_own_headers() -> None:
    model = custom_model(reasoning=True, compat={"interleaved_thinking": True}, headers={"X-Model-Header": "m"})
    headers = build_request(model, simple_context(), StreamOptions(reasoning="low", api_key="k")).headers
    assert headers == {
        "accept": "text/event-stream",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
        "anthropic-beta": INTERLEAVED_THINKING_BETA,
    }


def test_an_unknown_compat_flag_is_refused() -> None:
    with pytest.raises(CompatError, match="adaptive_thinkin"):
        build_request(custom_model(compat={"adaptive_thinkin": True}), simple_context(), None)
    with pytest.raises(CompatError, match="supports_temperature"):
        build_request(custom_model(compat={"supports_temperature": "yes"}), simple_context(), None)


# --------------------------------------------------------------------------------------- messages


def test_blank_and_empty_messages_are_dropped() -> None:
    context = simple_context(
        UserMessage(content="  "),
        UserMessage(content=[TextContent(text="")]),
        UserMessage(content="real question"),
        AssistantMessage(
            content=[TextContent(text=" "), ThinkingContent(thinking="")],
            api="anthropic-messages",
            provider="my-proxy",
            model="my-claude-proxy-model",
            stop_reason="stop",
        ),
        system=None,
    )
    payload = build_request(custom_model(), context, StreamOptions(cache_retention="none")).payload
    assert payload["messages"] == [{"role": "user", "content": "real question"}]
    assert "system" not in payload
    assert "tools" not in payload


def test_unsigned_thinking_becomes_text_unless_empty_signatures_are_allowed() -> None:
    message = AssistantMessage(
        content=[ThinkingContent(thinking="draft"), TextContent(text="done")],
        api="anthropic-messages",
        provider="my-proxy",
        model="my-claude-proxy-model",
        stop_reason="stop",
    )
    context = simple_context(UserMessage(content="q"), message, UserMessage(content="next"))
    plain = build_request(custom_model(), context, StreamOptions(cache_retention="none")).payload
    assert plain["messages"][1]["content"][0] == {"type": "text", "text": "draft"}
    kimi_like = custom_model(compat={"allow_empty_signature": True})
    allowed = build_request(kimi_like, context, StreamOptions(cache_retention="none")).payload
    assert allowed["messages"][1]["content"][0] == {"type": "thinking", "thinking": "draft", "signature": ""}


def test_system_update_waits_for_tool_results() -> None:
    call = AssistantMessage(
        content=[ToolCall(id="t1", name="get_weather", arguments={"city": "Oslo"})],
        api="anthropic-messages",
        provider="my-proxy",
        model="my-claude-proxy-model",
        stop_reason="toolUse",
    )
    context = simple_context(
        UserMessage(content="weather?"),
        call,
        SystemMessage(content="Be terse."),
        ToolResultMessage(tool_call_id="t1", tool_name="get_weather", content=[TextContent(text="cold")]),
    )
    payload = build_request(custom_model(), context, StreamOptions(cache_retention="none")).payload
    last = payload["messages"][-1]
    assert last["role"] == "user"
    assert [block["type"] for block in last["content"]] == ["tool_result", "text"]
    assert last["content"][1]["text"] == "<system_update>Be terse.</system_update>"


def test_orphaned_tool_call_gets_a_synthetic_error_result() -> None:
    call = AssistantMessage(
        content=[ToolCall(id="t1", name="get_weather")],
        api="anthropic-messages",
        provider="my-proxy",
        model="my-claude-proxy-model",
        stop_reason="toolUse",
    )
    context = simple_context(UserMessage(content="weather?"), call, UserMessage(content="skip it"))
    payload = build_request(custom_model(), context, StreamOptions(cache_retention="none")).payload
    assert payload["messages"][-1] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "No result provided", "is_error": True},
            {"type": "text", "text": "skip it"},
        ],
    }


def test_payload_does_not_alias_the_transcript() -> None:
    arguments = {"city": "Oslo", "opts": {"units": "C"}}
    tool = weather_tool()
    call = AssistantMessage(
        content=[ToolCall(id="t1", name="get_weather", arguments=arguments)],
        api="anthropic-messages",
        provider="my-proxy",
        model="my-claude-proxy-model",
        stop_reason="toolUse",
    )
    result = ToolResultMessage(tool_call_id="t1", tool_name="get_weather", content=[TextContent(text="cold")])
    context = simple_context(UserMessage(content="q"), call, result, tools=[tool])
    payload = build_request(custom_model(), context, None).payload
    payload["messages"][1]["content"][0]["input"]["opts"]["units"] = "F"
    payload["tools"][0]["input_schema"]["properties"]["city"]["type"] = "number"
    assert arguments["opts"] == {"units": "C"}
    assert tool.parameters["properties"]["city"] == {"type": "string"}


def test_surrogates_scrubbed_from_system_and_tools() -> None:
    bad = json.loads('"x\\ud83dy"')
    tool = Tool(name="t", description=bad)
    context = Context(messages=[UserMessage(content=bad)], system_prompt=bad, tools=[tool])
    payload = build_request(custom_model(), context, None).payload
    json.dumps(payload, ensure_ascii=False).encode("utf-8")
    assert payload["system"][0]["text"] == "xy"


# ---------------------------------------------------------------------------------------- catalog


def test_catalog_aliases_resolve_to_canonical_ids() -> None:
    assert get_model("anthropic", "claude-sonnet-4-0").id == "claude-sonnet-4-20250514"
    assert get_model("anthropic", "claude-sonnet-4-20250514").id == "claude-sonnet-4-20250514"
    assert get_model("anthropic", "claude-haiku-4-5").id == "claude-haiku-4-5-20251001"
    model = get_model("anthropic", "claude-opus-4-6")
    assert (model.api, model.provider, model.base_url) == (
        "anthropic-messages",
        "anthropic",
        "https://api.anthropic.com",
    )


def test_catalog_returns_fresh_models() -> None:
    first = get_model("anthropic", "claude-opus-4-6")
    assert first.compat is not None
    first.compat["adaptive_thinking"] = False
    assert get_model("anthropic", "claude-opus-4-6").compat == {"adaptive_thinking": True, "supports_temperature": True}


def test_catalog_unknown_ids_suggest_close_ones() -> None:
    with pytest.raises(KeyError, match="claude-sonnet-4-5"):
        get_model("anthropic", "claude-sonet-4-5")
    with pytest.raises(KeyError, match="anthropic"):
        get_model("nope", "x")


def test_catalog_required_models_and_sane_data() -> None:
    ids = {model.id for model in list_models("anthropic")}
    for required in (
        "claude-opus-4-1",
        "claude-opus-4-5",
        "claude-opus-4-6",
        "claude-sonnet-4-0",
        "claude-sonnet-4-5",
        "claude-sonnet-4-6",
        "claude-haiku-4-5",
        "claude-3-5-sonnet-20240620",
        "claude-3-haiku-20240307",
    ):
        assert get_model("anthropic", required).id in ids
    # Anthropic's invariants (priced cache writes, image input) hold for its models, not every catalog's.
    for model in list_models("anthropic"):
        assert model.max_tokens <= model.context_window
        assert model.cost.input > 0
        assert model.cost.output > model.cost.input
        assert model.cost.cache_read < model.cost.input < model.cost.cache_write
        assert model.compat is not None
        assert "image" in model.input
        if model.compat.get("adaptive_thinking"):
            assert model.reasoning
