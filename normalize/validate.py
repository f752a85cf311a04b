"""``validate_events``: check any recorded event sequence against the grammar G1–G7.

It accepts our event objects or pi-shaped JSON dicts, from any adapter. Because ``partial`` is a
live object (by the time a sequence is checked, every event's ``partial`` is the final message),
the checker keeps its own shadow of each block from the events' own fields and compares that shadow
with the final message.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from normalize.content import TextContent, ThinkingContent, ToolCall
from normalize.errors import ERROR_KINDS
from normalize.events import AssistantMessageEvent, DoneEvent, ErrorEvent, event_from_json
from normalize.messages import AssistantMessage
from normalize.partial_json import ArgumentsError, parse_arguments

__all__ = ["RULES", "Violation", "validate_events"]

RULES: dict[str, str] = {
    "G1": "the first event is start, exactly once",
    "G2": "exactly one terminal (done or error), and it is the last event",
    "G3": "blocks start at the next content index; deltas and ends only on that open block, of its kind; "
    "each block ends at most once; on done every block has ended",
    "G4": "concatenated deltas equal the block's end content and the final message's block",
    "G5": "done/error reasons match the message's stop reason; errors carry a message and an ErrorInfo "
    "whose kind is in the taxonomy",
    "G6": "toolUse iff a complete tool call exists (a length stop may keep the calls it completed); ids "
    "non-empty and unique; arguments strictly parsed",
    "G7": "usage fields are non-negative ints obeying the usage contract",
}

_KIND_BY_PREFIX = {"text": "text", "thinking": "thinking", "toolcall": "toolcall"}
_DONE_REASONS = frozenset({"stop", "length", "toolUse"})
_ERROR_REASONS = frozenset({"error", "aborted"})


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: its id, the index of the offending event (-1: the sequence as a whole)."""

    rule: str
    index: int
    message: str
    excerpt: str = ""

    def __str__(self) -> str:
        where = f"event {self.index}" if self.index >= 0 else "sequence"
        tail = f" [{self.excerpt}]" if self.excerpt else ""
        return f"{self.rule} at {where}: {self.message}{tail}"


@dataclass(slots=True)
class _Shadow:
    kind: str
    deltas: list[str] = field(default_factory=list[str])
    ended: bool = False
    end_content: str | None = None
    end_tool: ToolCall | None = None


def _excerpt(event: AssistantMessageEvent) -> str:
    parts = [event.type]
    index = getattr(event, "content_index", None)
    if index is not None:
        parts.append(f"contentIndex={index}")
    delta = getattr(event, "delta", None)
    if isinstance(delta, str):
        parts.append(f"delta={delta[:40]!r}")
    reason = getattr(event, "reason", None)
    if reason is not None:
        parts.append(f"reason={reason}")
    return " ".join(parts)


def _coerce(events: Iterable[AssistantMessageEvent | dict[str, Any]]) -> list[AssistantMessageEvent]:
    out: list[AssistantMessageEvent] = []
    shared: AssistantMessage | None = None
    for item in events:
        if isinstance(item, dict):
            event = event_from_json(item, partial=shared if "partial" not in item else None)
            shared = event.partial
            out.append(event)
        else:
            out.append(item)
    return out


def validate_events(events: Iterable[AssistantMessageEvent | dict[str, Any]]) -> list[Violation]:
    """Return every violation of G1–G7 in ``events`` (an empty list means the sequence is valid).

    Raises ``ValueError`` when an event given as pi JSON cannot be read as an event at all (an
    unknown type, a missing field, a value outside its type such as an unknown error kind).
    """
    seq = _coerce(events)
    found: list[Violation] = []

    def flag(rule: str, index: int, message: str) -> None:
        found.append(Violation(rule, index, message, _excerpt(seq[index]) if 0 <= index < len(seq) else ""))

    if not seq:
        flag("G1", -1, "the sequence is empty")
        flag("G2", -1, "no terminal event")
        return found
    if seq[0].type != "start":
        flag("G1", 0, "the first event is not start")
    blocks: list[_Shadow] = []
    terminal_at: int | None = None
    for i, event in enumerate(seq):
        kind = event.type
        if terminal_at is not None:
            flag("G2", i, "event after the terminal")
            continue
        if kind == "start":
            if i != 0:
                flag("G1", i, "second start" if seq[0].type == "start" else "start is not the first event")
            continue
        if kind in ("done", "error"):
            terminal_at = i
            continue
        prefix, _, phase = kind.partition("_")
        block_kind = _KIND_BY_PREFIX.get(prefix)
        index = getattr(event, "content_index", None)
        if block_kind is None or not isinstance(index, int):
            flag("G3", i, f"unknown event type {kind!r}")
            continue
        if phase == "start":
            if index != len(blocks):
                flag("G3", i, f"block started at index {index}, expected {len(blocks)}")
                continue
            blocks.append(_Shadow(block_kind))
            continue
        if not 0 <= index < len(blocks):
            flag("G3", i, f"{phase} for block {index}, which never started")
            continue
        shadow = blocks[index]
        if shadow.kind != block_kind:
            flag("G3", i, f"{kind} on a {shadow.kind} block")
            continue
        if shadow.ended:
            flag("G3", i, f"{kind} after the block ended")
            continue
        if phase == "delta":
            shadow.deltas.append(str(getattr(event, "delta", "")))
        elif phase == "end":
            shadow.ended = True
            content = getattr(event, "content", None)
            shadow.end_content = content if isinstance(content, str) else None
            tool = getattr(event, "tool_call", None)
            shadow.end_tool = tool if isinstance(tool, ToolCall) else None
    if terminal_at is None:
        flag("G2", -1, "no terminal event")
        return found
    terminal = seq[terminal_at]
    assert isinstance(terminal, DoneEvent | ErrorEvent)
    message = terminal.message if isinstance(terminal, DoneEvent) else terminal.error
    _check_terminal(terminal, message, terminal_at, flag)
    _check_blocks(blocks, message, terminal, terminal_at, flag)
    _check_usage(message, terminal_at, flag)
    return found


def _check_terminal(terminal: DoneEvent | ErrorEvent, message: AssistantMessage, at: int, flag: Any) -> None:
    if isinstance(terminal, DoneEvent):
        if terminal.reason not in _DONE_REASONS:
            flag("G5", at, f"done with reason {terminal.reason!r}")
        if message.stop_reason != terminal.reason:
            flag("G5", at, f"done.reason {terminal.reason!r} != stopReason {message.stop_reason!r}")
        if message.error_message:
            flag("G5", at, "done message carries an errorMessage")
    else:
        if terminal.reason not in _ERROR_REASONS:
            flag("G5", at, f"error with reason {terminal.reason!r}")
        if message.stop_reason != terminal.reason:
            flag("G5", at, f"error.reason {terminal.reason!r} != stopReason {message.stop_reason!r}")
        if not message.error_message:
            flag("G5", at, "error message has no errorMessage")
        info = message.error_info
        if info is None:
            flag("G5", at, "error message has no errorInfo")
        elif info.kind not in ERROR_KINDS:
            flag("G5", at, f"errorInfo.kind {info.kind!r} is not one of the error kinds")
        elif (info.kind == "aborted") != (terminal.reason == "aborted"):
            flag("G5", at, f"errorInfo.kind {info.kind!r} does not match error.reason {terminal.reason!r}")


def _check_blocks(
    blocks: list[_Shadow], message: AssistantMessage, terminal: DoneEvent | ErrorEvent, at: int, flag: Any
) -> None:
    is_done = isinstance(terminal, DoneEvent)
    content = message.content
    if len(content) != len(blocks):
        flag("G3", at, f"final message has {len(content)} blocks, the events started {len(blocks)}")
    complete_calls = 0
    ids: set[str] = set()
    for index, shadow in enumerate(blocks):
        if is_done and not shadow.ended:
            flag("G3", at, f"block {index} never ended before done")
        if index >= len(content):
            continue
        block = content[index]
        joined = "".join(shadow.deltas)
        if shadow.kind in ("text", "thinking"):
            expected_type = TextContent if shadow.kind == "text" else ThinkingContent
            if not isinstance(block, expected_type):
                flag("G3", at, f"final block {index} is {block.type}, the events say {shadow.kind}")
                continue
            final = block.text if isinstance(block, TextContent) else block.thinking
            if shadow.ended and shadow.end_content is not None and shadow.end_content != final:
                flag("G4", at, f"block {index}: end content differs from the final message")
            if shadow.ended and joined != (shadow.end_content if shadow.end_content is not None else final):
                flag("G4", at, f"block {index}: concatenated deltas differ from the end content")
            if not shadow.ended and not final.startswith(joined):
                flag("G4", at, f"block {index}: deltas are not a prefix of the final text")
            continue
        if not isinstance(block, ToolCall):
            flag("G3", at, f"final block {index} is {block.type}, the events say toolCall")
            continue
        if shadow.ended and shadow.end_tool is not None and shadow.end_tool.to_json() != block.to_json():
            flag("G4", at, f"block {index}: toolcall_end differs from the final message")
        if not isinstance(block.arguments, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
            flag("G6", at, f"tool call {index}: arguments are not a dict")
        if not block.id:
            flag("G6", at, f"tool call {index}: empty id")
        elif block.id in ids:
            flag("G6", at, f"tool call {index}: duplicate id {block.id!r}")
        ids.add(block.id)
        if not shadow.ended:
            continue
        complete = True
        if joined or block.arguments:
            try:
                strict = parse_arguments(joined)
            except ArgumentsError:
                complete = False
                strict = None
            if strict is not None and strict != block.arguments:
                flag("G6", at, f"tool call {index}: arguments differ from the strict parse of its deltas")
                complete = False
        if complete:
            complete_calls += 1
        elif is_done and message.stop_reason != "length":
            flag("G6", at, f"tool call {index}: incomplete arguments reached a {message.stop_reason!r} message")
    # A clean stop with a complete call must have become toolUse; a length stop (the vendor cut the
    # output) keeps its completed calls without offering them for execution.
    if is_done and message.stop_reason != "length" and (message.stop_reason == "toolUse") != (complete_calls > 0):
        flag("G6", at, f"stopReason {message.stop_reason!r} with {complete_calls} complete tool call(s)")


def _check_usage(message: AssistantMessage, at: int, flag: Any) -> None:
    usage = message.usage
    counts = {
        "input": usage.input,
        "output": usage.output,
        "cacheRead": usage.cache_read,
        "cacheWrite": usage.cache_write,
        "totalTokens": usage.total_tokens,
    }
    for name, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            flag("G7", at, f"usage.{name} is {value!r}, not a non-negative int")
            return
    if usage.total_tokens != usage.input + usage.output + usage.cache_read + usage.cache_write:
        flag("G7", at, "usage.totalTokens != input + output + cacheRead + cacheWrite")
    if usage.reasoning is not None and not 0 <= usage.reasoning <= usage.output:
        flag("G7", at, "usage.reasoning is not between 0 and output")
    cost = usage.cost
    parts = cost.input + cost.output + cost.cache_read + cost.cache_write
    # No total: the price is unknown (Cost.basis "unknown"), so there is no sum to check.
    if cost.total is not None and not math.isclose(cost.total, parts, rel_tol=1e-9, abs_tol=1e-12):
        flag("G7", at, "usage.cost.total != sum of its parts")
