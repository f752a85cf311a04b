"""The span's life: it ends exactly once however the stream ends — the adapter's terminal, an abort, a
cancellation, a consumer that leaves early (break, an exception in its loop, aclose, garbage
collection) — and telemetry that breaks never breaks the stream."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

import httpx
import pytest

from cassettes import library
from normalize import (
    AbortController,
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    DoneEvent,
    Relay,
    StartEvent,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
)
from streamfns.kit import telemetry
from tests.adapters import ANTHROPIC, CONTEXT, untimed_json
from tests.telemetry._otel import Recorded, recorded

pytestmark = pytest.mark.parallel  # clock-blind: in-memory transports, no sleep or timeout

trace_api = pytest.importorskip("opentelemetry.trace")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")

#: A real Anthropic stream, one SSE event per read.
TEXT = ANTHROPIC.recorded_chunks("llma__text_haiku45")


class _Body(httpx.AsyncByteStream):
    """``chunks``, then (when ``hang``) nothing more until the reader gives up."""

    def __init__(self, chunks: Sequence[bytes], *, hang: bool) -> None:
        self._chunks = list(chunks)
        self._hang = hang

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk
        if self._hang:
            await asyncio.Event().wait()  # never set: only a cancellation ends this read


def _client(chunks: Sequence[bytes], *, hang: bool = False) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Body(chunks, hang=hang))

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def _stream(client: httpx.AsyncClient, **overrides: Any) -> AssistantMessageEventStream:
    options = StreamOptions(api_key="test-key", http_client=client, max_retries=0, **overrides)
    made = ANTHROPIC.adapter.stream_fn(ANTHROPIC.model(), CONTEXT, options)
    assert isinstance(made, AssistantMessageEventStream)
    return made


async def _until_ended(otel: Recorded, count: int = 1) -> None:
    """Let the loop run until ``count`` spans have ended (the stream closes its producer on the next
    turn of the loop after the consumer leaves); a bounded number of turns, no clock."""
    for _ in range(1000):
        if len(otel.spans()) >= count:
            return
        await asyncio.sleep(0)


def _ended_as(otel: Recorded, kind: str) -> dict[str, Any]:
    span = otel.span()
    assert span.end_time is not None
    assert span.status.status_code == trace_api.StatusCode.ERROR
    attributes = dict(span.attributes or {})
    assert attributes["error.type"] == kind
    return attributes


async def test_a_consumer_that_breaks_out_ends_the_span_aborted() -> None:
    with recorded() as otel:
        async with _client(TEXT) as client:
            stream = _stream(client)
            async for event in stream:
                if isinstance(event, TextDeltaEvent):
                    break
            message = await stream.result()
            await _until_ended(otel)
            attributes = _ended_as(otel, "aborted")
    assert message.stop_reason == "aborted"
    assert attributes["gen_ai.response.id"] == message.response_id


async def test_an_exception_in_the_callers_loop_ends_the_span_aborted() -> None:
    with recorded() as otel:
        async with _client(TEXT) as client:
            stream = _stream(client)
            with pytest.raises(LookupError):
                await _fail_inside_the_loop(stream)
            await _until_ended(otel)
            _ended_as(otel, "aborted")


async def _fail_inside_the_loop(stream: AssistantMessageEventStream) -> None:
    async for event in stream:
        if isinstance(event, TextDeltaEvent):
            raise LookupError("the caller's own bug")  # noqa: TRY004 - any exception of the caller's


async def test_aclose_ends_the_span_aborted_at_once() -> None:
    with recorded() as otel:
        async with _client(TEXT) as client:
            stream = _stream(client)
            await anext(aiter(stream))
            assert otel.spans() == []
            await stream.aclose()
            _ended_as(otel, "aborted")


async def test_a_stream_dropped_unfinished_ends_its_span_when_collected() -> None:
    with recorded() as otel:
        async with _client(TEXT, hang=True) as client:
            stream = _stream(client)
            cursor = aiter(stream)
            await anext(cursor)
            del cursor, stream
            gc.collect()
            await _until_ended(otel)
            _ended_as(otel, "aborted")


async def test_a_cancelled_reader_ends_the_span_aborted() -> None:
    with recorded() as otel:
        async with _client(TEXT[:3], hang=True) as client:
            stream = _stream(client)
            seen: list[AssistantMessageEvent] = []
            reading = asyncio.Event()

            async def consume() -> None:
                async for event in stream:
                    seen.append(event)
                    if len(seen) == 2:
                        reading.set()

            task = asyncio.create_task(consume())
            await reading.wait()
            await _until_hanging(task)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await _until_ended(otel)
            _ended_as(otel, "aborted")


async def _until_hanging(task: asyncio.Task[None]) -> None:
    for _ in range(50):
        await asyncio.sleep(0)
    assert not task.done()


async def test_an_abort_mid_stream_ends_the_span_with_the_aborted_message() -> None:
    controller = AbortController()
    with recorded() as otel:
        async with _client(TEXT[:4], hang=True) as client:
            stream = _stream(client, signal=controller.signal)
            async for event in stream:
                if isinstance(event, TextDeltaEvent):
                    controller.abort()
            message = await stream.result()
            # The adapter's own terminal: the span ended with it, before any close.
            attributes = _ended_as(otel, "aborted")
    assert message.stop_reason == "aborted"
    assert attributes["gen_ai.response.id"] == message.response_id
    assert "gen_ai.response.time_to_first_chunk" in attributes


async def test_the_span_ends_when_the_terminal_is_produced_before_the_consumer_reads_it() -> None:
    with recorded() as otel:
        async with _client(TEXT) as client:
            stream = _stream(client)
            message = await stream.result()  # reads ahead to the terminal; no event consumed yet
            span = otel.span()
            assert span.end_time is not None
            assert message.stop_reason == "stop"


async def test_the_chunk_metrics_are_one_first_chunk_and_one_mean_gap_per_stream() -> None:
    with recorded() as otel:
        async with _client(TEXT) as client:
            message = await _stream(client).result()
        span = otel.span()
        first = otel.points("gen_ai.client.operation.time_to_first_chunk")
        per_chunk = otel.points("gen_ai.client.operation.time_per_output_chunk")
        duration = otel.points("gen_ai.client.operation.duration")
    assert message.stop_reason == "stop"
    assert [point.count for point in first] == [1]
    assert [point.count for point in per_chunk] == [1]
    assert [point.count for point in duration] == [1]
    ttfc = dict(span.attributes or {})["gen_ai.response.time_to_first_chunk"]
    assert first[0].sum == ttfc
    # The reads after the first fit between the first chunk and the end.
    assert 0 <= per_chunk[0].sum <= duration[0].sum - first[0].sum
    assert first[0].attributes == duration[0].attributes


async def test_a_stream_never_read_sends_nothing_and_makes_no_span() -> None:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(200)

    with recorded() as otel:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            stream = _stream(client)
            del stream
            gc.collect()
            await _until_ended(otel)
            assert otel.spans() == []
    assert requests == []


# -- telemetry that breaks never breaks the stream ---------------------------------------------------


async def _plain_run() -> tuple[list[dict[str, Any]], AssistantMessage]:
    async with _client(TEXT) as client:
        stream = _stream(client)
        events = [event async for event in stream]
        return untimed_json(events), await stream.result()


class _RaisingTracer:
    def start_span(self, *args: object, **kwargs: object) -> object:
        raise RuntimeError("tracer down")


class _RaisingTracerProvider(sdk_trace.TracerProvider):
    def get_tracer(self, *args: object, **kwargs: object) -> Any:
        return _RaisingTracer()


class _RaisingProcessor(sdk_trace.SpanProcessor):
    """A span processor that fails on every call it gets."""

    def __init__(self, where: str) -> None:
        self.where = where

    def on_start(self, span: object, parent_context: object = None) -> None:
        if self.where == "start":
            raise RuntimeError("processor down at start")

    def on_end(self, span: object) -> None:
        if self.where == "end":
            raise RuntimeError("processor down at end")


class _RaisingExporter:
    def export(self, spans: object) -> object:
        raise RuntimeError("exporter down")

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _providers(where: str) -> Any:
    export = pytest.importorskip("opentelemetry.sdk.trace.export")
    if where == "tracer":
        return _RaisingTracerProvider()
    provider = sdk_trace.TracerProvider()
    if where == "exporter":
        provider.add_span_processor(export.SimpleSpanProcessor(_RaisingExporter()))
    else:
        provider.add_span_processor(_RaisingProcessor(where))
    return provider


@pytest.mark.parametrize("where", ["tracer", "start", "end", "exporter"])
async def test_a_broken_tracer_or_exporter_leaves_the_stream_as_it_was(where: str, caplog: Any) -> None:
    expected_events, expected = await _plain_run()
    telemetry.instrument(tracer_provider=_providers(where))
    try:
        events, message = await _plain_run()
    finally:
        telemetry.uninstrument()
    assert events == expected_events
    assert message.stop_reason == expected.stop_reason == "stop"


class _RaisingHistogram:
    def record(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("meter down")


class _RaisingMeter:
    def create_histogram(self, *args: object, **kwargs: object) -> _RaisingHistogram:
        return _RaisingHistogram()


class _RaisingMeterProvider:
    def get_meter(self, *args: object, **kwargs: object) -> _RaisingMeter:
        return _RaisingMeter()


async def test_a_broken_meter_leaves_the_stream_as_it_was_and_the_span_still_ends() -> None:
    expected_events, _ = await _plain_run()
    with recorded(metrics=False) as otel:
        telemetry.instrument(tracer_provider=otel.tracer_provider, meter_provider=_RaisingMeterProvider())  # pyright: ignore[reportArgumentType]
        events, message = await _plain_run()
        span = otel.span()
    assert events == expected_events
    assert message.stop_reason == "stop"
    assert dict(span.attributes or {})["gen_ai.response.finish_reasons"] == ("end_turn",)


async def test_no_provider_configured_means_no_telemetry_object_at_all() -> None:
    telemetry.uninstrument()
    assert telemetry.start("anthropic-messages", ANTHROPIC.model(), CONTEXT, None) is None
    events, message = await _plain_run()
    assert message.stop_reason == "stop"
    assert events


def test_with_no_provider_set_the_api_is_not_asked_per_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its getters read the environment through os.environ on every call (several µs a stream); with
    # no global provider and no variable naming one, the answer is known without them.
    telemetry.uninstrument()
    asked: list[str] = []
    getter = trace_api.get_tracer_provider

    def counted() -> Any:
        asked.append("tracer")
        return getter()

    monkeypatch.setattr(trace_api, "get_tracer_provider", counted)
    monkeypatch.delenv("OTEL_PYTHON_TRACER_PROVIDER", raising=False)
    monkeypatch.delenv("OTEL_PYTHON_METER_PROVIDER", raising=False)
    assert telemetry.start("anthropic-messages", ANTHROPIC.model(), CONTEXT, None) is None
    assert asked == []
    # A variable that names a provider: the API is asked (it loads the provider on first use).
    monkeypatch.setenv("OTEL_PYTHON_TRACER_PROVIDER", "no_such_provider")
    assert telemetry.start("anthropic-messages", ANTHROPIC.model(), CONTEXT, None) is None
    assert asked == ["tracer"]


def test_a_global_provider_set_the_usual_way_is_found() -> None:
    # set_tracer_provider works once per process: the API's own global is set here as it sets it,
    # and put back.
    provider = sdk_trace.TracerProvider()
    internal = "_TRACER_PROVIDER"
    before = getattr(trace_api, internal)
    telemetry.uninstrument()
    setattr(trace_api, internal, provider)
    try:
        found = telemetry.start("anthropic-messages", ANTHROPIC.model(), CONTEXT, None)
        assert found is not None
    finally:
        setattr(trace_api, internal, before)
    assert telemetry.start("anthropic-messages", ANTHROPIC.model(), CONTEXT, None) is None


async def test_a_relay_is_passed_on_and_every_read_it_gives_is_observed() -> None:
    # The kit hands the stream its steady state as a Relay, so the stream awaits each read directly.
    # Telemetry passes the relay on with an observe of its own (driving it itself cost each event two
    # generator layers) and still sees every batch: each relayed read is a chunk to it, and the span
    # ends at the terminal.
    message = AssistantMessage(content=[TextContent(text="ab")], stop_reason="stop")
    head: list[AssistantMessageEvent] = [StartEvent(message), TextStartEvent(0, message)]
    deltas: list[AssistantMessageEvent] = [TextDeltaEvent(0, "a", message), TextDeltaEvent(0, "b", message)]
    tail: list[AssistantMessageEvent] = [TextEndEvent(0, "ab", message), DoneEvent("stop", message)]
    inner: list[AssistantMessageEvent] = []

    with recorded() as otel:
        observer = telemetry.start("anthropic-messages", ANTHROPIC.model(), CONTEXT, None)
        assert observer is not None
        traced = observer.traced(_relayed(head, deltas, tail, inner.extend))
        assert await anext(traced) == head
        relay = await anext(traced)
        assert isinstance(relay, Relay), "the stream keeps its direct reads"
        assert relay.observe is not None
        await traced.aclose()
        second = telemetry.start("anthropic-messages", ANTHROPIC.model(), CONTEXT, None)
        assert second is not None
        stream = AssistantMessageEventStream.from_batches(second.traced(_relayed(head, deltas, tail, inner.extend)))
        events = [event async for event in stream]
        spans = otel.spans()
    assert events == [*head, *deltas, *tail]
    assert inner == deltas, "the relay's own observe still sees each batch"
    assert len(spans) == 2
    assert spans[1].status.status_code != trace_api.StatusCode.ERROR
    # Every read was a chunk to it: the head, each relayed delta, the tail.
    assert second._chunks == 4  # pyright: ignore[reportPrivateUsage]


async def _relayed(
    head: list[AssistantMessageEvent],
    deltas: list[AssistantMessageEvent],
    tail: list[AssistantMessageEvent],
    observe: Any,
) -> AsyncGenerator[Sequence[AssistantMessageEvent] | Relay, None]:
    pending = iter(deltas)

    async def next_batch() -> Sequence[AssistantMessageEvent] | None:
        event = next(pending, None)
        return None if event is None else [event]

    yield head
    yield Relay(next_batch, observe)
    yield tail


async def test_telemetry_that_breaks_on_a_relayed_read_leaves_the_read_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    message = AssistantMessage(content=[TextContent(text="a")], stop_reason="stop")
    delta: list[AssistantMessageEvent] = [TextDeltaEvent(0, "a", message)]

    async def next_batch() -> Sequence[AssistantMessageEvent] | None:
        return delta

    async def source() -> AsyncGenerator[Sequence[AssistantMessageEvent] | Relay, None]:
        yield Relay(next_batch)

    with recorded():
        observer = telemetry.start("anthropic-messages", ANTHROPIC.model(), CONTEXT, None)
        assert observer is not None

        def broken(self: object, batch: object) -> None:
            raise RuntimeError("meter down")

        monkeypatch.setattr(telemetry.StreamTelemetry, "_saw", broken)
        traced = observer.traced(source())
        relay = await anext(traced)
        assert isinstance(relay, Relay)
        assert relay.observe is not None
        relay.observe(delta)  # does not raise
        assert observer._ended  # pyright: ignore[reportPrivateUsage] - turned off for the stream
        relay.observe(delta)
        await traced.aclose()


async def test_the_bundled_recording_used_here_is_what_it_says() -> None:
    # Guards the fixtures above: the recording is a complete text stream of several reads.
    assert len(TEXT) > 4
    assert library.load("llma__text_haiku45").interactions[0].response.status == 200


async def test_metrics_alone_need_no_tracer_and_name_the_host_the_request_went_to() -> None:
    with recorded(tracing=False) as otel:
        async with _client(TEXT) as client:
            model = ANTHROPIC.model(base_url="https://gateway.example:8443/anthropic")
            options = StreamOptions(api_key="test-key", http_client=client, max_retries=0)
            stream = ANTHROPIC.adapter.stream_fn(model, CONTEXT, options)
            assert isinstance(stream, AssistantMessageEventStream)
            message = await stream.result()
        duration = otel.points("gen_ai.client.operation.duration")
        tokens = otel.points("gen_ai.client.token.usage")
        assert otel.spans() == []
    assert message.stop_reason == "stop"
    assert [point.count for point in duration] == [1]
    assert duration[0].attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-haiku-4-5",
        "gen_ai.response.model": "claude-haiku-4-5-20251001",
        "server.address": "gateway.example",
        "server.port": 8443,
    }
    by_type = {point.attributes["gen_ai.token.type"]: point.sum for point in tokens}
    usage = message.usage
    assert by_type == {"input": usage.input + usage.cache_read + usage.cache_write, "output": usage.output}


async def test_the_span_is_a_child_of_the_callers_current_span() -> None:
    with recorded() as otel:
        tracer = otel.tracer_provider.get_tracer("caller")
        async with _client(TEXT) as client:
            with tracer.start_as_current_span("agent turn") as parent:
                message = await _stream(client).result()
        spans = {span.name: span for span in otel.spans()}
    assert message.stop_reason == "stop"
    child = spans["chat claude-haiku-4-5"]
    assert child.parent is not None
    assert child.parent.span_id == parent.get_span_context().span_id
    assert child.context is not None
    assert child.context.trace_id == parent.get_span_context().trace_id


@pytest.mark.parametrize("model", [None, "claude", 42])
async def test_a_stream_called_with_garbage_for_a_model_still_ends_one_span(model: Any) -> None:
    with recorded() as otel:
        stream = ANTHROPIC.adapter.stream_fn(model, CONTEXT, StreamOptions(api_key="test-key"))
        assert isinstance(stream, AssistantMessageEventStream)
        message = await stream.result()
        assert message.error_info is not None
        attributes = _ended_as(otel, message.error_info.kind)
    assert (message.stop_reason, message.error_info.kind) == ("error", "config")
    assert attributes["gen_ai.operation.name"] == "chat"
    assert otel.span().name == "chat"
