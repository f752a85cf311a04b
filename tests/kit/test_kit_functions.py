"""The OpenAI-style function pieces the chat-completions, Mistral and Cohere adapters share."""

from __future__ import annotations

import pytest

from normalize import Tool, ToolCall
from streamfns.kit import NO_TOOL_OUTPUT, function_call, function_tool

pytestmark = pytest.mark.parallel

_TOOL = Tool(name="weather", description="Weather \ud800in a city", parameters={"type": "object", "properties": {}})


def test_a_tool_definition_copies_its_schema_and_drops_lone_surrogates_from_its_description() -> None:
    defined = function_tool(_TOOL)
    assert defined == {
        "type": "function",
        "function": {"name": "weather", "description": "Weather in a city", "parameters": _TOOL.parameters},
    }
    defined["function"]["parameters"]["properties"]["edited"] = {}
    assert _TOOL.parameters == {"type": "object", "properties": {}}, "a payload edit never reaches the Tool"


def test_strict_is_sent_only_when_asked() -> None:
    assert function_tool(_TOOL, strict=True)["function"]["strict"] is True
    assert "strict" not in function_tool(_TOOL)["function"]
    assert "description" not in function_tool(Tool(name="bare", description="", parameters={}))["function"]


def test_a_call_is_replayed_under_the_adapters_id_with_its_arguments_as_json_text() -> None:
    call = ToolCall(id="call|fc_1", name="weather", arguments={"city": "Zürich", "days": 2})
    assert function_call(call, "abc123XYZ") == {
        "id": "abc123XYZ",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city": "Zürich", "days": 2}'},
    }
    assert function_call(call, "x", compact=True)["function"]["arguments"] == '{"city":"Zürich","days":2}'
    assert NO_TOOL_OUTPUT == "(no tool output)"
