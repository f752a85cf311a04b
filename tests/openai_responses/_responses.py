"""What only the OpenAI Responses tests need: reading a body's events and its terminal, the pure decoder
driven as the kit drives it, comparable views of a final message, the server's final response and the
openai SDK's (the model, replays and recordings are :data:`tests.adapters.OPENAI_RESPONSES`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from typing import Any, cast

import jiter

from normalize import AssistantMessage, MessageBuilder, TextContent, ThinkingContent, ToolCall
from streamfns.kit import ServerSentEvent, StreamFailure
from streamfns.openai_responses.decode import OpenAIResponsesDecoder
from tests.adapters import OPENAI_RESPONSES
from tests.sse_events import SSEEvent, split_events

TERMINALS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def event_kind(event: SSEEvent) -> str | None:
    if event.event:
        return event.event
    value = event.json()
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


def first_response(body: bytes) -> bytes:
    """The body up to the end of its first terminal event (some fixtures hold several responses);
    the whole body when it has none."""
    for event in split_events(body):
        if event_kind(event) in TERMINALS:
            return body[: event.end]
    return body


def terminal_event(body: bytes) -> dict[str, Any] | None:
    """The first terminal event's JSON (``response.completed`` / ``incomplete`` / ``failed``)."""
    for event in split_events(body):
        if event_kind(event) in TERMINALS:
            value = event.json()
            assert isinstance(value, dict)
            return cast("dict[str, Any]", value)
    return None


def sse_events(body: bytes) -> list[ServerSentEvent]:
    """The body framed as the kit frames it."""
    from streamfns.kit import SSEDecoder

    decoder = SSEDecoder()
    return [*decoder.feed(body), *decoder.flush()]


def decode(events: Iterable[dict[str, Any] | bytes], builder: MessageBuilder | None = None) -> MessageBuilder:
    """Feed event dicts (or raw data bytes) straight to a decoder, as the kit would, and settle the
    outcome as the kit does: a raised failure ends the stream; no terminal is ``truncated``."""
    from normalize import ErrorInfo

    built = builder or MessageBuilder(OPENAI_RESPONSES.model())
    built.start()
    decoder = OpenAIResponsesDecoder(built, None)
    try:
        for item in events:
            data = item if isinstance(item, bytes) else json.dumps(item).encode()
            kind = "message" if isinstance(item, bytes) else str(item.get("type", "message"))
            decoder.on_event(ServerSentEvent(event=kind, data=data))
            if built.finished:
                break
        if not built.finished:
            decoder.on_eof()
            built.fail(ErrorInfo.of("truncated"), "ended before a terminal response event")
    except StreamFailure as failure:
        built.fail(failure.info, failure.message)
    return built


def sse(kind: str, value: dict[str, Any]) -> bytes:
    """One server-sent event as OpenAI frames it."""
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **value})}\n\n".encode()


# -- comparable views of a final message, of the server's final response and of the SDK's -----------


def comparable_output(output: Iterable[Any]) -> list[dict[str, Any]]:
    """The normalized view of a Responses ``output`` list: the items that become blocks, in order."""
    items: list[dict[str, Any]] = []
    for raw in output:
        item = cast("dict[str, Any]", raw)
        kind = item.get("type")
        if kind == "message":
            parts = cast("list[dict[str, Any]]", item.get("content") or [])
            joined = "".join(
                str(p.get("refusal") if p.get("type") == "refusal" else p.get("text") or "") for p in parts
            )
            items.append({"type": "text", "text": joined, "id": item.get("id")})
        elif kind == "reasoning":
            summary = [s.get("text") or "" for s in cast("list[dict[str, Any]]", item.get("summary") or [])]
            content = [c.get("text") or "" for c in cast("list[dict[str, Any]]", item.get("content") or [])]
            chosen = [t for t in summary if t] or [t for t in content if t]
            items.append({"type": "thinking", "thinking": "\n\n".join(chosen)})
        elif kind == "function_call":
            arguments = item.get("arguments") or "{}"
            items.append(
                {
                    "type": "tool",
                    "id": f"{item.get('call_id')}|{item.get('id')}",
                    "name": item.get("name"),
                    "arguments": jiter.from_json(arguments.encode()),
                }
            )
        elif kind == "custom_tool_call":
            items.append(
                {
                    "type": "tool",
                    "id": f"{item.get('call_id')}|{item.get('id')}",
                    "name": item.get("name"),
                    "arguments": {"input": item.get("input")},
                }
            )
    return items


def comparable_message(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            signature: dict[str, Any] = json.loads(block.text_signature) if block.text_signature else {}
            blocks.append({"type": "text", "text": block.text, "id": signature.get("id")})
        elif isinstance(block, ThinkingContent):
            blocks.append({"type": "thinking", "thinking": block.thinking})
        else:
            assert isinstance(block, ToolCall)
            blocks.append({"type": "tool", "id": block.id, "name": block.name, "arguments": block.arguments})
    return blocks


async def sdk_final(body: bytes) -> tuple[Any, BaseException | None]:
    """What the openai SDK's ``responses.stream()`` accumulates from the same bytes: its final
    response (or, when it raises — as it does on ``incomplete`` —, the last lifecycle response it
    yielded) and the exception it raised, if any."""
    import httpx2
    import openai

    async def content() -> AsyncIterator[bytes]:
        yield body

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content())

    last: Any = None
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as http:
        client = openai.AsyncOpenAI(
            api_key="test-key", http_client=http, base_url="http://sdk.invalid/v1", max_retries=0
        )
        try:
            async with client.responses.stream(model="m", input="hi") as stream:
                async for event in stream:
                    response = getattr(event, "response", None)
                    if response is not None:
                        last = response
                return await stream.get_final_response(), None
        except Exception as exc:  # the oracle's own failure is data for the test
            return last, exc
