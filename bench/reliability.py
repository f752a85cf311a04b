"""``make reliability``: a soak of many concurrent streams, every built-in adapter, random faults.

A loopback HTTP server runs in a child process (so the figures below are the client's alone). Two
phases, each with every stream in flight at once:

1. **throughput** — long healthy streams (2,000 text deltas each, built by the adapter's bench
   module ``bench/<package>_bench.py`` ``text_body``): events/s and peak RSS per active stream;
2. **faults** — per request a bundled real recording of the adapter's api, played as recorded,
   slowed, stalled, reset, truncated, or preceded by a 429/529 with ``retry-after``; some streams
   are aborted, cancelled or left early by their consumer.

It prints:

- streams, events and events/s;
- peak RSS per active stream (the rise in peak RSS divided by the streams in flight);
- leaked file descriptors and leftover tasks once every stream ended — must be 0;
- streams that did not end in exactly one terminal — must be 0;
- faulted streams that ended ``done`` — must be 0 (a retried 429/529 is not a fault: it must end done).

Exit status 1 when a must-be-0 figure is not 0, after naming each stream that failed one (api,
fault, recording, index) and how it ended (its error message). ``--streams N`` and ``--seed S`` change
the run.

``--transport httpx|aiohttp`` (default httpx) is the HTTP library every stream's request goes out on:
each call asks the kit for a client of its own of that transport (``StreamOptions.transport``), so the
soak exercises that transport's connecting, reading, cutting and closing. ``make reliability`` runs
the soak once on each.

Its own setup must not fail it on a loaded machine: every stream of a phase connects at once, so the
server listens with a backlog of two per stream (asyncio's default of 100 made connects beyond it
wait for SYN retransmits) and the client's connect timeout (``--connect-timeout``, 30 s) is its own,
not the 2 s idle timeout it used to default to, which ended retried 429/529 streams in
``ConnectTimeout``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing
import os
import random
import resource
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from bench._util import ready_message
from cassettes import library
from cassettes.mutations import drop_terminal, truncate
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from conformance.plans import marker_offset, plan, with_reset
from conformance.recordings import library_recordings
from conformance.targets import builtin_targets
from normalize import AbortController, Context, Model, StreamOptions, UserMessage

__all__ = ["Outcome", "main", "soak"]

Fault = Literal["ok", "slow", "stall", "reset", "truncate", "retry-429", "retry-529", "abort", "cancel", "break"]
#: Relative weights of the faults; half the streams are faulted.
_FAULTS: dict[Fault, int] = {
    "ok": 10,
    "slow": 2,
    "stall": 1,
    "reset": 1,
    "truncate": 1,
    "retry-429": 1,
    "retry-529": 1,
    "abort": 1,
    "cancel": 1,
    "break": 1,
}
#: Faults after which a stream must still end ``done`` (the adapter retries the status away).
_ENDS_DONE: frozenset[Fault] = frozenset({"ok", "slow", "retry-429", "retry-529"})
_IDLE_TIMEOUT_S = 2.0  # the client's idle timeout: a stalled stream ends this long after its last byte
#: The client's connect timeout: a thousand connects at once on a loaded machine take seconds, and a
#: connect that times out is the soak's own doing, not the adapter's.
_CONNECT_TIMEOUT_S = 30.0
_SLOW_CHUNK_S = 0.002  # the delay before each chunk of a "slow" stream
_PLAN_HEADER = "x-soak-plan"
#: The transports the soak can run on (``--transport``), the kit's default first.
TRANSPORTS: tuple[str, ...] = ("httpx", "aiohttp", "native")


# -- the server (child process) ---------------------------------------------------------------------


def _recordings() -> dict[str, list[str]]:
    """Library recordings per built-in api: the same picks the conformance harness replays."""
    found: dict[str, list[str]] = {}
    for api, target in builtin_targets().items():
        if api == "faux":
            continue
        found[api] = [recording.name for recording in library_recordings(target.capabilities, target.profile)]
    return found


def _slowed(scripted: Scripted, delay_s: float) -> Scripted:
    return Scripted(
        status=scripted.status,
        headers=scripted.headers,
        chunks=[(delay_s, data) for _, data in scripted.chunks],
        end=scripted.end,
    )


_LONG_DELTAS = 2_000
_READ = 16 * 1024


#: Packages whose bodies are another package's: the Codex backend streams the Responses events.
_SAME_BODIES = {"openai_codex": "openai_responses"}


def _long_body(api: str) -> bytes:
    """A healthy stream of ``_LONG_DELTAS`` text deltas in the api's own format (from its bench module)."""
    import importlib

    from streamfns._adapters import builtin_adapters

    package = builtin_adapters()[api].package.rpartition(".")[2]
    package = _SAME_BODIES.get(package, package)
    module = importlib.import_module(f"bench.{package}_bench")
    body: bytes = module.text_body(_LONG_DELTAS)
    return body


_LONG: dict[str, Scripted] = {}


def _media_type(api: str) -> str:
    """The content type the api's framing is served with (server-sent events, JSON lines, …)."""
    from streamfns._adapters import builtin_adapters

    profile = builtin_adapters()[api].profile
    return profile.framing.media_types[0] if profile is not None else "text/event-stream"


def _plan_for(name: str, fault: str, attempt: int, slow_chunk_s: float = _SLOW_CHUNK_S) -> Scripted:
    if name.startswith("long:"):
        api = name.removeprefix("long:")
        if api not in _LONG:
            body = _long_body(api)
            chunks = [(0.0, body[i : i + _READ]) for i in range(0, len(body), _READ)]
            _LONG[api] = Scripted(headers=[("content-type", _media_type(api))], chunks=chunks)
        return _LONG[api]
    cassette = library.load(name)
    body = cassette.interactions[0].response.body
    # Cuts land before the api's terminal marker: a body may hold a whole response (even several)
    # before its half, and a stream that saw its terminal rightly ends done.
    half = min(len(body) // 2, marker_offset(cassette, cassette.api))
    if fault.startswith("retry-") and attempt == 0:
        status = int(fault.removeprefix("retry-"))
        return Scripted(
            status=status,
            headers=[("content-type", "application/json"), ("retry-after", "0.05")],
            chunks=[(0.0, b'{"error": {"type": "overloaded_error", "message": "busy (soak)"}}')],
        )
    if fault == "slow":
        return _slowed(plan(cassette), slow_chunk_s)
    if fault == "stall":
        cut = truncate(cassette, after_bytes=half, end="timeout")
        return plan(cut)
    if fault == "reset":
        return with_reset(plan(truncate(cassette, after_bytes=half, end="eof")))
    if fault == "truncate":
        api = cassette.api
        return plan(truncate(drop_terminal(cassette, api=api), after_bytes=len(body) * 2, end="eof"))
    if fault in ("abort", "cancel", "break"):
        # Half the body, then silence: only the client's own action can end these.
        return plan(truncate(cassette, after_bytes=half, end="timeout"))
    return plan(cassette)


def _backlog(streams: int) -> int:
    """The server's listen backlog: every stream of a phase connects at once, retries on top."""
    return max(100, 2 * streams)


def _serve(port_pipe: Any, stop: Any, slow_chunk_s: float = _SLOW_CHUNK_S, backlog: int = 100) -> None:
    attempts: Counter[str] = Counter()
    recordings = _recordings()
    # Every plan is derived once, before the server says where it listens: deriving one costs a few
    # milliseconds, and a thousand requests at once queued the last ones (the retries) seconds behind
    # the first, past the client's idle timeout. The plans are only read while played.
    plans = {
        (name, fault, retried): _plan_for(name, fault, int(retried), slow_chunk_s)
        for names in recordings.values()
        for name in names
        for fault in _FAULTS
        for retried in (False, True)
    }

    def respond(request: ReceivedRequest) -> Scripted:
        spec = request.headers.get(_PLAN_HEADER, "")
        name, _, fault = spec.partition("|")
        fault = fault.split("#")[0]
        attempt = attempts[spec]
        attempts[spec] += 1
        cached = plans.get((name, fault, attempt > 0))
        return cached if cached is not None else _plan_for(name, fault, attempt, slow_chunk_s)

    for api in recordings:
        _plan_for(f"long:{api}", "ok", 0)  # the long bodies too

    async def run() -> None:
        async with LoopbackServer(respond, linger_s=5.0, backlog=backlog) as server:
            port_pipe.send(server.base_url)
            # The stop flag is a multiprocessing Event (another process sets it): poll it.
            while not stop.is_set():  # noqa: ASYNC110
                await asyncio.sleep(0.05)

    asyncio.run(run())


# -- the client ----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Outcome:
    """What one stream did."""

    api: str
    fault: Fault
    recording: str = ""
    index: int = 0
    events: int = 0
    terminals: int = 0
    result: str = ""
    #: How it ended, when not well: the final message's error message.
    detail: str = ""
    problems: list[str] = field(default_factory=list[str])

    def label(self) -> str:
        """Which stream: ``api/fault (recording) #index``."""
        return f"{self.api}/{self.fault} ({self.recording}) #{self.index}"


def _open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:  # not Linux: count what can be counted
        return -1


def _peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def _one(
    fn: Callable[..., Any],
    api: str,
    name: str,
    fault: Fault,
    *,
    index: int,
    base_url: str,
    rng: random.Random,
    idle_timeout_s: float,
    connect_timeout_s: float = _CONNECT_TIMEOUT_S,
    transport: str = "httpx",
) -> Outcome:
    outcome = Outcome(api=api, fault=fault, recording=name, index=index)
    model_id = "soak-model" if name.startswith("long:") else library.load(name).model or "soak-model"
    model = Model(id=model_id, api=api, provider="soak", base_url=base_url)
    controller = AbortController()
    options = StreamOptions(
        api_key="soak-test-key",
        signal=controller.signal,
        timeout=idle_timeout_s,
        connect_timeout=connect_timeout_s,
        max_retries=2,
        headers={_PLAN_HEADER: f"{name}|{fault}#{index}"},
        # Named per call rather than left to the process-wide default: the soak says what it ran on.
        transport=transport,
    )
    stream = fn(model, Context(messages=[UserMessage(content="soak")]), options)
    after = rng.randint(1, 3)

    async def consume() -> None:
        async for event in stream:
            outcome.events += 1
            if event.type in ("done", "error"):
                outcome.terminals += 1
            if fault == "abort" and outcome.events == after:
                controller.abort()
            if fault == "break" and outcome.events == after:
                break

    task = asyncio.ensure_future(consume())
    if fault == "cancel":
        await asyncio.sleep(0.05 + rng.random() * 0.1)
        task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        if fault != "cancel":
            raise
    try:
        message = await asyncio.wait_for(stream.result(), idle_timeout_s * 4)
    except TimeoutError:
        outcome.problems.append(f"result() did not return within {idle_timeout_s * 4:g}s of the loop's end")
        return outcome
    outcome.result = message.stop_reason
    outcome.detail = message.error_message or ""
    finished_loop = fault not in ("cancel", "break")
    if finished_loop and outcome.terminals != 1:
        outcome.problems.append(f"{outcome.terminals} terminal events")
    if message.stop_reason not in ("stop", "length", "toolUse", "error", "aborted"):
        outcome.problems.append(f"result() returned a {message.stop_reason!r} message")
    return outcome


@dataclass(slots=True)
class _Phase:
    outcomes: list[Outcome]
    elapsed_s: float
    rss_kib_per_stream: float

    @property
    def events_per_s(self) -> float:
        return sum(outcome.events for outcome in self.outcomes) / self.elapsed_s if self.elapsed_s else 0.0


async def _phase(jobs: list[Any]) -> _Phase:
    gc.collect()
    rss_before = _peak_rss_kib()
    started = time.perf_counter()
    outcomes: list[Outcome] = list(await asyncio.gather(*jobs))
    elapsed = time.perf_counter() - started
    return _Phase(outcomes, elapsed, (_peak_rss_kib() - rss_before) / max(1, len(jobs)))


async def soak(
    streams: int,
    seed: int,
    base_url: str,
    *,
    idle_timeout_s: float = _IDLE_TIMEOUT_S,
    connect_timeout_s: float = _CONNECT_TIMEOUT_S,
    transport: str = "httpx",
) -> dict[str, Any]:
    """Run both phases with ``streams`` streams each against ``base_url``, every request on the kit's
    own client of ``transport`` (``"httpx"``, ``"aiohttp"`` or ``"native"``); returns the figures."""
    rng = random.Random(seed)
    targets = {api: target for api, target in builtin_targets().items() if api != "faux"}
    recordings = _recordings()
    from streamfns._adapters import builtin_adapters

    functions = {api: adapter.stream_fn for api, adapter in builtin_adapters().items()}
    apis = sorted(targets)
    faults: list[Fault] = list(_FAULTS)
    weights = list(_FAULTS.values())
    gc.collect()
    fds_before = _open_fds()
    tasks_before = len(asyncio.all_tasks())

    throughput = await _phase(
        [
            _one(
                functions[api],
                api,
                f"long:{api}",
                "ok",
                index=-index - 1,
                base_url=base_url,
                rng=random.Random(index),
                idle_timeout_s=idle_timeout_s,
                connect_timeout_s=connect_timeout_s,
                transport=transport,
            )
            for index in range(streams)
            for api in [apis[index % len(apis)]]
        ]
    )
    jobs: list[Any] = []
    for index in range(streams):
        api = apis[index % len(apis)]
        name = rng.choice(recordings[api])
        fault = rng.choices(faults, weights)[0]
        jobs.append(
            _one(
                functions[api],
                api,
                name,
                fault,
                index=index,
                base_url=base_url,
                rng=random.Random(rng.random()),
                idle_timeout_s=idle_timeout_s,
                connect_timeout_s=connect_timeout_s,
                transport=transport,
            )
        )
    faulted = await _phase(jobs)
    await asyncio.sleep(0.2)  # let connections finish closing
    gc.collect()
    leftover = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    outcomes = throughput.outcomes + faulted.outcomes
    return {
        "streams": streams,
        "transport": transport,
        "apis": apis,
        "throughput": throughput,
        "faulted": faulted,
        "leaked_fds": max(0, _open_fds() - fds_before),
        "leaked_tasks": max(0, len(leftover) - (tasks_before - 1)),
        "no_terminal": sum(1 for outcome in outcomes if outcome.problems),
        "done_when_faulted": sum(
            1 for outcome in outcomes if outcome.fault not in _ENDS_DONE and outcome.result in ("stop", "toolUse")
        ),
        "not_done_when_healthy": sum(
            1
            for outcome in outcomes
            if outcome.fault in _ENDS_DONE and outcome.result not in ("stop", "toolUse", "length")
        ),
        "faults": Counter(outcome.fault for outcome in faulted.outcomes),
        "problems": _problems(outcomes),
    }


def _problems(outcomes: list[Outcome]) -> list[str]:
    """One line per stream that failed a must-be-0 figure: which stream, and how it ended."""
    found: list[str] = [f"{o.label()}: {p}" for o in outcomes for p in o.problems]
    for o in outcomes:
        if o.fault not in _ENDS_DONE and o.result in ("stop", "toolUse"):
            found.append(f"{o.label()}: ended {o.result} on a fault")
        elif o.fault in _ENDS_DONE and o.result not in ("stop", "toolUse", "length"):
            found.append(f"{o.label()}: ended {o.result or 'without a result'}: {o.detail or '(no error message)'}")
    return found


_SHOWN_PROBLEMS = 20


def _report(figures: dict[str, Any]) -> int:
    throughput: _Phase = figures["throughput"]
    faulted: _Phase = figures["faulted"]
    long_events = sum(outcome.events for outcome in throughput.outcomes)
    print(f"transport             : {figures['transport']}")
    print(f"apis                  : {', '.join(figures['apis'])}")
    print(
        f"throughput            : {figures['streams']} streams × {_LONG_DELTAS:,} deltas at once: "
        f"{long_events:,} events in {throughput.elapsed_s:.1f} s ({throughput.events_per_s:,.0f} events/s), "
        f"peak RSS {throughput.rss_kib_per_stream:.0f} KiB per active stream"
    )
    print(
        f"faults                : {figures['streams']} streams at once in {faulted.elapsed_s:.1f} s — "
        + ", ".join(f"{k} {v}" for k, v in sorted(figures["faults"].items()))
    )
    checks = {
        "leaked fds": figures["leaked_fds"],
        "leaked tasks": figures["leaked_tasks"],
        "streams with no terminal": figures["no_terminal"],
        "done on a faulted stream": figures["done_when_faulted"],
        "healthy stream not done": figures["not_done_when_healthy"],
    }
    failed = False
    for label, value in checks.items():
        ok = value == 0
        failed = failed or not ok
        print(f"{label:<22}: {value}   {'ok' if ok else 'MUST BE 0'}")
    problems: list[str] = figures["problems"]
    for problem in problems[:_SHOWN_PROBLEMS]:
        print(f"  problem: {problem}")
    if len(problems) > _SHOWN_PROBLEMS:
        print(f"  … and {len(problems) - _SHOWN_PROBLEMS} more")
    return 1 if failed else 0


def _check_transport(parser: argparse.ArgumentParser, name: str) -> None:
    """Exit 2 (argparse's usage error) when transport ``name`` is not installed here (aiohttp without
    its extra): said before the server starts, not as every stream's error."""
    if name == "aiohttp":
        try:
            import aiohttp  # noqa: F401 # pyright: ignore[reportUnusedImport] - an optional extra
        except ImportError:
            parser.error("--transport aiohttp needs the aiohttp extra: pip install 'streamfns[aiohttp]'")


def main(argv: list[str] | None = None) -> int:
    """Run the soak (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m bench.reliability", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000, help="streams in flight at once, per phase")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--idle-timeout", type=float, default=_IDLE_TIMEOUT_S, metavar="S", help="the client's idle timeout (stalls)"
    )
    parser.add_argument(
        "--connect-timeout",
        type=float,
        default=_CONNECT_TIMEOUT_S,
        metavar="S",
        help="the client's connect timeout (its own: every stream of a phase connects at once)",
    )
    parser.add_argument(
        "--slow-ms", type=float, default=_SLOW_CHUNK_S * 1000, metavar="MS", help="delay per chunk of a slow stream"
    )
    parser.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default=TRANSPORTS[0],
        help="the HTTP library every request goes out on (the kit's own client of it)",
    )
    args = parser.parse_args(argv)
    _check_transport(parser, args.transport)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.streams * 3 + 256)), hard))
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    stop = context.Event()
    server = context.Process(
        target=_serve, args=(sender, stop, args.slow_ms / 1000, _backlog(args.streams)), daemon=True
    )
    server.start()
    try:
        base_url = ready_message(receiver, server)
        figures = asyncio.run(
            soak(
                args.streams,
                args.seed,
                base_url,
                idle_timeout_s=args.idle_timeout,
                connect_timeout_s=args.connect_timeout,
                transport=args.transport,
            )
        )
    finally:
        stop.set()
        server.join(10)
        if server.is_alive():
            server.kill()
    return _report(figures)


if __name__ == "__main__":
    sys.exit(main())
