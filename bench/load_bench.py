"""Many streams at once at a realistic token rate: CPU, latency and memory per event, and no leaks.

``python -m bench load --streams N --rate R --seconds S``: a loopback HTTP server in its own process
(``bench/_load_server.py``) streams ``R`` text deltas a second on each of ``N`` concurrent streams
for ``S`` seconds, through each built-in adapter in turn, then through the anthropic SDK's
``messages.stream()`` at the largest of ``N, N/2, N/4, …`` streams it sustains. For each it prints:

- **CPU µs per event**: the client process's CPU time over the phase (connects and set-up included)
  divided by the events its consumers received;
- **added latency** p50 / p99: from the server writing a delta (it stamps ``CLOCK_MONOTONIC`` into
  the delta's text) to the consumer receiving the event, on the same machine;
- **memory per stream**: in a separate short pass under ``tracemalloc`` (which slows everything, so
  never during the timed phases), the peak of traced memory over the pass, less what was traced
  before it, ÷ the streams open at once (at most 100);
- whether the load was **sustained**: every stream received exactly its deltas and the p99 latency
  stayed under ``--sustain-ms`` (a client that falls behind queues, and its latency grows with time).

Ours (the Anthropic adapter) and the SDK are then each driven at ``N/2``, ``N/4``, … streams until
they sustain the load, and ours runs once more at the SDK's largest sustained load if it has not: the
per-event comparison is made at the same load, where both keep up.

Then it checks nothing leaked — every stream ended ``done`` with exactly its events, no task left,
file descriptors back to where they were, and the server has no connection left open and finished
every response it started — and exits 1 if something did. The default (100 streams × 20/s × 3 s)
is the short run of ``make bench``; the published figure is 1,000 streams × 20/s.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing
import os
import resource
import time
import tracemalloc
from array import array
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import httpx

from bench import _report
from bench._load_server import serve, stamp_ns
from bench._wire import BuiltinStreamFn
from normalize import Context, Model, StreamOptions, UserMessage

__all__ = ["Leaks", "LoadFigure", "LoadRun", "main", "measure", "report", "run_load"]

#: The apis driven, each with the model its adapter is given (the server tells apis apart by path).
_APIS: dict[str, tuple[str, str]] = {
    "anthropic-messages": ("claude-load", ""),
    "anthropic-bedrock": ("anthropic.claude-load-v1:0", ""),
    "anthropic-vertex": ("claude-load@20250101", ""),
    "bedrock-converse-stream": ("amazon.nova-load-v1:0", ""),
    "openai-completions": ("gpt-load", "/v1"),
    "openai-responses": ("gpt-load", "/v1"),
    "google-generative-ai": ("gemini-load", "/v1beta"),
    "ollama-chat": ("llama-load", ""),
}
_CONTEXT = Context(messages=[UserMessage(content="load")])
_TIMEOUT_S = 60.0  # generous: a phase that cannot keep up must show in its latency, not end in a timeout
#: Streams and seconds of the memory pass (tracemalloc multiplies CPU costs; its figures are only memory).
_MEMORY_STREAMS = 100
_MEMORY_SECONDS = 1.0
_ANTHROPIC = "anthropic-messages"


@dataclass(slots=True)
class LoadFigure:
    """One phase: ``streams`` concurrent streams of ``expected`` deltas each through one stack."""

    api: str
    stack: str
    streams: int
    rate: float
    expected: int
    events: int = 0
    ok_streams: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    memory_kib_per_stream: float | None = None
    latencies_ns: array[int] = field(default_factory=lambda: array("q"))
    sustain_ms: float = 100.0

    @property
    def cpu_us_per_event(self) -> float:
        """Client CPU µs per event received."""
        return self.cpu_s / self.events * 1e6 if self.events else float("inf")

    def latency_ms(self, quantile: float) -> float:
        """The latency at ``quantile`` (0–1), in milliseconds."""
        if not self.latencies_ns:
            return float("inf")
        ordered = sorted(self.latencies_ns)
        return ordered[min(len(ordered) - 1, int(quantile * len(ordered)))] / 1e6

    @property
    def sustained(self) -> bool:
        """Every stream got all its events, and the p99 latency stayed under the threshold."""
        return self.ok_streams == self.streams and self.latency_ms(0.99) <= self.sustain_ms

    def line(self) -> str:
        """One report line."""
        return (
            f"  {self.api:<23} {self.stack:<5} {self.streams:>5} streams: {self.events:>8,} events "
            f"({self.events / self.wall_s if self.wall_s else 0:,.0f}/s)  CPU {self.cpu_us_per_event:6.1f} µs/event  "
            f"latency p50 {self.latency_ms(0.5):6.2f} ms p99 {self.latency_ms(0.99):7.2f} ms  "
            f"memory {_kib(self.memory_kib_per_stream)} KiB/stream  "
            f"{'sustained' if self.sustained else 'NOT SUSTAINED'}"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "api": self.api,
            "stack": self.stack,
            "streams": self.streams,
            "rate": self.rate,
            "events_per_stream": self.expected,
            "events": self.events,
            "ok_streams": self.ok_streams,
            "cpu_us_per_event": round(self.cpu_us_per_event, 3),
            "latency_p50_ms": round(self.latency_ms(0.5), 3),
            "latency_p99_ms": round(self.latency_ms(0.99), 3),
            "memory_kib_per_stream": None
            if self.memory_kib_per_stream is None
            else round(self.memory_kib_per_stream, 2),
            "events_per_s": round(self.events / self.wall_s, 1) if self.wall_s else 0.0,
            "sustained": self.sustained,
        }


@dataclass(slots=True)
class Leaks:
    """What was left once every phase had ended (each must be 0)."""

    fds: int = 0
    tasks: int = 0
    server_connections: int = 0
    unfinished_responses: int = 0
    failed_streams: int = 0

    def total(self) -> int:
        """The sum of the must-be-0 figures."""
        return self.fds + self.tasks + self.server_connections + self.unfinished_responses + self.failed_streams


def _kib(value: float | None) -> str:
    return "   —" if value is None else f"{value:6.1f}"


def _open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return -1


def _record(figure: LoadFigure, text: str) -> int:
    """Record the latency of each stamp in one delta's text (should a stack merge deltas into one
    event, each still counts); how many there were."""
    now = stamp_ns()
    counted = 0
    for stamp in text.split():
        if stamp.isdigit():  # anything else is not one of the server's deltas: not counted, so its stream fails
            figure.latencies_ns.append(now - int(stamp))
            counted += 1
    figure.events += counted
    return counted


async def _phase(
    figure: LoadFigure, one: Callable[[LoadFigure], Awaitable[bool]], *, spread_s: float = 1.0
) -> LoadFigure:
    """Run ``figure.streams`` copies of ``one`` (each returns whether its stream ended well), their
    starts spread over ``spread_s`` so their deltas fall evenly in time, measuring CPU time (and,
    when ``tracemalloc`` is tracing, the peak of traced memory per stream)."""
    gc.collect()
    tracing = tracemalloc.is_tracing()
    if tracing:
        tracemalloc.reset_peak()
    traced_before = tracemalloc.get_traced_memory()[0] if tracing else 0

    async def staggered(index: int) -> bool:
        await asyncio.sleep(spread_s * index / figure.streams)
        try:
            return await one(figure)
        except Exception:  # a stack that raises (the SDK does) fails its stream, not the whole run
            return False

    cpu, wall = time.process_time(), time.perf_counter()
    results = await asyncio.gather(*(staggered(i) for i in range(figure.streams)))
    figure.cpu_s, figure.wall_s = time.process_time() - cpu, time.perf_counter() - wall
    figure.ok_streams = sum(results)
    if tracing:
        peak = tracemalloc.get_traced_memory()[1]
        figure.memory_kib_per_stream = max(0, peak - traced_before) / 1024 / figure.streams
    return figure


def _headers(events: int, rate: float) -> dict[str, str | None]:
    return {"x-load-events": str(events), "x-load-rate": f"{rate:g}"}


async def drive_ours(
    api: str, base_url: str, streams: int, rate: float, events: int, *, sustain_ms: float
) -> LoadFigure:
    """``streams`` concurrent streams of ``events`` deltas through the built-in adapter of ``api``,
    on one shared httpx client (as a service would hold one)."""
    from streamfns._adapters import builtin_adapters

    fn = cast("BuiltinStreamFn", builtin_adapters()[api].stream_fn)
    model_id, prefix = _APIS[api]
    model = Model(id=model_id, api=api, provider="load", base_url=base_url + prefix)
    figure = LoadFigure(api, "ours", streams, rate, events, sustain_ms=sustain_ms)
    # No idle keep-alive connections: every stream of the run is one request, so keeping a connection
    # buys nothing, and httpcore 1.0.9's pool costs O(idle × connections) on every request and release
    # (encode/httpcore#1035): a stream read to the end of its body (ConverseStream: its usage comes after
    # messageStop) hands its connection back idle, and 1,000 of them made that adapter's run look 2.6×
    # dearer per event than the others, all of it in the pool's bookkeeping.
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits, timeout=_TIMEOUT_S) as client:

        async def one(figure: LoadFigure) -> bool:
            headers = _headers(figure.expected, figure.rate)
            options = StreamOptions(api_key="load-test-key", http_client=client, headers=headers, timeout=_TIMEOUT_S)
            received = 0
            stream = fn(model, _CONTEXT, options)
            async for event in stream:
                if event.type == "text_delta":
                    received += _record(figure, event.delta)
            message = await stream.result()
            return message.stop_reason == "stop" and received == figure.expected == _text_count(message)

        await _warm_up(one, figure)
        await _phase(figure, one)
    return figure


async def _warm_up(one: Callable[[LoadFigure], Awaitable[bool]], figure: LoadFigure) -> None:
    """One stream before the phase, its figures thrown away: the first call imports the adapter's
    modules and fills caches, a cost no later stream pays."""
    await one(LoadFigure(figure.api, figure.stack, streams=1, rate=1000.0, expected=3))


def _text_count(message: Any) -> int:
    """The deltas a final message holds (each delta's text is one stamp and a space)."""
    return sum(len(block.text.split()) for block in message.content if getattr(block, "type", "") == "text")


async def drive_sdk(base_url: str, streams: int, rate: float, events: int, *, sustain_ms: float) -> LoadFigure:
    """The same load through the anthropic SDK's ``messages.stream()`` (a bench oracle, never imported
    by streamfns) on one client."""
    import anthropic

    figure = LoadFigure("anthropic-messages", "sdk", streams, rate, events, sustain_ms=sustain_ms)
    client = anthropic.AsyncAnthropic(api_key="load-test-key", base_url=base_url, max_retries=0, timeout=_TIMEOUT_S)

    async def one(figure: LoadFigure) -> bool:
        headers = {"x-load-events": str(figure.expected), "x-load-rate": f"{figure.rate:g}"}
        received = 0
        async with client.messages.stream(
            model="claude-load", max_tokens=64, messages=[{"role": "user", "content": "load"}], extra_headers=headers
        ) as stream:
            async for event in stream:
                if event.type == "text":
                    received += _record(figure, event.text)
            message = await stream.get_final_message()
        return message.stop_reason == "end_turn" and received == figure.expected == _text_count(message)

    try:
        await _warm_up(one, figure)
        await _phase(figure, one)
    finally:
        await client.close()
    return figure


async def _server_stats(base_url: str) -> dict[str, int]:
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(f"{base_url}/stats")
        stats: dict[str, int] = response.json()
        return stats


async def _settled(check: Callable[[], Awaitable[int]], tries: int = 200) -> int:
    """``check()`` once it reaches 0, or its last value after ``tries`` polls 50 ms apart (closing
    a socket is asynchronous on both ends; a loaded machine gets ten seconds before a figure counts)."""
    value = await check()
    for _ in range(tries):
        if value == 0:
            break
        await asyncio.sleep(0.05)
        value = await check()
    return value


@dataclass(slots=True)
class LoadRun:
    """Everything one load run measured."""

    figures: list[LoadFigure]
    ours_tries: list[LoadFigure]
    sdk_tries: list[LoadFigure]
    leaks: Leaks
    seconds: float

    @staticmethod
    def largest_sustained(tries: list[LoadFigure]) -> LoadFigure | None:
        """The try with the most streams that was sustained, if any."""
        sustained = [t for t in tries if t.sustained]
        return max(sustained, key=lambda t: t.streams) if sustained else None


async def _halving(
    drive: Callable[[int], Awaitable[LoadFigure]], first: LoadFigure | None, streams: int
) -> list[LoadFigure]:
    """Tries at ``streams``, then half as many, … until one is sustained (``first``: the try at
    ``streams`` if already made)."""
    tries = [first if first is not None else await drive(streams)]
    level = streams
    while not tries[-1].sustained and level > 1:
        level //= 2
        tries.append(await drive(level))
    return tries


async def _memory_pass(
    base_url: str, apis: list[str], figures: list[LoadFigure], sdk_tries: list[LoadFigure], rate: float
) -> None:
    """Fill each figure's memory per stream from a short pass under tracemalloc."""
    streams = min(_MEMORY_STREAMS, figures[0].streams if figures else _MEMORY_STREAMS)
    events = max(1, round(rate * _MEMORY_SECONDS))
    tracemalloc.start()
    try:
        for api, figure in zip(apis, figures, strict=True):
            measured = await drive_ours(api, base_url, streams, rate, events, sustain_ms=figure.sustain_ms)
            figure.memory_kib_per_stream = measured.memory_kib_per_stream
        if sdk_tries:
            measured = await drive_sdk(base_url, streams, rate, events, sustain_ms=sdk_tries[0].sustain_ms)
            for figure in sdk_tries:
                figure.memory_kib_per_stream = measured.memory_kib_per_stream
    finally:
        tracemalloc.stop()


async def run_load(
    base_url: str,
    *,
    streams: int,
    rate: float,
    seconds: float,
    apis: list[str] | None = None,
    sdk: bool = True,
    sustain_ms: float = 100.0,
) -> LoadRun:
    """Drive every api at ``streams`` streams; with ``sdk``, ours (Anthropic) and the anthropic SDK
    each at half as many until sustained, ours again at the SDK's sustained load; then the memory
    pass and the leak checks, against the server at ``base_url``."""
    events = max(1, round(rate * seconds))
    apis = apis or list(_APIS)
    gc.collect()
    fds_before = _open_fds()
    tasks_before = len(asyncio.all_tasks())
    stats_before = await _server_stats(base_url)

    async def ours(api: str, level: int) -> LoadFigure:
        return await drive_ours(api, base_url, level, rate, events, sustain_ms=sustain_ms)

    async def sdk_at(level: int) -> LoadFigure:
        return await drive_sdk(base_url, level, rate, events, sustain_ms=sustain_ms)

    async def ours_anthropic(level: int) -> LoadFigure:
        return await ours(_ANTHROPIC, level)

    figures = [await ours(api, streams) for api in apis]
    ours_tries: list[LoadFigure] = []
    sdk_tries: list[LoadFigure] = []
    if sdk:
        first = next((f for f in figures if f.api == _ANTHROPIC), None)
        ours_tries = await _halving(ours_anthropic, first, streams)
        sdk_tries = await _halving(sdk_at, None, streams)
        best = LoadRun.largest_sustained(sdk_tries)
        if best is not None and all(t.streams != best.streams for t in ours_tries):
            ours_tries.append(await ours_anthropic(best.streams))
    await _memory_pass(base_url, apis, figures, sdk_tries, rate)
    gc.collect()

    async def open_connections() -> int:
        return (await _server_stats(base_url))["open"] - 1  # the stats request's own connection

    async def fds() -> int:
        gc.collect()
        return max(0, _open_fds() - fds_before)

    async def tasks() -> int:
        return max(0, len(asyncio.all_tasks()) - tasks_before)

    async def unfinished() -> int:
        stats = await _server_stats(base_url)
        return (stats["started"] - stats_before["started"]) - (stats["finished"] - stats_before["finished"])

    every = {id(f): f for f in [*figures, *ours_tries, *sdk_tries]}.values()
    leaks = Leaks(
        server_connections=await _settled(open_connections),
        fds=await _settled(fds),
        tasks=await _settled(tasks),
        unfinished_responses=await _settled(unfinished),
        failed_streams=sum(f.streams - f.ok_streams for f in every),
    )
    return LoadRun(figures, ours_tries, sdk_tries, leaks, seconds)


def _serve_in_child(streams: int) -> tuple[Any, Any, str]:
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    stop = context.Event()
    server = context.Process(target=serve, args=(sender, stop, max(100, 2 * streams)), daemon=True)
    server.start()
    return server, stop, receiver.recv()


def measure(streams: int, rate: float, seconds: float, *, sdk: bool = True, sustain_ms: float = 100.0) -> LoadRun:
    """Start the server process, run :func:`run_load`, stop the server."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, streams * 3 + 256)), hard))
    server, stop, base_url = _serve_in_child(streams)
    try:
        return asyncio.run(
            run_load(base_url, streams=streams, rate=rate, seconds=seconds, sdk=sdk, sustain_ms=sustain_ms)
        )
    finally:
        stop.set()
        server.join(10)
        if server.is_alive():
            server.kill()


def report(run: LoadRun) -> list[str]:
    """Report lines (and the ``--json`` record)."""
    figures, leaks = run.figures, run.leaks
    first = figures[0] if figures else None
    rate = first.rate if first else 0.0
    lines: list[str] = []
    if first is not None:
        lines.append(
            f"load: {first.streams:,} streams × {rate:g} events/s × {run.seconds:g} s per adapter, server in its "
            "own process; latency = server write → consumer event; memory from a tracemalloc pass"
        )
    lines += [figure.line() for figure in figures]
    lines += [t.line() for t in run.ours_tries if all(t is not f for f in figures)]
    lines += [t.line() for t in run.sdk_tries]
    ours_best, sdk_best = LoadRun.largest_sustained(run.ours_tries), LoadRun.largest_sustained(run.sdk_tries)
    compared = None
    if run.sdk_tries:
        lines.append(
            f"  largest load sustained at {rate:g} events/s per stream: ours (anthropic) "
            f"{ours_best.streams if ours_best else 0:,} streams, anthropic SDK {sdk_best.streams if sdk_best else 0:,}"
        )
        if sdk_best is not None:
            compared = next((t for t in run.ours_tries if t.streams == sdk_best.streams), None)
        if compared is not None and sdk_best is not None:
            lines.append(
                f"  per event at {sdk_best.streams:,} streams: ours {compared.cpu_us_per_event:.1f} µs CPU, the SDK "
                f"{sdk_best.cpu_us_per_event:.1f} ({sdk_best.cpu_us_per_event / compared.cpu_us_per_event:.1f}× ours); "
                f"p99 latency {compared.latency_ms(0.99):.2f} ms vs {sdk_best.latency_ms(0.99):.2f} ms"
            )
    ok = leaks.total() == 0
    lines.append(
        f"  leaks: fds {leaks.fds}, tasks {leaks.tasks}, server connections open {leaks.server_connections}, "
        f"unfinished responses {leaks.unfinished_responses}, streams without exactly their events "
        f"{leaks.failed_streams}   {'ok' if ok else 'MUST BE 0'}"
    )
    _report.record(
        "load",
        {
            "streams": first.streams if first else 0,
            "rate": rate,
            "seconds": run.seconds,
            "adapters": [f.as_dict() for f in figures],
            "ours_tries": [t.as_dict() for t in run.ours_tries],
            "sdk_tries": [t.as_dict() for t in run.sdk_tries],
            "ours_sustained_streams": ours_best.streams if ours_best else 0,
            "sdk_sustained_streams": sdk_best.streams if sdk_best else 0,
            "compared_at_streams": sdk_best.streams if sdk_best and compared else 0,
            "leaks": {
                "fds": leaks.fds,
                "tasks": leaks.tasks,
                "server_connections": leaks.server_connections,
                "unfinished_responses": leaks.unfinished_responses,
                "failed_streams": leaks.failed_streams,
            },
        },
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the load suite (see the module docstring); 1 if anything leaked."""
    parser = argparse.ArgumentParser(prog="python -m bench load", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--streams", type=int, default=100, help="concurrent streams per adapter (default 100)")
    parser.add_argument("--rate", type=float, default=20.0, help="deltas per second per stream (default 20)")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each stream (default 3)")
    parser.add_argument("--no-sdk", action="store_true", help="skip the anthropic SDK comparison")
    parser.add_argument(
        "--sustain-ms", type=float, default=100.0, help="p99 latency under which a load counts as sustained"
    )
    args = parser.parse_args(argv or [])
    run = measure(args.streams, args.rate, args.seconds, sdk=not args.no_sdk, sustain_ms=args.sustain_ms)
    for line in report(run):
        print(line, flush=True)
    return 1 if run.leaks.total() else 0


if __name__ == "__main__":
    raise SystemExit(main())
