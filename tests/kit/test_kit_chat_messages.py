"""``streamfns.kit.chat_messages``: the ordering rule the chat-style apis share (Chat Completions,
Mistral, Cohere), pinned once for the kit."""

from __future__ import annotations

from typing import Any

from normalize import AssistantMessage, SystemMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from streamfns.kit import chat_messages

CALL = ToolCall(id="c1", name="f", arguments={})
TURN = AssistantMessage(content=[CALL], api="x", provider="x", model="x", stop_reason="toolUse")
RESULT = ToolResultMessage(tool_call_id="c1", tool_name="f", content=[TextContent(text="42")])


def render(*, results_end: Any = None, bridge: str | None = None, turns: Any = None) -> list[str]:
    messages = chat_messages(
        turns or [UserMessage(content="hi"), TURN, SystemMessage(content="note"), RESULT, UserMessage(content="and?")],
        user=lambda message: {"role": "user", "content": str(message.content)},
        assistant=lambda message: {"role": "assistant", "content": "call"},
        tool_result=lambda message: {"role": "tool", "content": "42"},
        results_end=results_end,
        bridge=bridge,
    )
    return [f"{message['role']}:{message['content']}" for message in messages]


def test_a_system_update_waits_until_the_batch_of_tool_results_is_over() -> None:
    assert render() == ["user:hi", "assistant:call", "tool:42", "user:<system_update>note</system_update>", "user:and?"]


def test_what_follows_a_batch_of_results_comes_before_the_updates() -> None:
    def images(out: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == "tool":
            out.append({"role": "user", "content": "images"})

    assert render(results_end=images)[2:4] == ["tool:42", "user:images"]


def test_a_bridge_goes_between_a_tool_message_and_any_user_message() -> None:
    assert render(bridge="done")[2:5] == ["tool:42", "assistant:done", "user:<system_update>note</system_update>"]


def test_an_update_at_the_end_and_a_turn_rendered_as_none() -> None:
    turns = [UserMessage(content="hi"), SystemMessage(content="last")]
    messages = chat_messages(
        turns,
        user=lambda message: None,
        assistant=lambda message: None,
        tool_result=lambda message: {"role": "tool"},
    )
    assert messages == [{"role": "user", "content": "<system_update>last</system_update>"}]
