"""The same Chat Completions bytes through three stacks, in one run:

(a) httpx-sse framing + ``json.loads`` — merely parsing, the naive way;
(b) ``stream_openai_completions`` — our full normalization (framing, JSON, decoding, builder, events);
(c) the openai SDK's ``chat.completions.stream()`` accumulation (its ``ChatCompletionStreamState``).

Budgets (issue 24): b/a ≥ 2 on text and ≥ 1.8 on tool arguments, b/c ≥ 20, and for (b) 16k
tool-argument fragments at most 1.5× the cost of 16k text deltas (the fragments hold escapes and
control characters); a ``reasoning_content`` stream is measured too (no budget). Every chunk has the
fields OpenAI sends today. Bodies are served by an in-process transport in 16 KiB reads, the same
bytes for every stack; times are CPU times, medians of paired interleaved rounds judged by
``bench._util.RULE``.
"""

from __future__ import annotations

import json
from typing import Any

from bench._util import argument_fragments
from bench._wire import compare, judge_cost, normalize_body, parse_naively, sdk_http_client
from normalize import Model
from streamfns.openai_completions import stream_openai_completions

__all__ = ["main", "run", "text_body", "thinking_body", "tool_body"]

_MODEL = Model(id="gpt-bench", api="openai-completions", provider="openai", base_url="http://bench.invalid/v1")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    # The shape OpenAI sends today (see the recording pai__tool_call_gpt4o_mini): every chunk carries
    # the service tier, a null usage and an obfuscation pad besides the delta.
    value = {
        "id": "chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl",
        "object": "chat.completion.chunk",
        "created": 1782955817,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default",
        "system_fingerprint": "fp_d0469e1700",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": None,
        "obfuscation": "C63rXk",
    }
    return f"data: {json.dumps(value, separators=(',', ':'))}\n\n"


def _frame(parts: list[str], finish: str) -> bytes:
    usage: dict[str, Any] = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-bench",
        "choices": [],
        "usage": {"prompt_tokens": 25, "completion_tokens": len(parts), "total_tokens": 25 + len(parts)},
    }
    tail = _chunk({}, finish) + f"data: {json.dumps(usage, separators=(',', ':'))}\n\ndata: [DONE]\n\n"
    return (_chunk({"role": "assistant", "content": ""}) + "".join(parts) + tail).encode()


def text_body(deltas: int) -> bytes:
    """A text stream of ``deltas`` content deltas."""
    words = ("The ", "stream ", "of ", "tokens ", "arrives ", "quickly, ", "naïve ", "日本 ")
    return _frame([_chunk({"content": words[i % len(words)]}) for i in range(deltas)], "stop")


def thinking_body(deltas: int) -> bytes:
    """``deltas`` ``reasoning_content`` deltas (as DeepSeek and compatible servers stream reasoning), then
    one content delta."""
    words = ("Let ", "me ", "think ", "about ", "the ", "stream; ", "naïve ", "日本 ")
    parts = [_chunk({"reasoning_content": words[i % len(words)]}) for i in range(deltas)]
    return _frame([*parts, _chunk({"content": "Done."})], "stop")


def tool_body(deltas: int) -> bytes:
    """One tool call whose JSON arguments arrive in ``deltas`` fragments (escapes included)."""
    fragments = argument_fragments(deltas)
    start = {"index": 0, "id": "call_bench", "type": "function", "function": {"name": "apply_edits", "arguments": ""}}
    first = _chunk({"tool_calls": [start]})
    parts = [first] + [_chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments]
    return _frame(parts, "tool_calls")


async def _ours(body: bytes) -> int:
    return await normalize_body(stream_openai_completions, _MODEL, body)


async def _naive(body: bytes) -> int:
    return await parse_naively(body, "http://bench.invalid/v1/chat/completions")


async def _sdk(body: bytes) -> int:
    import openai

    async with sdk_http_client(body) as http:
        client = openai.AsyncOpenAI(
            api_key="bench", http_client=http, base_url="http://bench.invalid/v1", max_retries=0
        )
        async with client.chat.completions.stream(
            model="gpt-bench", messages=[{"role": "user", "content": "bench"}]
        ) as stream:
            async for _ in stream:
                pass
            await stream.get_final_completion()
    return 0


def run() -> list[str]:
    """Measure and return report lines."""
    lines: list[str] = []
    stacks = {"httpx-sse + json.loads": _naive, "stream_openai_completions": _ours}
    sdk = ("openai SDK .stream()", _sdk)
    for label, body, floor in (
        ("text 40k deltas", text_body(40_000), 2.0),
        ("tool args 16k fragments", tool_body(16_000), 1.8),
    ):
        lines += compare(label, body, body.count(b"\n\n"), stacks, sdk, floor_a=floor, floor_c=20.0).lines()
    body = thinking_body(16_000)
    lines += compare("thinking 16k deltas", body, body.count(b"\n\n"), stacks, None, floor_a=None, floor_c=None).lines()
    label = "stream_openai_completions tool/text cost at 16k deltas"
    lines.append(judge_cost(label, _ours, tool_body(16_000), text_body(16_000), 1.5))
    return lines


def main() -> None:
    """Print the Chat Completions report."""
    for line in run():
        print(line, flush=True)


if __name__ == "__main__":
    main()
