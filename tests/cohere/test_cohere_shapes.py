"""The Cohere decoder reads repeated deltas off their bytes (kit.shapes) and must give exactly the events
it gives when every event is parsed whole: on every bundled recording, in the recorded reads and in
random ones, on the bench's bodies, and on random event sequences that break the protocol (deltas after
an end, pieces of the wrong type, indexes that never started) — and the fast path must actually run."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import pytest

from bench import cohere_bench
from cassettes import library
from cassettes.mutations import rechunk
from tests.cohere._cohere import (
    COHERE,
    body,
    content_delta,
    content_end,
    content_start,
    message_end,
    message_start,
    tool_call_delta,
    tool_call_end,
    tool_call_start,
    tool_plan,
)
from tests.kit.test_kit_shapes_decoders import Matches, normalized, without_shapes

pytestmark = pytest.mark.parallel  # clock-blind: in-process transports only


@pytest.mark.parametrize("name", COHERE.stream_names())
async def test_every_recording_gives_the_same_events_with_and_without_shapes(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = library.load(name)
    with monkeypatch.context() as patch:
        without_shapes(patch)
        expected = normalized((await COHERE.replay(cassette))[0])
        chunked = normalized((await COHERE.replay(rechunk(cassette, "random", seed=3)))[0])
    assert chunked == expected
    assert normalized((await COHERE.replay(cassette))[0]) == expected
    assert normalized((await COHERE.replay(rechunk(cassette, "random", seed=3)))[0]) == expected


@pytest.mark.parametrize("make", [cohere_bench.text_body, cohere_bench.tool_body, cohere_bench.thinking_body])
async def test_the_bench_bodies_give_the_same_events_with_and_without_shapes(
    make: Callable[[int], bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = [make(300)]
    target = COHERE.model(reasoning=True)
    with monkeypatch.context() as patch:
        without_shapes(patch)
        expected = normalized((await COHERE.run_reads(reads, target=target))[0])
    matches = Matches(monkeypatch)
    assert normalized((await COHERE.run_reads(reads, target=target))[0]) == expected
    assert matches.count > 250  # nearly every delta was read off its bytes


def _stray(rng: random.Random) -> dict[str, Any]:
    """An event that may break the protocol: any index, any kind, a piece of another type."""
    index, roll = rng.randrange(4), rng.random()
    if roll < 0.25:
        return content_delta(index, "x", rng.choice(["text", "thinking"]))
    if roll < 0.45:
        bad = content_delta(index, "x")
        bad["delta"]["message"]["content"]["text"] = rng.choice([7, None, ["x"]])
        return bad
    if roll < 0.6:
        return content_end(index)
    if roll < 0.7:
        return content_start(index)
    if roll < 0.85:
        return tool_call_delta(index, "}")
    return tool_call_end(index)


def _random_body(rng: random.Random) -> bytes:
    """A response built the way Cohere builds one (blocks opened, runs of deltas, ends), with a stray
    event now and then: where one breaks the protocol, both paths must stop at the same event with the
    same words."""
    events: list[dict[str, Any]] = [message_start()]
    open_blocks: dict[int, str] = {}
    open_calls: list[int] = []
    used = 0
    for _ in range(rng.randint(3, 25)):
        roll = rng.random()
        if roll < 0.08:
            events.append(_stray(rng))
        elif roll < 0.2 or not (open_blocks or open_calls):
            if rng.random() < 0.6:
                open_blocks[used] = rng.choice(["text", "thinking"])
                events.append(content_start(used, open_blocks[used]))
            else:
                events.extend(tool_plan(piece) for piece in rng.choices(["I ", "will ", ""], k=rng.randint(1, 4)))
                open_calls.append(used)
                events.append(tool_call_start(used, f"id{used}", "f"))
            used += 1
        elif roll < 0.8:
            if open_blocks and (not open_calls or rng.random() < 0.6):
                index, kind = rng.choice(list(open_blocks.items()))
                pieces = rng.choices(["a", '\\"b', "é", ""], k=rng.randint(1, 10))
                events.extend(content_delta(index, piece, kind) for piece in pieces)
            else:
                index = rng.choice(open_calls)
                pieces = rng.choices(['{"a"', ":1", "}", " "], k=rng.randint(1, 8))
                events.extend(tool_call_delta(index, piece) for piece in pieces)
        elif open_blocks and (not open_calls or rng.random() < 0.5):
            index = rng.choice(list(open_blocks))
            del open_blocks[index]
            events.append(content_end(index))
        else:
            index = rng.choice(open_calls)
            open_calls.remove(index)
            events.append(tool_call_end(index))
    events.append(message_end(rng.choice(["COMPLETE", "TOOL_CALL", "MAX_TOKENS"])))
    return body(*events)


async def test_random_event_sequences_give_the_same_events_with_and_without_shapes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bodies = [_random_body(random.Random(seed)) for seed in range(300)]
    target = COHERE.model(reasoning=True)
    with monkeypatch.context() as patch:
        without_shapes(patch)
        expected = [normalized((await COHERE.run_reads([data], target=target))[0]) for data in bodies]
    matches = Matches(monkeypatch)
    for data, want in zip(bodies, expected, strict=True):
        assert normalized((await COHERE.run_reads([data], target=target))[0]) == want
    assert matches.count > 100  # repeated deltas did take the fast path
    assert any(run[-1]["type"] == "done" for run in expected)  # some sequences are whole responses
    assert any(run[-1]["type"] == "error" for run in expected)


def test_the_recordings_do_reach_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    matches = Matches(monkeypatch)
    for name in COHERE.stream_names():
        asyncio.run(COHERE.replay(library.load(name)))
    assert matches.count > 1000
