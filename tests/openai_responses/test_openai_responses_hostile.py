"""Hostile Responses streams from the second adversarial pass: deltas aimed at an item of another kind,
and non-JSON numbers in function-call arguments."""

from __future__ import annotations

import json
from typing import Any

import pytest

from normalize import validate_events
from tests.adapters import OPENAI_RESPONSES

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout


def _event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


CREATED = _event("response.created", response={"id": "resp_1", "status": "in_progress"})
MESSAGE = _event("response.output_item.added", output_index=0, item={"type": "message", "id": "msg_1", "content": []})
CALL = _event(
    "response.output_item.added",
    output_index=0,
    item={"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""},
)
COMPLETED = _event("response.completed", response={"id": "resp_1", "status": "completed", "output": []})


@pytest.mark.parametrize(
    ("added", "aimed", "what"),
    [
        (CALL, _event("response.output_text.delta", output_index=0, delta="lost?"), "a function call"),
        (MESSAGE, _event("response.function_call_arguments.delta", output_index=0, delta='{"a":1}'), "a message"),
        (CALL, _event("response.reasoning_summary_text.delta", output_index=0, delta="x"), "a function call"),
        (MESSAGE, _event("response.function_call_arguments.done", output_index=0, arguments="{}"), "a message"),
    ],
)
async def test_a_delta_aimed_at_an_item_of_another_kind_is_a_protocol_error(
    added: bytes, aimed: bytes, what: str
) -> None:
    events, result = await OPENAI_RESPONSES.run_reads([CREATED, added, aimed, COMPLETED])
    assert validate_events(events) == []
    assert result.stop_reason == "error"
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert f"for output item 0, which is {what}" in (result.error_message or "")


async def test_a_late_delta_for_an_ended_item_is_still_ignored() -> None:
    done = _event(
        "response.output_item.done",
        output_index=0,
        item={"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": "hi"}]},
    )
    late = _event("response.output_text.delta", output_index=0, delta=" late")
    events, result = await OPENAI_RESPONSES.run_reads([CREATED, MESSAGE, done, late, COMPLETED])
    assert validate_events(events) == []
    assert result.stop_reason == "stop"
    assert [block.text for block in result.content if block.type == "text"] == ["hi"]


@pytest.mark.parametrize("number", ["NaN", "Infinity", "1e999"])
async def test_arguments_with_a_non_json_number_never_make_an_executable_call(number: str) -> None:
    delta = _event("response.function_call_arguments.delta", output_index=0, delta='{"a": ' + number + "}")
    done = _event(
        "response.output_item.done",
        output_index=0,
        item={"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""},
    )
    events, result = await OPENAI_RESPONSES.run_reads([CREATED, CALL, delta, done, COMPLETED])
    assert validate_events(events) == []
    assert result.stop_reason == "error"
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
