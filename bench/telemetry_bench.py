"""What OpenTelemetry costs a stream, per event, in one run: ``python -m bench telemetry``.

Three configurations stream the same Anthropic body through ``stream_anthropic`` (the whole kit):

(a) none — telemetry as if ``opentelemetry-api`` were not installed;
(b) the ``streamfns[otel]`` extra installed but no provider configured (the API's proxy providers);
(c) the OpenTelemetry SDK configured: a tracer provider whose span processor hands every span to an
    exporter (one that keeps nothing, so memory stays flat) and a meter provider with an in-memory
    reader — a span, its attributes and four histograms per stream.

Budgets (issue 25): b/a ≤ 1.05 and c/a ≤ 1.15. Each body is served by an in-process transport, once
with one server-sent event per read (the worst case: the kit's per-read work is per event) and once in
16 KiB reads. Rounds are interleaved (a, b, c in a shuffled order each round); each ratio is a paired
one (CPU times of the same round) judged by ``bench._util.RULE``, so a machine that slows down mid-run
slows all three alike.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx

from bench import _report
from bench._util import MIN_ROUNDS, settle
from normalize import Context, Model, StreamOptions, UserMessage
from streamfns.anthropic import stream_anthropic
from streamfns.kit import telemetry

__all__ = ["main", "run", "text_body"]

_MODEL = Model(id="claude-bench", api="anthropic-messages", provider="anthropic", base_url="https://bench.invalid")
_CONTEXT = Context(messages=[UserMessage(content="bench", timestamp=0)])
_READ = 16 * 1024
_BUDGETS = {"extra, no provider": 1.05, "SDK configured": 1.15}


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def text_body(deltas: int) -> list[bytes]:
    """An Anthropic text stream of ``deltas`` text deltas, one server-sent event per item."""
    start: dict[str, Any] = {
        "type": "message_start",
        "message": {
            "id": "msg_bench",
            "type": "message",
            "role": "assistant",
            "model": "claude-bench",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    events = [
        _event("message_start", start),
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
    ]
    words = ("Hello", " there", ", friend", " and", " caf\u00e9", "\n")
    events += [
        _event(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": words[n % len(words)]}},
        )
        for n in range(deltas)
    ]
    events += [
        _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _event(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": deltas}},
        ),
        _event("message_stop", {"type": "message_stop"}),
    ]
    return events


class _Reads(httpx.AsyncByteStream):
    def __init__(self, reads: Sequence[bytes]) -> None:
        self._reads = reads

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._reads:
            yield piece


def _transport(reads: Sequence[bytes]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Reads(reads))

    return httpx.MockTransport(handler)


async def _stream(client: httpx.AsyncClient) -> int:
    stream = stream_anthropic(_MODEL, _CONTEXT, StreamOptions(api_key="bench-key", http_client=client))
    count = 0
    async for _ in stream:
        count += 1
    message = await stream.result()
    if message.stop_reason != "stop":
        raise AssertionError(f"the bench body did not decode: {message.error_message}")
    return count


class _DropExporter:
    """A span exporter that keeps nothing (the SDK's work is measured, not a growing list)."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[object]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def _configurations() -> tuple[dict[str, Callable[[], None]], Callable[[], int]]:
    """How to switch to each configuration, and how many spans the SDK exported."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    exporter = _DropExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))  # pyright: ignore[reportArgumentType]
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    loaded = telemetry.start("anthropic-messages", _MODEL, _CONTEXT, None)  # imports the API once, like a first stream
    del loaded
    api = vars(telemetry)["_api_loaded"]

    def none() -> None:
        telemetry.uninstrument()
        setattr(telemetry, "_api_loaded", None)  # noqa: B010 - as if opentelemetry-api were not installed

    def extra() -> None:
        setattr(telemetry, "_api_loaded", api)  # noqa: B010
        telemetry.uninstrument()

    def sdk() -> None:
        setattr(telemetry, "_api_loaded", api)  # noqa: B010
        telemetry.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)

    return {"none": none, "extra, no provider": extra, "SDK configured": sdk}, lambda: exporter.spans


class _Rounds:
    """Interleaved rounds: each runs the three configurations once, in a shuffled order, and adds
    one paired ratio per budgeted configuration (its CPU time over ``none``'s in the same round)."""

    def __init__(self, reads: Sequence[bytes]) -> None:
        self.reads = reads
        self.configurations, self.exported = _configurations()
        self.shuffler = random.Random(25)
        self.ratios: dict[str, list[float]] = {name: [] for name in _BUDGETS}
        self.per_event: dict[str, list[float]] = {name: [] for name in self.configurations}
        self.events = 0
        self.traced = 0
        self.exported_before = 0

    async def _run(self, rounds: int, *, warm_up: bool = False) -> None:
        order = list(self.configurations)
        async with httpx.AsyncClient(transport=_transport(self.reads)) as client:
            for _ in range(rounds):
                self.shuffler.shuffle(order)
                times: dict[str, float] = {}
                for name in order:
                    self.configurations[name]()
                    started = time.process_time()
                    self.events = await _stream(client)
                    times[name] = time.process_time() - started
                if warm_up:  # imports, caches, the first span: dropped
                    continue
                self.traced += 1
                for name, elapsed in times.items():
                    self.per_event[name].append(elapsed / self.events * 1e6)
                for name in _BUDGETS:
                    self.ratios[name].append(times[name] / times["none"])
        self.configurations["extra, no provider"]()

    def more(self, rounds: int) -> None:
        """Measure ``rounds`` more rounds (``settle`` asks for them while a ratio is undecided)."""
        asyncio.run(self._run(rounds))

    def start(self) -> None:
        """One warm-up round, then the first ``MIN_ROUNDS``."""
        asyncio.run(self._run(1, warm_up=True))
        self.exported_before = self.exported()
        self.more(MIN_ROUNDS)


def run(deltas: int = 20_000) -> list[str]:
    """Measure and return report lines."""
    lines: list[str] = []
    body = text_body(deltas)
    joined = b"".join(body)
    for label, reads in (
        ("one event per read", body),
        ("16 KiB reads", [joined[i : i + _READ] for i in range(0, len(joined), _READ)]),
    ):
        rounds = _Rounds(reads)
        rounds.start()
        judgements = {
            name: settle(rounds.ratios[name], rounds.more, budget, at_most=True) for name, budget in _BUDGETS.items()
        }
        exported = rounds.exported() - rounds.exported_before
        if exported != rounds.traced:  # one span per traced stream, or the bench measured something else
            raise AssertionError(f"the SDK exported {exported} spans for {rounds.traced} traced streams")
        lines.append(f"{label}: {rounds.events} events per stream")
        lines.append(f"  none: {statistics.median(rounds.per_event['none']):.3f} µs/event (median)")
        for name, judgement in judgements.items():
            _report.record("ratios", {"label": f"telemetry {name} / none, {label}", **judgement.as_dict()})
            cost = statistics.median(rounds.per_event[name])
            lines.append(f"  {name}: {cost:.3f} µs/event; ratio to none {judgement.text()}")
    return lines


def main() -> None:
    """Print the telemetry report."""
    for line in run():
        print(line, flush=True)


if __name__ == "__main__":
    main()
