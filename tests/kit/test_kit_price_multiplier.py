"""A request priced by where it goes (``WireRequest.price_multiplier``): the kit prices the response's
usage at the model's rates times it, and refuses to send a request whose multiplier is not a number."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize import Context, Model, ModelCost, StreamOptions, validate_events
from streamfns.kit import WireRequest
from tests.kit._fake import CONTEXT, HELLO, WIRE, build_request, error_reply, model, options, reply

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

COST = ModelCost(input=3.0, output=15.0)


def priced_at(multiplier: Any) -> Any:
    def build(model: Model, context: Context, opts: StreamOptions) -> WireRequest:
        return replace(build_request(model, context, opts), price_multiplier=multiplier)

    return replace(WIRE, build_request=build)


async def test_the_usage_is_priced_at_the_rates_times_the_requests_multiplier() -> None:
    for multiplier in (1.0, 1.1, 0):
        async with LoopbackServer(reply(*HELLO)) as server:
            stream = priced_at(multiplier).stream_fn(model(server.base_url, cost=COST), CONTEXT, options())
            events = [event async for event in stream]
            result = await stream.result()
        assert validate_events(events) == []
        assert result.stop_reason == "stop"
        cost = result.usage.cost
        # HELLO reports 5 input and 2 output tokens.
        assert cost.input == pytest.approx(5 * 3.0 / 1e6 * multiplier)
        assert cost.output == pytest.approx(2 * 15.0 / 1e6 * multiplier)
        assert cost.total == pytest.approx(cost.input + cost.output)


@pytest.mark.parametrize("multiplier", [-1.0, math.nan, math.inf, "1.1", True, None])
async def test_a_multiplier_that_is_not_a_finite_non_negative_number_sends_nothing(multiplier: Any) -> None:
    async with LoopbackServer(reply(*HELLO)) as server:
        stream = priced_at(multiplier).stream_fn(model(server.base_url, cost=COST), CONTEXT, options())
        events = [event async for event in stream]
        result = await stream.result()
        assert server.requests == []
    assert validate_events(events) == []
    assert result.stop_reason == "error"
    assert result.error_info is not None
    assert result.error_info.kind == "config"
    assert "price_multiplier" in (result.error_message or "")


async def test_a_retried_call_keeps_its_rates() -> None:
    # A retry resets what the failed attempt recorded (its usage, a tier the decoder read); the rates
    # of where the request goes stand for the attempt that answers.
    plans = [error_reply(429, "rate", "slow down", [("retry-after", "0")]), reply(*HELLO)]

    def respond(_request: ReceivedRequest) -> Scripted:
        return plans.pop(0)

    async with LoopbackServer(respond) as server:
        stream = priced_at(1.1).stream_fn(model(server.base_url, cost=COST), CONTEXT, options())
        result = await stream.result()
        assert len(server.requests) == 2
    assert result.stop_reason == "stop"
    assert result.usage.cost.input == pytest.approx(5 * 3.0 / 1e6 * 1.1)
    assert result.usage.cost.output == pytest.approx(2 * 15.0 / 1e6 * 1.1)
