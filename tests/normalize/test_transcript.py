"""transform_messages: every replay rule, cross-provider handoff, and input immutability."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from normalize import (
    IMAGE_OMITTED,
    NO_RESULT_PROVIDED,
    TOOL_IMAGE_OMITTED,
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    StopReason,
    SystemMessage,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    is_same_model,
    sanitize_surrogates,
    transcript_for,
    transform_messages,
)

TARGET = Model(
    id="claude-sonnet-4-5-20250929",
    api="anthropic-messages",
    provider="anthropic",
    input=["text", "image"],
    reasoning=True,
)
TEXT_ONLY = Model(id="text-only", api="openai-completions", provider="local", input=["text"])


def anthropic_like(tool_call_id: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", tool_call_id)[:64]


def from_target(*content: AssistantContent, stop: StopReason = "stop", timestamp: int = 10) -> AssistantMessage:
    return AssistantMessage(
        content=list(content),
        api=TARGET.api,
        provider=TARGET.provider,
        model=TARGET.id,
        stop_reason=stop,
        timestamp=timestamp,
    )


def from_openai(*content: AssistantContent, stop: StopReason = "toolUse") -> AssistantMessage:
    return AssistantMessage(
        content=list(content), api="openai-responses", provider="openai", model="gpt-5", stop_reason=stop, timestamp=20
    )


def result(tool_call_id: str, text: str = "ok", name: str = "lookup") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=tool_call_id, tool_name=name, content=[TextContent(text=text)], timestamp=30)


def dumped(messages: list[Message]) -> list[dict[str, Any]]:
    return [message.to_json() for message in messages]


# ------------------------------------------------------------------------------------- same model


def test_same_model_requires_provider_api_and_id() -> None:
    assert is_same_model(from_target(), TARGET)
    for field in ("provider", "api", "model"):
        other = from_target()
        setattr(other, field, "x")
        assert not is_same_model(other, TARGET)


def test_same_model_history_is_replayed_verbatim() -> None:
    message = from_target(
        ThinkingContent(thinking="plan", thinking_signature="sig"),
        ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="opaque", redacted=True),
        ThinkingContent(thinking="", thinking_signature="encrypted-only"),
        ThinkingContent(thinking="unsigned but same model"),
        TextContent(text="hello", text_signature="msg_1"),
        ToolCall(id="toolu|odd id", name="lookup", arguments={"q": 1}, thought_signature="ts"),
        stop="toolUse",
    )
    out = transform_messages([message, result("toolu|odd id")], TARGET, normalize_tool_call_id=anthropic_like)
    assert out[0] is message  # nothing to change: the same object comes back
    assert isinstance(out[1], ToolResultMessage)
    assert out[1].tool_call_id == "toolu|odd id"  # same-model ids are not normalized


def test_blank_unsigned_thinking_is_dropped_even_for_same_model() -> None:
    message = from_target(ThinkingContent(thinking="  \n"), TextContent(text="answer"))
    (out,) = transform_messages([message], TARGET)
    assert isinstance(out, AssistantMessage)
    assert out.content == [TextContent(text="answer")]


# ---------------------------------------------------------------------------------- another model


def test_foreign_blocks_lose_signatures_and_thinking_becomes_text() -> None:
    message = from_openai(
        ThinkingContent(thinking="step by step", thinking_signature='{"id":"rs_1"}'),
        ThinkingContent(thinking="secret", thinking_signature="blob", redacted=True),
        ThinkingContent(thinking="   ", thinking_signature="sig"),
        TextContent(text="visible", text_signature='{"v":1,"id":"msg_1"}'),
        ToolCall(id="call_1|fc_1", name="lookup", arguments={}, thought_signature="gsig"),
    )
    out = transform_messages([message, result("call_1|fc_1")], TARGET)
    first = out[0]
    assert isinstance(first, AssistantMessage)
    assert first.content == [
        TextContent(text="step by step"),
        TextContent(text="visible"),
        ToolCall(id="call_1|fc_1", name="lookup", arguments={}),  # no normalizer given: id kept
    ]
    assert first.provider == "openai"  # message metadata is kept


def test_cross_provider_handoff_openai_responses_to_anthropic() -> None:
    compound = "call_x|fc_y"
    signature = json.dumps({"type": "reasoning", "id": "rs_abc", "encrypted_content": "gAAAA", "summary": []})
    transcript: list[Message] = [
        SystemMessage(content="You are helpful.", timestamp=0),
        UserMessage(content="Double 21 with the tool.", timestamp=1),
        from_openai(
            ThinkingContent(thinking="I should call double.", thinking_signature=signature),
            ToolCall(id=compound, name="double", arguments={"n": 21}),
        ),
        ToolResultMessage(tool_call_id=compound, tool_name="double", content=[TextContent(text="42")], timestamp=3),
        from_openai(TextContent(text="It is 42."), stop="stop"),
        UserMessage(content="Thanks. Now you, Claude.", timestamp=5),
    ]
    out = transform_messages(transcript, TARGET, normalize_tool_call_id=anthropic_like)

    assert [m.role for m in out] == ["system", "user", "assistant", "toolResult", "assistant", "user"]
    assistant = out[2]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.content == [
        TextContent(text="I should call double."),
        ToolCall(id="call_x_fc_y", name="double", arguments={"n": 21}),
    ]
    tool_result = out[3]
    assert isinstance(tool_result, ToolResultMessage)
    assert tool_result.tool_call_id == "call_x_fc_y"
    assert tool_result.content == [TextContent(text="42")]
    assert out[0] is transcript[0]
    assert out[1] is transcript[1]


def test_long_foreign_ids_are_normalized_consistently() -> None:
    long_id = "call_" + "a" * 100 + "|fc_" + "b" * 300
    out = transform_messages(
        [from_openai(ToolCall(id=long_id, name="lookup")), result(long_id)],
        TARGET,
        normalize_tool_call_id=anthropic_like,
    )
    call = out[0]
    assert isinstance(call, AssistantMessage)
    assert isinstance(call.content[0], ToolCall)
    new_id = call.content[0].id
    assert len(new_id) == 64
    assert re.fullmatch(r"[a-zA-Z0-9_-]+", new_id)
    assert isinstance(out[1], ToolResultMessage)
    assert out[1].tool_call_id == new_id


# ---------------------------------------------------------------------------- failed turns, orphans


@pytest.mark.parametrize("stop", ["error", "aborted"])
def test_failed_turn_is_dropped_with_its_tool_calls(stop: StopReason) -> None:
    failed = from_target(
        ThinkingContent(thinking="half a thought", thinking_signature="sig"),
        ToolCall(id="t_failed", name="lookup", arguments={"partial": True}),
        stop=stop,
    )
    failed.error_message = "boom"
    transcript: list[Message] = [
        UserMessage(content="go", timestamp=1),
        failed,
        UserMessage(content="retry", timestamp=2),
    ]
    out = transform_messages(transcript, TARGET)
    # No synthetic result: the failed turn's calls are never awaited.
    assert out == [transcript[0], transcript[2]]


def test_result_for_a_dropped_call_is_dropped_too() -> None:
    failed = from_target(ToolCall(id="t_failed", name="lookup"), stop="error")
    out = transform_messages([UserMessage(content="go"), failed, result("t_failed")], TARGET)
    assert [m.role for m in out] == ["user"]


def test_orphan_repaired_before_next_user_message_after_real_results() -> None:
    assistant = from_target(
        ToolCall(id="t1", name="lookup"), ToolCall(id="t2", name="fetch"), stop="toolUse", timestamp=77
    )
    user = UserMessage(content="never mind", timestamp=90)
    out = transform_messages([assistant, result("t1"), user], TARGET)
    assert [m.role for m in out] == ["assistant", "toolResult", "toolResult", "user"]
    assert isinstance(out[1], ToolResultMessage)
    assert out[1].tool_call_id == "t1"
    synthetic = out[2]
    assert synthetic == ToolResultMessage(
        tool_call_id="t2",
        tool_name="fetch",
        content=[TextContent(text=NO_RESULT_PROVIDED)],
        is_error=True,
        timestamp=77,
    )
    assert out[3] is user


def test_orphan_repaired_before_next_assistant_message() -> None:
    first = from_target(ToolCall(id="t1", name="lookup"), stop="toolUse")
    second = from_target(TextContent(text="moving on"))
    out = transform_messages([first, second], TARGET)
    assert [m.role for m in out] == ["assistant", "toolResult", "assistant"]
    assert isinstance(out[1], ToolResultMessage)
    assert (out[1].tool_call_id, out[1].is_error) == ("t1", True)


def test_orphan_repaired_at_transcript_end() -> None:
    out = transform_messages([UserMessage(content="go"), from_target(ToolCall(id="t1", name="lookup"))], TARGET)
    assert [m.role for m in out] == ["user", "assistant", "toolResult"]
    assert isinstance(out[-1], ToolResultMessage)
    assert out[-1].content == [TextContent(text=NO_RESULT_PROVIDED)]


def test_orphan_of_a_foreign_call_uses_the_normalized_id() -> None:
    out = transform_messages(
        [from_openai(ToolCall(id="call|fc", name="lookup"))], TARGET, normalize_tool_call_id=anthropic_like
    )
    assert isinstance(out[-1], ToolResultMessage)
    assert out[-1].tool_call_id == "call_fc"


def test_late_duplicate_result_is_dropped() -> None:
    assistant = from_target(ToolCall(id="t1", name="lookup"), stop="toolUse")
    out = transform_messages([assistant, result("t1", "first"), result("t1", "again")], TARGET)
    assert [m.role for m in out] == ["assistant", "toolResult"]


def test_system_messages_pass_through_and_do_not_close_tool_calls() -> None:
    system = SystemMessage(content="update \ud83d", timestamp=5)
    assistant = from_target(ToolCall(id="t1", name="lookup"), stop="toolUse")
    out = transform_messages([assistant, system, result("t1")], TARGET)
    assert out[1] is system
    assert [m.role for m in out] == ["assistant", "system", "toolResult"]


# ----------------------------------------------------------------------------------------- images


def test_images_downgraded_for_text_only_target_runs_collapsed() -> None:
    image = ImageContent(data="AAAA", mime_type="image/png")
    user = UserMessage(
        content=[image, image, TextContent(text="between"), image, TextContent(text="end"), image, image, image]
    )
    (out,) = transform_messages([user], TEXT_ONLY)
    assert isinstance(out, UserMessage)
    assert out.content == [
        TextContent(text=IMAGE_OMITTED),
        TextContent(text="between"),
        TextContent(text=IMAGE_OMITTED),
        TextContent(text="end"),
        TextContent(text=IMAGE_OMITTED),
    ]


def test_tool_result_images_downgraded_with_their_own_placeholder() -> None:
    image = ImageContent(data="AAAA", mime_type="image/png")
    assistant = AssistantMessage(
        content=[ToolCall(id="t1", name="shot")], api="x", provider="y", model="z", stop_reason="toolUse"
    )
    tool_result = ToolResultMessage(
        tool_call_id="t1", tool_name="shot", content=[TextContent(text="see"), image, image]
    )
    out = transform_messages([assistant, tool_result], TEXT_ONLY)
    assert isinstance(out[1], ToolResultMessage)
    assert out[1].content == [TextContent(text="see"), TextContent(text=TOOL_IMAGE_OMITTED)]


def test_images_kept_for_vision_target() -> None:
    user = UserMessage(content=[ImageContent(data="AAAA", mime_type="image/png")])
    assert transform_messages([user], TARGET) == [user]


# ------------------------------------------------------------------------------------- robustness


def test_null_content_is_tolerated() -> None:
    user = UserMessage()
    assistant = from_target()
    tool_result = result("t1")
    for message in (user, assistant, tool_result):
        # Stored transcripts may hold null content, which the annotations do not admit.
        object.__setattr__(message, "content", None)
    call = from_target(ToolCall(id="t1", name="lookup"), stop="toolUse")
    out = transform_messages([user, call, tool_result, assistant], TARGET)
    assert isinstance(out[0], UserMessage)
    assert out[0].content == []
    assert isinstance(out[2], ToolResultMessage)
    assert out[2].content == []
    assert isinstance(out[3], AssistantMessage)
    assert out[3].content == []


def test_surrogates_scrubbed_from_every_outbound_text() -> None:
    lone = json.loads('"bad \\ud83d end"')
    transcript: list[Message] = [
        UserMessage(content=lone),
        UserMessage(content=[TextContent(text=lone)]),
        from_openai(
            ThinkingContent(thinking=lone, thinking_signature="x"),
            TextContent(text=lone),
            ToolCall(id="c1", name="lookup", arguments={"q": lone, "nested": [lone, {"k": lone}]}),
        ),
        ToolResultMessage(tool_call_id="c1", tool_name="lookup", content=[TextContent(text=lone)]),
        from_target(ThinkingContent(thinking=lone, thinking_signature="sig"), TextContent(text=lone)),
    ]
    out = transform_messages(transcript, TARGET)
    serialized = json.dumps(dumped(out), ensure_ascii=False)
    serialized.encode("utf-8")  # would raise UnicodeEncodeError on any surrogate left
    assert "bad  end" in serialized
    assert transcript[0].content == lone  # the input is untouched


def test_sanitize_surrogates() -> None:
    assert sanitize_surrogates("plain") == "plain"
    text = "emoji 😀"
    assert sanitize_surrogates(text) is text
    assert sanitize_surrogates("a\ud83db") == "ab"
    assert sanitize_surrogates("a\ude00b") == "ab"
    assert sanitize_surrogates("\ude00\ud83d") == ""
    # Two surrogate code points that form a valid pair become the character they encode.
    assert sanitize_surrogates("x\ud83d\ude00y") == "x😀y"


_ANY_CHAR = st.characters(max_codepoint=0x1FFFF, exclude_categories=())
_SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())


@given(st.text(alphabet=st.one_of(_ANY_CHAR, _SURROGATE)))
def test_sanitized_text_always_encodes(text: str) -> None:
    clean = sanitize_surrogates(text)
    clean.encode("utf-8")
    # Oracle: a UTF-16 round trip joins valid pairs and, ignoring errors, drops lone surrogates.
    assert clean == text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "ignore")
    if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        assert clean is text


def test_input_is_never_mutated() -> None:
    image = ImageContent(data="AAAA", mime_type="image/png")
    transcript: list[Message] = [
        SystemMessage(content="sys"),
        UserMessage(content=[image, TextContent(text="look \ud83d")]),
        from_openai(
            ThinkingContent(thinking="think", thinking_signature="sig"),
            TextContent(text="t", text_signature="s"),
            ToolCall(id="a|b", name="lookup", arguments={"x": ["\ud83d"]}, thought_signature="ts"),
        ),
        result("a|b"),
        from_target(ToolCall(id="orphan", name="lookup"), stop="toolUse"),
        from_target(TextContent(text="failed"), stop="error"),
    ]
    before = copy.deepcopy(transcript)
    before_json = [m.to_json() for m in transcript]
    out = transform_messages(transcript, TEXT_ONLY, normalize_tool_call_id=anthropic_like)
    assert transcript == before
    assert [m.to_json() for m in transcript] == before_json
    assert dumped(out) != before_json  # it did change things, just not in place


def test_foreign_ids_that_normalize_alike_stay_distinct() -> None:
    prefix = "call_" + "x" * 70
    first, second = f"{prefix}|fc_one", f"{prefix}|fc_two"
    foreign = AssistantMessage(
        content=[ToolCall(id=first, name="a"), ToolCall(id=second, name="b")],
        api="openai-responses",
        provider="openai",
        model="gpt-5",
        stop_reason="toolUse",
    )
    messages: list[Message] = [
        UserMessage(content="go"),
        foreign,
        ToolResultMessage(tool_call_id=first, tool_name="a", content=[TextContent(text="1")]),
        ToolResultMessage(tool_call_id=second, tool_name="b", content=[TextContent(text="2")]),
    ]
    target = Model(id="claude-x", api="anthropic-messages", provider="anthropic")
    out = transform_messages(messages, target, normalize_tool_call_id=lambda i: re.sub(r"[^a-zA-Z0-9_-]", "_", i)[:64])
    reply = out[1]
    assert isinstance(reply, AssistantMessage)
    ids = [block.id for block in reply.content if isinstance(block, ToolCall)]
    assert len(set(ids)) == 2
    assert all(len(i) <= 64 for i in ids)
    results = [m.tool_call_id for m in out if isinstance(m, ToolResultMessage)]
    assert results == ids, "each result still answers its own call"


def test_split_transcript_and_system_update_text() -> None:
    from normalize import SystemMessage, Tool, ToolRef, split_transcript, system_update_text

    messages: list[Message] = [
        SystemMessage(content="Be brief.", tools_added=[Tool(name="a"), Tool(name="b")]),
        SystemMessage(sections={"style": "Use \ud83d metric units."}),
        UserMessage(content="hi"),
        SystemMessage(content="  ", sections={"late": "Now answer in French."}, tools_removed=[ToolRef(name="a")]),
        UserMessage(content="again"),
    ]
    split = split_transcript(messages)
    assert split.prompt == "Be brief.\n\nUse  metric units."
    assert [tool.name for tool in split.tools] == ["b"], "the tool set in force at the end"
    assert split.turns == messages[2:]
    late = messages[3]
    assert isinstance(late, SystemMessage)
    assert system_update_text(late) == "Now answer in French."
    assert split_transcript([]).turns == []


def test_a_tool_call_id_reused_by_a_later_turn_is_renamed_with_its_results() -> None:
    # Two turns from a server that sends no response id carry the same generated id.
    first = from_target(ToolCall(id="call_gen_1", name="lookup"), stop="toolUse")
    second = from_target(ToolCall(id="call_gen_1", name="lookup"), ToolCall(id="t2", name="lookup"), stop="toolUse")
    out = transform_messages(
        [first, result("call_gen_1", "one"), second, result("call_gen_1", "two"), result("t2", "three")], TARGET
    )
    assert [m.role for m in out] == ["assistant", "toolResult", "assistant", "toolResult", "toolResult"]
    calls = [[b.id for b in m.content if isinstance(b, ToolCall)] for m in out if isinstance(m, AssistantMessage)]
    assert calls == [["call_gen_1"], ["call_gen_1_2", "t2"]]
    answers = [(m.tool_call_id, m.content) for m in out if isinstance(m, ToolResultMessage)]
    assert answers == [
        ("call_gen_1", [TextContent(text="one")]),
        ("call_gen_1_2", [TextContent(text="two")]),
        ("t2", [TextContent(text="three")]),
    ]
    assert second.content[0] == ToolCall(id="call_gen_1", name="lookup"), "the input is not mutated"


def test_a_renamed_id_goes_through_the_targets_normalizer_and_stays_unique() -> None:
    long_id = "x" * 80
    turns: list[Message] = []
    for _ in range(3):
        turns += [from_openai(ToolCall(id=long_id, name="lookup")), result(long_id)]
    out = transform_messages(turns, TARGET, normalize_tool_call_id=anthropic_like)
    ids = [b.id for m in out if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, ToolCall)]
    answered = [m.tool_call_id for m in out if isinstance(m, ToolResultMessage)]
    assert len(set(ids)) == 3
    assert all(len(i) <= 64 for i in ids)
    assert answered == ids


def test_ids_of_the_call_and_item_form_are_unique_by_their_call_part() -> None:
    # The Responses adapter sends only the part before "|" as call_id.
    first = from_target(ToolCall(id="call_0|fc_a", name="lookup"), stop="toolUse")
    second = from_target(ToolCall(id="call_0|fc_b", name="lookup"), stop="toolUse")
    out = transform_messages([first, result("call_0|fc_a", "one"), second, result("call_0|fc_b", "two")], TARGET)
    calls = [b.id for m in out if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, ToolCall)]
    assert calls == ["call_0|fc_a", "call_0_2"], "a renamed call keeps no item id: it was another call's"
    assert [m.tool_call_id for m in out if isinstance(m, ToolResultMessage)] == calls


def test_an_id_repeated_within_one_turn_gets_its_results_in_order() -> None:
    twice = from_target(
        ToolCall(id="c", name="lookup", arguments={"n": 1}),
        ToolCall(id="c", name="lookup", arguments={"n": 2}),
        stop="toolUse",
    )
    out = transform_messages([twice, result("c", "one"), result("c", "two")], TARGET)
    assistant = out[0]
    assert isinstance(assistant, AssistantMessage)
    calls = [(b.id, b.arguments["n"]) for b in assistant.content if isinstance(b, ToolCall)]
    assert calls == [("c", 1), ("c_2", 2)]
    answers = [(m.tool_call_id, m.content) for m in out if isinstance(m, ToolResultMessage)]
    assert answers == [("c", [TextContent(text="one")]), ("c_2", [TextContent(text="two")])]


def test_transcript_for_is_what_builders_render() -> None:
    context = Context(
        system_prompt="Be brief.",
        tools=[Tool(name="lookup", description="d", parameters={"type": "object"})],
        messages=[UserMessage(content="hi"), from_openai(ToolCall(id="call|fc", name="lookup"))],
    )
    split = transcript_for(TARGET, context, normalize_tool_call_id=anthropic_like)
    assert (split.prompt, [tool.name for tool in split.tools]) == ("Be brief.", ["lookup"])
    assert [m.role for m in split.turns] == ["user", "assistant", "toolResult"]  # an orphan call is answered
    assistant = split.turns[1]
    assert isinstance(assistant, AssistantMessage)
    assert [b.id for b in assistant.content if isinstance(b, ToolCall)] == ["call_fc"]
