"""Shared helpers for the Anthropic adapter tests."""

from __future__ import annotations

from typing import Any

import httpx

from cassettes import Cassette, ReplayTransport, library
from conformance.loopback import Scripted
from normalize import AssistantMessage, AssistantMessageEvent, Context, Model, StreamOptions, UserMessage
from streamfns.anthropic import stream_anthropic

CONTEXT = Context(messages=[UserMessage(content="Say hello.")])


def model(base_url: str = "https://api.anthropic.com", model_id: str = "claude-haiku-4-5") -> Model:
    return Model(id=model_id, api="anthropic-messages", provider="anthropic", base_url=base_url, max_tokens=1024)


def recorded_chunks(name: str) -> list[bytes]:
    """The body chunks of a bundled Anthropic recording, as recorded (one SSE event each)."""
    response = library.load(name).interactions[0].response
    return [chunk.data for chunk in response.chunks]


def scripted(name: str, *, delay_s: float = 0.0, end: str = "eof", keep: int | None = None) -> Scripted:
    """A loopback plan replaying a library recording (optionally only its first ``keep`` chunks)."""
    chunks = recorded_chunks(name)
    if keep is not None:
        chunks = chunks[:keep]
    return Scripted(chunks=[(delay_s, c) for c in chunks], end=end)  # pyright: ignore[reportArgumentType]


def error_body(status: int, error_type: str, message: str, headers: list[tuple[str, str]] | None = None) -> Scripted:
    body = f'{{"type":"error","error":{{"type":"{error_type}","message":"{message}"}}}}'.encode()
    return Scripted(
        status=status,
        headers=[("content-type", "application/json"), *(headers or [])],
        chunks=[(0.0, body)],
    )


def stream_names() -> list[str]:
    """Library recordings of successful (HTTP 200) Anthropic streams."""
    return [
        name
        for name in library.names("anthropic-messages")
        if library.load(name).interactions[0].response.status == 200
    ]


def error_names() -> list[str]:
    """Library recordings of Anthropic HTTP error bodies."""
    return [
        name
        for name in library.names("anthropic-messages")
        if library.load(name).interactions[0].response.status != 200
    ]


async def replay(cassette: Cassette, **option_overrides: Any) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    """Run ``stream_anthropic`` on a cassette (whatever request it builds), without retries."""
    transport = ReplayTransport(cassette, match="any")
    async with httpx.AsyncClient(transport=transport) as client:
        options = StreamOptions(api_key="test-key", http_client=client, max_retries=0, **option_overrides)
        stream = stream_anthropic(model(), CONTEXT, options)
        events = [event async for event in stream]
        return events, await stream.result()
