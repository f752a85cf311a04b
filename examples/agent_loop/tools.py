"""Tools for the agent loop, and the rules for running one tool call.

A tool is a name, a description, a JSON Schema for its arguments and an async ``execute(tool_call_id,
arguments, signal, on_update)`` returning text (or text and image blocks); ``on_update(partial)`` reports
progress (text or blocks), which the loop emits as ``tool_execution_update`` — called plainly, or
awaited to wait until every listener has seen it (:mod:`examples.agent_loop.progress`). A tool may
declare ``timeout_s``: past it the tool is cancelled and answered :func:`timeout_text`.
:func:`run_tool_call` turns any tool call into a :class:`~normalize.ToolResultMessage` carrying the
call's id, and never raises:

- an unknown tool → ``Tool <name> not found``;
- arguments that break the schema → ``Validation failed for tool "<name>":`` with each failing
  field, then ``Received arguments:`` echoing what the model sent; ``execute`` never runs;
- an exception inside ``execute`` → an error result whose text is the exception's message;
- a tool running longer than its ``timeout_s`` → cancelled, then ``Tool "<name>" timed out after <n> s``;
- an abort (before, during or right after ``execute``) → ``Operation aborted``, never a success;
  a tool still running when the signal fires is cancelled;
- a ``CancelledError`` the tool raises by itself (the run neither aborted nor cancelled: nobody
  stopped it) → an error result saying so (:func:`cancelled_text`), not ``Operation aborted``;
- the caller being cancelled → the tool is cancelled (and given :data:`CLEANUP_S` to clean up),
  then the ``CancelledError`` propagates;
- a ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``, ``SystemExit``, …) is
  not a tool failure to show the model: it is raised again, as itself, once the tool's task has
  ended — it wins over an abort and over the caller's own cancellation.

Inside the tool's task such an exception travels as :class:`ToolInterrupt`: raised as itself from a
task, asyncio would not end the task with it but throw it out of the event loop, leaving the caller
suspended and the task's exception never retrieved.

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
    "CLEANUP_S",
    "AgentTool",
    "Execute",
    "OnUpdate",
    "ToolInterrupt",
    "as_content",
    "cancelled_text",
    "error_result",
    "no_updates",
    "not_found_text",
    "prepare_tool_call",
    "run_tool_call",
    "schema_problems",
    "timeout_text",
    "validate_arguments",
]

ABORTED_TEXT = "Operation aborted"
#: How long an aborted tool gets to clean up before the agent answers "Operation aborted" without it.
CLEANUP_S = 1.0

#: What a tool reports progress with: call it plainly, or await it to return once every listener saw it.
OnUpdate = Callable[[str | Sequence[ToolResultContent]], Awaitable[None]]
Execute = Callable[[str, dict[str, Any], AbortSignal, OnUpdate], Awaitable[str | Sequence[ToolResultContent]]]


def no_updates(_partial: str | Sequence[ToolResultContent]) -> Awaitable[None]:
    """The ``on_update`` of a tool run with nobody listening: a done future (not a coroutine, so a tool
    calling it plainly leaves nothing un-awaited)."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    return done


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


def validate_arguments(value: object, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Every way ``value`` breaks ``schema``, as ``"<field>: <problem>"`` lines (empty when valid)."""
    here = path or "(root)"
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(cast("list[str]", types))
        if not any(_is_type(value, name) for name in allowed):
            return [f"{here}: must be {' or '.join(allowed)}"]
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
    #: Seconds the tool may run before it is cancelled and answered :func:`timeout_text` (None: no limit).
    timeout_s: float | None = None

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


def cancelled_text(name: str, error: BaseException) -> str:
    """The result text for a tool that raised ``CancelledError`` although nobody cancelled it."""
    detail = f" ({error})" if str(error) else ""
    return f'Tool "{name}" failed: it raised CancelledError{detail}, but the run was neither aborted nor cancelled'


def timeout_text(name: str, timeout_s: float) -> str:
    """The result text for a tool that ran longer than its ``timeout_s``."""
    return f'Tool "{name}" timed out after {timeout_s:g} s'


class ToolInterrupt(Exception):
    """A tool's ``BaseException`` that is not an ``Exception`` (``error``: ``KeyboardInterrupt``,
    ``SystemExit``, …), carried as an ordinary exception out of the task it was raised in, to be raised
    again as itself where the run awaits that task (see the module docstring)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__} from a tool")
        self.error = error


def _validation_text(call: ToolCall, problems: list[str]) -> str:
    listed = "\n".join(f"  - {problem}" for problem in problems)
    received = json.dumps(call.arguments, indent=2, ensure_ascii=False)
    return f'Validation failed for tool "{call.name}":\n{listed}\n\nReceived arguments:\n{received}'


def as_content(output: object) -> list[ToolResultContent]:
    """A tool's output (or progress) as result blocks; ``TypeError`` for anything but text or blocks."""
    if isinstance(output, str):
        return [TextContent(text=output)]
    if isinstance(output, Sequence) and all(
        isinstance(block, TextContent | ImageContent) for block in cast("Sequence[object]", output)
    ):
        return list(cast("Sequence[ToolResultContent]", output))
    kind = type(cast("object", output)).__name__
    raise TypeError(f"the tool returned {kind}, not text or a list of text/image blocks")


async def _call(tool: AgentTool, call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> list[ToolResultContent]:
    # Inside a task, so even a synchronous raise in ``execute`` becomes the task's exception.
    try:
        return as_content(await tool.execute(call.id, call.arguments, signal, on_update))
    except (Exception, asyncio.CancelledError):
        raise
    except BaseException as exc:  # KeyboardInterrupt, SystemExit: must end this task, not the event loop
        raise ToolInterrupt(exc) from None


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


async def run_tool_call(
    tool: AgentTool, call: ToolCall, signal: AbortSignal, on_update: OnUpdate = no_updates
) -> ToolResultMessage:
    """Run a prepared call and answer it (see the module docstring): never raises an ``Exception``;
    raises ``CancelledError`` when the caller is cancelled, and a tool's ``KeyboardInterrupt``,
    ``SystemExit`` (any ``BaseException`` that is not an ``Exception``) as itself. Await it in the task
    that should see those: run in a task of its own, carry them out with :class:`ToolInterrupt`."""
    work = asyncio.ensure_future(_call(tool, call, signal, on_update))
    aborted = asyncio.ensure_future(signal.wait())
    timed_out = False
    try:
        await asyncio.wait((work, aborted), timeout=tool.timeout_s, return_when=asyncio.FIRST_COMPLETED)
        timed_out = not work.done() and not aborted.done()
    finally:
        aborted.cancel()
        if not work.done():
            work.cancel()  # the abort came first (or we are being cancelled): stop the tool
            # and let its cleanup run — for a while: a tool that ignores cancellation must not hold
            # the agent after an abort (it is left to finish on its own; its result is dropped).
            await asyncio.wait((work,), timeout=CLEANUP_S)
        failure = _settled(work)
        if isinstance(failure, ToolInterrupt):
            # An interrupt wins over everything, the caller's own cancellation included.
            raise failure.error  # the interrupt itself, its traceback still reaching into the tool
    if signal.aborted:
        return error_result(call, ABORTED_TEXT)
    if timed_out and tool.timeout_s is not None:
        return error_result(call, timeout_text(call.name, tool.timeout_s))
    if work.cancelled():
        # Not aborted, and not cancelled by us (a cancellation of the caller has propagated above):
        # the tool raised CancelledError by itself. That is its failure, not an abort.
        return error_result(call, cancelled_text(call.name, _cancellation(work)))
    if failure is not None:
        return error_result(call, str(failure) or type(failure).__name__)
    return ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=work.result())


def _settled(work: asyncio.Future[list[ToolResultContent]]) -> BaseException | None:
    """The exception ``work`` ended with (retrieved, so asyncio never reports it as never retrieved),
    or None. A tool still running (it ignored cancellation past ``CLEANUP_S``) is abandoned: what it
    ends with later is retrieved then (:func:`_abandoned`)."""
    if not work.done():
        work.add_done_callback(_abandoned)
        return None
    return None if work.cancelled() else work.exception()


def _abandoned(work: asyncio.Future[list[ToolResultContent]]) -> None:
    """The end of a tool the run stopped waiting for: its result or error is dropped, except an
    interrupt, which nobody awaits any more and so goes where asyncio sends it, out of the event loop."""
    failure = None if work.cancelled() else work.exception()
    if isinstance(failure, ToolInterrupt):
        raise failure.error


def _cancellation(work: asyncio.Future[list[ToolResultContent]]) -> asyncio.CancelledError:
    """The ``CancelledError`` a cancelled ``work`` holds (its message, if the tool gave one)."""
    try:
        work.result()
    except asyncio.CancelledError as exc:
        return exc
    return asyncio.CancelledError()  # unreachable for a cancelled future; keeps the type exact
