"""Differential: the official ``ollama`` Python client (a test-only oracle) and this adapter read every
bundled successful ``/api/chat`` recording to the same final message — text, thinking, tool calls (name
and arguments, in order), stop reason and token counts — with the body cut whole, byte by byte, and at
random (seeded) places."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import ollama
import pytest

from tests.adapters import CHUNKINGS, OLLAMA, Reads, calls, cut, response_of, texts, thinking

pytestmark = pytest.mark.parallel  # clock-blind: in-process transports only


def _transport(reads: Sequence[bytes]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/x-ndjson"}, stream=Reads(reads))

    return httpx.MockTransport(handler)


async def oracle(reads: Sequence[bytes]) -> dict[str, Any]:
    """The ``ollama`` client's streamed ``ChatResponse`` parts, folded the way its users fold them."""
    client = ollama.AsyncClient(host="http://localhost:11434", transport=_transport(reads))
    text, reasoning, tool_calls, final = "", "", list[tuple[str, dict[str, Any]]](), None
    parts = await client.chat(  # pyright: ignore[reportUnknownMemberType] - its tools parameter takes any callable
        model="m", messages=[{"role": "user", "content": "Say hello."}], stream=True
    )
    async for part in parts:
        text += part.message.content or ""
        reasoning += part.message.thinking or ""
        tool_calls += [(c.function.name, dict(c.function.arguments)) for c in part.message.tool_calls or []]
        if part.done:
            final = part
    assert final is not None
    return {
        "text": text,
        "thinking": reasoning,
        "calls": tool_calls,
        "done_reason": final.done_reason or "stop",
        "input": final.prompt_eval_count or 0,
        "output": final.eval_count or 0,
    }


async def ours(reads: Sequence[bytes]) -> dict[str, Any]:
    _, message = await OLLAMA.run_reads(reads, content_type="application/x-ndjson")
    assert message.stop_reason in ("stop", "toolUse", "length"), message.error_message
    return {
        "text": texts(message),
        "thinking": thinking(message),
        "calls": [(c.name, c.arguments) for c in calls(message)],
        "done_reason": message.raw_stop_reason,
        "input": message.usage.input,
        "output": message.usage.output,
    }


@pytest.mark.parametrize("how", CHUNKINGS)
@pytest.mark.parametrize("name", OLLAMA.stream_names())
async def test_the_ollama_client_and_this_adapter_agree(name: str, how: str) -> None:
    reads = cut(response_of(name).body, how, name)
    expected = await oracle(reads)
    assert await ours(reads) == expected
    assert expected["text"] or expected["thinking"] or expected["calls"]  # each recording says something
