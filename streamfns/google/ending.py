"""How a Gemini stream ends, as the harness and the cassette tools need to know it.

Gemini has no terminal event: the marker is a candidate's ``finishReason``, in the last chunk, and the
end of the body completes the stream. Taking the marker out deletes every ``finishReason``.
"""

from __future__ import annotations

from typing import Any, cast

from streamfns.kit import Drop, Ending, FrameView

__all__ = ["ENDING", "strip_finish_reason"]


def strip_finish_reason(frame: FrameView) -> Drop | bytes | None:
    """A chunk with a ``finishReason`` rewritten without it; else kept."""
    value = frame.fields()
    candidates = value.get("candidates")
    if not isinstance(candidates, list):
        return None
    finished: list[dict[str, Any]] = [
        cast("dict[str, Any]", candidate)
        for candidate in cast("list[Any]", candidates)
        if isinstance(candidate, dict) and "finishReason" in candidate
    ]
    for candidate in finished:
        del candidate["finishReason"]
    return FrameView.encode(value) if finished else None


ENDING = Ending("a finishReason", strip_finish_reason, after="eof")
