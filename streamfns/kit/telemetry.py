"""OpenTelemetry spans and metrics for every stream a :class:`~streamfns.kit.WireApi` runs.

A StreamFn talks HTTP itself, so the instrumentations that hook vendor SDKs never see it; this module
gives every adapter on the kit (built-in or third-party) the OpenTelemetry GenAI semantic conventions
(as published with ``opentelemetry-semantic-conventions`` 0.66b) without code of its own.

Promises:

- ``import streamfns`` imports no ``opentelemetry`` module; the first stream imports the API once
  (nothing at all when it is not installed: the ``streamfns[otel]`` extra);
- a stream is traced only when a tracer or meter provider is configured — the global one
  (``opentelemetry.trace.set_tracer_provider``) or the ones given to :func:`instrument`. With none
  (the API's proxy or no-op provider), a stream costs one provider lookup when it is made and
  nothing per event;
- a traced stream gives exactly one ``CLIENT`` span, ``chat {model}``, that ends when the stream's
  terminal is produced: ``done``/``error`` from the adapter, and also an abort, a cancellation, a
  consumer that leaves its loop early (break, an exception in the loop body, the stream closed or
  garbage-collected). The span opens when the stream is first read (an unread stream sends nothing);
- its attribute values are the final message's: ``gen_ai.response.id`` / ``.model`` /
  ``.finish_reasons`` (the vendor's raw reason), ``gen_ai.usage.*`` (input tokens include the cached
  ones, as the conventions count them), the cost (``streamfns.usage.cost_usd``, only when it is a
  known bill — left out for an unknown price, a plan, a metered stream that reported no usage: never
  an amount nobody billed — and ``streamfns.usage.cost_basis``, with the usage) and ``error.type``
  (the :class:`~normalize.ErrorInfo` kind);
  retries are span events; the time to the first chunk is an attribute;
- message content is recorded only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is
  ``true`` (read per stream, as the contrib instrumentations read it); keys never are: every string
  value is redacted of the caller's key and every secret header value, as the kit's messages are;
- telemetry never breaks streaming: a tracer, meter or exporter that raises turns telemetry off for
  that stream and the events flow on unchanged.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    ErrorEvent,
    ErrorInfo,
    ImageContent,
    StartEvent,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from normalize.events import CONTENT_EVENT_TYPES, TERMINAL_EVENT_TYPES
from normalize.stream import Relay, classify_exception
from streamfns.kit.keys import MAX_ID_TEXT, credentials_in, credentials_in_url, redact

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from normalize import Context, Cost, Model, StreamOptions

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "SEMCONV_VERSION",
    "StreamTelemetry",
    "instrument",
    "provider_name",
    "start",
    "uninstrument",
]

#: The version of the GenAI semantic conventions the names below follow.
SEMCONV_VERSION = "0.66b2"
#: The variable that opts in to recording message content (``true``, any case), as the contrib
#: GenAI instrumentations read it.
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

_SCOPE = "streamfns"
_OPERATION = "chat"

# Attribute and metric names, spelled as opentelemetry-semantic-conventions 0.66b2 spells them (the
# package is not a dependency: tests compare these with its constants).
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_STREAM = "gen_ai.request.stream"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
TOKEN_TYPE = "gen_ai.token.type"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
HTTP_STATUS = "http.response.status_code"
#: Ours (the conventions name no retry event): one per retry, with the failure and the wait.
RETRY_EVENT = "streamfns.retry"
RETRY_ATTEMPT = "streamfns.retry.attempt"
RETRY_DELAY = "streamfns.retry.delay_s"
#: Ours (the conventions name no cost): the usage's cost in USD, set only when it is a known bill —
#: metered with tokens counted, or free (0) — never for an unknown price, a plan (``subscription``)
#: or a metered stream that reported no usage, rather than claim an amount nobody billed; and the
#: basis it was priced on (``metered``, ``free``, ``subscription``, ``unknown``: :data:`normalize.CostBasis`).
USAGE_COST = "streamfns.usage.cost_usd"
USAGE_COST_BASIS = "streamfns.usage.cost_basis"

METRIC_DURATION = "gen_ai.client.operation.duration"
METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"
METRIC_TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
METRIC_TIME_PER_OUTPUT_CHUNK = "gen_ai.client.operation.time_per_output_chunk"

#: ``model.api`` values that say which cloud serves the model, whatever the provider is called.
_API_PROVIDERS = {
    "anthropic-bedrock": "aws.bedrock",
    "bedrock-converse-stream": "aws.bedrock",
    "anthropic-vertex": "gcp.vertex_ai",
    "google-vertex": "gcp.vertex_ai",
    "azure-openai-responses": "azure.ai.openai",
}
#: ``model.provider`` values with a well-known ``gen_ai.provider.name`` of their own.
_PROVIDERS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "google": "gcp.gemini",
    "google-gemini-cli": "gcp.gemini",
    "gemini": "gcp.gemini",
    "google-vertex": "gcp.vertex_ai",
    "vertex": "gcp.vertex_ai",
    "amazon-bedrock": "aws.bedrock",
    "bedrock": "aws.bedrock",
    "azure-openai-responses": "azure.ai.openai",
    "azure-openai": "azure.ai.openai",
    "azure": "azure.ai.openai",
    "cohere": "cohere",
    "deepseek": "deepseek",
    "groq": "groq",
    "mistral": "mistral_ai",
    "perplexity": "perplexity",
    "xai": "x_ai",
    "ibm-watsonx": "ibm.watsonx.ai",
}
_NOT_CHUNKS = (StartEvent, ErrorEvent)


def provider_name(provider: str, api: str) -> str:
    """``gen_ai.provider.name`` for a model: the conventions' well-known value when the api or the
    provider names one (``anthropic-vertex`` → ``gcp.vertex_ai``, ``google`` → ``gcp.gemini``), else
    the provider's own name (else the api's)."""
    known = _API_PROVIDERS.get(api) or _PROVIDERS.get(provider.lower())
    if known:
        return known
    lowered = f"{api} {provider}".lower()
    if "bedrock" in lowered:
        return "aws.bedrock"
    if "vertex" in lowered:
        return "gcp.vertex_ai"
    return provider or api


# -- the API, loaded once ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Api:
    """The parts of ``opentelemetry-api`` this module uses, imported once."""

    trace: Any
    metrics: Any
    off_tracers: tuple[type, ...]
    off_meters: tuple[type, ...]
    #: The modules that keep the global providers and the environment's keys of the variables that
    #: name one (None: this version keeps them elsewhere; see :func:`_nobody_set`).
    globals_at: tuple[Any, Any, tuple[Any, ...]] | None = None


#: The variables that name a provider for the API to load on first use (``opentelemetry.environment_variables``).
_PROVIDER_VARIABLES = ("OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER")


def _nobody_set(api: _Api) -> bool:
    """Whether no global provider is set and none would be loaded from the environment: what
    ``get_tracer_provider()`` and ``get_meter_provider()`` find out by reading the environment through
    ``os.environ`` on every call (two failed lookups, several µs a stream), told from their module
    globals and the environment's own table. False whenever that cannot be told: then they are asked."""
    places = api.globals_at
    if places is None:
        return False
    trace_module, metrics_module, names = places
    if trace_module._TRACER_PROVIDER is not None or metrics_module._METER_PROVIDER is not None:
        return False
    table = getattr(os.environ, "_data", None)
    if table.__class__ is not dict:
        return False
    return all(name not in table for name in names)


_NOT_LOADED: Any = object()
_api_loaded: _Api | None = _NOT_LOADED


def _api() -> _Api | None:
    """The OpenTelemetry API, imported on first use (None: not installed, or broken)."""
    global _api_loaded
    loaded = _api_loaded
    if loaded is not _NOT_LOADED:
        return loaded
    try:
        trace = importlib.import_module("opentelemetry.trace")
        metrics = importlib.import_module("opentelemetry.metrics")
        # The proxy providers stand in until an application sets one; the no-op ones are set on
        # purpose to turn telemetry off. Either way: nobody listens, so no span is worth making.
        off_tracers = tuple(
            kind for kind in (getattr(trace, "ProxyTracerProvider", None), trace.NoOpTracerProvider) if kind
        )
        proxy_meters: object = None
        with contextlib.suppress(ImportError):  # the API's proxy meter provider has no public name
            proxy_meters = getattr(
                importlib.import_module("opentelemetry.metrics._internal"), "_ProxyMeterProvider", None
            )
        off_meters = tuple(kind for kind in (proxy_meters, metrics.NoOpMeterProvider) if kind)
        globals_at: tuple[Any, Any, tuple[Any, ...]] | None = None
        with contextlib.suppress(ImportError):
            internal = importlib.import_module("opentelemetry.metrics._internal")
            encode = getattr(os.environ, "encodekey", None)
            if hasattr(trace, "_TRACER_PROVIDER") and hasattr(internal, "_METER_PROVIDER") and encode is not None:
                # The variables' names as the environment's table holds them (bytes on POSIX).
                globals_at = (trace, internal, tuple(encode(name) for name in _PROVIDER_VARIABLES))
        loaded = _Api(
            trace, metrics, cast("tuple[type, ...]", off_tracers), cast("tuple[type, ...]", off_meters), globals_at
        )
    except Exception:  # not installed, or an API too old to have what we read: no telemetry
        loaded = None
    _api_loaded = loaded
    return loaded


# -- where spans and metrics go --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Instruments:
    duration: Histogram
    tokens: Histogram
    first_chunk: Histogram
    per_chunk: Histogram


@dataclass(frozen=True, slots=True)
class _Sinks:
    """Where one stream's telemetry goes: a tracer and/or the metric instruments."""

    tracer: Tracer | None
    instruments: _Instruments | None


_UNSET: Any = object()
_chosen_tracer_provider: Any = _UNSET
_chosen_meter_provider: Any = _UNSET
#: (tracer provider, meter provider, what they give): rebuilt only when a provider changes.
_cached: tuple[object, object, _Sinks | None] | None = None


def instrument(*, tracer_provider: TracerProvider | None = None, meter_provider: MeterProvider | None = None) -> None:
    """Send the telemetry of every kit stream to these providers instead of the global ones (a
    provider left None: the global one). Takes effect for streams made afterwards."""
    global _chosen_tracer_provider, _chosen_meter_provider, _cached
    _chosen_tracer_provider = tracer_provider if tracer_provider is not None else _UNSET
    _chosen_meter_provider = meter_provider if meter_provider is not None else _UNSET
    _cached = None


def uninstrument() -> None:
    """Go back to the global providers (the default)."""
    instrument()


def _version() -> str | None:
    with contextlib.suppress(Exception):  # not installed (a bare checkout on sys.path): no version to say
        return metadata.version("streamfns")
    return None


def _sinks(api: _Api) -> _Sinks | None:
    """The tracer and instruments of the providers configured now (None: nobody listens)."""
    global _cached
    if _chosen_tracer_provider is _UNSET and _chosen_meter_provider is _UNSET and _nobody_set(api):
        return None  # the proxies: no span or metric is worth making
    tracer_provider = (
        _chosen_tracer_provider if _chosen_tracer_provider is not _UNSET else api.trace.get_tracer_provider()
    )
    meter_provider = (
        _chosen_meter_provider if _chosen_meter_provider is not _UNSET else api.metrics.get_meter_provider()
    )
    cached = _cached
    if cached is not None and cached[0] is tracer_provider and cached[1] is meter_provider:
        return cached[2]
    tracer: Tracer | None = None
    instruments: _Instruments | None = None
    if not isinstance(tracer_provider, api.off_tracers):
        tracer = tracer_provider.get_tracer(_SCOPE, _version())
    if not isinstance(meter_provider, api.off_meters):
        meter = meter_provider.get_meter(_SCOPE, _version())
        instruments = _Instruments(
            duration=meter.create_histogram(METRIC_DURATION, unit="s", description="GenAI operation duration."),
            tokens=meter.create_histogram(
                METRIC_TOKEN_USAGE, unit="{token}", description="Number of input and output tokens used."
            ),
            first_chunk=meter.create_histogram(
                METRIC_TIME_TO_FIRST_CHUNK,
                unit="s",
                description="Time to receive the first chunk, from when the request is issued.",
            ),
            per_chunk=meter.create_histogram(
                METRIC_TIME_PER_OUTPUT_CHUNK,
                unit="s",
                description="Time per output chunk after the first: the mean, once per stream.",
            ),
        )
    sinks = _Sinks(tracer, instruments) if tracer is not None or instruments is not None else None
    _cached = (tracer_provider, meter_provider, sinks)
    return sinks


def start(api: str, model: Model, context: Context, options: StreamOptions | None) -> StreamTelemetry | None:
    """The telemetry of one stream about to be made, or None when nobody listens (no provider
    configured, no API installed). Never raises."""
    loaded = _api_loaded if _api_loaded is not _NOT_LOADED else _api()
    if loaded is None:
        return None
    try:
        sinks = _sinks(loaded)
        if sinks is None:
            return None
        return StreamTelemetry(loaded, sinks, api_name=api, model=model, context=context, options=options)
    except Exception:  # a provider that fails to give a tracer or a meter: no telemetry, the stream runs
        return None


# -- one stream -------------------------------------------------------------------------------------


#: The longest id, model name or finish reason a span keeps (the cap a message keeps of its ids too),
#: and the longest status description: the vendor chooses these strings, and a hostile server must not
#: make every span it answers megabytes long.
_MAX_ID = MAX_ID_TEXT
_MAX_DESCRIPTION = 1024


def _bounded(text: str, secrets: Sequence[str], limit: int) -> str:
    """``text`` redacted, then cut to ``limit`` characters. The redaction cuts first, at 4 bytes a
    character (enough for ``limit`` of them): it blanks an echo its cut goes through whole, so no piece
    of a key is left, and reads no further, so a megabyte-long hostile id costs no more than a short one."""
    cleaned = redact(text, secrets, limit=4 * limit)
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


def _capture_content() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"


def _given_secrets(model: object, options: object) -> list[str]:
    """What the caller handed over that is secret: the key option, every non-public header value of
    ``model.headers`` and ``options.headers``, the credentials of ``model.base_url``."""
    found: list[str] = []
    key = getattr(options, "api_key", None)
    if isinstance(key, str) and key:
        found.append(key)
    for layer in (getattr(model, "headers", None), getattr(options, "headers", None)):
        if isinstance(layer, Mapping):
            items = cast("Mapping[object, object]", layer).items()
            found.extend(credentials_in({str(k): v for k, v in items if isinstance(v, str)}))
    base_url = getattr(model, "base_url", None)
    if isinstance(base_url, str) and base_url:
        with contextlib.suppress(Exception):
            found.extend(credentials_in_url(base_url))
    return found


def _server(url: str) -> tuple[str | None, int | None]:
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:
        return None, None
    return host or None, port


class StreamTelemetry:
    """The span and measurements of one stream; the kit calls it at the start, on each retry and at
    the terminal (see the module docstring). Every method is safe: an exception from OpenTelemetry
    turns telemetry off for the stream and is not raised."""

    __slots__ = (
        "_api",
        "_api_name",
        "_attributes",
        "_chunk_at",
        "_chunks",
        "_context",
        "_ended",
        "_first_chunk_at",
        "_first_chunk_s",
        "_model",
        "_options",
        "_partial",
        "_secrets",
        "_sinks",
        "_span",
        "_started_at",
    )

    def __init__(
        self,
        api: _Api,
        sinks: _Sinks,
        *,
        api_name: str,
        model: Model,
        context: Context,
        options: StreamOptions | None,
    ) -> None:
        self._api = api
        self._sinks = sinks
        self._api_name = api_name
        self._model = model
        self._context = context
        self._options = options
        self._span: Span | None = None
        self._attributes: dict[str, Any] = {}
        self._secrets: list[str] = []
        self._partial: AssistantMessage | None = None
        self._started_at = 0.0
        self._chunk_at = 0.0
        self._first_chunk_s: float | None = None
        #: Chunks seen, and when the first and the last came (the time per chunk is their mean gap).
        self._chunks = 0
        self._first_chunk_at = 0.0
        self._ended = False

    # -- what the kit calls --------------------------------------------------------------------------

    async def traced(
        self, batches: AsyncGenerator[Sequence[AssistantMessageEvent] | Relay, None]
    ) -> AsyncGenerator[Sequence[AssistantMessageEvent] | Relay, None]:
        """``batches`` unchanged, with the span opened on the first read and ended at the terminal.
        Every batch is observed, a relay's too: a relay the kit hands over is passed on with an
        ``observe`` of ours, so the stream still awaits each read directly (driving it here instead
        cost each event two generator layers more, a third of its CPU at one event per read)."""
        self._open()
        try:
            async for batch in batches:
                if batch.__class__ is Relay:
                    relay = cast("Relay", batch)
                    yield Relay(relay.next_batch, self._observer(relay.observe), relay.steps)
                    continue
                batch = cast("Sequence[AssistantMessageEvent]", batch)
                if batch and not self._ended:
                    self._saw(batch)
                yield batch
            # The producer ended without a terminal: the stream says so with a ``protocol`` error.
            self._end_early("protocol")
        except Exception as exc:  # the stream turns it into an error event of this kind
            self._end_early(classify_exception(exc))
            raise
        finally:
            # The consumer left (break, an exception in its loop, aclose, garbage collection) or was
            # cancelled: the stream ends ``aborted``, and so does the span — before the response closes.
            self._end_early("aborted")
            await batches.aclose()

    def _observer(
        self, inner: Callable[[Sequence[AssistantMessageEvent]], None] | None
    ) -> Callable[[Sequence[AssistantMessageEvent]], None]:
        """What observes a relay's batches for this stream (after ``inner``, the relay's own, if any).
        Never raises, as a relay's ``observe`` must not: telemetry that breaks is turned off for the
        stream, never passed on."""

        def observe(batch: Sequence[AssistantMessageEvent]) -> None:
            if inner is not None:
                inner(batch)
            if batch and not self._ended:
                try:
                    self._saw(batch)
                except Exception:
                    self._broken()

        return observe

    def requested(self, url: str, secrets: list[str]) -> None:
        """The request is built: where it goes, and the secrets it carries (the list is the call's
        own, which a signer may still extend)."""
        self._secrets = secrets
        if self._ended:
            return
        host, port = _server(url)
        # The metrics read these too: kept whether or not there is a span.
        found = {name: value for name, value in ((SERVER_ADDRESS, host), (SERVER_PORT, port)) if value is not None}
        self._attributes.update(found)
        span = self._span
        if span is None or not found:
            return
        try:
            span.set_attributes(found)
        except Exception:
            self._broken()

    def retrying(self, info: ErrorInfo, attempt: int, delay_s: float) -> None:
        """Retry number ``attempt`` (1-based) follows ``info`` after ``delay_s`` seconds."""
        span = self._span
        if span is None or self._ended:
            return
        attributes: dict[str, Any] = {ERROR_TYPE: info.kind, RETRY_ATTEMPT: attempt, RETRY_DELAY: float(delay_s)}
        if info.status is not None:
            attributes[HTTP_STATUS] = info.status
        try:
            span.add_event(RETRY_EVENT, attributes)
        except Exception:
            self._broken()

    # -- internals ----------------------------------------------------------------------------------

    def _broken(self) -> None:
        """OpenTelemetry raised: nothing more is recorded for this stream (the span, if any, is ended)."""
        self._ended = True
        span, self._span = self._span, None
        if span is not None:
            with contextlib.suppress(Exception):
                span.end()

    def _open(self) -> None:
        try:
            self._start_span()
        except Exception:  # whatever OpenTelemetry or an odd model raised: no telemetry for this stream
            self._broken()

    def _start_span(self) -> None:
        model = self._model
        options = self._options
        given = _given_secrets(model, options)
        model_id = str(getattr(model, "id", "") or "")
        provider = provider_name(str(getattr(model, "provider", "") or ""), self._api_name)
        attributes: dict[str, Any] = {
            OPERATION_NAME: _OPERATION,
            PROVIDER_NAME: redact(provider, given),
            REQUEST_MODEL: redact(model_id, given),
        }
        max_tokens = getattr(options, "max_tokens", None)
        if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
            attributes[REQUEST_MAX_TOKENS] = max_tokens
        temperature = getattr(options, "temperature", None)
        if isinstance(temperature, int | float) and not isinstance(temperature, bool):
            attributes[REQUEST_TEMPERATURE] = float(temperature)
        base_url = getattr(model, "base_url", None)
        if isinstance(base_url, str) and base_url:
            host, port = _server(base_url)
            if host is not None:
                attributes[SERVER_ADDRESS] = host
            if port is not None:
                attributes[SERVER_PORT] = port
        self._secrets = given
        self._attributes = attributes
        tracer = self._sinks.tracer
        if tracer is None:
            self._started_at = time.perf_counter()
            return
        span_attributes = dict(attributes)
        span_attributes[REQUEST_STREAM] = True
        if _capture_content():
            span_attributes.update(_input_content(self._context, given))
        self._span = tracer.start_span(
            f"{_OPERATION} {attributes[REQUEST_MODEL]}".strip(),
            kind=self._api.trace.SpanKind.CLIENT,
            attributes=span_attributes,
        )
        # After the span starts: what the span measures from, the durations and chunk times measure from.
        self._started_at = time.perf_counter()

    def _saw(self, batch: Sequence[AssistantMessageEvent]) -> None:
        """One read's events: time the chunk, end at the terminal."""
        last = batch[-1]
        if type(last) in CONTENT_EVENT_TYPES:
            # The common read, content events: two clock reads' worth of work, nothing recorded yet.
            now = time.perf_counter()
            if self._chunks:
                self._chunks += 1
                self._chunk_at = now
                return
            self._first_chunk(now, last.partial)
            return
        self._partial = last.partial
        # A chunk is a read that brought content or the vendor's ``done``; ``start`` (the response
        # head) and an error terminal with nothing else (an HTTP error, an abort) are not.
        if not (isinstance(last, _NOT_CHUNKS) and all(isinstance(event, _NOT_CHUNKS) for event in batch)):
            now = time.perf_counter()
            if self._chunks:
                self._chunks += 1
                self._chunk_at = now
            else:
                self._first_chunk(now, last.partial)
        if isinstance(last, TERMINAL_EVENT_TYPES):
            self._end(last.partial)

    def _first_chunk(self, now: float, partial: AssistantMessage) -> None:
        self._partial = partial
        self._first_chunk_s = now - self._started_at
        self._first_chunk_at = self._chunk_at = now
        self._chunks = 1

    def _end_early(self, kind: str) -> None:
        """The stream ended without a terminal from the adapter: it synthesizes one of ``kind``."""
        if self._ended:
            return
        self._end(self._partial, early=kind)

    def _end(self, message: AssistantMessage | None, *, early: str | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        try:
            self._record(message, early)
        except Exception:
            self._broken()

    def _record(self, message: AssistantMessage | None, early: str | None) -> None:
        secrets = self._secrets
        base = self._attributes
        done: dict[str, Any] = {}
        error_type = early
        if message is not None:
            if message.response_id:
                done[RESPONSE_ID] = _bounded(message.response_id, secrets, _MAX_ID)
            if message.response_model:
                done[RESPONSE_MODEL] = _bounded(message.response_model, secrets, _MAX_ID)
            if message.raw_stop_reason:
                done[RESPONSE_FINISH_REASONS] = (_bounded(message.raw_stop_reason, secrets, _MAX_ID),)
            if early is None and message.stop_reason in ("error", "aborted"):
                info = message.error_info
                error_type = info.kind if info is not None else message.stop_reason
        usage = _usage(message, error_type is None)
        done.update(usage)
        if self._first_chunk_s is not None:
            done[RESPONSE_TIME_TO_FIRST_CHUNK] = self._first_chunk_s
        if error_type is not None:
            done[ERROR_TYPE] = error_type
        span, self._span = self._span, None
        if span is not None:
            try:
                if message is not None and _capture_content() and early is None:
                    done.update(_output_content(message, secrets))
                span.set_attributes(done)
                if error_type is not None:
                    description = error_type
                    if message is not None and message.error_message and early is None:
                        description = _bounded(f"{error_type}: {message.error_message}", secrets, _MAX_DESCRIPTION)
                    span.set_status(self._api.trace.Status(self._api.trace.StatusCode.ERROR, description))
            finally:
                span.end()
        instruments = self._sinks.instruments
        if instruments is not None:
            self._measure(instruments, base, done, error_type)

    def _measure(
        self, instruments: _Instruments, base: Mapping[str, Any], done: Mapping[str, Any], error_type: str | None
    ) -> None:
        attributes = {name: base[name] for name in (OPERATION_NAME, PROVIDER_NAME, REQUEST_MODEL) if name in base}
        for name in (SERVER_ADDRESS, SERVER_PORT):
            if name in base:
                attributes[name] = base[name]
        if RESPONSE_MODEL in done:
            attributes[RESPONSE_MODEL] = done[RESPONSE_MODEL]
        measured = dict(attributes)
        if error_type is not None:
            measured[ERROR_TYPE] = error_type
        instruments.duration.record(time.perf_counter() - self._started_at, measured)
        if USAGE_INPUT_TOKENS in done:
            instruments.tokens.record(done[USAGE_INPUT_TOKENS], {**attributes, TOKEN_TYPE: "input"})
            instruments.tokens.record(done[USAGE_OUTPUT_TOKENS], {**attributes, TOKEN_TYPE: "output"})
        if self._first_chunk_s is not None:
            instruments.first_chunk.record(self._first_chunk_s, measured)
        if self._chunks > 1:
            # Once per stream, the mean gap between its chunks: one histogram record costs the SDK more
            # than a whole event costs the kit, so a record per chunk would double a stream's CPU time.
            mean = (self._chunk_at - self._first_chunk_at) / (self._chunks - 1)
            instruments.per_chunk.record(mean, measured)


def _usage(message: AssistantMessage | None, succeeded: bool) -> dict[str, Any]:
    """The ``gen_ai.usage.*`` attributes and the cost's: always on a success, on a failure only once
    tokens were counted (zero would claim a measurement nobody made); the cost in USD only when it is
    a known bill (:func:`_billed_usd`)."""
    if message is None:
        return {}
    usage = message.usage
    counted = usage.input + usage.output + usage.cache_read + usage.cache_write
    if not succeeded and counted == 0:
        return {}
    found: dict[str, Any] = {
        # The conventions count cached tokens as input; ours keeps them apart.
        USAGE_INPUT_TOKENS: usage.input + usage.cache_read + usage.cache_write,
        USAGE_OUTPUT_TOKENS: usage.output,
        USAGE_CACHE_READ_INPUT_TOKENS: usage.cache_read,
        USAGE_CACHE_CREATION_INPUT_TOKENS: usage.cache_write,
    }
    if usage.reasoning is not None:
        found[USAGE_REASONING_OUTPUT_TOKENS] = usage.reasoning
    found[USAGE_COST_BASIS] = usage.cost.basis
    billed = _billed_usd(usage.cost, counted)
    if billed is not None:
        found[USAGE_COST] = billed
    return found


def _billed_usd(cost: Cost, counted: int) -> float | None:
    """What the stream was billed in USD, when that is known: a ``metered`` total once tokens were
    counted (a stream that reported no usage measured no cost: 0 would claim one), 0 for ``free``
    (nothing is charged, whatever the usage). None — the attribute left out — for ``unknown``, and
    for ``subscription``: a plan is not billed per token, and its list-price total summed with real
    bills would overstate them."""
    if cost.total is None:
        return None
    if cost.basis == "free":
        return 0.0
    if cost.basis == "metered" and counted > 0:
        return float(cost.total)
    return None


# -- message content (opt-in) ------------------------------------------------------------------------------


def _json(value: object, secrets: Sequence[str]) -> str:
    return redact(json.dumps(value, ensure_ascii=False, default=str), secrets)


def _parts(content: object) -> list[dict[str, Any]]:
    """The conventions' message parts for our content blocks (images as their type only: no bytes)."""
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for block in cast("Iterable[object]", content) if isinstance(content, list) else ():
        if isinstance(block, TextContent):
            parts.append({"type": "text", "content": block.text})
        elif isinstance(block, ThinkingContent):
            parts.append({"type": "reasoning", "content": block.thinking})
        elif isinstance(block, ToolCall):
            parts.append({"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.arguments})
        elif isinstance(block, ImageContent):
            parts.append({"type": "blob", "modality": "image", "mime_type": block.mime_type})
    return parts


def _input_content(context: object, secrets: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    system = getattr(context, "system_prompt", None)
    if isinstance(system, str) and system:
        found[SYSTEM_INSTRUCTIONS] = _json([{"type": "text", "content": system}], secrets)
    messages: list[dict[str, Any]] = []
    for message in cast("Iterable[object]", getattr(context, "messages", None) or ()):
        role = getattr(message, "role", None)
        if role == "toolResult":
            response = _parts(getattr(message, "content", ""))
            messages.append(
                {
                    "role": "tool",
                    "parts": [
                        {"type": "tool_call_response", "id": getattr(message, "tool_call_id", ""), "response": response}
                    ],
                }
            )
        elif isinstance(role, str):
            messages.append({"role": role, "parts": _parts(getattr(message, "content", ""))})
    found[INPUT_MESSAGES] = _json(messages, secrets)
    return found


def _output_content(message: AssistantMessage, secrets: Sequence[str]) -> dict[str, str]:
    output = {"role": "assistant", "parts": _parts(message.content), "finish_reason": message.raw_stop_reason or ""}
    return {OUTPUT_MESSAGES: _json([output], secrets)}
