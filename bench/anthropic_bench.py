"""The same Anthropic bytes through three stacks, in one run:

(a) httpx-sse framing + ``json.loads`` — merely parsing, the naive way;
(b) ``stream_anthropic`` — our full normalization (framing, JSON, decoding, builder, events);
(c) the anthropic SDK's ``messages.stream()`` accumulation (its ``MessageStream``).

Budgets (issue 24): b/a ≥ 2 on text and ≥ 1.8 on tool arguments, b/c ≥ 20, and for (b) a 16k-delta
tool call at most 1.5× the cost of 16k text deltas; a thinking stream is measured too (no budget).
Bodies are served by an in-process transport in 16 KiB reads, the same bytes for every stack; times
are the process's CPU time, medians of paired interleaved rounds judged by ``bench._util.RULE``.
"""

from __future__ import annotations

import json
from typing import Any

from bench._util import argument_fragments
from bench._wire import compare, judge_cost, normalize_body, parse_naively, sdk_http_client
from normalize import Model
from streamfns.anthropic import stream_anthropic

__all__ = ["main", "run", "text_body", "thinking_body", "tool_body"]

_MODEL = Model(id="claude-bench", api="anthropic-messages", provider="anthropic", base_url="http://bench.invalid")


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _frame(blocks: list[str], stop: str) -> bytes:
    head = _event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_bench",
                "type": "message",
                "role": "assistant",
                "model": "claude-bench",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 25, "output_tokens": 1},
            },
        },
    )
    tail = _event(
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 9}},
    ) + _event("message_stop", {"type": "message_stop"})
    return (head + "".join(blocks) + tail).encode()


def text_body(deltas: int) -> bytes:
    """A text stream of ``deltas`` text deltas."""
    words = ("The ", "stream ", "of ", "tokens ", "arrives ", "quickly, ", "naïve ", "日本 ")
    parts = [
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
    ]
    parts += [
        _event(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": words[i % len(words)]}},
        )
        for i in range(deltas)
    ]
    parts.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    return _frame(parts, "end_turn")


def thinking_body(deltas: int) -> bytes:
    """A thinking block of ``deltas`` thinking deltas and its signature, then a one-delta text block."""
    words = ("Let ", "me ", "think ", "about ", "the ", "stream; ", "naïve ", "日本 ")
    parts = [
        _event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        )
    ]
    parts += [
        _event(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": words[i % 8]}},
        )
        for i in range(deltas)
    ]
    signature = {"type": "signature_delta", "signature": "EqQBCkYIBxgCKkB" + "x" * 300}
    parts.append(_event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": signature}))
    parts.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    parts.append(
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        )
    )
    parts.append(
        _event(
            "content_block_delta",
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Done."}},
        )
    )
    parts.append(_event("content_block_stop", {"type": "content_block_stop", "index": 1}))
    return _frame(parts, "end_turn")


def tool_body(deltas: int) -> bytes:
    """One tool call whose JSON input arrives in ``deltas`` fragments (escapes included)."""
    fragments = argument_fragments(deltas)
    parts = [
        _event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_bench", "name": "apply_edits", "input": {}},
            },
        )
    ]
    parts += [
        _event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": fragment},
            },
        )
        for fragment in fragments
    ]
    parts.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    return _frame(parts, "tool_use")


async def _ours(body: bytes) -> int:
    return await normalize_body(stream_anthropic, _MODEL, body)


async def _ours_with_signal(body: bytes) -> int:
    # As a caller with an abort signal runs it: the abort machinery must cost nothing per read.
    return await normalize_body(stream_anthropic, _MODEL, body, with_signal=True)


async def _naive(body: bytes) -> int:
    return await parse_naively(body, "http://bench.invalid/v1/messages")


async def _sdk(body: bytes) -> int:
    import anthropic

    async with sdk_http_client(body) as http:
        client = anthropic.AsyncAnthropic(
            api_key="bench", http_client=http, base_url="http://bench.invalid", max_retries=0
        )
        async with client.messages.stream(
            model="claude-bench", max_tokens=64, messages=[{"role": "user", "content": "bench"}]
        ) as stream:
            async for _ in stream:
                pass
            await stream.get_final_message()
    return 0


def run() -> list[str]:
    """Measure and return report lines."""
    lines: list[str] = []
    stacks = {
        "httpx-sse + json.loads": _naive,
        "stream_anthropic": _ours,
        "… with an abort signal": _ours_with_signal,
    }
    sdk = ("anthropic SDK stream()", _sdk)
    for label, body, floor in (
        ("text 40k deltas", text_body(40_000), 2.0),
        ("tool args 16k deltas", tool_body(16_000), 1.8),
    ):
        lines += compare(label, body, body.count(b"\n\n"), stacks, sdk, floor_a=floor, floor_c=20.0).lines()
    body = thinking_body(16_000)
    lines += compare("thinking 16k deltas", body, body.count(b"\n\n"), stacks, None, floor_a=None, floor_c=None).lines()
    lines.append(
        judge_cost("stream_anthropic tool/text cost at 16k deltas", _ours, tool_body(16_000), text_body(16_000), 1.5)
    )
    return lines


def main() -> None:
    """Print the Anthropic report."""
    for line in run():
        print(line, flush=True)


if __name__ == "__main__":
    main()
