"""Throughput of SSE framing + JSON parsing: httpx-sse + json.loads against streamfns' SSEDecoder + jiter.

Run as ``python bench/sse_bench.py``.  ``run()`` returns ``(label, events per second)``
rows for a harness; ``main()`` prints them with the speed-up ratios and the
linearity check (one huge event fed in 1 KiB chunks: 4 MiB must not cost much
more than 4x the time of 1 MiB).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import httpx_sse
import jiter

_REPO = Path(__file__).resolve().parents[1]
if str(_REPO) not in sys.path:  # allow ``python bench/sse_bench.py`` from a checkout
    sys.path.insert(0, str(_REPO))

from bench import _report  # noqa: E402
from bench._util import measure_ratio  # noqa: E402
from cassettes import library  # noqa: E402
from normalize.wire.sse import SSEDecoder  # noqa: E402

__all__ = ["linearity", "main", "run"]

SYNTHETIC_DELTAS = 40_000
REPEATS = 7
LINEARITY_BUDGET = 5.0

_WORDS = ("the", "stream", "of", "tokens", "arrives", "quickly,", "é", "naïve", "日本", "🙂", "\\n")


def synthetic_anthropic_body(deltas: int = SYNTHETIC_DELTAS) -> bytes:
    """A long Anthropic Messages text stream: start events, ``deltas`` text deltas, stop events."""
    head = [
        (
            "message_start",
            (
                '{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant",'
                '"model":"claude-bench","content":[],"stop_reason":null,"stop_sequence":null,'
                '"usage":{"input_tokens":25,"output_tokens":1}}}'
            ),
        ),
        ("content_block_start", '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
        ("ping", '{"type": "ping"}'),
    ]
    tail = [
        ("content_block_stop", '{"type":"content_block_stop","index":0}'),
        (
            "message_delta",
            (
                '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},'
                '"usage":{"output_tokens":40000}}'
            ),
        ),
        ("message_stop", '{"type":"message_stop"}'),
    ]
    parts: list[str] = [f"event: {name}\ndata: {data}\n\n" for name, data in head]
    for i in range(deltas):
        text = " ".join(_WORDS[(i + k) % len(_WORDS)] for k in range(1 + i % 4))
        parts.append(
            "event: content_block_delta\n"
            f'data: {{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{text} "}}}}\n\n'
        )
    parts.extend(f"event: {name}\ndata: {data}\n\n" for name, data in tail)
    return "".join(parts).encode()


def real_anthropic_body() -> bytes | None:
    """Every bundled Anthropic stream recording (200, event-stream) back to back, a blank line
    between them; None if the library holds none."""
    bodies: list[bytes] = []
    for name in library.names():
        cassette = library.load(name)
        response = cassette.interactions[0].response if cassette.interactions else None
        if cassette.api != "anthropic-messages" or response is None or response.status != 200:
            continue
        bodies.append(response.body + b"\n\n")
    return b"".join(bodies) or None


def split_fixed(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def split_per_event(body: bytes) -> list[bytes]:
    """One chunk per event, the way a live stream tends to arrive."""
    pieces = body.split(b"\n\n")
    return [piece + b"\n\n" for piece in pieces[:-1] if piece] + ([pieces[-1]] if pieces[-1] else [])


class _ChunkStream(httpx.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._chunks)


def httpx_sse_json(chunks: list[bytes]) -> int:
    """Baseline: httpx-sse frames the response, json.loads parses each event's data."""
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_ChunkStream(chunks))
    count = 0
    for sse in httpx_sse.EventSource(response).iter_sse():
        json.loads(sse.data)
        count += 1
    return count


def streamfns_jiter(chunks: list[bytes]) -> int:
    """Ours: SSEDecoder frames bytes, jiter parses each event's data bytes."""
    decoder = SSEDecoder()
    from_json = jiter.from_json
    count = 0
    for chunk in chunks:
        for event in decoder.feed(chunk):
            from_json(event.data)
            count += 1
    for event in decoder.flush():
        from_json(event.data)
        count += 1
    return count


def streamfns_frame_only(chunks: list[bytes]) -> int:
    decoder = SSEDecoder()
    count = 0
    for chunk in chunks:
        count += len(decoder.feed(chunk))
    return count + len(decoder.flush())


def _best_rates(fns: list[Callable[[list[bytes]], int]], chunks: list[bytes], repeats: int) -> list[float]:
    """Events per second of each function, best of ``repeats``.

    The contenders run interleaved, so that a machine whose speed drifts (shared
    virtual machines do) slows them alike and their ratio stays meaningful.
    """
    best = [float("inf")] * len(fns)
    counts = [0] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            counts[i] = fn(chunks)
            best[i] = min(best[i], time.perf_counter() - start)
    return [count / seconds for count, seconds in zip(counts, best, strict=True)]


def _cases() -> list[tuple[str, list[bytes]]]:
    synthetic = synthetic_anthropic_body()
    cases = [
        ("synthetic anthropic 40k deltas, 64 KiB chunks", split_fixed(synthetic, 64 * 1024)),
        ("synthetic anthropic 40k deltas, one chunk per event", split_per_event(synthetic)),
    ]
    real = real_anthropic_body()
    if real is not None:
        cases.append(("real anthropic recordings, 64 KiB chunks", split_fixed(real, 64 * 1024)))
        cases.append(("real anthropic recordings, one chunk per event", split_per_event(real)))
    return cases


_BASELINE = "httpx-sse + json.loads"
_OURS = "SSEDecoder + jiter"
_CONTENDERS: list[tuple[str, Callable[[list[bytes]], int]]] = [
    (_BASELINE, httpx_sse_json),
    (_OURS, streamfns_jiter),
    ("SSEDecoder framing only", streamfns_frame_only),
]


def run(repeats: int = REPEATS) -> list[tuple[str, float]]:
    """Rows of ("<contender> | <case>", events per second)."""
    rows: list[tuple[str, float]] = []
    for case, chunks in _cases():
        rates = _best_rates([fn for _, fn in _CONTENDERS], chunks, repeats)
        rows.extend((f"{label} | {case}", rate) for (label, _), rate in zip(_CONTENDERS, rates, strict=True))
    return rows


def _time_one_huge_event(size: int, chunk_size: int = 1024) -> float:
    body = b"event: huge\ndata: " + b"x" * size + b"\n\n"
    chunks = split_fixed(body, chunk_size)
    decoder = SSEDecoder()
    start = time.perf_counter()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    elapsed = time.perf_counter() - start
    if len(events) != 1 or len(events[0].data) != size:
        raise AssertionError(f"expected one {size}-byte event, got {len(events)} events")
    return elapsed


def linearity(repeats: int = 5) -> tuple[float, float, float]:
    """Best seconds to decode a 1 MiB and a 4 MiB single-line event fed in 1 KiB chunks, and their ratio."""
    small = large = float("inf")
    for _ in range(repeats):
        small = min(small, _time_one_huge_event(1024 * 1024))
        large = min(large, _time_one_huge_event(4 * 1024 * 1024))
    return small, large, large / small


def main() -> int:
    rows = run()
    width = max(len(label) for label, _ in rows)
    for label, rate in rows:
        print(f"{label:<{width}}  {rate:>12,.0f} events/s")
    rates = dict(rows)
    print()
    cases = [label.partition(" | ")[2] for label, _ in rows if label.startswith(f"{_BASELINE} | ")]
    for case in cases:
        ratio = rates[f"{_OURS} | {case}"] / rates[f"{_BASELINE} | {case}"]
        print(f"speed-up ({_OURS}) / ({_BASELINE}) | {case}: {ratio:.2f}x")
    small, large, _ = linearity()
    judgement = measure_ratio(
        lambda: _time_one_huge_event(4 * 1024 * 1024),
        lambda: _time_one_huge_event(1024 * 1024),
        LINEARITY_BUDGET,
        at_most=True,
    )
    _report.record("ratios", {"label": "SSE one event in 1 KiB chunks: 4 MiB / 1 MiB time", **judgement.as_dict()})
    print()
    print(
        f"one event fed in 1 KiB chunks: 1 MiB {small * 1e3:.2f} ms, 4 MiB {large * 1e3:.2f} ms (best of 5); "
        f"time ratio for 4x the size: {judgement.text()}"
    )
    return 1 if judgement.decision == "over" else 0


if __name__ == "__main__":
    sys.exit(main())
