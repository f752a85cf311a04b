"""Differential: the ``mistralai`` SDK (a test-only oracle) and this adapter read every bundled Mistral
stream to the same text, thinking, tool calls (id, name, parsed arguments), finish reason and usage — with
the body arriving whole, byte by byte, and cut at random (seeded) places.

The SDK keeps no message of its own: its ``chat.stream_async`` yields one typed ``CompletionEvent`` per
chunk, folded here the way its users fold them (text from a string or its ``TextChunk``s, thinking from
its ``ThinkChunk``s, each tool call as it comes, the last usage and finish reason sent)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx2
import pytest

from tests.adapters import CHUNKINGS, calls, cut, response_of, texts, thinking
from tests.mistral._mistral import MISTRAL

pytestmark = pytest.mark.parallel  # clock-blind: in-process transports only

#: The one recording that says nothing: a model that answered with 205 empty deltas.
EMPTY_ANSWER = (
    "rubyllm__chat_function_calling_mistral_mistral_small_can_use_tools_with_multi_turn_streaming_conver_mistral-small"
)


def _client(reads: Sequence[bytes]) -> httpx2.AsyncClient:
    async def content() -> AsyncIterator[bytes]:
        for piece in reads:
            yield piece

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content())

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


async def oracle(reads: Sequence[bytes]) -> dict[str, Any]:
    """The SDK's stream of the reads, folded."""
    from mistralai.client import Mistral  # test-only oracle, slow to import
    from mistralai.client.models import TextChunk, ThinkChunk

    text, reasoning, tool_calls, finish, usage = "", "", list[tuple[str, str, Any]](), None, None
    async with _client(reads) as http:
        client = Mistral(api_key="test-key", server_url="https://api.mistral.ai", async_client=http)
        events = await client.chat.stream_async(model="m", messages=[{"role": "user", "content": "Say hello."}])
        async for event in events:
            chunk = event.data
            usage = chunk.usage or usage
            for choice in chunk.choices:
                content = choice.delta.content
                if isinstance(content, str):
                    text += content
                elif isinstance(content, list):
                    for part in content:
                        if isinstance(part, TextChunk):
                            text += part.text
                        elif isinstance(part, ThinkChunk):
                            reasoning += "".join(item.text for item in part.thinking if isinstance(item, TextChunk))
                for call in choice.delta.tool_calls or []:
                    arguments = call.function.arguments
                    parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
                    tool_calls.append((call.id or "", call.function.name, parsed))
                finish = choice.finish_reason or finish
    assert usage is not None
    extra: dict[str, Any] = usage.model_extra or {}
    details: dict[str, Any] = extra.get("prompt_tokens_details") or {}
    prompt = usage.prompt_tokens or 0
    cached = min(details.get("cached_tokens", extra.get("num_cached_tokens", 0)), prompt)
    return {
        "text": text,
        "thinking": reasoning,
        "calls": tool_calls,
        "finish": finish,
        "usage": (prompt - cached, cached, usage.completion_tokens, usage.total_tokens),
    }


async def ours(reads: Sequence[bytes]) -> dict[str, Any]:
    _, message = await MISTRAL.run_reads(reads)
    assert message.stop_reason in ("stop", "toolUse", "length"), message.error_message
    return {
        "text": texts(message),
        "thinking": thinking(message),
        "calls": [(c.id, c.name, c.arguments) for c in calls(message)],
        "finish": message.raw_stop_reason,
        "usage": (message.usage.input, message.usage.cache_read, message.usage.output, message.usage.total_tokens),
    }


@pytest.mark.parametrize("how", CHUNKINGS)
@pytest.mark.parametrize("name", MISTRAL.stream_names())
async def test_the_mistralai_sdk_and_this_adapter_agree(name: str, how: str) -> None:
    reads = cut(response_of(name).body, how, name)
    expected = await oracle(reads)
    assert await ours(reads) == expected
    assert bool(expected["text"] or expected["thinking"] or expected["calls"]) == (name != EMPTY_ANSWER)


def test_every_bundled_stream_is_compared() -> None:
    assert len(MISTRAL.stream_names()) == 17
