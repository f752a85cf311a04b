"""What the adapter produces can be sent back: every recorded reply replays into a valid next request."""

from __future__ import annotations

import itertools
from typing import Any, cast

import pytest

from cassettes import library
from normalize import (
    Context,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from streamfns.anthropic import build_request
from streamfns.catalog import get_model
from tests.adapters import ANTHROPIC

pytestmark = pytest.mark.parallel

STREAMS = ANTHROPIC.stream_names()


@pytest.mark.parametrize("name", STREAMS)
async def test_each_recorded_reply_replays_into_the_next_request(name: str) -> None:
    _, reply = await ANTHROPIC.replay(library.load(name))
    history: list[Message] = [UserMessage(content="first question"), reply]
    history.extend(
        ToolResultMessage(tool_call_id=block.id, tool_name=block.name, content=[TextContent(text="42")])
        for block in reply.content
        if isinstance(block, ToolCall)
    )
    history.append(UserMessage(content="and then?"))
    target = ANTHROPIC.model()
    target.id = reply.model  # the same model: signatures and thinking must survive
    payload = build_request(target, Context(messages=history)).payload
    messages: list[dict[str, Any]] = payload["messages"]
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in itertools.pairwise(roles)), "roles alternate"
    assert roles[0] == "user"
    assert roles[-1] == "user"
    if reply.stop_reason == "error":
        assert len(messages) == 1, "an errored reply is dropped from the history"
        return
    assistant = messages[1]["content"]
    sent_tool_ids = [b["id"] for b in assistant if b["type"] == "tool_use"]
    assert sent_tool_ids == [b.id for b in reply.content if isinstance(b, ToolCall)]
    answered: list[str] = []
    for message in messages[2:]:
        content: Any = message["content"]
        blocks = cast("list[dict[str, Any]]", content) if isinstance(content, list) else []
        answered += [block["tool_use_id"] for block in blocks if block["type"] == "tool_result"]
    assert answered == sent_tool_ids, "every tool call is answered in the next user turn"
    signed = [b for b in reply.content if isinstance(b, ThinkingContent) and b.thinking_signature]
    sent_thinking = [b for b in assistant if b["type"] in ("thinking", "redacted_thinking")]
    assert len(sent_thinking) == len(signed), "signed thinking goes back to the same model"


async def test_a_reply_replayed_to_another_model_sends_thinking_as_text() -> None:
    _, reply = await ANTHROPIC.replay(library.load("llma__thinking_then_tool_use_haiku45"))
    tool = next(b for b in reply.content if isinstance(b, ToolCall))
    history: list[Message] = [
        UserMessage(content="q"),
        reply,
        ToolResultMessage(tool_call_id=tool.id, tool_name=tool.name, content=[TextContent(text="ok")]),
    ]
    other = get_model("anthropic", "claude-sonnet-4-5")
    payload = build_request(other, Context(messages=history)).payload
    assistant = payload["messages"][1]["content"]
    assert [b["type"] for b in assistant] == ["text", "tool_use"]
    thinking = next(b for b in reply.content if isinstance(b, ThinkingContent))
    assert assistant[0]["text"] == thinking.thinking
