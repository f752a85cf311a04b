"""The argument checker, the tool definition rules and the demo tools, against hostile input."""

from __future__ import annotations

from typing import Any

import pytest

from examples.agent_loop import AgentTool, OnUpdate, validate_arguments
from examples.agent_loop.demo_tools import CALCULATOR, CURRENT_TIME, evaluate
from examples.agent_loop.tools import run_tool_call
from normalize import AbortController, AbortSignal, TextContent, ToolCall

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "pattern": "^[a-z/]+$"},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "mode": {"enum": ["r", "w"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "ratio": {"type": ["number", "null"], "exclusiveMaximum": 1},
        "nested": {
            "type": "object",
            "properties": {"flag": {"type": "boolean"}},
            "required": ["flag"],
            "additionalProperties": False,
        },
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def test_valid_arguments_have_no_problems() -> None:
    arguments = {
        "path": "a/b",
        "count": 3.0,  # JSON 3.0 is an integer
        "mode": "r",
        "tags": ["x"],
        "ratio": None,
        "nested": {"flag": True},
        "either": 7,
    }
    assert validate_arguments(arguments, SCHEMA) == []


@pytest.mark.parametrize(
    ("arguments", "problems"),
    [
        ({}, ["path: is required"]),
        ([], ["(root): must be object"]),
        ({"path": 5}, ["path: must be string"]),
        ({"path": ""}, ["path: must be at least 1 characters", "path: must match '^[a-z/]+$'"]),
        ({"path": "a", "count": True}, ["count: must be integer"]),
        ({"path": "a", "count": 1.5}, ["count: must be integer"]),
        ({"path": "a", "count": 11}, ["count: must be <= 10"]),
        ({"path": "a", "mode": "x"}, ['mode: must be one of ["r", "w"]']),
        (
            {"path": "a", "tags": ["x", 2, "z"]},
            ["tags: allows at most 2 items", "tags[1]: must be string"],
        ),
        ({"path": "a", "ratio": 1}, ["ratio: must be < 1"]),
        ({"path": "a", "ratio": float("nan")}, ["ratio: must be number or null"]),
        ({"path": "a", "nested": {}}, ["nested.flag: is required"]),
        (
            {"path": "a", "nested": {"flag": 1, "x": 0}},
            ["nested.flag: must be boolean", "nested.x: is not an allowed property"],
        ),
        ({"path": "a", "either": [1]}, ["either: matches none of the allowed forms"]),
        ({"path": "a", "extra": 1}, ["extra: is not an allowed property"]),
    ],
)
def test_every_broken_field_is_named(arguments: object, problems: list[str]) -> None:
    assert validate_arguments(arguments, SCHEMA) == problems


async def _noop(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
    return ""


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"type": "object", "oneOf": []}, "unsupported keyword 'oneOf'"),
        ({"type": "object", "properties": {"a": {"$ref": "#/x"}}}, "parameters.a: unsupported keyword '$ref'"),
        ({"type": "dict"}, "unknown type 'dict'"),
        ({"type": "object", "properties": {"a": {"items": {"if": {}}}}}, "parameters.a.items: unsupported keyword"),
        ([], "must be a JSON Schema object"),
    ],
)
def test_a_schema_the_checker_cannot_enforce_is_refused_when_the_tool_is_defined(parameters: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("$", r"\$")):
        AgentTool(name="t", description="", parameters=parameters, execute=_noop)


def test_the_calculator_does_arithmetic_and_nothing_else() -> None:
    assert evaluate("1234 * 5678") == 7006652
    assert evaluate("(3 + 4) * 2 - -1") == 15
    assert evaluate("7 // 2 + 7 % 2 + 2 ** 10 + 1 / 4") == 1028.25
    for hostile in ("__import__('os').system('true')", "x", "[1] * 10", "'a' * 3", "True + 1", "lambda: 0"):
        with pytest.raises(ValueError, match="not arithmetic"):
            evaluate(hostile)
    with pytest.raises(ValueError, match="cannot parse"):
        evaluate("1 +")
    with pytest.raises(ValueError, match="too large"):
        evaluate("9 ** 9 ** 9")  # refused before it is computed
    with pytest.raises(ValueError, match="too large"):
        evaluate("(2 ** 5000) * (2 ** 5000) * (2 ** 5000)")


def _text(blocks: list[Any]) -> str:
    return "".join(block.text for block in blocks if isinstance(block, TextContent))


async def test_the_demo_tools_answer_through_the_tool_rules() -> None:
    signal = AbortController().signal
    ok = await run_tool_call(CALCULATOR, ToolCall(id="c1", name="calculator", arguments={"expression": "6*7"}), signal)
    assert (ok.tool_call_id, ok.is_error, _text(ok.content)) == ("c1", False, "42")
    zero = await run_tool_call(
        CALCULATOR, ToolCall(id="c2", name="calculator", arguments={"expression": "1/0"}), signal
    )
    assert (zero.is_error, _text(zero.content)) == (True, "division by zero")
    now = await run_tool_call(CURRENT_TIME, ToolCall(id="c3", name="current_time", arguments={}), signal)
    assert not now.is_error
    assert _text(now.content).endswith("+00:00")
    bad_zone = ToolCall(id="c4", name="current_time", arguments={"timezone": "../../etc/passwd"})
    refused = await run_tool_call(CURRENT_TIME, bad_zone, signal)
    assert refused.is_error
    assert "unknown time zone" in _text(refused.content)
