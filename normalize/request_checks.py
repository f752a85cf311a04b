"""Checking what a caller hands a StreamFn, before anything is sent.

A caller's mistake — ``context=None``, ``options="fast"``, a NaN temperature, a tool schema that is
not JSON, an image that is not base64 — must end the stream as an error that names the field, not as
an ``AttributeError`` deep inside a request builder, and never after a paid request went out.
:func:`request_problem` returns the first problem found as ``(kind, message)``: ``config`` for the
model and the options (how the call is set up), ``invalid_request`` for the context (what is sent).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import sys
from collections.abc import Mapping
from typing import cast

from normalize.abort import AbortSignal
from normalize.content import ImageContent, TextContent, ThinkingContent, ToolCall
from normalize.context import THINKING_LEVELS, Context, StreamOptions
from normalize.errors import ErrorKind
from normalize.messages import AssistantMessage, SystemMessage, Tool, ToolResultMessage, UserMessage
from normalize.model import COST_BASES, Model, ModelCost

__all__ = ["model_problem", "request_problem"]

_MIME = re.compile(r"image/[A-Za-z0-9][A-Za-z0-9.+-]*")
_CACHE_RETENTION = ("none", "short", "long")
#: The highest price per million tokens accepted: no model costs more, and a capped token count times
#: a larger rate could overflow the cost to infinity.
_MAX_RATE = 1e9
_NUMBERS = (int, float)
_FLOAT_MAX = sys.float_info.max


def _finite_number(value: object) -> bool:
    """A number (not a bool) that is finite as a float: an int too large for one (``10**400``) is not,
    since every use of it (a cost, a timer, a request field) would overflow."""
    cls = value.__class__
    if cls is float:  # the usual values first, with one class check each
        return math.isfinite(cast("float", value))
    if cls is int:
        return -_FLOAT_MAX <= cast("int", value) <= _FLOAT_MAX
    if not isinstance(value, _NUMBERS) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)  # a subclass of int or float
    except OverflowError:
        return False


def model_problem(model: object) -> str | None:
    """What is wrong with ``model`` as something to call (None: nothing)."""
    if not isinstance(model, Model):
        return f"model must be a normalize.Model, not {type(model).__name__}"
    for name in ("id", "api", "provider"):
        value = getattr(model, name)
        if not isinstance(value, str) or not value:
            return f"model.{name} must be a non-empty string, not {value!r}"
    if not isinstance(model.base_url, str):  # pyright: ignore[reportUnnecessaryIsInstance] - callers are untyped
        return f"model.base_url must be a string, not {type(model.base_url).__name__}"
    cost = model.cost
    if not isinstance(cost, ModelCost):  # pyright: ignore[reportUnnecessaryIsInstance]
        return f"model.cost must be a normalize.ModelCost, not {type(cost).__name__} (the call could not be priced)"
    if cost.basis not in COST_BASES:  # set after the ModelCost was made (its constructor refuses one)
        return f"model.cost.basis must be one of {', '.join(COST_BASES)}, not {cost.basis!r}"
    for name in ("input", "output", "cache_read", "cache_write"):
        rate = getattr(cost, name)
        if not _finite_number(rate) or rate < 0:
            return f"model.cost.{name} must be a finite, non-negative number, not {rate!r}"
        if rate > _MAX_RATE:
            # Capped token counts times a rate this large would overflow the cost to inf (G7).
            return f"model.cost.{name} must be at most {_MAX_RATE:g} (dollars per million tokens), not {rate!r}"
    if not isinstance(model.max_tokens, int) or isinstance(model.max_tokens, bool) or model.max_tokens < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        return f"model.max_tokens must be a positive int, not {model.max_tokens!r}"
    if model.headers is not None and not (
        isinstance(model.headers, Mapping)  # pyright: ignore[reportUnnecessaryIsInstance]
        and all(isinstance(k, str) and isinstance(v, str) for k, v in model.headers.items())  # pyright: ignore[reportUnnecessaryIsInstance]
    ):
        return "model.headers must map header names to string values"
    if model.compat is not None and not isinstance(model.compat, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        return f"model.compat must be a mapping, not {type(model.compat).__name__}"
    return None


def _options_problem(options: object) -> str | None:
    if options is None:
        return None
    if not isinstance(options, StreamOptions):
        return f"options must be a normalize.StreamOptions or None, not {type(options).__name__}"
    if options.temperature is not None and not _finite_number(options.temperature):
        return f"options.temperature must be a finite number, not {options.temperature!r}"
    for name in ("timeout", "connect_timeout", "total_timeout", "progress_timeout"):
        value = getattr(options, name)
        if value is not None and (not _finite_number(value) or value <= 0):
            return f"options.{name} must be a positive number of seconds, not {value!r}"
    if not _finite_number(options.max_retry_delay_s) or options.max_retry_delay_s < 0:
        # 0 is allowed and means "never wait" (the kit's retry_delay): no value turns the cap off.
        return f"options.max_retry_delay_s must be a non-negative number, not {options.max_retry_delay_s!r}"
    for name in ("max_tokens", "max_retries"):
        value = getattr(options, name)
        least = 1 if name == "max_tokens" else 0
        if (value is not None or name == "max_retries") and (
            not isinstance(value, int) or isinstance(value, bool) or value < least
        ):
            return f"options.{name} must be an int ≥ {least}, not {value!r}"
    if options.reasoning is not None and options.reasoning not in THINKING_LEVELS:
        return f"options.reasoning must be one of {', '.join(THINKING_LEVELS)}, not {options.reasoning!r}"
    if options.cache_retention not in _CACHE_RETENTION:
        return f"options.cache_retention must be one of {', '.join(_CACHE_RETENTION)}, not {options.cache_retention!r}"
    if options.api_key is not None and not isinstance(options.api_key, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        return f"options.api_key must be a string, not {type(options.api_key).__name__}"
    if options.signal is not None and not isinstance(options.signal, AbortSignal):  # pyright: ignore[reportUnnecessaryIsInstance]
        return f"options.signal must be a normalize.AbortSignal, not {type(options.signal).__name__}"
    headers = options.headers
    if headers is not None and not (
        isinstance(headers, Mapping)  # pyright: ignore[reportUnnecessaryIsInstance]
        and all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in headers.items())  # pyright: ignore[reportUnnecessaryIsInstance]
    ):
        return "options.headers must map header names to strings (or None to remove one)"
    return None


def _image_problem(image: ImageContent, where: str) -> str | None:
    if not isinstance(image.mime_type, str) or not _MIME.fullmatch(image.mime_type):  # pyright: ignore[reportUnnecessaryIsInstance]
        return f"{where}.mime_type must be an image type such as image/png, not {image.mime_type!r}"
    if not isinstance(image.data, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        return f"{where}.data must be base64 text, not {type(image.data).__name__}"
    try:
        base64.b64decode(image.data, validate=True)
    except (binascii.Error, ValueError):
        return f"{where}.data is not valid base64"
    return None


def _blocks_problem(content: object, where: str, allowed: tuple[type, ...]) -> str | None:
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return f"{where} must be a string or a list of content blocks, not {type(content).__name__}"
    for i, block in enumerate(content):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        if not isinstance(block, allowed):
            return f"{where}[{i}] must be one of {', '.join(t.__name__ for t in allowed)}, not {type(block).__name__}"  # pyright: ignore[reportUnknownArgumentType]
        if isinstance(block, ImageContent):
            problem = _image_problem(block, f"{where}[{i}]")
            if problem:
                return problem
        elif isinstance(block, TextContent) and not isinstance(block.text, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            return f"{where}[{i}].text must be a string, not {type(block.text).__name__}"
    return None


def _tool_problem(tool: object, where: str) -> str | None:
    if not isinstance(tool, Tool):
        return f"{where} must be a normalize.Tool, not {type(tool).__name__}"
    if not isinstance(tool.name, str) or not tool.name:  # pyright: ignore[reportUnnecessaryIsInstance]
        return f"{where}.name must be a non-empty string"
    if not isinstance(tool.parameters, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
        kind = type(tool.parameters).__name__
        return f"{where}.parameters (tool {tool.name!r}) must be a JSON Schema object, not {kind}"
    try:
        json.dumps(tool.parameters, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"{where}.parameters (tool {tool.name!r}) is not JSON: {exc}"
    return None


def _message_problem(message: object, where: str) -> str | None:
    if isinstance(message, UserMessage):
        return _blocks_problem(message.content, f"{where}.content", (TextContent, ImageContent))
    if isinstance(message, ToolResultMessage):
        if not isinstance(message.tool_call_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            return f"{where}.tool_call_id must be a string"
        return _blocks_problem(message.content, f"{where}.content", (TextContent, ImageContent))
    if isinstance(message, AssistantMessage):
        content = cast(object, message.content)
        if content is None:
            return None  # stored transcripts sometimes carry null content: read as empty
        if not isinstance(content, list):
            return f"{where}.content must be a list of blocks, not {type(content).__name__}"
        for i, block in enumerate(cast("list[object]", content)):
            if not isinstance(block, TextContent | ThinkingContent | ToolCall):  # pyright: ignore[reportUnnecessaryIsInstance]
                return f"{where}.content[{i}] must be text, thinking or a tool call, not {type(block).__name__}"
            if isinstance(block, ToolCall) and not isinstance(block.arguments, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
                return f"{where}.content[{i}].arguments must be a dict"
        return None
    if isinstance(message, SystemMessage):
        for i, tool in enumerate(message.tools_added or ()):
            problem = _tool_problem(tool, f"{where}.tools_added[{i}]")
            if problem:
                return problem
        return None
    return f"{where} must be a normalize message, not {type(message).__name__}"


def _context_problem(context: object) -> str | None:
    if not isinstance(context, Context):
        return f"context must be a normalize.Context, not {type(context).__name__}"
    if not isinstance(context.messages, list):  # pyright: ignore[reportUnnecessaryIsInstance]
        return f"context.messages must be a list, not {type(context.messages).__name__}"
    if context.system_prompt is not None and not isinstance(context.system_prompt, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        return f"context.system_prompt must be a string, not {type(context.system_prompt).__name__}"
    if context.tools is not None:
        if not isinstance(context.tools, list):  # pyright: ignore[reportUnnecessaryIsInstance]
            return f"context.tools must be a list, not {type(context.tools).__name__}"
        for i, tool in enumerate(context.tools):
            problem = _tool_problem(tool, f"context.tools[{i}]")
            if problem:
                return problem
    for i, message in enumerate(context.messages):
        problem = _message_problem(message, f"context.messages[{i}]")
        if problem:
            return problem
    return None


def request_problem(model: object, context: object, options: object) -> tuple[ErrorKind, str] | None:
    """The first problem with a call's arguments as ``(kind, message naming the field)``, or None."""
    problem = model_problem(model) or _options_problem(options)
    if problem:
        return "config", problem
    problem = _context_problem(context)
    if problem:
        return "invalid_request", problem
    return None
