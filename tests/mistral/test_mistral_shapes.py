"""The Mistral decoder reads repeated chunks off their bytes (kit.shapes, its ``p`` padding cut out first)
and must give exactly the events it gives when every chunk is parsed whole: on every bundled recording
(Mistral's own and the Mistral bodies of the chat-completions library), in the recorded reads and in
random ones, and on the bench's bodies — and the fast path must actually run."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from bench import mistral_bench
from cassettes import library
from cassettes.mutations import rechunk
from tests.kit.test_kit_shapes_decoders import Matches, normalized, without_shapes
from tests.mistral._mistral import MISTRAL

pytestmark = pytest.mark.parallel

NAMES = [
    *MISTRAL.stream_names(),
    "pai__mistral_magistral_thinking_chunks",
    "tl__mistral_tiny",
    "vercel__mistral_tool_call",
]


@pytest.mark.parametrize("name", NAMES)
async def test_every_recording_gives_the_same_events_with_and_without_shapes(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = library.load(name)
    target = MISTRAL.model(id=cassette.model or "mistral-small-latest")
    with monkeypatch.context() as patch:
        without_shapes(patch)
        expected = normalized((await MISTRAL.replay(cassette, target))[0])
        chunked = normalized((await MISTRAL.replay(rechunk(cassette, "random", seed=3), target))[0])
    assert chunked == expected
    assert normalized((await MISTRAL.replay(cassette, target))[0]) == expected
    assert normalized((await MISTRAL.replay(rechunk(cassette, "random", seed=3), target))[0]) == expected


@pytest.mark.parametrize("make", [mistral_bench.text_body, mistral_bench.tool_body, mistral_bench.thinking_body])
async def test_the_bench_bodies_give_the_same_events_with_and_without_shapes(
    make: Callable[[int], bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    body = make(300)
    with monkeypatch.context() as patch:
        without_shapes(patch)
        expected = normalized((await MISTRAL.run_reads([body]))[0])
    matches = Matches(monkeypatch)
    assert normalized((await MISTRAL.run_reads([body]))[0]) == expected
    assert matches.count > 250  # nearly every chunk was read off its bytes, its padding cut out


def test_the_recordings_do_reach_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    matches = Matches(monkeypatch)
    for name in MISTRAL.stream_names():
        asyncio.run(MISTRAL.replay(library.load(name)))
    assert matches.count > 1000
