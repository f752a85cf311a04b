"""The run summary adds the replies' costs by ``normalize.sum_costs``'s rule: free replies read ``free``
(not ``$0``), an unknown one makes the run unknown, and a plan-paid reply is never added into the bill."""

from __future__ import annotations

import io

import pytest

from examples.agent_loop.events import MessageEnd
from examples.agent_loop.render import TerminalRenderer
from normalize import AssistantMessage, CostBasis, Model, ModelCost, Usage, calculate_cost
from streamfns.render import format_cost

pytestmark = pytest.mark.parallel


def _summary_cost(*bases: CostBasis) -> str:
    renderer = TerminalRenderer(io.StringIO())
    for basis in bases:
        usage = Usage(input=1_000_000, output=1_000)
        calculate_cost(Model(id="m", api="a", provider="p", cost=ModelCost(input=3, output=15, basis=basis)), usage)
        renderer(MessageEnd(message=AssistantMessage(usage=usage, stop_reason="stop")))
    return renderer.summary().rsplit(" · ", 1)[-1]


@pytest.mark.parametrize(
    ("bases", "said"),
    [
        (("metered", "metered"), "$6.030000"),
        (("free", "free"), "free"),
        (("metered", "free"), "$3.015000"),
        (("subscription",), "subscription ($3.015000 at list prices)"),
        (("metered", "subscription"), "$3.015000 + subscription ($3.015000 at list prices)"),
        (("metered", "unknown", "metered"), "unknown"),
        ((), "$0.000000"),
    ],
)
def test_the_run_cost_keeps_the_bases_apart(bases: tuple[CostBasis, ...], said: str) -> None:
    assert _summary_cost(*bases) == said


def test_the_run_usage_never_claims_a_cost_nobody_summed() -> None:
    renderer = TerminalRenderer(io.StringIO())
    assert renderer.usage.cost.total is None, "one Cost cannot say a mixed run's price: see renderer.cost"
    assert format_cost(renderer.cost) == "$0.000000"
