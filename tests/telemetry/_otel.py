"""The real OpenTelemetry SDK, wired to the kit for one test: finished spans and metric points in memory.

:func:`recorded` instruments the kit with an in-memory span exporter and metric reader and yields a
:class:`Recorded` to read them; it always gives the kit back its global providers.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import pytest

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402 - after the skip
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from streamfns.kit import telemetry  # noqa: E402

__all__ = ["Point", "Recorded", "recorded"]


@dataclass(frozen=True, slots=True)
class Point:
    """One histogram data point: its attributes, how many values, their sum."""

    attributes: Mapping[str, Any]
    count: int
    sum: float


@dataclass(slots=True)
class Recorded:
    """What the SDK received."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider

    def spans(self) -> list[ReadableSpan]:
        """Every ended span, in the order they ended."""
        return list(self.exporter.get_finished_spans())

    def span(self) -> ReadableSpan:
        """The one ended span (fails when there is not exactly one)."""
        spans = self.spans()
        assert len(spans) == 1, [span.name for span in spans]
        return spans[0]

    def points(self, name: str) -> list[Point]:
        """The data points of histogram ``name`` (empty when nothing was recorded)."""
        data = self.reader.get_metrics_data()
        found: list[Point] = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != name:
                        continue
                    points = cast("Sequence[HistogramDataPoint]", metric.data.data_points)
                    found.extend(Point(dict(point.attributes or {}), point.count, point.sum) for point in points)
        return found

    def clear(self) -> None:
        self.exporter.clear()


@contextmanager
def recorded(*, metrics: bool = True, tracing: bool = True) -> Generator[Recorded]:
    """The kit instrumented with in-memory SDK providers for the ``with`` block."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry.instrument(
        tracer_provider=tracer_provider if tracing else None, meter_provider=meter_provider if metrics else None
    )
    try:
        yield Recorded(exporter, reader, tracer_provider)
    finally:
        telemetry.uninstrument()
        tracer_provider.shutdown()
        meter_provider.shutdown()
