"""The span says what a stream cost — and leaves the cost out, rather than claim $0, when nobody knows
the price."""

from __future__ import annotations

import httpx
import pytest

from normalize import AssistantMessageEventStream, ModelCost, StreamOptions
from tests.adapters import ANTHROPIC, CONTEXT

pytestmark = pytest.mark.parallel  # an in-memory transport: no clock, no socket

pytest.importorskip("opentelemetry.sdk.trace")
from tests.telemetry._otel import recorded  # noqa: E402 - after the skip

#: A real Anthropic stream (it reports usage), one SSE event per read.
TEXT = ANTHROPIC.recorded_chunks("llma__text_haiku45")


async def _span_attributes(cost: ModelCost) -> tuple[dict[str, object], float | None]:
    def answer(request: httpx.Request) -> httpx.Response:
        del request
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b"".join(TEXT))

    with recorded() as otel:
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            options = StreamOptions(api_key="test-key", http_client=client, max_retries=0)
            stream = ANTHROPIC.adapter.stream_fn(ANTHROPIC.model(cost=cost), CONTEXT, options)
            assert isinstance(stream, AssistantMessageEventStream)
            message = await stream.result()
        attributes: dict[str, object] = dict(otel.span().attributes or {})
    assert message.stop_reason == "stop"
    return attributes, message.usage.cost.total


async def test_a_known_price_is_on_the_span_with_its_basis() -> None:
    attributes, total = await _span_attributes(ModelCost(input=1.0, output=5.0))
    assert total is not None
    assert total > 0
    assert attributes["streamfns.usage.cost_usd"] == total
    assert attributes["streamfns.usage.cost_basis"] == "metered"


async def test_an_unknown_price_is_left_out_never_zero() -> None:
    attributes, total = await _span_attributes(ModelCost(basis="unknown"))
    assert total is None
    assert "streamfns.usage.cost_usd" not in attributes
    assert attributes["streamfns.usage.cost_basis"] == "unknown"
    assert attributes["gen_ai.usage.output_tokens"], "the tokens are still counted"


async def test_a_free_model_costs_zero_and_says_free() -> None:
    attributes, total = await _span_attributes(ModelCost(basis="free"))
    assert total == 0.0
    assert (attributes["streamfns.usage.cost_usd"], attributes["streamfns.usage.cost_basis"]) == (0.0, "free")
