"""Two safe tools for demos and ``python -m examples.agent_loop``: a calculator and the current time.

Neither touches files, the network or the shell: the calculator evaluates arithmetic by walking a
parsed expression (numbers, + - * / // % **, parentheses) and refuses everything else; powers
and results are bounded so a hostile expression cannot exhaust memory or time.
"""

from __future__ import annotations

import ast
import datetime
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from examples.agent_loop.tools import AgentTool, OnUpdate
from normalize import AbortSignal

__all__ = ["CALCULATOR", "CURRENT_TIME", "DEMO_SYSTEM_PROMPT", "DEMO_TOOLS", "evaluate"]

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: lambda a: +a, ast.USub: lambda a: -a}
_MAX_BITS = 10_000  # about 3,000 decimal digits


def _value(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) * max(abs(int(left)).bit_length(), 1) > _MAX_BITS:
            raise ValueError("the result would be too large")  # checked before computing it
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, int) and result.bit_length() > _MAX_BITS:
            raise ValueError("the result is too large")
        return result
    raise ValueError(f"not arithmetic: {ast.unparse(node)!r}")


def evaluate(expression: str) -> int | float:
    """The value of an arithmetic expression; ``ValueError`` for anything else (or ``ZeroDivisionError``)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"cannot parse {expression!r}: {exc.msg}") from None
    return _value(tree.body)


async def _calculate(tool_call_id: str, arguments: dict[str, Any], signal: AbortSignal, _on_update: OnUpdate) -> str:
    del tool_call_id, signal
    result = evaluate(arguments["expression"])
    if isinstance(result, float) and result.is_integer():
        result = int(result)
    return str(result)


async def _now(tool_call_id: str, arguments: dict[str, Any], signal: AbortSignal, _on_update: OnUpdate) -> str:
    del tool_call_id, signal
    name = arguments.get("timezone", "UTC")
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (use an IANA name such as Europe/Paris)") from None
    return datetime.datetime.now(zone).isoformat(timespec="seconds")


CALCULATOR = AgentTool(
    name="calculator",
    description="Evaluate an arithmetic expression (numbers, + - * / // % ** and parentheses).",
    parameters={
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "for example: (3 + 4) * 2"}},
        "required": ["expression"],
        "additionalProperties": False,
    },
    execute=_calculate,
)

CURRENT_TIME = AgentTool(
    name="current_time",
    description="The current date and time in a time zone.",
    parameters={
        "type": "object",
        "properties": {"timezone": {"type": "string", "description": "an IANA time zone; UTC by default"}},
        "additionalProperties": False,
    },
    execute=_now,
)

DEMO_TOOLS: tuple[AgentTool, ...] = (CALCULATOR, CURRENT_TIME)

#: The system prompt ``python -m examples.agent_loop`` and the bundled round-trip recordings use.
DEMO_SYSTEM_PROMPT = (
    "You are a concise assistant. Use the calculator for any arithmetic and current_time for the date or time; "
    "never guess them."
)
