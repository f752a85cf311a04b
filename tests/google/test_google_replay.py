"""What the adapter produces can be sent back: every recorded reply replays into a valid next request
(roles alternate, every call is answered in the next user turn, signatures return to the same model
exactly as they came, and never to another one)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from cassettes import library
from normalize import Context, Message, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from streamfns.google import build_request
from tests.adapters import GOOGLE

pytestmark = pytest.mark.parallel

STREAMS = GOOGLE.stream_names()


def _signatures(parts: list[dict[str, Any]]) -> list[str]:
    return [part["thoughtSignature"] for part in parts if "thoughtSignature" in part]


@pytest.mark.parametrize("name", STREAMS)
async def test_each_recorded_reply_replays_into_the_next_request(name: str) -> None:
    cassette = library.load(name)
    source = GOOGLE.replay_model(cassette)  # the model the recording answered
    _, reply = await GOOGLE.replay(cassette, source)
    history: list[Message] = [UserMessage(content="first question"), reply]
    history.extend(
        ToolResultMessage(tool_call_id=block.id, tool_name=block.name, content=[TextContent(text="42")])
        for block in reply.content
        if isinstance(block, ToolCall)
    )
    history.append(UserMessage(content="and then?"))
    contents: list[dict[str, Any]] = build_request(source, Context(messages=history)).payload["contents"]
    roles = [turn["role"] for turn in contents]
    assert all(a != b for a, b in itertools.pairwise(roles)), "roles alternate"
    assert (roles[0], roles[-1]) == ("user", "user")
    if reply.stop_reason == "error":
        assert len(contents) == 1, "an errored reply is dropped from the history"
        return
    model_parts: list[dict[str, Any]] = contents[1]["parts"]
    calls = [part["functionCall"] for part in model_parts if "functionCall" in part]
    assert [c["name"] for c in calls] == [b.name for b in reply.content if isinstance(b, ToolCall)]
    assert [c["args"] for c in calls] == [b.arguments for b in reply.content if isinstance(b, ToolCall)]
    if calls:
        answers = [part["functionResponse"] for part in contents[2]["parts"] if "functionResponse" in part]
        assert [a["name"] for a in answers] == [c["name"] for c in calls]
        assert [a.get("id") for a in answers] == [c.get("id") for c in calls]
    # The same model gets every signature back where it came from.
    expected = [
        signature
        for block in reply.content
        for signature in [
            block.text_signature
            if isinstance(block, TextContent)
            else block.thinking_signature
            if isinstance(block, ThinkingContent)
            else block.thought_signature
        ]
        if signature
    ]
    assert _signatures(model_parts) == expected
    # Another model gets none of them.
    other = GOOGLE.model(id="gemini-2.0-flash")
    foreign = build_request(other, Context(messages=history)).payload["contents"]
    assert all(not _signatures(turn["parts"]) for turn in foreign)
    assert all("thought" not in part for turn in foreign for part in turn["parts"])
