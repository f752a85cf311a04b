"""Costs of mixed bases add up by one rule (``sum_costs``), and a price's basis is always one of the four:
a misspelt one is refused, never priced as metered; ``free`` and ``unknown`` carry no rates."""

from __future__ import annotations

import pytest

from normalize import (
    Context,
    Cost,
    CostBasis,
    CostSum,
    Model,
    ModelCost,
    StreamOptions,
    Usage,
    UserMessage,
    calculate_cost,
    model_problem,
    request_problem,
    sum_costs,
)

pytestmark = pytest.mark.parallel


def _cost(basis: CostBasis, total: float = 1.0) -> Cost:
    model = Model(id="m", api="a", provider="p", cost=ModelCost(input=total, basis=basis))
    return calculate_cost(model, Usage(input=1_000_000))


def test_an_unknown_part_makes_the_sum_unknown_whatever_else_it_holds() -> None:
    found = sum_costs([_cost("metered"), _cost("unknown"), _cost("metered"), _cost("subscription")])
    assert not found.known
    assert found.basis == "unknown"
    assert (found.billed, found.plan) == (0.0, 0.0), "no smaller sum that reads as the whole"


def test_free_parts_add_nothing_and_all_free_is_free() -> None:
    assert sum_costs([_cost("free"), _cost("free")]) == CostSum(bases=frozenset({"free"}))
    assert sum_costs([_cost("free"), _cost("free")]).basis == "free"
    mixed = sum_costs([_cost("metered", 2.0), _cost("free")])
    assert (mixed.basis, mixed.billed, mixed.plan) == ("metered", 2.0, 0.0)


def test_a_subscription_is_never_added_into_a_metered_bill() -> None:
    found = sum_costs([_cost("metered", 2.0), _cost("subscription", 5.0), _cost("metered", 1.0)])
    assert found.basis == "metered"
    assert found.billed == pytest.approx(3.0), "the bill is the metered parts only"
    assert found.plan == pytest.approx(5.0), "the plan-paid part is kept apart, at list prices"
    alone = sum_costs([_cost("subscription", 5.0), _cost("free")])
    assert (alone.basis, alone.billed, alone.plan) == ("subscription", 0.0, 5.0)


def test_no_parts_is_metered_at_zero_as_a_new_cost_is() -> None:
    assert sum_costs([]) == CostSum()
    assert (CostSum().basis, CostSum().billed, CostSum().known) == ("metered", 0.0, True)


def test_adding_one_at_a_time_is_the_same_rule() -> None:
    parts = [_cost("metered", 2.0), _cost("subscription", 5.0), _cost("free")]
    running = CostSum()
    for part in parts:
        running = running.add(part)
    assert running == sum_costs(parts)


@pytest.mark.parametrize("make", [lambda: ModelCost(basis="Free"), lambda: Cost(basis="cheap")])  # pyright: ignore[reportArgumentType]
def test_a_basis_that_is_none_of_the_four_is_refused_when_made(make: object) -> None:
    with pytest.raises(ValueError, match=r"basis must be one of metered, free, subscription, unknown, not '"):
        make()  # pyright: ignore[reportCallIssue]


def test_a_basis_changed_later_ends_the_stream_as_config_and_is_never_priced_as_metered() -> None:
    model = Model(id="m", api="a", provider="p", cost=ModelCost(input=3.0))
    model.cost.basis = "Free"  # pyright: ignore[reportAttributeAccessIssue] - a caller's mistake, on purpose
    assert model_problem(model) == ("model.cost.basis must be one of metered, free, subscription, unknown, not 'Free'")
    context = Context(messages=[UserMessage(content="hi")])
    assert request_problem(model, context, StreamOptions()) == ("config", model_problem(model))
    cost = calculate_cost(model, Usage(input=1_000_000))
    assert (cost.basis, cost.total) == ("unknown", None), "not $3 at a basis nobody defined"


@pytest.mark.parametrize("basis", ["unknown", "free"])
def test_a_price_without_rates_drops_the_rates_given_and_equals_its_json_round_trip(basis: CostBasis) -> None:
    cost = ModelCost(basis=basis, input=3.0, output=15.0)
    assert (cost.input, cost.output, cost.cache_read, cost.cache_write) == (0.0, 0.0, 0.0, 0.0)
    assert ModelCost.from_json(cost.to_json()) == cost
    assert cost == ModelCost(basis=basis)
