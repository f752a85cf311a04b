"""The ``/v2/chat`` request: messages in Cohere's v2 form, tools, thinking, options, the URL and the key."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

import streamfns
from normalize import (
    TOOL_IMAGE_OMITTED,
    AssistantMessage,
    Context,
    ImageContent,
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
from streamfns.cohere import TOOL_PLAN, build_request, cohere_tool_call_id
from streamfns.kit import MIN_ANSWER_TOKENS, CompatError
from tests.cohere._cohere import COHERE, body, content_delta, content_end, content_start, message_end, message_start

pytestmark = pytest.mark.parallel  # clock-blind: pure functions and in-process transports

WEATHER = Tool(name="weather", description="Weather in a city.", parameters={"type": "object", "properties": {}})
MODEL = COHERE.model()


def _reply(*blocks: Any, model: str = "command-a-03-2025", api: str = "cohere-chat") -> AssistantMessage:
    return AssistantMessage(
        content=list(blocks),
        api=api,
        provider="cohere" if api == "cohere-chat" else "anthropic",
        model=model,
        usage=Usage(),
        stop_reason="toolUse" if any(isinstance(b, ToolCall) for b in blocks) else "stop",
    )


def _payload(context: Context, **options: Any) -> dict[str, Any]:
    return build_request(
        MODEL if "model" not in options else options.pop("model"), context, StreamOptions(**options)
    ).payload


def test_a_minimal_request() -> None:
    request = build_request(MODEL, Context(messages=[UserMessage(content="Hi")]), StreamOptions())
    assert request.url == "https://api.cohere.com/v2/chat"
    assert request.payload == {
        "model": "command-a-03-2025",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
    }
    assert request.headers["accept"] == "text/event-stream"


@pytest.mark.parametrize(
    ("base_url", "url"),
    [
        ("", "https://api.cohere.com/v2/chat"),
        ("https://api.cohere.com/", "https://api.cohere.com/v2/chat"),
        ("https://api.cohere.com/v2", "https://api.cohere.com/v2/chat"),
        ("http://gateway.local:8080/cohere", "http://gateway.local:8080/cohere/v2/chat"),
    ],
)
def test_where_the_request_goes(base_url: str, url: str) -> None:
    model = COHERE.model(base_url=base_url)
    assert build_request(model, Context(messages=[UserMessage(content="Hi")]), StreamOptions()).url == url


def test_system_prompt_first_and_later_system_messages_as_updates_after_the_tool_results() -> None:
    call = ToolCall(id="weather_abc", name="weather", arguments={"city": "Paris"})
    context = Context(
        system_prompt="Be brief.",
        tools=[WEATHER],
        messages=[
            UserMessage(content="Weather?"),
            _reply(call),
            SystemMessage(content="Answer in French."),
            ToolResultMessage(tool_call_id="weather_abc", tool_name="weather", content=[TextContent(text="sunny")]),
            UserMessage(content="Thanks"),
        ],
    )
    messages = _payload(context)["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user", "user"]
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": "weather_abc",
        "content": [{"type": "text", "text": "sunny"}],
    }
    assert messages[4] == {"role": "user", "content": "<system_update>Answer in French.</system_update>"}
    assert messages[5] == {"role": "user", "content": "Thanks"}


def test_a_tool_plan_goes_back_as_tool_plan_beside_its_calls() -> None:
    reply = _reply(
        ThinkingContent(thinking="I will look up the weather.", thinking_signature=TOOL_PLAN),
        ToolCall(id="weather_abc", name="weather", arguments={"city": "Paris"}),
    )
    context = Context(messages=[UserMessage(content="Weather?"), reply])
    assert _payload(context)["messages"][1] == {
        "role": "assistant",
        "tool_plan": "I will look up the weather.",
        "tool_calls": [
            {"id": "weather_abc", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}
        ],
    }


def test_text_beside_calls_joins_the_plan_and_reasoning_stays_thinking_content() -> None:
    reply = _reply(
        ThinkingContent(thinking="The user wants weather."),
        TextContent(text="Checking now."),
        ToolCall(id="weather_abc", name="weather", arguments={}),
    )
    message = _payload(Context(messages=[UserMessage(content="Weather?"), reply]))["messages"][1]
    assert message["tool_plan"] == "Checking now."
    assert message["content"] == [{"type": "thinking", "thinking": "The user wants weather."}]
    assert message["tool_calls"][0]["function"]["arguments"] == "{}"


def test_a_turn_without_calls_is_text_and_thinking_in_order_and_a_lone_plan_is_text() -> None:
    reply = _reply(
        ThinkingContent(thinking="hmm"),
        TextContent(text="Hello."),
        ThinkingContent(thinking="A plan without calls.", thinking_signature=TOOL_PLAN),
        ThinkingContent(thinking="   "),
        ThinkingContent(thinking="secret", thinking_signature="opaque", redacted=True),
    )
    message = _payload(Context(messages=[UserMessage(content="Hi"), reply]))["messages"][1]
    assert message == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "text", "text": "Hello."},
            {"type": "text", "text": "A plan without calls."},
        ],
    }


def test_another_models_thinking_arrives_as_text_and_beside_calls_becomes_the_plan() -> None:
    reply = _reply(
        ThinkingContent(thinking="Claude thought.", thinking_signature="sig"),
        ToolCall(id="toolu_01", name="weather", arguments={"city": "Oslo"}),
        model="claude-sonnet-4-5",
        api="anthropic-messages",
    )
    result = ToolResultMessage(tool_call_id="toolu_01", tool_name="weather", content=[TextContent(text="cold")])
    messages = _payload(Context(messages=[UserMessage(content="Weather?"), reply, result]))["messages"]
    assert messages[1]["tool_plan"] == "Claude thought."
    assert "content" not in messages[1]
    assert messages[1]["tool_calls"][0]["id"] == "toolu_01"  # an id in the common form goes back as it came
    assert messages[2]["tool_call_id"] == "toolu_01"


_SAFE_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def test_foreign_tool_call_ids_are_normalized_alike_for_the_call_and_its_result() -> None:
    long_id = "gw-" + "x" * 320
    ids = ["call_abc|fc_0123456789", "call_abc_fc_0123456789", long_id, long_id + "y", "weather_yxz1xx2m07cn"]
    reply = _reply(
        *(ToolCall(id=call_id, name="weather", arguments={"n": n}) for n, call_id in enumerate(ids)),
        model="gpt-5",
        api="openai-responses",
    )
    results = [
        ToolResultMessage(tool_call_id=call_id, tool_name="weather", content=[TextContent(text=f"r{n}")])
        for n, call_id in enumerate(ids)
    ]
    context = Context(messages=[UserMessage(content="Weather?"), reply, *results])
    messages = _payload(context)["messages"]
    sent = [call["id"] for call in messages[1]["tool_calls"]]
    assert all(_SAFE_ID.fullmatch(call_id) for call_id in sent), sent
    assert len(set(sent)) == len(sent)  # collision-free: ids that map alike are kept apart
    assert [message["tool_call_id"] for message in messages[2:]] == sent  # each result answers its own call
    assert [json.loads(call["function"]["arguments"])["n"] for call in messages[1]["tool_calls"]] == [0, 1, 2, 3, 4]
    assert sent[1] == "call_abc_fc_0123456789"  # ids Cohere takes as they are go back unchanged
    assert sent[4] == "weather_yxz1xx2m07cn"
    assert _payload(context)["messages"] == messages  # the same transcript always maps to the same ids


def test_an_odd_id_on_cohere_s_own_turn_is_sent_in_the_same_form_for_call_and_result() -> None:
    odd = "call|" + "z" * 100
    reply = _reply(ToolCall(id=odd, name="weather", arguments={}))
    result = ToolResultMessage(tool_call_id=odd, tool_name="weather", content=[TextContent(text="ok")])
    messages = _payload(Context(messages=[UserMessage(content="Weather?"), reply, result]))["messages"]
    call_id = messages[1]["tool_calls"][0]["id"]
    assert _SAFE_ID.fullmatch(call_id)
    assert messages[2]["tool_call_id"] == call_id


@pytest.mark.parametrize(
    "call_id", ["weather_yxz1xx2m07cn", "a", "x" * 64, "x" * 65, "call|fc_1", "é", "", "a b", "x" * 500]
)
def test_cohere_tool_call_id(call_id: str) -> None:
    mapped = cohere_tool_call_id(call_id)
    assert _SAFE_ID.fullmatch(mapped)
    assert cohere_tool_call_id(mapped) == mapped  # its own output maps to itself
    if _SAFE_ID.fullmatch(call_id):
        assert mapped == call_id
    else:
        assert mapped != cohere_tool_call_id(call_id + "!")  # the digest keeps near ids apart


def test_an_empty_assistant_turn_is_not_sent() -> None:
    context = Context(messages=[UserMessage(content="Hi"), _reply(TextContent(text="  ")), UserMessage(content="?")])
    assert [m["role"] for m in _payload(context)["messages"]] == ["user", "user"]


def test_tool_results_errors_images_and_empty_output() -> None:
    calls = [ToolCall(id=f"c{i}", name="weather", arguments={}) for i in range(3)]
    context = Context(
        messages=[
            UserMessage(content="Weather?"),
            _reply(*calls),
            ToolResultMessage(
                tool_call_id="c0", tool_name="weather", content=[TextContent(text="boom")], is_error=True
            ),
            ToolResultMessage(
                tool_call_id="c1",
                tool_name="weather",
                content=[TextContent(text="a map:"), ImageContent(data="aGk=", mime_type="image/png")],
            ),
            ToolResultMessage(tool_call_id="c2", tool_name="weather", content=[]),
        ]
    )
    tools = _payload(context)["messages"][2:]
    assert tools[0]["content"] == [{"type": "document", "document": {"data": {"error": "boom"}}}]
    assert tools[1]["content"] == [{"type": "text", "text": f"a map:\n{TOOL_IMAGE_OMITTED}"}]
    assert tools[2]["content"] == [{"type": "text", "text": "(no tool output)"}]


def test_user_images_go_as_data_uris_to_a_model_that_takes_images() -> None:
    image = ImageContent(data="aGk=", mime_type="image/png")
    context = Context(messages=[UserMessage(content=[TextContent(text="What is it?"), image])])
    seeing = COHERE.model(input=["text", "image"])
    assert _payload(context, model=seeing)["messages"][0]["content"] == [
        {"type": "text", "text": "What is it?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
    ]
    # A text-only model gets the image replaced by transcript_for's note.
    text_only = _payload(context)["messages"][0]["content"]
    assert all(part["type"] == "text" for part in text_only)


def test_tools_options_and_compat_flags() -> None:
    model = COHERE.model(compat={"stop_sequences": ["END"], "strict_tools": True, "safety_mode": "STRICT"})
    with_tools = Context(messages=[UserMessage(content="Hi")], tools=[WEATHER])
    payload = _payload(with_tools, model=model, max_tokens=300, temperature=0.3)
    assert payload["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Weather in a city.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    assert (payload["max_tokens"], payload["temperature"], payload["stop_sequences"]) == (300, 0.3, ["END"])
    assert payload["strict_tools"] is True
    assert "safety_mode" not in payload  # Cohere refuses a safety mode beside tools
    plain = _payload(Context(messages=[UserMessage(content="Hi")]), model=model)
    assert plain["safety_mode"] == "STRICT"
    assert "strict_tools" not in plain


def test_a_mistyped_compat_flag_is_a_compat_error() -> None:
    with pytest.raises(CompatError):
        build_request(COHERE.model(compat={"stop_sequence": ["END"]}), Context(messages=[]), StreamOptions())


@pytest.mark.parametrize(
    ("options", "thinking"),
    [
        ({"reasoning": "off"}, {"type": "disabled"}),
        ({"reasoning": "low"}, {"type": "enabled", "token_budget": 2048}),
        ({"reasoning": "high"}, {"type": "enabled", "token_budget": 16384}),
        ({"reasoning": "medium", "thinking_budgets": {"medium": 3000}}, {"type": "enabled", "token_budget": 3000}),
        ({"reasoning": "high", "max_tokens": 5000}, {"type": "enabled", "token_budget": 5000 - MIN_ANSWER_TOKENS}),
        # A cap under twice the answer's room is shared half and half, never a one-token budget.
        ({"reasoning": "high", "max_tokens": 500}, {"type": "enabled", "token_budget": 250}),
        ({"reasoning": "high", "max_tokens": 2 * MIN_ANSWER_TOKENS}, {"type": "enabled", "token_budget": 1024}),
        ({"reasoning": "high", "max_tokens": 2 * MIN_ANSWER_TOKENS + 10}, {"type": "enabled", "token_budget": 1034}),
        ({"reasoning": "minimal", "max_tokens": 1}, {"type": "enabled", "token_budget": 1}),
        ({}, None),
    ],
)
def test_thinking_for_a_reasoning_model(options: dict[str, Any], thinking: dict[str, Any] | None) -> None:
    model = COHERE.model(id="command-a-reasoning-08-2025", reasoning=True, max_tokens=32000)
    payload = _payload(Context(messages=[UserMessage(content="Hi")]), model=model, **options)
    assert payload.get("thinking") == thinking


@pytest.mark.parametrize("cap", [1, 2, 3, 500, 1023, 1024, 1025, 2047, 2048, 2049, 3000, 17408, 32000])
def test_the_thinking_budget_is_positive_and_leaves_room_for_an_answer(cap: int) -> None:
    model = COHERE.model(id="command-a-reasoning-08-2025", reasoning=True, max_tokens=cap)
    budget = _payload(Context(messages=[UserMessage(content="Hi")]), model=model, reasoning="high")["thinking"][
        "token_budget"
    ]
    assert 1 <= budget <= 16384
    assert budget >= min(cap // 2, MIN_ANSWER_TOKENS)  # a real budget, not thinking in name only
    assert cap - budget >= min(MIN_ANSWER_TOKENS, cap // 2)  # the answer keeps its room, or half a small cap


def test_no_thinking_field_for_a_model_that_does_not_reason() -> None:
    assert "thinking" not in _payload(Context(messages=[UserMessage(content="Hi")]), reasoning="high")


async def test_the_key_is_read_from_cohere_api_key_then_co_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx.Request] = []
    reply = body(message_start(), content_start(0), content_delta(0, "Hi"), content_end(0), message_end())

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=reply)

    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.setenv("CO_API_KEY", "co-key-from-the-sdk-name")
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        options = StreamOptions(http_client=client, max_retries=0)
        message = await streamfns.stream(MODEL, Context(messages=[UserMessage(content="Hi")]), options).result()
        assert message.stop_reason == "stop", message.error_message
        monkeypatch.setenv("COHERE_API_KEY", "cohere-key-first")
        await streamfns.stream(MODEL, Context(messages=[UserMessage(content="Hi")]), options).result()
    assert [r.headers["authorization"] for r in seen] == ["Bearer co-key-from-the-sdk-name", "Bearer cohere-key-first"]
    assert json.loads(seen[0].content)["stream"] is True
    assert str(seen[0].url) == "https://api.cohere.com/v2/chat"


async def test_no_key_ends_the_stream_auth_naming_both_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("CO_API_KEY", raising=False)
    message = await streamfns.stream(MODEL, Context(messages=[UserMessage(content="Hi")])).result()
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert "COHERE_API_KEY" in (message.error_message or "")
    assert "CO_API_KEY" in (message.error_message or "")
