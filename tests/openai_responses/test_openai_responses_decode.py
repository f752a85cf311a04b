"""The Responses decoder event by event: slots, authoritative final payloads, terminals, usage, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from normalize import MessageBuilder, Model, ModelCost, TextContent, ThinkingContent, ToolCall, validate_events
from streamfns.openai_responses.request import CUSTOM_TOOL_CALL
from tests.adapters import OPENAI_RESPONSES as RESPONSES
from tests.openai_responses._responses import decode

pytestmark = pytest.mark.parallel

RESPONSE_ID = "resp_test"


def created(response_id: str = RESPONSE_ID) -> dict[str, Any]:
    return {"type": "response.created", "response": {"id": response_id, "status": "in_progress", "output": []}}


def completed(output: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    response = {"id": RESPONSE_ID, "status": "completed", "output": output or [], **fields}
    return {"type": "response.completed", "response": response}


def added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def message_item(text: str = "", item_id: str = "msg_1", phase: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "message", "id": item_id, "role": "assistant", "content": []}
    if text:
        item["content"] = [{"type": "output_text", "text": text, "annotations": []}]
    if phase:
        item["phase"] = phase
    return item


def text_delta(index: int, delta: str, item_id: str = "msg_1") -> dict[str, Any]:
    return {"type": "response.output_text.delta", "output_index": index, "item_id": item_id, "delta": delta}


def call_item(arguments: str = "", item_id: str = "fc_1", call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": "lookup", "arguments": arguments}


def args_delta(index: int, delta: str) -> dict[str, Any]:
    return {"type": "response.function_call_arguments.delta", "output_index": index, "delta": delta}


def args_done(index: int, arguments: str) -> dict[str, Any]:
    return {"type": "response.function_call_arguments.done", "output_index": index, "arguments": arguments}


def reasoning_item(summary: list[str] | None = None, item_id: str = "rs_1", **fields: Any) -> dict[str, Any]:
    parts = [{"type": "summary_text", "text": text} for text in summary or []]
    return {"type": "reasoning", "id": item_id, "summary": parts, **fields}


def summary_delta(index: int, part: int, delta: str) -> dict[str, Any]:
    return {
        "type": "response.reasoning_summary_text.delta",
        "output_index": index,
        "summary_index": part,
        "delta": delta,
    }


def run(*events: dict[str, Any] | bytes) -> MessageBuilder:
    builder = decode(events)
    assert validate_events(builder.events) == []
    return builder


def text_at(builder: MessageBuilder, index: int) -> str:
    block = builder.message.content[index]
    assert isinstance(block, TextContent)
    return block.text


def thinking_at(builder: MessageBuilder, index: int) -> str:
    block = builder.message.content[index]
    assert isinstance(block, ThinkingContent)
    return block.thinking


def arguments_at(builder: MessageBuilder, index: int) -> dict[str, Any]:
    block = builder.message.content[index]
    assert isinstance(block, ToolCall)
    return block.arguments


def terminal_type(builder: MessageBuilder) -> str:
    return builder.events[-1].type


# -- text --------------------------------------------------------------------------------------------


def test_text_streams_and_ends_with_the_items_id_and_phase_as_signature() -> None:
    builder = run(
        created(),
        added(0, message_item(phase="final_answer")),
        text_delta(0, "Hel"),
        text_delta(0, "lo"),
        done(0, message_item("Hello", phase="final_answer")),
        completed(),
    )
    message = builder.message
    assert message.stop_reason == "stop"
    assert message.response_id == RESPONSE_ID
    block = message.content[0]
    assert isinstance(block, TextContent)
    assert block.text == "Hello"
    assert json.loads(block.text_signature or "") == {"v": 1, "id": "msg_1", "phase": "final_answer"}
    assert [e.type for e in builder.events][1:-1] == ["text_start", "text_delta", "text_delta", "text_end"]


def test_final_text_that_extends_what_streamed_is_sent_as_the_missing_suffix() -> None:
    builder = run(added(0, message_item()), text_delta(0, "Hel"), done(0, message_item("Hello world")), completed())
    deltas = [getattr(e, "delta", None) for e in builder.events if e.type == "text_delta"]
    assert deltas == ["Hel", "lo world"]


def test_text_only_in_the_final_item_is_sent_whole() -> None:
    builder = run(added(0, message_item()), done(0, message_item("All at once")), completed())
    deltas = [getattr(e, "delta", None) for e in builder.events if e.type == "text_delta"]
    assert deltas == ["All at once"]


def test_final_text_that_contradicts_what_streamed_is_a_protocol_error() -> None:
    builder = run(added(0, message_item()), text_delta(0, "Hello wrld"), done(0, message_item("Hello world")))
    assert terminal_type(builder) == "error"
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"
    assert builder.message.content[0] == TextContent(text="Hello wrld")


def test_a_refusal_keeps_its_text_and_ends_as_a_refusal_error() -> None:
    refusal = {"type": "message", "id": "msg_1", "content": [{"type": "refusal", "refusal": "I can't help."}]}
    builder = run(
        added(0, message_item()),
        {"type": "response.refusal.delta", "output_index": 0, "delta": "I can't"},
        {"type": "response.refusal.delta", "output_index": 0, "delta": " help."},
        done(0, refusal),
        completed([refusal]),
    )
    message = builder.message
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_info.kind == "refusal"
    assert message.error_message == "I can't help."
    assert message.content[0] == TextContent(text="I can't help.", text_signature='{"v":1,"id":"msg_1"}')


def test_deltas_after_an_item_ended_are_ignored() -> None:
    builder = run(
        added(0, message_item()),
        text_delta(0, "Hi"),
        done(0, message_item("Hi")),
        text_delta(0, " late"),
        completed(),
    )
    assert terminal_type(builder) == "done"
    assert [b.text for b in builder.message.content if isinstance(b, TextContent)] == ["Hi"]


UNANNOUNCED = [
    text_delta(3, "stray"),
    {"type": "response.refusal.delta", "output_index": 3, "delta": "no"},
    args_delta(3, '{"path":"/"}'),
    args_done(3, '{"path":"/"}'),
    summary_delta(3, 0, "thinking"),
    {"type": "response.reasoning_text.delta", "output_index": 3, "content_index": 0, "delta": "raw"},
    {"type": "response.custom_tool_call_input.delta", "output_index": 3, "delta": "ls"},
    {"type": "response.custom_tool_call_input.done", "output_index": 3, "input": "ls"},
]


@pytest.mark.parametrize("stray", UNANNOUNCED, ids=[str(event["type"]) for event in UNANNOUNCED])
def test_a_payload_for_an_item_never_added_ends_as_a_protocol_error_naming_it(stray: dict[str, Any]) -> None:
    # Was: ignored, and response.completed ended `done` with that content missing (silent data loss).
    builder = run(
        created(),
        added(0, message_item()),
        text_delta(0, "Hi"),
        stray,
        done(0, message_item("Hi")),
        completed(usage={"input_tokens": 10, "output_tokens": 5}),
    )
    message = builder.message
    assert terminal_type(builder) == "error"
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.retryable) == ("protocol", False)
    assert f"{stray['type']} for output_index 3" in (message.error_message or "")
    # What was placed, and the usage of the terminal event, are kept.
    assert message.content == [TextContent(text="Hi", text_signature='{"v":1,"id":"msg_1"}')]
    assert (message.usage.input, message.usage.output) == (10, 5)


def test_deltas_for_an_item_that_was_never_announced_at_all_are_counted_and_named_by_item_id() -> None:
    # A proxy that sends bare deltas and the whole output only in response.completed (LiteLLM issue
    # 22102): the text is not silently lost under a `done`.
    item = message_item("The answer is 42.")
    builder = run(
        created(),
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "The answer "},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "is 42."},
        completed([item]),
    )
    message = builder.message
    assert message.error_info is not None
    assert message.error_info.kind == "protocol"
    assert "sent 2 payloads" in (message.error_message or "")
    assert "item_id 'msg_1'" in (message.error_message or "")


def test_a_reasoning_delta_sent_before_its_item_was_added_is_not_silently_dropped() -> None:
    # Reasoning settles leniently (what streamed stands), so without the check the first part would
    # simply be missing from a `done` message.
    builder = run(
        summary_delta(0, 0, "First, "),
        added(0, reasoning_item()),
        summary_delta(0, 0, "think."),
        done(0, reasoning_item(["First, think."])),
        completed(),
    )
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"
    assert "output_index 0" in (builder.message.error_message or "")


def test_the_vendors_own_error_wins_over_an_unplaced_delta() -> None:
    failed = {
        "type": "response.failed",
        "response": {"id": RESPONSE_ID, "status": "failed", "error": {"code": "server_error", "message": "boom"}},
    }
    builder = run(created(), text_delta(5, "stray"), failed)
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "server"


def test_an_unplaced_delta_under_max_output_tokens_is_still_a_protocol_error() -> None:
    incomplete = {
        "type": "response.incomplete",
        "response": {"id": RESPONSE_ID, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
    }
    builder = run(added(0, message_item()), text_delta(0, "Cut"), text_delta(1, "lost"), incomplete)
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"


def test_deltas_without_an_output_index_find_their_slot_by_item_id() -> None:
    builder = run(
        added(0, message_item(item_id="msg_9")),
        {"type": "response.output_text.delta", "item_id": "msg_9", "delta": "by id"},
        done(0, message_item("by id", item_id="msg_9")),
        completed(),
    )
    assert text_at(builder, 0) == "by id"


def test_an_item_that_arrives_only_whole_in_its_done_event_becomes_a_block() -> None:
    builder = run(done(0, message_item("whole")), completed())
    assert builder.message.content == [TextContent(text="whole", text_signature='{"v":1,"id":"msg_1"}')]


def test_an_item_added_twice_is_a_protocol_error() -> None:
    builder = run(added(0, message_item()), added(0, message_item()))
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"


# -- built-in tools ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind",
    ["web_search_call", "file_search_call", "code_interpreter_call", "mcp_call", "image_generation_call", "shell_call"],
)
def test_built_in_tool_items_take_no_block_and_no_index(kind: str) -> None:
    builder = run(
        added(0, message_item(item_id="msg_a")),
        text_delta(0, "Searching.", "msg_a"),
        done(0, message_item("Searching.", item_id="msg_a")),
        added(1, {"type": kind, "id": "tool_1", "status": "in_progress"}),
        {"type": f"response.{kind}.in_progress", "output_index": 1},
        {"type": "response.code_interpreter_call_code.delta", "output_index": 1, "delta": "print(1)"},
        done(1, {"type": kind, "id": "tool_1", "status": "completed"}),
        added(2, message_item(item_id="msg_b")),
        text_delta(2, "Found it.", "msg_b"),
        done(2, message_item("Found it.", item_id="msg_b")),
        completed(),
    )
    texts = [b.text for b in builder.message.content if isinstance(b, TextContent)]
    assert texts == ["Searching.", "Found it."]
    indexes = [getattr(e, "content_index", None) for e in builder.events if e.type.startswith("text_")]
    assert set(indexes) == {0, 1}


# -- reasoning ---------------------------------------------------------------------------------------


def test_summary_parts_are_separated_by_a_blank_line_and_the_item_is_the_signature() -> None:
    item = reasoning_item(["First part.", "Second part."], encrypted_content="gAAAA-secret")
    builder = run(
        added(0, reasoning_item()),
        summary_delta(0, 0, "First "),
        summary_delta(0, 0, "part."),
        {"type": "response.reasoning_summary_part.done", "output_index": 0, "summary_index": 0},
        summary_delta(0, 1, "Second part."),
        done(0, item),
        completed([item]),
    )
    block = builder.message.content[0]
    assert isinstance(block, ThinkingContent)
    assert block.thinking == "First part.\n\nSecond part."
    assert json.loads(block.thinking_signature or "") == item


def test_raw_reasoning_text_streams_as_thinking() -> None:
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "Hm."}]}
    builder = run(
        added(0, {"type": "reasoning", "id": "rs_1", "summary": []}),
        {"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0, "delta": "Hm."},
        done(0, item),
        completed(),
    )
    assert thinking_at(builder, 0) == "Hm."


def test_reasoning_whose_summary_reads_differently_keeps_what_streamed() -> None:
    builder = run(
        added(0, reasoning_item()),
        summary_delta(0, 0, "streamed"),
        done(0, reasoning_item(["joined differently"])),
        completed(),
    )
    assert builder.message.stop_reason == "stop"
    assert thinking_at(builder, 0) == "streamed"


def test_encrypted_content_missing_at_item_done_is_taken_from_the_final_response() -> None:
    # Azure: output_item.done lacks encrypted_content; the completed response carries it.
    streamed = reasoning_item(["Plan."])
    final = reasoning_item(["Plan."], encrypted_content="gAAAA-from-the-final-response")
    builder = run(added(0, reasoning_item()), summary_delta(0, 0, "Plan."), done(0, streamed), completed([final]))
    block = builder.message.content[0]
    assert isinstance(block, ThinkingContent)
    assert json.loads(block.thinking_signature or "")["encrypted_content"] == "gAAAA-from-the-final-response"


def test_encrypted_content_at_item_done_is_kept_as_streamed() -> None:
    item = reasoning_item([], encrypted_content="gAAAA-at-done")
    builder = run(
        added(0, reasoning_item()),
        done(0, item),
        completed([reasoning_item([], encrypted_content="gAAAA-different-later")]),
    )
    block = builder.message.content[0]
    assert isinstance(block, ThinkingContent)
    assert json.loads(block.thinking_signature or "")["encrypted_content"] == "gAAAA-at-done"


# -- function calls ----------------------------------------------------------------------------------


def test_a_function_call_has_the_call_and_item_id_and_strictly_parsed_arguments() -> None:
    builder = run(
        added(0, call_item()),
        args_delta(0, '{"city":'),
        args_delta(0, '"Paris"}'),
        args_done(0, '{"city":"Paris"}'),
        done(0, call_item('{"city":"Paris"}')),
        completed(),
    )
    message = builder.message
    assert message.stop_reason == "toolUse"
    assert message.content == [ToolCall(id="call_1|fc_1", name="lookup", arguments={"city": "Paris"})]


def test_arguments_only_in_the_done_event_are_sent_whole() -> None:
    builder = run(added(0, call_item()), args_done(0, '{"a":1}'), done(0, call_item("{}")), completed())
    deltas = [getattr(e, "delta", None) for e in builder.events if e.type == "toolcall_delta"]
    assert deltas == ['{"a":1}']
    assert arguments_at(builder, 0) == {"a": 1}


def test_done_arguments_that_extend_the_deltas_add_only_the_missing_suffix() -> None:
    builder = run(added(0, call_item()), args_delta(0, '{"a":'), args_done(0, '{"a":1}'), done(0, call_item()))
    deltas = [getattr(e, "delta", None) for e in builder.events if e.type == "toolcall_delta"]
    assert deltas == ['{"a":', "1}"]


def test_done_arguments_equal_as_json_but_spaced_differently_keep_the_deltas() -> None:
    builder = run(added(0, call_item()), args_delta(0, '{"a": 1}'), args_done(0, '{"a":1}'), completed())
    assert builder.message.stop_reason == "toolUse"
    assert arguments_at(builder, 0) == {"a": 1}


def test_done_arguments_that_contradict_the_deltas_are_a_protocol_error() -> None:
    builder = run(added(0, call_item()), args_delta(0, '{"a":1}'), args_done(0, '{"a":2}'))
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"


def test_arguments_in_the_added_item_count_as_streamed() -> None:
    builder = run(added(0, call_item('{"a":')), args_done(0, '{"a":true}'), completed())
    assert arguments_at(builder, 0) == {"a": True}


def test_a_call_whose_arguments_never_arrived_is_truncated_never_run_with_empty_arguments() -> None:
    # output_item.added, then straight to response.completed: no delta, no .done, no output_item.done
    # (a proxy lost them). Was: done/toolUse with {} — the call would run.
    builder = run(
        created(),
        added(0, message_item()),
        text_delta(0, "Deleting."),
        done(0, message_item("Deleting.")),
        added(1, {**call_item(), "name": "delete_files"}),
        completed(usage={"input_tokens": 10, "output_tokens": 5}),
    )
    message = builder.message
    assert terminal_type(builder) == "error"
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.retryable) == ("truncated", True)
    assert "'delete_files'" in (message.error_message or "")
    assert "output item 1" in (message.error_message or "")
    assert [e.type for e in builder.events].count("toolcall_end") == 0
    assert (message.usage.input, message.usage.output) == (10, 5)


def _without(item: dict[str, Any], key: str) -> dict[str, Any]:
    return {name: value for name, value in item.items() if name != key}


@pytest.mark.parametrize(
    ("events", "kind"),
    [
        ([added(0, call_item()), done(0, call_item(""))], "truncated"),
        ([added(0, call_item()), done(0, _without(call_item(), "arguments"))], "truncated"),
        ([added(0, call_item()), args_done(0, ""), done(0, call_item(""))], "truncated"),
        ([done(0, _without(call_item(), "arguments"))], "truncated"),  # an item that arrives only whole
        ([added(0, call_item()), done(0, {**call_item(), "arguments": [1, 2]})], "protocol"),
        ([added(0, call_item()), done(0, {**call_item(), "arguments": 5})], "protocol"),
    ],
    ids=["empty-at-done", "absent-at-done", "empty-final-then-done", "whole-without", "list", "number"],
)
def test_a_call_that_ends_without_arguments_never_runs_with_empty_ones(events: list[dict[str, Any]], kind: str) -> None:
    builder = run(*events, completed())
    message = builder.message
    assert terminal_type(builder) == "error", message.content
    assert message.error_info is not None
    assert message.error_info.kind == kind, message.error_message
    assert "toolcall_end" not in [event.type for event in builder.events]


def test_arguments_sent_as_an_object_are_kept_not_replaced_by_empty_ones() -> None:
    builder = run(added(0, call_item()), done(0, {**call_item(), "arguments": {"a": 1}}), completed())
    assert builder.message.stop_reason == "toolUse"
    assert arguments_at(builder, 0) == {"a": 1}


@pytest.mark.parametrize(
    "ending",
    [
        [args_done(0, "{}")],  # the final arguments, without output_item.done
        [done(0, call_item("{}"))],  # the item ended, its arguments say {}
        [args_delta(0, "{}")],  # the arguments streamed (complete JSON)
    ],
    ids=["arguments-done", "item-done", "streamed"],
)
def test_a_call_without_parameters_still_runs_once_its_arguments_arrived(ending: list[dict[str, Any]]) -> None:
    builder = run(added(0, call_item()), *ending, completed())
    assert builder.message.stop_reason == "toolUse"
    assert arguments_at(builder, 0) == {}


def test_a_call_without_arguments_under_max_output_tokens_is_length_and_never_runs() -> None:
    incomplete = {
        "type": "response.incomplete",
        "response": {"id": RESPONSE_ID, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
    }
    builder = run(added(0, call_item()), incomplete)
    assert builder.message.stop_reason == "length"


@pytest.mark.parametrize(
    "events",
    [
        [added(0, {**call_item(), "name": ""}), args_done(0, "{}"), done(0, {**call_item("{}"), "name": ""})],
        [added(0, {"type": "custom_tool_call", "id": "ct_1", "call_id": "call_c", "input": ""})],
        [done(0, {**call_item("{}"), "name": None})],  # an item that arrives only whole
    ],
    ids=["function_call", "custom_tool_call", "whole-in-done"],
)
def test_a_tool_call_without_a_name_is_a_protocol_error(events: list[dict[str, Any]]) -> None:
    # Was: done/toolUse ('', {}) — a call no tool can answer, handed out as executable.
    builder = run(*events, completed())
    message = builder.message
    assert terminal_type(builder) == "error"
    assert message.error_info is not None
    assert message.error_info.kind == "protocol"
    assert "without a name" in (message.error_message or "")
    assert not any(isinstance(block, ToolCall) for block in message.content)


def test_incomplete_arguments_at_completed_are_truncated_not_salvaged() -> None:
    builder = run(added(0, call_item()), args_delta(0, '{"path": "/etc/pa'), completed())
    assert terminal_type(builder) == "error"
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "truncated"


def test_a_custom_tool_call_wraps_its_raw_input() -> None:
    item = {"type": "custom_tool_call", "id": "ct_1", "call_id": "call_c", "name": "sql", "input": ""}
    builder = run(
        added(0, item),
        {"type": "response.custom_tool_call_input.delta", "output_index": 0, "delta": 'SELECT "a"\n'},
        {"type": "response.custom_tool_call_input.delta", "output_index": 0, "delta": "FROM t"},
        done(0, {**item, "input": 'SELECT "a"\nFROM t WHERE x'}),
        completed(),
    )
    assert builder.message.stop_reason == "toolUse"
    call = builder.message.content[0]
    assert call == ToolCall(
        id="call_c|ct_1",
        name="sql",
        arguments={"input": 'SELECT "a"\nFROM t WHERE x'},
        thought_signature=CUSTOM_TOOL_CALL,  # replayed to the same model as a custom call
    )


def test_parallel_calls_are_separate_blocks_and_their_deltas_may_interleave() -> None:
    builder = run(
        added(0, call_item(item_id="fc_a", call_id="call_a")),
        added(1, call_item(item_id="fc_b", call_id="call_b")),
        args_delta(1, '{"n":'),
        args_delta(0, '{"n":'),
        args_delta(0, "1}"),
        args_delta(1, "2}"),
        done(1, call_item('{"n":2}', item_id="fc_b", call_id="call_b")),
        done(0, call_item('{"n":1}', item_id="fc_a", call_id="call_a")),
        completed(),
    )
    calls = [(b.id, b.arguments) for b in builder.message.content if isinstance(b, ToolCall)]
    assert calls == [("call_a|fc_a", {"n": 1}), ("call_b|fc_b", {"n": 2})]


# -- terminals ----------------------------------------------------------------------------------------


def test_incomplete_for_max_output_tokens_is_length() -> None:
    incomplete = {
        "type": "response.incomplete",
        "response": {"id": RESPONSE_ID, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
    }
    builder = run(added(0, message_item()), text_delta(0, "Cut"), incomplete)
    assert builder.message.stop_reason == "length"
    assert builder.message.raw_stop_reason == "incomplete.max_output_tokens"


@pytest.mark.parametrize(
    ("reason", "kind", "retryable"), [("content_filter", "content_filter", False), (None, "server", False)]
)
def test_incomplete_for_another_reason_is_an_error_of_that_kind(reason: str | None, kind: str, retryable: bool) -> None:
    details = {"reason": reason} if reason else None
    incomplete = {
        "type": "response.incomplete",
        "response": {"id": RESPONSE_ID, "status": "incomplete", "incomplete_details": details},
    }
    builder = run(added(0, message_item()), text_delta(0, "Some text"), incomplete)
    info = builder.message.error_info
    assert info is not None
    assert (info.kind, info.retryable) == (kind, retryable)
    assert text_at(builder, 0) == "Some text"


@pytest.mark.parametrize(
    ("code", "kind", "retryable"),
    [
        ("rate_limit_exceeded", "rate_limit", True),
        ("server_error", "server", True),
        ("context_length_exceeded", "context_overflow", False),
        ("invalid_prompt", "content_filter", False),
        ("vector_store_timeout", "timeout", True),
        ("insufficient_quota", "auth", False),
        ("some_new_code", "server", True),
    ],
)
def test_a_failed_response_is_an_error_whose_kind_comes_from_its_code(code: str, kind: str, retryable: bool) -> None:
    failed = {
        "type": "response.failed",
        "response": {
            "id": RESPONSE_ID,
            "status": "failed",
            "error": {"code": code, "message": "Please try again in 1.5s."},
            "usage": {"input_tokens": 12, "output_tokens": 3},
        },
    }
    builder = run(created(), added(0, message_item()), text_delta(0, "Partial"), failed)
    message = builder.message
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.retryable) == (kind, retryable)
    assert message.error_info.code == code
    assert message.error_info.retry_after_s == 1.5
    assert message.error_info.output_started
    assert message.usage.input == 12  # usage survives the error
    assert text_at(builder, 0) == "Partial"


@pytest.mark.parametrize(
    "event",
    [
        {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": None},
        {"type": "error", "error": {"type": "requests", "code": "rate_limit_exceeded", "message": "Slow down"}},
    ],
)
def test_an_error_event_in_either_shape_is_an_error_with_the_vendors_message(event: dict[str, Any]) -> None:
    builder = run(created(), event)
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "rate_limit"
    assert "Slow down" in (builder.message.error_message or "")


def test_completed_with_a_call_is_tool_use_and_without_one_stop() -> None:
    assert run(added(0, message_item()), done(0, message_item("x")), completed()).message.stop_reason == "stop"
    with_call = run(added(0, call_item()), args_done(0, "{}"), done(0, call_item("{}")), completed())
    assert with_call.message.stop_reason == "toolUse"


def test_no_terminal_is_truncated_and_a_done_marker_is_not_a_terminal() -> None:
    builder = run(created(), added(0, message_item()), text_delta(0, "Hi"), b"[DONE]")
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "truncated"


def test_a_second_response_created_is_truncated() -> None:
    builder = run(created("resp_a"), added(0, message_item()), text_delta(0, "Hi"), created("resp_b"))
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "truncated"
    assert builder.message.response_id == "resp_a"


def test_the_response_id_comes_from_the_first_lifecycle_event_even_without_created() -> None:
    queued = {"type": "response.queued", "response": {"id": "resp_q", "status": "queued"}}
    builder = run(queued, added(0, message_item()), done(0, message_item("x")), completed())
    assert builder.message.response_id == "resp_q"


# -- usage and service tier -----------------------------------------------------------------------------


def _priced() -> Model:
    return RESPONSES.model(cost=ModelCost(input=1.0, output=10.0, cache_read=0.1, cache_write=1.25))


def test_usage_takes_cached_and_written_tokens_out_of_input_and_keeps_reasoning_in_output() -> None:
    usage = {
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 100},
        "output_tokens": 50,
        "output_tokens_details": {"reasoning_tokens": 30},
        "total_tokens": 1050,
    }
    builder = decode(
        [added(0, message_item()), done(0, message_item("x")), completed(usage=usage)], MessageBuilder(_priced())
    )
    got = builder.message.usage
    assert (got.input, got.cache_read, got.cache_write, got.output, got.reasoning) == (300, 600, 100, 50, 30)
    assert got.total_tokens == 1050
    assert got.cost.total == pytest.approx((300 * 1.0 + 600 * 0.1 + 100 * 1.25 + 50 * 10.0) / 1e6)


def test_cache_counts_above_the_input_are_capped_at_it() -> None:
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 5}}
    got = run(added(0, message_item()), done(0, message_item("x")), completed(usage=usage)).message.usage
    assert (got.input, got.cache_read, got.cache_write) == (0, 10, 0)
    assert got.total_tokens == 10


def test_a_reasoning_count_above_output_is_capped_at_output() -> None:
    usage = {"input_tokens": 5, "output_tokens": 4, "output_tokens_details": {"reasoning_tokens": 99}}
    builder = run(added(0, message_item()), done(0, message_item("x")), completed(usage=usage))
    assert builder.message.usage.reasoning == 4


@pytest.mark.parametrize(("tier", "factor"), [("default", 1.0), ("flex", 0.5), ("priority", 2.0), ("scale", 1.0)])
def test_the_service_tier_is_kept_and_prices_the_call(tier: str, factor: float) -> None:
    usage = {"input_tokens": 1000, "output_tokens": 100}
    events = [added(0, message_item()), done(0, message_item("x")), completed(usage=usage, service_tier=tier)]
    builder = decode(events, MessageBuilder(_priced()))
    message = builder.message
    assert message.service_tier == tier
    assert message.usage.cost.total == pytest.approx(factor * (1000 * 1.0 + 100 * 10.0) / 1e6)
    assert validate_events(builder.events) == []
