"""The same Chat Completions bytes through three stacks, in one run:

(a) httpx-sse framing + ``json.loads`` — merely parsing, the naive way;
(b) ``stream_openai_completions`` — our full normalization (framing, JSON, decoding, builder, events);
(c) the openai SDK's ``chat.completions.stream()`` accumulation (its ``ChatCompletionStreamState``).

Budgets (issue 11): b/a ≥ 1.5, b/c ≥ 20, and for (b) 16k tool-argument fragments at most 1.5× the
cost of 16k text deltas (the fragments hold escapes and control characters). Every chunk has the
fields OpenAI sends today. Bodies are served by an in-process transport in 16 KiB reads, the same
bytes for every stack; times are the process's CPU time, best of 7 runs taken in turn.
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
from normalize import Context, Model, StreamOptions, UserMessage
from streamfns.openai_completions import stream_openai_completions

__all__ = ["main", "run", "text_body", "tool_body"]

_READ = 16 * 1024
_REPEATS = 7
_MODEL = Model(id="gpt-bench", api="openai-completions", provider="openai", base_url="http://bench.invalid/v1")
_CONTEXT = Context(messages=[UserMessage(content="bench")])


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


def tool_body(deltas: int) -> bytes:
    """One tool call whose JSON arguments arrive in ``deltas`` fragments (escapes included)."""
    records = [{"path": f"src/module_{i}.py", "line": i, "text": 'x = "a\\tb"\n'} for i in range(deltas // 12 + 1)]
    raw = json.dumps({"edits": records})
    size = max(1, len(raw) // deltas)
    fragments = [raw[i : i + size] for i in range(0, len(raw), size)]
    fragments = [*fragments[: deltas - 1], "".join(fragments[deltas - 1 :])]
    start = {"index": 0, "id": "call_bench", "type": "function", "function": {"name": "apply_edits", "arguments": ""}}
    first = _chunk({"tool_calls": [start]})
    parts = [first] + [_chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments]
    return _frame(parts, "tool_calls")


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


async def _ours(body: bytes) -> int:
    async with _client(body) as client:
        stream = stream_openai_completions(_MODEL, _CONTEXT, StreamOptions(api_key="bench", http_client=client))
        async for _ in stream:
            pass
        message = await stream.result()
        assert message.stop_reason in ("stop", "toolUse"), message.error_message
    return 0


async def _naive(body: bytes) -> int:
    count = 0
    async with (
        _client(body) as client,
        httpx_sse.aconnect_sse(client, "POST", "http://bench.invalid/v1/chat/completions") as source,
    ):
        async for sse in source.aiter_sse():
            if sse.data != "[DONE]":
                json.loads(sse.data)
            count += 1
    return count


async def _sdk(body: bytes) -> int:
    import httpx2
    import openai

    chunks = _chunks(body)

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=_sdk_body(chunks))

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as http:
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


async def _sdk_body(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def _time_once(fn: Callable[[bytes], Coroutine[Any, Any, int]], body: bytes) -> float:
    # CPU time of this process, not wall time: the stacks do no real I/O here (an in-process
    # transport), and on a shared machine wall time mostly measures the neighbours.
    started = time.process_time()
    asyncio.run(fn(body))
    return time.process_time() - started


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
    for label, body in (("text 40k deltas", text_body(40_000)), ("tool args 16k fragments", tool_body(16_000))):
        events = _events_in(body)
        naive, ours = _best_interleaved([_naive, _ours], body)
        sdk = _time_once(_sdk, body)
        lines.append(f"{label}: {events:,} SSE events, {len(body) / 1e6:.1f} MB")
        lines.append(f"  (a) httpx-sse + json.loads     : {events / naive:>10,.0f} events/s")
        lines.append(f"  (b) stream_openai_completions  : {events / ours:>10,.0f} events/s")
        lines.append(f"  (c) openai SDK .stream()       : {events / sdk:>10,.0f} events/s ({sdk:.2f} s)")
        lines.append(f"  b/a = {naive / ours:.2f}   {verdict(naive / ours, 1.5, at_most=False)}")
        lines.append(f"  b/c = {sdk / ours:.1f}   {verdict(sdk / ours, 20.0, at_most=False)}")
    text_16k = text_body(16_000)
    tool_16k = tool_body(16_000)
    best_text, best_tool = float("inf"), float("inf")
    for _ in range(_REPEATS):
        best_text = min(best_text, _time_once(_ours, text_16k))
        best_tool = min(best_tool, _time_once(_ours, tool_16k))
    ratio = best_tool / best_text
    lines.append(
        f"stream_openai_completions tool/text cost at 16k deltas: {ratio:.2f}   {verdict(ratio, 1.5, at_most=True)}"
    )
    return lines


def main() -> None:
    """Print the Chat Completions report."""
    for line in run():
        print(line, flush=True)


if __name__ == "__main__":
    main()
