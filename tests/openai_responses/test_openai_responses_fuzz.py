"""Hypothesis against the Responses decoder: arbitrary event dicts and arbitrary bytes never make it
raise (other than the failures it reports), and every stream ends in exactly one terminal, grammar-clean."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from normalize import AssistantMessageEvent, validate_events
from tests.adapters import OPENAI_RESPONSES as RESPONSES
from tests.openai_responses._responses import decode

pytestmark = pytest.mark.parallel

EVENT_TYPES = [
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.output_item.added",
    "response.output_item.done",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_part.added",
    "response.reasoning_text.delta",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.content_part.added",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
    "something.new",
]
ITEM_TYPES = ["message", "reasoning", "function_call", "custom_tool_call", "web_search_call", "compaction", ""]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=5,
)
indexes = st.integers(-1, 3) | st.sampled_from([None, "0", 10**15])
counts = st.integers(-5, 2**64) | json_values
arguments = (
    st.sampled_from(["", "{", '{"a":', '{"a":1}', '{"a": 1}', "[]", "null", '{"a":"\u0000\ud800"}']) | json_values
)
texts = st.text(max_size=6) | json_values

part_types: st.SearchStrategy[str] = st.sampled_from(["output_text", "refusal", "summary_text", "reasoning_text"])
part: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {"type": part_types}, optional={"text": texts, "refusal": texts}
)
parts = st.lists(part, max_size=3)
items = st.fixed_dictionaries(
    {"type": st.sampled_from(ITEM_TYPES)},
    optional={
        "id": st.sampled_from(["msg_1", "rs_1", "fc_1", ""]) | json_values,
        "call_id": st.sampled_from(["call_1", "call_2", ""]) | json_values,
        "name": texts,
        "arguments": arguments,
        "input": texts,
        "content": parts | json_values,
        "summary": parts | json_values,
        "encrypted_content": st.sampled_from(["gAAAA", ""]) | json_values,
        "phase": st.sampled_from(["commentary", "final_answer"]) | json_values,
    },
)
usages = st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": counts,
        "output_tokens": counts,
        "input_tokens_details": st.fixed_dictionaries(
            {}, optional={"cached_tokens": counts, "cache_write_tokens": counts}
        ),
        "output_tokens_details": st.fixed_dictionaries({}, optional={"reasoning_tokens": counts}),
    },
)
responses = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["resp_1", "resp_2"]) | json_values,
        "status": st.sampled_from(["completed", "incomplete", "failed", "cancelled", "in_progress"]) | json_values,
        "usage": usages | json_values,
        "output": st.lists(items, max_size=2) | json_values,
        "incomplete_details": st.fixed_dictionaries({"reason": st.sampled_from(["max_output_tokens", "x"]) | texts}),
        "error": st.fixed_dictionaries({}, optional={"code": texts, "message": texts}) | json_values,
        "service_tier": st.sampled_from(["flex", "priority", "default"]) | json_values,
    },
)
events = st.fixed_dictionaries(
    {"type": st.sampled_from(EVENT_TYPES)},
    optional={
        "output_index": indexes,
        "item_id": st.sampled_from(["msg_1", "rs_1", "fc_1"]) | json_values,
        "item": items | json_values,
        "delta": texts,
        "arguments": arguments,
        "input": texts,
        "summary_index": indexes,
        "content_index": indexes,
        "response": responses | json_values,
        "code": texts,
        "message": texts,
        "error": json_values,
    },
)
TERMINAL = {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}}


def assert_one_clean_terminal(stream: list[AssistantMessageEvent]) -> None:
    assert [e.type for e in stream].count("start") == 1
    assert sum(e.type in ("done", "error") for e in stream) == 1
    assert stream[-1].type in ("done", "error")
    assert validate_events(stream) == []


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(events, max_size=14), st.booleans())
def test_arbitrary_events_never_raise_and_end_once_grammar_clean(sequence: list[dict[str, Any]], end: bool) -> None:
    builder = decode([*sequence, TERMINAL] if end else sequence)  # raises on anything but StreamFailure
    assert_one_clean_terminal(builder.events)


def _run_bytes(body: bytes) -> list[AssistantMessageEvent]:
    """The events of the adapter on a 200 response whose body is ``body`` (one network read)."""
    events, _ = asyncio.run(RESPONSES.run_reads([body], target=RESPONSES.model(base_url="http://fuzz.invalid/v1")))
    return events


framed = st.lists(events, max_size=8).map(
    lambda evs: b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in evs)
)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=300), framed, st.tuples(framed, st.binary(max_size=40)).map(b"".join)))
def test_arbitrary_bytes_never_raise_and_end_once_grammar_clean(body: bytes) -> None:
    assert_one_clean_terminal(_run_bytes(body))
