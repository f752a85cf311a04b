"""Many streams at once at a realistic token rate: CPU, latency and memory per event, and no leaks.

``python -m bench load --streams N --rate R --seconds S``: a loopback HTTP server in its own process
(``bench/_load_server.py``) streams ``R`` text deltas a second on each of ``N`` concurrent streams
for ``S`` seconds, through each built-in adapter in turn, then through the anthropic SDK's
``messages.stream()`` at the largest of ``N, N/2, N/4, …`` streams it sustains. For each it prints:

- **CPU µs per event**: the client process's CPU time over the phase (connects and set-up included)
  divided by the events its consumers received;
- **added latency** p50 / p99: from the server writing a delta (it stamps ``CLOCK_MONOTONIC`` into
  the delta's text) to the consumer receiving the event, on the same machine;
- **memory per stream**: the rise of the client's RSS (sampled every 50 ms) over the phase ÷ ``N``;
- whether the load was **sustained**: every stream received exactly its deltas and the p99 latency
  stayed under ``--sustain-ms`` (a client that falls behind queues, and its latency grows with time).

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
from array import array
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import httpx

from bench import _report
from bench._load_server import serve, stamp_ns
from bench._wire import BuiltinStreamFn
from normalize import Context, Model, StreamOptions, UserMessage

__all__ = ["Leaks", "LoadFigure", "main", "run_load"]

#: The apis driven, each with the model its adapter is given (the server tells apis apart by path).
_APIS: dict[str, tuple[str, str]] = {
    "anthropic-messages": ("claude-load", ""),
    "openai-completions": ("gpt-load", "/v1"),
    "openai-responses": ("gpt-load", "/v1"),
    "google-generative-ai": ("gemini-load", "/v1beta"),
    "ollama-chat": ("llama-load", ""),
}
_CONTEXT = Context(messages=[UserMessage(content="load")])
_TIMEOUT_S = 60.0  # generous: a phase that cannot keep up must show in its latency, not end in a timeout
_SAMPLE_S = 0.05
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


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
    rss_rise_kib: float = 0.0
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
            f"  {self.api:<21} {self.stack:<5} {self.streams:>5} streams: {self.events:>8,} events "
            f"({self.events / self.wall_s if self.wall_s else 0:,.0f}/s)  CPU {self.cpu_us_per_event:6.1f} µs/event  "
            f"latency p50 {self.latency_ms(0.5):6.2f} ms p99 {self.latency_ms(0.99):7.2f} ms  "
            f"RSS {self.rss_rise_kib / self.streams:6.1f} KiB/stream  "
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
            "rss_kib_per_stream": round(self.rss_rise_kib / self.streams, 2),
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


def _rss_kib() -> float:
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * _PAGE / 1024
    except OSError:  # not Linux: the peak is the best there is
        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return -1


def _record(figure: LoadFigure, text: str) -> int:
    """Record the latency of each stamp in one delta's text (should a stack merge deltas into one
    event, each still counts); how many there were."""
    now = stamp_ns()
    stamps = text.split()
    for stamp in stamps:
        figure.latencies_ns.append(now - int(stamp))
    figure.events += len(stamps)
    return len(stamps)


async def _phase(
    figure: LoadFigure, one: Callable[[LoadFigure], Awaitable[bool]], *, spread_s: float = 1.0
) -> LoadFigure:
    """Run ``figure.streams`` copies of ``one`` (each returns whether its stream ended well), their
    starts spread over ``spread_s`` so their deltas fall evenly in time, measuring CPU and RSS."""
    gc.collect()
    peak = baseline = _rss_kib()
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _rss_kib())
            await asyncio.sleep(_SAMPLE_S)

    async def staggered(index: int) -> bool:
        await asyncio.sleep(spread_s * index / figure.streams)
        return await one(figure)

    sampler = asyncio.ensure_future(sample())
    cpu, wall = time.process_time(), time.perf_counter()
    results = await asyncio.gather(*(staggered(i) for i in range(figure.streams)))
    figure.cpu_s, figure.wall_s = time.process_time() - cpu, time.perf_counter() - wall
    done.set()
    await sampler
    figure.ok_streams = sum(results)
    figure.rss_rise_kib = max(0.0, peak - baseline)
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
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
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


async def _settled(check: Callable[[], Awaitable[int]], tries: int = 40) -> int:
    """``check()`` once it reaches 0, or its last value after ``tries`` polls 50 ms apart (closing
    a socket is asynchronous on both ends)."""
    value = await check()
    for _ in range(tries):
        if value == 0:
            break
        await asyncio.sleep(0.05)
        value = await check()
    return value


async def run_load(
    base_url: str,
    *,
    streams: int,
    rate: float,
    seconds: float,
    apis: list[str] | None = None,
    sdk: bool = True,
    sustain_ms: float = 100.0,
) -> tuple[list[LoadFigure], list[LoadFigure], Leaks]:
    """Drive every api (then the SDK, halving its streams until it sustains the load) against the
    server at ``base_url``; the adapters' figures, the SDK's tries, and what leaked."""
    events = max(1, round(rate * seconds))
    gc.collect()
    fds_before = _open_fds()
    tasks_before = len(asyncio.all_tasks())
    stats_before = await _server_stats(base_url)
    figures = [
        await drive_ours(api, base_url, streams, rate, events, sustain_ms=sustain_ms) for api in (apis or list(_APIS))
    ]
    tries: list[LoadFigure] = []
    level = streams
    while sdk and level >= 1:
        figure = await drive_sdk(base_url, level, rate, events, sustain_ms=sustain_ms)
        tries.append(figure)
        if figure.sustained or level == 1:
            break
        level //= 2
    gc.collect()

    async def open_connections() -> int:
        return (await _server_stats(base_url))["open"] - 1  # the stats request's own connection

    async def fds() -> int:
        gc.collect()
        return max(0, _open_fds() - fds_before)

    async def tasks() -> int:
        return max(0, len(asyncio.all_tasks()) - tasks_before)

    stats = await _server_stats(base_url)
    leaks = Leaks(
        server_connections=await _settled(open_connections),
        fds=await _settled(fds),
        tasks=await _settled(tasks),
        unfinished_responses=(stats["started"] - stats_before["started"])
        - (stats["finished"] - stats_before["finished"]),
        failed_streams=sum(f.streams - f.ok_streams for f in figures + tries[-1:]),
    )
    return figures, tries, leaks


def _serve_in_child(streams: int) -> tuple[Any, Any, str]:
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    stop = context.Event()
    server = context.Process(target=serve, args=(sender, stop, max(100, 2 * streams)), daemon=True)
    server.start()
    return server, stop, receiver.recv()


def measure(
    streams: int, rate: float, seconds: float, *, sdk: bool = True, sustain_ms: float = 100.0
) -> tuple[list[LoadFigure], list[LoadFigure], Leaks]:
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


def report(figures: list[LoadFigure], tries: list[LoadFigure], leaks: Leaks, *, seconds: float) -> list[str]:
    """Report lines (and the ``--json`` record)."""
    first = figures[0] if figures else None
    lines: list[str] = []
    if first is not None:
        lines.append(
            f"load: {first.streams:,} streams × {first.rate:g} events/s × {seconds:g} s per adapter, server in its own "
            "process; latency = server write → consumer event"
        )
    lines += [figure.line() for figure in figures]
    best = next((t for t in reversed(tries) if t.sustained), tries[-1] if tries else None)
    ours = next((f for f in figures if f.api == "anthropic-messages"), None)
    if best is not None:
        lines += [t.line() for t in tries]
        verdict = "sustained" if best.sustained else "not sustained at any level tried"
        lines.append(f"  anthropic SDK: largest load {verdict}: {best.streams:,} streams")
        if ours is not None and best.events:
            lines.append(
                f"  per event, ours vs the SDK: {best.cpu_us_per_event / ours.cpu_us_per_event:.1f}× less CPU, "
                f"p99 latency {ours.latency_ms(0.99):.2f} ms vs {best.latency_ms(0.99):.2f} ms"
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
            "rate": first.rate if first else 0,
            "seconds": seconds,
            "adapters": [f.as_dict() for f in figures],
            "sdk_tries": [t.as_dict() for t in tries],
            "sdk_sustained_streams": best.streams if best is not None and best.sustained else 0,
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
    figures, tries, leaks = measure(
        args.streams, args.rate, args.seconds, sdk=not args.no_sdk, sustain_ms=args.sustain_ms
    )
    for line in report(figures, tries, leaks, seconds=args.seconds):
        print(line, flush=True)
    return 1 if leaks.total() else 0


if __name__ == "__main__":
    raise SystemExit(main())
