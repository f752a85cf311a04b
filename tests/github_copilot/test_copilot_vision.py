"""``Copilot-Vision-Request: true`` goes with a request whose conversation carries an image, on each
of the three apis Copilot serves (Copilot refuses such a request without it), and with no other."""

from __future__ import annotations

import json

import pytest

from normalize import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StreamOptions,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from streamfns.anthropic.request import build_request as build_messages
from streamfns.auth import CopilotOAuth, Credential, copilot_vision
from streamfns.catalog import get_model
from streamfns.openai_completions.request import build_request as build_chat
from streamfns.openai_responses.request import build_request as build_responses

PIXEL = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
BUILDERS = {
    "openai-completions": ("gpt-4.1", build_chat),
    "openai-responses": ("gpt-5.3-codex", build_responses),
    "anthropic-messages": ("claude-sonnet-4.5", build_messages),
}
CALL = ToolCall(id="call_1", name="screenshot", arguments={})
TOOL = Tool(name="screenshot", description="Take a screenshot", parameters={"type": "object", "properties": {}})


def body(api: str, context: Context) -> bytes:
    model_id, build = BUILDERS[api]
    model: Model = get_model("github-copilot", model_id)
    return json.dumps(build(model, context, StreamOptions()).payload).encode()


def headers(body: bytes) -> dict[str, str]:
    credential = Credential("github-copilot", "tid=fake-copilot-token", "ghu_fake", 0.0)
    return dict(CopilotOAuth().to_auth(credential, body).headers)


def image_in_a_tool_result(api: str) -> Context:
    turn = AssistantMessage(
        content=[CALL], api=api, provider="github-copilot", model=BUILDERS[api][0], stop_reason="toolUse"
    )
    result = ToolResultMessage(tool_call_id="call_1", tool_name="screenshot", content=[PIXEL])
    return Context(messages=[UserMessage(content="Look at my screen"), turn, result], tools=[TOOL])


@pytest.mark.parametrize("api", sorted(BUILDERS))
def test_an_image_from_the_user_asks_for_vision(api: str) -> None:
    context = Context(messages=[UserMessage(content=[TextContent(text="What is this?"), PIXEL])])
    sent = body(api, context)
    assert copilot_vision(sent)
    assert headers(sent)["copilot-vision-request"] == "true"


@pytest.mark.parametrize("api", sorted(BUILDERS))
def test_an_image_in_a_tool_result_asks_for_vision(api: str) -> None:
    sent = body(api, image_in_a_tool_result(api))
    assert copilot_vision(sent), sent[:400]


@pytest.mark.parametrize("api", sorted(BUILDERS))
def test_text_alone_does_not(api: str) -> None:
    context = Context(messages=[UserMessage(content="A tool named image, no picture")], tools=[TOOL])
    sent = body(api, context)
    assert not copilot_vision(sent)
    assert "copilot-vision-request" not in headers(sent)


@pytest.mark.parametrize("raw", [b"", b"not json", b"[]", b'{"input": "text"}', b'{"tools": [{"type": "image"}]}'])
def test_a_body_without_a_conversation_image_does_not(raw: bytes) -> None:
    assert not copilot_vision(raw)
