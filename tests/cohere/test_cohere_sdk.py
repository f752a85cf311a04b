"""Differential: the ``cohere`` SDK's own stream parse (``AsyncClientV2.chat_stream``, a test-only oracle)
and this adapter read every bundled Cohere v2 stream to the same final message — text, reasoning,
tool plan, tool calls (id, name, parsed arguments, in order), finish reason and usage — with the body
given whole, byte by byte, and cut at random (seeded) places."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

import httpx
import pytest

from normalize import ThinkingContent
from streamfns.cohere import TOOL_PLAN
from tests.adapters import CHUNKINGS, Reads, calls, cut, response_of, texts
from tests.cohere._cohere import COHERE

pytestmark = pytest.mark.parallel  # clock-blind: in-process transports only


def _count(value: Any) -> int:
    return int(value or 0)


async def oracle(reads: Sequence[bytes]) -> dict[str, Any]:
    """The ``cohere`` SDK's streamed events, folded the way its users fold them."""
    import cohere  # the oracle only: slow to import, and never a dependency of the adapter

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Reads(reads))

    text, reasoning, plan, finish = "", "", "", None
    tool_calls: list[dict[str, Any]] = []
    usage: Any = None
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        client = cohere.AsyncClientV2(api_key="test-key", base_url="http://cohere.test", httpx_client=http)
        async for event in client.chat_stream(model="m", messages=[cohere.UserChatMessageV2(content="Hi")]):
            if event.type == "content-delta":
                content: Any = event.delta.message.content  # pyright: ignore[reportOptionalMemberAccess]
                text += content.text or ""
                reasoning += content.thinking or ""
            elif event.type == "tool-plan-delta":
                plan += event.delta.message.tool_plan or ""  # pyright: ignore[reportOptionalMemberAccess]
            elif event.type == "tool-call-start":
                call: Any = event.delta.message.tool_calls  # pyright: ignore[reportOptionalMemberAccess]
                tool_calls.append({"id": call.id, "name": call.function.name, "arguments": call.function.arguments})
            elif event.type == "tool-call-delta":
                fragment: Any = event.delta.message.tool_calls.function.arguments  # pyright: ignore[reportOptionalMemberAccess]
                tool_calls[-1]["arguments"] += fragment or ""
            elif event.type == "message-end":
                finish = event.delta.finish_reason  # pyright: ignore[reportOptionalMemberAccess]
                usage = event.delta.usage  # pyright: ignore[reportOptionalMemberAccess]
    assert usage is not None
    assert usage.tokens is not None
    cached = _count(usage.cached_tokens)
    return {
        "text": text,
        "thinking": reasoning,
        "plan": plan,
        "calls": [(c["id"], c["name"], json.loads(c["arguments"]) if c["arguments"] else {}) for c in tool_calls],
        "finish": finish,
        "usage": (
            _count(usage.tokens.input_tokens) - cached,
            _count(usage.tokens.output_tokens),
            cached,
            cast("dict[str, Any]", usage.tokens.model_extra or {}).get("reasoning_tokens"),
        ),
    }


async def ours(reads: Sequence[bytes]) -> dict[str, Any]:
    _, message = await COHERE.run_reads(reads, target=COHERE.model(reasoning=True))
    assert message.stop_reason in ("stop", "toolUse", "length"), message.error_message
    blocks = [block for block in message.content if isinstance(block, ThinkingContent)]
    usage = message.usage
    return {
        "text": texts(message),
        "thinking": "".join(b.thinking for b in blocks if b.thinking_signature != TOOL_PLAN),
        "plan": "".join(b.thinking for b in blocks if b.thinking_signature == TOOL_PLAN),
        "calls": [(c.id, c.name, c.arguments) for c in calls(message)],
        "finish": message.raw_stop_reason,
        "usage": (usage.input, usage.output, usage.cache_read, usage.reasoning),
    }


def _bodies() -> list[str]:
    return COHERE.stream_names()


@pytest.mark.parametrize("how", CHUNKINGS)
@pytest.mark.parametrize("name", _bodies())
async def test_final_message_agrees_with_the_cohere_sdk(name: str, how: str) -> None:
    body = response_of(name).body
    reads = cut(body, how, name)
    theirs, mine = await oracle(reads), await ours(reads)
    assert mine == theirs
    assert theirs["finish"] in ("COMPLETE", "TOOL_CALL")  # a recording the oracle read to its end
