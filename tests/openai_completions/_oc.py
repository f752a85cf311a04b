"""What only the Chat Completions tests need: chunk builders and the pure decoder driven as the kit drives it
(the model, replays and recordings are :data:`tests.adapters.OPENAI_COMPLETIONS`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from normalize import AssistantMessage, AssistantMessageEvent, MessageBuilder, Model
from normalize.wire.sse import SSEDecoder
from streamfns.kit import ServerSentEvent, StreamFailure
from streamfns.openai_completions.decode import CompletionsDecoder
from tests.adapters import OPENAI_COMPLETIONS


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
    used = target or OPENAI_COMPLETIONS.model()
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
