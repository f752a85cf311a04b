"""Many streams at once at a realistic token rate: CPU, latency and memory per event, and no leaks.

``python -m bench load --streams N --rate R --seconds S``: a loopback HTTP server in its own process
(``bench/_load_server.py``, on uvloop when installed) streams ``R`` text deltas a second on each of
``N`` concurrent streams for ``S`` seconds: through the Anthropic adapter, the bare transport and the
floor back to back (what ours − bare compares: phases seconds apart, not minutes), then through each
other built-in adapter in turn, then through the anthropic SDK's ``messages.stream()``. The streams are driven from
``--processes P`` client processes (default 1), ``N/P`` streams each, on the event loop ``--loop``
(``uvloop`` or ``asyncio``; default uvloop when installed), ours on the kit's own client of
``--transport`` (``aiohttp`` or ``httpx``; default aiohttp when installed), as a user who passes no
``http_client`` gets it: httpx a client per call, aiohttp one session per loop shared by the calls in
flight, no idle connection kept. ``all``
runs every transport, or every loop, in turn. See ``bench/_load_stacks.py`` for the stacks. For each
phase it prints:

- **CPU µs per event**: the client processes' CPU time over the phase (connects and client set-up
  included) divided by the events their consumers received;
- **added latency** p50 / p99: from the server writing a delta (it stamps ``CLOCK_MONOTONIC`` into
  the delta's text) to the consumer receiving the event, on the same machine (all processes' merged);
- **memory per stream**: in a separate short pass under ``tracemalloc`` (which slows everything, so
  never during the timed phases), the peak of traced memory over the pass, less what was traced
  before it, ÷ the streams open at once (at most 100, in one process); in the same pass, a tenth of
  a second after the last start, the objects the garbage collector tracks, less those before the
  pass, ÷ the streams open then (printed on the tail line below);
- the server's CPU share over the phase (near 100%: the server, not the client, was the limit);
- whether the load was **sustained**: every stream received exactly its deltas and the p99 latency
  stayed under ``--sustain-ms``, in every process (a client that falls behind queues, and its
  latency grows with time);
- under it, **where the tail is**: the p99 of the events sent from a second after the last stream
  started (the starts' own work behind them; none when the phase is too short to settle), and the
  garbage collector's passes over the timed phase in each client process (``gc.callbacks``): how
  many, how many of them full, the longest (its generation and when it began) and their time in
  all; and the tracked objects a stream holds (from the memory pass). A full pass stops every
  stream of its process; one that falls among the starts, when the loop is already behind, is what
  sets a p99 there (see docs/many-streams.md).

**Ours − bare**: the bare transport (its library alone, reading each HTTP chunk and finding the stamp
in the bytes, recorded the same way) runs at the same load; the difference of CPU per event is what
the adapter and the kit add. The **floor** (the bare transport with the Anthropic adapter's own framing,
decoder and builder applied to each read, none of the rest of the kit) runs at the same load too and
splits that difference: floor − bare is parsing and building, ours − floor the kit's read path, event
stream and per-call set-up. Ours (the Anthropic adapter) and the SDK are then each driven at
``N/2``, ``N/4``, … streams until they sustain the load, and ours runs once more at the SDK's largest
sustained load if it has not: the per-event comparison is made at the same load, where both keep up.

Before the first measured phase of each load, each of ours, the bare transport and the floor runs
unmeasured at that load for a second: the first phase a client process runs at a load pays for
growing the process to it (its heap, its first connections, caches filled on first use), a cost a
long-running server pays once; measured, it landed on whichever stack ran first there (ours), by 5–10
µs an event at 250 streams.

``--matrix`` instead runs the Anthropic adapter, its bare transport, the floor and the SDK at 250, 500, 1,000 and
2,000 streams (``--streams`` is ignored), on every transport × loop unless ``--transport``/``--loop``
name one, for ``--seconds`` (default 10 with ``--matrix``) per phase: about fifteen minutes. The SDK stops
at the first load it does not sustain.

``--rounds R`` (default 3) runs ours (Anthropic), the bare transport and the floor ``R`` times at each
load, the first round as above and each later one at once after it, every other one in reverse order
(floor, bare, ours), so a drift over the rounds lands on each stack alike. Ours − bare is then paired
by round: the median of the rounds' differences, with its sign-test interval, judged by the verdict
rule of ``bench._util`` (:func:`bench._util.judge_excess`: within when the median meets the budget,
OVER only when the whole interval misses it by more than 5 % of ours' cost, undecided otherwise).
One 10-second phase of each is one sample: at 250 streams on the EPYC single rounds of ours − bare
ranged from 1.2 to 10.6 µs an event, so a verdict on one round can say little; three rounds (the
default) give a median that one disturbed round does not move, and seven the rule's interval.

The **budgets** (measured, printed as within / OVER / undecided; a budget this run did not measure
says so): (a) 1,000 streams × 20/s sustained (p99 < 100 ms) in one process on the fastest transport;
(b) 2,000 with two processes; (c) ours sustains at least twice the streams the SDK does; (d) ours −
bare ≤ 10 µs an event, at every load measured (each over its rounds).

Then it checks nothing leaked — every stream ended ``done`` with exactly its events, no task left and
file descriptors back to where they were in every client process, and the server has no connection
left open and finished every response it started — and exits 1 if something did. The default (100
streams × 20/s × 10 s) is the short run of ``make bench``; the published figure is 1,000 streams × 20/s.
Streams last 10 s by default, as in the measurement the budgets come from: a stream's set-up is paid
once per stream (on the EPYC about 0.8 ms of CPU more for ours than for the bare library), which over
3 s (60 events) came to 13 µs an event, half of what (d) then measured at 100 streams, and over 10 s
(200 events) to 4 µs.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import resource
import time
from collections.abc import Callable
from typing import Any

from bench._load_report import MATRIX_STREAMS, Budget, Cell, Combination, Leaks, LoadRun, budgets, cells, report
from bench._load_server import serve
from bench._load_stacks import (
    ANTHROPIC,
    APIS,
    LoadFigure,
    Phase,
    Pool,
    available,
    record,
    run_phase,
    sdk_client,
    server_stats,
)
from bench._util import ready_message

__all__ = [
    "Budget",
    "Cell",
    "Combination",
    "Leaks",
    "LoadFigure",
    "LoadRun",
    "budgets",
    "cells",
    "main",
    "measure",
    "report",
]

# The names this module gave them before the stacks had a module of their own.
_record = record
_phase = run_phase

#: Streams and seconds of the memory pass (tracemalloc multiplies CPU costs; its figures are only memory).
_MEMORY_STREAMS = 100
_MEMORY_SECONDS = 0.25
_MEMORY_SPREAD_S = 0.05  # every stream open at once, so the peak is theirs together
#: ``--matrix``'s default seconds per phase (its loads: ``MATRIX_STREAMS``).
MATRIX_SECONDS = 10.0
#: A phase's default seconds (each stream's length) otherwise.
DEFAULT_SECONDS = 10.0
#: Seconds of each unmeasured warm-up phase (every stream open at once, so the load is reached).
_WARM_SECONDS = 1.0
#: The stacks ours − bare compares, warmed at a load before it is measured.
_COMPARED = ("ours", "bare", "floor")


class _Driver:
    """Runs phases of one load in a :class:`Pool`, each with the server's CPU over it."""

    def __init__(self, pool: Pool, base_url: str, rate: float, seconds: float, sustain_ms: float) -> None:
        self.pool, self.base_url, self.rate, self.sustain_ms = pool, base_url, rate, sustain_ms
        self.events = max(1, round(rate * seconds))
        # Starts spread over up to a second (a short run less, so `make bench` stays short), so connects
        # do not come as one burst and the streams' deltas fall evenly in time (1/rate would do for that).
        self.spread_s = min(1.0, seconds / 10)

    def run(
        self, stack: str, transport: str, streams: int, api: str = ANTHROPIC, *, paired_round: int = 0
    ) -> LoadFigure:
        """One timed phase of ``stack`` on ``transport`` at ``streams`` streams (split across the pool)."""
        phase = Phase(stack, api, transport, streams, self.rate, self.events, self.sustain_ms, self.spread_s)
        before = server_stats(self.base_url)["cpu_s"]
        figure = self.pool.run(phase)
        figure.server_cpu_s = server_stats(self.base_url)["cpu_s"] - before
        figure.paired_round = paired_round
        return figure

    def later_rounds(self, transport: str, streams: int, rounds: int) -> list[LoadFigure]:
        """Rounds 2 to ``rounds`` of ours (Anthropic), the bare transport and the floor at one load, each
        round's three back to back and every other round in the reverse order (as the bench's paired
        rounds alternate), so a drift over the rounds lands on every stack alike."""
        figures: list[LoadFigure] = []
        for index in range(1, rounds):
            order = _COMPARED[::-1] if index % 2 else _COMPARED
            figures += [self.run(stack, transport, streams, paired_round=index) for stack in order]
        return figures

    def warm(self, transport: str, streams: int) -> None:
        """Unmeasured phases of ours (Anthropic), the bare transport and the floor on ``transport`` at
        ``streams`` streams, so no measured phase pays for growing the client processes to that load
        (see the module docstring)."""
        events = max(1, round(self.rate * _WARM_SECONDS))
        for stack in _COMPARED:
            phase = Phase(stack, ANTHROPIC, transport, streams, self.rate, events, self.sustain_ms, _WARM_SECONDS / 2)
            self.pool.run(phase)

    def memory(self, figure: LoadFigure, streams: int) -> tuple[float | None, float | None]:
        """Memory and tracked objects per stream of ``figure``'s stack, from a pass of ``streams``
        streams under tracemalloc."""
        events = max(1, round(self.rate * _MEMORY_SECONDS))
        phase = Phase(
            figure.stack,
            figure.api,
            figure.transport,
            streams,
            self.rate,
            events,
            spread_s=_MEMORY_SPREAD_S,
            memory=True,
        )
        measured = self.pool.run(phase)
        return measured.memory_kib_per_stream, measured.objects_per_stream


def _halving(drive: Callable[[int], LoadFigure], first: LoadFigure | None, streams: int) -> list[LoadFigure]:
    """Tries at ``streams``, then half as many, … until one is sustained (``first``: the try at
    ``streams`` if already made)."""
    tries = [first if first is not None else drive(streams)]
    level = streams
    while not tries[-1].sustained and level > 1:
        level //= 2
        tries.append(drive(level))
    return tries


def _fill_memory(driver: _Driver, figures: list[LoadFigure], streams: int) -> None:
    """One memory pass per stack, transport and api among ``figures``, its figure given to each."""
    done: dict[tuple[str, str, str], tuple[float | None, float | None]] = {}
    for figure in figures:
        key = (figure.stack, figure.transport, figure.api)
        if key not in done:
            done[key] = driver.memory(figure, streams)
        figure.memory_kib_per_stream, figure.objects_per_stream = done[key]


def _run_loop(
    driver: _Driver, transports: list[str], apis: list[str], streams: int, sdk: bool, *, rounds: int = 1
) -> tuple[list[Combination], list[LoadFigure]]:
    """The default run on one loop: per transport (after a warm-up at the load) the Anthropic adapter,
    the bare transport and the floor, in ``rounds`` paired rounds, then every other api; then the halving
    tries of ours and the SDK, then the memory pass."""
    loop = driver.pool.loop
    combos: list[Combination] = []
    for transport in transports:
        driver.warm(transport, streams)
        # The Anthropic adapter, the bare transport and the floor back to back, so (d) compares phases
        # a few seconds apart, not minutes (the host's speed drifts: ten other apis took two and a half
        # minutes between them, and moved (d) by as much as the budget's margin); the other apis after.
        by_api: dict[str, LoadFigure] = {}
        if ANTHROPIC in apis:
            by_api[ANTHROPIC] = driver.run("ours", transport, streams, ANTHROPIC)
        without_kit = [driver.run(stack, transport, streams) for stack in ("bare", "floor")]
        later = driver.later_rounds(transport, streams, rounds) if ANTHROPIC in apis else []
        for api in apis:
            if api not in by_api:
                by_api[api] = driver.run("ours", transport, streams, api)
        figures = [by_api[api] for api in apis]
        combos.append(Combination(transport, loop, figures, without_kit, rounds=later))
    sdk_tries: list[LoadFigure] = []
    if sdk:
        for combo in combos:
            first = next((f for f in combo.figures if f.api == ANTHROPIC), None)
            combo.ours_tries = _halving(functools.partial(driver.run, "ours", combo.transport), first, streams)
        sdk_tries = _halving(functools.partial(driver.run, "sdk", ""), None, streams)
        best = LoadRun.largest_sustained(sdk_tries)
        for combo in combos:
            if best is not None and all(t.streams != best.streams for t in combo.ours_tries):
                combo.ours_tries.append(driver.run("ours", combo.transport, best.streams))
    every = [f for c in combos for f in [*c.figures, *c.bare, *c.ours_tries, *c.rounds]] + sdk_tries
    _fill_memory(driver, every, min(_MEMORY_STREAMS, streams))
    return combos, sdk_tries


def _run_matrix(
    driver: _Driver, transports: list[str], sdk: bool, *, rounds: int = 1
) -> tuple[list[Combination], list[LoadFigure]]:
    """``--matrix`` on one loop: ours (Anthropic), the bare transport and the floor at each load per transport
    (each load warmed first), in ``rounds`` paired rounds, the SDK at each load until it does not sustain
    one, then the memory pass."""
    loop = driver.pool.loop
    combos: list[Combination] = []
    for transport in transports:
        ours: list[LoadFigure] = []
        bare: list[LoadFigure] = []
        later: list[LoadFigure] = []
        for streams in MATRIX_STREAMS:
            driver.warm(transport, streams)
            ours.append(driver.run("ours", transport, streams))
            bare += [driver.run(stack, transport, streams) for stack in ("bare", "floor")]
            later += driver.later_rounds(transport, streams, rounds)
        combos.append(Combination(transport, loop, ours, bare, list(ours), rounds=later))
    sdk_tries: list[LoadFigure] = []
    for streams in MATRIX_STREAMS if sdk else ():
        sdk_tries.append(driver.run("sdk", "", streams))
        if not sdk_tries[-1].sustained:
            break  # more streams would not be sustained either, and would take long to show it
    every = [f for c in combos for f in [*c.figures, *c.bare, *c.rounds]] + sdk_tries
    _fill_memory(driver, every, min(_MEMORY_STREAMS, MATRIX_STREAMS[0]))
    return combos, sdk_tries


def _serve_in_child(streams: int) -> tuple[Any, Any, str]:
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    stop = context.Event()
    server = context.Process(target=serve, args=(sender, stop, max(1024, 2 * streams)), daemon=True)
    server.start()
    return server, stop, ready_message(receiver, server)


def _settled(check: Callable[[], int], tries: int = 200) -> int:
    """``check()`` once it reaches 0, or its last value after ``tries`` polls 50 ms apart (closing
    a socket is asynchronous on both ends; a loaded machine gets ten seconds before a figure counts)."""
    value = check()
    for _ in range(tries):
        if value == 0:
            break
        time.sleep(0.05)
        value = check()
    return value


def measure(
    streams: int = 100,
    rate: float = 20.0,
    seconds: float = DEFAULT_SECONDS,
    *,
    sdk: bool = True,
    sustain_ms: float = 100.0,
    transports: list[str] | None = None,
    loops: list[str] | None = None,
    processes: int = 1,
    matrix: bool = False,
    apis: list[str] | None = None,
    gc_threshold: int | None = None,
    rounds: int = 3,
) -> LoadRun:
    """Start the server process, run each loop's client processes through the default run (or
    ``--matrix``), check for leaks, stop the server. ``transports``/``loops`` None: the fastest available."""
    transports = transports or available("transport")[:1]
    loops = loops or available("loop")[:1]
    top = max(MATRIX_STREAMS) if matrix else streams
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, top * 3 + 256)), hard))
    server, stop, base_url = _serve_in_child(top)
    try:
        before = server_stats(base_url)
        combos: list[Combination] = []
        sdk_by_loop: dict[str, list[LoadFigure]] = {}
        fds = tasks = 0
        for loop in loops:
            with Pool(base_url, loop, processes, gc_threshold) as pool:
                driver = _Driver(pool, base_url, rate, seconds, sustain_ms)
                if matrix:
                    measured, sdk_tries = _run_matrix(driver, transports, sdk, rounds=rounds)
                else:
                    measured, sdk_tries = _run_loop(driver, transports, apis or list(APIS), streams, sdk, rounds=rounds)
                combos += measured
                if sdk:
                    sdk_by_loop[loop] = sdk_tries
                left = pool.leaks()  # before the processes end: what they still hold is what leaked
                fds, tasks = fds + left[0], tasks + left[1]

        def open_connections() -> int:
            return int(server_stats(base_url)["open"]) - 1  # the stats request's own connection

        def unfinished() -> int:
            stats = server_stats(base_url)
            return int((stats["started"] - before["started"]) - (stats["finished"] - before["finished"]))

        run = LoadRun(
            combos,
            sdk_by_loop,
            Leaks(fds, tasks, _settled(open_connections), _settled(unfinished)),
            seconds,
            top,
            rate,
            processes,
            sdk_client() if sdk else "",
            matrix,
            gc_threshold,
        )
        run.leaks.failed_streams = sum(f.streams - f.ok_streams for f in run.every())
        return run
    finally:
        stop.set()
        server.join(10)
        if server.is_alive():
            server.kill()


def _choose(parser: argparse.ArgumentParser, kind: str, value: str | None, matrix: bool) -> list[str]:
    """The transports or loops to run: the named one, ``all`` installed, or (None) the fastest
    installed (every one with ``--matrix``)."""
    installed = available(kind)
    if value is None:
        return installed if matrix else installed[:1]
    if value == "all":
        return installed
    if value not in installed:
        parser.error(f"--{kind} {value}: not installed here (installed: {', '.join(installed)})")
    return [value]


def main(argv: list[str] | None = None) -> int:
    """Run the load suite (see the module docstring); 1 if anything leaked."""
    parser = argparse.ArgumentParser(prog="python -m bench load", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--streams", type=int, default=100, help="concurrent streams per phase (default 100)")
    parser.add_argument("--rate", type=float, default=20.0, help="deltas per second per stream (default 20)")
    parser.add_argument(
        "--seconds",
        type=float,
        default=None,
        help=f"length of each stream (default {DEFAULT_SECONDS:g})",
    )
    parser.add_argument("--no-sdk", action="store_true", help="skip the anthropic SDK comparison")
    parser.add_argument(
        "--sustain-ms", type=float, default=100.0, help="p99 latency under which a load counts as sustained"
    )
    parser.add_argument(
        "--transport",
        choices=["httpx", "aiohttp", "native", "all"],
        default=None,
        help="ours on the kit's own client of this library (default: native, the kit's own HTTP/1.1 client)",
    )
    parser.add_argument(
        "--loop",
        choices=["asyncio", "uvloop", "all"],
        default=None,
        help="the client processes' event loop (default: uvloop when installed, else asyncio)",
    )
    parser.add_argument(
        "--processes", type=int, default=1, help="client processes, the streams split evenly among them (default 1)"
    )
    parser.add_argument(
        "--matrix",
        action="store_true",
        help=f"Anthropic adapter, bare transport and SDK at {', '.join(map(str, MATRIX_STREAMS))} streams, every "
        "transport × loop (about fifteen minutes)",
    )
    parser.add_argument(
        "--gc-threshold",
        type=int,
        default=None,
        metavar="N",
        help="the client processes' first-generation collector threshold, for every stack alike (default: "
        "Python's own; see docs/many-streams.md)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        metavar="R",
        help="paired rounds of ours (Anthropic), the bare transport and the floor at each load, ours − bare "
        "judged on their median (default 3; 7 gives the rule's interval)",
    )
    args = parser.parse_args(argv or [])
    if args.processes < 1 or args.streams < 1 or args.rounds < 1:
        parser.error("--processes, --streams and --rounds must be at least 1")
    if args.gc_threshold is not None and args.gc_threshold < 1:
        parser.error("--gc-threshold must be at least 1")
    transports = _choose(parser, "transport", args.transport, args.matrix)
    loops = _choose(parser, "loop", args.loop, args.matrix)
    seconds = args.seconds if args.seconds is not None else (MATRIX_SECONDS if args.matrix else DEFAULT_SECONDS)
    run = measure(
        args.streams,
        args.rate,
        seconds,
        sdk=not args.no_sdk,
        sustain_ms=args.sustain_ms,
        transports=transports,
        loops=loops,
        processes=args.processes,
        matrix=args.matrix,
        gc_threshold=args.gc_threshold,
        rounds=args.rounds,
    )
    for line in report(run):
        print(line, flush=True)
    return 1 if run.leaks.total() else 0


if __name__ == "__main__":
    raise SystemExit(main())
