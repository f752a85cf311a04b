"""The harness the per-adapter benchmarks share: one body served alike to every stack, and fair timing.

Every stack reads the same bytes from an in-process transport in 16 KiB reads, so what is compared is
parsing and accumulation, not networking. Times are the process's CPU time: every contender is
single-threaded and waits on nothing, so CPU time is the time it needs, and other jobs on a shared
machine do not leak into it the way they leak into wall-clock time.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import httpx
import httpx_sse

from bench._util import verdict
from normalize import AbortController, AssistantMessageEventStream, Context, Model, StreamOptions, UserMessage

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "BENCH_CONTEXT",
    "REPEATS",
    "Contender",
    "best_interleaved",
    "compare_stacks",
    "cost_ratio",
    "cpu_time",
    "normalize_body",
    "parse_naively",
    "sdk_http_client",
    "served",
]

READ = 16 * 1024
REPEATS = 7
BENCH_CONTEXT = Context(messages=[UserMessage(content="bench")])

Contender: TypeAlias = Callable[[bytes], Coroutine[Any, Any, int]]
"""One stack under measurement: consumes a whole body, returns how many events it saw (or 0)."""

BuiltinStreamFn: TypeAlias = Callable[[Model, Context, StreamOptions], AssistantMessageEventStream]


def _reads(body: bytes) -> list[bytes]:
    return [body[i : i + READ] for i in range(0, len(body), READ)]


class _Reads(httpx.AsyncByteStream):
    def __init__(self, reads: list[bytes]) -> None:
        self._reads = reads

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for read in self._reads:
            yield read


def served(body: bytes) -> httpx.AsyncClient:
    """An httpx client whose every request answers 200 ``text/event-stream`` with ``body``."""
    reads = _reads(body)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Reads(reads))

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def sdk_http_client(body: bytes) -> httpx2.AsyncClient:
    """The same, for the vendor SDKs that run on httpx2 (imported here only: SDKs are bench/test oracles)."""
    import httpx2

    reads = _reads(body)

    async def content() -> AsyncIterator[bytes]:
        for read in reads:
            yield read

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content())

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


async def normalize_body(stream_fn: BuiltinStreamFn, model: Model, body: bytes, *, with_signal: bool = False) -> int:
    """Run ``stream_fn`` over ``body`` to its final message; the message must be a success."""
    async with served(body) as client:
        signal = AbortController().signal if with_signal else None
        options = StreamOptions(api_key="bench", http_client=client, signal=signal)
        stream = stream_fn(model, BENCH_CONTEXT, options)
        async for _ in stream:
            pass
        message = await stream.result()
        assert message.stop_reason in ("stop", "toolUse"), message.error_message
    return 0


async def parse_naively(body: bytes, url: str) -> int:
    """httpx-sse framing plus ``json.loads`` of every data field (``[DONE]`` aside): merely parsing."""
    count = 0
    async with served(body) as client, httpx_sse.aconnect_sse(client, "POST", url) as source:
        async for sse in source.aiter_sse():
            if sse.data != "[DONE]":
                json.loads(sse.data)
            count += 1
    return count


def cpu_time(fn: Contender, body: bytes) -> float:
    """CPU seconds one run of ``fn`` over ``body`` takes, event loop set-up included."""
    started = time.process_time()
    asyncio.run(fn(body))
    return time.process_time() - started


def best_interleaved(contenders: list[Contender], body: bytes, repeats: int = REPEATS) -> list[float]:
    """Best time of each contender, running them in turn so machine noise hits all of them alike."""
    best = [float("inf")] * len(contenders)
    for _ in range(repeats):
        for i, fn in enumerate(contenders):
            best[i] = min(best[i], cpu_time(fn, body))
    return best


def cost_ratio(fn: Contender, heavier: bytes, lighter: bytes, repeats: int = REPEATS) -> float:
    """Best time of ``fn`` on ``heavier`` over its best time on ``lighter``, measured in turn."""
    best_heavier, best_lighter = float("inf"), float("inf")
    for _ in range(repeats):
        best_lighter = min(best_lighter, cpu_time(fn, lighter))
        best_heavier = min(best_heavier, cpu_time(fn, heavier))
    return best_heavier / best_lighter


def compare_stacks(
    label: str,
    body: bytes,
    events: int,
    stacks: Mapping[str, Contender],
    sdk: tuple[str, Contender],
    *,
    floor_a: float,
    floor_c: float,
) -> list[str]:
    """Report lines for one body through (a) httpx-sse + ``json.loads``, (b) ours (and its variants)
    and (c) the vendor SDK: events/s of each, then b/a and b/c against their floors.

    ``stacks`` maps a display name to a contender, in order: the first is (a), the second is (b),
    any more are variants of (b) shown as (b'), measured interleaved with them.
    """
    (naive_name, ours_name, *variant_names), contenders = list(stacks), list(stacks.values())
    naive, ours, *variants = best_interleaved(contenders, body)
    sdk_name, sdk_fn = sdk
    sdk_s = cpu_time(sdk_fn, body)
    lines = [f"{label}: {events:,} SSE events, {len(body) / 1e6:.1f} MB"]
    rows = [("(a) ", naive_name, naive), ("(b) ", ours_name, ours)]
    rows += [("(b') ", name, seconds) for name, seconds in zip(variant_names, variants, strict=True)]
    rows.append(("(c) ", sdk_name, sdk_s))
    width = max(len(tag + name) for tag, name, _ in rows) + 1
    lines += [f"  {(tag + name).ljust(width)}: {events / seconds:>10,.0f} events/s" for tag, name, seconds in rows]
    lines.append(f"  b/a = {naive / ours:.2f}   {verdict(naive / ours, floor_a, at_most=False)}")
    lines.append(f"  b/c = {sdk_s / ours:.1f}   {verdict(sdk_s / ours, floor_c, at_most=False)}")
    return lines
