"""The bench's minimal decoders (what no decoder on the kit can undercut) and how a comparison shows them.

A minimal decoder is a fair lower bound only if it does all the output work the adapter does: on the
bench's own bodies it must give the same events (types, indexes, deltas) and the same content in the
final message. Otherwise a budget could look out of reach because the bound did less, not because
the kit costs that much.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from bench import bedrock_bench, ollama_bench
from bench._wire import BENCH_CONTEXT, compare, served
from normalize import AssistantMessage, StreamOptions, ToolCall

pytestmark = pytest.mark.parallel


async def _run(stream_fn: Any, module: ModuleType, body: bytes, media_type: str) -> tuple[list[Any], AssistantMessage]:
    async with served(body, media_type) as client:
        stream = stream_fn(module._MODEL, BENCH_CONTEXT, StreamOptions(api_key="bench", http_client=client))
        events = [
            (event.type, getattr(event, "content_index", None), getattr(event, "delta", None)) async for event in stream
        ]
        return events, await stream.result()


def _content(message: AssistantMessage) -> list[Any]:
    """The message's blocks without what a decoder derives on its own (call ids)."""
    return [(block.name, block.arguments) if isinstance(block, ToolCall) else block for block in message.content]


CASES = [
    (ollama_bench, ollama_bench.stream_ollama_chat, "application/x-ndjson", ollama_bench.text_body),
    (ollama_bench, ollama_bench.stream_ollama_chat, "application/x-ndjson", ollama_bench.tool_body),
    (
        bedrock_bench,
        bedrock_bench.stream_bedrock_converse,
        "application/vnd.amazon.eventstream",
        bedrock_bench.text_body,
    ),
    (
        bedrock_bench,
        bedrock_bench.stream_bedrock_converse,
        "application/vnd.amazon.eventstream",
        bedrock_bench.tool_body,
    ),
]


@pytest.mark.parametrize(("module", "adapter", "media_type", "make_body"), CASES)
def test_the_minimal_decoder_gives_the_adapters_events_and_content(
    module: ModuleType, adapter: Any, media_type: str, make_body: Callable[[int], bytes]
) -> None:
    body = make_body(300)
    ours, ours_message = asyncio.run(_run(adapter, module, body, media_type))
    minimal, minimal_message = asyncio.run(_run(module._MINIMAL, module, body, media_type))
    assert len(ours) >= 300
    assert minimal == ours
    assert minimal_message.stop_reason == ours_message.stop_reason
    assert ours_message.stop_reason in ("stop", "toolUse")
    assert _content(minimal_message) == _content(ours_message)


def test_a_comparison_shows_the_minimal_decoder_beside_ours_and_its_variants_without_a_budget() -> None:
    async def bare(body: bytes) -> int:
        return sum(range(2000))

    async def ours(body: bytes) -> int:
        return sum(range(1000))

    async def minimal(body: bytes) -> int:
        return sum(range(500))

    async def sdk(body: bytes) -> int:
        return sum(range(20000))

    comparison = compare(
        "text body",
        b"x",
        1,
        {"bare": bare, "ours": ours, "ours, a variant": ours},
        ("sdk", sdk),
        floor_a=None,
        floor_c=None,
        minimal=("minimal", minimal),
    )
    assert [tag for tag, _, _ in comparison.stacks] == ["(a) ", "(b) ", "(b') ", "(m) ", "(c) "]
    assert [name for name, _ in comparison.ratios] == ["b/a", "m/a", "b/c", "m/c"]
    assert all(judgement.budget is None for name, judgement in comparison.ratios if name.startswith("m/"))
    roles = [stack["role"] for stack in comparison.as_dict()["stacks"]]
    assert roles == ["bare", "ours", "variant", "minimal", "sdk"]
    lines = comparison.lines()
    assert any(line.startswith("  (m) minimal") for line in lines)
    assert any(line.startswith("  m/c = ") for line in lines)


def test_a_comparison_needs_a_bare_stack_and_ours() -> None:
    async def one(body: bytes) -> int:
        return 0

    with pytest.raises(ValueError, match="need"):
        compare("text", b"x", 1, {"a": one}, None, floor_a=None, floor_c=None)
