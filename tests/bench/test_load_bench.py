"""The load suite: on a few streams for a second, exact event counts through every built-in adapter, the
bare transport and the SDK, in two client processes on aiohttp and uvloop, nothing leaked, and
``python -m bench load … --json`` passing its arguments through; the budgets' verdicts and the report
lines from made-up figures. No timing is asserted (latency and CPU figures are printed, never checked)."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import time
import tracemalloc
from array import array
from pathlib import Path
from typing import cast

import pytest

from bench import _report, load_bench
from bench._load_report import MATRIX_STREAMS
from bench._load_server import stamp_ns
from bench._load_stacks import (
    ANTHROPIC,
    SETTLE_S,
    CollectorFigure,
    LoadFigure,
    Phase,
    Pool,
    combine,
    run_phase,
    scan,
)
from streamfns._adapters import builtin_adapters

ROOT = Path(__file__).resolve().parents[2]
_APIS = set(builtin_adapters())  # every built-in adapter is driven


def _figure(
    stack: str,
    streams: int,
    *,
    transport: str = "aiohttp",
    loop: str = "uvloop",
    processes: int = 1,
    p99_ms: float = 5.0,
    cpu_us: float = 20.0,
    ok: int | None = None,
    rate: float = 20.0,
    paired_round: int = 0,
) -> LoadFigure:
    """A made-up figure of the Anthropic api: every latency ``p99_ms``, ``cpu_us`` per event."""
    figure = LoadFigure(
        ANTHROPIC,
        stack,
        streams,
        rate,
        10,
        "" if stack == "sdk" else transport,
        loop,
        processes=processes,
        paired_round=paired_round,
    )
    figure.events = streams * 10
    figure.ok_streams = streams if ok is None else ok
    figure.cpu_s, figure.wall_s = cpu_us * figure.events / 1e6, 1.0
    figure.latencies_ns = array("q", [int(p99_ms * 1e6)] * 100)
    return figure


def _verdicts(*figures: LoadFigure) -> dict[str, str]:
    return {budget.key: budget.verdict for budget in load_bench.budgets(list(figures))}


@pytest.mark.parallel
def test_a_budget_no_figure_speaks_of_is_not_measured_never_within() -> None:
    assert _verdicts() == dict.fromkeys("abcd", "not measured")
    small = _figure("ours", 100)  # 100 streams say nothing of 1,000
    assert _verdicts(small) == dict.fromkeys("abcd", "not measured")
    one_process = _figure("ours", 2000)  # (b) is two processes
    assert _verdicts(one_process)["b"] == "not measured"
    assert _verdicts(one_process)["a"] == "within"


@pytest.mark.parallel
def test_the_load_budgets_within_over_and_undecided() -> None:
    assert _verdicts(_figure("ours", 1000, p99_ms=40))["a"] == "within"
    assert _verdicts(_figure("ours", 1000, p99_ms=150))["a"] == "OVER"
    assert _verdicts(_figure("ours", 1000, ok=999))["a"] == "OVER"  # a stream short of its events
    assert _verdicts(_figure("ours", 1000, rate=10))["a"] == "not measured"  # a lighter load
    # only more than the budget's load was tried, and not sustained: it cannot tell
    assert _verdicts(_figure("ours", 2000, p99_ms=150))["a"] == "undecided"
    # the fastest transport decides
    assert _verdicts(_figure("ours", 1000, p99_ms=150), _figure("ours", 1000, transport="httpx"))["a"] == "within"
    # with --sustain-ms 500 a load may count as sustained, but the budget's line stays at 100 ms
    lenient = _figure("ours", 1000, p99_ms=150)
    lenient.sustain_ms = 500
    assert lenient.sustained
    assert _verdicts(lenient)["a"] == "OVER"


@pytest.mark.parallel
def test_two_processes_sustain_only_if_each_does() -> None:
    both = combine([_figure("ours", 1000, processes=1), _figure("ours", 1000, processes=1)])
    assert (both.streams, both.events, both.processes, len(both.latencies_ns)) == (2000, 20000, 2, 200)
    assert _verdicts(both)["b"] == "within"
    # the merged latencies' p99 passes (one slow latency in 200), but one process's own p99 does not
    slow = _figure("ours", 1000)
    slow.latencies_ns = array("q", [int(5e6)] * 99 + [int(300e6)])
    one_behind = combine([_figure("ours", 1000), slow])
    assert one_behind.latency_ms(0.99) < 100 < slow.latency_ms(0.99)
    assert not one_behind.sustained
    assert _verdicts(one_behind)["b"] == "OVER"


@pytest.mark.parallel
def test_ours_against_the_sdk() -> None:
    sdk_250, sdk_500_fails = _figure("sdk", 250), _figure("sdk", 500, p99_ms=300)
    assert _verdicts(_figure("ours", 1000), sdk_250, sdk_500_fails)["c"] == "within"
    ours_500_fails = _figure("ours", 500, p99_ms=300)
    assert _verdicts(_figure("ours", 250), ours_500_fails, sdk_250, sdk_500_fails)["c"] == "OVER"
    # ours never tried at twice the SDK's load: cannot tell
    assert _verdicts(_figure("ours", 250), sdk_250, sdk_500_fails)["c"] == "undecided"
    # the SDK sustained the most it was given: its own limit is unknown
    assert _verdicts(_figure("ours", 1000), _figure("sdk", 1000))["c"] == "undecided"
    assert _verdicts(_figure("ours", 1000))["c"] == "not measured"


@pytest.mark.parallel
def test_ours_minus_bare() -> None:
    ours, bare = _figure("ours", 100, cpu_us=30), _figure("bare", 100, cpu_us=25)
    assert _verdicts(ours, bare)["d"] == "within"
    assert _verdicts(_figure("ours", 100, cpu_us=40), bare)["d"] == "OVER"
    # a bare figure of another transport, loop or load is no partner
    assert _verdicts(ours, _figure("bare", 100, transport="httpx"))["d"] == "not measured"
    assert _verdicts(ours, _figure("bare", 200))["d"] == "not measured"
    # every pair must be within
    pairs = [ours, bare, _figure("ours", 100, loop="asyncio", cpu_us=50), _figure("bare", 100, loop="asyncio")]
    assert _verdicts(*pairs)["d"] == "OVER"


def _recorded_run(monkeypatch: pytest.MonkeyPatch, combo: load_bench.Combination) -> load_bench.LoadRun:
    """A run of ``combo`` alone at 1,000 streams (no SDK), its report's JSON record kept for the test."""
    monkeypatch.setattr(_report, "_results", {})
    monkeypatch.setattr(_report, "_suite", "load")
    return load_bench.LoadRun([combo], {}, load_bench.Leaks(), 10.0, 1000, 20.0, 1, "", False)


def _rounds(ours_us: list[float], bare_us: list[float], floor_us: list[float] | None = None) -> list[LoadFigure]:
    """Ours, the bare transport and (given) the floor at 1,000 streams, one of each per paired round."""
    figures: list[LoadFigure] = []
    for index, (ours, bare) in enumerate(zip(ours_us, bare_us, strict=True)):
        figures += [_figure("ours", 1000, cpu_us=ours, paired_round=index)]
        figures += [_figure("bare", 1000, cpu_us=bare, paired_round=index)]
        if floor_us is not None:
            figures.append(_figure("floor", 1000, cpu_us=floor_us[index], paired_round=index))
    return figures


@pytest.mark.parallel
def test_ours_minus_bare_pairs_the_figures_of_one_round_and_judges_the_median_of_the_rounds() -> None:
    # The host's speed moves both sides of a round alike: each round's difference is 6 µs, while ours of
    # one round minus the bare transport of another would be as much as 26.
    bare = [20.0, 40.0, 25.0, 35.0, 30.0, 22.0, 38.0]
    figures = _rounds([b + 6 for b in bare], bare)
    (cell,) = load_bench.cells(figures)
    assert cell.differences == pytest.approx([6.0] * 7)
    assert _verdicts(*figures)["d"] == "within"
    # the median of the rounds' differences, not one round's: two rounds past the budget are noise
    noisy = _rounds([b + d for b, d in zip(bare, [6, 14, 7, 8, 15, 5, 9], strict=True)], bare)
    budget = next(b for b in load_bench.budgets(noisy) if b.key == "d")
    assert budget.verdict == "within"
    assert budget.detail == "largest aiohttp × uvloop at 1,000 streams: median 8.0 µs [5.0–15.0, 7 rounds] (1 measured)"
    # every round over by more than the drift allowance (5% of ours' median): over
    over = _rounds([b + d for b, d in zip(bare, [13, 14, 15, 13, 16, 14, 13], strict=True)], bare)
    assert _verdicts(*over)["d"] == "OVER"
    # the median over, the interval within reach: undecided, never over
    close = _rounds([b + d for b, d in zip(bare, [9, 11, 12, 10.5, 11, 13, 10.8], strict=True)], bare)
    assert _verdicts(*close)["d"] == "undecided"
    # a round whose bare transport did not run pairs with nothing
    assert len(load_bench.cells([*figures[:-1]])[0].pairs) == 6


@pytest.mark.parallel
def test_the_report_gives_each_loads_medians_interval_and_split_over_its_rounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    figures = _rounds([30.0, 34.0, 32.0], [22.0, 25.0, 24.0], [26.0, 30.0, 27.0])
    first = [f for f in figures if f.paired_round == 0]
    later = [f for f in figures if f.paired_round > 0]
    combo = load_bench.Combination("aiohttp", "uvloop", first[:1], first[1:], first[:1], rounds=later)
    lines = load_bench.report(_recorded_run(monkeypatch, combo))
    # medians: ours 32, bare 24; the rounds' differences 8, 9, 8 (median 8); floor − bare 4, 5, 3 (4);
    # ours − floor 4, 4, 5 (4)
    expected = (
        "    aiohttp × uvloop   1,000 streams: ours   32.0  bare   24.0  ours − bare    8.0 [8.0–9.0, 3 rounds]   "
        "within  = parse and build   4.0 (floor 27.0 − bare) + kit   4.0 (ours − floor)"
    )
    assert expected in lines
    assert any(line.startswith("    (several rounds:") and "its 98% sign-test interval" in line for line in lines)
    # every round's phase is printed, the later ones marked with their round
    assert sum(" ours aiohttp #2 " in line or " ours aiohttp #3 " in line for line in lines) == 2
    (record,) = _report.results()["load"]["load"]
    (cell,) = record["ours_minus_bare"]
    assert (cell["rounds"], cell["difference_us"], cell["differences_us"], cell["verdict"]) == (
        3,
        8.0,
        [8.0, 9.0, 8.0],
        "within",
    )
    assert (cell["ours_cpu_us_per_event"], cell["bare_cpu_us_per_event"], cell["floor_cpu_us_per_event"]) == (
        32.0,
        24.0,
        27.0,
    )
    # the split as the report gives it: medians of the rounds' own differences (27 − 24 and 32 − 27 of the
    # medians would say 3 and 5)
    assert (cell["parse_and_build_us"], cell["kit_us"]) == (4.0, 4.0)
    assert [row["round"] for row in record["combinations"][0]["rounds"]] == [1, 1, 1, 2, 2, 2]


@pytest.mark.parallel
def test_the_bare_consumer_counts_a_delta_cut_between_two_reads() -> None:
    figure = LoadFigure(ANTHROPIC, "bare", 1, 1.0, 2)
    body = (
        b'event: content_block_start\ndata: {"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"delta":{"type":"text_delta","text":"12 "}}\n\n'
        b'event: content_block_delta\ndata: {"delta":{"type":"text_delta","text":"345 "}}\n\n'
    )
    in_key, in_stamp = body.index(b'text_delta","text":"12') + 5, body.index(b"345") + 1
    counted, carry = 0, b""
    for data in (body[:in_key], body[in_key:in_stamp], body[in_stamp:]):  # a key and a stamp each cut in two
        found, carry = scan(figure, carry + data)
        counted += found
    assert counted == 2
    assert figure.events == 2
    assert len(figure.latencies_ns) == 2


@pytest.mark.parallel
def test_a_phase_times_each_collector_pass_and_settles_after_its_last_start() -> None:
    figure = LoadFigure(ANTHROPIC, "ours", 6, 20.0, 1)
    starts: list[int] = []

    async def one(_figure: LoadFigure) -> bool:
        starts.append(stamp_ns())
        if len(starts) == 1:
            # Holds the loop on purpose: every later stream starts at least this late, whatever was planned.
            time.sleep(0.05)  # noqa: ASYNC251
        await asyncio.sleep(0)
        gc.collect()  # a full pass, and a young one, in every stream: each one timed
        gc.collect(0)
        return True

    before = list(gc.callbacks)
    asyncio.run(run_phase(figure, one, spread_s=0.01))
    assert gc.callbacks == before  # the watch is taken out with the phase
    watched = figure.collector
    assert watched is not None
    assert watched.passes[2] >= 6
    assert watched.passes[0] >= 6
    assert 0 <= watched.longest_ms <= watched.total_ms
    assert watched.longest_generation in (0, 1, 2)
    assert 0 <= watched.longest_at_s <= figure.wall_s
    assert "(" in watched.summary()
    assert "full)" in watched.summary()
    # settled from one SETTLE_S after the last stream started (read as it started, not as planned)
    last_start = figure.settled_from_ns - int(SETTLE_S * 1e9)
    assert min(starts) + 50_000_000 <= last_start <= max(starts)
    assert CollectorFigure().summary() == "no pass"


@pytest.mark.parallel
def test_the_memory_pass_counts_the_tracked_objects_an_open_stream_holds() -> None:
    held_each = 60

    async def holding(_figure: LoadFigure) -> bool:
        held: list[list[int]] = [[] for _ in range(held_each)]  # tracked, alive until the stream ends
        await asyncio.sleep(1.0)  # its timer is due after the probe's: every stream is open at the probe
        return len(held) == held_each

    async def at_once(_figure: LoadFigure) -> bool:
        return True

    async def passes() -> tuple[LoadFigure, LoadFigure, LoadFigure]:
        tracemalloc.start()
        try:
            counted = await run_phase(LoadFigure(ANTHROPIC, "ours", 4, 20.0, 1), holding, spread_s=0.01)
            ended = await run_phase(LoadFigure(ANTHROPIC, "ours", 4, 20.0, 1), at_once, spread_s=0.01)
        finally:
            tracemalloc.stop()
        timed = await run_phase(LoadFigure(ANTHROPIC, "ours", 4, 20.0, 1), holding, spread_s=0.01)
        return counted, ended, timed

    counted, ended, timed = asyncio.run(passes())
    assert counted.ok_streams == 4
    assert counted.objects_per_stream is not None
    # its 60 lists and the list of them, and the stream's own task and coroutines: no more than that
    assert held_each + 1 <= counted.objects_per_stream <= held_each + 40
    assert f"{counted.objects_per_stream:.0f} tracked objects a stream" in counted.tail_line()
    assert counted.as_dict()["objects_per_stream"] == round(counted.objects_per_stream, 1)
    # the count's own list (a pointer for every object in the process) is kept out of the memory figure
    assert counted.memory_kib_per_stream is not None
    assert counted.memory_kib_per_stream * 1024 * 4 < 8 * len(gc.get_objects()) / 2
    assert ended.objects_per_stream is None  # every stream over before the probe: nothing to divide by
    assert timed.objects_per_stream is None  # counted only in the memory pass, never in a timed one


@pytest.mark.parallel
def test_the_settled_p99_leaves_the_starts_out_and_is_none_when_nothing_settled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ms = 1_000_000
    starting = _figure("ours", 1000, p99_ms=1)
    starting.sent_ns = array("q", [100, 200, 300, 400])
    starting.latencies_ns = array("q", [500 * ms, 400 * ms, 2 * ms, 3 * ms])
    assert starting.settled_latency_ms(0.99) is None  # no cut set: nothing is called settled
    starting.settled_from_ns = 300
    assert starting.settled_latency_ms(0.99) == 3.0
    assert starting.latency_ms(0.99) == 500.0
    assert starting.tail_line() == f"      tail: p99 from {SETTLE_S:g} s after the last start    3.00 ms"
    assert starting.as_dict()["latency_p99_settled_ms"] == 3.0
    starting.settled_from_ns = 401  # a run too short to settle: no figure, not one of nothing
    assert starting.settled_latency_ms(0.99) is None
    assert starting.tail_line() == ""
    assert starting.as_dict()["latency_p99_settled_ms"] is None
    # several processes: each part's own cut, their settled latencies merged
    early, late = _figure("ours", 500), _figure("ours", 500)
    early.sent_ns, early.latencies_ns, early.settled_from_ns = array("q", [5, 9]), array("q", [90 * ms, 4 * ms]), 9
    late.sent_ns, late.latencies_ns, late.settled_from_ns = array("q", [5, 9]), array("q", [50 * ms, 7 * ms]), 5
    both = combine([early, late])
    assert both.settled_latency_ms(0.99) == 50.0  # 4 (early's settled), 50 and 7 (late's)
    assert both.settled_latency_ms(0.0) == 4.0
    # the collector: counts and time summed, the longest of the processes kept with its own time
    early.collector = CollectorFigure([10, 2, 0], 30.0, 6.0, 1, 0.5)
    late.collector = CollectorFigure([12, 1, 1], 90.0, 70.0, 2, 0.8)
    merged = combine([early, late]).collector
    assert merged is not None
    assert merged == CollectorFigure([22, 3, 1], 120.0, 70.0, 2, 0.8)
    assert merged.summary() == "26 passes (1 full), longest 70.0 ms (generation 2, at 0.80 s), 120 ms in all"
    late.collector = None  # a process not watched: the whole is not claimed watched
    assert combine([early, late]).collector is None
    # in the report, under the figure's own line
    monkeypatch.setattr(_report, "_results", {})
    monkeypatch.setattr(_report, "_suite", "load")
    run = _run()
    ours = run.combinations[0].figures[0]
    ours.collector = CollectorFigure([300, 30, 1], 250.0, 75.5, 2, 0.85)
    lines = load_bench.report(run)
    at = lines.index(ours.line())
    assert lines[at + 1] == (
        "      tail: collector: 331 passes (1 full), longest 75.5 ms (generation 2, at 0.85 s), 250 ms in all"
    )
    (record,) = _report.results()["load"]["load"]
    assert record["adapters"][0]["collector"] == {
        "passes_by_generation": [300, 30, 1],
        "total_ms": 250.0,
        "longest_ms": 75.5,
        "longest_generation": 2,
        "longest_at_s": 0.85,
    }
    assert record["bare"][0]["collector"] is None


def _run(*, matrix: bool = False) -> load_bench.LoadRun:
    """A made-up run: one transport × loop, ours and the bare transport, the SDK halved once."""
    ours, bare = _figure("ours", 1000, cpu_us=30), _figure("bare", 1000, cpu_us=25)
    sdk = [_figure("sdk", 1000, p99_ms=300), _figure("sdk", 500)]
    ours_500 = _figure("ours", 500)
    combo = load_bench.Combination("aiohttp", "uvloop", [ours], [bare], [ours, ours_500])
    return load_bench.LoadRun(
        [combo], {"uvloop": sdk}, load_bench.Leaks(), 10.0, 1000, 20.0, 1, "the SDK on aiohttp", matrix
    )


@pytest.mark.parallel
def test_the_report_lines_and_the_json_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_report, "_results", {})
    monkeypatch.setattr(_report, "_suite", "load")
    lines = load_bench.report(_run())
    text = "\n".join(lines)
    assert lines[0].startswith("load: 1,000 streams × 20 events/s × 10 s per phase, 1 client process")
    assert "  SDK: the SDK on aiohttp" in lines
    assert "  -- aiohttp × uvloop" in lines
    assert "  -- anthropic SDK × uvloop" in lines
    assert "on uvloop: ours aiohttp 1,000 streams; anthropic SDK 500" in text
    assert "per event at 500 streams: ours aiohttp" in text
    assert "    aiohttp × uvloop   1,000 streams: ours   30.0  bare   25.0  ours − bare    5.0   within" in lines
    assert any(line.startswith("  (a) 1,000 streams × 20/s sustained in one process") for line in lines)
    assert any(line.startswith("  (c) ") and line.endswith("   within") for line in lines)  # 1,000 ≥ 2 × 500
    assert any(line.startswith("  (d) ") and line.endswith("   within") for line in lines)
    assert not any(line.startswith("  (b) ") for line in lines)
    assert "  not measured by this run: (b) 2,000 streams × 20/s sustained in 2 processes" in text
    assert lines[-1].startswith("  leaks: fds 0")
    assert lines[-1].endswith("   ok")
    (record,) = _report.results()["load"]["load"]
    assert (record["transport"], record["loop"], record["processes"], record["streams"]) == (
        "aiohttp",
        "uvloop",
        1,
        1000,
    )
    assert [row["stack"] for row in record["bare"]] == ["bare"]
    assert record["ours_minus_bare"] == [
        {
            "transport": "aiohttp",
            "loop": "uvloop",
            "streams": 1000,
            "processes": 1,
            "ours_cpu_us_per_event": 30.0,
            "bare_cpu_us_per_event": 25.0,
            "difference_us": 5.0,
            "floor_cpu_us_per_event": None,
            "rounds": 1,
            "difference_low_us": 5.0,
            "difference_high_us": 5.0,
            "differences_us": [5.0],
            "verdict": "within",
            "parse_and_build_us": None,
            "kit_us": None,
        }
    ]
    assert {b["key"]: b["verdict"] for b in record["budgets"]} == {
        "a": "within",
        "b": "not measured",
        "c": "within",
        "d": "within",
    }
    assert (record["sdk_sustained_streams"], record["compared_at_streams"]) == (500, 500)


@pytest.mark.parallel
def test_the_floor_splits_ours_minus_bare_into_parse_and_build_and_the_kit(monkeypatch: pytest.MonkeyPatch) -> None:
    ours, bare, floor = (
        _figure("ours", 1000, cpu_us=30),
        _figure("bare", 1000, cpu_us=20),
        _figure("floor", 1000, cpu_us=26),
    )
    # a floor of another load is no partner: its pair says nothing of a split
    other = _figure("floor", 500, cpu_us=99)
    combo = load_bench.Combination("aiohttp", "uvloop", [ours], [bare, floor, other], [ours])
    run = _recorded_run(monkeypatch, combo)
    lines = load_bench.report(run)
    expected = (
        "    aiohttp × uvloop   1,000 streams: ours   30.0  bare   20.0  ours − bare   10.0   within"
        "  = parse and build   6.0 (floor 26.0 − bare) + kit   4.0 (ours − floor)"
    )
    assert expected in lines
    (record,) = _report.results()["load"]["load"]
    (pair,) = record["ours_minus_bare"]
    assert pair["floor_cpu_us_per_event"] == 26.0
    assert [row["stack"] for row in record["bare"]] == ["bare", "floor", "floor"]
    # without a floor at that load the line ends at the verdict, and the record says None
    combo.bare = [bare, other]
    lines = load_bench.report(run)
    assert "    aiohttp × uvloop   1,000 streams: ours   30.0  bare   20.0  ours − bare   10.0   within" in lines
    assert _report.results()["load"]["load"][-1]["ours_minus_bare"][0]["floor_cpu_us_per_event"] is None


@pytest.mark.parallel
def test_a_matrix_report_pairs_ours_and_bare_at_each_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_report, "_results", None)
    lines = load_bench.report(_run(matrix=True))
    assert lines[0].startswith("load matrix: anthropic-messages at 250, 500, 1,000, 2,000 streams × 20 events/s")
    figures = [line.split()[1] for line in lines if line.startswith(f"  {ANTHROPIC} ")]
    assert figures == ["ours", "bare", "sdk", "sdk"]  # at each load, ours and then the stacks without the kit


class _RecordingPool:
    """A pool that runs nothing: it records each phase asked of it and gives back a figure of it."""

    loop = "uvloop"

    def __init__(self) -> None:
        self.phases: list[tuple[str, int, int, bool]] = []

    def run(self, phase: Phase) -> LoadFigure:
        self.phases.append((phase.stack, phase.streams, phase.events, phase.memory))
        figure = _figure(phase.stack, phase.streams)
        figure.expected = phase.events  # tells a warm-up's figure from a measured one
        return figure


@pytest.mark.parallel
def test_each_load_is_warmed_unmeasured_before_ours_bare_and_the_floor_are_measured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first phase a client process runs at a load pays for growing to it; the warm-up takes that
    # cost, so it lands on no measured stack (ours ran first at each load, and paid it).
    def no_server(_url: str) -> dict[str, float]:
        return {"cpu_s": 0.0}

    monkeypatch.setattr(load_bench, "server_stats", no_server)
    pool = _RecordingPool()
    driver = load_bench._Driver(cast("Pool", pool), "http://127.0.0.1:1", 20.0, 10.0, 100.0)  # pyright: ignore[reportPrivateUsage]
    combos, _ = load_bench._run_matrix(driver, ["aiohttp"], sdk=False)  # pyright: ignore[reportPrivateUsage]
    timed = [p for p in pool.phases if not p[3]]
    warm_events = 20  # a second at 20 a second
    expected: list[tuple[str, int, int, bool]] = []
    for streams in MATRIX_STREAMS:
        expected += [(stack, streams, warm_events, False) for stack in ("ours", "bare", "floor")]
        expected += [(stack, streams, 200, False) for stack in ("ours", "bare", "floor")]
    assert timed == expected
    # the warm-ups' figures are nowhere in what the run reports
    (combo,) = combos
    reported = [*combo.figures, *combo.bare, *combo.ours_tries]
    assert [f.expected for f in reported] == [200] * len(reported)
    assert len(combo.figures) == len(MATRIX_STREAMS)
    assert len(combo.bare) == 2 * len(MATRIX_STREAMS)


@pytest.mark.parallel
def test_later_rounds_follow_the_first_at_each_load_every_other_one_in_reverse(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_server(_url: str) -> dict[str, float]:
        return {"cpu_s": 0.0}

    monkeypatch.setattr(load_bench, "server_stats", no_server)
    pool = _RecordingPool()
    driver = load_bench._Driver(cast("Pool", pool), "http://127.0.0.1:1", 20.0, 10.0, 100.0)  # pyright: ignore[reportPrivateUsage]
    (combo,), _ = load_bench._run_matrix(driver, ["aiohttp"], sdk=False, rounds=3)  # pyright: ignore[reportPrivateUsage]
    timed = [(stack, streams) for stack, streams, events, memory in pool.phases if events == 200 and not memory]
    expected: list[tuple[str, int]] = []
    for streams in MATRIX_STREAMS:
        expected += [(stack, streams) for stack in ("ours", "bare", "floor", "floor", "bare", "ours")]
        expected += [(stack, streams) for stack in ("ours", "bare", "floor")]
    assert timed == expected
    assert [f.paired_round for f in combo.rounds] == [1, 1, 1, 2, 2, 2] * len(MATRIX_STREAMS)
    assert all(f.paired_round == 0 for f in [*combo.figures, *combo.bare])
    assert [len(cell.pairs) for cell in load_bench.cells([*combo.figures, *combo.bare, *combo.rounds])] == [3] * len(
        MATRIX_STREAMS
    )


@pytest.mark.parallel
def test_the_command_measures_three_paired_rounds_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def measure(*_args: object, rounds: int, **_kwargs: object) -> load_bench.LoadRun:
        asked.append(rounds)
        return load_bench.LoadRun([], {}, load_bench.Leaks(), 10.0)

    def no_report(_run: load_bench.LoadRun) -> list[str]:
        return []

    monkeypatch.setattr(load_bench, "measure", measure)
    monkeypatch.setattr(load_bench, "report", no_report)
    assert load_bench.main(["--no-sdk"]) == 0
    assert load_bench.main(["--no-sdk", "--rounds", "7"]) == 0
    assert asked == [3, 7]
    with pytest.raises(SystemExit):
        load_bench.main(["--rounds", "0"])


@pytest.mark.parallel
def test_the_default_run_measures_the_anthropic_adapter_the_bare_transport_and_the_floor_back_to_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (d) compares ours with the bare transport: measured minutes apart (ten other apis between them),
    # the host's drift moved it by as much as the budget's margin.
    def no_server(_url: str) -> dict[str, float]:
        return {"cpu_s": 0.0}

    class _ApiPool(_RecordingPool):
        def __init__(self) -> None:
            super().__init__()
            self.apis: list[tuple[str, str]] = []

        def run(self, phase: Phase) -> LoadFigure:
            if phase.events == 200:  # measured (not the warm-up, not the memory pass)
                self.apis.append((phase.stack, phase.api))
            figure = super().run(phase)
            figure.api = phase.api
            return figure

    monkeypatch.setattr(load_bench, "server_stats", no_server)
    pool = _ApiPool()
    driver = load_bench._Driver(cast("Pool", pool), "http://127.0.0.1:1", 20.0, 10.0, 100.0)  # pyright: ignore[reportPrivateUsage]
    apis = sorted(_APIS)
    (combo,), _ = load_bench._run_loop(driver, ["aiohttp"], apis, 100, sdk=False)  # pyright: ignore[reportPrivateUsage]
    others = [("ours", api) for api in apis if api != ANTHROPIC]
    assert pool.apis == [("ours", ANTHROPIC), ("bare", ANTHROPIC), ("floor", ANTHROPIC), *others]
    assert [f.api for f in combo.figures] == apis  # reported in the order asked
    # later rounds of the three follow the first at once, before the other apis
    pool = _ApiPool()
    driver = load_bench._Driver(cast("Pool", pool), "http://127.0.0.1:1", 20.0, 10.0, 100.0)  # pyright: ignore[reportPrivateUsage]
    (combo,), _ = load_bench._run_loop(driver, ["aiohttp"], apis, 100, sdk=False, rounds=2)  # pyright: ignore[reportPrivateUsage]
    compared = [("ours", ANTHROPIC), ("bare", ANTHROPIC), ("floor", ANTHROPIC)]
    assert pool.apis == [*compared, *compared[::-1], *others]
    assert [(f.stack, f.paired_round) for f in combo.rounds] == [("floor", 1), ("bare", 1), ("ours", 1)]


@pytest.mark.slow
def test_two_client_processes_on_aiohttp_and_uvloop_receive_exactly_their_events_and_nothing_leaks() -> None:
    pytest.importorskip("aiohttp")
    pytest.importorskip("uvloop")
    run = load_bench.measure(
        streams=4, rate=40, seconds=0.5, transports=["aiohttp"], loops=["uvloop"], processes=2, gc_threshold=5000
    )
    assert {figure.api for figure in run.figures} == _APIS
    assert len(run.figures) == len(_APIS)
    (combo,) = run.combinations
    bare, floor = combo.bare
    assert (bare.stack, floor.stack) == ("bare", "floor")
    for figure in [*run.figures, bare, floor]:
        assert (figure.streams, figure.expected, figure.processes) == (4, 20, 2), figure.label
        assert (figure.transport, figure.loop) == ("aiohttp", "uvloop")
        assert figure.events == 4 * 20, figure.api
        assert len(figure.latencies_ns) == 4 * 20
        assert figure.ok_streams == 4, figure.api
        assert [(part.streams, part.events, part.ok_streams) for part in figure.parts] == [(2, 40, 2), (2, 40, 2)]
        assert figure.memory_kib_per_stream is not None  # from the tracemalloc pass
        # The threshold each process ran under, read there: every stack alike.
        assert [part.gc_threshold for part in figure.parts] == [5000, 5000]
        # Each process watched its collector over the timed phase, and set where its phase settles.
        assert figure.collector is not None
        assert all(part.collector is not None for part in figure.parts)
        assert all(part.settled_from_ns > 0 for part in figure.parts)
        assert len(figure.sent_ns) == len(figure.latencies_ns)
    assert {t.gc_threshold for t in [*run.ours_tries, *run.sdk_tries]} == {5000}
    assert {(f.stack, f.api) for f in [*run.figures, bare, floor]} == {("ours", api) for api in _APIS} | {
        ("bare", ANTHROPIC),
        ("floor", ANTHROPIC),
    }
    assert run.sdk_tries, "the SDK ran"
    assert run.ours_tries[0] is next(f for f in run.figures if f.api == ANTHROPIC)  # ours at the full load
    for tried in [*run.ours_tries, *run.sdk_tries]:  # halved only while a level is not sustained
        assert tried.events == tried.streams * 20
        assert tried.ok_streams == tried.streams
    assert {t.stack for t in run.sdk_tries} == {"sdk"}
    assert "DefaultAioHttpClient" in run.sdk_client
    leaks = run.leaks
    assert (leaks.fds, leaks.tasks, leaks.server_connections, leaks.unfinished_responses) == (0, 0, 0, 0)
    assert leaks.failed_streams == 0
    lines = load_bench.report(run)
    assert lines[0].startswith("load: 4 streams × 40 events/s × 0.5 s per phase, 2 client processes")
    assert any(
        line.startswith("  collector: every client process, every stack alike, gc.set_threshold(5,000")
        for line in lines
    )
    assert "  -- aiohttp × uvloop" in lines
    assert any(line.startswith("      process 2/2: 2 streams, 40 events") for line in lines)
    (split,) = [line for line in lines if line.startswith("    aiohttp × uvloop") and "ours − bare" in line]
    assert "= parse and build" in split
    assert "+ kit" in split
    assert lines[-1].endswith("   ok")


@pytest.mark.slow
def test_python_m_bench_load_passes_its_arguments_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    argv = ["load", "--streams", "2", "--rate", "50", "--seconds", "0.2", "--no-sdk", "--rounds", "2"]
    argv += ["--transport", "all", "--loop", "asyncio", "--json", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "bench", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "load: 2 streams × 50 events/s × 0.2 s per phase, 1 client process" in done.stdout
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["schema"] == 1
    assert {"date", "git_revision", "cpus", "cpu_model", "python", "rule"} <= set(document)
    (load,) = document["suites"]["load"]["load"]
    assert (load["streams"], load["rate"], load["seconds"], load["processes"]) == (2, 50, 0.2, 1)
    assert load["gc_threshold"] is None  # Python's own collector settings unless --gc-threshold says otherwise
    transports = (
        ["native", "aiohttp", "httpx"] if "aiohttp" in load_bench.available("transport") else ["native", "httpx"]
    )
    assert [(c["transport"], c["loop"]) for c in load["combinations"]] == [(t, "asyncio") for t in transports]
    assert (load["transport"], load["loop"]) == (transports[0], "asyncio")
    for combination in load["combinations"]:
        rows = [*combination["adapters"], *combination["bare"]]
        assert {row["api"] for row in combination["adapters"]} == _APIS
        assert all(row["events"] == 2 * 10 and row["ok_streams"] == 2 for row in rows)
        assert all(row["memory_kib_per_stream"] is not None for row in rows)
        assert {row["gc_threshold"] for row in rows} == {gc.get_threshold()[0]}  # unchanged
        assert all(len(row["collector"]["passes_by_generation"]) == 3 for row in rows)
        assert all(row["latency_p99_settled_ms"] is None or row["latency_p99_settled_ms"] >= 0 for row in rows)
        assert [row["stack"] for row in combination["bare"]] == ["bare", "floor"]
    assert [(p["transport"], p["streams"], p["rounds"]) for p in load["ours_minus_bare"]] == [
        (t, 2, 2) for t in transports
    ]
    for combination in load["combinations"]:  # the second round of the three compared stacks
        assert [(row["stack"], row["round"]) for row in combination["rounds"]] == [
            ("floor", 1),
            ("bare", 1),
            ("ours", 1),
        ]
        assert all(row["events"] == 2 * 10 and row["ok_streams"] == 2 for row in combination["rounds"])
    assert load["sdk_tries"] == []
    assert load["ours_tries"] == []
    assert load["sdk_client"] == ""
    assert {b["key"]: b["verdict"] for b in load["budgets"]}["a"] == "not measured"
    assert load["leaks"] == {
        "fds": 0,
        "tasks": 0,
        "server_connections": 0,
        "unfinished_responses": 0,
        "failed_streams": 0,
    }
