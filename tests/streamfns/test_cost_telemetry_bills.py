"""``streamfns.usage.cost_usd`` is what a stream was billed, only when that is known: never a 0 for a
metered stream that reported no usage, never a plan's list price (or its 0) for a subscription."""

from __future__ import annotations

import json

import httpx
import pytest

from normalize import AssistantMessageEventStream, ModelCost, StreamOptions
from tests.adapters import ANTHROPIC, CONTEXT, OPENAI_COMPLETIONS, AdapterUnderTest

pytestmark = pytest.mark.parallel  # an in-memory transport: no clock, no socket

pytest.importorskip("opentelemetry.sdk.trace")
from tests.telemetry._otel import recorded  # noqa: E402 - after the skip

#: A real Anthropic stream (it reports usage).
WITH_USAGE = b"".join(ANTHROPIC.recorded_chunks("llma__text_haiku45"))


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    data = {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o", "choices": [choice]}
    return b"data: " + json.dumps(data).encode() + b"\n\n"


#: A chat-completions stream that ends well but reports no usage (no include_usage chunk).
WITHOUT_USAGE = _chunk({"role": "assistant", "content": "Hello"}) + _chunk({}, "stop") + b"data: [DONE]\n\n"


async def _attributes(adapter: AdapterUnderTest, body: bytes, cost: ModelCost) -> dict[str, object]:
    def answer(request: httpx.Request) -> httpx.Response:
        del request
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    with recorded() as otel:
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            options = StreamOptions(api_key="test-key", http_client=client, max_retries=0)
            stream = adapter.adapter.stream_fn(adapter.model(cost=cost), CONTEXT, options)
            assert isinstance(stream, AssistantMessageEventStream)
            message = await stream.result()
        attributes: dict[str, object] = dict(otel.span().attributes or {})
    assert message.stop_reason == "stop", message.error_message
    return attributes


async def test_a_metered_stream_that_reported_no_usage_has_no_cost_on_its_span() -> None:
    attributes = await _attributes(OPENAI_COMPLETIONS, WITHOUT_USAGE, ModelCost(input=2.5, output=10.0))
    assert attributes["gen_ai.usage.output_tokens"] == 0, "the stream reported no tokens"
    assert "streamfns.usage.cost_usd" not in attributes, "0 would claim a bill nobody measured"
    assert attributes["streamfns.usage.cost_basis"] == "metered"


@pytest.mark.parametrize(
    "cost", [ModelCost(basis="subscription"), ModelCost(input=1.0, output=5.0, basis="subscription")]
)
async def test_a_subscription_is_no_bill_with_or_without_list_prices(cost: ModelCost) -> None:
    attributes = await _attributes(ANTHROPIC, WITH_USAGE, cost)
    assert "streamfns.usage.cost_usd" not in attributes
    assert attributes["streamfns.usage.cost_basis"] == "subscription"
    assert attributes["gen_ai.usage.output_tokens"], "the tokens are still counted"


async def test_a_metered_stream_with_usage_still_says_its_bill() -> None:
    attributes = await _attributes(ANTHROPIC, WITH_USAGE, ModelCost(input=1.0, output=5.0))
    billed = attributes["streamfns.usage.cost_usd"]
    assert isinstance(billed, float)
    assert billed > 0
