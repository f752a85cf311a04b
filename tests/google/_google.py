"""What only the Google tests need: Gemini's chunks and usage, its CRLF framing, and a body streamed one
chunk per network read (the model, replays and recordings are :data:`tests.adapters.GOOGLE`)."""

from __future__ import annotations

import json
from typing import Any

from tests.adapters import GOOGLE, Replayed


def chunk(*parts: dict[str, Any], finish: str | None = None, **top: Any) -> dict[str, Any]:
    """A ``GenerateContentResponse`` chunk with ``parts`` in candidate 0 (and ``finishReason``)."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], **top}


def usage(prompt: int, candidates: int, thoughts: int = 0, cached: int = 0) -> dict[str, Any]:
    meta = {"promptTokenCount": prompt, "candidatesTokenCount": candidates, "totalTokenCount": prompt + candidates}
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
        meta["totalTokenCount"] += thoughts
    if cached:
        meta["cachedContentTokenCount"] = cached
    return meta


def sse(*chunks: dict[str, Any] | str) -> bytes:
    """Gemini framing: ``data: <json>\\r\\n\\r\\n`` per chunk (strings verbatim)."""
    return b"".join(f"data: {item if isinstance(item, str) else json.dumps(item)}\r\n\r\n".encode() for item in chunks)


async def run_chunks(*chunks: dict[str, Any] | str, **kwargs: Any) -> Replayed:
    """Stream the chunks through the adapter, each in its own network read (no retries)."""
    return await GOOGLE.run_reads([sse(item) for item in chunks], **kwargs)
