"""How a chat-completions stream ends, as the harness and the cassette tools need to know it.

The marker is a choice's ``finish_reason``; a usage chunk and ``data: [DONE]`` may follow, and a
server that sends no ``[DONE]`` ends the body right after (the decoder finishes at EOF then). Taking
the marker out drops ``[DONE]`` and nulls every ``finish_reason``.
"""

from __future__ import annotations

from typing import Any, cast

from streamfns.kit import DROP, Drop, Ending, FrameView

__all__ = ["ENDING", "strip_finish"]


def strip_finish(frame: FrameView) -> Drop | bytes | None:
    """``[DONE]`` dropped; a chunk with a ``finish_reason`` rewritten with it null; else kept."""
    if frame.payload.strip() == b"[DONE]":
        return DROP
    value = frame.fields()
    choices = value.get("choices")
    if not isinstance(choices, list):
        return None
    finished: list[dict[str, Any]] = [
        cast("dict[str, Any]", choice)
        for choice in cast("list[Any]", choices)
        if isinstance(choice, dict) and cast("dict[str, Any]", choice).get("finish_reason") is not None
    ]
    for choice in finished:
        choice["finish_reason"] = None
    return FrameView.encode(value) if finished else None


ENDING = Ending("a finish_reason", strip_finish, after="eof")
