"""The load suite's client side: the stacks it drives, one phase of streams, and the client processes.

A :class:`Phase` names one stack, its HTTP library and its load; :func:`drive` runs it inside a client
process and returns its :class:`LoadFigure`. The stacks:

- ``ours``: a built-in adapter on the kit's own client of the phase's transport
  (``StreamOptions(transport=...)``), as a user who passes no client gets it: each call holds its one
  connection while its stream lasts and closes it with the stream; on httpx each call makes its
  client (its set-up is in the CPU figure), on aiohttp the calls in flight share the kit's session;
- ``bare``: the transport alone on one client with no connection limit and no idle connection kept
  — httpx ``client.stream("POST")`` + ``aiter_raw()``, or aiohttp ``session.post()`` with
  ``auto_decompress=False`` + ``readchunk()`` — reading each HTTP chunk as the kit does and finding
  the stamp in the Anthropic body's bytes, recorded by the same :func:`record` as ours: what a
  stream costs before any parsing, for the "ours − bare" figure;
- ``floor``: the bare transport with the Anthropic adapter's own framing, decoder and message builder
  applied to each read as the kit applies them, and nothing else of the kit (:class:`_Floor`): what
  parsing and building cost (floor − bare), and so what the kit's read path, event stream and
  per-call set-up add (ours − floor);
- ``sdk``: the anthropic SDK's ``messages.stream()`` in its best configuration (:func:`sdk_client`).

:class:`Pool` holds ``P`` client processes (``multiprocessing`` spawn) on one event loop, splits a
phase's streams evenly across them and combines their figures (:func:`combine`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import http.client
import importlib.util
import json
import multiprocessing
import os
import time
import traceback
import tracemalloc
from array import array
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, TypeAlias, cast
from urllib.parse import urlsplit

from bench._load_server import stamp_ns

__all__ = [
    "ANTHROPIC",
    "APIS",
    "LOOPS",
    "OBJECTS_PROBE_S",
    "SETTLE_S",
    "TRANSPORTS",
    "ClientProcessError",
    "CollectorFigure",
    "LoadFigure",
    "Phase",
    "Pool",
    "available",
    "combine",
    "drive",
    "record",
    "run_phase",
    "scan",
    "sdk_client",
    "server_stats",
]

#: The apis driven, each with the model its adapter is given (the server tells apis apart by path).
APIS: dict[str, tuple[str, str]] = {
    "anthropic-messages": ("claude-load", ""),
    "anthropic-bedrock": ("anthropic.claude-load-v1:0", ""),
    "anthropic-vertex": ("claude-load@20250101", ""),
    "bedrock-converse-stream": ("amazon.nova-load-v1:0", ""),
    "openai-completions": ("gpt-load", "/v1"),
    "openai-responses": ("gpt-load", "/v1"),
    "google-generative-ai": ("gemini-load", "/v1beta"),
    "ollama-chat": ("llama-load", ""),
    # Mistral's own api speaks the chat-completions chunks the server sends on that path.
    "mistral-conversations": ("mistral-load", "/v1"),
    "cohere-chat": ("command-load", ""),
    # The Codex backend speaks the Responses events the server sends on that path (the harness's key
    # is sent as the plan's token: no login is read).
    "openai-codex-responses": ("gpt-load", "/v1"),
}
ANTHROPIC = "anthropic-messages"
#: The HTTP libraries and event loops, fastest first (the first available is the default).
TRANSPORTS = ("native", "aiohttp", "httpx")
LOOPS = ("uvloop", "asyncio")
TIMEOUT_S = 60.0  # generous: a phase that cannot keep up must show in its latency, not end in a timeout
#: The request the bare stacks send (the server ignores bodies; the kit sends a longer one).
_BODY = b'{"model":"claude-load","max_tokens":64,"messages":[{"role":"user","content":"load"}],"stream":true}'
#: What precedes a delta's text in the Anthropic body the server writes (compact JSON).
_KEY = b'"type":"text_delta","text":"'

One: TypeAlias = Callable[["LoadFigure"], Awaitable[bool]]


def available(kind: str) -> list[str]:
    """The transports (``kind="transport"``) or event loops (``"loop"``) importable here, fastest first."""
    names = TRANSPORTS if kind == "transport" else LOOPS
    return [
        name for name in names if name in {"httpx", "native", "asyncio"} or importlib.util.find_spec(name) is not None
    ]


def _loop_factory(loop: str) -> Callable[[], asyncio.AbstractEventLoop]:
    if loop == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop


#: Seconds after the last start at which the memory pass counts the objects its streams hold: each
#: stream set up and between two events by then (see run_phase).
OBJECTS_PROBE_S = 0.1
#: Seconds after the last stream started from which an event's latency counts as settled: the starts'
#: own work, and the collector passes they bring, are behind by then (see LoadFigure.settled_latency_ms).
SETTLE_S = 1.0


@dataclass(slots=True)
class CollectorFigure:
    """The garbage collector's passes during one timed phase in one process: how many of each
    generation, how long they took in all, and the longest (its generation, and when it began, in
    seconds from the phase's start). A pass stops every stream of the process while it runs: a long
    one during the starts, when the loop is already behind, is what sets a p99 there."""

    passes: list[int] = field(default_factory=lambda: [0, 0, 0])
    total_ms: float = 0.0
    longest_ms: float = 0.0
    longest_generation: int = -1
    longest_at_s: float = 0.0

    def summary(self) -> str:
        """One phrase for the report."""
        count = sum(self.passes)
        if not count:
            return "no pass"
        return (
            f"{count:,} pass{'' if count == 1 else 'es'} ({self.passes[2]} full), longest {self.longest_ms:.1f} ms "
            f"(generation {self.longest_generation}, at {self.longest_at_s:.2f} s), {self.total_ms:.0f} ms in all"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "passes_by_generation": list(self.passes),
            "total_ms": round(self.total_ms, 3),
            "longest_ms": round(self.longest_ms, 3),
            "longest_generation": self.longest_generation,
            "longest_at_s": round(self.longest_at_s, 3),
        }

    @staticmethod
    def merged(parts: list[CollectorFigure]) -> CollectorFigure:
        """Several processes' passes as one figure: counts and time summed, the longest of them all."""
        whole = CollectorFigure()
        for part in parts:
            whole.passes = [a + b for a, b in zip(whole.passes, part.passes, strict=True)]
            whole.total_ms += part.total_ms
            if part.longest_ms > whole.longest_ms:
                whole.longest_ms, whole.longest_generation = part.longest_ms, part.longest_generation
                whole.longest_at_s = part.longest_at_s
        return whole


class _CollectorWatch:
    """A ``gc.callbacks`` entry timing each pass of the collector into a :class:`CollectorFigure`,
    from ``started`` (a ``time.perf_counter()`` reading): two clock readings a pass, a few hundred
    passes a phase, the same for every stack."""

    __slots__ = ("_began", "_started", "figure")

    def __init__(self, started: float) -> None:
        self._started = started
        self._began = started
        self.figure = CollectorFigure()

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        now = time.perf_counter()
        if phase == "start":
            self._began = now
            return
        took_ms = (now - self._began) * 1e3
        generation = info["generation"]
        figure = self.figure
        figure.passes[generation] += 1
        figure.total_ms += took_ms
        if took_ms > figure.longest_ms:
            figure.longest_ms, figure.longest_generation = took_ms, generation
            figure.longest_at_s = self._began - self._started


@dataclass(slots=True)
class LoadFigure:
    """One phase: ``streams`` concurrent streams of ``expected`` deltas each through one stack, in
    ``processes`` client processes (``parts``: each process's own figure when more than one)."""

    api: str
    stack: str
    streams: int
    rate: float
    expected: int
    transport: str = ""
    loop: str = ""
    processes: int = 1
    events: int = 0
    ok_streams: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    memory_kib_per_stream: float | None = None
    #: The objects the collector tracks per open stream, counted once in the memory pass (None: not
    #: counted): what each of its passes walks, and what sets off the next one.
    objects_per_stream: float | None = None
    #: The server process's CPU seconds over the phase (None: not measured).
    server_cpu_s: float | None = None
    latencies_ns: array[int] = field(default_factory=lambda: array("q"))
    #: Each latency's send stamp (the server's, :func:`stamp_ns`), in the same order.
    sent_ns: array[int] = field(default_factory=lambda: array("q"))
    #: Events sent from this stamp on count as settled (:meth:`settled_latency_ms`; 0: none set).
    settled_from_ns: int = 0
    #: The collector's passes during the timed phase, in this process (None: not watched).
    collector: CollectorFigure | None = None
    sustain_ms: float = 100.0
    #: The collector's first-generation threshold the phase ran under, read in its process (0: not read).
    gc_threshold: int = 0
    #: Which of its load's paired rounds this phase was (0: the first; see ``--rounds``): ours, the bare
    #: transport and the floor of one round ran back to back, and ours − bare pairs them by round.
    paired_round: int = 0
    parts: list[LoadFigure] = field(default_factory=list["LoadFigure"])
    _ordered: list[int] = field(default_factory=list[int], repr=False, compare=False)
    #: The settled latencies sorted, and the (events, cuts) they were sorted for.
    _settled: tuple[tuple[int, ...], list[int]] = field(default_factory=lambda: ((), []), repr=False, compare=False)

    @property
    def label(self) -> str:
        """The stack and its HTTP library ("ours aiohttp", "bare httpx", "sdk"), and its round after the
        first ("bare httpx #2")."""
        label = f"{self.stack} {self.transport}".strip()
        return f"{label} #{self.paired_round + 1}" if self.paired_round else label

    @property
    def cpu_us_per_event(self) -> float:
        """Client CPU µs per event received (every process's CPU over every process's events)."""
        return self.cpu_s / self.events * 1e6 if self.events else float("inf")

    def latency_ms(self, quantile: float) -> float:
        """The latency at ``quantile`` (0–1), in milliseconds."""
        if not self.latencies_ns:
            return float("inf")
        if len(self._ordered) != len(self.latencies_ns):  # sorted once per figure, not once per call
            self._ordered = sorted(self.latencies_ns)
        ordered = self._ordered
        return ordered[min(len(ordered) - 1, int(quantile * len(ordered)))] / 1e6

    def settled_latency_ms(self, quantile: float) -> float | None:
        """The latency at ``quantile`` of the events sent once every stream had started and
        :data:`SETTLE_S` more had passed (each process's own), in milliseconds; None when no event was
        sent that late (a run too short to settle: no figure, rather than one of nothing)."""
        parts = self.parts or [self]
        key = tuple(n for part in parts for n in (len(part.latencies_ns), part.settled_from_ns))
        if self._settled[0] != key:  # sorted once per figure (the report and the record both ask), not per call
            settled: list[int] = []
            for part in parts:
                cut = part.settled_from_ns
                if cut:
                    settled += [lat for sent, lat in zip(part.sent_ns, part.latencies_ns, strict=True) if sent >= cut]
            settled.sort()
            self._settled = (key, settled)
        settled = self._settled[1]
        if not settled:
            return None
        return settled[min(len(settled) - 1, int(quantile * len(settled)))] / 1e6

    def holds(self, limit_ms: float) -> bool:
        """Every stream got all its events and the p99 latency stayed under ``limit_ms``, in every process."""
        return (
            self.ok_streams == self.streams
            and self.latency_ms(0.99) < limit_ms
            and all(part.holds(limit_ms) for part in self.parts)
        )

    @property
    def sustained(self) -> bool:
        """:meth:`holds` at the run's threshold (``--sustain-ms``)."""
        return self.holds(self.sustain_ms)

    def lines(self) -> list[str]:
        """Its report line, the line of where its tail is, and, with several processes, one line per
        process under them."""
        tail = self.tail_line()
        return [
            self.line(),
            *([tail] if tail else []),
            *(self._part_line(i, part) for i, part in enumerate(self.parts, 1)),
        ]

    def tail_line(self) -> str:
        """Where the latency's tail comes from: the p99 once the starts have settled, and the
        collector's pauses ("" when neither was measured)."""
        settled = self.settled_latency_ms(0.99)
        pieces: list[str] = []
        if settled is not None:
            pieces.append(f"p99 from {SETTLE_S:g} s after the last start {settled:7.2f} ms")
        if self.collector is not None:
            pieces.append(f"collector: {self.collector.summary()}")
        if self.objects_per_stream is not None:
            pieces.append(f"{self.objects_per_stream:.0f} tracked objects a stream")
        return f"      tail: {'; '.join(pieces)}" if pieces else ""

    def line(self) -> str:
        """One report line."""
        server = (
            "" if self.server_cpu_s is None or not self.wall_s else f"  server {self.server_cpu_s / self.wall_s:4.0%}"
        )
        return (
            f"  {self.api:<23} {self.label:<16} {self.streams:>5} streams: {self.events:>8,} events "
            f"({self.events / self.wall_s if self.wall_s else 0:,.0f}/s)  CPU {self.cpu_us_per_event:6.1f} µs/event  "
            f"latency p50 {self.latency_ms(0.5):6.2f} ms p99 {self.latency_ms(0.99):7.2f} ms  "
            f"memory {_kib(self.memory_kib_per_stream)} KiB/stream{server}  "
            f"{'sustained' if self.sustained else 'NOT SUSTAINED'}"
        )

    def _part_line(self, index: int, part: LoadFigure) -> str:
        return (
            f"      process {index}/{len(self.parts)}: {part.streams:,} streams, {part.events:,} events  "
            f"CPU {part.cpu_us_per_event:6.1f} µs/event  p50 {part.latency_ms(0.5):6.2f} ms "
            f"p99 {part.latency_ms(0.99):7.2f} ms  {'sustained' if part.sustained else 'NOT SUSTAINED'}"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        entry: dict[str, Any] = {
            "api": self.api,
            "stack": self.stack,
            "transport": self.transport,
            "loop": self.loop,
            "processes": self.processes,
            "streams": self.streams,
            "rate": self.rate,
            "events_per_stream": self.expected,
            "events": self.events,
            "ok_streams": self.ok_streams,
            "cpu_us_per_event": round(self.cpu_us_per_event, 3),
            "latency_p50_ms": round(self.latency_ms(0.5), 3),
            "latency_p99_ms": round(self.latency_ms(0.99), 3),
            "memory_kib_per_stream": None
            if self.memory_kib_per_stream is None
            else round(self.memory_kib_per_stream, 2),
            "events_per_s": round(self.events / self.wall_s, 1) if self.wall_s else 0.0,
            "server_cpu_share": round(self.server_cpu_s / self.wall_s, 3)
            if self.server_cpu_s is not None and self.wall_s
            else None,
            "sustained": self.sustained,
            "latency_p99_settled_ms": None if (settled := self.settled_latency_ms(0.99)) is None else round(settled, 3),
            "gc_threshold": self.gc_threshold,
            "round": self.paired_round,
            "collector": None if self.collector is None else self.collector.as_dict(),
            "objects_per_stream": None if self.objects_per_stream is None else round(self.objects_per_stream, 1),
        }
        if self.parts:
            entry["per_process"] = [part.as_dict() for part in self.parts]
        return entry


def _kib(value: float | None) -> str:
    return "   —" if value is None else f"{value:6.1f}"


def combine(parts: list[LoadFigure]) -> LoadFigure:
    """One figure of the same phase run in several processes: events, streams and CPU summed, wall
    time the longest, every latency merged (for the p99), sustained only if every process sustained."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    whole = LoadFigure(
        first.api,
        first.stack,
        sum(p.streams for p in parts),
        first.rate,
        first.expected,
        transport=first.transport,
        loop=first.loop,
        processes=len(parts),
        sustain_ms=first.sustain_ms,
        gc_threshold=first.gc_threshold,
        paired_round=first.paired_round,
        parts=parts,
    )
    whole.events = sum(p.events for p in parts)
    whole.ok_streams = sum(p.ok_streams for p in parts)
    whole.cpu_s = sum(p.cpu_s for p in parts)
    whole.wall_s = max(p.wall_s for p in parts)
    for part in parts:
        whole.latencies_ns.extend(part.latencies_ns)
        whole.sent_ns.extend(part.sent_ns)
    watched = [part.collector for part in parts if part.collector is not None]
    whole.collector = CollectorFigure.merged(watched) if len(watched) == len(parts) else None
    return whole


def record(figure: LoadFigure, text: str) -> int:
    """Record the latency of each stamp in one delta's text (should a stack merge deltas into one
    event, each still counts); how many there were."""
    now = stamp_ns()
    counted = 0
    for stamp in text.split():
        if stamp.isdigit():  # anything else is not one of the server's deltas: not counted, so its stream fails
            sent = int(stamp)
            figure.sent_ns.append(sent)
            figure.latencies_ns.append(now - sent)
            counted += 1
    figure.events += counted
    return counted


def scan(figure: LoadFigure, data: bytes) -> tuple[int, bytes]:
    """The bare stacks' consumer: :func:`record` each delta's text found in raw Anthropic body bytes;
    (how many, the bytes to prepend to the next read: a delta cut between two reads)."""
    counted = start = 0
    while (at := data.find(_KEY, start)) >= 0:
        begin = at + len(_KEY)
        end = data.find(b'"', begin)
        if end < 0:
            return counted, data[at:]
        counted += record(figure, data[begin:end].decode("ascii"))
        start = end
    return counted, data[max(start, len(data) - len(_KEY) + 1) :]


@dataclass(frozen=True, slots=True)
class Phase:
    """What one phase runs: ``streams`` streams of ``events`` deltas at ``rate`` a second each, through
    ``stack`` (ours, bare, sdk) on ``transport``, their starts spread over ``spread_s``; ``memory``: a
    memory pass under tracemalloc (its CPU and latency figures mean nothing)."""

    stack: str
    api: str
    transport: str
    streams: int
    rate: float
    events: int
    sustain_ms: float = 100.0
    spread_s: float = 1.0
    memory: bool = False


def _headers(events: int, rate: float) -> dict[str, str]:
    return {"x-load-events": str(events), "x-load-rate": f"{rate:g}"}


def _text_count(message: Any) -> int:
    """The deltas a final message holds (each delta's text is one stamp and a space)."""
    return sum(len(block.text.split()) for block in message.content if getattr(block, "type", "") == "text")


@asynccontextmanager
async def _ours(phase: Phase, base_url: str) -> AsyncGenerator[One]:
    from bench._wire import BuiltinStreamFn
    from normalize import Context, Model, StreamOptions, UserMessage
    from streamfns._adapters import builtin_adapters

    fn = cast("BuiltinStreamFn", builtin_adapters()[phase.api].stream_fn)
    model_id, prefix = APIS[phase.api]
    model = Model(id=model_id, api=phase.api, provider="load", base_url=base_url + prefix)
    context = Context(messages=[UserMessage(content="load")])

    async def one(figure: LoadFigure) -> bool:
        headers: dict[str, str | None] = {**_headers(figure.expected, figure.rate)}
        # No http_client: the kit makes a client of this transport for the call and closes it with the call.
        options = StreamOptions(api_key="load-test-key", headers=headers, timeout=TIMEOUT_S, transport=phase.transport)
        received = 0
        stream = fn(model, context, options)
        async for event in stream:
            if event.type == "text_delta":
                received += record(figure, event.delta)
        message = await stream.result()
        return message.stop_reason == "stop" and received == figure.expected == _text_count(message)

    yield one


class _Floor:
    """The floor stacks' consumer of one stream's reads: the Anthropic adapter's own framing, decoder and
    message builder, as the kit applies them to a read (the decoder's shortcut when the read is one
    event it reads, found by the kit's own ``ShortcutReads``; else framed, each frame to ``on_event``,
    then ``on_batch_end``), with none of the kit around them: no event stream, no read path, no timers,
    no request building. Ours − floor is what the kit adds to the parse and build; floor − bare is what
    parsing and building cost."""

    __slots__ = ("_builder", "_decoder", "_figure", "_framer", "_shortcut_reads", "received")

    def __init__(self, figure: LoadFigure) -> None:
        from normalize import MessageBuilder, Model
        from normalize.wire.sse import SSEDecoder
        from streamfns.anthropic.decode import AnthropicDecoder
        from streamfns.kit.shapes import ShortcutReads

        model = Model(id="claude-load", api=ANTHROPIC, provider="load", base_url="http://load")
        self._figure = figure
        self._builder = MessageBuilder(model)
        self._decoder = AnthropicDecoder(self._builder, model)
        self._framer = SSEDecoder()
        self._shortcut_reads = ShortcutReads(self._framer)
        self._builder.start()
        self._builder.drain()
        self.received = 0

    def take(self, data: bytes) -> None:
        builder, decoder = self._builder, self._decoder
        if builder.finished:
            return
        shortcut = decoder.shortcut
        pieces = self._shortcut_reads.pieces(data, shortcut) if shortcut is not None else None
        if shortcut is not None and pieces is not None:
            shortcut.take(pieces if shortcut.whole else pieces[0])
        else:
            self._shortcut_reads.fed()
            for frame in self._framer.feed(data):
                decoder.on_event(frame)
                if builder.finished:
                    break
        if not builder.finished:
            decoder.on_batch_end()
        for event in builder.drain():
            if event.type == "text_delta":
                self.received += record(self._figure, event.delta)

    def ok(self) -> bool:
        message = self._builder.message
        expected = self._figure.expected
        return message.stop_reason == "stop" and self.received == expected == _text_count(message)


def _raw_httpx(floor: bool) -> Callable[[Phase, str], Any]:
    """A stack of httpx alone: bare (each read scanned for its stamps, with :func:`scan`, in the loop
    itself: no call more per read than the library's own), or the floor (each read to a :class:`_Floor`)."""

    @asynccontextmanager
    async def stack(phase: Phase, base_url: str) -> AsyncGenerator[One]:
        import httpx

        # No connection limit, and no idle connection kept (the kit's own clients keep none either; and
        # httpcore's pool costs O(idle × connections) per request and release, encode/httpcore#1035).
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
        async with httpx.AsyncClient(limits=limits, timeout=TIMEOUT_S, trust_env=False) as client:

            async def one(figure: LoadFigure) -> bool:
                headers = {"content-type": "application/json", **_headers(figure.expected, figure.rate)}
                received, carry = 0, b""
                reads = _Floor(figure) if floor else None
                async with client.stream("POST", f"{base_url}/v1/messages", content=_BODY, headers=headers) as response:
                    if response.status_code != 200:
                        return False
                    if reads is not None:  # the bare loop below, each read given to the floor
                        async for chunk in response.aiter_raw():
                            reads.take(chunk)
                        return reads.ok()
                    async for chunk in response.aiter_raw():
                        counted, carry = scan(figure, carry + chunk)
                        received += counted
                return received == figure.expected

            yield one

    return stack


def _raw_aiohttp(floor: bool) -> Callable[[Phase, str], Any]:
    """A stack of aiohttp alone, bare or the floor (as :func:`_raw_httpx`)."""

    @asynccontextmanager
    async def stack(phase: Phase, base_url: str) -> AsyncGenerator[One]:
        import aiohttp

        # As the kit's own aiohttp client: no connection limit, no idle connection kept, no decoding,
        # no per-read timer (sock_read None).
        connector = aiohttp.TCPConnector(limit=0, force_close=True)
        timeout = aiohttp.ClientTimeout(total=None, connect=TIMEOUT_S, sock_read=None)
        async with aiohttp.ClientSession(
            connector=connector, auto_decompress=False, timeout=timeout, trust_env=False
        ) as session:

            async def one(figure: LoadFigure) -> bool:
                headers = {"content-type": "application/json", **_headers(figure.expected, figure.rate)}
                received, carry = 0, b""
                reads = _Floor(figure) if floor else None
                async with session.post(f"{base_url}/v1/messages", data=_BODY, headers=headers) as response:
                    if response.status != 200:
                        return False
                    content = response.content
                    if reads is not None:  # the bare loop below, each read given to the floor
                        while True:
                            data, chunk_ended = await content.readchunk()
                            if not data:
                                if chunk_ended:
                                    continue
                                break
                            reads.take(data)
                        return reads.ok()
                    while True:
                        data, chunk_ended = await content.readchunk()  # one HTTP chunk (or what came of it)
                        if not data:
                            if chunk_ended:
                                continue
                            break
                        counted, carry = scan(figure, carry + data)
                        received += counted
                return received == figure.expected

            yield one

    return stack


def _raw_native(floor: bool) -> Callable[[Phase, str], Any]:
    """A stack of the kit's native client alone (``streamfns.kit.transport_native``: its send, then its
    own read awaited in the loop, as the kit's steady state awaits it), bare or the floor (as
    :func:`_raw_httpx`)."""

    @asynccontextmanager
    async def stack(phase: Phase, base_url: str) -> AsyncGenerator[One]:
        from streamfns.kit.transport import DirectRead, HttpRequest
        from streamfns.kit.transport_native import NativeTransport

        transport = NativeTransport()
        url = f"{base_url}/v1/messages"

        async def one(figure: LoadFigure) -> bool:
            headers = {"content-type": "application/json", **_headers(figure.expected, figure.rate)}
            request = HttpRequest(
                url=url, headers=headers, body=_BODY, connect_timeout=TIMEOUT_S, idle_timeout=TIMEOUT_S
            )
            response = await transport.send(request)
            try:
                if response.status != 200:
                    return False
                read = cast("DirectRead", response.direct_read()).read
                received, carry = 0, b""
                reads = _Floor(figure) if floor else None
                if reads is not None:  # the bare loop below, each read given to the floor
                    while data := await read():
                        reads.take(data)
                    return reads.ok()
                while data := await read():
                    counted, carry = scan(figure, carry + data)
                    received += counted
                return received == figure.expected
            finally:
                await response.aclose()

        yield one

    return stack


def sdk_client() -> str:
    """Which client the SDK runs on here (its best configuration: aiohttp when it offers it)."""
    import anthropic

    if hasattr(anthropic, "DefaultAioHttpClient") and importlib.util.find_spec("aiohttp") is not None:
        return (
            f"anthropic {anthropic.__version__} AsyncAnthropic(http_client=DefaultAioHttpClient()), its aiohttp client"
        )
    return f"anthropic {anthropic.__version__} AsyncAnthropic(), its default httpx client"


@asynccontextmanager
async def _sdk(phase: Phase, base_url: str) -> AsyncGenerator[One]:
    import anthropic

    extra: dict[str, Any] = {}
    if "DefaultAioHttpClient" in sdk_client():
        import httpx2

        # Its default pool allows 1,000 connections: a phase of more streams gets as many, as a user would set.
        limits = httpx2.Limits(max_connections=max(1000, phase.streams), max_keepalive_connections=100)
        extra["http_client"] = anthropic.DefaultAioHttpClient(limits=limits, timeout=TIMEOUT_S)
    client = anthropic.AsyncAnthropic(
        api_key="load-test-key", base_url=base_url, max_retries=0, timeout=TIMEOUT_S, **extra
    )

    async def one(figure: LoadFigure) -> bool:
        received = 0
        async with client.messages.stream(
            model="claude-load",
            max_tokens=64,
            messages=[{"role": "user", "content": "load"}],
            extra_headers=_headers(figure.expected, figure.rate),
        ) as stream:
            async for event in stream:
                if event.type == "text":
                    received += record(figure, event.text)
            message = await stream.get_final_message()
        return message.stop_reason == "end_turn" and received == figure.expected == _text_count(message)

    try:
        yield one
    finally:
        await client.close()


_STACKS: dict[str, Callable[[Phase, str], Any]] = {"ours": _ours, "sdk": _sdk}
#: The stacks without the kit, per transport: the transport alone (bare), and with the adapter's own
#: parse and build (floor).
_RAW: dict[tuple[str, str], Callable[[Phase, str], Any]] = {
    ("bare", "httpx"): _raw_httpx(floor=False),
    ("bare", "aiohttp"): _raw_aiohttp(floor=False),
    ("floor", "httpx"): _raw_httpx(floor=True),
    ("floor", "aiohttp"): _raw_aiohttp(floor=True),
    ("bare", "native"): _raw_native(floor=False),
    ("floor", "native"): _raw_native(floor=True),
}


async def drive(phase: Phase, base_url: str, loop: str) -> LoadFigure:
    """Run ``phase`` against the server at ``base_url`` in this process (one warm-up stream first, its
    figures thrown away: the first call imports modules and fills caches, a cost no later stream pays),
    measuring this process's CPU time and, for a memory pass, the peak of traced memory per stream."""
    stack = _RAW.get((phase.stack, phase.transport)) or _STACKS[phase.stack]
    transport = "" if phase.stack == "sdk" else phase.transport
    figure = LoadFigure(
        phase.api,
        phase.stack,
        phase.streams,
        phase.rate,
        phase.events,
        transport,
        loop,
        sustain_ms=phase.sustain_ms,
        gc_threshold=gc.get_threshold()[0],
    )
    if phase.memory:
        tracemalloc.start()
    try:
        async with stack(phase, base_url) as one:
            one = cast("One", one)
            await one(LoadFigure(phase.api, phase.stack, streams=1, rate=1000.0, expected=3))
            await run_phase(figure, one, spread_s=phase.spread_s)
    finally:
        if phase.memory:
            tracemalloc.stop()
    return figure


async def run_phase(figure: LoadFigure, one: One, *, spread_s: float = 1.0) -> LoadFigure:
    """Run ``figure.streams`` copies of ``one`` (each returns whether its stream ended well; one that
    raises an ``Exception`` fails alone, a cancellation is not swallowed), their starts spread over
    ``spread_s``, measuring CPU time, the collector's passes and when the last stream started into
    ``figure``; when ``tracemalloc`` is tracing (the memory pass), also the peak of traced memory per
    stream and the tracked objects per open stream, :data:`OBJECTS_PROBE_S` after the last start."""
    gc.collect()
    tracing = tracemalloc.is_tracing()
    # Counted before the peak is reset: the list that counts them is not the streams' memory.
    objects_before = len(gc.get_objects()) if tracing else 0
    if tracing:
        tracemalloc.reset_peak()
    traced_before = tracemalloc.get_traced_memory()[0] if tracing else 0
    peak_before_count = [0]

    last_start = [0]
    open_streams = [0]

    async def staggered(index: int) -> bool:
        await asyncio.sleep(spread_s * index / figure.streams)
        last_start[0] = max(last_start[0], stamp_ns())  # a loop that is behind starts the last ones late
        open_streams[0] += 1
        try:
            return await one(figure)
        except Exception:  # a stack that raises (the SDK does) fails its stream, not the whole run
            return False
        finally:
            open_streams[0] -= 1

    async def count_objects() -> None:
        await asyncio.sleep(spread_s + OBJECTS_PROBE_S)
        if open_streams[0]:  # none open (a pass too short for the probe): no figure, not one of nothing
            peak_before_count[0] = tracemalloc.get_traced_memory()[1]
            gc.collect()  # what the streams hold, not garbage a pass has yet to find
            figure.objects_per_stream = (len(gc.get_objects()) - objects_before) / open_streams[0]
            # The count's own list (eight bytes an object in the process) is no stream's memory: the
            # peak restarts from here, and the one before it is kept.
            tracemalloc.reset_peak()

    cpu, wall = time.process_time(), time.perf_counter()
    watch = _CollectorWatch(wall)
    gc.callbacks.append(watch)
    probe = asyncio.ensure_future(count_objects()) if tracing else None
    try:
        results = await asyncio.gather(*(staggered(i) for i in range(figure.streams)))
    finally:
        gc.callbacks.remove(watch)
        if probe is not None:
            probe.cancel()  # done by now unless the pass ended first; not awaited: no cancellation of ours is held up
    figure.cpu_s, figure.wall_s = time.process_time() - cpu, time.perf_counter() - wall
    figure.collector = watch.figure
    figure.settled_from_ns = last_start[0] + int(SETTLE_S * 1e9)
    figure.ok_streams = sum(results)
    if tracing:
        peak = max(tracemalloc.get_traced_memory()[1], peak_before_count[0])
        figure.memory_kib_per_stream = max(0, peak - traced_before) / 1024 / figure.streams
    return figure


def _open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return -1


async def _left_over(fds_before: int, tasks_before: int) -> tuple[int, int]:
    """(file descriptors, tasks) above the process's baseline, polled 50 ms apart for up to ten
    seconds until both are 0 (closing a socket is asynchronous; a loaded machine gets time)."""
    left = (0, 0)
    for _ in range(200):
        gc.collect()
        left = max(0, _open_fds() - fds_before), max(0, len(asyncio.all_tasks()) - tasks_before)
        if left == (0, 0):
            break
        await asyncio.sleep(0.05)
    return left


async def _baseline(base_url: str) -> tuple[int, int]:
    """(file descriptors, tasks) of this process before any phase, once a first connection has been
    made and closed: uvloop opens ``/dev/null`` on its first connection and keeps it for the loop's
    life, which is not a stream's leak."""
    where = urlsplit(base_url)
    _reader, writer = await asyncio.open_connection(where.hostname, where.port)
    writer.close()
    await writer.wait_closed()
    gc.collect()
    return _open_fds(), len(asyncio.all_tasks())


class ClientProcessError(Exception):
    """A client process failed (its traceback in the message) or died."""


@dataclass(frozen=True, slots=True)
class _WorkerError:
    text: str


def _worker(conn: Connection, base_url: str, loop: str, gc_threshold: int | None = None) -> None:
    """A client process: run each :class:`Phase` it is sent on one event loop of kind ``loop``, answer
    ``"leaks"`` with what it holds beyond its start, stop on None. ``gc_threshold``: the collector's
    first-generation threshold for every stack this process runs (None: Python's own)."""
    if gc_threshold is not None:
        gc.set_threshold(gc_threshold, *gc.get_threshold()[1:])
    with asyncio.Runner(loop_factory=_loop_factory(loop)) as runner:
        fds_before, tasks_before = runner.run(_baseline(base_url))
        while (command := conn.recv()) is not None:
            try:
                if isinstance(command, Phase):
                    reply: object = runner.run(drive(command, base_url, loop))
                else:
                    reply = runner.run(_left_over(fds_before, tasks_before))
            except Exception:  # the parent raises it: a broken stack must not hang the run
                reply = _WorkerError(traceback.format_exc())
            conn.send(reply)


class Pool:
    """``processes`` client processes on event loops of kind ``loop``, driving the server at ``base_url``
    (``gc_threshold``: see :func:`_worker`)."""

    def __init__(self, base_url: str, loop: str, processes: int, gc_threshold: int | None = None) -> None:
        context = multiprocessing.get_context("spawn")
        self.loop = loop
        self._workers: list[tuple[Any, Connection]] = []
        for _ in range(processes):
            mine, theirs = context.Pipe()
            process = context.Process(target=_worker, args=(theirs, base_url, loop, gc_threshold), daemon=True)
            process.start()
            theirs.close()
            self._workers.append((process, mine))

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ask(self, commands: list[object]) -> list[Any]:
        """Send ``commands[i]`` to process ``i`` (all sent before any answer is awaited, so the
        processes run at once) and return their answers."""
        asked = list(zip(self._workers, commands, strict=False))
        for (_process, conn), command in asked:
            conn.send(command)
        answers: list[Any] = []
        for process, conn in (worker for worker, _ in asked):
            while not conn.poll(0.5):
                if not process.is_alive():
                    raise ClientProcessError(f"client process {process.pid} died (exit code {process.exitcode})")
            answer = conn.recv()
            if isinstance(answer, _WorkerError):
                raise ClientProcessError(f"client process {process.pid} failed:\n{answer.text}")
            answers.append(answer)
        return answers

    def run(self, phase: Phase) -> LoadFigure:
        """``phase`` with its streams split evenly across the processes (a memory pass runs in one)."""
        count = 1 if phase.memory else len(self._workers)
        shares = [phase.streams // count + (i < phase.streams % count) for i in range(count)]
        commands: list[object] = [dataclasses.replace(phase, streams=share) for share in shares if share]
        return combine(cast("list[LoadFigure]", self._ask(commands)))

    def leaks(self) -> tuple[int, int]:
        """(file descriptors, tasks) left open in all the processes together."""
        answers = cast("list[tuple[int, int]]", self._ask(["leaks"] * len(self._workers)))
        return sum(a[0] for a in answers), sum(a[1] for a in answers)

    def close(self) -> None:
        """Stop every process (each ends its loop, so nothing it held outlives it)."""
        for process, conn in self._workers:
            with suppress(OSError):  # a process that died has closed its end: nothing to tell it
                conn.send(None)
            process.join(30)
            if process.is_alive():
                process.kill()
            conn.close()
        self._workers.clear()


def server_stats(base_url: str) -> dict[str, float]:
    """The server's ``/stats`` (connections open, itself included; streams started and finished; its CPU
    seconds), over a plain connection of its own (no proxy from the environment applies)."""
    where = urlsplit(base_url)
    conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=10)
    try:
        conn.request("GET", "/stats")
        stats: dict[str, float] = json.loads(conn.getresponse().read())
        return stats
    finally:
        conn.close()
