"""Honest prices: a cost says what it is based on, and a price nobody knows is never $0."""

from __future__ import annotations

import dataclasses

import pytest

from normalize import (
    COST_BASES,
    AssistantMessage,
    Cost,
    CostBasis,
    MessageBuilder,
    Model,
    ModelCost,
    Usage,
    calculate_cost,
    validate_events,
)

pytestmark = pytest.mark.parallel

RATES = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)


def _priced(basis: CostBasis, rates: ModelCost | None = None) -> Cost:
    cost = dataclasses.replace(rates or ModelCost(), basis=basis)
    model = Model(id="m", api="a", provider="p", cost=cost)
    return calculate_cost(model, Usage(input=1_000_000, output=100_000, cache_read=2_000_000, cache_write=400_000))


def test_the_bases_are_metered_free_subscription_and_unknown() -> None:
    assert COST_BASES == ("metered", "free", "subscription", "unknown")
    assert ModelCost().basis == "metered", "a model built by hand (and pi's JSON) is metered, as before"


def test_an_unknown_price_gives_no_total_whatever_the_rates_say() -> None:
    cost = _priced("unknown", RATES)
    assert cost.total is None
    assert not cost.known
    assert (cost.basis, cost.input, cost.output, cost.cache_read, cost.cache_write) == ("unknown", 0, 0, 0, 0)


def test_a_free_model_costs_zero_and_says_so() -> None:
    cost = _priced("free", RATES)
    assert (cost.total, cost.basis) == (0.0, "free")
    assert cost.known


def test_metered_and_subscription_are_priced_at_the_rates() -> None:
    metered, subscription = _priced("metered", RATES), _priced("subscription", RATES)
    assert metered.total == pytest.approx(3.0 + 1.5 + 0.6 + 1.5)
    assert (metered.input, metered.output, metered.cache_read, metered.cache_write) == (3.0, 1.5, 0.6, 1.5)
    assert subscription.total == metered.total
    assert (metered.basis, subscription.basis) == ("metered", "subscription")


def test_the_json_forms_keep_pis_shape_when_metered_and_never_read_as_zero_when_unknown() -> None:
    assert RATES.to_json() == {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}
    assert ModelCost(basis="free").to_json() == {
        "input": 0.0,
        "output": 0.0,
        "cacheRead": 0.0,
        "cacheWrite": 0.0,
        "basis": "free",
    }
    # No rates at all: a pi reader's arithmetic on the missing numbers gives NaN, never a $0 bill.
    assert ModelCost(basis="unknown", input=1.0).to_json() == {"basis": "unknown"}
    assert Cost().to_json() == {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}
    unknown = _priced("unknown")
    assert unknown.to_json() == {"basis": "unknown"}
    assert Cost.from_json(unknown.to_json()) == unknown
    assert (
        Model.from_json({"id": "m", "api": "a", "provider": "p", "cost": {"basis": "unknown"}}).cost.basis == "unknown"
    )


def test_pi_json_without_a_basis_reads_as_metered() -> None:
    cost = ModelCost.from_json({"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0})
    assert (cost.basis, cost.input) == ("metered", 1.0)
    usage = Usage.from_json({"cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "total": 3}})
    assert (usage.cost.basis, usage.cost.total) == ("metered", 3.0)


def test_a_cost_without_a_total_is_unknown_however_it_is_made() -> None:
    assert Cost(total=None).basis == "unknown"
    assert Cost(basis="unknown", input=5.0, total=5.0) == Cost(basis="unknown")


def test_a_streamed_message_of_an_unpriced_model_has_an_unknown_cost_also_at_another_tier() -> None:
    model = Model(id="m", api="a", provider="p", cost=ModelCost(basis="unknown"))
    builder = MessageBuilder(model)
    builder.start()
    builder.price_multiplier(2.0)  # a processing tier: twice an unknown price is still unknown, not $0
    builder.usage(input=100, output=20)
    builder.text_start("t")
    builder.text_delta("t", "hi")
    builder.block_end("t")
    builder.stop("end_turn", "stop")
    builder.finish()
    events = builder.drain()
    message = events[-1].message if events[-1].type == "done" else None
    assert isinstance(message, AssistantMessage)
    assert message.usage.cost.total is None
    assert message.usage.cost.basis == "unknown"
    assert validate_events(events) == [], "G7 checks the sum of a known cost only"
    assert message.to_json()["usage"]["cost"] == {"basis": "unknown"}


@pytest.mark.parametrize("basis", ["free", "subscription", "unknown"])
def test_a_stream_that_reports_no_usage_still_says_its_basis_also_after_a_retry(basis: CostBasis) -> None:
    builder = MessageBuilder(Model(id="m", api="a", provider="p", cost=ModelCost(basis=basis)))
    assert builder.message.usage.cost.basis == basis
    assert (builder.message.usage.cost.total is None) == (basis == "unknown")
    assert builder.reset_for_retry()
    assert builder.message.usage.cost.basis == basis
    assert MessageBuilder(Model(id="m", api="a", provider="p")).message.usage.cost == Cost(), "metered: as before"
