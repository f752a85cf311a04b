"""Shared helpers for the Chat Completions adapter tests."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import httpx

from cassettes import Cassette, ReplayTransport, library
from conformance.loopback import Scripted
from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    MessageBuilder,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
)
from normalize.wire.sse import SSEDecoder
from streamfns.kit import ServerSentEvent, StreamFailure
from streamfns.openai_completions import stream_openai_completions
from streamfns.openai_completions.decode import CompletionsDecoder

API = "openai-completions"
CONTEXT = Context(messages=[UserMessage(content="Say hello.")])


def model(
    base_url: str = "https://api.openai.com/v1",
    model_id: str = "gpt-4o",
    *,
    provider: str = "openai",
    reasoning: bool = False,
    compat: dict[str, Any] | None = None,
    **extra: Any,
) -> Model:
    return Model(
        id=model_id,
        api=API,
        provider=provider,
        base_url=base_url,
        reasoning=reasoning,
        compat=compat,
        max_tokens=4096,
        **extra,
    )


def recorded_model(cassette: Cassette) -> Model:
    """The model a recording answered, on the host it was recorded from (so the host's profile applies)."""
    url = cassette.interactions[0].request.url.split("#", 1)[0]
    base_url = url.removesuffix("/chat/completions")
    return model(base_url, cassette.model or "recorded-model", provider="recorded", reasoning=True)


def success_names() -> list[str]:
    """Library recordings whose HTTP status is 200."""
    return [name for name in library.names(API) if library.load(name).interactions[0].response.status == 200]


def error_body_names() -> list[str]:
    """Library recordings of HTTP error bodies."""
    return [name for name in library.names(API) if library.load(name).interactions[0].response.status != 200]


def recorded_chunks(name: str) -> list[bytes]:
    return [chunk.data for chunk in library.load(name).interactions[0].response.chunks]


def scripted(name: str, *, delay_s: float = 0.0, end: str = "eof", keep: int | None = None) -> Scripted:
    """A loopback plan replaying a library recording (optionally only its first ``keep`` chunks)."""
    chunks = recorded_chunks(name)
    if keep is not None:
        chunks = chunks[:keep]
    return Scripted(chunks=[(delay_s, c) for c in chunks], end=end)  # pyright: ignore[reportArgumentType]


def sse_body(*chunks: object, done: bool = True) -> bytes:
    """A Chat Completions body: each chunk as ``data: <json>`` (bytes and strings are sent as is)."""
    parts: list[bytes] = []
    for chunk in chunks:
        if isinstance(chunk, bytes):
            parts.append(chunk)
        elif isinstance(chunk, str):
            parts.append(f"data: {chunk}\n\n".encode())
        else:
            parts.append(f"data: {json.dumps(chunk)}\n\n".encode())
    if done:
        parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def chunk(delta: dict[str, Any] | None = None, *, finish: str | None = None, **top: Any) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with choice 0 carrying ``delta`` (and ``finish``)."""
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": "m", "choices": [choice], **top}


def usage_chunk(**usage: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": [], "usage": usage}


class Decoded:
    """What the pure decoder made of a body: the events, the message and the failure raised, if any."""

    def __init__(self, events: list[AssistantMessageEvent], message: AssistantMessage, failure: StreamFailure | None):
        self.events = events
        self.message = message
        self.failure = failure

    @property
    def finished(self) -> bool:
        return self.events[-1].type in ("done", "error") if self.events else False


def decode(body: bytes, target: Model | None = None, *, eof: bool = True) -> Decoded:
    """Feed ``body`` to the pure decoder as the kit would (SSE framing, stop at the terminal)."""
    used = target or model()
    builder = MessageBuilder(used)
    builder.start()
    decoder = CompletionsDecoder(builder, used)
    framer = SSEDecoder()
    failure: StreamFailure | None = None
    try:
        for sse in [*framer.feed(body), *framer.flush()]:
            decoder.on_event(sse)
            if builder.finished:
                break
        if eof and not builder.finished:
            decoder.on_eof()
    except StreamFailure as exc:
        failure = exc
        builder.fail(exc.info, exc.message)
    return Decoded(builder.drain(), builder.message, failure)


def feed(decoder: CompletionsDecoder, events: Iterable[ServerSentEvent]) -> None:
    for sse in events:
        decoder.on_event(sse)


async def replay(
    cassette: Cassette, target: Model | None = None, **option_overrides: Any
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    """Run the adapter on a cassette (whatever request it builds), without retries."""
    transport = ReplayTransport(cassette, match="any")
    async with httpx.AsyncClient(transport=transport) as client:
        options = StreamOptions(api_key="test-key", http_client=client, max_retries=0, **option_overrides)
        stream = stream_openai_completions(target or recorded_model(cassette), CONTEXT, options)
        events = [event async for event in stream]
        return events, await stream.result()


def texts(message: AssistantMessage) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def thinking(message: AssistantMessage) -> str:
    return "".join(block.thinking for block in message.content if isinstance(block, ThinkingContent))


def calls(message: AssistantMessage) -> list[ToolCall]:
    return [block for block in message.content if isinstance(block, ToolCall)]
