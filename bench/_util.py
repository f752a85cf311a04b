"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["best_of", "verdict"]


def best_of(fn: Callable[[], object], repeats: int = 3) -> float:
    """The fastest of ``repeats`` runs of ``fn``, in seconds (the least disturbed measurement)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def verdict(value: float, budget: float, *, at_most: bool) -> str:
    """'within budget' / 'OVER BUDGET' text for a measured ratio."""
    ok = value <= budget if at_most else value >= budget
    sign = "≤" if at_most else "≥"
    return f"budget {sign} {budget:g}: {'within budget' if ok else 'OVER BUDGET'}"
