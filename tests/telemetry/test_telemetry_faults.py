"""Faults over real loopback HTTP (``conformance.LoopbackServer``): each stream ends exactly one span,
with the error kind its final message has; a retry is an event on the one span.

Not marked parallel: real sockets. No outcome hinges on a timing — the bounds only turn a hang into a
failure, and are generous for a loaded machine."""

from __future__ import annotations

import asyncio
import re
import sys
from typing import Any

import pytest

from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted, ScriptedEnd
from normalize import AbortController, AssistantMessage, StreamOptions, TextDeltaEvent
from tests.adapters import ANTHROPIC, CONTEXT, response_of
from tests.telemetry._otel import Recorded, recorded
from tests.telemetry._replay import stream_of

trace_api = pytest.importorskip("opentelemetry.trace")

#: Turns a hang into a failure; never reached by a healthy run, however loaded the machine.
_BOUND_S = 60.0
_TEXT = "llma__text_haiku45"


def _rate_limited() -> Scripted:
    """Anthropic's real 429 body, asking for a retry at once."""
    recorded_429 = response_of("anthropic_429_rate_limit_error")
    body = b"".join(chunk.data for chunk in recorded_429.chunks)
    return Scripted(
        status=429, headers=[("content-type", "application/json"), ("retry-after", "0")], chunks=[(0.0, body)]
    )


async def _run(base_url: str, **overrides: Any) -> AssistantMessage:
    settings: dict[str, Any] = {"api_key": "test-key", "max_retries": 0, **overrides}
    stream = stream_of(ANTHROPIC.adapter, ANTHROPIC.model(base_url=base_url), CONTEXT, StreamOptions(**settings))
    async with asyncio.timeout(_BOUND_S):
        return await stream.result()


def _only_span(otel: Recorded, message: AssistantMessage) -> dict[str, Any]:
    span = otel.span()
    attributes = dict(span.attributes or {})
    if message.stop_reason in ("error", "aborted"):
        assert message.error_info is not None
        assert attributes["error.type"] == message.error_info.kind
        assert span.status.status_code == trace_api.StatusCode.ERROR
    else:
        assert "error.type" not in attributes
    assert attributes["server.address"] == "127.0.0.1"
    return attributes


@pytest.mark.parametrize(("end", "keep", "kind"), [("eof", 4, "truncated"), ("reset", 4, "network")])
async def test_a_body_cut_short_ends_one_span_with_its_kind(end: ScriptedEnd, keep: int, kind: str) -> None:
    with recorded() as otel:
        async with LoopbackServer(ANTHROPIC.scripted(_TEXT, keep=keep, end=end)) as server:
            message = await _run(server.base_url)
            assert len(server.requests) == 1
            port = int(server.base_url.rsplit(":", 1)[1])
        attributes = _only_span(otel, message)
    assert attributes["error.type"] == kind
    assert attributes["gen_ai.response.id"] == message.response_id
    assert attributes["server.port"] == port


async def test_a_429_then_success_is_one_span_with_one_retry_event() -> None:
    plans = [_rate_limited(), ANTHROPIC.scripted(_TEXT)]

    def respond(request: ReceivedRequest) -> Scripted:
        return plans.pop(0)

    with recorded() as otel:
        async with LoopbackServer(respond) as server:
            message = await _run(server.base_url, max_retries=2)
            assert len(server.requests) == 2
        attributes = _only_span(otel, message)
        events = otel.span().events
        retries = otel.points("gen_ai.client.operation.duration")
    assert message.stop_reason == "stop"
    assert attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert [event.name for event in events] == ["streamfns.retry"]
    assert dict(events[0].attributes or {}) == {
        "error.type": "rate_limit",
        "http.response.status_code": 429,
        "streamfns.retry.attempt": 1,
        "streamfns.retry.delay_s": 0.0,
    }
    assert [point.count for point in retries] == [1]


async def test_a_429_with_no_retry_left_ends_the_span_rate_limit() -> None:
    with recorded() as otel:
        async with LoopbackServer(_rate_limited()) as server:
            message = await _run(server.base_url)
        attributes = _only_span(otel, message)
        assert otel.span().events == ()
    assert attributes["error.type"] == "rate_limit"


async def test_an_abort_mid_stream_ends_one_span_aborted() -> None:
    controller = AbortController()
    with recorded() as otel:
        async with LoopbackServer(ANTHROPIC.scripted(_TEXT, keep=5, end="stall")) as server:
            stream = stream_of(
                ANTHROPIC.adapter,
                ANTHROPIC.model(base_url=server.base_url),
                CONTEXT,
                StreamOptions(api_key="test-key", max_retries=0, signal=controller.signal),
            )
            async with asyncio.timeout(_BOUND_S):
                async for event in stream:
                    if isinstance(event, TextDeltaEvent):
                        controller.abort()
                message = await stream.result()
        attributes = _only_span(otel, message)
    assert message.stop_reason == "aborted"
    assert attributes["error.type"] == "aborted"


async def test_concurrent_streams_end_one_span_each_with_their_own_kind() -> None:
    plans = {
        "eof": ANTHROPIC.scripted(_TEXT),
        "cut": ANTHROPIC.scripted(_TEXT, keep=3),
        "reset": ANTHROPIC.scripted(_TEXT, keep=3, end="reset"),
        "limited": _rate_limited(),
    }

    def respond(request: ReceivedRequest) -> Scripted:
        return plans[request.path.strip("/").split("/")[0]]

    with recorded() as otel:
        async with LoopbackServer(respond) as server:
            messages = await asyncio.gather(*(_run(f"{server.base_url}/{name}") for name in plans))
        spans = otel.spans()
    kinds = sorted(str(dict(span.attributes or {}).get("error.type")) for span in spans)
    assert kinds == ["None", "network", "rate_limit", "truncated"]
    assert sorted(str(m.error_info.kind if m.error_info else None) for m in messages) == kinds


_CONFORMANCE_TRACED = """
import re, sys
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
from conformance.cli import main

status = main(["run", "streamfns.anthropic:ADAPTER"])
spans = exporter.get_finished_spans()
print("SPANS", len(spans), sum(span.end_time is None for span in spans))
sys.exit(status)
"""


@pytest.mark.slow
async def test_the_conformance_harness_passes_with_the_sdk_configured_one_ended_span_per_scenario() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CONFORMANCE_TRACED, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(600):
        out, err = await process.communicate()
    text = out.decode()
    assert process.returncode == 0, text + err.decode()
    verdict = re.search(r"^verdict: conformant \(\d+ pass; (\d+) scenarios", text, re.MULTILINE)
    assert verdict is not None, text
    assert f"SPANS {verdict.group(1)} 0" in text
