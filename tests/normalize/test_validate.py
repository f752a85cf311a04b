"""validate_events: each rule G1–G7 flags an invalid sequence and accepts a valid one."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    ErrorInfo,
    StartEvent,
    TextContent,
    TextDeltaEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ToolCall,
    event_to_json,
    validate_events,
)
from tests.normalize._events import error_terminal, text_sequence, tool_sequence


def rules(events: Iterable[AssistantMessageEvent]) -> set[str]:
    return {violation.rule for violation in validate_events(events)}


def test_valid_sequences_pass() -> None:
    events, _ = text_sequence()
    assert validate_events(events) == []
    tool_events, _ = tool_sequence('{"a": 1}', {"a": 1})
    assert validate_events(tool_events) == []


def test_pi_json_form_is_accepted() -> None:
    events, _ = text_sequence()
    as_json = [event_to_json(event, include_partial=True) for event in events]
    assert validate_events(as_json) == []


def test_g1_missing_and_duplicate_start() -> None:
    events, _ = text_sequence()
    assert "G1" in rules(events[1:])
    violations = validate_events([events[0], events[0], *events[1:]])
    assert [(v.rule, v.index) for v in violations] == [("G1", 1)]


def test_g2_no_terminal_and_events_after_terminal() -> None:
    events, message = text_sequence()
    assert rules(events[:-1]) == {"G2"}
    trailing = validate_events([*events, TextDeltaEvent(0, "late", message)])
    assert [(v.rule, v.index) for v in trailing] == [("G2", 5)]
    assert "G2" in rules([*events, events[-1]])


def test_g3_index_gap_wrong_kind_and_unended_block() -> None:
    events, message = text_sequence()
    gap = [events[0], TextStartEvent(1, message), *events[2:]]
    assert "G3" in rules(gap)
    wrong_kind = [*events[:2], ThinkingDeltaEvent(0, "x", message), *events[2:]]
    assert "G3" in rules(wrong_kind)
    never_ended = [events[0], events[1], events[2], events[4]]
    violations = validate_events(never_ended)
    assert any(v.rule == "G3" and "never ended" in v.message for v in violations)


def test_g3_allows_open_blocks_on_error() -> None:
    message = AssistantMessage(content=[TextContent(text="par")])
    events = [StartEvent(message), TextStartEvent(0, message), TextDeltaEvent(0, "par", message)]
    assert validate_events([*events, error_terminal(message)]) == []


def test_g4_deltas_must_rebuild_the_content() -> None:
    events, message = text_sequence("Hello")
    message.content[0] = TextContent(text="Hello world")
    violations = validate_events(events)
    assert {v.rule for v in violations} == {"G4"}
    assert violations[0].index == 4


def test_g5_reason_mismatch_and_missing_error_fields() -> None:
    events, message = text_sequence()
    message.stop_reason = "length"
    assert "G5" in rules(events)
    message.stop_reason = "stop"
    message.error_message = "oops"
    assert "G5" in rules(events)
    bare_error = AssistantMessage(stop_reason="error")
    assert "G5" in rules([StartEvent(bare_error), ErrorEvent("error", bare_error)])
    info_error = AssistantMessage(stop_reason="error", error_message="x", error_info=ErrorInfo.of("server"))
    assert rules([StartEvent(info_error), ErrorEvent("error", info_error)]) == set()


def test_g5_error_kinds_come_from_the_taxonomy_and_match_the_reason() -> None:
    bogus = AssistantMessage(stop_reason="error", error_message="x", error_info=ErrorInfo.of("server"))
    bogus.error_info.kind = "kaput"  # pyright: ignore[reportAttributeAccessIssue, reportOptionalMemberAccess]
    assert "G5" in rules([StartEvent(bogus), ErrorEvent("error", bogus)])
    crossed = AssistantMessage(stop_reason="aborted", error_message="x", error_info=ErrorInfo.of("network"))
    assert "G5" in rules([StartEvent(crossed), ErrorEvent("aborted", crossed)])
    # In pi's JSON form an unknown kind does not even read as an event.
    message: dict[str, object] = {"role": "assistant", "stopReason": "error", "errorMessage": "x"}
    message["errorInfo"] = {"kind": "kaput", "retryable": False}
    as_json: dict[str, object] = {"type": "error", "reason": "error", "error": message}
    with pytest.raises(ValueError, match=r"errorInfo\.kind"):
        validate_events([{"type": "start"}, as_json])


def test_g6_tool_use_needs_a_strictly_parsed_complete_call() -> None:
    salvaged, _ = tool_sequence('{"path": "/tmp/a', {"path": "/tmp/a"})
    assert "G6" in rules(salvaged)
    invented, _ = tool_sequence('{"a": 1}', {"a": 2})
    assert "G6" in rules(invented)
    text_only, message = text_sequence()
    message.stop_reason = "toolUse"
    text_only[-1] = DoneEvent("toolUse", message)
    assert "G6" in rules(text_only)


def test_g6_duplicate_and_empty_ids() -> None:
    events, message = tool_sequence("{}", {})
    first = message.content[0]
    assert isinstance(first, ToolCall)
    first.id = ""
    assert "G6" in rules(events)


def test_g7_usage_contract() -> None:
    events, message = text_sequence()
    message.usage.input = 10
    assert rules(events) == {"G7"}, "total_tokens no longer equals the sum"
    message.usage.recompute_total()
    assert rules(events) == set()
    message.usage.output = -1
    message.usage.recompute_total()
    assert "G7" in rules(events)
