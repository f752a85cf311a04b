"""The load suite's results and their report: the figures of a run, the budgets' verdicts, the report
lines and the ``--json`` record (see :mod:`bench.load_bench` for what is measured and how).

A budget's verdict is ``within``, ``OVER``, ``undecided`` (what was measured cannot tell) or ``not
measured`` (this run did not drive the load it speaks of): a budget is never ``within`` on a load it
did not measure. The verdicts are printed, never asserted.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from bench import _report
from bench._load_stacks import ANTHROPIC, LoadFigure
from bench._util import CONFIDENCE, DRIFT, Judgement, judge_excess

__all__ = ["MATRIX_STREAMS", "Budget", "Cell", "Combination", "Leaks", "LoadRun", "budgets", "cells", "pairs", "report"]

#: The loads of ``--matrix``.
MATRIX_STREAMS = (250, 500, 1000, 2000)
#: What the budgets measure against.
_BUDGET_RATE = 20.0
_BUDGET_P99_MS = 100.0
_BUDGET_OVERHEAD_US = 10.0


@dataclass(slots=True)
class Leaks:
    """What was left once every phase had ended (each must be 0)."""

    fds: int = 0
    tasks: int = 0
    server_connections: int = 0
    unfinished_responses: int = 0
    failed_streams: int = 0

    def total(self) -> int:
        """The sum of the must-be-0 figures."""
        return self.fds + self.tasks + self.server_connections + self.unfinished_responses + self.failed_streams


@dataclass(slots=True)
class Combination:
    """Everything measured on one transport × loop: ours per api (``--matrix``: the Anthropic adapter
    per load), the stacks without the kit per load (``bare``: the bare transport, then the floor where
    it ran), and ours (Anthropic) at the loads tried for the SDK."""

    transport: str
    loop: str
    figures: list[LoadFigure]
    bare: list[LoadFigure]
    ours_tries: list[LoadFigure] = field(default_factory=list[LoadFigure])
    #: The later paired rounds (``--rounds``) of ours (Anthropic), the bare transport and the floor, in
    #: the order they ran: their first round is in ``figures`` and ``bare``.
    rounds: list[LoadFigure] = field(default_factory=list[LoadFigure])


@dataclass(slots=True)
class LoadRun:
    """Everything one load run measured."""

    combinations: list[Combination]
    #: The SDK's tries, per event loop.
    sdk_by_loop: dict[str, list[LoadFigure]]
    leaks: Leaks
    seconds: float
    #: Streams per phase (``--matrix``: the most of its loads) and deltas a second per stream.
    streams: int = 0
    rate: float = 0.0
    processes: int = 1
    sdk_client: str = ""
    matrix: bool = False
    #: The client processes' first-generation collector threshold (None: Python's default).
    gc_threshold: int | None = None

    @property
    def figures(self) -> list[LoadFigure]:
        """Ours per api on the first transport × loop (the default one)."""
        return self.combinations[0].figures if self.combinations else []

    @property
    def ours_tries(self) -> list[LoadFigure]:
        """Ours (Anthropic) at the loads tried for the SDK, on the first transport × loop."""
        return self.combinations[0].ours_tries if self.combinations else []

    @property
    def sdk_tries(self) -> list[LoadFigure]:
        """The SDK's tries on the first combination's loop."""
        return self.sdk_by_loop.get(self.combinations[0].loop, []) if self.combinations else []

    def every(self) -> list[LoadFigure]:
        """Every figure the run measured, each once."""
        found: dict[int, LoadFigure] = {}
        for combo in self.combinations:
            for figure in [*combo.figures, *combo.bare, *combo.ours_tries, *combo.rounds]:
                found[id(figure)] = figure
        for tries in self.sdk_by_loop.values():
            found.update((id(t), t) for t in tries)
        return list(found.values())

    @staticmethod
    def largest_sustained(tries: list[LoadFigure]) -> LoadFigure | None:
        """The try with the most streams that was sustained, if any."""
        sustained = [t for t in tries if t.sustained]
        return max(sustained, key=lambda t: t.streams) if sustained else None


@dataclass(frozen=True, slots=True)
class Budget:
    """One budget's verdict: ``within``, ``OVER``, ``undecided`` or ``not measured``."""

    key: str
    claim: str
    verdict: str
    detail: str

    def line(self) -> str:
        """One report line."""
        return f"  ({self.key}) {self.claim}: {self.detail}   {self.verdict}"


def _where(figure: LoadFigure) -> str:
    return f"{figure.transport} × {figure.loop}" if figure.transport else f"SDK × {figure.loop}"


def _budget_load(key: str, figures: list[LoadFigure], streams: int, processes: int) -> Budget:
    """At least ``streams`` streams × 20/s of ours (Anthropic) held p99 < 100 ms in ``processes``
    processes, on whichever transport × loop did best."""
    where = "one process" if processes == 1 else f"{processes} processes"
    claim = f"{streams:,} streams × {_BUDGET_RATE:g}/s sustained in {where} (p99 < {_BUDGET_P99_MS:g} ms)"
    tried = [
        f
        for f in figures
        if f.stack == "ours"
        and f.api == ANTHROPIC
        and f.processes == processes
        and f.streams >= streams
        and f.rate >= _BUDGET_RATE
    ]
    if not tried:
        return Budget(key, claim, "not measured", f"no run of ≥ {streams:,} streams in {where}")
    held = [f for f in tried if f.holds(_BUDGET_P99_MS)]
    best = min(held or tried, key=lambda f: (f.latency_ms(0.99), f.cpu_us_per_event))
    detail = (
        f"best {_where(best)} at {best.streams:,} streams: {best.ok_streams:,} streams whole, "
        f"p99 {best.latency_ms(0.99):.2f} ms, CPU {best.cpu_us_per_event:.1f} µs/event"
    )
    if held:
        return Budget(key, claim, "within", detail)
    exact = any(f.streams == streams and f.rate == _BUDGET_RATE for f in tried)
    return Budget(key, claim, "OVER" if exact else "undecided", detail if exact else detail + " (only more was tried)")


def _budget_sdk(figures: list[LoadFigure]) -> Budget:
    """Ours (Anthropic, any transport × loop) sustains at least twice the streams the SDK does."""
    claim = "ours sustains ≥ 2× the streams the anthropic SDK sustains"
    ours = [f for f in figures if f.stack == "ours" and f.api == ANTHROPIC]
    sdk = [f for f in figures if f.stack == "sdk"]
    if not ours or not sdk:
        return Budget(key="c", claim=claim, verdict="not measured", detail="the SDK did not run")
    o = max((f.streams for f in ours if f.sustained), default=0)
    s = max((f.streams for f in sdk if f.sustained), default=0)
    detail = f"ours {o:,} streams, the SDK {s:,} (largest sustained of those tried)"
    if not any(not f.sustained and f.streams > s for f in sdk):
        return Budget("c", claim, "undecided", detail + "; the SDK sustained the most it was given")
    if o > 0 and o >= 2 * s:
        return Budget("c", claim, "within", detail)
    levels = {f.streams for f in ours}
    failed = [n for n in levels if not any(f.sustained for f in ours if f.streams == n)]
    if any(o < n <= 2 * s for n in failed):
        return Budget("c", claim, "OVER", detail)
    return Budget("c", claim, "undecided", detail + "; ours was not tried at twice the SDK's")


def _cell_key(figure: LoadFigure) -> tuple[str, str, int, int]:
    return (figure.transport, figure.loop, figure.streams, figure.processes)


def pairs(figures: list[LoadFigure]) -> list[tuple[LoadFigure, LoadFigure]]:
    """(ours, bare) of the Anthropic body at the same transport, loop, streams and processes, and of the
    same paired round."""
    bare = {(*_cell_key(f), f.paired_round): f for f in figures if f.stack == "bare"}
    found: list[tuple[LoadFigure, LoadFigure]] = []
    for ours in figures:
        partner = bare.get((*_cell_key(ours), ours.paired_round))
        if ours.stack == "ours" and ours.api == ANTHROPIC and partner is not None:
            found.append((ours, partner))
    return found


def floor_of(ours: LoadFigure, figures: list[LoadFigure]) -> LoadFigure | None:
    """The floor figure at ``ours``'s transport, loop, streams and processes, of its round, if one ran."""
    key = (*_cell_key(ours), ours.paired_round)
    return next((f for f in figures if f.stack == "floor" and (*_cell_key(f), f.paired_round) == key), None)


@dataclass(frozen=True, slots=True)
class Cell:
    """One transport × loop × load × processes where ours (Anthropic) and the bare transport ran, in
    one or more paired rounds (``pairs``, each with its round's floor where one ran): ours − bare per
    round, and its median judged against the budget (:func:`bench._util.judge_excess`, the drift
    allowance :data:`bench._util.DRIFT` of ours' median cost)."""

    pairs: tuple[tuple[LoadFigure, LoadFigure, LoadFigure | None], ...]

    @property
    def ours(self) -> LoadFigure:
        """The first round's ours (the cell's transport, loop, streams and processes)."""
        return self.pairs[0][0]

    @property
    def differences(self) -> list[float]:
        """Ours − bare, CPU µs an event, per round."""
        return [ours.cpu_us_per_event - bare.cpu_us_per_event for ours, bare, _ in self.pairs]

    def median(self, stack: str) -> float:
        """The median CPU µs an event of ``stack`` (ours, bare, floor) over the rounds (floor: those
        that ran one; NaN when none did)."""
        index = ("ours", "bare", "floor").index(stack)
        costs = [figure.cpu_us_per_event for figure in (pair[index] for pair in self.pairs) if figure is not None]
        return statistics.median(costs) if costs else float("nan")

    def split(self) -> tuple[float, float] | None:
        """Medians over the rounds with a floor of (floor − bare, ours − floor): parsing and building,
        and the kit. None when no round ran a floor."""
        with_floor = [(o, b, f) for o, b, f in self.pairs if f is not None]
        if not with_floor:
            return None
        parse = statistics.median(f.cpu_us_per_event - b.cpu_us_per_event for _, b, f in with_floor)
        kit = statistics.median(o.cpu_us_per_event - f.cpu_us_per_event for o, _, f in with_floor)
        return parse, kit

    def judgement(self) -> Judgement:
        """Ours − bare judged against the budget over the rounds (one round: its own figure)."""
        return judge_excess(self.differences, _BUDGET_OVERHEAD_US, allowance=DRIFT * self.median("ours"))


def cells(figures: list[LoadFigure]) -> list[Cell]:
    """The :class:`Cell` of each load where ours and the bare transport ran, in the order ours first ran."""
    grouped: dict[tuple[str, str, int, int], list[tuple[LoadFigure, LoadFigure, LoadFigure | None]]] = {}
    for ours, bare in pairs(figures):
        grouped.setdefault(_cell_key(ours), []).append((ours, bare, floor_of(ours, figures)))
    return [Cell(tuple(sorted(found, key=lambda pair: pair[0].paired_round))) for found in grouped.values()]


def _budget_overhead(figures: list[LoadFigure]) -> Budget:
    """Ours − the bare transport ≤ 10 µs of CPU an event, at every transport × loop × load measured:
    each judged over its paired rounds; OVER when one is over, undecided when one cannot tell."""
    claim = f"ours − bare transport ≤ {_BUDGET_OVERHEAD_US:g} µs an event"
    found = cells(figures)
    if not found:
        return Budget("d", claim, "not measured", "no bare transport ran")
    judged = [(cell, cell.judgement()) for cell in found]
    severity = {"over": 2, "undecided": 1}
    worst, judgement = max(judged, key=lambda item: (severity.get(item[1].decision or "", 0), item[1].estimate))
    ours = worst.ours
    if judgement.rounds == 1:
        figure = f"{worst.median('ours'):.1f} − {worst.median('bare'):.1f} = {judgement.estimate:.1f} µs"
    else:
        figure = (
            f"median {judgement.estimate:.1f} µs [{judgement.low:.1f}–{judgement.high:.1f}, {judgement.rounds} rounds]"
        )
    detail = f"largest {_where(ours)} at {ours.streams:,} streams: {figure} ({len(found)} measured)"
    decisions = {j.decision for _, j in judged}
    verdict = "OVER" if "over" in decisions else "undecided" if "undecided" in decisions else "within"
    return Budget("d", claim, verdict, detail)


def budgets(figures: list[LoadFigure]) -> list[Budget]:
    """The four budgets' verdicts from a run's figures (see the module docstring)."""
    return [
        _budget_load("a", figures, 1000, 1),
        _budget_load("b", figures, 2000, 2),
        _budget_sdk(figures),
        _budget_overhead(figures),
    ]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 'es'}"


def _sections(run: LoadRun) -> list[str]:
    """Per loop: each transport's figures, then the SDK's and the largest loads sustained."""
    lines: list[str] = []
    for loop in dict.fromkeys(c.loop for c in run.combinations):
        combos = [c for c in run.combinations if c.loop == loop]
        for combo in combos:
            lines.append(f"  -- {combo.transport} × {loop}")
            if run.matrix:  # ours, then the stacks without the kit, then their later rounds, at each load
                for ours in combo.figures:
                    same = [f for f in [*combo.bare, *combo.rounds] if f.streams == ours.streams]
                    lines += [line for f in [ours, *same] for line in f.lines()]
            else:
                lines += [line for f in [*combo.figures, *combo.bare, *combo.rounds] for line in f.lines()]
                extra = [t for t in combo.ours_tries if all(t is not f for f in combo.figures)]
                lines += [line for t in extra for line in t.lines()]
        sdk_tries = run.sdk_by_loop.get(loop, [])
        if not sdk_tries:
            continue
        lines.append(f"  -- anthropic SDK × {loop}")
        lines += [line for t in sdk_tries for line in t.lines()]
        sdk_best = LoadRun.largest_sustained(sdk_tries)
        ours = ", ".join(
            f"ours {c.transport} {getattr(LoadRun.largest_sustained(c.ours_tries), 'streams', 0):,}" for c in combos
        )
        lines.append(
            f"  largest load sustained at {run.rate:g} events/s per stream on {loop}: {ours} streams; "
            f"anthropic SDK {sdk_best.streams if sdk_best else 0:,}"
        )
        for combo in combos if sdk_best is not None else []:
            assert sdk_best is not None
            compared = next((t for t in combo.ours_tries if t.streams == sdk_best.streams), None)
            if compared is not None:
                lines.append(
                    f"  per event at {sdk_best.streams:,} streams: ours {combo.transport} "
                    f"{compared.cpu_us_per_event:.1f} µs CPU, the SDK {sdk_best.cpu_us_per_event:.1f} "
                    f"({sdk_best.cpu_us_per_event / compared.cpu_us_per_event:.1f}× ours); p99 latency "
                    f"{compared.latency_ms(0.99):.2f} ms vs {sdk_best.latency_ms(0.99):.2f} ms"
                )
    return lines


def _overhead_lines(found: list[Cell]) -> list[str]:
    if not found:
        return []
    lines = [f"  ours − bare transport, CPU µs per event ({ANTHROPIC}, same load; budget ≤ {_BUDGET_OVERHEAD_US:g}):"]
    if any(len(cell.pairs) > 1 for cell in found):
        lines.append(
            "    (several rounds: each figure the median of the rounds, ours − bare the median of the rounds' own "
            f"differences [its {CONFIDENCE:.0%} sign-test interval]; every round measured, within when that median "
            f"meets the budget, OVER only when the whole interval misses it by more than {DRIFT:.0%} of ours' cost)"
        )
    for cell in found:
        judgement = cell.judgement()
        ours, bare = cell.median("ours"), cell.median("bare")
        interval = (
            f" [{judgement.low:.1f}–{judgement.high:.1f}, {judgement.rounds} rounds]" if judgement.rounds > 1 else ""
        )
        split = cell.split()
        said = (
            f"  = parse and build {split[0]:5.1f} (floor {cell.median('floor'):.1f} − bare) + kit {split[1]:5.1f} "
            "(ours − floor)"
            if split is not None
            else ""
        )
        verdict = {"within": "within", "over": "OVER", "undecided": "undecided"}[judgement.decision or "undecided"]
        lines.append(
            f"    {_where(cell.ours):<18} {cell.ours.streams:>5,} streams: ours {ours:6.1f}  bare "
            f"{bare:6.1f}  ours − bare {judgement.estimate:6.1f}{interval}   {verdict}{said}"
        )
    return lines


def _budget_lines(verdicts: list[Budget]) -> list[str]:
    measured = [b for b in verdicts if b.verdict != "not measured"]
    lines = ["  budgets (measured, not asserted):"] if measured else []
    lines += [b.line() for b in measured]
    missing = [f"({b.key}) {b.claim}" for b in verdicts if b.verdict == "not measured"]
    if missing:
        lines.append(f"  not measured by this run: {'; '.join(missing)}")
    return lines


def _cell_record(cell: Cell) -> dict[str, object]:
    """One cell of ``ours_minus_bare`` in the ``--json`` record: the medians over its rounds (one round:
    its figures), the median of the rounds' differences, its interval and verdict, and every round's."""
    judgement = cell.judgement()
    floor = cell.median("floor")
    split = cell.split()
    ours = cell.ours
    return {
        "transport": ours.transport,
        "loop": ours.loop,
        "streams": ours.streams,
        "processes": ours.processes,
        "ours_cpu_us_per_event": round(cell.median("ours"), 3),
        "bare_cpu_us_per_event": round(cell.median("bare"), 3),
        "difference_us": round(judgement.estimate, 3),
        "floor_cpu_us_per_event": None if math.isnan(floor) else round(floor, 3),  # NaN: no round ran a floor
        "rounds": judgement.rounds,
        "difference_low_us": round(judgement.low, 3),
        "difference_high_us": round(judgement.high, 3),
        "differences_us": [round(d, 3) for d in cell.differences],
        "verdict": judgement.decision,
        # The medians of the rounds' own floor − bare and ours − floor (None: no floor ran), as the report
        # splits ours − bare: not the medians' differences, which need not add up to it.
        "parse_and_build_us": None if split is None else round(split[0], 3),
        "kit_us": None if split is None else round(split[1], 3),
    }


def _record(run: LoadRun, found: list[Cell], verdicts: list[Budget]) -> None:
    """The ``--json`` record: the first (default) transport × loop under the keys the perf page reads,
    then every combination, the ours − bare pairs and the budgets."""
    first = run.combinations[0] if run.combinations else None
    ours_best, sdk_best = LoadRun.largest_sustained(run.ours_tries), LoadRun.largest_sustained(run.sdk_tries)
    compared = sdk_best is not None and any(t.streams == sdk_best.streams for t in run.ours_tries)
    leaks = run.leaks
    _report.record(
        "load",
        {
            "streams": run.streams,
            "rate": run.rate,
            "seconds": run.seconds,
            "transport": first.transport if first else "",
            "loop": first.loop if first else "",
            "processes": run.processes,
            "matrix": run.matrix,
            "gc_threshold": run.gc_threshold,
            "sdk_client": run.sdk_client,
            "adapters": [f.as_dict() for f in run.figures],
            "bare": [f.as_dict() for f in first.bare] if first else [],
            "ours_tries": [t.as_dict() for t in run.ours_tries],
            "sdk_tries": [t.as_dict() for t in run.sdk_tries],
            "ours_sustained_streams": ours_best.streams if ours_best else 0,
            "sdk_sustained_streams": sdk_best.streams if sdk_best else 0,
            "compared_at_streams": sdk_best.streams if sdk_best and compared else 0,
            "combinations": [
                {
                    "transport": c.transport,
                    "loop": c.loop,
                    "adapters": [f.as_dict() for f in c.figures],
                    "bare": [f.as_dict() for f in c.bare],
                    "ours_tries": [t.as_dict() for t in c.ours_tries],
                    "rounds": [f.as_dict() for f in c.rounds],
                }
                for c in run.combinations
            ],
            "sdk_by_loop": {loop: [t.as_dict() for t in tries] for loop, tries in run.sdk_by_loop.items()},
            "ours_minus_bare": [_cell_record(cell) for cell in found],
            "budgets": [{"key": b.key, "claim": b.claim, "verdict": b.verdict, "detail": b.detail} for b in verdicts],
            "leaks": {
                "fds": leaks.fds,
                "tasks": leaks.tasks,
                "server_connections": leaks.server_connections,
                "unfinished_responses": leaks.unfinished_responses,
                "failed_streams": leaks.failed_streams,
            },
        },
    )


def report(run: LoadRun) -> list[str]:
    """Report lines, the leaks line last (and the ``--json`` record)."""
    every = run.every()
    found = cells(every)
    verdicts = budgets(every)
    processes = _plural(run.processes, "client process")
    if run.matrix:
        loads = ", ".join(f"{n:,}" for n in MATRIX_STREAMS)
        head = f"load matrix: {ANTHROPIC} at {loads} streams × {run.rate:g} events/s × {run.seconds:g} s per phase"
    else:
        head = f"load: {run.streams:,} streams × {run.rate:g} events/s × {run.seconds:g} s per phase"
    lines = [
        (
            f"{head}, {processes} (streams split evenly), server in its own process; latency = server write → "
            "consumer event; memory from a tracemalloc pass"
        ),
        (
            "  ours: the kit's own client (StreamOptions(transport=…): httpx one per call, aiohttp one session per "
            "loop shared by the calls in flight), no idle connection kept; "
            "bare: the transport alone, one client, no connection limit, reading each HTTP chunk; floor: bare "
            "with the adapter's own framing, decoder and builder on each read, none of the rest of the kit"
        ),
    ]
    if run.sdk_client:
        lines.append(f"  SDK: {run.sdk_client}")
    if run.gc_threshold is not None:
        lines.append(
            f"  collector: every client process, every stack alike, gc.set_threshold({run.gc_threshold:,}, …) "
            "(Python's own otherwise)"
        )
    lines += _sections(run)
    lines += _overhead_lines(found)
    lines += _budget_lines(verdicts)
    leaks = run.leaks
    lines.append(
        f"  leaks: fds {leaks.fds}, tasks {leaks.tasks}, server connections open {leaks.server_connections}, "
        f"unfinished responses {leaks.unfinished_responses}, streams without exactly their events "
        f"{leaks.failed_streams}   {'ok' if leaks.total() == 0 else 'MUST BE 0'}"
    )
    _record(run, found, verdicts)
    return lines
