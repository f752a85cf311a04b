"""Shared helpers for the Google adapter tests: models, CRLF-framed chunks, replaying bodies through
the real adapter (kit, SSE decoder, decoder, builder) over an in-process transport."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx

from cassettes import Cassette, ReplayTransport, library
from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ToolCall,
    UserMessage,
)
from streamfns.google import stream_google

API = "google-generative-ai"
CONTEXT = Context(messages=[UserMessage(content="Say hello.")])


def model(
    model_id: str = "gemini-2.5-flash",
    *,
    provider: str = "google",
    base_url: str = "https://generativelanguage.googleapis.com/v1beta",
    **overrides: Any,
) -> Model:
    overrides.setdefault("input", ["text", "image"])  # Gemini models take images
    return Model(id=model_id, api=API, provider=provider, base_url=base_url, max_tokens=8192, **overrides)


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


class _Body(httpx.AsyncByteStream):
    def __init__(self, reads: Sequence[bytes]) -> None:
        self._reads = list(reads)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._reads:
            yield piece


async def run_reads(
    reads: Sequence[bytes],
    *,
    target: Model | None = None,
    status: int = 200,
    content_type: str = "text/event-stream",
    **option_overrides: Any,
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    """Stream a body given as network reads through ``stream_google`` (no retries)."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"content-type": content_type}, stream=_Body(reads))

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        options = StreamOptions(api_key="test-key", http_client=client, max_retries=0, **option_overrides)
        stream = stream_google(target or model(), CONTEXT, options)
        events = [event async for event in stream]
        return events, await stream.result()


async def run_chunks(
    *chunks: dict[str, Any] | str, **kwargs: Any
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    """Stream the chunks, each in its own network read."""
    return await run_reads([sse(item) for item in chunks], **kwargs)


def stream_names() -> list[str]:
    """Library recordings of successful (HTTP 200) Gemini streams."""
    return [name for name in library.names(API) if library.load(name).interactions[0].response.status == 200]


def error_names() -> list[str]:
    """Library recordings of Gemini / Vertex HTTP error bodies."""
    return [name for name in library.names(API) if library.load(name).interactions[0].response.status != 200]


async def replay(
    cassette: Cassette, target: Model | None = None, **option_overrides: Any
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    """Run ``stream_google`` on a cassette (whatever request it builds), without retries."""
    transport = ReplayTransport(cassette, match="any")
    async with httpx.AsyncClient(transport=transport) as client:
        options = StreamOptions(api_key="test-key", http_client=client, max_retries=0, **option_overrides)
        stream = stream_google(target or model(cassette.model or "gemini-2.5-flash"), CONTEXT, options)
        events = [event async for event in stream]
        return events, await stream.result()


def body_of(name: str) -> bytes:
    return library.load(name).interactions[0].response.body


def first_text(message: AssistantMessage) -> str:
    """The text of the message's first text block."""
    return next(block.text for block in message.content if isinstance(block, TextContent))


def calls(message: AssistantMessage) -> list[ToolCall]:
    return [block for block in message.content if isinstance(block, ToolCall)]
