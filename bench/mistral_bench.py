"""The same Mistral chat bytes through three stacks, in one run:

(a) httpx-sse framing + ``json.loads`` — merely parsing, the naive way;
(b) ``stream_mistral`` — our full normalization (framing, JSON, decoding, builder, events);
(c) the ``mistralai`` SDK's ``chat.stream_async`` — its typed ``CompletionEvent`` per chunk — folded
    the way its users fold it (the SDK keeps no message of its own): text, thinking text, each call's
    arguments.

Budgets (those of the other SSE adapters, issue 36): b/a ≥ 2 on text and ≥ 1.8 on tool arguments,
b/c ≥ 10, and for (b) 16k tool-argument fragments at most 1.5× the cost of 16k text deltas (the
fragments hold escapes and control characters). A stream of thinking chunks (Magistral's, Small 4's)
is measured too (no budget). Every chunk has the fields Mistral sends today, its random ``p`` padding
included (see the recording ``prism__stream_basic_text_1_1_mistral-small-latest``); tool arguments
come in pieces of one call, each entry naming the call by id, name and index. Bodies are served by an in-process
transport in 16 KiB reads, the same bytes for every stack; times are CPU times, medians of paired
interleaved rounds judged by ``bench._util.RULE``.
"""

from __future__ import annotations

import json
import string
from typing import Any

from bench._util import argument_fragments
from bench._wire import compare, judge_cost, normalize_body, parse_naively, sdk_http_client
from normalize import Model
from streamfns.mistral import stream_mistral

__all__ = [
    "SDK_FLOOR_C",
    "TEXT_FLOOR_A",
    "TOOL_FLOOR_A",
    "TOOL_TEXT_COST",
    "main",
    "run",
    "text_body",
    "thinking_body",
    "tool_body",
]

# The budgets (issue 36: the other SSE adapters').
#: Text deltas: ours over the bare parse (b/a).
TEXT_FLOOR_A = 2.0
#: Tool-argument fragments: ours over the bare parse (b/a).
TOOL_FLOOR_A = 1.8
#: Text and tool-argument streams: ours over the mistralai SDK (b/c).
SDK_FLOOR_C = 10.0
#: Ours: 16k tool-argument fragments over 16k text deltas, at most.
TOOL_TEXT_COST = 1.5

_BASE = "http://bench.invalid/v1"
_MODEL = Model(id="mistral-bench", api="mistral-conversations", provider="mistral", base_url=_BASE)
_PAD = string.ascii_lowercase + string.digits


def _chunk(delta: dict[str, Any], n: int, finish: str | None = None, usage: dict[str, int] | None = None) -> str:
    # The shape Mistral sends today: id, object, created, model, one choice, and a "p" padding whose
    # length changes from chunk to chunk.
    value: dict[str, Any] = {
        "id": "2a747f6623d9422f8545021729177ba5",
        "object": "chat.completion.chunk",
        "created": 1759185828,
        "model": "mistral-bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        value["usage"] = usage
    value["p"] = _PAD[: 1 + (n * 7) % len(_PAD)]
    return f"data: {json.dumps(value, separators=(',', ':'))}\n\n"


def _frame(parts: list[str], finish: str) -> bytes:
    n = len(parts)
    usage = {"prompt_tokens": 25, "total_tokens": 25 + n, "completion_tokens": n}
    head = _chunk({"role": "assistant", "content": ""}, 0)
    tail = _chunk({"content": ""}, n + 1, finish, usage) + "data: [DONE]\n\n"
    return (head + "".join(parts) + tail).encode()


def text_body(deltas: int) -> bytes:
    """A text stream of ``deltas`` content deltas."""
    words = ("The ", "stream ", "of ", "tokens ", "arrives ", "quickly, ", "naïve ", "日本 ")
    return _frame([_chunk({"content": words[i % len(words)]}, i + 1) for i in range(deltas)], "stop")


def thinking_body(deltas: int) -> bytes:
    """``deltas`` thinking chunks (content lists holding one thinking chunk, as Magistral streams them),
    then one text delta."""
    words = ("Let ", "me ", "think ", "about ", "the ", "stream; ", "naïve ", "日本 ")
    parts = [
        _chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": words[i % len(words)]}]}]}, i)
        for i in range(1, deltas + 1)
    ]
    return _frame([*parts, _chunk({"content": "Done."}, deltas + 1)], "stop")


def tool_body(deltas: int) -> bytes:
    """One tool call whose JSON arguments arrive in ``deltas`` fragments (escapes included)."""

    # Each piece names its call as the first did (the SDK's models require a function name in every
    # entry): the decoder must tell a continuation from a new call.
    def piece(arguments: str) -> dict[str, Any]:
        return {"id": "D681PevKs", "function": {"name": "apply_edits", "arguments": arguments}, "index": 0}

    parts = [_chunk({"tool_calls": [piece(fragment)]}, i) for i, fragment in enumerate(argument_fragments(deltas), 1)]
    return _frame(parts, "tool_calls")


async def _ours(body: bytes) -> int:
    return await normalize_body(stream_mistral, _MODEL, body)


async def _naive(body: bytes) -> int:
    return await parse_naively(body, f"{_BASE}/chat/completions")


async def _sdk(body: bytes) -> int:
    from mistralai.client import Mistral  # test-only oracle: never imported by streamfns
    from mistralai.client.models import TextChunk, ThinkChunk

    text: list[str] = []
    thinking: list[str] = []
    arguments: dict[int, list[str]] = {}
    count = 0
    async with sdk_http_client(body) as http:
        client = Mistral(api_key="bench", server_url="http://bench.invalid", async_client=http)
        events = await client.chat.stream_async(model="mistral-bench", messages=[{"role": "user", "content": "bench"}])
        async for event in events:
            count += 1
            for choice in event.data.choices:
                content = choice.delta.content
                if isinstance(content, str):
                    text.append(content)
                elif isinstance(content, list):
                    for part in content:
                        if isinstance(part, TextChunk):
                            text.append(part.text)
                        elif isinstance(part, ThinkChunk):
                            thinking.extend(item.text for item in part.thinking if isinstance(item, TextChunk))
                for call in choice.delta.tool_calls or []:
                    given = call.function.arguments
                    piece = given if isinstance(given, str) else json.dumps(given)
                    arguments.setdefault(call.index or 0, []).append(piece)
    return count


def run() -> list[str]:
    """Measure and return report lines."""
    lines: list[str] = []
    stacks = {"httpx-sse + json.loads": _naive, "stream_mistral": _ours}
    sdk = ("mistralai SDK stream_async", _sdk)
    for label, body, floor in (
        ("text 40k deltas", text_body(40_000), TEXT_FLOOR_A),
        ("tool args 16k fragments", tool_body(16_000), TOOL_FLOOR_A),
    ):
        lines += compare(label, body, body.count(b"\n\n"), stacks, sdk, floor_a=floor, floor_c=SDK_FLOOR_C).lines()
    body = thinking_body(16_000)
    lines += compare("thinking 16k deltas", body, body.count(b"\n\n"), stacks, None, floor_a=None, floor_c=None).lines()
    label = "stream_mistral tool/text cost at 16k deltas"
    lines.append(judge_cost(label, _ours, tool_body(16_000), text_body(16_000), TOOL_TEXT_COST))
    return lines


def main() -> None:
    """Print the Mistral report."""
    for line in run():
        print(line, flush=True)


if __name__ == "__main__":
    main()
