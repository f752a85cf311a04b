"""Gemini / Vertex request building: golden payloads (plain, thinking per model family, tool results
with images, signature replay, handoff from an Anthropic transcript) and the endpoint rules."""

from __future__ import annotations

from typing import Any

import pytest

from normalize import (
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
    ToolResultMessage,
    UserMessage,
)
from streamfns.google import stream_google
from streamfns.google.compat import GoogleCompat, google_key, vertex_placement
from streamfns.google.request import SKIP_THOUGHT_SIGNATURE, build_request, google_tool_call_id, is_valid_signature
from streamfns.kit import CompatError
from tests.adapters import GOOGLE

pytestmark = pytest.mark.parallel

PNG = "iVBORw0KGgo="
SIG = "c2lnbmF0dXJl"
GEMINI = "https://generativelanguage.googleapis.com/v1beta"


def weather() -> Tool:
    return Tool(
        name="get_weather",
        description="Current weather for a city.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )


def reply(*content: Any, of: Model | None = None, stop: StopReason = "stop", **fields: Any) -> AssistantMessage:
    target = of or GOOGLE.model()
    return AssistantMessage(
        content=list(content), api=target.api, provider=target.provider, model=target.id, stop_reason=stop, **fields
    )


def payload(target: Model, messages: list[Message], **options: Any) -> dict[str, Any]:
    return build_request(target, Context(messages=messages), StreamOptions(**options)).payload


def test_a_plain_request_golden() -> None:
    request = build_request(
        GOOGLE.model(),
        Context(
            system_prompt="You are terse.",
            tools=[weather()],
            messages=[
                UserMessage(content="Weather in Paris?"),
                UserMessage(
                    content=[TextContent(text="And this photo:"), ImageContent(data=PNG, mime_type="image/png")]
                ),
            ],
        ),
        StreamOptions(temperature=0.2, max_tokens=500),
    )
    assert request.url == f"{GEMINI}/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert request.headers == {"accept": "text/event-stream", "content-type": "application/json"}
    assert request.payload == {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "Weather in Paris?"},
                    {"text": "And this photo:"},
                    {"inlineData": {"mimeType": "image/png", "data": PNG}},
                ],
            }
        ],
        "systemInstruction": {"parts": [{"text": "You are terse."}]},
        "generationConfig": {"temperature": 0.2, "maxOutputTokens": 500},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Current weather for a city.",
                        "parametersJsonSchema": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                            "required": ["city"],
                        },
                    }
                ]
            }
        ],
    }


@pytest.mark.parametrize(
    ("model_id", "level", "expected"),
    [
        # Gemini 3 Pro: LOW / HIGH; it cannot stop thinking, so off is LOW with thoughts hidden.
        ("gemini-3-pro-preview", None, {"thinkingLevel": "LOW"}),
        ("gemini-3-pro-preview", "minimal", {"thinkingLevel": "LOW", "includeThoughts": True}),
        ("gemini-3-pro-preview", "medium", {"thinkingLevel": "HIGH", "includeThoughts": True}),
        ("gemini-3-pro-preview", "xhigh", {"thinkingLevel": "HIGH", "includeThoughts": True}),
        # Gemini 3 Flash: MINIMAL … HIGH.
        ("gemini-3-flash-preview", "off", {"thinkingLevel": "MINIMAL"}),
        ("gemini-3-flash-preview", "low", {"thinkingLevel": "LOW", "includeThoughts": True}),
        ("gemini-3-flash-preview", "medium", {"thinkingLevel": "MEDIUM", "includeThoughts": True}),
        ("gemini-3-flash-preview", "max", {"thinkingLevel": "HIGH", "includeThoughts": True}),
        # Gemini 2.5: budgets per model; 2.5 Pro's floor is 128.
        ("gemini-2.5-pro", "off", {"thinkingBudget": 128}),
        ("gemini-2.5-pro", "high", {"thinkingBudget": 32768, "includeThoughts": True}),
        ("gemini-2.5-flash", None, {"thinkingBudget": 0}),
        ("gemini-2.5-flash", "minimal", {"thinkingBudget": 128, "includeThoughts": True}),
        ("gemini-2.5-flash", "medium", {"thinkingBudget": 8192, "includeThoughts": True}),
        ("gemini-2.5-flash-lite", "minimal", {"thinkingBudget": 512, "includeThoughts": True}),
        ("gemini-2.5-flash-lite", "high", {"thinkingBudget": 24576, "includeThoughts": True}),
        # An unknown budget model thinks dynamically; gemma 4 takes levels.
        ("gemini-exp-1206", "low", {"thinkingBudget": -1, "includeThoughts": True}),
        ("gemma-4-27b-it", "low", {"thinkingLevel": "MINIMAL", "includeThoughts": True}),
    ],
)
def test_thinking_levels_per_model_family(model_id: str, level: ThinkingLevel | None, expected: dict[str, Any]) -> None:
    body = payload(GOOGLE.model(id=model_id, reasoning=True), [UserMessage(content="hi")], reasoning=level)
    assert body["generationConfig"]["thinkingConfig"] == expected


def test_thinking_config_is_only_sent_to_reasoning_models_and_follows_the_catalog_and_budgets() -> None:
    assert "generationConfig" not in payload(
        GOOGLE.model(id="gemini-2.0-flash"), [UserMessage(content="hi")], reasoning="high"
    )
    pro31 = GOOGLE.model(
        id="gemini-3.1-pro-preview", reasoning=True, thinking_level_map={"medium": "MEDIUM", "off": None}
    )
    assert payload(pro31, [UserMessage(content="hi")], reasoning="medium")["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "MEDIUM",
        "includeThoughts": True,
    }
    assert "generationConfig" not in payload(pro31, [UserMessage(content="hi")], reasoning="off")
    custom = payload(
        GOOGLE.model(reasoning=True), [UserMessage(content="hi")], reasoning="xhigh", thinking_budgets={"high": 999}
    )
    assert custom["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 999, "includeThoughts": True}
    forced = GOOGLE.model(id="my-tuned-flash", reasoning=True, compat={"thinking": "level"})
    assert payload(forced, [UserMessage(content="hi")], reasoning="low")["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "LOW",
        "includeThoughts": True,
    }


def tool_turn(target: Model) -> list[Message]:
    call_a = ToolCall(id="call_a", name="get_weather", arguments={"city": "Paris"}, thought_signature=SIG)
    call_b = ToolCall(id="call_b", name="get_weather", arguments={"city": "Oslo"})
    return [
        UserMessage(content="Weather in Paris and Oslo?"),
        reply(call_a, call_b, of=target, stop="toolUse"),
        ToolResultMessage(
            tool_call_id="call_a",
            tool_name="get_weather",
            content=[TextContent(text="Sunny"), ImageContent(data=PNG, mime_type="image/png")],
        ),
        ToolResultMessage(
            tool_call_id="call_b",
            tool_name="get_weather",
            content=[ImageContent(data=PNG, mime_type="image/png")],
            is_error=True,
        ),
        UserMessage(content="Thanks!"),
    ]


def test_tool_results_with_images_on_gemini_3_nest_the_images_in_one_user_turn() -> None:
    target = GOOGLE.model(id="gemini-3-flash-preview")
    assert payload(target, tool_turn(target))["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris and Oslo?"}]},
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_a"},
                    "thoughtSignature": SIG,
                },
                {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}, "id": "call_b"}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"output": "Sunny"},
                        "id": "call_a",
                        "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG}}],
                    }
                },
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"error": "(see attached image)"},
                        "id": "call_b",
                        "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG}}],
                    }
                },
                {"text": "Thanks!"},
            ],
        },
    ]


def test_tool_results_with_images_on_gemini_2_follow_the_responses_in_the_same_turn() -> None:
    target = GOOGLE.model(id="gemini-2.5-flash")
    contents = payload(target, tool_turn(target))["contents"]
    assert contents[1]["parts"][0] == {
        "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
        "thoughtSignature": SIG,
    }
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"output": "Sunny"}}},
            {"functionResponse": {"name": "get_weather", "response": {"error": "(see attached image)"}}},
            {"text": "Tool result image:"},
            {"inlineData": {"mimeType": "image/png", "data": PNG}},
            {"text": "Tool result image:"},
            {"inlineData": {"mimeType": "image/png", "data": PNG}},
            {"text": "Thanks!"},
        ],
    }
    assert len(contents) == 3


def test_signatures_go_back_to_the_same_model_only_and_only_when_valid() -> None:
    target = GOOGLE.model(id="gemini-3-pro-preview")
    history: list[Message] = [
        UserMessage(content="Q"),
        reply(
            ThinkingContent(thinking="plan", thinking_signature=SIG),
            TextContent(text="A", text_signature=SIG),
            TextContent(text="", text_signature=SIG),
            TextContent(text="B", text_signature="not base64!"),
            ToolCall(id="c1", name="f", arguments={}, thought_signature=SIG),
            of=target,
            stop="toolUse",
        ),
        ToolResultMessage(tool_call_id="c1", tool_name="f", content=[TextContent(text="ok")]),
    ]
    same = payload(target, history)["contents"][1]["parts"]
    assert same == [
        {"thought": True, "text": "plan", "thoughtSignature": SIG},
        {"text": "A", "thoughtSignature": SIG},
        {"text": "", "thoughtSignature": SIG},
        {"text": "B"},
        {"functionCall": {"name": "f", "args": {}, "id": "c1"}, "thoughtSignature": SIG},
    ]
    # Another model (even the same id on another provider) gets plain text and no signatures.
    other = GOOGLE.model(
        id="gemini-3-pro-preview", provider="google-vertex", compat={"project": "p", "location": "global"}
    )
    foreign = payload(other, history)["contents"][1]["parts"]
    assert foreign == [
        {"text": "plan"},
        {"text": "A"},
        {"text": "B"},
        {"functionCall": {"name": "f", "args": {}, "id": "c1"}},
    ]
    assert is_valid_signature(SIG)
    assert not any(is_valid_signature(s) for s in (None, "", "abc", "ab!=", "a b="))


def test_handoff_from_an_anthropic_transcript() -> None:
    claude = Model(id="claude-sonnet-4-5", api="anthropic-messages", provider="anthropic")
    target = GOOGLE.model(id="gemini-3-flash-preview", reasoning=True)
    history: list[Message] = [
        SystemMessage(content="Be helpful."),
        UserMessage(content="Double 21 with the tool."),
        reply(
            ThinkingContent(thinking="I should call double.", thinking_signature="EqQBCkYIBxgCKkD+anthropic"),
            ThinkingContent(thinking="", thinking_signature="opaque", redacted=True),
            TextContent(text="Calling the tool."),
            ToolCall(id="toolu_01A|weird.id", name="double", arguments={"n": 21}),
            of=claude,
            stop="toolUse",
        ),
        ToolResultMessage(tool_call_id="toolu_01A|weird.id", tool_name="double", content=[TextContent(text="42")]),
        reply(TextContent(text="It is 42."), of=claude),
        reply(TextContent(text="aborted half"), of=claude, stop="aborted", error_message="stopped"),
        UserMessage(content="And doubled again?"),
    ]
    body = payload(target, history, reasoning="low")
    assert body["systemInstruction"] == {"parts": [{"text": "Be helpful."}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Double 21 with the tool."}]},
        {
            "role": "model",
            "parts": [
                {"text": "I should call double."},
                {"text": "Calling the tool."},
                {
                    "functionCall": {"name": "double", "args": {"n": 21}, "id": "toolu_01A_weird_id"},
                    "thoughtSignature": SKIP_THOUGHT_SIGNATURE,
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "double", "response": {"output": "42"}, "id": "toolu_01A_weird_id"}}
            ],
        },
        {"role": "model", "parts": [{"text": "It is 42."}]},
        {"role": "user", "parts": [{"text": "And doubled again?"}]},
    ]
    assert body["generationConfig"] == {"thinkingConfig": {"thinkingLevel": "LOW", "includeThoughts": True}}


CLAUDE = Model(id="claude-sonnet-4-5", api="anthropic-messages", provider="anthropic")


def handed_over_mid_tool_loop() -> list[Message]:
    """An Anthropic tool loop handed to Gemini while it runs: Claude's calls, then the user's results."""
    return [
        UserMessage(content="Weather in Paris and Rome?"),
        reply(
            ThinkingContent(thinking="Two cities.", thinking_signature="EqQBCkYIBxgCKkD+anthropic"),
            TextContent(text="Checking both."),
            ToolCall(id="toolu_01", name="get_weather", arguments={"city": "Paris"}),
            ToolCall(id="toolu_02", name="get_weather", arguments={"city": "Rome"}),
            of=CLAUDE,
            stop="toolUse",
        ),
        ToolResultMessage(tool_call_id="toolu_01", tool_name="get_weather", content=[TextContent(text="18C")]),
        ToolResultMessage(tool_call_id="toolu_02", tool_name="get_weather", content=[TextContent(text="21C")]),
    ]


def test_a_handoff_mid_tool_loop_to_gemini_3_signs_the_foreign_call_with_the_documented_sentinel() -> None:
    # Gemini 3 validates the calls of the current turn: without a signature on the first one the
    # request is a 400 "Function call is missing a thought_signature". Another model's signatures never
    # cross over, so the first call of the turn carries Google's sentinel; the second (a parallel call)
    # needs none, as Gemini's own parallel calls carry one only on the first.
    target = GOOGLE.model(id="gemini-3-flash-preview", reasoning=True)
    body = payload(target, handed_over_mid_tool_loop())
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Two cities."},
                {"text": "Checking both."},
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "toolu_01"},
                    "thoughtSignature": "skip_thought_signature_validator",
                },
                {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}, "id": "toolu_02"}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"output": "18C"}, "id": "toolu_01"}},
                {"functionResponse": {"name": "get_weather", "response": {"output": "21C"}, "id": "toolu_02"}},
            ],
        },
    ]


@pytest.mark.parametrize(
    "target",
    [
        GOOGLE.model(id="gemini-2.5-flash"),  # does not validate signatures
        GOOGLE.model(
            id="gemini-3-pro-preview", provider="google-vertex", compat={"project": "p", "location": "global"}
        ),
        GOOGLE.model(id="gemini-3-pro-preview", compat={"vertex": True, "project": "p", "location": "global"}),
        GOOGLE.model(id="gemini-3-pro-preview", provider="openrouter", base_url="https://proxy.example/v1beta"),
        GOOGLE.model(id="gemini-3-pro-preview", compat={"thought_signature_sentinel": False}),
    ],
    ids=["gemini-2.5", "vertex-provider", "vertex-compat", "another-provider", "opted-out"],
)
def test_the_sentinel_goes_only_to_gemini_3_on_the_gemini_api(target: Model) -> None:
    # Vertex rejects it ("Invalid JSON in request body", pi #4032).
    contents = payload(target, handed_over_mid_tool_loop())["contents"]
    assert not any("thoughtSignature" in part for turn in contents for part in turn["parts"])


def test_the_sentinel_can_be_asked_for_where_it_is_not_the_default() -> None:
    target = GOOGLE.model(id="gemini-2.5-flash", compat={"thought_signature_sentinel": True})
    parts = payload(target, handed_over_mid_tool_loop())["contents"][1]["parts"]
    assert [part.get("thoughtSignature") for part in parts] == [None, None, SKIP_THOUGHT_SIGNATURE, None]


def test_the_sentinel_never_replaces_or_joins_a_real_signature() -> None:
    target = GOOGLE.model(id="gemini-3-pro-preview")
    history: list[Message] = [
        UserMessage(content="Q"),
        # Gemini 3's own parallel calls: only the first is signed.
        reply(
            ToolCall(id="c1", name="f", arguments={}, thought_signature=SIG),
            ToolCall(id="c2", name="f", arguments={}),
            of=target,
            stop="toolUse",
        ),
        ToolResultMessage(tool_call_id="c1", tool_name="f", content=[TextContent(text="1")]),
        ToolResultMessage(tool_call_id="c2", tool_name="f", content=[TextContent(text="2")]),
        # Its own next step, whose signature is not valid base64 (so it is not sent back).
        reply(ToolCall(id="c3", name="f", arguments={}, thought_signature="not base64!"), of=target, stop="toolUse"),
        ToolResultMessage(tool_call_id="c3", tool_name="f", content=[TextContent(text="3")]),
        # A text-only turn has nothing to sign.
        reply(TextContent(text="Done."), of=target),
        UserMessage(content="Again?"),
    ]
    contents = payload(target, history)["contents"]
    signatures = [
        [part.get("thoughtSignature") for part in turn["parts"]] for turn in contents if turn["role"] == "model"
    ]
    assert signatures == [[SIG, None], [SKIP_THOUGHT_SIGNATURE], [None]]
    # The transcript itself is untouched.
    calls = [block for message in history if isinstance(message, AssistantMessage) for block in message.content]
    assert [getattr(block, "thought_signature", None) for block in calls] == [SIG, None, "not base64!", None]


def test_turns_merge_blank_text_is_dropped_and_later_system_messages_become_updates() -> None:
    body = payload(
        GOOGLE.model(),
        [
            SystemMessage(content="Base."),
            UserMessage(content="one"),
            UserMessage(content="   "),
            UserMessage(content="two"),
            reply(TextContent(text=" "), ThinkingContent(thinking="  ")),
            SystemMessage(content="Now answer in French.", tools_added=[weather()]),
            UserMessage(content="three"),
        ],
    )
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "one"},
                {"text": "two"},
                {"text": "<system_update>Now answer in French.</system_update>"},
                {"text": "three"},
            ],
        }
    ]
    assert body["systemInstruction"] == {"parts": [{"text": "Base."}]}
    assert [d["name"] for d in body["tools"][0]["functionDeclarations"]] == ["get_weather"]


def test_the_payload_is_a_copy_of_the_transcript() -> None:
    call = ToolCall(id="c", name="f", arguments={"deep": {"x": 1}})
    tool = weather()
    body = build_request(
        GOOGLE.model(), Context(tools=[tool], messages=[UserMessage(content="q"), reply(call, stop="toolUse")])
    ).payload
    body["contents"][1]["parts"][0]["functionCall"]["args"]["deep"]["x"] = 2
    body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["required"].append("y")
    assert call.arguments == {"deep": {"x": 1}}
    assert tool.parameters["required"] == ["city"]


def test_vertex_streamed_function_call_arguments_are_asked_for_with_tools_only() -> None:
    target = GOOGLE.model(
        provider="google-vertex",
        compat={"project": "p", "location": "us-central1", "stream_function_call_arguments": True},
    )
    with_tools = build_request(target, Context(tools=[weather()], messages=[UserMessage(content="q")])).payload
    assert with_tools["toolConfig"] == {"functionCallingConfig": {"streamFunctionCallArguments": True}}
    assert "toolConfig" not in build_request(target, Context(messages=[UserMessage(content="q")])).payload


def test_tool_call_ids_are_sent_only_to_models_that_use_them() -> None:
    history: list[Message] = [
        UserMessage(content="q"),
        reply(ToolCall(id="c9", name="f", arguments={}), stop="toolUse"),
        ToolResultMessage(tool_call_id="c9", tool_name="f", content=[TextContent(text="r")]),
    ]
    for model_id, sends in (("gemini-2.5-flash", False), ("gemini-3-pro-preview", True), ("claude-sonnet-4-5@x", True)):
        target = GOOGLE.model(id=model_id)
        history[1] = reply(ToolCall(id="c9", name="f", arguments={}), of=target, stop="toolUse")
        parts = payload(target, history)["contents"]
        assert ("id" in parts[1]["parts"][0]["functionCall"]) is sends, model_id
        assert ("id" in parts[2]["parts"][0]["functionResponse"]) is sends, model_id
    forced = GOOGLE.model(id="gemini-2.5-flash", compat={"call_ids": True})
    history[1] = reply(ToolCall(id="c9", name="f", arguments={}), of=forced, stop="toolUse")
    assert payload(forced, history)["contents"][1]["parts"][0]["functionCall"]["id"] == "c9"
    assert google_tool_call_id("call|item.1") == "call_item_1"
    assert google_tool_call_id("x" * 100) == "x" * 64


# ------------------------------------------------------------------------------------ endpoints


def test_gemini_api_urls_quote_the_model_and_take_tuned_models_and_base_urls() -> None:
    assert build_request(GOOGLE.model(id="tunedModels/my-model-1"), Context()).url == (
        f"{GEMINI}/tunedModels/my-model-1:streamGenerateContent?alt=sse"
    )
    assert build_request(GOOGLE.model(id="gemini-x?key=1#y"), Context()).url == (
        f"{GEMINI}/models/gemini-x%3Fkey%3D1%23y:streamGenerateContent?alt=sse"
    )
    for hostile in ("models/../../v1/files", "./x", "tunedModels//x"):
        with pytest.raises(ValueError, match="not a model name"):
            build_request(GOOGLE.model(id=hostile), Context())
    assert build_request(GOOGLE.model(base_url="http://127.0.0.1:9/v1beta/"), Context()).url == (
        "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert build_request(GOOGLE.model(base_url=""), Context()).url.startswith(GEMINI + "/models/")


def test_vertex_urls_from_compat_and_the_global_location() -> None:
    regional = GOOGLE.model(
        provider="google-vertex", base_url="", compat={"project": "my-proj", "location": "europe-west4"}
    )
    assert build_request(regional, Context()).url == (
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/my-proj/locations/europe-west4"
        "/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    world = GOOGLE.model(provider="google-vertex", base_url="", compat={"project": "my-proj", "location": "global"})
    assert build_request(world, Context()).url.startswith("https://aiplatform.googleapis.com/v1/projects/my-proj/")
    express = GOOGLE.model(provider="google-vertex", base_url="", compat={"express": True})
    assert build_request(express, Context()).url == (
        "https://aiplatform.googleapis.com/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    proxied = GOOGLE.model(
        provider="google-vertex", base_url="http://127.0.0.1:9/v1", compat={"project": "p", "location": "us-east5"}
    )
    assert build_request(proxied, Context()).url == (
        "http://127.0.0.1:9/v1/projects/p/locations/us-east5/publishers/google/models/gemini-2.5-flash"
        ":streamGenerateContent?alt=sse"
    )


def test_vertex_placement_reads_the_environment_only_for_what_compat_leaves_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(CompatError, match=r"needs a project .* and a location"):
        vertex_placement(GoogleCompat())
    monkeypatch.setenv("GCLOUD_PROJECT", "from-gcloud")
    with pytest.raises(CompatError, match="needs a location"):
        vertex_placement(GoogleCompat())
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    placement = vertex_placement(GoogleCompat())
    assert (placement.project, placement.location) == ("env-proj", "us-central1")
    placement = vertex_placement(GoogleCompat(project="mine", location="global"))
    assert (placement.project, placement.location) == ("mine", "global")
    assert (
        vertex_placement(GoogleCompat(project="example.com:proj-1", location="us-east5")).project
        == "example.com:proj-1"
    )


@pytest.mark.parametrize(
    ("project", "location"),
    [("p", "evil.com/x#"), ("p", "us-central1.attacker.net"), ("p/../../x", "global"), ("P@", "global"), ("p", "US")],
)
def test_a_project_or_location_that_could_redirect_the_request_is_refused(project: str, location: str) -> None:
    with pytest.raises(CompatError):
        vertex_placement(GoogleCompat(project=project, location=location))


def test_key_rules_per_endpoint() -> None:
    assert google_key(GOOGLE.model()).headers("k") == {"x-goog-api-key": "k"}
    assert google_key(GOOGLE.model()).env == ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    vertex = google_key(GOOGLE.model(provider="google-vertex"))
    assert vertex.headers("tok") == {"authorization": "Bearer tok"}
    assert vertex.env == ("GOOGLE_CLOUD_ACCESS_TOKEN",)
    assert google_key(GOOGLE.model(provider="google-vertex", compat={"express": True})).headers("k") == {
        "x-goog-api-key": "k"
    }
    assert google_key(GOOGLE.model(compat={"vertex": True})).env == ("GOOGLE_CLOUD_ACCESS_TOKEN",)
    with pytest.raises(CompatError, match="nonsense"):  # the kit has reported it as config already
        google_key(GOOGLE.model(compat={"nonsense": 1}))


async def test_a_mistyped_vertex_flag_is_a_config_error_not_a_missing_gemini_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_ACCESS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    context = Context(messages=[UserMessage(content="hi")])
    stream = stream_google(GOOGLE.model(compat={"vertx": True}), context, StreamOptions())
    result = await stream.result()
    assert result.error_info is not None
    assert result.error_info.kind == "config", result.error_message
    assert "'vertx'" in (result.error_message or "")
    assert "GEMINI_API_KEY" not in (result.error_message or "")


def test_unknown_compat_flags_are_refused() -> None:
    with pytest.raises(CompatError, match="nonsense"):
        build_request(GOOGLE.model(compat={"nonsense": True}), Context())
    with pytest.raises(CompatError, match="thinking"):
        build_request(GOOGLE.model(compat={"thinking": "lots"}), Context())
