"""The request builder, rule by rule (the goldens show whole requests)."""

from __future__ import annotations

from typing import Any

import pytest

from normalize import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    StreamOptions,
    SystemMessage,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from streamfns.kit import CompatError, prompt_cache_key
from streamfns.openai_completions.request import build_request, mistral_tool_call_id, openai_tool_call_id
from tests.adapters import OPENAI_COMPLETIONS as OC

pytestmark = pytest.mark.parallel

TOOL = Tool(name="lookup", description="Look something up", parameters={"type": "object", "properties": {}})


def payload(target: Any = None, messages: list[Message] | None = None, **options: Any) -> dict[str, Any]:
    context = Context(messages=messages or [UserMessage(content="hi")])
    return build_request(target or OC.model(), context, StreamOptions(**options)).payload


def history(call_id: str = "call_1", *, target: Any = None, thinking: ThinkingContent | None = None) -> list[Message]:
    used = target or OC.model()
    content: list[Any] = [*([thinking] if thinking else []), ToolCall(id=call_id, name="lookup", arguments={"q": 1})]
    return [
        UserMessage(content="go"),
        AssistantMessage(content=content, api=used.api, provider=used.provider, model=used.id, stop_reason="toolUse"),
        ToolResultMessage(tool_call_id=call_id, tool_name="lookup", content=[TextContent(text="found")]),
    ]


def test_the_url_and_the_stream_flags() -> None:
    request = build_request(
        OC.model(base_url="https://api.openai.com/v1/"), Context(messages=[UserMessage(content="x")])
    )
    assert request.url == "https://api.openai.com/v1/chat/completions"
    assert request.payload["stream"] is True
    assert request.payload["stream_options"] == {"include_usage": True}
    assert request.headers == {"accept": "text/event-stream", "content-type": "application/json"}


def test_a_missing_base_url_uses_the_provider_address_or_refuses() -> None:
    assert (
        build_request(OC.model(base_url="", provider="groq"), Context()).url
        == "https://api.groq.com/openai/v1/chat/completions"
    )
    with pytest.raises(ValueError, match="no base_url"):
        build_request(OC.model(base_url="", provider="acme"), Context())


def test_system_role_is_developer_only_for_reasoning_models_where_the_profile_says_so() -> None:
    context = Context(system_prompt="Rules.", messages=[UserMessage(content="x")])
    first = build_request(OC.model(reasoning=True), context).payload["messages"][0]
    assert first == {"role": "developer", "content": "Rules."}
    assert build_request(OC.model(), context).payload["messages"][0]["role"] == "system"
    deepseek = OC.model(
        base_url="https://api.deepseek.com", id="deepseek-reasoner", provider="deepseek", reasoning=True
    )
    assert build_request(deepseek, context).payload["messages"][0]["role"] == "system"


def test_max_tokens_field_per_profile_and_only_when_asked() -> None:
    assert "max_completion_tokens" not in payload()
    assert payload(max_tokens=100)["max_completion_tokens"] == 100
    deepseek = OC.model(base_url="https://api.deepseek.com", id="deepseek-chat", provider="deepseek")
    assert payload(deepseek, max_tokens=100)["max_tokens"] == 100


def test_mid_conversation_system_text_waits_for_the_tool_results() -> None:
    messages = [
        *history()[:2],
        SystemMessage(content="New rule: be brief.", tools_added=[TOOL]),
        history()[2],
        UserMessage(content="next"),
    ]
    sent = payload(messages=messages)
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["user", "assistant", "tool", "user", "user"]
    assert sent["messages"][3]["content"] == "<system_update>New rule: be brief.</system_update>"
    assert [t["function"]["name"] for t in sent["tools"]] == ["lookup"]


@pytest.mark.parametrize(
    ("provider", "base_url", "model_id"),
    [
        ("openai", "https://api.openai.com/v1", "gpt-4o"),
        ("deepseek", "https://api.deepseek.com", "deepseek-chat"),
        ("qwen", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "qwen-plus"),
        ("groq", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile"),
        ("openrouter", "https://openrouter.ai/api/v1", "openai/gpt-4o"),
        ("my-gateway", "https://gw.example/v1", "some-model"),
    ],
)
def test_no_empty_tools_list_for_servers_that_reject_it(provider: str, base_url: str, model_id: str) -> None:
    # OpenAI answers `tools: []` with 400 empty_array, DeepSeek and DashScope with "[] is too short".
    target = OC.model(base_url=base_url, id=model_id, provider=provider)
    assert "tools" not in payload(target, messages=history(target=target))
    assert "tools" not in payload(target)


def test_tools_empty_list_with_tool_history_for_anthropic_behind_a_proxy() -> None:
    # Anthropic needs the history's tool calls declared: OpenRouter's anthropic/* models by default,
    # a LiteLLM-style proxy when its model says so.
    claude = OC.model(base_url="https://openrouter.ai/api/v1", id="anthropic/claude-sonnet-4.5", provider="openrouter")
    assert payload(claude, messages=history(target=claude))["tools"] == []
    assert "tools" not in payload(claude)
    proxy = OC.model(
        base_url="https://litellm.example/v1",
        id="claude-sonnet",
        provider="litellm",
        compat={"empty_tools_with_history": True},
    )
    assert payload(proxy, messages=history(target=proxy))["tools"] == []
    opted_out = OC.model(
        base_url=claude.base_url, id=claude.id, provider="openrouter", compat={"empty_tools_with_history": False}
    )
    assert "tools" not in payload(opted_out, messages=history(target=opted_out))


def test_strict_tools_only_where_the_server_accepts_them() -> None:
    context = Context(tools=[TOOL], messages=[UserMessage(content="x")])
    strict = build_request(OC.model(compat={"strict_tools": True}), context).payload["tools"][0]["function"]
    assert strict["strict"] is True
    assert "strict" not in build_request(OC.model(), context).payload["tools"][0]["function"]
    with pytest.raises(CompatError, match="strict_tools"):
        build_request(
            OC.model(base_url="https://api.deepseek.com", provider="deepseek", compat={"strict_tools": True}), context
        )


def test_user_content_text_is_a_string_and_images_are_data_urls() -> None:
    blocks: list[Any] = [TextContent(text="a"), TextContent(text="  "), TextContent(text="b")]
    assert payload(messages=[UserMessage(content=blocks)])["messages"] == [{"role": "user", "content": "a\nb"}]
    image = ImageContent(data="AAAA", mime_type="image/jpeg")
    sent = payload(OC.model(input=["text", "image"]), messages=[UserMessage(content=[TextContent(text="see"), image])])
    assert sent["messages"][0]["content"] == [
        {"type": "text", "text": "see"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}},
    ]


def test_images_for_a_text_only_model_become_a_placeholder() -> None:
    image = ImageContent(data="AAAA", mime_type="image/png")
    sent = payload(OC.model(input=["text"]), messages=[UserMessage(content=[image])])
    assert sent["messages"] == [{"role": "user", "content": "(image omitted: model does not support images)"}]


def test_blank_turns_are_dropped() -> None:
    target = OC.model()
    empty = AssistantMessage(
        content=[TextContent(text="  ")], api=target.api, provider=target.provider, model=target.id
    )
    sent = payload(messages=[UserMessage(content="  "), empty, UserMessage(content="real")])
    assert sent["messages"] == [{"role": "user", "content": "real"}]


def test_tool_results_with_images_are_batched_into_one_user_message_after_all_results() -> None:
    target = OC.model(input=["text", "image"])
    calls: list[Any] = [ToolCall(id="a", name="lookup"), ToolCall(id="b", name="lookup")]
    image = ImageContent(data="AAAA", mime_type="image/png")
    messages: list[Message] = [
        UserMessage(content="go"),
        AssistantMessage(content=calls, api=target.api, provider=target.provider, model=target.id),
        ToolResultMessage(tool_call_id="a", tool_name="lookup", content=[image]),
        ToolResultMessage(tool_call_id="b", tool_name="lookup", content=[TextContent(text="text"), image]),
    ]
    sent = payload(target, messages=messages)["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user"]
    assert sent[2]["content"] == "(see attached image)"
    assert sent[3]["content"] == "text"
    assert sent[4]["content"][0] == {"type": "text", "text": "Attached image(s) from tool result:"}
    assert len(sent[4]["content"]) == 3


def test_an_empty_tool_result_says_so_and_mistral_gets_names_and_an_assistant_turn() -> None:
    messages = [*history(), UserMessage(content="and?")]
    messages[2] = ToolResultMessage(tool_call_id="call_1", tool_name="lookup", content=[])
    sent = payload(messages=messages)["messages"]
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "(no tool output)"}
    # A gateway speaking Mistral's dialect of chat completions (Mistral itself: mistral-conversations).
    mistral = OC.model(
        base_url="https://gateway.example/v1", id="mistral-small-latest", provider="gw", compat={"profile": "mistral"}
    )
    sent = payload(mistral, messages=[*history(target=mistral), UserMessage(content="and?")])["messages"]
    assert sent[1]["content"] == ""  # Mistral refuses a null content
    assert sent[2]["name"] == "lookup"
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[3]["content"] == "I have processed the tool results."


def test_own_thinking_goes_back_through_its_field_and_foreign_thinking_becomes_text() -> None:
    own = ThinkingContent(thinking="mine", thinking_signature="reasoning_content")
    sent = payload(messages=history(thinking=own))["messages"][1]
    assert sent["reasoning_content"] == "mine"
    assert sent["content"] is None
    foreign = AssistantMessage(
        content=[ThinkingContent(thinking="theirs", thinking_signature="sig"), TextContent(text="answer")],
        api="anthropic-messages",
        provider="anthropic",
        model="claude",
    )
    sent = payload(messages=[UserMessage(content="q"), foreign, UserMessage(content="q2")])["messages"][1]
    # The foreign reasoning (now text) and the answer stay separate paragraphs, not glued words.
    assert sent == {"role": "assistant", "content": "theirs\n\nanswer"}


def test_thinking_without_a_field_to_go_back_through_is_not_replayed() -> None:
    for signature in (None, "reasoning_details", "something-else"):
        block = ThinkingContent(thinking="t", thinking_signature=signature)
        sent = payload(messages=history(thinking=block))["messages"][1]
        assert set(sent) == {"role", "content", "tool_calls"}


def test_thinking_as_text_and_no_replay() -> None:
    own = ThinkingContent(thinking="mine", thinking_signature="reasoning")
    as_text = OC.model(compat={"thinking_as_text": True})
    sent = payload(as_text, messages=history(target=as_text, thinking=own))["messages"][1]
    assert sent["content"] == "mine"
    assert "reasoning" not in sent
    quiet = OC.model(compat={"replay_thinking": False})
    sent = payload(quiet, messages=history(target=quiet, thinking=own))["messages"][1]
    assert "reasoning" not in sent


def test_deepseek_reasoning_models_always_carry_reasoning_content() -> None:
    deepseek = OC.model(
        base_url="https://api.deepseek.com", id="deepseek-reasoner", provider="deepseek", reasoning=True
    )
    sent = payload(deepseek, messages=history(target=deepseek))["messages"][1]
    assert sent["reasoning_content"] == ""
    chat = OC.model(base_url="https://api.deepseek.com", id="deepseek-chat", provider="deepseek")
    assert "reasoning_content" not in payload(chat, messages=history(target=chat))["messages"][1]


def test_tool_call_ids() -> None:
    assert openai_tool_call_id("call_abc|fc_123") == "call_abc_fc_123"
    long = openai_tool_call_id("x" * 100)
    assert len(long) == 40
    assert long != openai_tool_call_id("x" * 99)
    assert mistral_tool_call_id("abcdefghi") == "abcdefghi"
    assert len(mistral_tool_call_id("call_0123456789")) == 9
    assert mistral_tool_call_id("call_0123456789").isalnum()


def test_session_id_becomes_a_prompt_cache_key_where_the_profile_takes_one() -> None:
    assert payload(session_id="s1")["prompt_cache_key"] == "s1"
    assert "prompt_cache_key" not in payload(session_id="s1", cache_retention="none")
    long_key = payload(session_id="s" * 200)["prompt_cache_key"]
    assert len(long_key) == 64
    assert long_key == prompt_cache_key("s" * 200)  # the kit's rule, shared with the Responses adapter
    assert payload(session_id="s", cache_retention="long")["prompt_cache_retention"] == "24h"
    groq = OC.model(base_url="https://api.groq.com/openai/v1", provider="groq")
    assert "prompt_cache_key" not in payload(groq, session_id="s1")


def test_cache_control_markers_for_anthropic_models_on_openrouter() -> None:
    claude = OC.model(base_url="https://openrouter.ai/api/v1", id="anthropic/claude-haiku-4.5", provider="openrouter")
    context = Context(system_prompt="sys", messages=[UserMessage(content="a"), UserMessage(content="b")])
    sent = build_request(claude, context, StreamOptions(cache_retention="long")).payload["messages"]
    marker = {"type": "ephemeral", "ttl": "1h"}
    assert sent[0]["content"] == [{"type": "text", "text": "sys", "cache_control": marker}]
    assert sent[1]["content"] == "a"
    assert sent[2]["content"] == [{"type": "text", "text": "b", "cache_control": marker}]
    other = OC.model(base_url="https://openrouter.ai/api/v1", id="openai/gpt-4o-mini", provider="openrouter")
    assert build_request(other, context).payload["messages"][0]["content"] == "sys"
    assert (
        build_request(claude, context, StreamOptions(cache_retention="none")).payload["messages"][0]["content"] == "sys"
    )


THINKING: list[tuple[str, str | None, dict[str, Any]]] = [
    ("openai", "high", {"reasoning_effort": "high"}),
    ("openai", None, {}),
    ("openai", "xhigh", {"reasoning_effort": "high"}),
    ("openai", "minimal", {"reasoning_effort": "low"}),
    ("openrouter", "medium", {"reasoning": {"effort": "medium"}}),
    ("openrouter", None, {"reasoning": {"effort": "none"}}),
    ("deepseek", "low", {"thinking": {"type": "enabled"}}),
    ("deepseek", "off", {"thinking": {"type": "disabled"}}),
    ("zai", "high", {"thinking": {"type": "enabled", "clear_thinking": False}}),
    ("zai", None, {"thinking": {"type": "disabled"}}),
    ("qwen", "high", {"enable_thinking": True}),
    ("qwen", None, {"enable_thinking": False}),
    ("qwen-chat-template", "low", {"chat_template_kwargs": {"enable_thinking": True, "preserve_thinking": True}}),
    ("chat-template", None, {"chat_template_kwargs": {"enable_thinking": False}}),
    ("together", "low", {"reasoning": {"enabled": True}}),
    ("together", None, {"reasoning": {"enabled": False}}),
    ("string", "medium", {"thinking": "medium"}),
    ("string", None, {"thinking": "none"}),
    ("none", "high", {}),
]
_THINKING_KEYS = ("reasoning_effort", "reasoning", "thinking", "enable_thinking", "chat_template_kwargs")


@pytest.mark.parametrize(("fmt", "level", "expected"), THINKING)
def test_thinking_formats(fmt: str, level: str | None, expected: dict[str, Any]) -> None:
    compat: dict[str, Any] = {"thinking_format": fmt, "reasoning_effort": fmt == "openai"}
    sent = payload(OC.model(reasoning=True, compat=compat), reasoning=level)
    assert {key: sent[key] for key in _THINKING_KEYS if key in sent} == expected


def test_no_thinking_parameters_for_a_model_that_does_not_reason() -> None:
    sent = payload(OC.model(compat={"thinking_format": "deepseek"}), reasoning="high")
    assert not any(key in sent for key in _THINKING_KEYS)


def test_a_model_that_cannot_stop_thinking_gets_no_off_switch() -> None:
    always = OC.model(reasoning=True, compat={"thinking_format": "deepseek"}, thinking_level_map={"off": None})
    assert "thinking" not in payload(always)
    mapped = OC.model(reasoning=True, thinking_level_map={"off": "none", "high": "default"})
    assert payload(mapped)["reasoning_effort"] == "none"
    assert payload(mapped, reasoning="high")["reasoning_effort"] == "default"


def test_a_thinking_budget_field_fits_under_the_output_cap() -> None:
    compat = {"thinking_format": "chat-template", "thinking_budget_field": "thinking_token_budget"}
    vllm = OC.model(reasoning=True, compat=compat)  # max_tokens 4096
    assert payload(vllm, reasoning="medium")["thinking_token_budget"] == 4096 - 1024
    assert payload(vllm, reasoning="medium", max_tokens=20_000)["thinking_token_budget"] == 8192
    budgets = {"high": 5000}
    assert payload(vllm, reasoning="max", max_tokens=20_000, thinking_budgets=budgets)["thinking_token_budget"] == 5000
    assert "thinking_token_budget" not in payload(vllm)


def test_extra_body_is_merged_last_and_copied() -> None:
    extra = {"provider": {"order": ["groq"]}, "top_p": 0.9, "stream_options": {"include_usage": False}}
    target = OC.model(compat={"extra_body": extra})
    sent = payload(target)
    assert sent["provider"] == {"order": ["groq"]}
    assert sent["stream_options"] == {"include_usage": False}
    sent["provider"]["order"].append("mutated")
    assert extra["provider"] == {"order": ["groq"]}


def test_the_payload_is_not_shared_with_the_transcript() -> None:
    call = ToolCall(id="c", name="lookup", arguments={"nested": {"k": [1]}})
    target = OC.model()
    messages: list[Message] = [
        UserMessage(content="q"),
        AssistantMessage(content=[call], api=target.api, provider=target.provider, model=target.id),
        ToolResultMessage(tool_call_id="c", tool_name="lookup", content=[TextContent(text="r")]),
    ]
    tool = Tool(name="t", parameters={"type": "object", "properties": {"a": {"type": "string"}}})
    sent = build_request(target, Context(messages=messages, tools=[tool]), StreamOptions()).payload
    sent["tools"][0]["function"]["parameters"]["properties"]["a"]["type"] = "number"
    assert tool.parameters["properties"]["a"]["type"] == "string"


def test_lone_surrogates_are_scrubbed_from_everything_sent() -> None:
    context = Context(system_prompt="sys\ud800", messages=[UserMessage(content="hi\udc00 there")])
    sent = build_request(OC.model(), context, StreamOptions()).payload
    assert sent["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi there"}]
