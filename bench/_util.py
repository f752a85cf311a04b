"""Timing helpers shared by the benchmarks, and the rule that turns noisy ratios into verdicts.

The rule (:data:`RULE`, printed with every report): a ratio is measured as the **median of paired
ratios** — each round times both sides back to back (their order alternating), after one warm-up
round that is thrown away — and the median gets a distribution-free confidence interval from the
order statistics of the rounds (the sign-test interval; no assumption about the noise's shape, and
one disturbed round moves it by at most one rank). Then:

- **within budget** when the whole interval clears the budget by the drift allowance, or, once no
  more rounds are allowed, when the median meets it;
- **OVER BUDGET** only when the whole interval misses it by more than the drift allowance
  (:data:`DRIFT`: the shift between runs on one machine that no round of one run can see) — by
  twice that before the last round, since judging at every look gives noise more than one chance;
- otherwise **undecided**: more interleaved rounds, up to :data:`MAX_ROUNDS`; still undecided then,
  it is printed as undecided (≈ budget), never as over.

So a ratio that truly meets its budget is called over only if every round of the interval's top
rank came out more than the drift allowance below it — noise of the size seen (±5 % per round,
the odd round off by 20 %) does not do that (``tests/bench/test_verdict_rule.py``).
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "CONFIDENCE",
    "DRIFT",
    "ESCAPED_TEXT",
    "MAX_ROUNDS",
    "MIN_ROUNDS",
    "MIN_ROUNDS_FOR_OVER",
    "ROUND_STEP",
    "RULE",
    "Decision",
    "Judgement",
    "argument_fragments",
    "best_of",
    "decide",
    "judge",
    "judge_excess",
    "measure_ratio",
    "median_interval",
    "ready_message",
    "settle",
    "verdict",
]

#: The text field of each benchmark record: an escaped quote, an escaped TAB and a newline, so tool
#: arguments carry the escapes real code edits do.
ESCAPED_TEXT = 'x = "a\\tb"\n'

#: Paired rounds measured before a ratio is first judged.
MIN_ROUNDS = 7
#: Rounds added each time a ratio is undecided.
ROUND_STEP = 4
#: Rounds after which an undecided ratio stays undecided (keeps ``make bench`` to minutes).
MAX_ROUNDS = 23
#: Fewer rounds than this never make a ratio over (a slow contender, the SDK, starts with one).
MIN_ROUNDS_FOR_OVER = 3
#: Coverage asked of the interval around the median (at least; order statistics give whole steps).
CONFIDENCE = 0.98
#: Relative drift between runs that no single run sees (CPU frequency, memory layout): a ratio is
#: over budget only when its interval misses the budget by more than this.
DRIFT = 0.05

Decision = Literal["within", "over", "undecided"]

RULE = (
    f"verdict rule: median of paired interleaved rounds (warm-up dropped), {CONFIDENCE:.0%} sign-test interval; "
    f"within when the interval clears the budget by {DRIFT:.0%} (or, after {MAX_ROUNDS} rounds, the median meets it); "
    f"OVER only when the whole interval misses it by more than {DRIFT:.0%} drift ({2 * DRIFT:.0%} before the last "
    f"round); otherwise {ROUND_STEP} more rounds, up to {MAX_ROUNDS}, then 'undecided'"
)
"""One line that says how verdicts are reached; every report prints it."""


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
    """'within budget' / 'OVER BUDGET' text for one measured value (a single figure, no interval:
    for figures far from their budget or not noisy, e.g. import time)."""
    ok = value <= budget if at_most else value >= budget
    sign = "≤" if at_most else "≥"
    return f"budget {sign} {budget:g}: {'within budget' if ok else 'OVER BUDGET'}"


_SAID: dict[Decision, str] = {
    "within": "within budget",
    "over": "OVER BUDGET",
    "undecided": f"undecided (median misses; interval + {DRIFT:.0%} drift reaches it)",
}


@dataclass(frozen=True, slots=True)
class Judgement:
    """A ratio measured over ``rounds`` paired rounds, its interval, and what it says of the budget."""

    estimate: float
    low: float
    high: float
    rounds: int
    budget: float | None
    at_most: bool
    decision: Decision | None

    def text(self) -> str:
        """``1.93 [1.90–1.95, 7 rounds]   budget ≥ 2: OVER BUDGET`` (no budget: the figure alone)."""
        figure = f"{self.estimate:.2f} [{self.low:.2f}–{self.high:.2f}, {self.rounds} rounds]"
        if self.budget is None or self.decision is None:
            return figure
        sign = "≤" if self.at_most else "≥"
        said = _SAID[self.decision]
        return f"{figure}   budget {sign} {self.budget:g}: {said}"

    def as_dict(self) -> dict[str, object]:
        """The judgement as JSON-ready fields."""
        return {
            "estimate": round(self.estimate, 4),
            "low": round(self.low, 4),
            "high": round(self.high, 4),
            "rounds": self.rounds,
            "budget": self.budget,
            "at_most": self.at_most,
            "verdict": self.decision,
        }


def _sign_test_rank(n: int, confidence: float) -> int:
    """The largest rank ``k`` such that ``[x_(k), x_(n+1-k)]`` of ``n`` sorted samples covers the median
    with at least ``confidence``: its coverage is ``1 - 2·P(X ≤ k-1)`` for ``X ~ Binomial(n, 1/2)``.
    1 (the whole range) when even that falls short, as it does for fewer than six samples."""
    tail = (1.0 - confidence) / 2
    k, below = 1, 1 / 2**n  # below: P(X ≤ k-1)
    while k < (n + 1) // 2 and below + math.comb(n, k) / 2**n <= tail:
        below += math.comb(n, k) / 2**n
        k += 1
    return k


def median_interval(samples: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """``(median, low, high)`` of ``samples``: the distribution-free interval for the median from the
    order statistics (few samples: their whole range). ``ValueError`` when there are none."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    k = _sign_test_rank(len(ordered), confidence)
    return statistics.median(ordered), ordered[k - 1], ordered[len(ordered) - k]


def decide(
    estimate: float, low: float, high: float, budget: float, *, at_most: bool, final: bool, drift: float = DRIFT
) -> Decision:
    """The rule (module docstring) for one interval. ``final``: no more rounds will be measured."""
    if at_most:  # mirror an upper bound into a lower one: the same rule on reciprocals
        return decide(1 / estimate, 1 / high, 1 / low, 1 / budget, at_most=False, final=final, drift=drift)
    # A miss seen in the first rounds must be twice as clear, or it is measured again: deciding at
    # every look would give noise several chances to fake one.
    if high * (1 + (drift if final else 2 * drift)) < budget:
        return "over"
    if low >= budget * (1 + drift) or (final and estimate >= budget):
        return "within"
    return "undecided"


def judge(samples: Sequence[float], budget: float | None, *, at_most: bool = False, final: bool = True) -> Judgement:
    """A :class:`Judgement` of paired-ratio ``samples`` against ``budget`` (None: no budget)."""
    estimate, low, high = median_interval(samples)
    decision = None if budget is None else decide(estimate, low, high, budget, at_most=at_most, final=final)
    if decision == "over" and len(samples) < MIN_ROUNDS_FOR_OVER and not final:
        decision = "undecided"  # one or two rounds are no interval: measure more before calling it over
    return Judgement(estimate, low, high, len(samples), budget, at_most, decision)


def judge_excess(samples: Sequence[float], budget: float, *, allowance: float) -> Judgement:
    """A :class:`Judgement` of paired differences (``samples``: per round, one side's cost minus the
    other's, measured in the same round) against an upper ``budget`` in the same unit, by the rule on an
    absolute scale: the drift between runs no round sees is ``allowance`` in that unit (the load suite
    gives :data:`DRIFT` of its first side's median cost, ours: what such a drift moves a difference by).
    Every round is measured before this is asked, so the judgement is final:

    - **within** when the median meets the budget;
    - **over** only when the whole interval lies above the budget by more than ``allowance``;
    - **undecided** otherwise (the median misses, but the interval and the drift reach the budget).

    One round is its own interval: over past the allowance, within at or under the budget."""
    estimate, low, high = median_interval(samples)
    decision: Decision
    if low > budget + allowance:
        decision = "over"
    elif estimate <= budget:
        decision = "within"
    else:
        decision = "undecided"
    return Judgement(estimate, low, high, len(samples), budget, True, decision)


def settle(
    samples: list[float],
    more: Callable[[int], None],
    budget: float | None,
    *,
    at_most: bool = False,
    max_rounds: int = MAX_ROUNDS,
    step: int = ROUND_STEP,
) -> Judgement:
    """Judge ``samples`` (a list ``more(n)`` appends ``n`` new rounds to), adding rounds while the ratio
    is undecided and fewer than ``max_rounds`` were measured; the final judgement."""
    while True:
        final = len(samples) >= max_rounds
        judgement = judge(samples, budget, at_most=at_most, final=final)
        if judgement.decision != "undecided" or final:
            return judgement
        more(min(step, max_rounds - len(samples)))


def _cpu_seconds(fn: Callable[[], object]) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


def measure_ratio(
    numerator: Callable[[], object],
    denominator: Callable[[], object],
    budget: float | None,
    *,
    at_most: bool = False,
    scale: float = 1.0,
) -> Judgement:
    """``scale`` × CPU time of ``numerator`` over that of ``denominator``, judged by the rule: one
    warm-up of each, then paired rounds in alternating order, more while undecided."""
    numerator()
    denominator()
    samples: list[float] = []

    def more(n: int) -> None:
        for _ in range(n):
            if len(samples) % 2:
                below = _cpu_seconds(denominator)
                above = _cpu_seconds(numerator)
            else:
                above = _cpu_seconds(numerator)
                below = _cpu_seconds(denominator)
            samples.append(scale * above / below)

    more(MIN_ROUNDS)
    return settle(samples, more, budget, at_most=at_most)


def ready_message(receiver: Any, process: Any, timeout_s: float = 120.0) -> Any:
    """What a spawned server process sends once it is ready (its base URL), or ``RuntimeError`` when
    it exits first or says nothing within ``timeout_s``: a server that crashes on start (an import
    that fails in the child) must fail the run, not leave ``recv()`` waiting forever."""
    deadline = time.monotonic() + timeout_s
    while not receiver.poll(0.25):
        if not process.is_alive():
            raise RuntimeError(f"the server process exited (code {process.exitcode}) before it was ready")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server process was not ready within {timeout_s:g}s")
    return receiver.recv()
