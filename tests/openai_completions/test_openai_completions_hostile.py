"""Hostile Chat Completions streams from the second adversarial pass: non-JSON numbers in tool
arguments, a finish reason that tries to overwrite a failure, and a legacy call whose slot an indexed
call tries to share."""

from __future__ import annotations

import json
from typing import Any

import pytest

from normalize import validate_events
from tests.adapters import OPENAI_COMPLETIONS, calls, texts

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return f"data: {json.dumps({'id': 'chatcmpl-1', 'choices': [choice], **extra})}\n\n".encode()


def _call(index: int, arguments: str, *, name: str = "f", call_id: str = "call_1") -> dict[str, Any]:
    return {
        "tool_calls": [
            {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ]
    }


USAGE = b'data: {"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n'
DONE = b"data: [DONE]\n\n"


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
async def test_a_tool_call_whose_arguments_hold_a_non_json_number_never_runs(number: str) -> None:
    events, result = await OPENAI_COMPLETIONS.run_reads(
        [_chunk(_call(0, '{"a": ')), _chunk(_call(0, number + "}")), _chunk(finish="tool_calls"), USAGE, DONE]
    )
    assert validate_events(events) == []
    assert result.stop_reason == "error"
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert "ended with invalid arguments" in (result.error_message or "")
    # What the message keeps is a preview that holds no non-JSON number: replaying it stays valid JSON.
    json.dumps([call.arguments for call in calls(result)], allow_nan=False)


@pytest.mark.parametrize(
    ("first", "later"),
    [
        ("content_filter", "stop"),  # a filter, then a bare stop
        ("error", None),  # an upstream failure, then a usage chunk that says stop
    ],
)
async def test_the_first_failure_wins_over_a_later_stop(first: str, later: str | None) -> None:
    reads = [_chunk({"content": "partial"}), _chunk(finish=first)]
    if later is None:
        reads.append(_chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1}))
    else:
        reads.append(_chunk(finish=later))
    events, result = await OPENAI_COMPLETIONS.run_reads([*reads, USAGE, DONE])
    assert validate_events(events) == []
    assert result.stop_reason == "error"
    assert result.raw_stop_reason == first
    assert result.error_info is not None
    assert result.error_info.kind == {"content_filter": "content_filter", "error": "server"}[first]
    assert texts(result) == "partial"


async def test_content_after_a_failure_is_kept_and_the_failure_still_ends_the_message() -> None:
    reads = [_chunk({"content": "a"}), _chunk(finish="content_filter"), _chunk({"content": "b"}), USAGE]
    events, result = await OPENAI_COMPLETIONS.run_reads(reads)  # EOF without [DONE]
    assert validate_events(events) == []
    assert (result.stop_reason, texts(result)) == ("error", "ab")
    assert result.error_info is not None
    assert result.error_info.kind == "content_filter"


async def test_a_legacy_function_call_and_an_indexed_call_at_minus_one_keep_their_own_slots() -> None:
    legacy = {"function_call": {"name": "old_style", "arguments": '{"x": 1}'}}
    indexed = _call(-1, '{"y": 2}', name="new_style", call_id="call_9")
    events, result = await OPENAI_COMPLETIONS.run_reads(
        [_chunk(legacy), _chunk(indexed), _chunk(finish="tool_calls"), USAGE, DONE]
    )
    assert validate_events(events) == []
    assert result.stop_reason == "toolUse"
    assert [(call.name, call.arguments) for call in calls(result)] == [("old_style", {"x": 1}), ("new_style", {"y": 2})]
