"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

__all__ = ["ESCAPED_TEXT", "argument_fragments", "best_of", "verdict"]

#: The text field of each benchmark record: an escaped quote, an escaped TAB and a newline, so tool
#: arguments carry the escapes real code edits do.
ESCAPED_TEXT = 'x = "a\\tb"\n'


def argument_fragments(deltas: int, text: str = ESCAPED_TEXT, *, malformed: bool = False) -> list[str]:
    """A realistic tool-argument payload (a list of edit records) cut into ``deltas`` fragments of a
    few characters each. ``malformed``: with the raw TABs and stray backslashes some compatible
    servers send, which the builder repairs."""
    records = [{"path": f"src/module_{i}.py", "line": i, "text": text} for i in range(deltas // 12 + 1)]
    raw = json.dumps({"edits": records})
    if malformed:
        raw = raw.replace("\\t", "\t").replace("\\\\", "\\")
    size = max(1, len(raw) // deltas)
    fragments = [raw[i : i + size] for i in range(0, len(raw), size)]
    return [*fragments[: deltas - 1], "".join(fragments[deltas - 1 :])]


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
