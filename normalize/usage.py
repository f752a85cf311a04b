"""Token usage and its cost.

The usage contract every adapter follows: ``input`` excludes cached tokens, ``output`` includes
reasoning tokens, ``reasoning`` is a breakdown of ``output``, and
``total_tokens == input + output + cache_read + cache_write``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from normalize._jsonmodel import JsonModel

if TYPE_CHECKING:
    from normalize.model import Model

__all__ = ["Cost", "Usage", "calculate_cost"]


@dataclass(slots=True, kw_only=True)
class Cost(JsonModel):
    """Cost in USD, per usage component and in total."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


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


def calculate_cost(model: Model, usage: Usage) -> Cost:
    """Price ``usage`` at ``model``'s per-million-token rates, store it in ``usage.cost`` and return it.

    Anthropic bills one-hour cache writes at twice the base input rate; ``cache_write_1h`` (a subset
    of ``cache_write``) is priced that way.
    """
    rates = model.cost
    write_1h = min(usage.cache_write_1h or 0, usage.cache_write)
    cost = usage.cost
    cost.input = rates.input * usage.input / _PER_MILLION
    cost.output = rates.output * usage.output / _PER_MILLION
    cost.cache_read = rates.cache_read * usage.cache_read / _PER_MILLION
    cost.cache_write = (rates.cache_write * (usage.cache_write - write_1h) + rates.input * 2 * write_1h) / _PER_MILLION
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    return cost
