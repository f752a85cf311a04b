"""A hostile NDJSON server: every stream ends with exactly one terminal, and no tool call is invented.

Each body is sent as a real server would (through an HTTP client, in the reads given); the assertions
name the exact stop reason and error kind."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normalize import AssistantMessage, AssistantMessageEvent, ToolCall, validate_events
from tests.adapters import OLLAMA, calls, texts

pytestmark = pytest.mark.parallel  # clock-blind: in-process transport, no sleep or timeout

NDJSON = "application/x-ndjson"
STAMP = "2025-01-01T00:00:00Z"


def line(content: str = "", *, done: bool = False, **fields: Any) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    message.update(fields.pop("message", {}))
    return json.dumps({"model": "m", "created_at": STAMP, "message": message, "done": done, **fields}).encode() + b"\n"


def done(reason: object = "stop", **fields: Any) -> bytes:
    extra: dict[str, Any] = {"prompt_eval_count": 3, "eval_count": 2, **fields}
    if reason is not None:
        extra["done_reason"] = reason
    return line(done=True, **extra)


def call(name: str, arguments: object) -> dict[str, Any]:
    return {"tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


async def run(*reads: bytes) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    events, message = await OLLAMA.run_reads(list(reads), content_type=NDJSON)
    assert validate_events(events) == []  # one start, one terminal, a well-formed grammar
    return events, message


def kind(message: AssistantMessage) -> str | None:
    return message.error_info.kind if message.error_info else None


async def test_a_50_mb_line_is_a_protocol_error() -> None:
    _, message = await run(line("hi"), b'{"pad": "' + b"x" * (50 * 1024 * 1024) + b'"}\n', done())
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert texts(message) == "hi"  # what came before is kept


async def test_a_json_array_line_is_a_protocol_error() -> None:
    _, message = await run(line("a"), b'[{"done": true}]\n', done())
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert message.error_message is not None
    assert "non-object" in message.error_message


@pytest.mark.parametrize("field", ["prompt_eval_count", "eval_count"])
async def test_a_negative_count_is_a_protocol_error(field: str) -> None:
    _, message = await run(line("a"), done(**{field: -5}))
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert message.error_message is not None
    assert f"{field}=-5" in message.error_message


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("load", "only loaded the model"),
        ("unload", "unloaded the model"),
        ("content_filter", "unknown stop reason: 'content_filter'"),
        ("", "unknown stop reason: ''"),
    ],
)
async def test_unknown_and_load_reasons_are_protocol_errors_that_name_them(reason: str, words: str) -> None:
    _, message = await run(line("a"), done(reason))
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert message.error_message is not None
    assert words in message.error_message
    assert message.raw_stop_reason == reason


async def test_a_done_reason_that_is_not_a_string_is_a_protocol_error() -> None:
    _, message = await run(line("a"), done(None, done_reason=7))
    assert (message.stop_reason, kind(message)) == ("error", "protocol")


async def test_no_done_reason_is_an_old_server_stop_and_length_is_length() -> None:
    assert (await run(line("a"), done(None)))[1].stop_reason == "stop"
    assert (await run(line("a"), done("length")))[1].stop_reason == "length"


async def test_arguments_as_a_json_object_string_are_parsed() -> None:
    _, message = await run(line(message=call("f", '{"x": [1, 2]}')), done())
    assert message.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in calls(message)] == [("f", {"x": [1, 2]})]


@pytest.mark.parametrize(
    "arguments",
    ['{"x": 1', "[1, 2]", '"text"', "", "null", '{"x": 1} trailing', None, [1], 3],
    ids=["cut", "array-string", "string-string", "empty", "null-string", "trailing", "null", "array", "number"],
)
async def test_arguments_that_are_not_an_object_are_a_protocol_error_and_no_call(arguments: object) -> None:
    _, message = await run(line("before"), line(message=call("f", arguments)), done())
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert calls(message) == []
    assert texts(message) == "before"


async def test_a_call_without_arguments_or_name_is_a_protocol_error() -> None:
    no_args = {"tool_calls": [{"function": {"name": "f"}}]}
    assert kind((await run(line(message=no_args), done()))[1]) == "protocol"
    no_name: dict[str, Any] = {"tool_calls": [{"function": {"arguments": {}}}]}
    assert kind((await run(line(message=no_name), done()))[1]) == "protocol"
    not_list: dict[str, Any] = {"tool_calls": {"function": {"name": "f", "arguments": {}}}}
    assert kind((await run(line(message=not_list), done()))[1]) == "protocol"


async def test_calls_buffered_into_the_done_line_and_with_index_fields() -> None:
    buffered: dict[str, Any] = {
        "tool_calls": [
            {"function": {"index": 0, "name": "a", "arguments": {}}},
            {"function": {"index": 1, "name": "b", "arguments": {"k": "v"}}},
        ]
    }
    _, message = await run(
        line("x"), line(done=True, done_reason="stop", prompt_eval_count=1, eval_count=1, message=buffered)
    )
    assert message.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in calls(message)] == [("a", {}), ("b", {"k": "v"})]


async def test_no_done_line_is_truncated_and_a_missing_final_newline_is_fine() -> None:
    _, cut = await run(line("a"), line("b"))
    assert (cut.stop_reason, kind(cut)) == ("error", "truncated")
    assert texts(cut) == "ab"
    _, whole = await run(line("a"), done().rstrip(b"\n"))
    assert (whole.stop_reason, texts(whole)) == ("stop", "a")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ("model 'x' not found, try pulling it first", "not_found"),
        ("the input length exceeds the context length", "context_overflow"),
        ("registry.ollama.ai/library/gemma:2b does not support tools", "invalid_request"),
        ('"gemma3:1b" does not support thinking', "invalid_request"),
        ("an unexpected error occurred", "server"),
    ],
)
async def test_an_error_line_mid_stream_ends_with_the_kind_of_its_words(error: str, expected: str) -> None:
    _, message = await run(line("partial"), json.dumps({"error": error}).encode() + b"\n", done())
    assert (message.stop_reason, kind(message)) == ("error", expected)
    assert message.error_message is not None
    assert error in message.error_message
    assert texts(message) == "partial"


async def test_http_error_bodies_read_the_same_words() -> None:
    body = json.dumps({"error": "llama3.2 does not support tools"}).encode()
    _, message = await OLLAMA.run_reads([body], status=400, content_type="application/json")
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.status) == ("invalid_request", 400)


async def test_thinking_and_text_alternating_keep_the_server_order() -> None:
    think = {"thinking": "t1"}
    _, message = await run(line(message=think), line("a"), line(message={"thinking": "t2"}), line("b"), done())
    assert [(b.type, getattr(b, "text", None) or getattr(b, "thinking", None)) for b in message.content] == [
        ("thinking", "t1"),
        ("text", "a"),
        ("thinking", "t2"),
        ("text", "b"),
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=6), st.booleans())
async def test_any_bytes_end_with_one_terminal_and_only_parsed_calls(junk: list[bytes], finish: bool) -> None:
    reads = [line("a"), *junk, *([done()] if finish else [])]
    events, message = await run(*reads)
    assert sum(event.type in ("done", "error") for event in events) == 1
    for block in message.content:
        if isinstance(block, ToolCall):  # only from a strict parse of an object the server sent
            assert isinstance(block.arguments, dict)
