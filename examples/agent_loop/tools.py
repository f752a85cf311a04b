"""Tools for the agent loop, and the rules for running one tool call.

A tool is a name, a description, a JSON Schema for its arguments and an async ``execute(tool_call_id,
arguments, signal)`` returning text (or text and image blocks). :func:`run_tool_call` turns any tool
call into a :class:`~normalize.ToolResultMessage` carrying the call's id, and never raises:

- an unknown tool → ``Tool <name> not found``;
- arguments that break the schema → ``Validation failed for tool "<name>":`` with each failing
  field, then ``Received arguments:`` echoing what the model sent; ``execute`` never runs;
- an exception inside ``execute`` → an error result whose text is the exception's message;
- an abort (before, during or right after ``execute``) → ``Operation aborted``, never a success;
  a tool still running when the signal fires is cancelled.

The schema check covers the JSON Schema keywords tools use in practice (listed in ``_KEYWORDS``);
a schema using any other keyword is refused when the tool is defined, so no rule is silently skipped.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from normalize import AbortSignal, ImageContent, TextContent, Tool, ToolCall, ToolResultContent, ToolResultMessage

__all__ = [
    "ABORTED_TEXT",
    "AgentTool",
    "Execute",
    "error_result",
    "not_found_text",
    "prepare_tool_call",
    "run_tool_call",
    "schema_problems",
    "validate_arguments",
]

ABORTED_TEXT = "Operation aborted"
#: How long an aborted tool gets to clean up before the agent answers "Operation aborted" without it.
_CLEANUP_S = 1.0

Execute = Callable[[str, dict[str, Any], AbortSignal], Awaitable[str | Sequence[ToolResultContent]]]

# Keywords the checker enforces, and keywords that only describe (never constrain) a value.
_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "pattern",
        "anyOf",
    }
)
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "format", "$schema", "$comment"})
_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})


def schema_problems(schema: object, where: str = "parameters") -> list[str]:
    """What in ``schema`` the checker cannot enforce (empty when every keyword is understood)."""
    if not isinstance(schema, dict):
        return [f"{where} must be a JSON Schema object"]
    node = cast("dict[str, Any]", schema)
    problems = [f"{where}: unsupported keyword {key!r}" for key in node if key not in _KEYWORDS | _ANNOTATIONS]
    types = node.get("type", [])
    names = [types] if isinstance(types, str) else cast("list[str]", types)
    problems += [f"{where}: unknown type {name!r}" for name in names if name not in _TYPES]
    for name, child in cast("dict[str, Any]", node.get("properties", {})).items():
        problems += schema_problems(child, f"{where}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            problems += schema_problems(node[key], f"{where}.{key}")
    for index, option in enumerate(cast("list[Any]", node.get("anyOf", []))):
        problems += schema_problems(option, f"{where}.anyOf[{index}]")
    return problems


def _is_type(value: object, name: str) -> bool:
    match name:
        case "object":
            return isinstance(value, dict)
        case "array":
            return isinstance(value, list)
        case "string":
            return isinstance(value, str)
        case "boolean":
            return isinstance(value, bool)
        case "null":
            return value is None
        case "integer":
            return (isinstance(value, int) and not isinstance(value, bool)) or (
                isinstance(value, float) and value.is_integer()
            )
        case _:  # number
            return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _json_equal(a: object, b: object) -> bool:
    """Equality as JSON Schema means it: ``true`` is not ``1``, ``1`` is ``1.0``, containers compare
    element by element (Python's ``==`` says ``True == 1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        left, right = cast("list[object]", a), cast("list[object]", b)
        return len(left) == len(right) and all(_json_equal(x, y) for x, y in zip(left, right, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        left_map, right_map = cast("dict[object, object]", a), cast("dict[object, object]", b)
        return left_map.keys() == right_map.keys() and all(_json_equal(left_map[k], right_map[k]) for k in left_map)
    return a == b


def _json_type(value: object) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _is_type(value, name):
            return name
    return type(value).__name__


def validate_arguments(value: object, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Every way ``value`` breaks ``schema``, as ``"<field>: <problem>"`` lines (empty when valid)."""
    here = path or "(root)"
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(cast("list[str]", types))
        if not any(_is_type(value, name) for name in allowed):
            return [f"{here}: expected {' or '.join(allowed)}, got {_json_type(value)}"]
    problems: list[str] = []
    if "const" in schema and not _json_equal(value, schema["const"]):
        problems.append(f"{here}: must be {json.dumps(schema['const'])}")
    if "enum" in schema and not any(_json_equal(value, option) for option in schema["enum"]):
        problems.append(f"{here}: must be one of {json.dumps(schema['enum'])}")
    if "anyOf" in schema and all(validate_arguments(value, option, path) for option in schema["anyOf"]):
        problems.append(f"{here}: matches none of the allowed forms")
    if isinstance(value, int | float) and not isinstance(value, bool):
        problems += _number_problems(value, schema, here)
    if isinstance(value, str):
        problems += _string_problems(value, schema, here)
    if isinstance(value, list):
        items = cast("list[Any]", value)
        if len(items) < schema.get("minItems", 0):
            problems.append(f"{here}: needs at least {schema['minItems']} items")
        if "maxItems" in schema and len(items) > schema["maxItems"]:
            problems.append(f"{here}: allows at most {schema['maxItems']} items")
        if isinstance(schema.get("items"), dict):
            for index, item in enumerate(items):
                problems += validate_arguments(item, schema["items"], f"{path}[{index}]")
    if isinstance(value, dict):
        problems += _object_problems(cast("dict[str, Any]", value), schema, path)
    return problems


def _number_problems(value: float, schema: Mapping[str, Any], here: str) -> list[str]:
    problems: list[str] = []
    if "minimum" in schema and value < schema["minimum"]:
        problems.append(f"{here}: must be >= {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        problems.append(f"{here}: must be <= {schema['maximum']}")
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        problems.append(f"{here}: must be > {schema['exclusiveMinimum']}")
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        problems.append(f"{here}: must be < {schema['exclusiveMaximum']}")
    return problems


def _string_problems(value: str, schema: Mapping[str, Any], here: str) -> list[str]:
    problems: list[str] = []
    if len(value) < schema.get("minLength", 0):
        problems.append(f"{here}: must be at least {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append(f"{here}: must be at most {schema['maxLength']} characters")
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        problems.append(f"{here}: must match {schema['pattern']!r}")
    return problems


def _object_problems(value: dict[str, Any], schema: Mapping[str, Any], path: str) -> list[str]:
    prefix = f"{path}." if path else ""
    properties = cast("dict[str, Any]", schema.get("properties", {}))
    problems = [f"{prefix}{name}: is required" for name in schema.get("required", []) if name not in value]
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            problems += validate_arguments(item, properties[name], f"{prefix}{name}")
        elif extra is False:
            problems.append(f"{prefix}{name}: is not an allowed property")
        elif isinstance(extra, dict):
            problems += validate_arguments(item, cast("dict[str, Any]", extra), f"{prefix}{name}")
    return problems


@dataclass(frozen=True, slots=True)
class AgentTool:
    """A tool the agent may run. ``parameters`` is the JSON Schema of its arguments (checked when
    the tool is defined: a keyword the checker does not enforce is a ``ValueError``)."""

    name: str
    description: str
    parameters: dict[str, Any]
    execute: Execute

    def __post_init__(self) -> None:
        problems = schema_problems(self.parameters)
        if problems:
            raise ValueError(f"tool {self.name!r}: " + "; ".join(problems))

    @property
    def declaration(self) -> Tool:
        """What the model is told about the tool."""
        return Tool(name=self.name, description=self.description, parameters=self.parameters)


def error_result(call: ToolCall, text: str) -> ToolResultMessage:
    """An ``is_error`` result answering ``call``."""
    return ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=[TextContent(text=text)], is_error=True)


def not_found_text(name: str) -> str:
    """The result text for a call to a tool the agent does not have."""
    return f"Tool {name} not found"


def _validation_text(call: ToolCall, problems: list[str]) -> str:
    listed = "\n".join(f"  - {problem}" for problem in problems)
    received = json.dumps(call.arguments, indent=2, ensure_ascii=False)
    return f'Validation failed for tool "{call.name}":\n{listed}\n\nReceived arguments:\n{received}'


def _content(output: object) -> list[ToolResultContent]:
    if isinstance(output, str):
        return [TextContent(text=output)]
    if isinstance(output, Sequence) and all(
        isinstance(block, TextContent | ImageContent) for block in cast("Sequence[object]", output)
    ):
        return list(cast("Sequence[ToolResultContent]", output))
    kind = type(cast("object", output)).__name__
    raise TypeError(f"the tool returned {kind}, not text or a list of text/image blocks")


async def _call(tool: AgentTool, call: ToolCall, signal: AbortSignal) -> list[ToolResultContent]:
    # Inside a task, so even a synchronous raise in ``execute`` becomes the task's exception.
    return _content(await tool.execute(call.id, call.arguments, signal))


def prepare_tool_call(tools: Mapping[str, AgentTool], call: ToolCall, signal: AbortSignal) -> AgentTool | str:
    """The tool to run for ``call``, or the text of the error result that answers it instead."""
    tool = tools.get(call.name)
    if tool is None:
        return not_found_text(call.name)
    problems = validate_arguments(call.arguments, tool.parameters)
    if problems:
        return _validation_text(call, problems)
    if signal.aborted:
        return ABORTED_TEXT
    return tool


async def run_tool_call(tool: AgentTool, call: ToolCall, signal: AbortSignal) -> ToolResultMessage:
    """Run a prepared call and answer it; never raises an ``Exception`` (see the module docstring)."""
    work = asyncio.ensure_future(_call(tool, call, signal))
    aborted = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait((work, aborted), return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
        if not work.done():
            work.cancel()  # the abort came first (or we are being cancelled): stop the tool
            # and let its cleanup run — for a while: a tool that ignores cancellation must not hold
            # the agent after an abort (it is left to finish on its own; its result is dropped).
            await asyncio.wait((work,), timeout=_CLEANUP_S)
    if signal.aborted or work.cancelled():
        return error_result(call, ABORTED_TEXT)
    failure = work.exception()
    if failure is not None:
        return error_result(call, str(failure) or type(failure).__name__)
    return ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=work.result())
