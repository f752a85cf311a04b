"""Token usage and its cost.

The usage contract every adapter follows: ``input`` excludes cached tokens, ``output`` includes
reasoning tokens, ``reasoning`` is a breakdown of ``output``, and
``total_tokens == input + output + cache_read + cache_write``.

A cost is only ever a price someone knows: a model whose price is unknown (``ModelCost.basis ==
"unknown"``) gives a :class:`Cost` whose ``total`` is None, never $0; a free one (a local server) a
cost of 0 that says ``basis="free"``.

Costs of several usages (the turns of an agent run) are added up by :func:`sum_costs` into a
:class:`CostSum`, the one place the rule for mixed bases lives: an unknown part makes the sum
unknown; free parts add nothing (all free: the sum is free); subscription parts are never added into
a metered bill — the sum keeps what is billed (the metered parts) apart from what the plan-paid
parts would have cost at list prices.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from normalize._jsonmodel import JsonModel
from normalize.model import COST_BASES, CostBasis, check_basis, cost_schema

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

    from normalize.model import Model

__all__ = ["Cost", "CostSum", "Usage", "calculate_cost", "sum_costs"]


@dataclass(slots=True, kw_only=True)
class Cost(JsonModel):
    """Cost in USD, per usage component and in ``total``, and the ``basis`` it was priced on (the
    model's :class:`~normalize.ModelCost` basis).

    ``total`` is None exactly when the price is not known (``basis == "unknown"``; the parts are then
    0 and mean nothing): an unknown price never reads as $0. Otherwise ``total`` is the sum of the
    parts. A ``free`` cost is 0; a ``subscription`` one is priced at the model's rates, not billed.
    The JSON form is pi's ``{input, output, cacheRead, cacheWrite, total}``, with ``basis`` when it
    is not ``metered``; an unknown cost is ``{"basis": "unknown"}`` alone.
    """

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float | None = 0.0
    basis: CostBasis = "metered"

    def __post_init__(self) -> None:
        check_basis(self.basis, "Cost.basis")
        # One rule however the cost was made (by hand, from JSON): unknown ⇔ no total.
        if self.basis == "unknown" or self.total is None:
            self.basis = "unknown"
            self.total = None
            self.input = self.output = self.cache_read = self.cache_write = 0.0

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """The JSON form described in the class docstring."""
        return cost_schema(source, handler)

    @property
    def known(self) -> bool:
        """False when the price is not known (``total`` is None)."""
        return self.total is not None


#: Which basis a sum takes when its parts have several (see :attr:`CostSum.basis`).
_SUM_ORDER: tuple[CostBasis, ...] = ("unknown", "metered", "subscription", "free")


@dataclass(frozen=True, slots=True, kw_only=True)
class CostSum:
    """Costs of several usages added up (:func:`sum_costs`), the bases kept apart.

    ``billed`` is the sum of the ``metered`` parts' totals (USD billed per token); ``plan`` the sum of
    the ``subscription`` parts' totals — what they would have cost at list prices, paid by a plan, so
    never part of ``billed``; ``bases`` the bases of the parts added. When a part's price is unknown
    both amounts are 0 and mean nothing (:attr:`known` is False).
    """

    billed: float = 0.0
    plan: float = 0.0
    bases: frozenset[CostBasis] = frozenset()

    @property
    def known(self) -> bool:
        """False when some part's price is not known: the sum is then unknown, never a smaller sum."""
        return "unknown" not in self.bases

    @property
    def basis(self) -> CostBasis:
        """The sum's basis: ``unknown`` when a part is; else ``metered`` when a part is (the bill is
        :attr:`billed`; :attr:`plan` says what plan-paid parts there were); else ``subscription`` when
        a part is; else ``free`` (every part free). No parts: ``metered`` at $0, as ``Cost()`` is."""
        for basis in _SUM_ORDER:
            if basis in self.bases:
                return basis
        return "metered"

    def add(self, cost: Cost) -> CostSum:
        """This sum with ``cost`` added (see :func:`sum_costs` for the rule)."""
        basis: CostBasis = cost.basis if cost.basis in COST_BASES and cost.total is not None else "unknown"
        bases = self.bases.union((basis,))
        if "unknown" in bases:
            return CostSum(bases=bases)
        total = cost.total or 0.0
        billed = self.billed + (total if basis == "metered" else 0.0)
        plan = self.plan + (total if basis == "subscription" else 0.0)
        return CostSum(billed=billed, plan=plan, bases=bases)


def sum_costs(costs: Iterable[Cost]) -> CostSum:
    """Add up the costs of several usages — the one rule for mixed bases:

    - a part whose price is unknown makes the sum unknown (``known`` False): never a smaller sum;
    - ``free`` parts add nothing; all free (and at least one part), the sum is ``free``;
    - ``metered`` parts add up to ``billed``, the bill;
    - ``subscription`` parts add up to ``plan`` (their list-price value) and never into ``billed``.
    """
    found = CostSum()
    for cost in costs:
        found = found.add(cost)
    return found


@dataclass(slots=True, kw_only=True)
class Usage(JsonModel):
    """Token counts for one response (see the module docstring for the contract)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int | None = None
    reasoning: int | None = None
    total_tokens: int = 0
    cost: Cost = field(default_factory=Cost)

    def recompute_total(self) -> None:
        """Set ``total_tokens`` from the four components."""
        self.total_tokens = self.input + self.output + self.cache_read + self.cache_write


_PER_MILLION = 1_000_000


def calculate_cost(model: Model, usage: Usage, *, multiplier: float = 1.0) -> Cost:
    """Price ``usage`` at ``model``'s per-million-token rates times ``multiplier`` (a processing tier
    billed relative to the catalog's prices), store it in ``usage.cost`` and return it.

    Anthropic bills one-hour cache writes at twice the base input rate; ``cache_write_1h`` (a subset
    of ``cache_write``) is priced that way. The cost takes the model's basis: ``unknown`` gives a
    cost whose ``total`` is None (whatever the rates say), ``free`` a cost of 0; ``metered`` and
    ``subscription`` are priced at the rates. A basis that is none of the four (set on the model's
    cost after it was made; a stream refuses such a model before it starts) prices as ``unknown``.
    """
    rates = model.cost
    cost = usage.cost
    basis: CostBasis = rates.basis if rates.basis in COST_BASES else "unknown"
    cost.basis = basis
    if basis in ("unknown", "free"):
        cost.input = cost.output = cost.cache_read = cost.cache_write = 0.0
        cost.total = None if basis == "unknown" else 0.0
        return cost
    # Each part in the same order of operations as ever (a float result is not changed by a rewrite),
    # each read once: with per-chunk usage (Gemini) this runs for every event.
    cache_write = usage.cache_write
    write_1h = min(usage.cache_write_1h or 0, cache_write)
    rate_in = rates.input
    cost.input = input_cost = rate_in * usage.input / _PER_MILLION * multiplier
    cost.output = output_cost = rates.output * usage.output / _PER_MILLION * multiplier
    cost.cache_read = read_cost = rates.cache_read * usage.cache_read / _PER_MILLION * multiplier
    cost.cache_write = write_cost = (
        (rates.cache_write * (cache_write - write_1h) + rate_in * 2 * write_1h) / _PER_MILLION * multiplier
    )
    cost.total = input_cost + output_cost + read_cost + write_cost
    return cost
