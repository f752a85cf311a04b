"""The same Anthropic bytes through three stacks, in one run:

(a) httpx-sse framing + ``json.loads`` — merely parsing, the naive way;
(b) ``stream_anthropic`` — our full normalization (framing, JSON, decoding, builder, events);
(c) the anthropic SDK's ``messages.stream()`` accumulation (its ``MessageStream``).

Budgets (DESIGN §9): b/a ≥ 1.0 (goal 1.5), b/c ≥ 10, and for (b) a 16k-delta tool call at most 2× the
cost of 16k text deltas. Bodies are served by an in-process transport in 16 KiB reads, the same
bytes for every stack.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import httpx
import httpx_sse

from bench._util import verdict
from normalize import AbortController, Context, Model, StreamOptions, UserMessage
from streamfns.anthropic import stream_anthropic

__all__ = ["main", "run", "text_body", "tool_body"]

_READ = 16 * 1024
_REPEATS = 7
_MODEL = Model(id="claude-bench", api="anthropic-messages", provider="anthropic", base_url="http://bench.invalid")
_CONTEXT = Context(messages=[UserMessage(content="bench")])


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


def tool_body(deltas: int) -> bytes:
    """One tool call whose JSON input arrives in ``deltas`` fragments."""
    records = [{"path": f"src/module_{i}.py", "line": i, "text": "x = 1"} for i in range(deltas // 12 + 1)]
    raw = json.dumps({"edits": records})
    size = max(1, len(raw) // deltas)
    fragments = [raw[i : i + size] for i in range(0, len(raw), size)]
    fragments = [*fragments[: deltas - 1], "".join(fragments[deltas - 1 :])]
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


def _chunks(body: bytes) -> list[bytes]:
    return [body[i : i + _READ] for i in range(0, len(body), _READ)]


class _Body(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


def _client(body: bytes) -> httpx.AsyncClient:
    chunks = _chunks(body)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Body(chunks))

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def _normalize(body: bytes, *, with_signal: bool) -> int:
    async with _client(body) as client:
        signal = AbortController().signal if with_signal else None
        options = StreamOptions(api_key="bench", http_client=client, signal=signal)
        stream = stream_anthropic(_MODEL, _CONTEXT, options)
        async for _ in stream:
            pass
        message = await stream.result()
        assert message.stop_reason in ("stop", "toolUse"), message.error_message
    return 0


async def _ours(body: bytes) -> int:
    return await _normalize(body, with_signal=False)


async def _ours_with_signal(body: bytes) -> int:
    # As a caller with an abort signal runs it: the abort machinery must cost nothing per read.
    return await _normalize(body, with_signal=True)


async def _naive(body: bytes) -> int:
    count = 0
    async with (
        _client(body) as client,
        httpx_sse.aconnect_sse(client, "POST", "http://bench.invalid/v1/messages") as source,
    ):
        async for sse in source.aiter_sse():
            json.loads(sse.data)
            count += 1
    return count


async def _sdk(body: bytes) -> int:
    import anthropic
    import httpx2

    chunks = _chunks(body)

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=_sdk_body(chunks))

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as http:
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


async def _sdk_body(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def _time_once(fn: Callable[[bytes], Coroutine[Any, Any, int]], body: bytes) -> float:
    started = time.perf_counter()
    asyncio.run(fn(body))
    return time.perf_counter() - started


def _best_interleaved(
    contenders: list[Callable[[bytes], Coroutine[Any, Any, int]]], body: bytes, repeats: int = _REPEATS
) -> list[float]:
    """Best time of each contender, running them in turn so machine noise hits all of them alike."""
    best = [float("inf")] * len(contenders)
    for _ in range(repeats):
        for i, fn in enumerate(contenders):
            best[i] = min(best[i], _time_once(fn, body))
    return best


def _events_in(body: bytes) -> int:
    return body.count(b"\n\n")


def run() -> list[str]:
    """Measure and return report lines."""
    lines: list[str] = []
    for label, body in (("text 40k deltas", text_body(40_000)), ("tool args 16k deltas", tool_body(16_000))):
        events = _events_in(body)
        naive, ours, signalled = _best_interleaved([_naive, _ours, _ours_with_signal], body)
        sdk = _time_once(_sdk, body)
        lines.append(f"{label}: {events:,} SSE events, {len(body) / 1e6:.1f} MB")
        lines.append(f"  (a) httpx-sse + json.loads : {events / naive:>10,.0f} events/s")
        lines.append(f"  (b) stream_anthropic       : {events / ours:>10,.0f} events/s")
        lines.append(f"  (b') … with an abort signal: {events / signalled:>10,.0f} events/s")
        lines.append(f"  (c) anthropic SDK stream() : {events / sdk:>10,.0f} events/s")
        lines.append(f"  b/a = {naive / ours:.2f}   {verdict(naive / ours, 1.0, at_most=False)} (goal 1.5)")
        lines.append(f"  b/c = {sdk / ours:.1f}   {verdict(sdk / ours, 10.0, at_most=False)}")
    text_16k = text_body(16_000)
    tool_16k = tool_body(16_000)
    best_text, best_tool = float("inf"), float("inf")
    for _ in range(_REPEATS):
        best_text = min(best_text, _time_once(_ours, text_16k))
        best_tool = min(best_tool, _time_once(_ours, tool_16k))
    ratio = best_tool / best_text
    lines.append(f"stream_anthropic tool/text cost at 16k deltas: {ratio:.2f}   {verdict(ratio, 2.0, at_most=True)}")
    return lines


def main() -> None:
    """Print the Anthropic report."""
    for line in run():
        print(line, flush=True)


if __name__ == "__main__":
    main()
