"""The anthropic SDK as an oracle for the Messages events, wherever Claude is served: its own accumulator
over the events a body carries, and both sides reduced to comparable blocks. Shared by the Anthropic,
Vertex and Bedrock tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import jiter

from normalize import AssistantMessage, TextContent, ThinkingContent
from normalize.wire.sse import SSEDecoder

__all__ = ["chunkings", "comparable_blocks", "comparable_sdk_blocks", "sdk_final", "sse_events"]


def sse_events(body: bytes) -> list[dict[str, Any]]:
    """The Messages events of an SSE body (parsed by the decoder the kit uses; keep-alives kept)."""
    decoder = SSEDecoder()
    return [jiter.from_json(sse.data) for sse in [*decoder.feed(body), *decoder.flush()]]


def sdk_final(events: Iterable[dict[str, Any]]) -> Any:
    """What the anthropic SDK's own accumulator builds from the same events."""
    # Imported here: the SDK takes seconds to import, and only this oracle needs it.
    from anthropic.lib.streaming._messages import accumulate_event  # pyright: ignore[reportPrivateUsage]

    snapshot: Any = None
    json_bufs: dict[int, bytes] = {}
    for event in events:
        if event.get("type") in ("ping", "error"):
            continue
        raw: Any = event  # the SDK reads its events as objects or as their JSON dicts alike
        snapshot = accumulate_event(event=raw, current_snapshot=snapshot, json_bufs=json_bufs)
        if event.get("type") == "message_stop":
            break
    return snapshot


def comparable_sdk_blocks(snapshot: Any) -> list[dict[str, Any]]:
    """The SDK message's blocks as plain dicts (text, thinking, redacted thinking, tool use)."""
    blocks: list[dict[str, Any]] = []
    for block in snapshot.content:
        if block.type == "text":
            blocks.append({"type": "text", "text": block.text})
        elif block.type == "thinking":
            blocks.append({"type": "thinking", "thinking": block.thinking, "signature": block.signature or None})
        elif block.type == "redacted_thinking":
            blocks.append({"type": "redacted", "data": block.data})
        elif block.type == "tool_use":
            blocks.append({"type": "tool", "id": block.id, "name": block.name, "input": block.input})
    return blocks


def comparable_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    """Our message's blocks in the same shape."""
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.redacted:
                blocks.append({"type": "redacted", "data": block.thinking_signature})
            else:
                blocks.append({"type": "thinking", "thinking": block.thinking, "signature": block.thinking_signature})
        else:
            blocks.append({"type": "tool", "id": block.id, "name": block.name, "input": block.arguments})
    return blocks


def chunkings(recorded: Sequence[bytes]) -> dict[str, list[bytes]]:
    """Three ways a body may arrive: as recorded (one frame per read), whole, and in 7-byte pieces (every
    frame, multi-byte character and base64 quantum cut somewhere)."""
    body = b"".join(recorded)
    return {
        "recorded": list(recorded),
        "whole": [body],
        "7-bytes": [body[at : at + 7] for at in range(0, len(body), 7)],
    }
