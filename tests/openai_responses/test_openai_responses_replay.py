"""Every recorded reply goes back out: to the same model as the items it streamed, to another model
(here: Anthropic) as plain text with valid tool-call ids."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from cassettes import library
from normalize import (
    AssistantMessage,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
)
from streamfns.anthropic.request import build_request as anthropic_request
from streamfns.catalog import get_model
from streamfns.openai_responses.request import CUSTOM_TOOL_CALL, build_request, split_tool_call_id
from tests.adapters import OPENAI_RESPONSES as RESPONSES

pytestmark = pytest.mark.parallel

STREAMS = RESPONSES.stream_names()
SAME = RESPONSES.model(id="gpt-5.2")


async def reply(name: str, target: Model = SAME) -> AssistantMessage:
    _, message = await RESPONSES.replay(library.load(name), target)
    return message


def next_context(message: AssistantMessage) -> Context:
    return Context(
        messages=[UserMessage(content="Question", timestamp=1), message, UserMessage(content="Go on", timestamp=9)]
    )


@pytest.mark.parametrize("name", STREAMS)
async def test_a_reply_goes_back_to_the_same_model_as_its_own_items(name: str) -> None:
    message = await reply(name)
    payload = build_request(SAME, next_context(message), StreamOptions(reasoning="low")).payload
    json.dumps(payload, allow_nan=False)
    items: list[dict[str, Any]] = payload["input"]
    if message.stop_reason in ("error", "aborted"):
        assert [item.get("role") for item in items] == ["user", "user"]  # a failed turn is not replayed
        return
    sent = items[1:-1]
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    for call in calls:
        call_id, item_id = split_tool_call_id(call.id)
        # A grammar tool's call goes back as the custom call it was, its result as a custom output.
        kind = "custom_tool_call" if call.thought_signature == CUSTOM_TOOL_CALL else "function_call"
        matching = [i for i in sent if i.get("type") == kind and i["call_id"] == call_id]
        assert len(matching) == 1
        output = [i for i in sent if i.get("type") == f"{kind}_output" and i["call_id"] == call_id]
        assert len(output) == 1  # the call never got a result: a synthetic one follows it
        if "id" in matching[0]:
            assert matching[0]["id"] == item_id
    for item in sent:
        if item.get("type") == "reasoning":
            # Verbatim, carrying its encrypted content, and followed by the output it led to.
            assert item["encrypted_content"]
            assert any(
                b.thinking_signature == json.dumps(item, separators=(",", ":"), ensure_ascii=False)
                for b in message.content
                if isinstance(b, ThinkingContent)
            )
            assert sent.index(item) < len(sent) - 1


@pytest.mark.parametrize("name", STREAMS)
async def test_a_reply_goes_to_anthropic_as_text_and_valid_tool_use_ids(name: str) -> None:
    message = await reply(name)
    target = get_model("anthropic", "claude-sonnet-4-5")
    payload = anthropic_request(target, next_context(message), StreamOptions()).payload
    json.dumps(payload, allow_nan=False)
    if message.stop_reason in ("error", "aborted"):
        return
    blocks = [b for m in payload["messages"] if m["role"] == "assistant" for b in m["content"]]
    assert all(b["type"] in ("text", "tool_use") for b in blocks)  # OpenAI reasoning is never sent as thinking
    for block in blocks:
        if block["type"] == "tool_use":
            assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", block["id"])
    thinking = [b.thinking for b in message.content if isinstance(b, ThinkingContent) and b.thinking.strip()]
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    assert all(t in texts for t in thinking)
    own = [b.text for b in message.content if isinstance(b, TextContent) and b.text.strip()]
    assert all(t in texts for t in own)


@pytest.mark.parametrize(
    "name",
    [
        "pai__reasoning_then_function_call_gpt5",
        "pai__phase_commentary_gpt55",
        "vercel__reasoning_encrypted_3_function_calls_codex",
    ],
)
async def test_encrypted_reasoning_from_a_recording_is_sent_back_before_its_call(name: str) -> None:
    message = await reply(name)
    items = build_request(SAME, next_context(message), StreamOptions()).payload["input"]
    kinds = [item.get("type") for item in items]
    assert "reasoning" in kinds
    first_call = kinds.index("function_call")
    assert kinds.index("reasoning") < first_call
    assert items[first_call]["id"].startswith("fc_")
