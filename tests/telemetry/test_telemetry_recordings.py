"""Every bundled recording of every adapter, replayed through the real OpenTelemetry SDK: one span per
stream whose attribute values are the final message's, and the GenAI client metrics that go with it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cassettes import library
from normalize import AssistantMessage, DoneEvent, ErrorEvent, Model, StartEvent
from streamfns._adapters import all_adapters
from streamfns.kit import telemetry
from tests.telemetry._otel import recorded
from tests.telemetry._replay import CASES, adapter_for, declared_apis, load, model_for, replay

pytestmark = pytest.mark.parallel  # clock-blind: in-memory transport; durations are only compared to each other

SpanKind = pytest.importorskip("opentelemetry.trace").SpanKind
StatusCode = pytest.importorskip("opentelemetry.trace").StatusCode


def expected_attributes(model: Model, message: AssistantMessage) -> dict[str, Any]:
    """What the span must say about ``message`` (the time to the first chunk aside)."""
    found: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": telemetry.provider_name(model.provider, model.api),
        "gen_ai.request.model": model.id,
        "gen_ai.request.stream": True,
    }
    if message.response_id:
        found["gen_ai.response.id"] = message.response_id
    if message.response_model:
        found["gen_ai.response.model"] = message.response_model
    if message.raw_stop_reason:
        found["gen_ai.response.finish_reasons"] = (message.raw_stop_reason,)
    usage = message.usage
    failed = message.stop_reason in ("error", "aborted")
    if not failed or usage.input + usage.output + usage.cache_read + usage.cache_write:
        found |= {
            "gen_ai.usage.input_tokens": usage.input + usage.cache_read + usage.cache_write,
            "gen_ai.usage.output_tokens": usage.output,
            "gen_ai.usage.cache_read.input_tokens": usage.cache_read,
            "gen_ai.usage.cache_creation.input_tokens": usage.cache_write,
        }
        if usage.reasoning is not None:
            found["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning
        found["streamfns.usage.cost_basis"] = usage.cost.basis
        counted = usage.input + usage.output + usage.cache_read + usage.cache_write
        # The cost in USD is a known bill only: metered once tokens were counted, or free's 0.
        if usage.cost.basis == "free":
            found["streamfns.usage.cost_usd"] = 0.0
        elif usage.cost.basis == "metered" and usage.cost.total is not None and counted:
            found["streamfns.usage.cost_usd"] = usage.cost.total
    if failed:
        assert message.error_info is not None
        found["error.type"] = message.error_info.kind
    return found


@pytest.mark.parametrize(("api", "name"), CASES, ids=[Path(name).stem for _, name in CASES])
async def test_each_recording_gives_one_span_that_says_what_the_final_message_says(api: str, name: str) -> None:
    adapter = adapter_for(api)
    if adapter is None:
        pytest.skip(f"no adapter serves {api} yet")
    cassette = load(name)
    model = model_for(api, cassette)
    with recorded() as otel:
        events, message = await replay(adapter, model, cassette)
        span = otel.span()
        duration = otel.points("gen_ai.client.operation.duration")
        tokens = otel.points("gen_ai.client.token.usage")
        first = otel.points("gen_ai.client.operation.time_to_first_chunk")
        per_chunk = otel.points("gen_ai.client.operation.time_per_output_chunk")
    attributes = dict(span.attributes or {})
    address = attributes.pop("server.address", None)
    port = attributes.pop("server.port", None)
    ttfc = attributes.pop("gen_ai.response.time_to_first_chunk", None)
    assert attributes == expected_attributes(model, message)
    assert span.name == f"chat {model.id}"
    assert span.kind == SpanKind.CLIENT
    # The request's own host (no user info, no path), as the request went out.
    assert (address is None) == (port is None)
    if address is not None:
        assert isinstance(address, str)
        assert address
        assert "/" not in address
        assert "@" not in address
        assert isinstance(port, int)
        assert 0 < port < 65536
    assert span.start_time is not None
    assert span.end_time is not None
    elapsed_s = (span.end_time - span.start_time) / 1e9
    # A chunk is a read that brought content or ``done``: the time to the first one exactly when one came.
    chunks = [index for index, event in enumerate(events) if not isinstance(event, StartEvent | ErrorEvent)]
    assert (ttfc is not None) == bool(chunks)
    if ttfc is not None:
        assert isinstance(ttfc, float)
        assert 0 <= ttfc <= elapsed_s
    if message.stop_reason in ("error", "aborted"):
        assert span.status.status_code == StatusCode.ERROR
        assert span.status.description is not None
        assert span.status.description.startswith(str(attributes["error.type"]))
    else:
        assert span.status.status_code == StatusCode.UNSET
        assert isinstance(events[-1], DoneEvent)
    # The metrics: one duration, tokens when the span counts them, the chunk histograms when chunks came.
    metric_keys = {"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model"}
    assert len(duration) == 1
    assert duration[0].count == 1
    assert metric_keys <= set(duration[0].attributes)
    assert duration[0].attributes.get("error.type") == attributes.get("error.type")
    assert duration[0].sum >= 0
    if "gen_ai.usage.input_tokens" in attributes:
        by_type = {point.attributes["gen_ai.token.type"]: point.sum for point in tokens}
        assert by_type == {
            "input": attributes["gen_ai.usage.input_tokens"],
            "output": attributes["gen_ai.usage.output_tokens"],
        }
    else:
        assert tokens == []
    assert sum(point.count for point in first) == (1 if ttfc is not None else 0)
    # The time per chunk: once per stream (the mean gap), when more than one chunk came.
    assert sum(point.count for point in per_chunk) <= (1 if len(chunks) > 1 else 0)


def test_every_registered_adapter_has_recordings_in_the_sweep() -> None:
    """Not a vacuous sweep: every adapter the registry knows, and every api ``tests/adapters.py``
    declares, is replayed on recordings of its own."""
    apis = Counter(api for api, _ in CASES)
    for api in {*all_adapters(), *declared_apis()}:
        assert apis[api] > 0, api


async def test_a_cached_prompt_counts_its_cached_tokens_as_input() -> None:
    cassette = library.load("tl__prompt_cache_read_sonnet35")
    adapter = adapter_for("anthropic-messages")
    assert adapter is not None
    model = model_for("anthropic-messages", cassette)
    with recorded() as otel:
        _, message = await replay(adapter, model, cassette)
        span = otel.span()
    assert (message.usage.input, message.usage.cache_read, message.usage.cache_write) == (4, 1165, 0)
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.usage.input_tokens"] == 1169
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 1165
    assert attributes["gen_ai.usage.cache_creation.input_tokens"] == 0
    assert attributes["gen_ai.usage.output_tokens"] == 221
    assert attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert attributes["gen_ai.response.id"] == "msg_01XQRA3bs4SB4yTBMwD3dbUi"
    assert (attributes["server.address"], attributes["server.port"]) == ("api.anthropic.com", 443)
    assert attributes["gen_ai.provider.name"] == "anthropic"


async def test_a_vendor_error_body_sets_the_error_kind_and_status() -> None:
    cassette = library.load("anthropic_429_rate_limit_error")
    adapter = adapter_for("anthropic-messages")
    assert adapter is not None
    with recorded() as otel:
        _, message = await replay(adapter, model_for("anthropic-messages", cassette), cassette)
        span = otel.span()
    assert message.error_info is not None
    assert message.error_info.kind == "rate_limit"
    attributes = dict(span.attributes or {})
    assert attributes["error.type"] == "rate_limit"
    assert "gen_ai.usage.input_tokens" not in attributes  # nothing was counted: no zero claimed
    assert "gen_ai.response.time_to_first_chunk" not in attributes  # an HTTP error is no chunk
    assert span.status.description == f"rate_limit: {message.error_message}"
