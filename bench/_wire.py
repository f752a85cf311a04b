"""The harness the per-adapter benchmarks share: one body served alike to every stack, and fair timing.

Every stack reads the same bytes from an in-process transport in 16 KiB reads, so what is compared is
parsing and accumulation, not networking. Times are the process's CPU time: every contender is
single-threaded and waits on nothing, so CPU time is the time it needs, and other jobs on a shared
machine do not leak into it the way they leak into wall-clock time. Contenders are timed in paired
interleaved rounds (:class:`Rounds`) and their ratios judged by the rule of ``bench._util`` (``RULE``):
a figure shown is the median of its rounds, a ratio the median of the rounds' ratios with its interval.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import httpx
import httpx_sse

from bench import _report
from bench._util import MIN_ROUNDS, Judgement, settle
from normalize import AbortController, AssistantMessageEventStream, Context, Model, StreamOptions, UserMessage

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "BENCH_CONTEXT",
    "REPEATS",
    "Comparison",
    "Contender",
    "Rounds",
    "best_interleaved",
    "compare",
    "compare_stacks",
    "cost_ratio",
    "cpu_time",
    "judge_cost",
    "normalize_body",
    "parse_eventstream_naively",
    "parse_naively",
    "sdk_http_client",
    "served",
    "transport",
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


def transport(body: bytes, media_type: str = "text/event-stream") -> httpx.MockTransport:
    """An httpx transport whose every request answers 200 ``media_type`` with ``body``, in 16 KiB reads."""
    reads = _reads(body)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": media_type}, stream=_Reads(reads))

    return httpx.MockTransport(handler)


def served(body: bytes, media_type: str = "text/event-stream") -> httpx.AsyncClient:
    """An httpx client over :func:`transport`."""
    return httpx.AsyncClient(transport=transport(body, media_type))


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


async def normalize_body(
    stream_fn: BuiltinStreamFn,
    model: Model,
    body: bytes,
    *,
    with_signal: bool = False,
    media_type: str = "text/event-stream",
) -> int:
    """Run ``stream_fn`` over ``body`` (served as ``media_type``) to its final message, which must be a
    success; returns how many events the stream gave."""
    count = 0
    async with served(body, media_type) as client:
        signal = AbortController().signal if with_signal else None
        options = StreamOptions(api_key="bench", http_client=client, signal=signal)
        stream = stream_fn(model, BENCH_CONTEXT, options)
        async for _ in stream:
            count += 1
        message = await stream.result()
        assert message.stop_reason in ("stop", "toolUse"), message.error_message
    return count


async def parse_eventstream_naively(body: bytes, url: str, read: Callable[[bytes], object] = json.loads) -> int:
    """botocore's ``EventStreamBuffer`` framing plus ``read`` of every message's payload (``json.loads``
    unless the payload wraps something else): merely framing and parsing, as boto3 does it."""
    from botocore.eventstream import EventStreamBuffer  # pyright: ignore[reportMissingTypeStubs]

    count = 0
    buffer: Any = EventStreamBuffer()
    async with served(body, "application/vnd.amazon.eventstream") as client, client.stream("POST", url) as response:
        async for chunk in response.aiter_raw():
            buffer.add_data(chunk)
            for message in buffer:
                read(message.payload)
                count += 1
    return count


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


class Rounds:
    """CPU times of some contenders over one body, measured in interleaved rounds.

    Every contender runs once first as a warm-up that is not kept (imports, first-call caches: the
    first round came out ~20 % off). Each round then times every contender back to back, in an order
    that alternates between rounds, so drift and a neighbour's burst hit both sides of a ratio alike;
    ``ratios(i, j)`` pairs the times of one round.
    """

    def __init__(self, contenders: Sequence[Contender], body: bytes) -> None:
        self._contenders = list(contenders)
        self._body = body
        self.times: list[list[float]] = [[] for _ in self._contenders]
        for fn in self._contenders:
            cpu_time(fn, body)

    def __len__(self) -> int:
        return len(self.times[0])

    def more(self, n: int) -> None:
        """Measure ``n`` more rounds."""
        for _ in range(n):
            order = list(enumerate(self._contenders))
            if len(self) % 2:
                order.reverse()
            for i, fn in order:
                self.times[i].append(cpu_time(fn, self._body))

    def ratios(self, i: int, j: int) -> list[float]:
        """Per round, contender ``i``'s time over contender ``j``'s (how many times faster ``j`` is)."""
        return [a / b for a, b in zip(self.times[i], self.times[j], strict=True)]

    def median(self, i: int) -> float:
        """Contender ``i``'s median time."""
        return statistics.median(self.times[i])

    def settle(
        self,
        i: int,
        j: int,
        budget: float | None,
        *,
        at_most: bool = False,
        rounds: int = MIN_ROUNDS,
        scale: float = 1.0,
    ) -> Judgement:
        """Judge ``scale`` × ``ratios(i, j)`` against ``budget`` (bench._util.RULE), measuring at least
        ``rounds`` rounds and more while the verdict is undecided."""
        if len(self) < rounds:
            self.more(rounds - len(self))

        def scaled() -> list[float]:
            return [ratio * scale for ratio in self.ratios(i, j)]

        samples = scaled()

        def more(n: int) -> None:
            self.more(n)
            samples[:] = scaled()

        return settle(samples, more, budget, at_most=at_most)


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


def judge_cost(
    label: str, fn: Contender, heavier: bytes, lighter: bytes, budget: float, *, per_event: bool = False
) -> str:
    """A report line: ``fn``'s cost on ``heavier`` over its cost on ``lighter`` (paired rounds, one
    body after the other), judged against an upper ``budget`` by the rule; recorded for ``--json``.

    The two bodies are compared whole (they hold as many deltas or lines), or with ``per_event`` per
    event each gives ``fn`` (its return value): for a body whose unit makes several events, as a tool
    call that arrives whole makes a start, one delta and an end."""
    scale = 1.0
    if per_event:
        heavier_events, lighter_events = asyncio.run(fn(heavier)), asyncio.run(fn(lighter))
        if heavier_events <= 0 or lighter_events <= 0:
            raise ValueError(f"{label}: per-event costs need a contender that counts its events")
        scale = lighter_events / heavier_events

    async def on_heavier(_: bytes) -> int:
        return await fn(heavier)

    async def on_lighter(_: bytes) -> int:
        return await fn(lighter)

    rounds = Rounds([on_heavier, on_lighter], b"")
    judgement = rounds.settle(0, 1, budget, at_most=True, scale=scale)
    _report.record("ratios", {"label": label, **judgement.as_dict()})
    return f"{label}: {judgement.text()}"


def _kind_of(label: str) -> str:
    lowered = label.lower()
    if "think" in lowered or "reason" in lowered:
        return "thinking"
    if "tool" in lowered or "partialargs" in lowered or "argument" in lowered:
        return "tool"
    return "text"


@dataclass(slots=True)
class Comparison:
    """One body through (a) the bare parse, (b) ours and its variants, (m) a minimal decoder on the
    same kit when one is given, (c) the vendor SDK: median CPU time per event of each, and the judged
    ratios b/a and b/c (how many times faster ours is), with m/a and m/c beside them without a budget,
    and b/m (ours against the minimal decoder: 1 is as fast) judged when the suite gives it a floor."""

    label: str
    kind: str
    events: int
    size: int
    stacks: list[tuple[str, str, float]]  # (tag, name, median seconds)
    ratios: list[tuple[str, Judgement]]

    def lines(self) -> list[str]:
        """The report lines."""
        out = [f"{self.label}: {self.events:,} events, {self.size / 1e6:.1f} MB"]
        width = max(len(tag + name) for tag, name, _ in self.stacks) + 1
        for tag, name, seconds in self.stacks:
            rate, cost = self.events / seconds, seconds / self.events * 1e6
            out.append(f"  {(tag + name).ljust(width)}: {rate:>10,.0f} events/s {cost:7.2f} µs/event")
        out += [f"  {name} = {judgement.text()}" for name, judgement in self.ratios]
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (µs per event of each stack, the judged ratios)."""
        roles = {"(a) ": "bare", "(b) ": "ours", "(b') ": "variant", "(m) ": "minimal", "(c) ": "sdk"}
        return {
            "label": self.label,
            "kind": self.kind,
            "events": self.events,
            "bytes": self.size,
            "stacks": [
                {"role": roles[tag], "name": name, "us_per_event": round(seconds / self.events * 1e6, 4)}
                for tag, name, seconds in self.stacks
            ],
            "ratios": {name: judgement.as_dict() for name, judgement in self.ratios},
        }


def compare(
    label: str,
    body: bytes,
    events: int,
    stacks: Mapping[str, Contender],
    sdk: tuple[str, Contender] | None,
    *,
    floor_a: float | None,
    floor_c: float | None,
    kind: str | None = None,
    minimal: tuple[str, Contender] | None = None,
    floor_m: float | None = None,
) -> Comparison:
    """One body through (a) the bare parse, (b) ours (and its variants), (m) ``minimal`` and (c) the
    vendor SDK.

    ``stacks`` maps a display name to a contender, in order: the first is (a), the second is (b),
    any more are variants of (b) shown as (b'), all measured in the same interleaved rounds.
    ``minimal`` is the adapter's stack with a decoder that only parses each frame and makes the one
    builder call its content needs, none of the checks: what no decoder on the kit can undercut, so
    m/a and m/c (shown without a budget) say whether a budget is within reach of any decoder at all.
    It is timed in the rounds of (a) and (b), and in the SDK's. The SDK is slow: it gets rounds of its
    own, paired with (b), one at first and more only while its ratio is undecided. ``floor_*`` None:
    the ratio is shown without a budget. ``floor_m``: ours is also judged against the minimal decoder,
    time(m)/time(b) ≥ ``floor_m`` (b/m, from the rounds of (a) and (b)), by the same rule; None (the
    default): no b/m line. Recorded for ``--json``.
    """
    if len(stacks) < 2:
        raise ValueError(f"{label}: stacks need (a) the bare parse and (b) ours")
    if floor_m is not None and minimal is None:
        raise ValueError(f"{label}: a floor against the minimal decoder needs the minimal decoder")
    names, contenders = list(stacks), list(stacks.values())
    at = len(contenders)  # where the minimal decoder's contender is, when there is one
    if minimal is not None:
        contenders.append(minimal[1])
    rounds = Rounds(contenders, body)
    judged = [("b/a", rounds.settle(0, 1, floor_a))]
    rows = [("(a) ", names[0], rounds.median(0)), ("(b) ", names[1], rounds.median(1))]
    rows += [("(b') ", name, rounds.median(i)) for i, name in enumerate(names[2:], start=2)]
    if minimal is not None:
        judged.append(("m/a", rounds.settle(0, at, None)))
        if floor_m is not None:
            judged.append(("b/m", rounds.settle(at, 1, floor_m)))
        rows.append(("(m) ", minimal[0], rounds.median(at)))
    if sdk is not None:
        paired = [sdk[1], contenders[1]] if minimal is None else [sdk[1], contenders[1], minimal[1]]
        sdk_rounds = Rounds(paired, body)
        judged.append(("b/c", sdk_rounds.settle(0, 1, floor_c, rounds=1)))
        if minimal is not None:
            judged.append(("m/c", sdk_rounds.settle(0, 2, None, rounds=1)))
        rows.append(("(c) ", sdk[0], sdk_rounds.median(0)))
    comparison = Comparison(label, kind or _kind_of(label), events, len(body), rows, judged)
    _report.record("comparisons", comparison.as_dict())
    return comparison


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
    """Report lines of :func:`compare` (the older entry point: same measurement, same rule)."""
    return compare(label, body, events, stacks, sdk, floor_a=floor_a, floor_c=floor_c).lines()
