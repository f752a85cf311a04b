"""The Mistral request (pure): what each part of a transcript becomes, thinking replayed as thinking chunks,
tool-call ids mapped to nine alphanumerics consistently, ``prefix`` on a trailing assistant turn, the
bridge after tool results, the options of ``Model.compat`` and the thinking level; the handoff of an
Anthropic transcript against a reviewed golden."""

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
    UserMessage,
)
from streamfns import get_model
from streamfns.kit import CompatError
from streamfns.mistral import api_key_for, build_request, mistral_tool_call_id
from tests.mistral._mistral import MISTRAL
from tests.openai_completions.test_openai_completions_goldens import anthropic_transcript

pytestmark = pytest.mark.parallel

GOLDENS = Path(__file__).parent / "goldens"
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
LOOKUP = Tool(name="lookup", description="Look it up", parameters={"type": "object", "properties": {}})


def payload(model: Model | None = None, *messages: Message, **options: Any) -> dict[str, Any]:
    used = model or MISTRAL.model()
    context = Context(messages=list(messages) or [UserMessage(content="hi")])
    return build_request(used, context, StreamOptions(**options)).payload


def own(content: list[Any], stop: str = "toolUse", model: Model | None = None) -> AssistantMessage:
    used = model or MISTRAL.model()
    return AssistantMessage(
        content=content,
        api=used.api,
        provider=used.provider,
        model=used.id,
        stop_reason=stop,  # pyright: ignore[reportArgumentType]
    )


def test_the_request_goes_to_chat_completions_with_stream_on() -> None:
    request = build_request(MISTRAL.model(), Context(messages=[UserMessage(content="hi")]), StreamOptions())
    assert request.url == "https://api.mistral.ai/v1/chat/completions"
    assert request.headers == {"accept": "text/event-stream"}
    assert request.payload == {
        "model": "mistral-small-latest",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    }
    bare = Model(id="m", api="mistral-conversations", provider="mistral")
    assert build_request(bare, Context(messages=[UserMessage(content="hi")])).url == (
        "https://api.mistral.ai/v1/chat/completions"
    )


def test_system_prompt_user_images_and_sampling() -> None:
    context = Context(
        system_prompt="Be brief.",
        messages=[
            UserMessage(content=[TextContent(text="What is this?"), ImageContent(data=PIXEL, mime_type="image/png")])
        ],
    )
    sent = build_request(MISTRAL.model(), context, StreamOptions(max_tokens=100, temperature=0.2)).payload
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": f"data:image/png;base64,{PIXEL}"},
            ],
        },
    ]
    assert (sent["max_tokens"], sent["temperature"]) == (100, 0.2)


def test_own_thinking_goes_back_as_a_thinking_chunk_with_its_signature() -> None:
    turn = own(
        [
            ThinkingContent(thinking="Let me think.", thinking_signature="sig-1"),
            TextContent(text="Answer."),
            ThinkingContent(thinking="More."),
            TextContent(text="Done."),
        ],
        stop="stop",
    )
    sent = payload(None, UserMessage(content="q"), turn, UserMessage(content="q2"))["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "Let me think."}], "signature": "sig-1"},
            {"type": "text", "text": "Answer."},
            {"type": "thinking", "thinking": [{"type": "text", "text": "More."}]},
            {"type": "text", "text": "Done."},
        ],
    }


def test_text_alone_is_a_string_and_foreign_thinking_is_text() -> None:
    foreign = AssistantMessage(
        content=[ThinkingContent(thinking="theirs", thinking_signature="sig"), TextContent(text="answer")],
        api="anthropic-messages",
        provider="anthropic",
        model="claude",
        stop_reason="stop",
    )
    sent = payload(None, UserMessage(content="q"), foreign, UserMessage(content="q2"))["messages"]
    assert sent[1] == {"role": "assistant", "content": "theirs\n\nanswer"}


def test_a_trailing_assistant_turn_is_a_prefix_to_continue() -> None:
    sent = payload(None, UserMessage(content="Write a haiku."), own([TextContent(text="Autumn")], stop="stop"))
    assert sent["messages"][-1] == {"role": "assistant", "content": "Autumn", "prefix": True}
    assert "prefix" not in payload(None, UserMessage(content="q"))["messages"][-1]


def test_tool_calls_results_and_the_bridge_before_a_user_turn() -> None:
    turn = own([TextContent(text="Looking."), ToolCall(id="abcDEF123", name="lookup", arguments={"q": "x"})])
    result = ToolResultMessage(tool_call_id="abcDEF123", tool_name="lookup", content=[TextContent(text="found")])
    empty = ToolResultMessage(tool_call_id="abcDEF123", tool_name="lookup", content=[])
    sent = payload(None, UserMessage(content="q"), turn, result, UserMessage(content="thanks"))["messages"]
    assert sent[1:] == [
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {"id": "abcDEF123", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "abcDEF123", "name": "lookup", "content": "found"},
        # Mistral refuses a user turn right after a tool result.
        {"role": "assistant", "content": "I have processed the tool results."},
        {"role": "user", "content": "thanks"},
    ]
    bare_call = own([ToolCall(id="abcDEF123", name="lookup", arguments={})])
    sent = payload(None, UserMessage(content="q"), bare_call, empty)["messages"]
    assert sent[1]["content"] == ""  # not null: Mistral refuses a null content beside tool calls
    assert sent[2]["content"] == "(no tool output)"
    assert sent[-1]["role"] == "tool"  # a transcript ending with results needs no bridge


def test_tool_result_images_travel_in_the_tool_message() -> None:
    turn = own([ToolCall(id="abcDEF123", name="shot", arguments={})])
    result = ToolResultMessage(
        tool_call_id="abcDEF123",
        tool_name="shot",
        content=[TextContent(text="here"), ImageContent(data=PIXEL, mime_type="image/png")],
    )
    sent = payload(None, UserMessage(content="q"), turn, result)["messages"][2]
    assert sent["content"] == [
        {"type": "text", "text": "here"},
        {"type": "image_url", "image_url": f"data:image/png;base64,{PIXEL}"},
    ]


def test_a_mid_conversation_system_message_becomes_a_user_update_after_the_results() -> None:
    turn = own([ToolCall(id="abcDEF123", name="lookup", arguments={})])
    result = ToolResultMessage(tool_call_id="abcDEF123", tool_name="lookup", content=[TextContent(text="r")])
    update = SystemMessage(content="Answer in French.")
    sent = payload(None, UserMessage(content="q"), turn, update, result)["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[-1]["content"] == "<system_update>Answer in French.</system_update>"


def test_foreign_tool_call_ids_become_nine_alphanumerics_consistently() -> None:
    def transcript() -> list[Message]:
        foreign = AssistantMessage(
            content=[
                ToolCall(id="toolu_01A09q90qw90lq917835lq9", name="lookup", arguments={"n": 1}),
                ToolCall(id="call|item/with:odd", name="lookup", arguments={"n": 2}),
            ],
            api="anthropic-messages",
            provider="anthropic",
            model="claude",
            stop_reason="toolUse",
        )
        results = [
            ToolResultMessage(tool_call_id=call_id, tool_name="lookup", content=[TextContent(text=str(n))])
            for n, call_id in enumerate(["call|item/with:odd", "toolu_01A09q90qw90lq917835lq9"])
        ]
        return [UserMessage(content="q"), foreign, *results]

    sent = payload(None, *transcript())["messages"]
    ids = [call["id"] for call in sent[1]["tool_calls"]]
    assert all(len(i) == 9 and i.isalnum() for i in ids)
    assert len(set(ids)) == 2
    # Each result carries its own call's id (the results came in the other order).
    assert [m["tool_call_id"] for m in sent[2:]] == [ids[1], ids[0]]
    assert [call["id"] for call in payload(None, *transcript())["messages"][1]["tool_calls"]] == ids  # deterministic


def test_ids_this_model_generated_are_made_valid_too() -> None:
    # A call id the builder derived for a server that sent none, or de-duplicated (``_2``), is not nine
    # alphanumerics: the call and its result get the same valid one.
    turn = own([ToolCall(id="call_gen_0123abcd4567", name="lookup", arguments={})])
    result = ToolResultMessage(tool_call_id="call_gen_0123abcd4567", tool_name="lookup", content=[])
    sent = payload(None, UserMessage(content="q"), turn, result)["messages"]
    mapped = mistral_tool_call_id("call_gen_0123abcd4567")
    assert (sent[1]["tool_calls"][0]["id"], sent[2]["tool_call_id"]) == (mapped, mapped)
    assert len(mapped) == 9
    assert mapped.isalnum()
    assert mistral_tool_call_id("abcDEF123") == "abcDEF123"


def test_ids_that_differ_only_in_punctuation_stay_apart() -> None:
    # Stripped of what Mistral refuses, both ids read "abcd12345": each must keep an id of its own, its
    # result answering it, and a third id that already has Mistral's form keeps itself.
    def transcript() -> list[Message]:
        turn = own(
            [
                ToolCall(id="abcd_12345", name="f", arguments={}),
                ToolCall(id="abcd-12345", name="g", arguments={}),
                ToolCall(id="abcd12345", name="h", arguments={}),
            ]
        )
        results = [
            ToolResultMessage(tool_call_id=call_id, tool_name=name, content=[TextContent(text=name.upper())])
            for call_id, name in (("abcd-12345", "g"), ("abcd12345", "h"), ("abcd_12345", "f"))
        ]
        return [UserMessage(content="q"), turn, *results]

    sent = payload(None, *transcript())["messages"]
    ids = {call["function"]["name"]: call["id"] for call in sent[1]["tool_calls"]}
    assert len(set(ids.values())) == 3
    assert all(len(i) == 9 and i.isalnum() for i in ids.values())
    assert ids["h"] == "abcd12345"
    assert {m["content"]: m["tool_call_id"] for m in sent[2:]} == {"G": ids["g"], "H": ids["h"], "F": ids["f"]}
    again = payload(None, *transcript())["messages"][1]["tool_calls"]
    assert {call["function"]["name"]: call["id"] for call in again} == ids  # deterministic


def test_a_failed_tool_result_says_so_in_its_text() -> None:
    # Mistral's tool messages have no error flag: a failure must not read as a success.
    turn = own(
        [ToolCall(id="abcDEF123", name="lookup", arguments={}), ToolCall(id="abcDEF124", name="shot", arguments={})]
    )
    failed = ToolResultMessage(
        tool_call_id="abcDEF123", tool_name="lookup", content=[TextContent(text="not found")], is_error=True
    )
    failed_image = ToolResultMessage(
        tool_call_id="abcDEF124",
        tool_name="shot",
        content=[ImageContent(data=PIXEL, mime_type="image/png")],
        is_error=True,
    )
    sent = payload(None, UserMessage(content="q"), turn, failed, failed_image)["messages"]
    assert sent[2]["content"] == "[tool error] not found"
    assert sent[3]["content"] == [
        {"type": "text", "text": "[tool error]"},
        {"type": "image_url", "image_url": f"data:image/png;base64,{PIXEL}"},
    ]
    empty = ToolResultMessage(tool_call_id="abcDEF123", tool_name="lookup", content=[], is_error=True)
    bare = own([ToolCall(id="abcDEF123", name="lookup", arguments={})])
    assert (
        payload(None, UserMessage(content="q"), bare, empty)["messages"][2]["content"]
        == "[tool error] (no tool output)"
    )
    ok = ToolResultMessage(tool_call_id="abcDEF123", tool_name="lookup", content=[TextContent(text="found")])
    assert payload(None, UserMessage(content="q"), bare, ok)["messages"][2]["content"] == "found"


def test_tools_and_the_compat_options() -> None:
    model = MISTRAL.model(
        compat={
            "tool_choice": "any",
            "parallel_tool_calls": False,
            "reasoning_effort": "high",
            "prompt_mode": "reasoning",
            "extra_body": {"safe_prompt": True, "random_seed": 7},
        }
    )
    sent = build_request(model, Context(messages=[UserMessage(content="q")], tools=[LOOKUP]), StreamOptions()).payload
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look it up",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    assert (sent["tool_choice"], sent["parallel_tool_calls"]) == ("any", False)
    assert (sent["reasoning_effort"], sent["prompt_mode"]) == ("high", "reasoning")
    assert (sent["safe_prompt"], sent["random_seed"]) == (True, 7)
    function = {"type": "function", "function": {"name": "lookup"}}
    forced = payload(MISTRAL.model(compat={"tool_choice": function}))
    assert forced["tool_choice"] == function


@pytest.mark.parametrize(
    "compat",
    [
        {"tool_choice": "sometimes"},
        {"tool_choice": {"type": "function", "function": {}}},
        {"tool_choice": {"type": "other", "function": {"name": "x"}}},
        {"parallel_tool_calls": "yes"},
        {"reasoning_style": "budget"},
        {"bogus": 1},
    ],
)
async def test_a_compat_mistake_is_a_config_error_before_anything_is_sent(compat: dict[str, Any]) -> None:
    with pytest.raises(CompatError):
        build_request(MISTRAL.model(compat=compat), Context(messages=[UserMessage(content="q")]))
    _, message = await MISTRAL.run_reads([b"never read"], target=MISTRAL.model(compat=compat))
    assert message.error_info is not None
    assert message.error_info.kind == "config"


@pytest.mark.parametrize(
    ("style", "level", "expected"),
    [
        ("effort", None, {}),
        ("effort", "off", {"reasoning_effort": "none"}),
        ("effort", "low", {"reasoning_effort": "high"}),
        ("effort", "high", {"reasoning_effort": "high"}),
        ("prompt_mode", None, {}),
        ("prompt_mode", "off", {}),
        ("prompt_mode", "medium", {"prompt_mode": "reasoning"}),
    ],
)
def test_the_thinking_level(style: str, level: str | None, expected: dict[str, str]) -> None:
    model = MISTRAL.model(compat={"reasoning_style": style}, thinking_level_map={"off": "none", "low": "high"})
    sent = payload(model, reasoning=level)
    assert {k: sent[k] for k in ("reasoning_effort", "prompt_mode") if k in sent} == expected
    assert "reasoning_effort" not in payload(MISTRAL.model(reasoning=False), reasoning="high")


def test_the_catalog_reasoning_models_ask_the_way_their_model_takes() -> None:
    small = get_model("mistral", "mistral-small-latest")
    assert payload(small, reasoning="medium")["reasoning_effort"] == "high"
    assert payload(small, reasoning="off")["reasoning_effort"] == "none"
    magistral = get_model("mistral", "magistral-medium-latest")
    assert payload(magistral, reasoning="high")["prompt_mode"] == "reasoning"
    assert "prompt_mode" not in payload(get_model("mistral", "mistral-large-latest"), reasoning="high")


def test_session_id_is_the_prompt_cache_key_unless_caching_is_off() -> None:
    assert payload(None, session_id="s-1")["prompt_cache_key"] == "s-1"
    assert "prompt_cache_key" not in payload(None, session_id="s-1", cache_retention="none")
    assert len(payload(None, session_id="x" * 100)["prompt_cache_key"]) == 64


def test_the_key_variable() -> None:
    assert api_key_for(MISTRAL.model()).env == ("MISTRAL_API_KEY",)
    gateway = MISTRAL.model(provider="my-gateway", base_url="https://gw.example/v1")
    assert api_key_for(gateway).env == ("MY_GATEWAY_API_KEY", "MISTRAL_API_KEY")
    assert api_key_for(gateway).scheme == "Bearer"


def check_golden(name: str, value: dict[str, Any]) -> None:
    path = GOLDENS / f"{name}.json"
    rendered = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if os.environ.get("STREAMFNS_UPDATE_GOLDENS") == "1":
        GOLDENS.mkdir(exist_ok=True)
        path.write_text(rendered, encoding="utf-8")
    assert path.exists(), f"missing golden {path.name}: run with STREAMFNS_UPDATE_GOLDENS=1 and review it"
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(rendered), f"{path.name} differs"


def test_cross_provider_handoff_from_an_anthropic_transcript() -> None:
    # Moved from the chat-completions goldens: provider mistral is this api now.
    model = get_model("mistral", "mistral-large-latest")
    request = build_request(model, Context(messages=anthropic_transcript()), StreamOptions())
    check_golden(
        "handoff_anthropic_to_mistral", {"url": request.url, "headers": request.headers, "payload": request.payload}
    )
    text = json.dumps(request.payload)
    assert "Two cities: two calls." in text  # foreign thinking became text
    for secret in ("EqQBCkgIBxABGAIqQFyWcKqpx1YzVG", "RDACTED-OPAQUE", "sig-from-anthropic"):
        assert secret not in text
    assistant = next(m for m in request.payload["messages"] if m["role"] == "assistant")
    ids = [call["id"] for call in assistant["tool_calls"]]
    assert ids == [m["tool_call_id"] for m in request.payload["messages"] if m["role"] == "tool"]
    assert all(len(i) == 9 and i.isalnum() for i in ids)
