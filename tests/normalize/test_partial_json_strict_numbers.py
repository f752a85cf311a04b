"""Tool-call arguments are strict JSON: ``NaN``, ``Infinity`` and numbers out of a float's range are
refused by the final parse (so no adapter can hand a tool a nan) and never shown in a preview."""

from __future__ import annotations

import pytest

from normalize import MessageBuilder, ToolCall
from normalize.partial_json import ArgumentsError, arguments_text, parse_strict, partial_object

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout


@pytest.mark.parametrize(
    "text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '{"a": 1e999}', '{"a": [1, {"b": -1e400}]}']
)
def test_parse_strict_refuses_numbers_json_cannot_carry(text: str) -> None:
    with pytest.raises(ArgumentsError) as caught:
        parse_strict(text)
    assert not caught.value.incomplete  # malformed, not cut off: no retry makes it valid


def test_parse_strict_keeps_large_finite_numbers_and_big_integers() -> None:
    assert parse_strict('{"a": 1e308, "b": 123456789012345678901234567890, "c": -0.0}') == {
        "a": 1e308,
        "b": 123456789012345678901234567890,
        "c": -0.0,
    }


def test_a_preview_never_shows_a_non_json_number() -> None:
    assert partial_object('{"a": 1, "b": 1e999') is None
    assert partial_object('{"a": 1, "b": NaN') is None
    assert partial_object('{"a": 1, "b": 2') == {"a": 1, "b": 2}


def test_the_builder_never_ends_a_call_with_a_non_json_number_as_tool_use() -> None:
    builder = MessageBuilder()
    builder.tool_call_start("c", "call_1", "f")
    builder.tool_call_delta("c", '{"x": 1e999}')
    builder.block_end("c")
    builder.stop("tool_calls", "toolUse")
    builder.finish()
    message = builder.message
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_info.kind == "protocol"


def test_arguments_text_writes_compact_json_that_parses_back_to_the_same_object() -> None:
    arguments = {"path": "caf\u00e9/\u2028.py", "n": 123456789012345678901234567890, "f": -0.5, "l": [None, True]}
    text = arguments_text(arguments)
    assert text == '{"path":"caf\u00e9/\u2028.py","n":123456789012345678901234567890,"f":-0.5,"l":[null,true]}'
    assert parse_strict(text) == arguments


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), object(), b"bytes"])
def test_arguments_text_refuses_what_json_cannot_carry(value: object) -> None:
    with pytest.raises(ArgumentsError):
        arguments_text({"a": [1, {"b": value}]})


def test_arguments_text_refuses_a_cycle_instead_of_recursing_forever() -> None:
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    with pytest.raises(ArgumentsError):
        arguments_text(cyclic)


def test_a_whole_call_whose_arguments_hold_nan_fails_the_stream_and_is_never_executable() -> None:
    builder = MessageBuilder()
    builder.tool_call_start("call", "id_1", "calc", arguments={"x": float("nan")})
    builder.block_end("call")
    assert builder.finished
    assert builder.message.stop_reason == "error"
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"
    assert "'calc'" in (builder.message.error_message or "")
    assert not [event for event in builder.events if event.type == "toolcall_end"]
    (call,) = [block for block in builder.message.content if isinstance(block, ToolCall)]
    assert call.arguments == {}  # the NaN is not kept where a serializer or a tool would meet it
