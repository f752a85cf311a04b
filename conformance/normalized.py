"""Event lists in a comparable form, for the chunking-invariance and determinism checks.

Two runs over the same bytes must give the same events. What may legitimately differ is left out:
the message timestamp, and tool-call ids the adapter generated itself (every tool-call id is
replaced by its order of first appearance, so generated ids compare equal while a call that moves
or splits still differs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from normalize import AssistantMessageEvent, event_to_json

__all__ = ["first_difference", "normalized_events"]


def _mask(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            if key == "timestamp":
                continue
            if key == "id" and value.get("type") == "toolCall" and isinstance(item, str):  # pyright: ignore[reportUnknownMemberType]
                out[key] = ids.setdefault(item, f"<tool-call-{len(ids)}>")
                continue
            out[str(key)] = _mask(item, ids)  # pyright: ignore[reportUnknownArgumentType]
        return out
    if isinstance(value, list):
        return [_mask(item, ids) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def normalized_events(events: Sequence[Any]) -> list[dict[str, Any]]:
    """The events as pi JSON without timestamps, tool-call ids masked by order of appearance."""
    ids: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for event in events:
        if hasattr(event, "type") and hasattr(event, "partial"):
            typed: AssistantMessageEvent = event
            out.append(_mask(event_to_json(typed), ids))
        else:
            out.append({"type": f"<not an event: {type(event).__name__}>"})
    return out


def first_difference(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> tuple[int, str] | None:
    """The index of the first differing event and a short description, or None when equal."""
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return index, f"{_short(a)} != {_short(b)}"
    if len(left) != len(right):
        index = min(len(left), len(right))
        return index, f"{len(left)} events != {len(right)} events"
    return None


def _short(value: dict[str, Any]) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."
