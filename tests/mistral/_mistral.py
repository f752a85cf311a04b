"""What only the Mistral tests need: the adapter as its tests drive it, chunk builders, the pure decoder
driven as the kit drives it, and an independent reading of a recorded body (the expectations the replays
are checked against, derived from the bytes without the adapter's code)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

from cassettes import Cassette
from normalize import AssistantMessage, AssistantMessageEvent, MessageBuilder, Model
from normalize.wire.sse import SSEDecoder
from streamfns.kit import StreamFailure
from streamfns.mistral import ADAPTER, MistralDecoder
from tests.adapters import AdapterUnderTest

__all__ = ["MISTRAL", "Decoded", "Expected", "chunk", "decode", "expected_from", "sse_body"]


def _recorded(cassette: Cassette) -> dict[str, Any]:
    """The model a recording answered (the replay's model id)."""
    return {"id": cassette.model or "mistral-small-latest"}


#: The native Mistral adapter under test: a model on Mistral's own address.
MISTRAL = AdapterUnderTest(
    ADAPTER,
    {
        "id": "mistral-small-latest",
        "provider": "mistral",
        "base_url": "https://api.mistral.ai/v1",
        "max_tokens": 4096,
        "reasoning": True,
        "input": ["text", "image"],
    },
    replay_fields=_recorded,
)


def sse_body(*chunks: object, done: bool = True) -> bytes:
    """A body of ``data: <json>`` events (bytes are sent as they are), then ``[DONE]``."""
    parts = [c if isinstance(c, bytes) else f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
    if done:
        parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def chunk(delta: dict[str, Any] | None = None, *, finish: str | None = None, **top: Any) -> dict[str, Any]:
    """One ``chat.completion.chunk`` as Mistral sends it, choice 0 carrying ``delta`` (and ``finish``)."""
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    value: dict[str, Any] = {
        "id": "cmpl-test",
        "object": "chat.completion.chunk",
        "created": 1759185828,
        "model": "mistral-small-latest",
        "choices": [choice],
    }
    return {**value, **top}


@dataclass
class Decoded:
    """What the pure decoder made of a body: the events, the message and the failure raised, if any."""

    events: list[AssistantMessageEvent]
    message: AssistantMessage
    failure: StreamFailure | None

    @property
    def finished(self) -> bool:
        return bool(self.events) and self.events[-1].type in ("done", "error")


def decode(body: bytes, *, eof: bool = True, target: Model | None = None) -> Decoded:
    """Feed ``body`` to the pure decoder as the kit does (SSE framing, stop at the terminal, EOF last)."""
    used = target or MISTRAL.model()
    builder = MessageBuilder(used)
    builder.start()
    decoder = MistralDecoder(builder, used)
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


@dataclass
class Expected:
    """A recorded body read independently: the text, thinking, calls, finish reason and usage it holds."""

    text: str = ""
    thinking: str = ""
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list[tuple[str, str, dict[str, Any]]])
    finish: str | None = None
    usage: dict[str, Any] = field(default_factory=dict[str, Any])
    response_id: str | None = None

    @property
    def cached(self) -> int:
        """The cached prompt tokens the usage names (``prompt_tokens_details.cached_tokens``, else
        ``num_cached_tokens``), at most the prompt."""
        details: dict[str, Any] = self.usage.get("prompt_tokens_details") or {}
        named = details.get("cached_tokens", self.usage.get("num_cached_tokens", 0))
        return min(int(named), int(self.usage["prompt_tokens"]))


def expected_from(body: bytes) -> Expected:
    """Split the body on blank lines, parse each ``data:`` with ``json.loads`` and fold it the plain way
    (every recorded body sends each tool call whole, with an id and an index)."""
    found = Expected()
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"\n".join(line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:"))
        if not data or data.strip() == b"[DONE]":
            continue
        value = cast("dict[str, Any]", json.loads(data))
        found.response_id = found.response_id or value.get("id")
        if value.get("usage"):
            found.usage = value["usage"]
        for choice in cast("list[dict[str, Any]]", value.get("choices") or []):
            delta: dict[str, Any] = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str):
                found.text += content
            for part in cast("list[dict[str, Any]]", content if isinstance(content, list) else []):
                if part.get("type") == "text":
                    found.text += part["text"]
                elif part.get("type") == "thinking":
                    found.thinking += "".join(item["text"] for item in part["thinking"] if item.get("type") == "text")
            for call in cast("list[dict[str, Any]]", delta.get("tool_calls") or []):
                function = call["function"]
                found.calls.append((call["id"], function["name"], json.loads(function["arguments"])))
            if choice.get("finish_reason"):
                found.finish = choice["finish_reason"]
    return found
